//! Another agent's store (pi, Claude Code, Codex) as a read-only [`SessionSource`].
//!
//! Its session files are found by walking the agent's folders (a folder whose mtime
//! did not change is not re-read), each file is read once by the agent's
//! [`ForeignReader`] into a small summary (cwd, title, counts...), and a session
//! appears in the namespace of its real cwd, named `<created stamp>_<agent>-<id>`.
//! A file that grew is read from where the last read stopped: its reader is in memory
//! (a few recent ones) or its saved state is on disk (files of 256 KiB or more, proved
//! to belong to the file's bytes), whatever was read since; anything else about it
//! changing means a fresh read.
//!
//! Nothing is ever written, locked or created in the agent's folders: every open is
//! read-only, `O_NOFOLLOW`, checked to be a regular file. The index of summaries is
//! kept in fen's own cache folder, reused on the next mount for every file whose
//! (device, inode, size, mtime) is unchanged. The first index is built by a
//! background thread, so `mount` returns at once; a listing waits for it.

mod messages;
mod units;

use super::agents::{self, AgentRoot};
use super::foreign::{ForeignReader, ForeignSummary};
use super::{NamespaceIndex, SessionSource, SessionStat};
use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::store::index::{FileStamp, content_check, tokens_of};
use crate::store::naming;
use crate::views::listing::{Listing, render_json, sort_newest_first};
use crate::views::pieces::{Piece, PieceLayout, PieceSnapshot};
use crate::views::{Snapshot, ViewKind, local_time};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The namespace of sessions whose file names no working directory.
pub const UNKNOWN_CWD_NAMESPACE: &str = "--unknown-cwd--";

/// Readers kept in memory (each holds per-entry records, not contents): the files in
/// use. The others' states are on disk, so this only saves loading them.
const READERS_IN_MEMORY: usize = 8;
/// Conversation layouts kept in memory (larger files' are also on disk).
const LAYOUTS_IN_MEMORY: usize = 32;
/// Files at least this large keep their reader's state on disk when it leaves memory
/// (the first index saves those of `PERSIST_MIN` or more): a smaller one is read
/// again in under a millisecond.
const STATE_MIN: u64 = 256 << 10;
/// Session files read at once while the first index is built (it is mostly parsing).
const INDEX_WORKERS: usize = 4;
/// How much of a file one `read` takes while feeding a reader.
const CHUNK: usize = 2 << 20;
/// 2: summaries carry `archived` and `resume_rules`; 3: entries carry
/// `context_tokens`.
const INDEX_VERSION: u32 = 3;

/// What the index keeps per session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileEntry {
    stamp: FileStamp,
    summary: ForeignSummary,
    /// `meta.json`'s `context_tokens`, from the same read (so it needs no layout).
    #[serde(default)]
    context_tokens: Option<u64>,
}

impl Index {
    fn namespace_of(&self, path: &Path) -> Option<String> {
        self.dir_of.get(path).map(|(n, _)| n.clone())
    }
}

impl FileEntry {
    fn mtime(&self) -> SystemTime {
        let ns = self.stamp.mtime_ns.max(0) as u128;
        UNIX_EPOCH + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
    }

    fn namespace(&self) -> String {
        match self.summary.cwd.as_deref() {
            Some(cwd) if !cwd.is_empty() => naming::slug(cwd),
            _ => UNKNOWN_CWD_NAMESPACE.to_string(),
        }
    }

    fn created_at(&self) -> String {
        self.summary
            .created_at
            .clone()
            .unwrap_or_else(|| rfc3339(self.mtime()))
    }
}

fn rfc3339(t: SystemTime) -> String {
    naming::timestamp(chrono::DateTime::<chrono::Utc>::from(t))
}

/// `<created stamp>_<agent>-<id>`: sorts by time beside fen's `<stamp>_<id>` folders.
fn session_dir_name(agent: Agent, path: &Path, e: &FileEntry) -> String {
    let created = chrono::DateTime::parse_from_rfc3339(&e.created_at())
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| e.mtime().into());
    let id = if naming::is_valid_session_id(&e.summary.id) {
        e.summary.id.clone()
    } else {
        // No usable id in the file: its name stands in (made path-safe).
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        stem.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!("{}_{}-{id}", naming::stamp(created), agent.name())
}

/// A folder as last read: its stamp and what it held.
struct FolderScan {
    stamp: (u64, i128),
    /// The folder's mtime was older than the scan by more than the clock's coarse
    /// granularity: a change after the scan moves it. Otherwise a file created in the
    /// same tick leaves the stamp as it was, so the next walk reads the folder again.
    settled: bool,
    folders: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

#[derive(Default)]
struct Index {
    files: HashMap<PathBuf, FileEntry>,
    /// namespace → session dir → file.
    by_ns: BTreeMap<String, BTreeMap<String, PathBuf>>,
    dir_of: HashMap<PathBuf, (String, String)>,
    /// For agents showing one session per id (`agents::one_session_per_id`): id →
    /// the files carrying it; only the one `agents::prefer` ranks first is placed in
    /// `by_ns`, the others wait in `files` in case it goes.
    by_id: HashMap<String, Vec<PathBuf>>,
    folders: HashMap<PathBuf, FolderScan>,
    /// Codex renames (`session_index.jsonl`): id → name, with the file's stamp.
    renames: HashMap<String, String>,
    renames_stamp: Option<FileStamp>,
    ready: bool,
    /// Set once the first index knows which files it must still read.
    planned: bool,
    /// Namespaces (by hint) with files the first index has still to read.
    pending: HashMap<String, usize>,
    /// Namespaces a listing waits for: read their files first.
    wanted: BTreeSet<String>,
    /// Bumped by every change to the index: keys the rendered listings.
    generation: u64,
    /// Namespaces whose files must be re-`stat`ed before the next listing (all of
    /// them when nothing watches the folders).
    dirty: BTreeSet<String>,
    /// Without a watch: namespaces whose files the first index has just `stat`ed,
    /// not listed since; their first listing takes those stamps (a one-shot command
    /// such as `fen-fs list` would `stat` every file twice otherwise).
    fresh: BTreeSet<String>,
    rendered: HashMap<String, (u64, Arc<Vec<Listing>>, NamespaceIndex)>,
}

/// A reader that has consumed a file up to `consumed`, for following appends.
struct Following {
    /// The file's stamp when it was last fed (default: never fed).
    stamp: FileStamp,
    consumed: u64,
    tail: Vec<u8>,
    reader: Box<dyn ForeignReader>,
    used: u64,
    /// `content_check` of the consumed bytes, taken when they were fed: what a saved
    /// state must match to be used.
    proof: Option<u64>,
    /// Fed since its state was last saved or loaded.
    unsaved: bool,
}

impl Following {
    fn new(reader: Box<dyn ForeignReader>) -> Self {
        Following {
            stamp: FileStamp::default(),
            consumed: 0,
            tail: Vec::new(),
            reader,
            used: 0,
            proof: None,
            unsaved: true,
        }
    }

    /// Whether a file now at `stamp` is this one, unchanged or grown (by appends, for
    /// a reader that follows them).
    fn follows(&self, stamp: FileStamp) -> bool {
        self.stamp.dev == stamp.dev
            && self.stamp.ino == stamp.ino
            && stamp.size >= self.stamp.size
            && (stamp.size > self.stamp.size && self.reader.follows_appends()
                || stamp == self.stamp)
    }
}

/// Where a reader goes after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Into memory (a file in use: its next append is read from there).
    Memory,
    /// To disk at once (the first index reads every file once).
    Disk,
}

pub struct ForeignSource {
    agent: Agent,
    root: PathBuf,
    /// The folders holding its session files (most agents have one).
    folders: Vec<agents::SessionsFolder>,
    /// Where the index is persisted (in fen's store, never in the agent's folder).
    cache_file: Option<crate::store::layout::CacheFile>,
    index: Mutex<Index>,
    ready: Condvar,
    readers: Mutex<(u64, HashMap<PathBuf, Following>)>,
    /// inotify on the session folders (daemon only): an unchanged store costs no
    /// `stat` per file on a listing.
    watch: Option<super::watch::StoreWatch>,
    /// Conversation layouts of recently opened files: `stat`, `open` and every later
    /// open of an unchanged file share one computation.
    conversations: Mutex<(u64, HashMap<PathBuf, Conversation>)>,
    /// fen's store, for persisted conversation layouts of large files.
    fen_root: Option<PathBuf>,
    /// `conversation.md` of recently read sessions, one rendering per file state.
    markdown: crate::views::markdown::MarkdownCache,
    /// Sessions that are not files (a database's rows), beside or instead of files.
    units: Option<super::units::Units>,
    /// The units of the last walk, with the cwd their listing names.
    unit_hints: Mutex<HashMap<PathBuf, Option<String>>>,
}

/// A file's `conversation.json` as of one stamp.
struct Conversation {
    stamp: FileStamp,
    /// The file's `content_check` when the layout was made (its stamp, ctime
    /// included, is `stamp`): what a persisted copy must match, taken then, not
    /// when saving, so a later rewrite cannot vouch for an older layout.
    proof: Option<u64>,
    layout: Arc<PieceLayout>,
    context_tokens: u64,
    used: u64,
    saved: bool,
}

#[derive(Serialize, Deserialize)]
struct Persisted {
    version: u32,
    agent: Agent,
    root: PathBuf,
    files: Vec<(PathBuf, FileEntry)>,
}

impl ForeignSource {
    /// A source over `root`, keeping its caches in fen's store at `fen_root` (none
    /// when `None`).
    pub fn new(root: &AgentRoot, fen_root: Option<&Path>) -> Self {
        let cache_file = fen_root.map(|fen| {
            crate::store::layout::foreign_index_cache(fen, root.agent.name(), &root.root)
        });
        ForeignSource {
            conversations: Mutex::new((0, HashMap::new())),
            fen_root: fen_root.map(Path::to_path_buf),
            agent: root.agent,
            root: root.root.clone(),
            folders: agents::sessions_folders(root.agent, &root.root),
            cache_file,
            index: Mutex::new(Index::default()),
            ready: Condvar::new(),
            readers: Mutex::new((0, HashMap::new())),
            watch: None,
            markdown: crate::views::markdown::MarkdownCache::spilling_to(fen_root),
            units: agents::units_for(root.agent, &root.root),
            unit_hints: Mutex::new(HashMap::new()),
        }
    }

    /// The same, watching its folders with inotify (a long-lived daemon).
    pub fn watching(root: &AgentRoot, fen_root: Option<&Path>) -> Self {
        ForeignSource {
            watch: super::watch::StoreWatch::new(),
            ..Self::new(root, fen_root)
        }
    }

    /// Builds the first index: reuses the persisted one for unchanged files, reads
    /// the rest. Logs progress; wakes everyone waiting for it.
    pub fn build_index(&self) {
        self.build_index_with(&crate::background::Background::new());
    }

    /// `build_index`, stopping when `bg` asks (at unmount): after the files being
    /// read, with the index as far as it got (`persist` saves it, and the next
    /// mount reads only the rest). It does not pause for the mount's requests: they
    /// are what waits for it.
    pub fn build_index_with(&self, bg: &crate::background::Background) {
        let started = std::time::Instant::now();
        let persisted = self.load_persisted();
        let found = self.walk();
        let total = found.len();
        self.seed_units(&persisted);
        // Unchanged files come from the persisted index at once.
        let mut todo = Vec::new();
        {
            let mut idx = self.index.lock().unwrap();
            for path in found {
                match (persisted.get(&path), self.stamp_of(&path)) {
                    (Some(old), Some(stamp)) if old.stamp == stamp => {
                        self.insert(&mut idx, path, old.clone())
                    }
                    (_, stamp) => todo.push((stamp.map_or(0, |s| s.size), path)),
                }
            }
        }
        // The rest is read file by file; each gets a namespace hint first (the cwd
        // near its start, per project folder where folders are projects), so that a
        // listing waits only for the files of its own namespace, read first.
        let mut groups: BTreeMap<Option<String>, Vec<(u64, PathBuf)>> = BTreeMap::new();
        let mut folder_hints: HashMap<PathBuf, Option<String>> = HashMap::new();
        for (size, path) in todo {
            let hint_of = |path: &Path| self.hint_of(path).map(|c| naming::slug(&c));
            let hint = if agents::folders_are_projects(self.agent) {
                let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
                folder_hints
                    .entry(folder)
                    .or_insert_with(|| hint_of(&path))
                    .clone()
            } else {
                hint_of(&path)
            };
            // A file that names no cwd near its start most likely has none at all.
            let hint = hint.or_else(|| Some(UNKNOWN_CWD_NAMESPACE.to_string()));
            groups.entry(hint).or_default().push((size, path));
        }
        // Largest files first (`next_to_read` pops from the end): a big file read last
        // would leave the other cores idle while one parses it.
        for g in groups.values_mut() {
            g.sort_unstable();
        }
        let reread: usize = groups.values().map(Vec::len).sum();
        {
            let mut idx = self.index.lock().unwrap();
            idx.pending = groups
                .iter()
                .filter_map(|(h, files)| h.clone().map(|h| (h, files.len())))
                .collect();
            idx.planned = true;
        }
        self.ready.notify_all();
        // Reading is mostly parsing: a few files at once keep every core busy, and
        // one file's disk reads overlap another's parse.
        let groups = Mutex::new(groups);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, INDEX_WORKERS);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        if bg.should_stop() {
                            break;
                        }
                        let next = self.next_to_read(&mut groups.lock().unwrap());
                        let Some((hint, path)) = next else { break };
                        let entry = self.read_file(&path, Keep::Disk);
                        let mut idx = self.index.lock().unwrap();
                        if let Ok(e) = entry {
                            self.insert(&mut idx, path, e);
                        }
                        if let Some(h) = hint
                            && let Some(n) = idx.pending.get_mut(&h)
                        {
                            *n -= 1;
                            if *n == 0 {
                                idx.pending.remove(&h);
                                self.ready.notify_all();
                            }
                        }
                        drop(idx);
                        let done = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        if done.is_multiple_of(1000) {
                            log::info!(
                                "{}: read {done} of {reread} session files",
                                self.agent.name()
                            );
                        }
                    }
                });
            }
        });
        if bg.should_stop() {
            log::info!(
                "{}: stopped after {} of {reread} session files (the next mount reads the rest)",
                self.agent.name(),
                done.load(std::sync::atomic::Ordering::Relaxed)
            );
            return;
        }
        {
            let mut idx = self.index.lock().unwrap();
            self.refresh_renames(&mut idx);
            idx.ready = true;
            if self.watch.is_none() {
                idx.fresh = idx.by_ns.keys().cloned().collect();
            }
        }
        self.ready.notify_all();
        log::info!(
            "{}: {total} session files indexed in {:?} ({reread} read, the rest from the index cache)",
            self.agent.name(),
            started.elapsed()
        );
        if reread > 0 {
            self.persist_index();
        }
    }

    /// The next file to read: one of a namespace someone waits for, else any.
    fn next_to_read(
        &self,
        groups: &mut BTreeMap<Option<String>, Vec<(u64, PathBuf)>>,
    ) -> Option<(Option<String>, PathBuf)> {
        let wanted = std::mem::take(&mut self.index.lock().unwrap().wanted);
        let key = wanted
            .into_iter()
            .map(Some)
            .find(|k| groups.get(k).is_some_and(|g| !g.is_empty()))
            .or_else(|| {
                groups
                    .iter()
                    .filter_map(|(k, g)| Some((g.last()?.0, k)))
                    .max_by_key(|(size, _)| *size)
                    .map(|(_, k)| k.clone())
            })?;
        let group = groups.get_mut(&key)?;
        let (_, path) = group.pop()?;
        if group.is_empty() {
            groups.remove(&key);
        }
        Some((key, path))
    }

    /// The index once it can answer for `ns` (`None`: for everything): at once after
    /// the first index is built; before, when the files hinted to be in `ns` are read
    /// (asking the indexer to read those first), and those whose start named no cwd:
    /// they may be in any namespace (OpenCode's JSON sessions name theirs only in a
    /// file the listing does not read), and a first look must not miss them.
    fn wait_for(&self, ns: Option<&str>) -> std::sync::MutexGuard<'_, Index> {
        let mut idx = self.index.lock().unwrap();
        loop {
            if idx.ready {
                return idx;
            }
            if let Some(ns) = ns
                && idx.planned
            {
                let unsure = idx.pending.contains_key(UNKNOWN_CWD_NAMESPACE);
                if !idx.pending.contains_key(ns) && !unsure {
                    return idx;
                }
                idx.wanted.insert(ns.to_string());
                if unsure {
                    idx.wanted.insert(UNKNOWN_CWD_NAMESPACE.to_string());
                }
            }
            idx = self.ready.wait(idx).unwrap();
        }
    }

    fn load_persisted(&self) -> HashMap<PathBuf, FileEntry> {
        let Some(bytes) = self
            .cache_file
            .as_ref()
            .and_then(|c| crate::store::atomic::read_file(c, MAX_CACHE_BYTES))
        else {
            return HashMap::new();
        };
        match serde_json::from_slice::<Persisted>(&bytes) {
            Ok(p) if p.version == INDEX_VERSION && p.agent == self.agent && p.root == self.root => {
                p.files.into_iter().collect()
            }
            _ => HashMap::new(),
        }
    }

    /// Saves the index (best effort: a lost cache costs the next mount a re-read).
    pub fn persist_index(&self) {
        let Some(path) = &self.cache_file else { return };
        let files: Vec<(PathBuf, FileEntry)> = {
            let idx = self.index.lock().unwrap();
            idx.files
                .iter()
                .map(|(p, e)| (p.clone(), e.clone()))
                .collect()
        };
        let p = Persisted {
            version: INDEX_VERSION,
            agent: self.agent,
            root: self.root.clone(),
            files,
        };
        if let Ok(bytes) = serde_json::to_vec(&p) {
            crate::store::atomic::replace_file(path, &bytes);
        }
    }

    /// How many session files the store holds now (found as the index finds them,
    /// without reading them).
    pub fn session_files(&self) -> usize {
        self.walk().len()
    }

    /// Every session file under the sessions folder, re-reading only folders whose
    /// stamp changed since the last walk. Links are never followed.
    fn walk(&self) -> Vec<PathBuf> {
        let mut scans = std::mem::take(&mut self.index.lock().unwrap().folders);
        let mut out = Vec::new();
        let mut next = HashMap::new();
        for top in &self.folders {
            let mut walk = Walk {
                agent: self.agent,
                top,
                old: &mut scans,
                new: &mut next,
                out: &mut out,
            };
            walk.folder(&top.path, 0);
        }
        self.index.lock().unwrap().folders = next;
        // By bytes: `Path`'s order compares component by component, which was a tenth
        // of a cold `fen-fs list` of 10,000 files.
        out.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        self.with_units(out)
    }

    fn insert(&self, idx: &mut Index, path: PathBuf, e: FileEntry) {
        self.remove(idx, &path);
        let id = (agents::one_session_per_id(self.agent) && !e.summary.id.is_empty())
            .then(|| e.summary.id.clone());
        idx.files.insert(path.clone(), e);
        idx.generation += 1;
        match id {
            Some(id) => {
                idx.by_id.entry(id.clone()).or_default().push(path);
                self.elect(idx, &id);
            }
            None => self.place(idx, path),
        }
    }

    /// Shows the indexed file `path` as a session folder of its namespace.
    fn place(&self, idx: &mut Index, path: PathBuf) {
        let Some(e) = idx.files.get(&path) else {
            return;
        };
        let ns = e.namespace();
        let mut dir = session_dir_name(self.agent, &path, e);
        if idx
            .by_ns
            .get(&ns)
            .and_then(|m| m.get(&dir))
            .is_some_and(|other| *other != path)
        {
            // Two files claim one id (a copied file): the path tells them apart.
            dir = format!("{dir}-{:08x}", path_hash(&path) as u32);
        }
        idx.by_ns
            .entry(ns.clone())
            .or_default()
            .insert(dir.clone(), path.clone());
        idx.dir_of.insert(path, (ns, dir));
        if let Some(cwd) = &e.summary.cwd {
            // A candidate for placing Cursor stores, which name their cwd by MD5 only.
            super::cursor_store::note_cwd(cwd);
        }
        idx.generation += 1;
    }

    /// Of the files carrying session `id`, places the preferred one and hides the rest.
    fn elect(&self, idx: &mut Index, id: &str) {
        let Some(group) = idx.by_id.get(id).cloned() else {
            return;
        };
        let winner = group
            .iter()
            .filter_map(|p| idx.files.get(p).map(|e| (p, &e.summary)))
            .max_by(|a, b| agents::prefer(self.agent, (a.0, a.1), (b.0, b.1)))
            .map(|(p, _)| p.clone());
        for p in &group {
            if Some(p) != winner.as_ref() {
                unplace(idx, p);
            }
        }
        if let Some(w) = winner
            && !idx.dir_of.contains_key(&w)
        {
            self.place(idx, w);
        }
    }

    /// Drops `path` from the index; a file it hid (same session id) shows again.
    fn remove(&self, idx: &mut Index, path: &Path) {
        let id = idx.files.get(path).map(|e| e.summary.id.clone());
        if idx.files.remove(path).is_some() {
            idx.generation += 1;
        }
        unplace(idx, path);
        if let Some(id) = id
            && let Some(group) = idx.by_id.get_mut(&id)
        {
            group.retain(|p| p != path);
            if group.is_empty() {
                idx.by_id.remove(&id);
            } else {
                self.elect(idx, &id);
            }
        }
    }

    /// Brings `idx` up to date with the folders: new files are read, vanished ones
    /// dropped; with `ns`, every file of that namespace is also re-`stat`ed (and
    /// re-read if it changed).
    fn sync(&self, ns: Option<&str>) {
        if !self.wait_for(ns).ready {
            // The first index is still being built and has what `ns` needs; the walk
            // is the indexer's until it is done.
            return;
        }
        let mut walk = true;
        if let Some(watch) = &self.watch {
            let mut idx = self.wait_for(ns);
            // Folders with events since their last read: their files' namespaces must
            // be re-stat'ed, and the walk must look at them again.
            watch.drain();
            let folders: Vec<PathBuf> = idx.folders.keys().cloned().collect();
            // A sessions folder missing at the last walk is not watched: one `lstat`
            // tells whether it appeared since.
            // (A source of units alone has no folders to watch: its units tell.)
            let mut changed = (folders.is_empty() && !self.folders.is_empty())
                || self.folders.iter().any(|f| {
                    !idx.folders.contains_key(&f.path) && std::fs::symlink_metadata(&f.path).is_ok()
                });
            for f in &folders {
                let key = f.to_string_lossy();
                if watch.changed_as_drained(&key, f) {
                    watch.mark_clean(&key);
                    changed = true;
                    let files = idx
                        .folders
                        .get(f)
                        .map(|s| s.files.clone())
                        .unwrap_or_default();
                    let namespaces: Vec<String> =
                        files.iter().filter_map(|p| idx.namespace_of(p)).collect();
                    idx.dirty.extend(namespaces);
                }
            }
            let renames_changed = self.agent == Agent::Codex
                && file_stamp(&agents::codex_session_index(&self.root)) != idx.renames_stamp;
            // Units see their own changes (a stat of the database files per access).
            let units_changed = self.units.as_ref().is_some_and(|u| u.source().changed());
            if !changed && !renames_changed && !units_changed {
                if ns.is_none_or(|n| !idx.dirty.contains(n)) {
                    return;
                }
                // No folder changed: no file came or went, only `ns`'s need a stat.
                walk = false;
            }
        }
        let mut stale = Vec::new();
        let mut idx = if walk {
            let found = self.walk();
            let mut idx = self.wait_for(ns);
            let present: std::collections::HashSet<&std::ffi::OsStr> =
                found.iter().map(|p| p.as_os_str()).collect();
            let gone: Vec<PathBuf> = idx
                .files
                .keys()
                .filter(|p| !present.contains(p.as_os_str()))
                .cloned()
                .collect();
            for p in gone {
                self.remove(&mut idx, &p);
            }
            stale.extend(found.into_iter().filter(|p| !idx.files.contains_key(p)));
            idx
        } else {
            self.index.lock().unwrap()
        };
        if let Some(ns) = ns
            && (idx.dirty.remove(ns) || (self.watch.is_none() && !idx.fresh.remove(ns)))
            && let Some(dirs) = idx.by_ns.get(ns)
        {
            for path in dirs.values() {
                // With the files it hides: one of them may now be preferred.
                let twins = idx
                    .files
                    .get(path)
                    .and_then(|e| idx.by_id.get(&e.summary.id))
                    .into_iter()
                    .flatten()
                    .filter(|p| *p != path);
                for p in std::iter::once(path).chain(twins) {
                    if self.stamp_of(p) != idx.files.get(p).map(|e| e.stamp) {
                        stale.push(p.clone());
                    }
                }
            }
        }
        self.refresh_renames(&mut idx);
        let units = self.changed_units(&idx);
        drop(idx);
        stale.extend(self.stale_units(units));
        stale.sort();
        stale.dedup();
        for path in stale {
            self.refresh_file(&path);
        }
    }

    /// Re-reads one file into the index (or drops it if it is gone).
    fn refresh_file(&self, path: &Path) {
        let read = self.read_file(path, Keep::Memory);
        let mut idx = self.index.lock().unwrap();
        match read {
            Ok(e) => self.insert(&mut idx, path.to_path_buf(), e),
            Err(_) => self.remove(&mut idx, path),
        }
    }

    fn refresh_renames(&self, idx: &mut Index) {
        if self.agent != Agent::Codex {
            return;
        }
        let path = agents::codex_session_index(&self.root);
        let stamp = file_stamp(&path);
        if stamp == idx.renames_stamp {
            return;
        }
        idx.renames_stamp = stamp;
        idx.renames = match read_whole(&path) {
            Ok(bytes) => super::codex::CodexReader::read_session_index(&bytes),
            Err(_) => HashMap::new(),
        };
        idx.generation += 1;
    }

    fn new_reader(&self, path: &Path) -> Box<dyn ForeignReader> {
        agents::reader_for_path(self.agent, path)
    }

    /// Feeds `path` through its reader, from where it last stopped if the file only
    /// grew since (the reader in memory, else its state saved on disk); returns the
    /// open file, its stamp, and the result of `f` on the reader and the unterminated
    /// tail.
    fn with_reader<T>(
        &self,
        path: &Path,
        f: impl FnOnce(&dyn ForeignReader, &[u8]) -> T,
    ) -> Result<(File, FileStamp, T)> {
        self.with_reader_kept(path, Keep::Memory, f)
    }

    fn with_reader_kept<T>(
        &self,
        path: &Path,
        keep: Keep,
        f: impl FnOnce(&dyn ForeignReader, &[u8]) -> T,
    ) -> Result<(File, FileStamp, T)> {
        let (mut file, stamp) = self.open_bytes(path)?;
        let cached = self.readers.lock().unwrap().1.remove(path);
        let mut following = match cached {
            Some(c) if c.follows(stamp) => c,
            _ => self
                .load_state(path, &file, stamp)
                .unwrap_or_else(|| Following::new(self.new_reader(path))),
        };
        if following.stamp != stamp {
            let before = following.consumed;
            feed(&mut file, &mut following, stamp.size)?;
            following.stamp = stamp;
            if following.consumed != before {
                following.unsaved = true;
                following.proof = None;
            }
            if following.proof.is_none() && stamp.size >= STATE_MIN && following.consumed > 0 {
                following.proof = content_check(&file, following.consumed).ok();
            }
        }
        let out = f(following.reader.as_ref(), &following.tail);
        match keep {
            // The first index saves only large files' states: creating a cache
            // file per session was a tenth of its CPU. A smaller file is read whole
            // once if it grows, then its reader is kept like any other.
            Keep::Disk if stamp.size >= PERSIST_MIN => self.save_state(path, &mut following),
            Keep::Disk => {}
            Keep::Memory => {
                let evicted = {
                    let mut readers = self.readers.lock().unwrap();
                    readers.0 += 1;
                    following.used = readers.0;
                    readers.1.insert(path.to_path_buf(), following);
                    let oldest = (readers.1.len() > READERS_IN_MEMORY)
                        .then(|| {
                            readers
                                .1
                                .iter()
                                .min_by_key(|(_, f)| f.used)
                                .map(|(p, _)| p.clone())
                        })
                        .flatten();
                    oldest.and_then(|p| readers.1.remove_entry(&p))
                };
                // Its state goes to disk, so the next append is still read alone.
                if let Some((p, mut f)) = evicted {
                    self.save_state(&p, &mut f);
                }
            }
        }
        Ok((file, stamp, out))
    }

    fn state_cache_path(&self, path: &Path) -> Option<crate::store::layout::CacheFile> {
        let root = self.fen_root.as_ref()?;
        Some(crate::store::layout::foreign_reader_cache(
            root,
            self.agent.name(),
            path,
        ))
    }

    /// The saved state of `path`'s reader, if it proves it belongs to the file's
    /// bytes: same file (device, inode), the consumed part still there with the same
    /// head and tail, intact checksum, and the reader takes it back.
    fn load_state(&self, path: &Path, file: &File, stamp: FileStamp) -> Option<Following> {
        if stamp.size < STATE_MIN {
            return None;
        }
        let cache = self.state_cache_path(path)?;
        let bytes = crate::store::atomic::read_file(&cache, MAX_CACHE_BYTES)?;
        let nl = bytes.iter().position(|&b| b == b'\n')?;
        let head: StateHead = serde_json::from_slice(&bytes[..nl]).ok()?;
        let body = &bytes[nl + 1..];
        let valid = head.version == STATE_VERSION
            && head.path == path
            && head.dev == stamp.dev
            && head.ino == stamp.ino
            && head.consumed <= stamp.size
            && head.checksum == crate::store::atomic::checksum(&[body])
            && head.edges == content_check(file, head.consumed).ok()?;
        if !valid {
            return None;
        }
        let mut reader = self.new_reader(path);
        if head.consumed != stamp.size && !reader.follows_appends() || !reader.restore_state(body) {
            return None;
        }
        Some(Following {
            consumed: head.consumed,
            proof: Some(head.edges),
            unsaved: false,
            ..Following::new(reader)
        })
    }

    /// Saves the state of a large file's reader that was fed since it was last saved
    /// (best effort: without it, the file is read again from its start).
    fn save_state(&self, path: &Path, following: &mut Following) {
        if !following.unsaved || following.stamp.size < STATE_MIN {
            return;
        }
        let (Some(edges), Some(cache)) = (following.proof, self.state_cache_path(path)) else {
            return;
        };
        let Some(body) = following.reader.save_state() else {
            return;
        };
        let head = StateHead {
            version: STATE_VERSION,
            path: path.to_path_buf(),
            dev: following.stamp.dev,
            ino: following.stamp.ino,
            consumed: following.consumed,
            edges,
            checksum: crate::store::atomic::checksum(&[&body]),
        };
        let Ok(mut bytes) = serde_json::to_vec(&head) else {
            return;
        };
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        crate::store::atomic::replace_file(&cache, &bytes);
        following.unsaved = false;
    }

    /// Reads `path` into an index entry. Its conversation is computed in the same
    /// pass (its token count goes into the entry); a large file's layout is kept for
    /// the next `conversation.json` (on disk at once when `keep` is `Disk`).
    fn read_file(&self, path: &Path, keep: Keep) -> Result<FileEntry> {
        let (file, stamp, (summary, messages)) =
            self.with_reader_kept(path, keep, |r, tail| r.summary_and_conversation(tail))?;
        let mut summary = summary;
        // A unit's dump already says all its store knows (its key is no file's place).
        if !self.is_unit(path) {
            agents::complete_summary(self.agent, &self.root, path, &mut summary);
        }
        if !summary.resumable
            && let Some(why) = &summary.not_resumable_reason
        {
            log::warn!(
                "{} session {}: not resumable: {why}",
                self.agent.name(),
                path.display()
            );
        }
        let context_tokens = messages
            .iter()
            .map(|m| tokens_of(m.iter().map(piece_len).sum()))
            .sum();
        let large = stamp.size >= PERSIST_MIN;
        if keep == Keep::Memory || large {
            let proof = large
                .then(|| {
                    file.metadata()
                        .ok()
                        .filter(|m| FileStamp::of(m) == stamp)
                        .and_then(|_| content_check(&file, stamp.size).ok())
                })
                .flatten();
            let c = Conversation {
                stamp,
                proof,
                layout: Arc::new(PieceLayout::conversation(messages)),
                context_tokens,
                used: 0,
                saved: false,
            };
            match keep {
                Keep::Memory => self.remember_conversation(path, c),
                Keep::Disk => self.save_conversation(path, &c),
            }
        }
        Ok(FileEntry {
            stamp,
            summary,
            context_tokens: Some(context_tokens),
        })
    }

    /// The file and index entry of session `ns/dir`, re-read if it changed on disk.
    fn session(&self, ns: &str, dir: &str) -> Result<(PathBuf, FileEntry)> {
        let missing = || Error::not_found(format!("no session {ns}/{dir}"));
        let path = {
            let idx = self.wait_for(Some(ns));
            idx.by_ns
                .get(ns)
                .and_then(|m| m.get(dir))
                .cloned()
                .ok_or_else(missing)?
        };
        let known = self.index.lock().unwrap().files.get(&path).map(|e| e.stamp);
        if self.stamp_of(&path) != known {
            self.refresh_file(&path);
        }
        let idx = self.index.lock().unwrap();
        match (idx.dir_of.get(&path), idx.files.get(&path)) {
            (Some((n, d)), Some(e)) if n == ns && d == dir => Ok((path.clone(), e.clone())),
            _ => Err(missing()),
        }
    }

    fn listing(&self, idx: &Index, path: &Path, e: &FileEntry) -> Option<Listing> {
        let (_, dir) = idx.dir_of.get(path)?;
        let s = &e.summary;
        let title = idx.renames.get(&s.id).cloned().or_else(|| s.title.clone());
        Some(Listing {
            dir: dir.clone(),
            id: s.id.clone(),
            cwd: s.cwd.clone(),
            title,
            preview: s.preview.clone(),
            created_at: Some(e.created_at()),
            updated_at: Some(s.updated_at.clone().unwrap_or_else(|| rfc3339(e.mtime()))),
            messages: s.messages as usize,
            agent: self.agent,
        })
    }

    /// The listings and `index.json` of `ns`, rendered again only after the index
    /// changed.
    fn rendered(&self, ns: &str) -> (Arc<Vec<Listing>>, NamespaceIndex) {
        self.sync(Some(ns));
        let mut idx = self.index.lock().unwrap();
        if let Some((generation, listings, index)) = idx.rendered.get(ns)
            && *generation == idx.generation
        {
            return (listings.clone(), index.clone());
        }
        let mut out: Vec<Listing> = idx
            .by_ns
            .get(ns)
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(|p| self.listing(&idx, p, idx.files.get(p)?))
            .collect();
        sort_newest_first(&mut out);
        let index = NamespaceIndex {
            latest: out.first().map(|l| l.dir.clone()),
            index_json: Arc::new(render_json(&out)),
        };
        let listings = Arc::new(out);
        let generation = idx.generation;
        idx.rendered.insert(
            ns.to_string(),
            (generation, listings.clone(), index.clone()),
        );
        (listings, index)
    }

    /// The conversation layout of `path` as it is now, with the descriptor its ranges
    /// are read through and the context's token estimate: from the cache when the file
    /// is unchanged, else from the persisted layout of a large file, else computed.
    fn conversation(&self, path: &Path) -> Result<(File, Arc<PieceLayout>, u64)> {
        let (file, stamp) = self.open_bytes(path)?;
        {
            let mut convs = self.conversations.lock().unwrap();
            convs.0 += 1;
            let tick = convs.0;
            if let Some(c) = convs.1.get_mut(path)
                && c.stamp == stamp
            {
                c.used = tick;
                return Ok((file, c.layout.clone(), c.context_tokens));
            }
        }
        let (file, stamp, layout, tokens, saved, proof) =
            match self.load_conversation(path, &file, stamp) {
                Some((layout, tokens)) => (file, stamp, Arc::new(layout), tokens, true, None),
                None => {
                    let (file, stamp, messages) =
                        self.with_reader(path, |r, tail| r.conversation(tail))?;
                    let tokens = messages
                        .iter()
                        .map(|m| tokens_of(m.iter().map(piece_len).sum()))
                        .sum();
                    let proof = file.metadata().ok().and_then(|m| {
                        (FileStamp::of(&m) == stamp)
                            .then(|| content_check(&file, stamp.size).ok())
                            .flatten()
                    });
                    let layout = Arc::new(PieceLayout::conversation(messages));
                    (file, stamp, layout, tokens, false, proof)
                }
            };
        self.remember_conversation(
            path,
            Conversation {
                stamp,
                proof,
                layout: layout.clone(),
                context_tokens: tokens,
                used: 0,
                saved,
            },
        );
        Ok((file, layout, tokens))
    }

    /// Keeps `c` in memory; the layout that leaves for it is saved if it is worth
    /// keeping for the next mount.
    fn remember_conversation(&self, path: &Path, mut c: Conversation) {
        let mut convs = self.conversations.lock().unwrap();
        convs.0 += 1;
        c.used = convs.0;
        convs.1.insert(path.to_path_buf(), c);
        let oldest = (convs.1.len() > LAYOUTS_IN_MEMORY)
            .then(|| {
                convs
                    .1
                    .iter()
                    .min_by_key(|(_, c)| c.used)
                    .map(|(p, _)| p.clone())
            })
            .flatten();
        if let Some(c) = oldest.and_then(|p| convs.1.remove_entry(&p)) {
            drop(convs);
            self.save_conversation(&c.0, &c.1);
        }
    }

    fn conversation_cache_path(&self, path: &Path) -> Option<crate::store::layout::CacheFile> {
        let root = self.fen_root.as_ref()?;
        Some(crate::store::layout::foreign_conversation_cache(
            root,
            self.agent.name(),
            path,
        ))
    }

    /// A persisted layout, used only if it proves it belongs to this state of the
    /// file: same stamp, same bytes at the file's head and tail, intact checksum.
    fn load_conversation(
        &self,
        path: &Path,
        file: &File,
        stamp: FileStamp,
    ) -> Option<(PieceLayout, u64)> {
        if stamp.size < PERSIST_MIN {
            return None;
        }
        let cache = self.conversation_cache_path(path)?;
        let bytes = crate::store::atomic::read_file(&cache, MAX_CACHE_BYTES)?;
        let nl = bytes.iter().position(|&b| b == b'\n')?;
        let head: ConversationHead = serde_json::from_slice(&bytes[..nl]).ok()?;
        let body = &bytes[nl + 1..];
        let valid = head.version == INDEX_VERSION
            && head.path == path
            && head.stamp == stamp
            && head.checksum == crate::store::atomic::checksum(&[body])
            && head.edges == content_check(file, stamp.size).ok()?;
        if !valid {
            return None;
        }
        let layout = PieceLayout::from_bytes(body)?;
        // Every range must lie inside the file: a damaged cache is never served.
        layout
            .fits(stamp.size)
            .then_some((layout, head.context_tokens))
    }

    fn save_conversation(&self, path: &Path, c: &Conversation) {
        let (Some(edges), false) = (c.proof, c.saved) else {
            return;
        };
        if c.stamp.size < PERSIST_MIN {
            return;
        }
        let Some(cache) = self.conversation_cache_path(path) else {
            return;
        };
        let body = c.layout.to_bytes();
        let head = ConversationHead {
            version: INDEX_VERSION,
            path: path.to_path_buf(),
            stamp: c.stamp,
            edges,
            checksum: crate::store::atomic::checksum(&[&body]),
            context_tokens: c.context_tokens,
        };
        let Ok(mut bytes) = serde_json::to_vec(&head) else {
            return;
        };
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        crate::store::atomic::replace_file(&cache, &bytes);
    }

    fn meta(&self, ns: &str, dir: &str, path: &Path, e: &FileEntry) -> Result<Vec<u8>> {
        let context_tokens = match e.context_tokens {
            Some(t) => t,
            None => self.conversation(path)?.2,
        };
        let listing = {
            let idx = self.index.lock().unwrap();
            self.listing(&idx, path, e)
        };
        let s = &e.summary;
        let meta = ForeignMeta {
            id: &s.id,
            dir,
            namespace: naming::mount_name(ns),
            cwd: s.cwd.as_deref(),
            title: listing.as_ref().and_then(|l| l.title.as_deref()),
            preview: s.preview.as_deref(),
            created_at: listing.as_ref().and_then(|l| l.created_at.as_deref()),
            updated_at: listing.as_ref().and_then(|l| l.updated_at.as_deref()),
            entries: s.entries,
            messages: s.messages,
            roles: &s.roles,
            compactions: s.compactions,
            malformed_lines: s.malformed_lines,
            transcript_tokens: tokens_of(e.stamp.size),
            context_tokens,
            size_bytes: e.stamp.size,
            writers: 0,
            agent: self.agent,
            source_path: &self.source_path_of(path),
            resumable: s.resumable,
            not_resumable_reason: s.not_resumable_reason.as_deref(),
            resume_rules: s.resume_rules.as_deref(),
            listed_by_agent: s.listed,
            archived: s.archived,
            parent_id: s.parent_id.as_deref(),
        };
        let mut out = serde_json::to_vec_pretty(&meta).expect("meta serializes");
        out.push(b'\n');
        Ok(out)
    }

    /// The session (namespace, folder) whose file is `path`, compared by device and
    /// inode so that any path to the file names it (`fen-fs resume PATH`).
    pub fn session_of_file(&self, path: &Path) -> Option<(String, String)> {
        let meta = std::fs::metadata(path).ok()?;
        self.sync(None);
        let idx = self.wait_for(None);
        idx.files
            .iter()
            .find(|(_, e)| e.stamp.dev == meta.dev() && e.stamp.ino == meta.ino())
            .and_then(|(p, _)| idx.dir_of.get(p).cloned())
    }

    fn summary_text(&self, path: &Path, e: &FileEntry) -> Vec<u8> {
        let s = &e.summary;
        let listing = {
            let idx = self.index.lock().unwrap();
            self.listing(&idx, path, e)
        };
        let mut out = String::new();
        let heading = listing
            .as_ref()
            .and_then(|l| l.title.clone().or_else(|| l.preview.clone()))
            .unwrap_or_else(|| "(no messages)".into());
        out.push_str(&crate::store::index::one_line(&heading, 78));
        out.push_str("\n\n");
        let mut field = |label: &str, value: &str| {
            out.push_str(&format!("{label:<10} {value}\n"));
        };
        field("agent", self.agent.name());
        field("id", &s.id);
        field("cwd", s.cwd.as_deref().unwrap_or("(unknown)"));
        field("file", &self.source_path_of(path).to_string_lossy());
        if let Some(l) = &listing {
            field(
                "created",
                &l.created_at.as_deref().map(local_time).unwrap_or_default(),
            );
            field(
                "updated",
                &l.updated_at.as_deref().map(local_time).unwrap_or_default(),
            );
        }
        let roles: Vec<String> = s.roles.iter().map(|(r, n)| format!("{n} {r}")).collect();
        let roles = if roles.is_empty() {
            String::new()
        } else {
            format!(" ({})", roles.join(", "))
        };
        field("messages", &format!("{}{roles}", s.messages));
        field(
            "entries",
            &format!("{} ({} malformed lines)", s.entries, s.malformed_lines),
        );
        match (&s.resumable, &s.not_resumable_reason) {
            (true, _) if s.resume_rules.is_some() => field(
                "resumable",
                &format!("yes ({})", s.resume_rules.as_deref().unwrap_or_default()),
            ),
            (true, _) => field("resumable", "yes"),
            (false, Some(why)) => field("resumable", &format!("no: {why}")),
            (false, None) => field("resumable", "no"),
        }
        if let Some(rules) = &s.resume_rules {
            field("rebuilt", rules);
        }
        if let Some(parent) = &s.parent_id {
            field("parent", parent);
        }
        if s.archived {
            field("archived", "yes");
        }
        if let Some(p) = &s.preview {
            out.push_str(&format!(
                "\nfirst request:\n  {}\n",
                crate::store::index::one_line(p, 76)
            ));
        }
        out.into_bytes()
    }
}

#[derive(Serialize)]
struct ForeignMeta<'a> {
    id: &'a str,
    dir: &'a str,
    /// The namespace folder as the mount shows it.
    namespace: String,
    cwd: Option<&'a str>,
    title: Option<&'a str>,
    preview: Option<&'a str>,
    created_at: Option<&'a str>,
    updated_at: Option<&'a str>,
    entries: u64,
    messages: u64,
    roles: &'a BTreeMap<String, u64>,
    compactions: u64,
    malformed_lines: u64,
    transcript_tokens: u64,
    context_tokens: u64,
    size_bytes: u64,
    writers: u64,
    agent: Agent,
    source_path: &'a Path,
    resumable: bool,
    not_resumable_reason: Option<&'a str>,
    /// How far `conversation.json` is a guess at the agent's rebuild (`"best effort"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    resume_rules: Option<&'a str>,
    /// Whether the agent's own session picker lists it.
    listed_by_agent: bool,
    /// Whether the agent keeps it archived.
    archived: bool,
    /// The session it was spawned from (a subagent's), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_id: Option<&'a str>,
}

/// Files at least this large keep their conversation layout across mounts: reading
/// the layout back is much cheaper than parsing the file again.
const PERSIST_MIN: u64 = 1 << 20;
/// Larger cache files are not read (a damaged or planted one cannot cost memory).
const MAX_CACHE_BYTES: u64 = 1 << 30;

#[derive(Serialize, Deserialize)]
struct ConversationHead {
    version: u32,
    path: PathBuf,
    /// With the ctime: a file re-created or rewritten and `touch`ed differs here.
    stamp: FileStamp,
    /// `content_check` of the whole file: a rewrite that kept the size and the
    /// times still changes it.
    edges: u64,
    checksum: u64,
    context_tokens: u64,
}

const STATE_VERSION: u32 = 1;

/// The first line of a saved reader state; the reader's own bytes follow.
#[derive(Serialize, Deserialize)]
struct StateHead {
    version: u32,
    path: PathBuf,
    dev: u64,
    ino: u64,
    /// Where the reader stopped: the next feed starts here.
    consumed: u64,
    /// `content_check` of the file's first `consumed` bytes.
    edges: u64,
    checksum: u64,
}

fn piece_len(p: &Piece) -> u64 {
    match p {
        Piece::Text(t) => t.len() as u64,
        Piece::Range { len, .. } => *len,
    }
}

/// Takes `path`'s session folder out of its namespace (the file stays indexed).
fn unplace(idx: &mut Index, path: &Path) {
    if let Some((ns, dir)) = idx.dir_of.remove(path)
        && let Some(m) = idx.by_ns.get_mut(&ns)
    {
        m.remove(&dir);
        if m.is_empty() {
            idx.by_ns.remove(&ns);
        }
        idx.generation += 1;
    }
}

/// Stable across builds: it is part of a folder name in the mount.
fn path_hash(path: &Path) -> u64 {
    crate::store::atomic::checksum(&[path.as_os_str().as_encoded_bytes()])
}

fn file_stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

fn read_whole(path: &Path) -> Result<Vec<u8>> {
    let (mut file, _) = crate::store::open::open_regular(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io(path.display(), &e))?;
    Ok(bytes)
}

/// Feeds `following.reader` the file's bytes from where it stopped up to `size`.
fn feed(file: &mut File, following: &mut Following, size: u64) -> Result<()> {
    let mut pos = following.consumed + following.tail.len() as u64;
    let mut buf = std::mem::take(&mut following.tail);
    while pos < size {
        let want = ((size - pos) as usize).min(CHUNK);
        let n = read_appending(file, &mut buf, want, pos)
            .map_err(|e| Error::io("read session file", &e))?;
        if n == 0 {
            break;
        }
        pos += n as u64;
        let used = following.reader.feed(following.consumed, &buf) as usize;
        following.consumed += used as u64;
        buf.drain(..used.min(buf.len()));
    }
    // The rest is usually empty or one line: the chunk-sized buffer is not kept.
    following.tail = buf.as_slice().to_vec();
    Ok(())
}

/// Appends up to `want` bytes of `file` at offset `at` to `buf` without zeroing the
/// room first (a first index reads gigabytes; zeroing was 3% of it).
fn read_appending(file: &File, buf: &mut Vec<u8>, want: usize, at: u64) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    buf.reserve(want);
    let spare = buf.spare_capacity_mut();
    loop {
        // SAFETY: `spare` has room for `want` bytes; the kernel writes at most that.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                want,
                at as libc::off_t,
            )
        };
        if n >= 0 {
            // SAFETY: the kernel initialized the first `n` bytes of the spare room.
            unsafe { buf.set_len(buf.len() + n as usize) };
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// One walk of a sessions folder: folders whose stamp is unchanged since the last
/// walk are not read again.
struct Walk<'a> {
    agent: Agent,
    top: &'a agents::SessionsFolder,
    old: &'a mut HashMap<PathBuf, FolderScan>,
    new: &'a mut HashMap<PathBuf, FolderScan>,
    out: &'a mut Vec<PathBuf>,
}

impl Walk<'_> {
    /// Collects the session files under `folder`, which sits `level` levels below
    /// the sessions folder (0: the sessions folder itself).
    fn folder(&mut self, folder: &Path, level: usize) {
        let Ok(meta) = std::fs::symlink_metadata(folder) else {
            return;
        };
        if !meta.is_dir() {
            return;
        }
        let stamp = (
            meta.ino(),
            meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        );
        let scan = match self.old.remove(folder) {
            Some(s) if s.stamp == stamp && s.settled => s,
            _ => {
                let settled = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.checked_add(Duration::from_secs(1)))
                    .is_some_and(|m| m < SystemTime::now());
                let mut scan = FolderScan {
                    stamp,
                    settled,
                    folders: Vec::new(),
                    files: Vec::new(),
                };
                let parent = folder.file_name().unwrap_or_default().to_string_lossy();
                if let Ok(rd) = std::fs::read_dir(folder) {
                    for entry in rd.flatten() {
                        let Ok(ft) = entry.file_type() else { continue };
                        let name = entry.file_name();
                        let name = name.to_string_lossy();
                        if ft.is_dir()
                            && level + 1 < self.top.depth
                            && agents::enters_folder(self.agent, level + 1, &name)
                        {
                            scan.folders.push(entry.path());
                        } else if ft.is_file()
                            && agents::is_session_entry(
                                self.agent,
                                self.top,
                                level + 1,
                                &parent,
                                &name,
                            )
                        {
                            scan.files.push(entry.path());
                        }
                    }
                }
                scan
            }
        };
        self.out.extend(scan.files.iter().cloned());
        for sub in &scan.folders {
            self.folder(sub, level + 1);
        }
        self.new.insert(folder.to_path_buf(), scan);
    }
}

impl SessionSource for ForeignSource {
    fn agent(&self) -> Agent {
        self.agent
    }

    fn writable(&self) -> bool {
        false
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn root_mtime(&self) -> Option<SystemTime> {
        None
    }

    fn namespaces(&self) -> Result<Vec<String>> {
        // The whole list needs the whole first index: a file's namespace is known
        // only once it is read (hints can be wrong), and a root listing that showed
        // a namespace its files later leave would be worse than a wait.
        self.sync(None);
        Ok(self.index.lock().unwrap().by_ns.keys().cloned().collect())
    }

    fn has_namespace(&self, ns: &str) -> bool {
        if self.wait_for(Some(ns)).by_ns.contains_key(ns) {
            return true;
        }
        // Units are re-listed cheaply (a stat of the databases): a session that
        // appeared in a new namespace is found by its path, not only after an `ls`.
        self.units.is_some() && {
            self.sync(Some(ns));
            self.index.lock().unwrap().by_ns.contains_key(ns)
        }
    }

    fn namespace_mtime(&self, ns: &str) -> Option<SystemTime> {
        let idx = self.wait_for(Some(ns));
        let dirs = idx.by_ns.get(ns)?;
        dirs.values()
            .filter_map(|p| idx.files.get(p))
            .map(|e| e.mtime())
            .max()
    }

    fn session_dirs(&self, ns: &str) -> Result<Vec<String>> {
        self.sync(Some(ns));
        let idx = self.index.lock().unwrap();
        Ok(idx
            .by_ns
            .get(ns)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default())
    }

    fn session_stat(&self, ns: &str, dir: &str) -> Result<SessionStat> {
        let (path, e) = self.session(ns, dir)?;
        Ok(SessionStat {
            size: self.transcript_size(&path, &e),
            mtime: e.mtime(),
        })
    }

    fn listings(&self, ns: &str) -> Result<Vec<Listing>> {
        Ok(self.rendered(ns).0.as_ref().clone())
    }

    fn index(&self, ns: &str) -> Result<NamespaceIndex> {
        Ok(self.rendered(ns).1)
    }

    fn view_size(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<u64> {
        if kind == ViewKind::Markdown {
            return Ok(self.markdown(ns, dir)?.len());
        }
        if kind == ViewKind::Conversation {
            let (path, _) = self.session(ns, dir)?;
            return Ok(self.conversation(&path)?.1.size());
        }
        Ok(self.snapshot(ns, dir, kind, writers)?.size())
    }

    fn snapshot(&self, ns: &str, dir: &str, kind: ViewKind, _writers: u64) -> Result<Snapshot> {
        let (path, e) = self.session(ns, dir)?;
        Ok(match kind {
            ViewKind::Transcript => Snapshot::Transcript(self.open_transcript(&path)?),
            ViewKind::Conversation => {
                let (file, layout, _) = self.conversation(&path)?;
                Snapshot::Pieces(PieceSnapshot::new(file, layout))
            }
            ViewKind::Meta => Snapshot::Bytes(Arc::new(self.meta(ns, dir, &path, &e)?)),
            ViewKind::Summary => Snapshot::Bytes(Arc::new(self.summary_text(&path, &e))),
            ViewKind::Markdown => self.markdown(ns, dir)?.snapshot()?,
        })
    }

    fn messages(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
    ) -> Result<crate::neutral::SessionMessages> {
        self.neutral_messages(ns, dir, history)
    }

    fn each_message(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
        each: &mut dyn FnMut(&crate::neutral::SessionFacts, crate::neutral::Message),
    ) -> Result<crate::neutral::SessionFacts> {
        self.neutral_each(ns, dir, history, each)
    }

    fn each_message_since(
        &self,
        ns: &str,
        dir: &str,
        since: super::MessageMark,
        each: &mut dyn FnMut(
            &crate::neutral::SessionFacts,
            u64,
            crate::neutral::Message,
        ) -> super::ControlFlow<()>,
    ) -> Result<super::SinceRead> {
        self.neutral_since(ns, dir, since, each)
    }

    fn persist(&self) {
        self.persist_index();
        let convs: Vec<(PathBuf, Conversation)> = {
            let mut c = self.conversations.lock().unwrap();
            c.1.drain().collect()
        };
        for (path, c) in convs {
            self.save_conversation(&path, &c);
        }
        let readers: Vec<(PathBuf, Following)> = {
            let mut r = self.readers.lock().unwrap();
            r.1.drain().collect()
        };
        for (path, mut f) in readers {
            self.save_state(&path, &mut f);
        }
    }
}
