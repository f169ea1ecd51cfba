//! The on-disk store (§1): `<root>/<namespace>/<stamp>_<session-id>.jsonl`.
//!
//! The store is the single source of truth; nothing here caches what a `stat` cannot
//! validate. Sessions are looked up by (namespace, dir) and keep their index between
//! calls so that a refresh parses only new bytes.

pub mod atomic;
pub mod durability;
pub mod entry;
pub mod ids;
pub mod index;
pub mod index_cache;
#[cfg(feature = "full")]
pub mod kept;
pub mod layout;
pub mod line;
pub mod lock;
pub mod naming;
pub mod open;
pub mod projection;
pub mod session;
pub mod trash;
pub mod write_gate;
pub mod yielding;

use crate::error::{Error, Result};
use durability::FsyncMode;
use entry::NewEntry;
use index::SessionIndex;
use session::{AppendOptions, Check, Session};
use std::collections::HashMap;
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use layout::default_root;

pub struct Store {
    pub root: PathBuf,
    /// Where this store's caches (`.fen-cache`) live: `root` itself, except for another
    /// machine's store received read-only (§12), whose caches live in this machine's.
    pub cache_root: PathBuf,
    /// Its files arrive whole by rename (another machine's store, §12).
    renamed_copies: bool,
    pub append: AppendOptions,
    sessions: Mutex<HashMap<(String, String), Arc<Session>>>,
    id_claims: Mutex<()>,
}

fn private_dir(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::new(
            libc::EIO,
            format!("{} exists and is not a folder", path.display()),
        )),
        Err(_) => DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| Error::io(path.display(), &e)),
    }
}

impl Store {
    /// Opens (creating with mode 0700 if needed) the store at `root`.
    pub fn open(root: impl Into<PathBuf>, fsync: FsyncMode) -> Result<Store> {
        let root = root.into();
        private_dir(&root)?;
        Ok(Store {
            cache_root: root.clone(),
            renamed_copies: false,
            root,
            append: AppendOptions { fsync },
            sessions: Mutex::new(HashMap::new()),
            id_claims: Mutex::new(()),
        })
    }

    /// Opens an existing store read-only (the CLI's `list`/`show`): never creates it.
    pub fn open_existing(root: impl Into<PathBuf>) -> Store {
        let root = root.into();
        Store::open_read_only(root.clone(), root)
    }

    /// Another machine's store (§12), read and never written: nothing is created,
    /// locked or cached in `root`; its caches go under `cache_root` (a folder of this
    /// machine's `.fen-cache`).
    pub fn open_read_only(root: PathBuf, cache_root: PathBuf) -> Store {
        Store {
            root,
            cache_root,
            renamed_copies: false,
            append: AppendOptions::default(),
            sessions: Mutex::new(HashMap::new()),
            id_claims: Mutex::new(()),
        }
    }

    /// The `*.jsonl` entries of namespace folder `ns` with their stems (a symlinked
    /// namespace is not a namespace).
    fn jsonl_entries(&self, ns: &str) -> Result<Vec<(String, std::fs::DirEntry)>> {
        let dir = layout::namespace_path(&self.root, ns);
        let rd = self.namespace_entries(ns)?;
        let mut out = Vec::new();
        for entry in rd {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            match name.to_str() {
                Some(n) => {
                    if let Some(stem) = layout::session_dir_of(n) {
                        out.push((stem.to_string(), entry));
                    }
                }
                None => log::warn!(
                    "{}/{}: name is not UTF-8: skipped (fen-fs fsck lists these)",
                    dir.display(),
                    naming::escape_name(&name)
                ),
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// The entries of namespace folder `ns`, opened without following links.
    fn namespace_entries(&self, ns: &str) -> Result<std::fs::ReadDir> {
        open::Dir::open_root(&self.root)
            .and_then(|r| r.open_dir(ns))
            .and_then(|d| d.entries())
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOTDIR | libc::ELOOP | libc::EINVAL) => {
                    Error::not_found(format!("{ns} is not a namespace"))
                }
                _ => Error::io(layout::namespace_path(&self.root, ns).display(), &e),
            })
    }

    /// Whether `ns` holds a session file (as `session_dirs` counts them). It stops at
    /// the first one: every lookup, `getattr` and `open` under a namespace asks, and
    /// listing all of 10,000 sessions to answer cost ~5 ms each time.
    pub fn has_sessions(&self, ns: &str) -> bool {
        let Ok(rd) = self.namespace_entries(ns) else {
            return false;
        };
        rd.flatten().any(|e| {
            e.file_name()
                .to_str()
                .and_then(layout::session_dir_of)
                .is_some()
                && e.file_type().is_ok_and(|t| t.is_file())
        })
    }

    /// Session file stems in `ns` (regular `*.jsonl` files only; links are not followed).
    pub fn session_dirs(&self, ns: &str) -> Result<Vec<String>> {
        Ok(self
            .jsonl_entries(ns)?
            .into_iter()
            .filter(|(_, e)| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|(stem, _)| stem)
            .collect())
    }

    /// Session file stems in `ns` with their metadata, in one pass: `DirEntry::metadata`
    /// stats relative to the open folder (no path walk per file), links not followed.
    pub fn session_files(&self, ns: &str) -> Result<Vec<(String, std::fs::Metadata)>> {
        Ok(self
            .jsonl_entries(ns)?
            .into_iter()
            .filter_map(|(stem, e)| e.metadata().ok().filter(|m| m.is_file()).map(|m| (stem, m)))
            .collect())
    }

    /// Another machine's store as Syncthing delivers it (§12): read-only as
    /// `open_read_only`, and a session file replaced by a longer copy of itself (a new
    /// inode: Syncthing never writes in place) is read on from where it was.
    pub fn open_peer(root: PathBuf, cache_root: PathBuf) -> Store {
        Store {
            renamed_copies: true,
            ..Store::open_read_only(root, cache_root)
        }
    }

    /// Drops session `ns/dir`'s index unless something holds the session (an open
    /// view, an append), for another machine's store only: listing or indexing every
    /// session of a peer then costs no memory per session (this machine's own sessions
    /// keep theirs, for appends and views). Its persisted index, if any, stays.
    pub fn release_if_idle(&self, ns: &str, dir: &str) {
        if !self.renamed_copies {
            return;
        }
        let mut map = self.sessions.lock().unwrap();
        let key = (ns.to_string(), dir.to_string());
        if map.get(&key).is_some_and(|s| Arc::strong_count(s) == 1) {
            map.remove(&key);
        }
    }

    /// Namespace folders holding at least one session file.
    pub fn namespaces(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let rd = match std::fs::read_dir(&self.root) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(Error::io(self.root.display(), &e)),
        };
        for entry in rd {
            let Ok(entry) = entry else { continue };
            let Ok(ft) = entry.file_type() else { continue };
            let Some(name) = entry.file_name().to_str().map(String::from) else {
                if ft.is_dir() {
                    log::warn!(
                        "{}/{}: name is not UTF-8: skipped (fen-fs fsck lists these)",
                        self.root.display(),
                        naming::escape_name(&entry.file_name())
                    );
                }
                continue;
            };
            // `.trash`, `.fen-cache`: fen-fs's own folders are never namespaces.
            if ft.is_dir() && !name.starts_with('.') && self.has_sessions(&name) {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    /// Namespace folders and session files that readers skip because their names are
    /// not UTF-8 (a folder only if it holds a `*.jsonl` file), as escaped paths
    /// relative to the root (`naming::escape_name`), for fsck to report.
    pub fn names_not_utf8(&self) -> Result<Vec<String>> {
        use std::os::unix::ffi::OsStrExt;
        let jsonl = |name: &std::ffi::OsStr| {
            let b = name.as_bytes();
            b.len() > ".jsonl".len() && b.ends_with(b".jsonl")
        };
        let root = match open::Dir::open_root(&self.root) {
            Ok(root) => root,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(self.root.display(), &e)),
        };
        let entries = root
            .read_dir()
            .map_err(|e| Error::io(self.root.display(), &e))?;
        let mut out = Vec::new();
        for (name, ft) in entries {
            if !ft.is_dir() || name.as_bytes().starts_with(b".") {
                continue;
            }
            let Ok(files) = root.open_dir(&name).and_then(|d| d.read_dir()) else {
                continue;
            };
            let sessions = files.iter().filter(|(f, t)| t.is_file() && jsonl(f));
            match name.to_str() {
                None => {
                    if sessions.count() > 0 {
                        out.push(naming::escape_name(&name));
                    }
                }
                Some(ns) => out.extend(
                    sessions
                        .filter(|(f, _)| f.to_str().is_none())
                        .map(|(f, _)| format!("{ns}/{}", naming::escape_name(f))),
                ),
            }
        }
        out.sort();
        Ok(out)
    }

    /// The session `ns/dir`, if its file exists (as a regular file).
    pub fn session(&self, ns: &str, dir: &str) -> Result<Arc<Session>> {
        let regular = open::Dir::open_root(&self.root)
            .and_then(|r| r.open_dir(ns))
            .and_then(|d| d.stat(layout::session_file_name(dir)))
            .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG);
        if regular {
            return Ok(self.session_unchecked(ns, dir));
        }
        self.sessions
            .lock()
            .unwrap()
            .remove(&(ns.to_string(), dir.to_string()));
        Err(Error::not_found(format!("no session {ns}/{dir}")))
    }

    pub fn session_path(&self, ns: &str, dir: &str) -> PathBuf {
        layout::session_path(&self.root, ns, dir)
    }

    /// The session object for `ns/dir` without checking the file (the caller just
    /// did); its index survives between calls.
    pub fn session_unchecked(&self, ns: &str, dir: &str) -> Arc<Session> {
        let mut map = self.sessions.lock().unwrap();
        map.entry((ns.to_string(), dir.to_string()))
            .or_insert_with(|| {
                Arc::new(Session::in_store(
                    ns.to_string(),
                    dir.to_string(),
                    &self.root,
                    &self.cache_root,
                    self.renamed_copies,
                ))
            })
            .clone()
    }

    pub fn sessions_in(&self, ns: &str) -> Result<Vec<Arc<Session>>> {
        Ok(self
            .session_dirs(ns)?
            .iter()
            .filter_map(|d| self.session(ns, d).ok())
            .collect())
    }

    pub fn all_sessions(&self) -> Result<Vec<Arc<Session>>> {
        let mut out = Vec::new();
        for ns in self.namespaces()? {
            out.extend(self.sessions_in(&ns)?);
        }
        Ok(out)
    }

    /// Sessions already known to this process (for the `everysec` sync thread).
    pub fn known_sessions(&self) -> Vec<Arc<Session>> {
        self.sessions.lock().unwrap().values().cloned().collect()
    }

    /// Creates a session whose first entry is `first`; returns it and the entry's id.
    /// The file is created with O_EXCL and written header-and-entry in one `write(2)`.
    pub fn create_session(
        &self,
        cwd: &str,
        session_id: Option<&str>,
        first: &NewEntry,
        check: Check<'_>,
    ) -> Result<(Arc<Session>, String)> {
        let (session, mut ids) =
            self.create_session_with(cwd, session_id, std::slice::from_ref(first), check)?;
        Ok((session, ids.remove(0)))
    }

    /// `create_session` with several first entries (`fen-fs resume --in fen`: a
    /// compaction, its provenance and its title), all in the new file at once.
    pub fn create_session_with(
        &self,
        cwd: &str,
        session_id: Option<&str>,
        entries: &[NewEntry],
        check: Check<'_>,
    ) -> Result<(Arc<Session>, Vec<String>)> {
        if entries.is_empty() {
            return Err(Error::invalid("a new session needs a first entry"));
        }
        for e in entries {
            check(&SessionIndex::new(), e)?;
        }
        // A chosen session-id is checked and published under one claim (a mutex here,
        // an flock for other processes), so two creators cannot both take it.
        let mut _claim = None;
        let id = match session_id {
            Some(id) => {
                if !naming::is_valid_session_id(id) {
                    return Err(Error::invalid("session-id must be 1-64 of A-Za-z0-9_-"));
                }
                _claim = Some(self.claim_session_ids()?);
                if self.find_by_session_id(id)?.is_some() {
                    return Err(Error::new(
                        libc::EEXIST,
                        format!("session-id {id} is already in use"),
                    ));
                }
                id.to_string()
            }
            None => uuid::Uuid::now_v7().to_string(),
        };
        let now = chrono::Utc::now();
        let ns = naming::slug(cwd);
        let dir = format!("{}_{id}", naming::stamp(now));
        let ns_path = layout::namespace_path(&self.root, &ns);
        private_dir(&self.root)?;
        let ns_dir = || {
            open::Dir::open_root(&self.root)
                .and_then(|r| r.create_dir(&ns))
                .map_err(|e| Error::io(ns_path.display(), &e))
        };
        let name = layout::session_file_name(&dir);
        let header = format!(
            "{{\"type\":\"session\",\"version\":2,\"id\":{},\"timestamp\":{},\"cwd\":{}}}\n",
            crate::json::quote(&id),
            crate::json::quote(&naming::timestamp(now)),
            crate::json::quote(cwd)
        );
        let batch = session::render_batch(&SessionIndex::new(), entries, 0)?;
        let entry_ids = batch.ids;
        let bytes = format!("{header}{}", batch.text);
        let durable = self.append.fsync != FsyncMode::No;
        match publish_new_file(&ns_dir()?, &name, bytes.as_bytes(), durable) {
            // The trash removed the namespace folder as its last session left: again.
            Err(e) if e.errno == libc::ENOENT => {
                publish_new_file(&ns_dir()?, &name, bytes.as_bytes(), durable)?;
            }
            r => r?,
        }
        let session = self.session(&ns, &dir)?;
        session.refresh()?;
        Ok((session, entry_ids))
    }

    /// Exclusive right to check-and-create named sessions, until the value drops.
    fn claim_session_ids(&self) -> Result<(std::sync::MutexGuard<'_, ()>, std::fs::File)> {
        let guard = self.id_claims.lock().unwrap();
        let cache = open::Dir::open_root(&self.root)
            .and_then(|r| r.create_dir(layout::CACHE_DIR))
            .map_err(|e| Error::io(layout::cache_dir(&self.root).display(), &e))?;
        let lock_file = || {
            cache.open_file_with(
                layout::SESSION_IDS_LOCK,
                libc::O_RDONLY | libc::O_CREAT,
                0o600,
            )
        };
        // Something planted in its place (a FIFO, a link, a folder) is not ours to
        // open: removed, and the lock file made anew.
        let file = match lock_file() {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ELOOP)) => {
                let _ = cache.unlink(layout::SESSION_IDS_LOCK);
                lock_file()
            }
            other => other,
        }
        .map(|(f, _)| f)
        .map_err(|e| Error::io(cache.path().join(layout::SESSION_IDS_LOCK).display(), &e))?;
        // Closing the file (when the claim drops) releases the lock.
        std::mem::forget(lock::FileLock::exclusive(&file)?);
        Ok((guard, file))
    }

    fn find_by_session_id(&self, id: &str) -> Result<Option<Arc<Session>>> {
        Ok(self
            .all_sessions()?
            .into_iter()
            .find(|s| s.session_id() == id))
    }

    /// A session named by id, unique prefix of an id (or of its folder name), or path.
    pub fn resolve(&self, spec: &str) -> Result<Arc<Session>> {
        let p = Path::new(spec);
        if spec.contains('/') || spec.ends_with(".jsonl") {
            let meta = std::fs::symlink_metadata(p).map_err(|e| Error::io(spec, &e))?;
            if !meta.is_file() {
                return Err(Error::not_found(format!("{spec} is not a session file")));
            }
            let ns = p
                .parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            let dir = p
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            return Ok(Arc::new(Session::new(ns, dir, p.to_path_buf(), None)));
        }
        let all = self.all_sessions()?;
        if let Some(s) = all.iter().find(|s| s.session_id() == spec || s.dir == spec) {
            return Ok(s.clone());
        }
        let matches: Vec<_> = all
            .into_iter()
            .filter(|s| s.session_id().starts_with(spec) || s.dir.starts_with(spec))
            .collect();
        match matches.len() {
            0 => Err(Error::not_found(format!("no session matches {spec}"))),
            1 => Ok(matches[0].clone()),
            n => Err(Error::invalid(format!(
                "{spec} matches {n} sessions; give more of the id"
            ))),
        }
    }
}

/// Creates `name` in `dir` holding exactly `bytes`, or nothing: the bytes go into an
/// unnamed file in `dir` (O_TMPFILE) that is linked into place only once complete,
/// so a crash never leaves an empty or half-written session file (§1.1: a session
/// file exists only once its first entry is written). Fails with EEXIST if `name`
/// exists. Where O_TMPFILE is unsupported, a dot-named temporary file (not `*.jsonl`,
/// so readers ignore it) is written, hard-linked into place, and removed.
fn publish_new_file(dir: &open::Dir, name: &str, bytes: &[u8], durable: bool) -> Result<()> {
    let path = dir.path().join(name);
    let write = |file: &std::fs::File| -> Result<()> {
        session::write_all_or_nothing(file, 0, bytes)?;
        if durable {
            durability::fdatasync(file).map_err(|e| Error::io("fdatasync", &e))?;
        }
        Ok(())
    };
    match dir.tmpfile() {
        Ok(file) => {
            write(&file)?;
            dir.link_as(&file, name)
                .map_err(|e| Error::io(path.display(), &e))?;
        }
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            let tmp = format!(".{name}.{}.tmp", std::process::id());
            let (file, _) = dir
                .open_file_with(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600)
                .map_err(|e| Error::io(dir.path().join(&tmp).display(), &e))?;
            let result = write(&file).and_then(|_| {
                dir.link(&tmp, name)
                    .map_err(|e| Error::io(path.display(), &e))
            });
            let _ = dir.unlink(&tmp);
            result?;
        }
        Err(e) => return Err(Error::io(dir.path().display(), &e)),
    }
    if durable {
        // The new name must survive power loss too.
        let _ = dir.sync();
    }
    Ok(())
}
