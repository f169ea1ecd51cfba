//! One session: its file, its index, and the append path (§1.1 "Writers must").

use super::durability::{FsyncMode, GroupCommit};
use super::entry::NewEntry;
use super::ids::{checked_next_entry_id, exhausted};
use super::index::{FileStamp, Refresh, SessionIndex, WrittenLine, tokens_of};
use super::index_cache;
use super::layout::CacheFile;
use super::lock::FileLock;
use super::naming::timestamp;
use super::projection::Projection;
use crate::error::{Error, Result};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

pub struct Session {
    pub namespace: String,
    /// The file name's stem, `<stamp>_<session-id>`: the session's folder in the mount.
    pub dir: String,
    pub path: PathBuf,
    /// The store root, when the file is in one: then every open walks from it
    /// without following a link (a namespace swapped for a link is refused).
    store_root: Option<PathBuf>,
    cache_file: Option<CacheFile>,
    /// The file state the persisted index describes, if this process wrote or read it.
    saved: Mutex<Option<FileStamp>>,
    index: RwLock<SessionIndex>,
    /// Serializes this daemon's appenders; `flock` serializes against other processes.
    append_lock: Mutex<()>,
    commit: Arc<GroupCommit>,
    /// The append descriptor (also what `everysec` syncs) with the (dev, inode) it
    /// was opened on; opened by the first append.
    file: Mutex<Option<(Arc<File>, u64, u64)>>,
    /// The file arrives whole by rename (another machine's store, delivered by
    /// Syncthing): a session that grew is a new inode whose earlier bytes are
    /// unchanged, which the content check proves; then only the new bytes are read.
    renamed_copies: bool,
}

/// An append that must reach the disk before it is acknowledged (`--fsync always`).
pub struct Durable {
    commit: Arc<GroupCommit>,
    seq: u64,
    file: Arc<File>,
}

impl Durable {
    /// Blocks until the append is on disk.
    pub fn wait(self) -> Result<()> {
        self.commit
            .wait_durable(self.seq, &self.file)
            .map_err(|e| Error::io("fdatasync", &e))
    }

    /// Runs `done` once the append is on disk, maybe on another thread (the one
    /// that runs the sync), maybe on this one before returning.
    pub fn then(self, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.commit.when_durable(
            self.seq,
            &self.file,
            Box::new(move |r| done(r.map_err(|e| Error::io("fdatasync", &e)))),
        );
    }
}

/// What the appender needs to know beyond the entries.
#[derive(Debug, Clone, Copy)]
pub struct AppendOptions {
    pub fsync: FsyncMode,
}

impl Default for AppendOptions {
    fn default() -> Self {
        AppendOptions {
            fsync: FsyncMode::Always,
        }
    }
}

/// Something that turns entries into bytes: validation that needs the session's
/// current state (is `first-kept-entry-id` a message of this session?) runs here,
/// under the lock, against the up-to-date index.
pub type Check<'a> = &'a dyn Fn(&SessionIndex, &NewEntry) -> Result<()>;

impl Session {
    /// `store_root`: the store the file is in, which also holds its persisted index
    /// (`None` for a file outside a store, e.g. `fen-fs show path/to/file.jsonl`).
    pub fn new(namespace: String, dir: String, path: PathBuf, store_root: Option<PathBuf>) -> Self {
        let cache_file = store_root
            .as_deref()
            .map(|root| super::layout::session_index_cache(root, &namespace, &dir));
        Session {
            namespace,
            dir,
            path,
            store_root,
            cache_file,
            saved: Mutex::new(None),
            index: RwLock::new(SessionIndex::new()),
            append_lock: Mutex::new(()),
            commit: Arc::new(GroupCommit::default()),
            file: Mutex::new(None),
            renamed_copies: false,
        }
    }

    /// A session of the store at `root` whose persisted index lives under
    /// `cache_root` (the same folder, but for another machine's store, whose files
    /// arrive as `renamed_copies`).
    pub fn in_store(
        namespace: String,
        dir: String,
        root: &Path,
        cache_root: &Path,
        renamed_copies: bool,
    ) -> Self {
        let path = super::layout::session_path(root, &namespace, &dir);
        let cache_file = super::layout::session_index_cache(cache_root, &namespace, &dir);
        Session {
            cache_file: Some(cache_file),
            renamed_copies,
            ..Session::new(namespace, dir, path, Some(root.to_path_buf()))
        }
    }

    /// Whether the file arrives whole by rename, so that its identity is its content
    /// (the first and last 4 KiB of what was read), not its inode.
    pub fn renamed_copies(&self) -> bool {
        self.renamed_copies
    }

    pub fn session_id(&self) -> &str {
        super::naming::session_id_of_dir(&self.dir)
    }

    /// The index as of the last refresh.
    pub fn index(&self) -> RwLockReadGuard<'_, SessionIndex> {
        self.index.read().unwrap()
    }

    /// Brings the index up to date (a `stat`, plus parsing any new bytes) and returns it.
    pub fn current(&self) -> Result<RwLockReadGuard<'_, SessionIndex>> {
        self.refresh()?;
        Ok(self.index())
    }

    /// Opens the transcript with `flags`: in a store, from its root without following
    /// any link; elsewhere, the path without following a final link. Always a
    /// regular file, never blocking on a FIFO.
    pub fn open_with(&self, flags: i32) -> std::io::Result<(File, std::fs::Metadata)> {
        match &self.store_root {
            Some(root) => super::open::open_in_store(
                root,
                &self.namespace,
                &super::layout::session_file_name(&self.dir),
                flags,
            ),
            None => super::open::open_path(&self.path, flags),
        }
    }

    /// The transcript, open for reading (views take their snapshot from it).
    pub fn open_read(&self) -> Result<File> {
        self.open_with(libc::O_RDONLY)
            .map(|(f, _)| f)
            .map_err(|e| self.open_error(&e))
    }

    fn open_error(&self, e: &std::io::Error) -> Error {
        match e.raw_os_error() {
            Some(libc::ENOENT | libc::ELOOP | libc::ENOTDIR | libc::EINVAL) => Error::not_found(
                format!("{} is not a regular file in the store", self.path.display()),
            ),
            _ => Error::io(self.path.display(), e),
        }
    }

    pub fn refresh(&self) -> Result<Refresh> {
        // Open, then fstat: what we parse is what we checked.
        let (file, meta) = self
            .open_with(libc::O_RDONLY)
            .map_err(|e| self.open_error(&e))?;
        let stamp = FileStamp::of(&meta);
        let known = self.index.read().unwrap().file;
        if known == stamp {
            return Ok(Refresh::Unchanged);
        }
        if known.ino == 0
            && meta.len() >= index_cache::MIN_BYTES
            && let Some(done) = self.first_read_unlocked(&file, stamp)?
        {
            return Ok(done);
        }
        let mut idx = self.index.write().unwrap();
        // A large file this process has not indexed yet: start from its persisted index.
        if meta.len() >= index_cache::MIN_BYTES
            && idx.file.ino == 0
            && let Some(cache) = &self.cache_file
            && let Some(cached) = index_cache::load(cache, &file, &stamp, self.renamed_copies)
        {
            *idx = cached;
            *self.saved.lock().unwrap() = Some(idx.file);
        }
        self.adopt_renamed_copy(&mut idx, &file, stamp);
        let result = idx.update(&file, stamp)?;
        if self.grown_since_saved(&idx) {
            self.persist(&idx);
        }
        Ok(result)
    }

    /// A copy delivered by rename (a peer's, §12) that only grew is the same session:
    /// `idx` (read from the file it replaced, or from its persisted index) is made the
    /// new file's, so that it is read on from where it was, not read again whole.
    fn adopt_renamed_copy(&self, idx: &mut SessionIndex, file: &File, stamp: FileStamp) {
        if self.renamed_copies
            && idx.file.ino != 0
            && (idx.file.dev, idx.file.ino) != (stamp.dev, stamp.ino)
            && stamp.size >= idx.parsed_len
            && super::index::content_check(file, idx.parsed_len)
                .is_ok_and(|c| c == idx.content_hash())
        {
            idx.file.dev = stamp.dev;
            idx.file.ino = stamp.ino;
        }
    }

    /// The first reading of a large session in this process (its persisted index, or
    /// the whole file parsed), made without the index's lock and put in place once
    /// done: whoever else needs the session meanwhile reads it too rather than wait
    /// (a request of the mount never waits for background work that reads it at idle
    /// priority; docs/background.md). `None`: another reading was put in place first
    /// (the caller reads on from it).
    fn first_read_unlocked(&self, file: &File, stamp: FileStamp) -> Result<Option<Refresh>> {
        let mut fresh = SessionIndex::new();
        let mut saved = None;
        if let Some(cache) = &self.cache_file
            && let Some(cached) = index_cache::load(cache, file, &stamp, self.renamed_copies)
        {
            saved = Some(cached.file);
            fresh = cached;
        }
        self.adopt_renamed_copy(&mut fresh, file, stamp);
        // No lock is held: a background thread lets the mount's requests go first.
        let result = fresh.update_between(file, stamp, &super::yielding::point)?;
        // Saved before it is put in place: nothing is written under the lock.
        let grown = stamp.size.saturating_sub(saved.map_or(0, |s| s.size));
        if grown >= index_cache::MIN_BYTES.max(stamp.size / 8)
            && let Some(cache) = &self.cache_file
        {
            index_cache::save(cache, &fresh);
            saved = Some(fresh.file);
        }
        let mut idx = self.index.write().unwrap();
        if idx.file.ino != 0 {
            return Ok(None);
        }
        *idx = fresh;
        if saved.is_some() {
            *self.saved.lock().unwrap() = saved;
        }
        Ok(Some(result))
    }

    /// Writes the index cache if this session's is large and newer than the saved one.
    pub fn persist_if_stale(&self) {
        let idx = self.index.read().unwrap();
        if idx.file.size >= index_cache::MIN_BYTES && *self.saved.lock().unwrap() != Some(idx.file)
        {
            self.persist(&idx);
        }
    }

    /// Whether a large session grew by max(1 MiB, size/8) since its index was last
    /// persisted (by a refresh that parsed it, or by appends): rewriting the cache
    /// then costs at most ~8 times its size per doubling of the transcript, and a
    /// restart re-parses at most that much.
    fn grown_since_saved(&self, idx: &SessionIndex) -> bool {
        let size = idx.file.size;
        if size < index_cache::MIN_BYTES || self.cache_file.is_none() {
            return false;
        }
        let saved = self.saved.lock().unwrap().map_or(0, |s| s.size);
        size.saturating_sub(saved) >= index_cache::MIN_BYTES.max(size / 8)
    }

    fn persist(&self, idx: &SessionIndex) {
        if let Some(cache) = &self.cache_file {
            index_cache::save(cache, idx);
            *self.saved.lock().unwrap() = Some(idx.file);
        }
    }

    /// Appends `entries` as one all-or-nothing `write(2)`, returning their ids once
    /// they are as durable as `opts.fsync` asks.
    pub fn append(
        &self,
        entries: &[NewEntry],
        check: Check<'_>,
        opts: AppendOptions,
    ) -> Result<Vec<String>> {
        let (ids, durable) = self.append_unsynced(entries, check, opts)?;
        if let Some(ticket) = durable {
            ticket.wait()?;
        }
        Ok(ids)
    }

    /// `append` up to the write: the ids, and (with `--fsync always`) the ticket
    /// that says when they are on disk. Whoever holds a lock a completion might
    /// need must let go of it before waiting on the ticket.
    pub fn append_unsynced(
        &self,
        entries: &[NewEntry],
        check: Check<'_>,
        opts: AppendOptions,
    ) -> Result<(Vec<String>, Option<Durable>)> {
        let _serial = self.append_lock.lock().unwrap();
        let mut file = self.append_file()?;
        let mut lock = FileLock::exclusive(&file)?;
        // One fstat under the lock: the size we append at, whether the index (ours,
        // or stale after another process's appends) must catch up first, and whether
        // the kept descriptor's file still has a name (else the path is opened anew).
        let mut meta = file.metadata().map_err(|e| Error::io("fstat", &e))?;
        if meta.nlink() == 0 {
            drop(lock);
            *self.file.lock().unwrap() = None;
            file = self.open_append_file()?;
            lock = FileLock::exclusive(&file)?;
            meta = file.metadata().map_err(|e| Error::io("fstat", &e))?;
            if meta.nlink() == 0 {
                return Err(self.gone());
            }
        }
        let _lock = lock;
        let size = meta.len();
        let stamp = FileStamp::of(&meta);
        if self.index.read().unwrap().file != stamp {
            self.index.write().unwrap().update(&file, stamp)?;
        }
        let batch = {
            let idx = self.index.read().unwrap();
            for e in entries {
                check(&idx, e)?;
            }
            if idx.parsed_len > size {
                return Err(Error::new(libc::EIO, "session file shrank during append"));
            }
            render_batch(&idx, entries, size)?
        };
        let bytes = &batch.text;
        write_all_or_nothing(&file, size, bytes.as_bytes())?;
        let seq = self.commit.note_written();
        {
            let mut idx = self.index.write().unwrap();
            if idx.parsed_len == size {
                // The common case: the new lines are exactly what we just wrote, and
                // we know what parsing them would find.
                idx.ingest_written(size, &batch.written_lines());
            } else {
                // A torn line before ours: parse it (now terminated) with our lines.
                idx.read_from(&file)?;
            }
            idx.note_appended(&file, size, bytes.as_bytes())
                .map_err(|e| Error::io("read transcript", &e))?;
            let meta = file.metadata().map_err(|e| Error::io("fstat", &e))?;
            idx.file = FileStamp::of(&meta);
            if self.grown_since_saved(&idx) {
                self.persist(&idx);
            }
        }
        let durable = (opts.fsync == FsyncMode::Always).then(|| Durable {
            commit: self.commit.clone(),
            seq,
            file: file.clone(),
        });
        Ok((batch.ids, durable))
    }

    /// The descriptor appends go through, kept open between appends (an `open` per
    /// append costs as much as the rest of the work). Reopened when the path now
    /// names another file (replaced behind our back); ENOENT when it is gone.
    ///
    /// The descriptor is kept while its file still has a name (`st_nlink` > 0): one
    /// `fstat` per append instead of a walk from the store root. A file deleted or
    /// replaced behind our back has no name left, and the path is opened again.
    fn append_file(&self) -> Result<Arc<File>> {
        match self.kept_file() {
            Some(f) => Ok(f),
            None => self.open_append_file(),
        }
    }

    /// The append descriptor, if one is open.
    fn kept_file(&self) -> Option<Arc<File>> {
        self.file
            .lock()
            .unwrap()
            .as_ref()
            .map(|(f, _, _)| f.clone())
    }

    fn gone(&self) -> Error {
        Error::not_found(format!("session file {} disappeared", self.path.display()))
    }

    /// Opens the append descriptor by path, from the store root, following no link.
    fn open_append_file(&self) -> Result<Arc<File>> {
        let gone = || self.gone();
        let (f, opened) = match self.open_with(libc::O_RDWR | libc::O_APPEND) {
            Ok(x) => x,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                *self.file.lock().unwrap() = None;
                return Err(gone());
            }
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ELOOP | libc::ENOTDIR | libc::EINVAL)
                ) =>
            {
                return Err(gone());
            }
            Err(e) => return Err(Error::io(self.path.display(), &e)),
        };
        let mut slot = self.file.lock().unwrap();
        if let Some((kept, dev, ino)) = slot.as_ref()
            && (*dev, *ino) == (opened.dev(), opened.ino())
        {
            return Ok(kept.clone());
        }
        // Appends must block (flock, disk writes): O_NONBLOCK only guarded the open.
        // SAFETY: a valid descriptor; F_SETFL has no memory effects.
        unsafe {
            use std::os::fd::AsRawFd;
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, libc::O_APPEND);
        }
        let f = Arc::new(f);
        *slot = Some((f.clone(), opened.dev(), opened.ino()));
        Ok(f)
    }

    /// fdatasync calls so far and the appends they covered (group commit).
    pub fn commit_counters(&self) -> (u64, u64) {
        self.commit.counters()
    }

    /// For `everysec`: sync if anything was written since the last sync.
    pub fn sync_if_dirty(&self) -> std::io::Result<()> {
        if !self.commit.is_dirty() {
            return Ok(());
        }
        match self.kept_file() {
            Some(f) => self.commit.sync_now(&f),
            None => Ok(()),
        }
    }
}

/// A batch of entries as the bytes to append, with what the index needs to take
/// them in without parsing them again.
pub(crate) struct RenderedBatch {
    pub text: String,
    pub ids: Vec<String>,
    pub timestamp: String,
    /// Per entry: where its line starts in `text`, and for a message entry where
    /// its message object sits (start, length) in `text`.
    pub lines: Vec<(usize, Option<(usize, usize)>)>,
}

impl RenderedBatch {
    /// The lines as the index takes them (`text` must start at a line boundary).
    pub fn written_lines(&self) -> Vec<WrittenLine<'_>> {
        let ends = self
            .lines
            .iter()
            .skip(1)
            .map(|l| l.0)
            .chain([self.text.len()]);
        self.lines
            .iter()
            .zip(ends)
            .zip(&self.ids)
            .map(|((&(start, message), end), id)| WrittenLine {
                text: &self.text[start..end - 1],
                id,
                timestamp: &self.timestamp,
                message: message.map(|(m, n)| (m - start, n)),
            })
            .collect()
    }
}

/// Serializes a batch: ids chained from the file's last entry, `\n` first when the
/// file ends in a torn line, computed compaction fields filled in. EOVERFLOW when no
/// id is left above the last one (never a repeated id).
pub(crate) fn render_batch(
    idx: &SessionIndex,
    entries: &[NewEntry],
    size: u64,
) -> Result<RenderedBatch> {
    let mut out = String::new();
    if size > idx.parsed_len {
        out.push('\n');
    }
    let mut parent = idx.last_entry_id.clone();
    let now = timestamp(chrono::Utc::now());
    let mut lines = Vec::with_capacity(entries.len());
    let mut ids = Vec::with_capacity(entries.len());
    let table = idx.messages.read().unwrap();
    let proj = Projection::of(idx);
    // Running context size, so a compaction's tokens-before counts earlier lines of
    // this same batch; `kept_from_tokens` finds the tokens of a kept suffix.
    let mut context = proj.context_tokens(&table);
    let mut batch_message_tokens = 0u64;
    for e in entries {
        let id = checked_next_entry_id(parent.as_deref())
            .ok_or_else(|| exhausted(parent.as_deref().unwrap_or("")))?
            .to_string();
        let mut extra: Vec<(&str, String)> = Vec::new();
        if let Some(raw) = e.message_raw() {
            let t = tokens_of(raw.len() as u64);
            context += t;
            batch_message_tokens += t;
        }
        if let Some(c) = &e.compaction {
            let head = match &c.first_kept {
                Some(_) => {
                    tokens_of(super::index::synthetic_summary_message(&c.summary).len() as u64)
                }
                None => c.replacement_lens.iter().map(|&n| tokens_of(n)).sum(),
            };
            let kept = match &c.first_kept {
                Some(Some(k)) => match idx.find_message(k) {
                    Some(i) => {
                        let before = if i == 0 { 0 } else { table[i - 1].tokens_end };
                        table.last().map_or(0, |m| m.tokens_end) - before + batch_message_tokens
                    }
                    None => 0,
                },
                _ => 0,
            };
            let after = head + kept;
            if !c.has_tokens_before {
                extra.push(("tokens-before", context.to_string()));
            }
            if !c.has_tokens_after {
                extra.push(("tokens-after", after.to_string()));
            }
            if !c.has_trigger {
                extra.push(("trigger", "\"manual\"".to_string()));
            }
            context = after;
        }
        let start = out.len();
        let message = e.write_line(&mut out, &id, parent.as_deref(), &now, &extra);
        lines.push((start, message));
        parent = Some(id.clone());
        ids.push(id);
    }
    Ok(RenderedBatch {
        text: out,
        ids,
        timestamp: now,
        lines,
    })
}

/// One `write(2)` on the O_APPEND descriptor; a short or failed write is undone by
/// truncating back to `old_size`, so no partial line is ever left behind.
pub(crate) fn write_all_or_nothing(file: &File, old_size: u64, bytes: &[u8]) -> Result<()> {
    let mut f = file;
    let result = f.write(bytes);
    let failure = match result {
        Ok(n) if n == bytes.len() => return Ok(()),
        Ok(_) => std::io::Error::from_raw_os_error(libc::ENOSPC),
        Err(e) => e,
    };
    let _ = file.set_len(old_size);
    Err(Error::io("append", &failure))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A large session's first reading holds no lock: on a thread told how to pause
    /// (background work, `Background::enter`), it pauses between its chunks; not on
    /// another thread, nor under a lock a request may wait for (`Holding`).
    #[test]
    fn a_large_sessions_first_read_pauses_between_its_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let line = format!("{{\"type\":\"note\",\"text\":\"{}\"}}\n", "x".repeat(200));
        // Three chunks of the parse, and more.
        std::fs::write(&path, line.repeat(9 * (1 << 20) / line.len())).unwrap();
        let read = move |told: bool, holding: bool| {
            let path = path.clone();
            std::thread::spawn(move || {
                let pauses = Arc::new(AtomicUsize::new(0));
                if told {
                    let p = pauses.clone();
                    super::super::yielding::pause_with(move || {
                        p.fetch_add(1, Ordering::Relaxed);
                    });
                }
                let _h = holding.then(super::super::yielding::Holding::now);
                let session = Session::new("ns".into(), "s".into(), path, None);
                assert!(session.current().unwrap().parsed_len > 8 << 20);
                pauses.load(Ordering::Relaxed)
            })
            .join()
            .unwrap()
        };
        assert!(read(true, false) >= 2);
        assert_eq!(read(false, false), 0);
        assert_eq!(read(true, true), 0);
    }
}
