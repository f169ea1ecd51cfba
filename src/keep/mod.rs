//! Keeping every session (§11): a copy of every other agent's session the sources
//! show, in `<store>/.kept/` (`store::kept`), brought up to date from what the
//! sources yield (a session file's bytes, a database session's dump), never from an
//! agent's format.
//!
//! One pass looks at every session of every source: a new one is copied whole; one
//! that only grew gets its new bytes appended, once the copy proves it belongs to the
//! source (same file, same first and last 4 KiB of the bytes kept; another file with
//! the same bytes, compared whole, is adopted); anything else starts a new generation
//! of the copy, keeping the earlier one as a version, unless the session is one the
//! agent rewrites whole (a database's rows, a JSON file) and the new bytes still hold
//! every message the copy held. A session that is no longer there is marked gone. A
//! copy quiet for an hour is compressed.
//!
//! Work is written in batches: the batch's bytes are synced once (`syncfs`), then
//! each copy's record is committed. A pass stops at the next session (or at a line's
//! end inside a long copy) when asked, committing what it has. Only one keeper per
//! store writes (`.fen-cache/keep.lock`).

mod queue;
pub mod restore;

use crate::agent::Agent;
use crate::background::Background;
use crate::error::{Error, Result};
use crate::sources::SessionSource;
use crate::sources::foreign_source::{ForeignSource, ToKeep};
use crate::sources::kept::KeptCopies;
use crate::store::index::{FileStamp, content_check};
use crate::store::kept::{self, Control, KeptRecord, KeptStore, SourceProof, Staged};
use crate::store::lock::HeldFile;
use crate::store::naming;
use crate::store::open::Dir;
use queue::ReadQueue;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A session whose source has not changed for this long is kept compressed.
pub const QUIET: Duration = Duration::from_secs(3600);
/// A record's `last_seen` is brought up to date this often while its source is there.
const SEEN_EVERY: Duration = Duration::from_secs(3600);
/// Sessions kept at once (each worker reads, checks and compresses one).
const KEEP_WORKERS: usize = 4;
/// A batch is synced and committed at this many bytes, copies or seconds.
const BATCH_BYTES: u64 = 64 << 20;
const BATCH_COPIES: usize = 512;
const BATCH_TIME: Duration = Duration::from_secs(1);

/// `FEN_FS_KEEP=off` in `mount`'s environment: no keeper.
pub const KEEP_ENV: &str = "FEN_FS_KEEP";

/// Whether the environment turns keeping off.
pub fn off_by_env() -> bool {
    std::env::var_os(KEEP_ENV).is_some_and(|v| v == "off" || v == "0" || v == "no")
}

/// Which agents' sessions to keep (`--keep-agent`): all when `None`.
#[derive(Debug, Clone, Default)]
pub struct KeepOptions {
    pub agents: Option<Vec<Agent>>,
    /// A line per copy changed in the report (`fen-fs keep` prints them; the daemon,
    /// whose first pass may change 10,000 copies, logs only the summary).
    pub lines: bool,
}

impl KeepOptions {
    fn keeps(&self, agent: Agent) -> bool {
        self.agents.as_ref().is_none_or(|a| a.contains(&agent))
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    /// Copies made, grown, given a new version, replaced whole (no message lost),
    /// compressed; sources found gone, and back.
    pub new: usize,
    pub grew: usize,
    pub versions: usize,
    pub replaced: usize,
    pub compressed: usize,
    pub gone: usize,
    pub back: usize,
    /// Bytes of sessions copied.
    pub bytes: u64,
    /// One line per copy changed, for people.
    pub lines: Vec<String>,
    /// Sessions that could not be kept, and why.
    pub failed: Vec<String>,
    /// The disk filled up: the pass stopped there.
    pub disk_full: bool,
    /// Asked to stop: the pass ended early.
    pub stopped: bool,
}

impl Report {
    pub fn changed(&self) -> usize {
        self.new
            + self.grew
            + self.versions
            + self.replaced
            + self.compressed
            + self.gone
            + self.back
    }

    /// One line for the log and for `fen-fs keep`.
    pub fn say(&self) -> String {
        format!(
            "{} new, {} grew, {} new versions, {} replaced, {} compressed, {} gone, {} back ({})",
            self.new,
            self.grew,
            self.versions,
            self.replaced,
            self.compressed,
            self.gone,
            self.back,
            human_size(self.bytes)
        )
    }
}

pub fn human_size(n: u64) -> String {
    match n {
        n if n < 1 << 10 => format!("{n} B"),
        n if n < 1 << 20 => format!("{:.1} KiB", n as f64 / 1024.0),
        n if n < 1 << 30 => format!("{:.1} MiB", n as f64 / (1 << 20) as f64),
        n => format!("{:.1} GiB", n as f64 / (1 << 30) as f64),
    }
}

/// One kept copy as the keeper knows it.
#[derive(Clone)]
struct Copy {
    name: String,
    /// Shared: the map of 10,000 copies is then a table of pointers, not of records,
    /// and the record is the one the kept copies' listing holds (`KeptCopies::share`).
    record: Arc<KeptRecord>,
    /// The source's stamp when the copy was last found up to date (this process).
    seen: Option<FileStamp>,
    /// Its source moved here (the record on disk still names the old place).
    moved: bool,
}

/// What kind of change a staged operation is (for the report).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    New,
    Grew,
    Version,
    Replaced,
    Compressed,
    Gone,
    Back,
    Record,
}

/// One staged change to a copy: what it is, the source's stamp it brings the copy to,
/// and a line for people.
type Step = (Staged, Kind, Option<FileStamp>, String);

/// The copies of one store, and the lock that makes this the only keeper writing.
pub struct Keeper {
    store: KeptStore,
    scratch: Dir,
    sources: Vec<Arc<ForeignSource>>,
    /// This store's kept copies as the mount lists them (none for `fen-fs keep`): the
    /// records this keeper holds are shared with them.
    listed: HashMap<Agent, Arc<KeptCopies>>,
    options: KeepOptions,
    /// agent → source key → copy.
    copies: Mutex<HashMap<Agent, HashMap<PathBuf, Copy>>>,
    /// When this process last saw each source (for `last_seen` when it goes).
    seen_at: Mutex<HashMap<PathBuf, String>>,
    /// Each agent folder's stamp when its records were last read: a copy trashed or
    /// brought back by `fen-fs rm`/`restore` changes it, and the records are read again.
    folders: Mutex<HashMap<Agent, Option<(u64, i128)>>>,
    root: PathBuf,
    _lock: HeldFile,
}

impl Drop for Keeper {
    /// Ends cleanly: every pass committed what it staged (or left nothing a reader
    /// takes for a copy), so the next keeper need not look for what a crash leaves.
    fn drop(&mut self) {
        kept::set_clean_mark(&self.root);
    }
}

/// Staged work waiting for the batch's sync.
struct Batch {
    staged: Vec<(Agent, Staged, Kind, Option<FileStamp>, String)>,
    bytes: u64,
    since: Instant,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    fn new() -> Self {
        Batch {
            staged: Vec::new(),
            bytes: 0,
            since: Instant::now(),
        }
    }

    fn full(&self) -> bool {
        self.bytes >= BATCH_BYTES
            || self.staged.len() >= BATCH_COPIES
            || (!self.staged.is_empty() && self.since.elapsed() >= BATCH_TIME)
    }
}

fn now() -> String {
    naming::timestamp(chrono::Utc::now())
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

fn quiet(mtime_ns: i128) -> bool {
    now_ns() - mtime_ns > QUIET.as_nanos() as i128
}

fn older_than(t: &str, d: Duration) -> bool {
    chrono::DateTime::parse_from_rfc3339(t)
        .map(|t| {
            (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
                .to_std()
                .unwrap_or_default()
                >= d
        })
        .unwrap_or(true)
}

fn is_disk_full(e: &Error) -> bool {
    e.errno == libc::ENOSPC || e.errno == libc::EDQUOT || e.reason.contains("No space left")
}

/// Whether `a[..len]` and `b[..len]` hold the same bytes.
fn same_bytes(a: &File, b: &File, len: u64) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let size = (len as usize).min(1 << 20);
    let mut x = vec![0u8; size];
    let mut y = vec![0u8; size];
    let mut at = 0u64;
    while at < len {
        let n = ((len - at) as usize).min(x.len());
        a.read_exact_at(&mut x[..n], at)?;
        b.read_exact_at(&mut y[..n], at)?;
        if x[..n] != y[..n] {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

impl Keeper {
    /// The keeper of the store at `root` over `sources` (the agents' own, not sources
    /// over kept copies): `None` when another keeper (a mounted daemon, another
    /// `fen-fs keep`) holds the store's keep lock. Undoes what a crash left first.
    pub fn new(
        root: &Path,
        sources: Vec<Arc<ForeignSource>>,
        options: KeepOptions,
    ) -> Result<Option<Keeper>> {
        let (lock, scratch) = kept::keep_lock_and_scratch(root)?;
        let Some(lock) = HeldFile::try_exclusive(lock)? else {
            return Ok(None);
        };
        let store = KeptStore::open(root, true)?.expect("created");
        let listed: HashMap<Agent, Arc<KeptCopies>> = sources
            .iter()
            .filter_map(|s| s.kept_copies())
            .filter(|k| !k.is_peer() && k.dir() == store.path().join(k.agent().name()))
            .map(|k| (k.agent(), k.clone()))
            .collect();
        let sources: Vec<Arc<ForeignSource>> = sources
            .into_iter()
            .filter(|s| s.kept_copies().is_none())
            .collect();
        // After a keeper that did not end cleanly (a crash, a kill), undo what it left.
        if !kept::take_clean_mark(root) {
            for agent in store.agents() {
                store.recover(&agent)?;
            }
        }
        let keeper = Keeper {
            store,
            scratch,
            sources,
            listed,
            options,
            copies: Mutex::new(HashMap::new()),
            seen_at: Mutex::new(HashMap::new()),
            folders: Mutex::new(HashMap::new()),
            root: root.to_path_buf(),
            _lock: lock,
        };
        keeper.reread_records();
        Ok(Some(keeper))
    }

    fn folder_stamp(&self, agent: Agent) -> Option<(u64, i128)> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(self.store.path().join(agent.name())).ok()?;
        Some((
            m.ino(),
            m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        ))
    }

    /// Reads the records of every agent whose folder changed since they were read
    /// (what this process knows of a copy it finds unchanged is kept).
    fn reread_records(&self) {
        for agent in Agent::ALL.into_iter().filter(|a| *a != Agent::Fen) {
            let stamp = self.folder_stamp(agent);
            let mut folders = self.folders.lock().unwrap();
            if folders.get(&agent) == Some(&stamp) {
                continue;
            }
            folders.insert(agent, stamp);
            drop(folders);
            // Updated in place, a record at a time: a second map beside the first,
            // and every record read before either, were the daemon's peak once a
            // first pass had made 10,000 copies.
            let mut copies = self.copies.lock().unwrap();
            let by_key = copies.entry(agent).or_default();
            let mut listed: HashSet<PathBuf> = HashSet::with_capacity(by_key.len());
            self.store.each_record(agent.name(), |name, record| {
                let source = record.source.clone();
                // What this process knows of a copy it finds unchanged is kept.
                let known = by_key
                    .get_mut(&source)
                    .filter(|c| c.name == name && *c.record == record);
                match known {
                    Some(c) => c.moved = false,
                    None => {
                        let record = self.shared(agent, &name, record);
                        by_key.insert(
                            source.clone(),
                            Copy {
                                name,
                                record,
                                seen: None,
                                moved: false,
                            },
                        );
                    }
                }
                listed.insert(source);
            });
            by_key.retain(|source, _| listed.contains(source));
        }
    }

    /// `record` of copy `name`, shared with the mount's listing of the copies if it
    /// has one.
    fn shared(&self, agent: Agent, name: &str, record: KeptRecord) -> Arc<KeptRecord> {
        match self.listed.get(&agent) {
            Some(k) => k.share(name, record),
            None => Arc::new(record),
        }
    }

    /// Whether every source has its first index (a pass waits for them otherwise).
    pub fn sources_ready(&self) -> bool {
        self.sources.iter().all(|s| s.is_indexed())
    }

    /// One pass over every session of every source.
    pub fn pass(&self, ctl: &Control) -> Report {
        self.reread_records();
        let mut report = Report::default();
        let mut batch = Batch::new();
        // Each source as soon as its first index is built (`fen-fs keep` copies one
        // agent's sessions while the others' are still being read).
        let mut left: Vec<&Arc<ForeignSource>> = self
            .sources
            .iter()
            .filter(|s| self.options.keeps(s.agent()))
            .collect();
        while !left.is_empty() {
            if (ctl.stop)() {
                report.stopped = true;
                break;
            }
            let Some(at) = left.iter().position(|s| s.is_indexed()) else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let source = left.remove(at);
            self.pass_source(source, &mut batch, &mut report, ctl);
            if report.disk_full || report.stopped {
                break;
            }
        }
        self.flush(&mut batch, &mut report);
        report
    }

    fn pass_source(
        &self,
        source: &ForeignSource,
        batch: &mut Batch,
        report: &mut Report,
        ctl: &Control,
    ) {
        let agent = source.agent();
        (ctl.pause)();
        let items = source.sessions_to_keep();
        let now = now();
        {
            let mut seen = self.seen_at.lock().unwrap();
            for it in &items {
                seen.insert(it.key.clone(), now.clone());
            }
        }
        let present: HashSet<&Path> = items.iter().map(|i| i.key.as_path()).collect();
        // What is unchanged since it was last found up to date costs nothing more; the
        // rest is kept by a few workers at once (copying is reading and compressing:
        // one core each).
        let mut todo: Vec<&ToKeep> = items
            .iter()
            .filter(|i| !self.up_to_date(agent, i))
            .collect();
        // Largest first: a big session copied (and compressed) last would leave the
        // other workers idle while one core does it alone.
        todo.sort_by_key(|i| std::cmp::Reverse(i.stamp.size));
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, KEEP_WORKERS)
            .min(todo.len().max(1));
        // A session without a copy is read whole; the others from where their copy
        // ends (or not at all), which is no reason to read them ahead.
        let queue = ReadQueue::new(todo, |i| self.copy_of(agent, &i.key).is_none());
        let shared = Mutex::new((std::mem::take(batch), std::mem::take(report)));
        let work = || {
            loop {
                if (ctl.stop)() {
                    shared.lock().unwrap().1.stopped = true;
                    return;
                }
                if shared.lock().unwrap().1.disk_full {
                    return;
                }
                (ctl.pause)();
                let Some((item, ahead)) = queue.take() else {
                    return;
                };
                for next in ahead {
                    if let Ok((f, _)) = source.open_to_keep(&next.key) {
                        crate::store::open::advise(
                            &f,
                            0,
                            next.stamp.size,
                            libc::POSIX_FADV_WILLNEED,
                        );
                    }
                }
                let copy = self
                    .copy_of(agent, &item.key)
                    .or_else(|| self.moved_here(agent, item, &present));
                let kept = self.keep_one(source, item, copy.as_ref(), &now, ctl);
                let mut guard = shared.lock().unwrap();
                let (batch, report) = &mut *guard;
                match kept {
                    Ok(Some((staged, kind, stamp, line))) => {
                        batch.bytes += match kind {
                            Kind::New | Kind::Version | Kind::Replaced => {
                                stamp.map_or(0, |s| s.size)
                            }
                            Kind::Grew => stamp.map_or(0, |s| s.size).saturating_sub(
                                copy.as_ref()
                                    .and_then(|c| c.record.current())
                                    .map_or(0, |g| g.len),
                            ),
                            _ => 0,
                        };
                        batch.staged.push((agent, staged, kind, stamp, line));
                    }
                    Ok(None) => {
                        if let Some(c) = &copy {
                            self.mark_seen(agent, &item.key, item.stamp, c);
                        }
                    }
                    Err(e) => {
                        report.disk_full |= is_disk_full(&e);
                        report
                            .failed
                            .push(format!("{}: {}", item.key.display(), e.reason));
                    }
                }
                if batch.full() {
                    self.flush(batch, report);
                }
            }
        };
        if workers == 1 {
            work();
        } else {
            std::thread::scope(|scope| {
                for _ in 0..workers {
                    scope.spawn(work);
                }
            });
        }
        (*batch, *report) = shared.into_inner().unwrap();
        if report.stopped || report.disk_full {
            return;
        }
        // Sources that went: only of this source's root, and only from a whole pass
        // (a stopped one has not seen every session).
        let root = source.agent_root().to_path_buf();
        let went: Vec<Copy> = {
            let copies = self.copies.lock().unwrap();
            copies
                .get(&agent)
                .map(|m| {
                    m.values()
                        .filter(|c| {
                            c.record.source_root == root
                                && !c.record.source_deleted
                                && !present.contains(c.record.source.as_path())
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        for c in went {
            // A file that is still a file is not gone (a listing in flux): the next
            // pass looks again.
            if !c.record.unit
                && std::fs::symlink_metadata(&c.record.source).is_ok_and(|m| m.is_file())
            {
                continue;
            }
            let mut r = (*c.record).clone();
            r.source_deleted = true;
            r.deleted_noticed = Some(now.clone());
            if let Some(t) = self.seen_at.lock().unwrap().get(&c.record.source) {
                r.last_seen = t.clone();
            }
            let line = format!("gone     {}  {}", agent.name(), shown(&r));
            batch.staged.push((
                agent,
                self.store.stage_record(&c.name, r),
                Kind::Gone,
                None,
                line,
            ));
        }
        // Quiet copies whose sources are gone are compressed too.
        let quiet_gone: Vec<Copy> = {
            let copies = self.copies.lock().unwrap();
            copies
                .get(&agent)
                .map(|m| {
                    m.values()
                        .filter(|c| {
                            c.record.source_root == root
                                && c.record.source_deleted
                                && c.record.current().is_some_and(|g| !g.compressed())
                                && quiet(c.record.proof.mtime_ns)
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        for c in quiet_gone {
            if (ctl.stop)() {
                report.stopped = true;
                return;
            }
            self.stage_compress(agent, &c, batch, report, ctl);
        }
    }

    /// Whether `item` has nothing to do: its copy was found up to date at this very
    /// stamp, and it is neither to be compressed nor due a sighting in its record.
    fn up_to_date(&self, agent: Agent, item: &ToKeep) -> bool {
        let copies = self.copies.lock().unwrap();
        let Some(c) = copies.get(&agent).and_then(|m| m.get(&item.key)) else {
            return false;
        };
        let to_compress =
            c.record.current().is_some_and(|g| !g.compressed()) && quiet(item.stamp.mtime_ns);
        c.seen == Some(item.stamp)
            && c.record.facts == item.facts
            && !c.record.source_deleted
            && !c.moved
            && !to_compress
            && !older_than(&c.record.last_seen, SEEN_EVERY)
    }

    fn copy_of(&self, agent: Agent, key: &Path) -> Option<Copy> {
        self.copies.lock().unwrap().get(&agent)?.get(key).cloned()
    }

    fn mark_seen(&self, agent: Agent, key: &Path, stamp: FileStamp, c: &Copy) {
        if c.seen == Some(stamp) {
            return;
        }
        if let Some(m) = self.copies.lock().unwrap().get_mut(&agent)
            && let Some(c) = m.get_mut(key)
        {
            c.seen = Some(stamp);
        }
    }

    /// A copy whose source is gone from where it was and is now this new session's
    /// file (same device and inode: the agent moved it, as Codex does when it
    /// archives): it goes on as this session's copy.
    fn moved_here(&self, agent: Agent, item: &ToKeep, present: &HashSet<&Path>) -> Option<Copy> {
        if item.unit {
            return None;
        }
        let mut copies = self.copies.lock().unwrap();
        let m = copies.get_mut(&agent)?;
        let old = m
            .iter()
            .find(|(k, c)| {
                !c.record.unit
                    && c.record.proof.dev == item.stamp.dev
                    && c.record.proof.ino == item.stamp.ino
                    && !present.contains(k.as_path())
                    && std::fs::symlink_metadata(k).is_err()
            })
            .map(|(k, _)| k.clone())?;
        let mut c = m.remove(&old)?;
        log::info!(
            "{}: {} moved to {}; its kept copy goes with it",
            agent.name(),
            old.display(),
            item.key.display()
        );
        Arc::make_mut(&mut c.record).source = item.key.clone();
        c.seen = None;
        c.moved = true;
        m.insert(item.key.clone(), c.clone());
        Some(c)
    }

    /// What keeping `item` takes: nothing (`None`), or a staged operation.
    fn keep_one(
        &self,
        source: &ForeignSource,
        item: &ToKeep,
        copy: Option<&Copy>,
        now: &str,
        ctl: &Control,
    ) -> Result<Option<Step>> {
        let agent = source.agent();
        if let Some(c) = copy
            && c.seen == Some(item.stamp)
            && c.record.facts == item.facts
            && !c.record.source_deleted
            && !c.moved
        {
            // Unchanged since it was last found up to date: at most a sighting to
            // record, or a quiet copy to compress.
            if c.record.current().is_some_and(|g| !g.compressed()) && quiet(item.stamp.mtime_ns) {
                return self.compress(agent, c, Some(item.stamp), ctl);
            }
            if older_than(&c.record.last_seen, SEEN_EVERY) {
                let mut r = (*c.record).clone();
                r.last_seen = now.to_string();
                return Ok(Some((
                    self.store.stage_record(&c.name, r),
                    Kind::Record,
                    Some(item.stamp),
                    String::new(),
                )));
            }
            return Ok(None);
        }
        let (file, stamp) = source.open_to_keep(&item.key)?;
        let len = stamp.size;
        let Some(c) = copy else {
            let record = KeptRecord {
                format: kept::RECORD_FORMAT,
                agent: agent.name().to_string(),
                source: item.key.clone(),
                source_root: source.agent_root().to_path_buf(),
                unit: item.unit,
                id: item.id.clone(),
                facts: item.facts.clone(),
                first_seen: now.to_string(),
                last_seen: now.to_string(),
                source_deleted: false,
                deleted_noticed: None,
                generations: Vec::new(),
                proof: SourceProof {
                    dev: stamp.dev,
                    ino: stamp.ino,
                    len,
                    edges: content_check(&file, len).map_err(|e| Error::io("a session", &e))?,
                    mtime_ns: stamp.mtime_ns,
                },
            };
            let name = self.free_name(agent, &item.id, &item.key);
            let line = format!(
                "new      {}  {}  {}",
                agent.name(),
                shown(&record),
                human_size(len)
            );
            return Ok(self
                .store
                // A quiet session is written compressed at once (a first keep of a
                // quiet history never needs room for its bytes whole); one still being
                // written to is copied as it is, and compressed once quiet.
                .stage_new(&name, record, &file, len, quiet(stamp.mtime_ns), ctl)?
                .map(|s| (s, Kind::New, Some(stamp), line)));
        };
        let old = (*c.record).clone();
        let g = old
            .current()
            .cloned()
            .ok_or_else(|| Error::new(libc::EIO, "a record without bytes"))?;
        let mut r = old.clone();
        r.facts = item.facts.clone();
        if !item.id.is_empty() {
            r.id = item.id.clone();
        }
        let back = r.source_deleted;
        r.source_deleted = false;
        r.deleted_noticed = None;
        r.proof.mtime_ns = stamp.mtime_ns;
        // The same file (a database session: the same rows, its made-up inode being a
        // hash of them).
        let same_file = old.proof.dev == stamp.dev && old.proof.ino == stamp.ino;
        let prefix = if len < g.len {
            false
        } else if same_file {
            content_check(&file, g.len).map_err(|e| Error::io("a session", &e))? == old.proof.edges
        } else {
            // Another file (restored, copied, a database's new dump): the same bytes?
            let kept = self
                .store
                .generation_bytes(agent.name(), &c.name, &g, &self.scratch)?;
            same_bytes(&kept, &file, g.len).map_err(|e| Error::io("comparing a kept copy", &e))?
        };
        if prefix {
            r.proof.dev = stamp.dev;
            r.proof.ino = stamp.ino;
            // Seen now; written down only with another change, or hourly.
            if len > g.len || r != old || c.moved || older_than(&old.last_seen, SEEN_EVERY) {
                r.last_seen = now.to_string();
            }
            if len > g.len {
                let line = format!(
                    "{}  {}  {}  +{}",
                    if back { "back    " } else { "grew    " },
                    agent.name(),
                    shown(&r),
                    human_size(len - g.len)
                );
                return Ok(self
                    .store
                    .stage_append(&c.name, r, &file, len, ctl)?
                    .map(|s| {
                        (
                            s,
                            if back { Kind::Back } else { Kind::Grew },
                            Some(stamp),
                            line,
                        )
                    }));
            }
            if r == old && !c.moved {
                // Nothing new: a quiet copy is compressed (once).
                if g.compressed() || !quiet(stamp.mtime_ns) {
                    return Ok(None);
                }
                return self.compress(agent, c, Some(stamp), ctl);
            }
            let (kind, line) = if back {
                (
                    Kind::Back,
                    format!("back     {}  {}", agent.name(), shown(&r)),
                )
            } else {
                (Kind::Record, String::new())
            };
            return Ok(Some((
                self.store.stage_record(&c.name, r),
                kind,
                Some(stamp),
                line,
            )));
        }
        // Bytes dropped or altered. An agent that rewrites the session whole (rows,
        // a JSON file) loses nothing while every message is still there.
        let dropped = if item.appends {
            true
        } else {
            let kept = self
                .store
                .generation_bytes(agent.name(), &c.name, &g, &self.scratch)?;
            let before: HashSet<String> = source
                .message_ids(&item.key, &kept, g.len)?
                .into_iter()
                .collect();
            let after: HashSet<String> = source
                .message_ids(&item.key, &file, len)?
                .into_iter()
                .collect();
            !before.is_subset(&after)
        };
        let why = if len < g.len {
            "cut short"
        } else if dropped && !item.appends {
            "messages dropped"
        } else {
            "rewritten"
        };
        r.last_seen = now.to_string();
        r.proof = SourceProof {
            dev: stamp.dev,
            ino: stamp.ino,
            len,
            edges: 0,
            mtime_ns: stamp.mtime_ns,
        };
        let (kind, line) = if dropped {
            (
                Kind::Version,
                format!(
                    "version  {}  {}  {} ({why}; the earlier {} kept as version {})",
                    agent.name(),
                    shown(&r),
                    human_size(len),
                    human_size(g.len),
                    r.generations.len()
                ),
            )
        } else {
            (
                Kind::Replaced,
                format!(
                    "changed  {}  {}  {}",
                    agent.name(),
                    shown(&r),
                    human_size(len)
                ),
            )
        };
        Ok(self
            .store
            .stage_generation(
                &c.name,
                r,
                &file,
                len,
                dropped.then_some(why),
                quiet(stamp.mtime_ns),
                ctl,
            )?
            .map(|s| (s, kind, Some(stamp), line)))
    }

    fn compress(
        &self,
        agent: Agent,
        c: &Copy,
        stamp: Option<FileStamp>,
        ctl: &Control,
    ) -> Result<Option<Step>> {
        let line = format!("compress {}  {}", agent.name(), shown(&c.record));
        Ok(self
            .store
            .stage_compress(&c.name, (*c.record).clone(), ctl)?
            .map(|s| (s, Kind::Compressed, stamp, line)))
    }

    fn stage_compress(
        &self,
        agent: Agent,
        c: &Copy,
        batch: &mut Batch,
        report: &mut Report,
        ctl: &Control,
    ) {
        match self.compress(agent, c, c.seen, ctl) {
            Ok(Some((s, kind, stamp, line))) => batch.staged.push((agent, s, kind, stamp, line)),
            Ok(None) => {}
            Err(e) => {
                report.disk_full |= is_disk_full(&e);
                report
                    .failed
                    .push(format!("{}: {}", c.record.source.display(), e.reason));
            }
        }
    }

    /// A folder name for a new copy that no other copy has.
    fn free_name(&self, agent: Agent, id: &str, key: &Path) -> String {
        let base = kept::folder_name(id, key);
        let taken: HashSet<String> = self
            .copies
            .lock()
            .unwrap()
            .get(&agent)
            .map(|m| m.values().map(|c| c.name.clone()).collect())
            .unwrap_or_default();
        let on_disk = |n: &str| self.store.dir().walk(&[agent.name(), n]).is_ok();
        let mut name = base.clone();
        let mut i = 2;
        while taken.contains(&name) || on_disk(&name) {
            name = format!("{base}-{i}");
            i += 1;
        }
        name
    }

    /// Syncs the batch's bytes, then commits each copy's record.
    fn flush(&self, batch: &mut Batch, report: &mut Report) {
        if batch.staged.is_empty() {
            return;
        }
        let staged = std::mem::take(&mut batch.staged);
        batch.bytes = 0;
        batch.since = Instant::now();
        if let Err(e) = self.store.sync() {
            report.disk_full |= is_disk_full(&e);
            report
                .failed
                .push(format!("syncing the kept copies: {}", e.reason));
            // Nothing committed: each copy's record still says what it held.
            for (agent, s, ..) in staged {
                if let Staged::New { name, .. } = &s
                    && let Ok(d) = self.store.agent_dir(agent.name())
                {
                    kept::remove_tree(&d, &format!(".new-{name}"));
                }
            }
            return;
        }
        for (agent, s, kind, stamp, line) in staged {
            let record = s.record().clone();
            let name = s.name().to_string();
            let before = record.current().map_or(0, |g| g.len);
            if let Err(e) = self.store.commit(s) {
                report.disk_full |= is_disk_full(&e);
                report
                    .failed
                    .push(format!("{}: {}", record.source.display(), e.reason));
                continue;
            }
            let grew = match kind {
                Kind::Grew | Kind::Back => {
                    let was = self
                        .copy_of(agent, &record.source)
                        .and_then(|c| c.record.current().map(|g| g.len))
                        .unwrap_or(0);
                    before.saturating_sub(was)
                }
                Kind::New | Kind::Version | Kind::Replaced => before,
                _ => 0,
            };
            report.bytes += grew;
            match kind {
                Kind::New => report.new += 1,
                Kind::Grew => report.grew += 1,
                Kind::Version => report.versions += 1,
                Kind::Replaced => report.replaced += 1,
                Kind::Compressed => report.compressed += 1,
                Kind::Gone => report.gone += 1,
                Kind::Back => report.back += 1,
                Kind::Record => {}
            }
            if !line.is_empty() && self.options.lines {
                report.lines.push(line);
            }
            // A copy cut short by a stop is not up to date: the next pass goes on.
            let whole = stamp.is_some_and(|s| record.proof.len == s.size);
            let record = self.shared(agent, &name, record);
            let mut copies = self.copies.lock().unwrap();
            let m = copies.entry(agent).or_default();
            m.insert(
                record.source.clone(),
                Copy {
                    name,
                    seen: if whole { stamp } else { None },
                    record,
                    moved: false,
                },
            );
        }
    }

    /// Every copy this keeper knows of: (agent, folder name, record). The records
    /// are shared, not copied: at the end of a first pass there are 10,000 of them.
    pub fn copies(&self) -> Vec<(Agent, String, Arc<KeptRecord>)> {
        let copies = self.copies.lock().unwrap();
        let mut out: Vec<(Agent, String, Arc<KeptRecord>)> = copies
            .iter()
            .flat_map(|(a, m)| {
                m.values()
                    .map(move |c| (*a, c.name.clone(), c.record.clone()))
            })
            .collect();
        out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        out
    }

    /// The bytes the copies take on disk, and the bytes of the sessions they hold.
    pub fn sizes(&self) -> (u64, u64) {
        let mut disk = 0;
        let mut held = 0;
        for (agent, name, r) in self.copies() {
            if let Ok(d) = self.store.agent_dir(agent.name()) {
                disk += kept::folder_size(&d, &name);
            }
            held += r.generations.iter().map(|g| g.len).sum::<u64>();
        }
        (disk, held)
    }
}

/// `namespace/dir` as the mount names it, or the source's path.
fn shown(r: &KeptRecord) -> String {
    match (&r.facts.namespace, &r.facts.dir) {
        (Some(ns), Some(dir)) => format!("{}/{dir}", naming::mount_name(ns)),
        _ => r.source.display().to_string(),
    }
}

/// Tests only: milliseconds the keeper sleeps before each chunk it copies (to catch
/// it mid-way).
pub const KEEP_PAUSE_TEST_ENV: &str = "FEN_FS_TEST_KEEP_PAUSE_MS";

/// `KEEP_PAUSE_TEST_ENV`'s pause, if set.
pub fn test_pause() -> Option<Duration> {
    std::env::var(KEEP_PAUSE_TEST_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// How often the keeper looks at the sources: an agent's write is kept within a
/// second.
const SWEEP: Duration = Duration::from_millis(400);
/// After the disk filled, how long before trying again.
const DISK_FULL_RETRY: Duration = Duration::from_secs(2);

/// The daemon's keeper: passes every `SWEEP` until stopped. Waits for the keep lock
/// (another keeper may hold it) and for the sources' first index. Stops at the next
/// session (or a line's end inside a long copy) when `bg` is asked to, committing what
/// it has, and yields to the mount's requests there (`Background::pause`); `status`
/// hears its state for `fen-fs status` (`on`, `paused: disk full ...`).
pub fn run(
    root: PathBuf,
    sources: Vec<Arc<ForeignSource>>,
    options: KeepOptions,
    bg: &Background,
    status: &dyn Fn(&str),
) {
    let sleep = |d: Duration| bg.sleep(d);
    // The first index comes first, and the listings that waited for it: the keeper
    // reads its records and starts only then.
    while !sources
        .iter()
        .all(|s| s.kept_copies().is_some() || s.is_indexed())
    {
        status("waiting for the first index");
        if !sleep(Duration::from_millis(100)) {
            return;
        }
    }
    bg.pause();
    let keeper = loop {
        match Keeper::new(&root, sources.clone(), options.clone()) {
            Ok(Some(k)) => break k,
            Ok(None) => {
                status("waiting: another keeper holds this store's keep lock");
                if !sleep(Duration::from_secs(5)) {
                    return;
                }
            }
            Err(e) => {
                log::error!("keeping: {}", e.reason);
                status(&format!("off: {}", e.reason));
                if is_disk_full(&e) {
                    if !sleep(DISK_FULL_RETRY) {
                        return;
                    }
                    continue;
                }
                return;
            }
        }
    };
    while !keeper.sources_ready() {
        status("waiting for the first index");
        if !sleep(Duration::from_millis(200)) {
            return;
        }
    }
    status("on: first pass (copying what is not kept yet)");
    let test_pause = test_pause();
    let ctl = Control {
        stop: &|| bg.should_stop(),
        pause: &|| {
            // Copying frees what each copy held (its chunk, its zstd context): given
            // back every few seconds while it goes on.
            bg.trim_soon();
            match test_pause {
                Some(d) => std::thread::sleep(d),
                None => bg.pause(),
            }
        },
    };
    let mut first = true;
    let mut full_since: Option<String> = None;
    let began = Instant::now();
    loop {
        let started = Instant::now();
        let report = keeper.pass(&ctl);
        // The first keep is done once a whole pass finds nothing left to do (the
        // copies made, then the quiet ones compressed).
        if first && !report.stopped && !report.disk_full && report.changed() == 0 {
            status("on");
            let (disk, held) = keeper.sizes();
            log::info!(
                "keeping: first keep done in {:?}: {} copies take {} for {} of sessions",
                began.elapsed(),
                keeper.copies().len(),
                human_size(disk),
                human_size(held)
            );
            first = false;
        } else if report.changed() > 0 {
            if first {
                log::info!("keeping: {}", report.say());
            } else {
                log::debug!("keeping: {}", report.say());
            }
        }
        for f in &report.failed {
            log::warn!("keeping: {f}");
        }
        if report.disk_full {
            if full_since.is_none() {
                let t = now();
                log::error!(
                    "keeping paused: the disk is full (the mount keeps serving; keeping resumes when there is room)"
                );
                status(&format!("paused: disk full since {t}"));
                full_since = Some(t);
            }
            if !sleep(DISK_FULL_RETRY) {
                return;
            }
            continue;
        }
        if let Some(t) = full_since.take() {
            log::info!("keeping resumed (the disk was full since {t})");
            status("on");
        }
        // A slow pass (a huge history's `stat`s) is not run back to back.
        if report.stopped || !sleep(SWEEP.max(started.elapsed()).min(Duration::from_millis(600))) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::agents::AgentRoot;

    fn claude_session(root: &Path, id: &str) {
        let dir = root.join("projects").join("-home-u-p");
        std::fs::create_dir_all(&dir).unwrap();
        let line = serde_json::json!({
            "type": "user", "uuid": "00000000-0000-4000-8000-000000000001",
            "parentUuid": null, "sessionId": id, "cwd": "/home/u/p",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": format!("hello from {id}")}
        });
        std::fs::write(dir.join(format!("{id}.jsonl")), format!("{line}\n")).unwrap();
    }

    /// The keeper and the mount's listing of the copies hold each record once,
    /// whichever reads it first: the keeper's new copies are what the listing reads
    /// next, and a keeper started after a listing takes the listing's records.
    #[test]
    fn the_keeper_and_the_listing_share_each_record() {
        let tmp = tempfile::tempdir().unwrap();
        let (agent_root, store) = (tmp.path().join("claude"), tmp.path().join("store"));
        std::fs::create_dir_all(&store).unwrap();
        let ids = [
            "11111111-1111-4111-8111-111111111111",
            "22222222-2222-4222-8222-222222222222",
        ];
        for id in ids {
            claude_session(&agent_root, id);
        }
        let live = Arc::new(ForeignSource::new(
            &AgentRoot {
                agent: Agent::Claude,
                root: agent_root.clone(),
            },
            Some(&store),
        ));
        live.build_index();
        let kept = crate::sources::kept_sources(&store, std::slice::from_ref(&live));
        let listing = kept[0].kept_copies().unwrap().clone();
        let sources: Vec<Arc<ForeignSource>> = std::iter::once(live).chain(kept).collect();
        let shared = |keeper: &Keeper| -> Vec<bool> {
            let copies = keeper.copies.lock().unwrap();
            let mut out: Vec<(String, bool)> = copies[&Agent::Claude]
                .values()
                .map(|c| {
                    let listed = listing.listed_record(&c.name).expect("listed");
                    (c.name.clone(), Arc::ptr_eq(&listed, &c.record))
                })
                .collect();
            out.sort();
            out.into_iter().map(|(_, same)| same).collect()
        };
        let keeper = Keeper::new(&store, sources.clone(), KeepOptions::default())
            .unwrap()
            .unwrap();
        let report = keeper.pass(&Control::none());
        assert_eq!(report.new, 2, "{}", report.say());
        listing.list();
        assert_eq!(
            shared(&keeper),
            [true, true],
            "the listing read the keeper's"
        );
        drop(keeper);
        // A new keeper (a remount) reads the records the listing already holds.
        let again = Keeper::new(&store, sources, KeepOptions::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            shared(&again),
            [true, true],
            "the keeper took the listing's"
        );
    }
}
