//! Kept copies (`store::kept`) as sessions, for a `ForeignSource` over them: which
//! of an agent's copies are shown, their bytes and what their records say.
//!
//! On this machine a copy is shown once its source is gone (its file no longer a
//! file, its database no longer listing it), unless the agent still shows a session
//! of the same folder name in the same namespace (a file moved or migrated); every
//! earlier version is shown always, as `<dir>.v<N>`. Over a peer's `.kept` folder
//! every copy is shown: its sources are on another machine.
//!
//! A process's first listing reads the records from one file in this machine's
//! `.fen-cache`, each proved by its copy folder's stamp (`listing_cache`), and only
//! the records of folders that changed.
//!
//! A copy is read as its record says, never further: a plain generation's bytes are
//! checked (length and CRC-32) once per state before they are served; a compressed
//! one is decompressed, checked on the way, into an unnamed file in this machine's
//! cache folder. A copy that fails the check is served empty, and says why (its
//! `meta.json`, `summary.txt`, `fen-fs fsck`).

mod listing_cache;

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::store::index::FileStamp;
use crate::store::kept::{self, Generation, KeptRecord};
use crate::store::open::Dir;
use listing_cache::{CachedRef, FolderStamp};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which copies a source over kept copies shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// This machine's: those whose source is gone, and every earlier version.
    Gone,
    /// A peer's: every copy (its sources are on another machine).
    All,
}

/// A listing of the copies is reused for this long (one `fen-fs list` lists every
/// namespace, each asking; a mount's listings come in bursts).
const LIST_FOR: Duration = Duration::from_millis(250);
/// Decompressed copies held open at once.
const OPEN_COPIES: usize = 8;
/// A listing that read records writes the listing cache at most this often (a
/// mount's keeper making thousands of copies changes it all the time); `persist`
/// writes what is left.
const CACHE_EVERY: Duration = Duration::from_secs(30);

/// What the record of a shown copy says of one of its generations.
#[derive(Debug, Clone)]
pub struct CopyFacts {
    pub record: KeptRecord,
    pub generation: Generation,
    /// `Some(N)`: the Nth earlier version (1: the oldest), not the current bytes.
    pub version: Option<u32>,
    /// The source is gone (on this machine: as checked now; a peer's: as its record
    /// says).
    pub source_deleted: bool,
    /// Why the copy's bytes cannot be served, if they cannot.
    pub damaged: Option<String>,
    /// The machine it was kept on (a peer's copies).
    pub host: Option<String>,
}

/// Shown generations (keys) with the cwd their records name.
type Listed = Vec<(PathBuf, Option<String>)>;

struct Known {
    /// The copy folder's stamp when its record was read.
    stamp: FolderStamp,
    /// The stamp cannot hide a change made in the same clock tick as the reading
    /// (`listing_cache::settled`): trusted from now on. Else read again next time.
    settled: bool,
    /// Shared, not inline: a listing rebuilds the map of 10,000 copies beside the
    /// old one and takes every record out of it, and tables of records inline, and
    /// their copies, were the daemon's peak (bench row 11).
    record: Arc<KeptRecord>,
}

#[derive(Default)]
struct State {
    copies: HashMap<String, Known>,
    /// The listing cache was read (once per process).
    cache_read: bool,
    /// Settled records read (or copies gone) since the listing cache was written.
    cache_stale: bool,
    cache_written: Option<Instant>,
    listed: Option<(Instant, Listed)>,
    /// Bumped by every new listing (`reused_listing`).
    listed_generation: u64,
    /// Whether each shown copy's source is gone, as of the last listing.
    gone: HashMap<String, bool>,
    /// Decompressed (or cut) copies: key → (stamp, file), most recent last.
    open: Vec<(PathBuf, FileStamp, File)>,
    /// Plain generations checked whole at this stamp, and the damaged ones.
    checked: HashMap<PathBuf, (FileStamp, Option<String>)>,
}

/// What the copies ask of the sources showing the agent's live sessions (the
/// agent's own `ForeignSource`s): whether a copy's source is still shown there.
pub trait LiveSessions: Send + Sync {
    /// The folder it reads (the agent's root).
    fn agent_root(&self) -> &Path;
    /// Whether its first index is built.
    fn is_indexed(&self) -> bool;
    /// Whether it still has the database-backed session `key`.
    fn lists_unit(&self, key: &Path) -> bool;
    /// Whether it shows session folder `dir` in namespace `ns` now.
    fn shows_session(&self, ns: &str, dir: &str) -> bool;
    /// Where it shows session `id`: (namespace, folder).
    fn session_place(&self, id: &str) -> Option<(String, String)>;
    /// The subagents of session `id` it shows: (agent id, call id, place).
    fn subagent_places(&self, id: &str) -> Vec<(String, Option<String>, (String, String))>;
}

/// The record offered for copy `name` if the keeper still holds it and it equals
/// `record`; an offer the keeper dropped is forgotten.
fn offered_equal(
    offered: &mut HashMap<String, std::sync::Weak<KeptRecord>>,
    name: &str,
    record: &KeptRecord,
) -> Option<Arc<KeptRecord>> {
    match offered.get(name).map(std::sync::Weak::upgrade)? {
        Some(r) => (*r == *record).then_some(r),
        None => {
            offered.remove(name);
            None
        }
    }
}

/// One agent's folder of kept copies.
pub struct KeptCopies {
    agent: Agent,
    dir: PathBuf,
    shown: Shown,
    host: Option<String>,
    /// This machine's store, whose cache folder holds decompressed copies.
    cache_root: Option<PathBuf>,
    /// The sources showing the agent's live sessions (`Shown::Gone`).
    live: Vec<Arc<dyn LiveSessions>>,
    state: Mutex<State>,
    /// Records the keeper holds, by folder name (`share`): a record read from a copy
    /// folder that equals one of them is that one, not a second copy in memory. Weak:
    /// what the keeper drops is not held here.
    offered: Mutex<HashMap<String, std::sync::Weak<KeptRecord>>>,
}

impl KeptCopies {
    /// The sources showing the agent's live sessions.
    pub fn live(&self) -> &[Arc<dyn LiveSessions>] {
        &self.live
    }

    /// The copies in `dir` (`<store>/.kept/<agent>`).
    pub fn new(
        agent: Agent,
        dir: PathBuf,
        shown: Shown,
        host: Option<String>,
        cache_root: Option<PathBuf>,
        live: Vec<Arc<dyn LiveSessions>>,
    ) -> Self {
        KeptCopies {
            agent,
            dir,
            shown,
            host,
            cache_root,
            live,
            state: Mutex::new(State::default()),
            offered: Mutex::new(HashMap::new()),
        }
    }

    /// `record`, the keeper's record of copy `name` (as just committed, or read from
    /// its folder), as one shared with this listing: the listing's own when it holds
    /// an equal one, else a new one that the listing's next reading of that record
    /// will share. The keeper and the listing each hold every copy's record; shared,
    /// 10,000 copies' records are in memory once (bench row 11). Only equal contents
    /// are shared: nothing is trusted that was not read.
    pub fn share(&self, name: &str, record: KeptRecord) -> Arc<KeptRecord> {
        let listed = {
            let st = self.state.lock().unwrap();
            st.copies
                .get(name)
                .filter(|k| *k.record == record)
                .map(|k| k.record.clone())
        };
        let mut offered = self.offered.lock().unwrap();
        let shared = listed
            .or_else(|| offered_equal(&mut offered, name, &record))
            .unwrap_or_else(|| Arc::new(record));
        offered.insert(name.to_string(), Arc::downgrade(&shared));
        shared
    }

    /// The record this listing holds for copy `name` (as of its last listing).
    pub fn listed_record(&self, name: &str) -> Option<Arc<KeptRecord>> {
        let st = self.state.lock().unwrap();
        st.copies.get(name).map(|k| k.record.clone())
    }

    /// `record`, read for copy `name`, as the keeper's equal one if it holds one.
    fn shared_with_keeper(&self, name: &str, record: KeptRecord) -> Arc<KeptRecord> {
        let mut offered = self.offered.lock().unwrap();
        offered_equal(&mut offered, name, &record).unwrap_or_else(|| Arc::new(record))
    }

    pub fn agent(&self) -> Agent {
        self.agent
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// Whether it lists another machine's copies.
    pub fn is_peer(&self) -> bool {
        self.shown == Shown::All
    }

    /// The agent's folder of copies, reached from the store's root without following
    /// a link (`.kept` and the agent's folder must be real folders).
    fn agent_dir(&self) -> std::io::Result<Dir> {
        let (Some(agent), Some(kept)) = (self.dir.file_name(), self.dir.parent()) else {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        };
        let (Some(kept_name), Some(root)) = (kept.file_name(), kept.parent()) else {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        };
        Dir::open_root(root)?.open_dir(kept_name)?.open_dir(agent)
    }

    /// The key of generation `file` of copy `folder`: the generation file's path.
    fn key(&self, folder: &str, file: &str) -> PathBuf {
        self.dir.join(folder).join(file)
    }

    fn split(&self, key: &Path) -> Option<(String, String)> {
        let file = key.file_name()?.to_str()?.to_string();
        let parent = key.parent()?;
        if parent.parent()? != self.dir {
            return None;
        }
        Some((parent.file_name()?.to_str()?.to_string(), file))
    }

    /// Re-reads the records whose copy folder changed; drops copies that went. A
    /// process's first look takes the records the listing cache proves.
    fn refresh_records(&self, st: &mut State) {
        let Ok(dir) = self.agent_dir() else {
            st.copies.clear();
            return;
        };
        let cache = self.listing_cache();
        let mut cached = HashMap::new();
        if !st.cache_read {
            st.cache_read = true;
            if let Some(c) = &cache {
                cached = listing_cache::load(c, &self.dir, self.agent.name());
            }
        }
        let now = listing_cache::now_ns();
        let before = st.copies.len();
        let mut seen = HashMap::with_capacity(before);
        for (name, kind) in dir.read_dir().unwrap_or_default() {
            let Some(name) = name.to_str() else { continue };
            if !kind.is_dir() || name.starts_with('.') {
                continue;
            }
            let Ok(folder_st) = dir.stat(name) else {
                continue;
            };
            let stamp = listing_cache::folder_stamp(&folder_st);
            let known = match (st.copies.remove(name), cached.remove(name)) {
                (Some(k), _) if k.stamp == stamp && k.settled => Some(k),
                (_, Some((s, record))) if s == stamp => Some(Known {
                    stamp,
                    settled: true,
                    record: self.shared_with_keeper(name, record),
                }),
                _ => {
                    let settled = listing_cache::settled(&stamp, now);
                    let record = dir
                        .open_dir(name)
                        .ok()
                        .as_ref()
                        .and_then(kept::read_record)
                        .filter(|r| r.agent == self.agent.name());
                    st.cache_stale |= settled;
                    record.map(|record| Known {
                        stamp,
                        settled,
                        record: self.shared_with_keeper(name, record),
                    })
                }
            };
            if let Some(k) = known {
                seen.insert(name.to_string(), k);
            }
        }
        st.cache_stale |= seen.len() < before;
        st.copies = seen;
        if st.cache_stale && st.cache_written.is_none_or(|t| t.elapsed() >= CACHE_EVERY) {
            self.write_listing_cache(st);
        }
    }

    /// This machine's listing cache of these copies (none without a store).
    fn listing_cache(&self) -> Option<crate::store::layout::CacheFile> {
        let root = self.cache_root.as_ref()?;
        Some(crate::store::layout::kept_listing_cache(
            root,
            self.agent.name(),
            &self.dir,
        ))
    }

    fn write_listing_cache(&self, st: &mut State) {
        let Some(cache) = self.listing_cache() else {
            return;
        };
        let entries: Vec<CachedRef> = st
            .copies
            .iter()
            .filter(|(_, k)| k.settled)
            .map(|(name, k)| CachedRef {
                name,
                stamp: k.stamp,
                record: &k.record,
            })
            .collect();
        listing_cache::save(&cache, &self.dir, &entries);
        st.cache_stale = false;
        st.cache_written = Some(Instant::now());
    }

    /// Writes the listing cache if records were read since it was last written.
    pub fn persist(&self) {
        let mut st = self.state.lock().unwrap();
        if st.cache_stale {
            self.write_listing_cache(&mut st);
        }
    }

    /// Whether copy `r`'s source is gone, on this machine.
    fn source_gone(&self, r: &KeptRecord) -> bool {
        if self.shown == Shown::All {
            return r.source_deleted;
        }
        if r.unit {
            let covering: Vec<&Arc<dyn LiveSessions>> = self
                .live
                .iter()
                .filter(|s| s.agent_root() == r.source_root)
                .collect();
            if covering.is_empty() {
                return r.source_deleted || std::fs::symlink_metadata(&r.source_root).is_err();
            }
            return !covering.iter().any(|s| s.lists_unit(&r.source));
        }
        !std::fs::symlink_metadata(&r.source).is_ok_and(|m| m.is_file())
    }

    /// Whether a live source shows a session of the copy's folder name in its
    /// namespace (the file moved, or the agent migrated it): then the copy is not
    /// shown a second time.
    fn shown_live(&self, r: &KeptRecord, wait_live: bool) -> bool {
        let (Some(ns), Some(dir)) = (&r.facts.namespace, &r.facts.dir) else {
            return false;
        };
        self.live
            .iter()
            .any(|s| (wait_live || s.is_indexed()) && s.shows_session(ns, dir))
    }

    /// The shown generations as keys, with the cwd their records name (a namespace
    /// hint before they are read).
    pub fn list(&self) -> Vec<(PathBuf, Option<String>)> {
        self.list_with(true)
    }

    /// `list` for a caller that does not build the agents' indexes (`fen-fs usage`
    /// reads their files, not their sessions): an agent's source not indexed yet is
    /// not waited for, so a copy whose file moved there (same name, another place)
    /// is listed too; such a listing is not reused by `list`.
    pub fn list_unwaited(&self) -> Vec<(PathBuf, Option<String>)> {
        if self.live.iter().all(|s| s.is_indexed()) {
            return self.list_with(true);
        }
        self.list_with(false)
    }

    fn list_with(&self, wait_live: bool) -> Vec<(PathBuf, Option<String>)> {
        if wait_live {
            let st = self.state.lock().unwrap();
            if let Some((at, list)) = &st.listed
                && at.elapsed() < LIST_FOR
            {
                return list.clone();
            }
        }
        let records: Vec<(String, Arc<KeptRecord>)> = {
            let mut st = self.state.lock().unwrap();
            self.refresh_records(&mut st);
            st.copies
                .iter()
                .map(|(n, k)| (n.clone(), k.record.clone()))
                .collect()
        };
        // Outside the lock: a live source may be asked (and may wait for its index).
        let mut out = Vec::new();
        let mut gone = HashMap::new();
        for (name, r) in &records {
            let n = r.generations.len();
            for g in &r.generations[..n - 1] {
                out.push((self.key(name, &g.file), r.facts.cwd.clone()));
            }
            let is_gone = self.source_gone(r);
            gone.insert(name.clone(), is_gone);
            let show = match self.shown {
                Shown::All => true,
                Shown::Gone => is_gone && !self.shown_live(r, wait_live),
            };
            if show && let Some(g) = r.current() {
                out.push((self.key(name, &g.file), r.facts.cwd.clone()));
            }
        }
        out.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
        let mut st = self.state.lock().unwrap();
        st.gone = gone;
        if wait_live {
            st.listed = Some((Instant::now(), out.clone()));
            st.listed_generation += 1;
        }
        out
    }

    /// Which listing `list` gives now: the generation of the last one while it is
    /// reused (`LIST_FOR`), `None` when the next `list` makes a new one. A source that
    /// walked that generation has nothing new to find in it.
    pub fn reused_listing(&self) -> Option<u64> {
        let st = self.state.lock().unwrap();
        st.listed
            .as_ref()
            .filter(|(at, _)| at.elapsed() < LIST_FOR)
            .map(|_| st.listed_generation)
    }

    /// Forgets the last listing (a caller that knows something changed).
    pub fn invalidate(&self) {
        self.state.lock().unwrap().listed = None;
    }

    fn lookup(&self, key: &Path) -> Option<(String, KeptRecord, usize)> {
        let (folder, file) = self.split(key)?;
        let st = self.state.lock().unwrap();
        let k = st.copies.get(&folder)?;
        let at = k.record.generations.iter().position(|g| g.file == file)?;
        Some((folder, (*k.record).clone(), at))
    }

    /// What the records say of `key`'s generation.
    pub fn facts(&self, key: &Path) -> Option<CopyFacts> {
        let (folder, record, at) = self.lookup(key)?;
        let generation = record.generations[at].clone();
        let current = at + 1 == record.generations.len();
        let st = self.state.lock().unwrap();
        let source_deleted = match self.shown {
            Shown::All => record.source_deleted,
            Shown::Gone => st
                .gone
                .get(&folder)
                .copied()
                .unwrap_or(record.source_deleted),
        };
        let damaged = st.checked.get(key).and_then(|(_, d)| d.clone());
        Some(CopyFacts {
            version: (!current).then_some(at as u32 + 1),
            generation,
            source_deleted,
            damaged,
            host: self.host.clone(),
            record,
        })
    }

    /// The session key `key`'s copy was made from (its file at the source), which
    /// names its reader and its folder.
    pub fn source_key(&self, key: &Path) -> Option<PathBuf> {
        self.lookup(key).map(|(_, r, _)| r.source)
    }

    /// `key`'s stamp: its generation file's device and inode, the session's bytes it
    /// holds, the source's mtime as of them, and a hash of what its record says of
    /// it in place of the ctime (so a changed record is read again).
    pub fn stamp(&self, key: &Path) -> Option<FileStamp> {
        let base = self.base_stamp(key)?;
        Some(self.shown_stamp(key, base))
    }

    /// A damaged copy is served empty: its size says so.
    fn shown_stamp(&self, key: &Path, base: FileStamp) -> FileStamp {
        let st = self.state.lock().unwrap();
        match st.checked.get(key) {
            Some((s, Some(_))) if *s == base => FileStamp { size: 0, ..base },
            _ => base,
        }
    }

    fn base_stamp(&self, key: &Path) -> Option<FileStamp> {
        let (folder, record, at) = self.lookup(key)?;
        let g = &record.generations[at];
        let st = self
            .agent_dir()
            .ok()?
            .open_dir(&folder)
            .ok()?
            .stat(&g.file)
            .ok()?;
        let current = at + 1 == record.generations.len();
        let said = serde_json::to_vec(&(
            &record.facts,
            g,
            &record.id,
            current && record.source_deleted,
            current.then_some(&record.deleted_noticed),
            (current && record.source_deleted).then_some(&record.last_seen),
        ))
        .unwrap_or_default();
        Some(FileStamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: g.len,
            mtime_ns: g.source_mtime_ns,
            // With the file's own ctime: a copy changed behind the keeper's back
            // (damaged, replaced) is read and checked again.
            ctime_ns: crate::store::atomic::checksum(&[
                &said,
                &st.st_ctime.to_le_bytes(),
                &st.st_ctime_nsec.to_le_bytes(),
            ]) as i128,
        })
    }

    /// `key`'s bytes, exactly as kept, and its stamp. A damaged copy reads as empty
    /// (and its facts say why).
    pub fn open(&self, key: &Path) -> Result<(File, FileStamp)> {
        let stamp = self
            .base_stamp(key)
            .ok_or_else(|| Error::not_found(format!("no kept copy {}", key.display())))?;
        {
            let st = self.state.lock().unwrap();
            if let Some((_, _, f)) = st.open.iter().find(|(k, s, _)| k == key && *s == stamp) {
                return f
                    .try_clone()
                    .map(|f| (f, stamp))
                    .map_err(|e| Error::io(key.display(), &e));
            }
        }
        let (folder, record, at) = self
            .lookup(key)
            .ok_or_else(|| Error::not_found(format!("no kept copy {}", key.display())))?;
        let g = record.generations[at].clone();
        let dir = self
            .agent_dir()
            .and_then(|d| d.open_dir(&folder))
            .map_err(|e| Error::io(key.display(), &e))?;
        if !g.compressed() {
            let (file, meta) = dir
                .open_file(&g.file)
                .map_err(|e| Error::io(key.display(), &e))?;
            let checked = self.state.lock().unwrap().checked.get(key).cloned();
            let damaged = match checked {
                Some((s, d)) if s == stamp => d,
                _ => {
                    let d = kept::verify_generation(&dir, &g).err().map(|e| e.reason);
                    if let Some(why) = &d {
                        log::warn!("kept copy {}: {why}", key.display());
                    }
                    self.state
                        .lock()
                        .unwrap()
                        .checked
                        .insert(key.to_path_buf(), (stamp, d.clone()));
                    d
                }
            };
            if damaged.is_some() {
                let shown = self.shown_stamp(key, stamp);
                return Ok((crate::store::open::anonymous_file(b"")?, shown));
            }
            if meta.len() == g.len {
                return Ok((file, stamp));
            }
        }
        // Compressed, or longer than its record (a torn append): its bytes, whole
        // and checked, into an unnamed file.
        let out = self.unnamed_file()?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &out);
        let read = kept::read_generation(&dir, &g, &mut w);
        let flushed = std::io::Write::flush(&mut w).map_err(|e| Error::io("a kept copy", &e));
        drop(w);
        let damaged = read.and(flushed).err().map(|e| e.reason);
        if let Some(why) = &damaged {
            log::warn!("kept copy {}: {why}", key.display());
        }
        let mut st = self.state.lock().unwrap();
        st.checked
            .insert(key.to_path_buf(), (stamp, damaged.clone()));
        if damaged.is_some() {
            return Ok((
                crate::store::open::anonymous_file(b"")?,
                FileStamp { size: 0, ..stamp },
            ));
        }
        st.open.retain(|(k, _, _)| k != key);
        st.open.push((
            key.to_path_buf(),
            stamp,
            out.try_clone().map_err(|e| Error::io("a kept copy", &e))?,
        ));
        if st.open.len() > OPEN_COPIES {
            st.open.remove(0);
        }
        Ok((out, stamp))
    }

    /// An unnamed file in this machine's cache folder (a memory file without one).
    fn unnamed_file(&self) -> Result<File> {
        if let Some(root) = &self.cache_root {
            let c = crate::store::layout::kept_read_dir(root);
            let dirs: Vec<&str> = c.dirs.iter().map(String::as_str).collect();
            if let Ok(f) = Dir::open_root(&c.root)
                .and_then(|r| r.walk_create(&dirs))
                .and_then(|d| d.tmpfile_rw())
            {
                return Ok(f);
            }
        }
        crate::store::open::anonymous_file(b"")
    }

    /// The folder of the copy `f` is of.
    pub fn folder_of(&self, f: &CopyFacts) -> Option<String> {
        let st = self.state.lock().unwrap();
        st.copies
            .iter()
            .find(|(_, k)| {
                k.record.source == f.record.source && k.record.first_seen == f.record.first_seen
            })
            .map(|(n, _)| n.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::kept::{Control, KeptStore, OutsideFacts, SourceProof};

    /// Sets folder `path`'s mtime an hour back (a copy settled long ago).
    fn settle(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        let then = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            - 3600;
        let t = [
            libc::timespec {
                tv_sec: then,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: then,
                tv_nsec: 0,
            },
        ];
        // SAFETY: a valid C string and timespec pair.
        assert_eq!(
            unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), t.as_ptr(), 0) },
            0
        );
    }

    /// A store with `n` kept Claude Code copies `c<i>`, each with cwd `/old/<i>`.
    fn store_with_copies(root: &Path, n: usize) -> PathBuf {
        let store = KeptStore::open(root, true).unwrap().unwrap();
        for i in 0..n {
            let src_path = root.join(format!("s{i}.jsonl"));
            std::fs::write(&src_path, format!("{{\"n\":{i}}}\n")).unwrap();
            let src = File::open(&src_path).unwrap();
            let record = KeptRecord {
                format: kept::RECORD_FORMAT,
                agent: "claude".into(),
                source: src_path.clone(),
                source_root: root.to_path_buf(),
                unit: false,
                id: format!("s{i}"),
                facts: OutsideFacts {
                    cwd: Some(format!("/old/{i}")),
                    ..Default::default()
                },
                first_seen: "2026-01-01T00:00:00.000Z".into(),
                last_seen: "2026-01-01T00:00:00.000Z".into(),
                source_deleted: false,
                deleted_noticed: None,
                generations: Vec::new(),
                proof: SourceProof::default(),
            };
            let len = src.metadata().unwrap().len();
            let s = store
                .stage_new(&format!("c{i}"), record, &src, len, false, &Control::none())
                .unwrap()
                .unwrap();
            store.commit(s).unwrap();
            settle(&store.path().join("claude").join(format!("c{i}")));
        }
        store.path().join("claude")
    }

    /// A new reader of the copies (as a new process makes): (copy → cwd).
    fn cwds(root: &Path, dir: &Path) -> std::collections::BTreeMap<String, String> {
        let copies = KeptCopies::new(
            Agent::Claude,
            dir.to_path_buf(),
            Shown::All,
            None,
            Some(root.to_path_buf()),
            Vec::new(),
        );
        copies
            .list()
            .into_iter()
            .map(|(key, _)| {
                let f = copies.facts(&key).unwrap();
                let (folder, _) = copies.split(&key).unwrap();
                (folder, f.record.facts.cwd.unwrap())
            })
            .collect()
    }

    /// A tree asks every source about every namespace it lists (a first mount's `ls`
    /// and each `index.json`): a source over kept copies that does not have one says
    /// so without walking its copies again while their listing is the one it walked.
    #[test]
    fn a_namespace_the_copies_do_not_have_costs_no_walk() {
        use crate::sources::SessionSource;
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let dir = store_with_copies(root, 3);
        let copies = KeptCopies::new(
            Agent::Claude,
            dir,
            Shown::All,
            None,
            Some(root.to_path_buf()),
            Vec::new(),
        );
        let source = crate::sources::foreign_source::ForeignSource::over_kept(copies, Some(root));
        source.build_index();
        let namespaces = source.namespaces().unwrap();
        assert_eq!(namespaces.len(), 3, "{namespaces:?}");
        let walks = source.walks();
        for _ in 0..50 {
            assert!(!source.has_namespace("--nowhere--"));
            assert!(source.has_namespace(&namespaces[0]));
        }
        assert!(
            source.walks() <= walks + 1,
            "{} walks for 50 misses",
            source.walks() - walks
        );
    }

    #[test]
    fn the_listing_cache_is_trusted_only_where_each_copy_folder_proves_it() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let dir = store_with_copies(root, 3);
        let cache = crate::store::layout::kept_listing_cache(root, "claude", &dir).path();
        // A first listing reads every record and lists them in the cache.
        let first = cwds(root, &dir);
        assert_eq!(first.len(), 3);
        assert_eq!(first["c1"], "/old/1");
        assert!(cache.is_file());

        // A record changed without its folder (written in place, as no keeper does):
        // a new listing takes the cached record, proved by the folder's stamp; the
        // record itself is not read.
        let record_path = dir.join("c1").join(kept::RECORD);
        let mut r: KeptRecord =
            serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
        r.facts.cwd = Some("/in-place/1".into());
        std::fs::write(&record_path, serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(cwds(root, &dir)["c1"], "/old/1", "the cache was not used");

        // The keeper's way: a new record renamed into the folder moves its stamp, and
        // the record is read again (and the others still come from the cache).
        r.facts.cwd = Some("/renamed/1".into());
        let folder = Dir::open_root(&dir).unwrap().open_dir("c1").unwrap();
        folder
            .replace_file(kept::RECORD, &serde_json::to_vec(&r).unwrap())
            .unwrap();
        let now = cwds(root, &dir);
        assert_eq!(now["c1"], "/renamed/1");
        assert_eq!(now["c0"], "/old/0");
        // A copy gone, another added: the listing follows the folders.
        std::fs::remove_dir_all(dir.join("c2")).unwrap();
        std::fs::rename(dir.join("c0"), dir.join("c9")).unwrap();
        let now = cwds(root, &dir);
        assert_eq!(now.keys().collect::<Vec<_>>(), ["c1", "c9"], "{now:?}");
        assert_eq!(now["c9"], "/old/0");

        // Settled again (and cached), then the cache file is edited: its checksum
        // fails, and every record is read from its folder.
        settle(&dir.join("c1"));
        settle(&dir.join("c9"));
        assert_eq!(cwds(root, &dir)["c1"], "/renamed/1");
        let text = std::fs::read_to_string(&cache).unwrap();
        assert!(text.contains("/renamed/1"), "cached: {text}");
        let forged = text.replace("/renamed/1", "/forged/1");
        std::fs::write(&cache, forged).unwrap();
        // (and the record in place once more, which only a trusted cache would hide)
        r.facts.cwd = Some("/on-disk/1".into());
        std::fs::write(&record_path, serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(cwds(root, &dir)["c1"], "/on-disk/1");
        // A cache of another folder of copies is not this one's.
        let other = root.join("elsewhere");
        std::fs::create_dir(&other).unwrap();
        let mine = crate::store::layout::kept_listing_cache(root, "claude", &dir);
        let bytes = std::fs::read(mine.path()).unwrap();
        assert!(listing_cache::load(&mine, &other, "claude").is_empty());
        assert_eq!(std::fs::read(mine.path()).unwrap(), bytes);
    }
}
