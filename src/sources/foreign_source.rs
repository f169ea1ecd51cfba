//! Another agent's store (pi, Claude Code, Codex) as a read-only [`SessionSource`].
//!
//! Its session files are found by walking the agent's folders (a folder whose mtime
//! did not change is not re-read), each file is read once by the agent's
//! [`ForeignReader`] into a small summary (cwd, title, counts...), and a session
//! appears in the namespace of its real cwd, named `<created stamp>_<agent>-<id>`.
//! A file that grew is read from where the last read stopped while its reader is in
//! a small cache; anything else about it changing means a fresh read.
//!
//! Nothing is ever written, locked or created in the agent's folders: every open is
//! read-only, `O_NOFOLLOW`, checked to be a regular file. The index of summaries is
//! kept in fen's own cache folder, reused on the next mount for every file whose
//! (device, inode, size, mtime) is unchanged. The first index is built by a
//! background thread, so `mount` returns at once; a listing waits for it.

mod messages;

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

/// Readers kept for following appends (each holds per-entry records, not contents).
const READER_CACHE: usize = 32;
/// How much of a file one `read` takes while feeding a reader.
const CHUNK: usize = 8 << 20;
const INDEX_VERSION: u32 = 1;

/// What the index keeps per session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileEntry {
    stamp: FileStamp,
    summary: ForeignSummary,
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
    folders: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

#[derive(Default)]
struct Index {
    files: HashMap<PathBuf, FileEntry>,
    /// namespace → session dir → file.
    by_ns: BTreeMap<String, BTreeMap<String, PathBuf>>,
    dir_of: HashMap<PathBuf, (String, String)>,
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
    rendered: HashMap<String, (u64, Arc<Vec<Listing>>, NamespaceIndex)>,
}

/// A reader that has consumed a file up to `consumed`, for following appends.
struct Following {
    stamp: FileStamp,
    consumed: u64,
    tail: Vec<u8>,
    reader: Box<dyn ForeignReader>,
    used: u64,
}

pub struct ForeignSource {
    agent: Agent,
    root: PathBuf,
    sessions: PathBuf,
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
            sessions: agents::sessions_folder(root.agent, &root.root),
            cache_file,
            index: Mutex::new(Index::default()),
            ready: Condvar::new(),
            readers: Mutex::new((0, HashMap::new())),
            watch: None,
            markdown: Default::default(),
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
        let started = std::time::Instant::now();
        let persisted = self.load_persisted();
        let found = self.walk();
        let total = found.len();
        // Unchanged files come from the persisted index at once.
        let mut todo = Vec::new();
        {
            let mut idx = self.index.lock().unwrap();
            for path in found {
                match (persisted.get(&path), file_stamp(&path)) {
                    (Some(old), Some(stamp)) if old.stamp == stamp => {
                        self.insert(&mut idx, path, old.clone())
                    }
                    _ => todo.push(path),
                }
            }
        }
        // The rest is read file by file; each gets a namespace hint first (the cwd
        // near its start, per project folder where folders are projects), so that a
        // listing waits only for the files of its own namespace, read first.
        let mut groups: BTreeMap<Option<String>, Vec<PathBuf>> = BTreeMap::new();
        let mut folder_hints: HashMap<PathBuf, Option<String>> = HashMap::new();
        for path in todo {
            let hint = if agents::folders_are_projects(self.agent) {
                let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
                folder_hints
                    .entry(folder)
                    .or_insert_with(|| agents::head_cwd(&path).map(|c| naming::slug(&c)))
                    .clone()
            } else {
                agents::head_cwd(&path).map(|c| naming::slug(&c))
            };
            // A file that names no cwd near its start most likely has none at all.
            let hint = hint.or_else(|| Some(UNKNOWN_CWD_NAMESPACE.to_string()));
            groups.entry(hint).or_default().push(path);
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
        let mut done = 0usize;
        while let Some((hint, path)) = self.next_to_read(&mut groups) {
            let entry = self.read_file(&path);
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
            done += 1;
            if done.is_multiple_of(1000) {
                log::info!(
                    "{}: read {done} of {reread} session files",
                    self.agent.name()
                );
            }
        }
        {
            let mut idx = self.index.lock().unwrap();
            self.refresh_renames(&mut idx);
            idx.ready = true;
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
        groups: &mut BTreeMap<Option<String>, Vec<PathBuf>>,
    ) -> Option<(Option<String>, PathBuf)> {
        let wanted = std::mem::take(&mut self.index.lock().unwrap().wanted);
        let key = wanted
            .into_iter()
            .map(Some)
            .find(|k| groups.get(k).is_some_and(|g| !g.is_empty()))
            .or_else(|| {
                groups
                    .iter()
                    .find(|(_, g)| !g.is_empty())
                    .map(|(k, _)| k.clone())
            })?;
        let group = groups.get_mut(&key)?;
        let path = group.pop()?;
        if group.is_empty() {
            groups.remove(&key);
        }
        Some((key, path))
    }

    /// The index once it can answer for `ns` (`None`: for everything): at once after
    /// the first index is built; before, when the files hinted to be in `ns` are read
    /// (asking the indexer to read those first).
    fn wait_for(&self, ns: Option<&str>) -> std::sync::MutexGuard<'_, Index> {
        let mut idx = self.index.lock().unwrap();
        loop {
            if idx.ready {
                return idx;
            }
            if let Some(ns) = ns
                && idx.planned
            {
                if !idx.pending.contains_key(ns) {
                    return idx;
                }
                idx.wanted.insert(ns.to_string());
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

    /// Every session file under the sessions folder, re-reading only folders whose
    /// stamp changed since the last walk. Links are never followed.
    fn walk(&self) -> Vec<PathBuf> {
        let mut scans = std::mem::take(&mut self.index.lock().unwrap().folders);
        let mut out = Vec::new();
        let mut next = HashMap::new();
        walk_folder(
            self.agent,
            &self.sessions,
            agents::file_depth(self.agent),
            &mut scans,
            &mut next,
            &mut out,
        );
        self.index.lock().unwrap().folders = next;
        out.sort();
        out
    }

    fn insert(&self, idx: &mut Index, path: PathBuf, e: FileEntry) {
        remove(idx, &path);
        let ns = e.namespace();
        let mut dir = session_dir_name(self.agent, &path, &e);
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
        idx.dir_of.insert(path.clone(), (ns, dir));
        idx.files.insert(path, e);
        idx.generation += 1;
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
        if let Some(watch) = &self.watch {
            let mut idx = self.wait_for(ns);
            // Folders with events since their last read: their files' namespaces must
            // be re-stat'ed, and the walk must look at them again.
            let folders: Vec<PathBuf> = idx.folders.keys().cloned().collect();
            let mut changed = folders.is_empty();
            for f in &folders {
                let key = f.to_string_lossy();
                if watch.changed(&key, f) {
                    watch.mark_clean(&key);
                    changed = true;
                    let files = idx
                        .folders
                        .get(f)
                        .map(|s| s.files.clone())
                        .unwrap_or_default();
                    let namespaces: Vec<String> = files
                        .iter()
                        .filter_map(|p| idx.dir_of.get(p).map(|(n, _)| n.clone()))
                        .collect();
                    idx.dirty.extend(namespaces);
                }
            }
            let renames_changed = self.agent == Agent::Codex
                && file_stamp(&agents::codex_session_index(&self.root)) != idx.renames_stamp;
            if !changed && !renames_changed && ns.is_none_or(|n| !idx.dirty.contains(n)) {
                return;
            }
        }
        let found = self.walk();
        let mut idx = self.wait_for(ns);
        let present: BTreeSet<&PathBuf> = found.iter().collect();
        let gone: Vec<PathBuf> = idx
            .files
            .keys()
            .filter(|p| !present.contains(p))
            .cloned()
            .collect();
        for p in gone {
            remove(&mut idx, &p);
        }
        let mut stale: Vec<PathBuf> = found
            .iter()
            .filter(|p| !idx.files.contains_key(*p))
            .cloned()
            .collect();
        if let Some(ns) = ns
            && (self.watch.is_none() || idx.dirty.remove(ns))
            && let Some(dirs) = idx.by_ns.get(ns)
        {
            for path in dirs.values() {
                if file_stamp(path) != idx.files.get(path).map(|e| e.stamp) {
                    stale.push(path.clone());
                }
            }
        }
        self.refresh_renames(&mut idx);
        drop(idx);
        for path in stale {
            self.refresh_file(&path);
        }
    }

    /// Re-reads one file into the index (or drops it if it is gone).
    fn refresh_file(&self, path: &Path) {
        let read = self.read_file(path);
        let mut idx = self.index.lock().unwrap();
        match read {
            Ok(e) => self.insert(&mut idx, path.to_path_buf(), e),
            Err(_) => remove(&mut idx, path),
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

    /// Feeds `path` through its reader, from where a cached reader stopped if the file
    /// only grew since; returns the open file, its stamp, and the result of `f` on
    /// the reader and the unterminated tail.
    fn with_reader<T>(
        &self,
        path: &Path,
        f: impl FnOnce(&dyn ForeignReader, &[u8]) -> T,
    ) -> Result<(File, FileStamp, T)> {
        let (mut file, meta) = crate::store::open::open_regular(path)?;
        let stamp = FileStamp::of(&meta);
        let cached = {
            let mut readers = self.readers.lock().unwrap();
            readers.1.remove(path)
        };
        let mut following = match cached {
            Some(c)
                if c.stamp.dev == stamp.dev
                    && c.stamp.ino == stamp.ino
                    && stamp.size >= c.stamp.size
                    && (stamp.size > c.stamp.size || stamp == c.stamp) =>
            {
                c
            }
            _ => Following {
                stamp,
                consumed: 0,
                tail: Vec::new(),
                reader: agents::reader_for(
                    self.agent,
                    &path.file_name().unwrap_or_default().to_string_lossy(),
                ),
                used: 0,
            },
        };
        if following.stamp != stamp || following.consumed == 0 {
            feed(&mut file, &mut following, stamp.size)?;
            following.stamp = stamp;
        }
        let out = f(following.reader.as_ref(), &following.tail);
        let mut readers = self.readers.lock().unwrap();
        readers.0 += 1;
        following.used = readers.0;
        readers.1.insert(path.to_path_buf(), following);
        if readers.1.len() > READER_CACHE
            && let Some(oldest) = readers
                .1
                .iter()
                .min_by_key(|(_, f)| f.used)
                .map(|(p, _)| p.clone())
        {
            readers.1.remove(&oldest);
        }
        Ok((file, stamp, out))
    }

    fn read_file(&self, path: &Path) -> Result<FileEntry> {
        let (_, stamp, summary) = self.with_reader(path, |r, tail| r.summary(tail))?;
        Ok(FileEntry { stamp, summary })
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
        if file_stamp(&path) != known {
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
        let (file, meta) = crate::store::open::open_regular(path)?;
        let stamp = FileStamp::of(&meta);
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
        let mut convs = self.conversations.lock().unwrap();
        let used = convs.0;
        convs.1.insert(
            path.to_path_buf(),
            Conversation {
                stamp,
                proof,
                layout: layout.clone(),
                context_tokens: tokens,
                used,
                saved,
            },
        );
        if convs.1.len() > READER_CACHE
            && let Some(oldest) = convs
                .1
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(p, _)| p.clone())
        {
            // A large file's layout is worth keeping for the next mount.
            if let Some(c) = convs.1.remove(&oldest) {
                drop(convs);
                self.save_conversation(&oldest, &c);
            }
        }
        Ok((file, layout, tokens))
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
        let (_, _, context_tokens) = self.conversation(path)?;
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
            source_path: path,
            resumable: s.resumable,
            not_resumable_reason: s.not_resumable_reason.as_deref(),
            listed_by_agent: s.listed,
        };
        let mut out = serde_json::to_vec_pretty(&meta).expect("meta serializes");
        out.push(b'\n');
        Ok(out)
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
        field("file", &path.to_string_lossy());
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
            (true, _) => field("resumable", "yes"),
            (false, Some(why)) => field("resumable", &format!("no: {why}")),
            (false, None) => field("resumable", "no"),
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
    /// Whether the agent's own session picker lists it.
    listed_by_agent: bool,
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

fn piece_len(p: &Piece) -> u64 {
    match p {
        Piece::Text(t) => t.len() as u64,
        Piece::Range { len, .. } => *len,
    }
}

fn remove(idx: &mut Index, path: &Path) {
    if idx.files.remove(path).is_some() {
        idx.generation += 1;
    }
    if let Some((ns, dir)) = idx.dir_of.remove(path)
        && let Some(m) = idx.by_ns.get_mut(&ns)
    {
        m.remove(&dir);
        if m.is_empty() {
            idx.by_ns.remove(&ns);
        }
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
    use std::os::unix::fs::FileExt;
    let mut pos = following.consumed + following.tail.len() as u64;
    let mut buf = std::mem::take(&mut following.tail);
    while pos < size {
        let want = ((size - pos) as usize).min(CHUNK);
        let at = buf.len();
        buf.resize(at + want, 0);
        let n = file
            .read_at(&mut buf[at..], pos)
            .map_err(|e| Error::io("read session file", &e))?;
        buf.truncate(at + n);
        if n == 0 {
            break;
        }
        pos += n as u64;
        let used = following.reader.feed(following.consumed, &buf) as usize;
        following.consumed += used as u64;
        buf.drain(..used.min(buf.len()));
    }
    // The cached reader keeps only the unterminated tail, not the chunk's capacity
    // (32 cached readers of 8 MiB each showed up as the search build's heap).
    buf.shrink_to_fit();
    following.tail = buf;
    Ok(())
}

fn walk_folder(
    agent: Agent,
    folder: &Path,
    depth: usize,
    old: &mut HashMap<PathBuf, FolderScan>,
    new: &mut HashMap<PathBuf, FolderScan>,
    out: &mut Vec<PathBuf>,
) {
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
    let scan = match old.remove(folder) {
        Some(s) if s.stamp == stamp => s,
        _ => {
            let mut scan = FolderScan {
                stamp,
                folders: Vec::new(),
                files: Vec::new(),
            };
            if let Ok(rd) = std::fs::read_dir(folder) {
                for entry in rd.flatten() {
                    let Ok(ft) = entry.file_type() else { continue };
                    let name = entry.file_name();
                    if depth > 1 && ft.is_dir() {
                        scan.folders.push(entry.path());
                    } else if depth == 1
                        && ft.is_file()
                        && agents::is_session_file(agent, &name.to_string_lossy())
                    {
                        scan.files.push(entry.path());
                    }
                }
            }
            scan
        }
    };
    out.extend(scan.files.iter().cloned());
    for sub in &scan.folders {
        walk_folder(agent, sub, depth - 1, old, new, out);
    }
    new.insert(folder.to_path_buf(), scan);
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
        self.wait_for(Some(ns)).by_ns.contains_key(ns)
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
        let (_, e) = self.session(ns, dir)?;
        Ok(SessionStat {
            size: e.stamp.size,
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
            return Ok(self.markdown(ns, dir)?.len() as u64);
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
            ViewKind::Transcript => {
                Snapshot::Transcript(crate::store::open::open_regular(&path)?.0)
            }
            ViewKind::Conversation => {
                let (file, layout, _) = self.conversation(&path)?;
                Snapshot::Pieces(PieceSnapshot::new(file, layout))
            }
            ViewKind::Meta => Snapshot::Bytes(Arc::new(self.meta(ns, dir, &path, &e)?)),
            ViewKind::Summary => Snapshot::Bytes(Arc::new(self.summary_text(&path, &e))),
            ViewKind::Markdown => Snapshot::Bytes(self.markdown(ns, dir)?),
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

    fn persist(&self) {
        self.persist_index();
        let convs: Vec<(PathBuf, Conversation)> = {
            let mut c = self.conversations.lock().unwrap();
            c.1.drain().collect()
        };
        for (path, c) in convs {
            self.save_conversation(&path, &c);
        }
    }
}
