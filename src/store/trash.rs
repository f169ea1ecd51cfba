//! The trash (§6): a deleted session's file moves to
//! `<store>/.trash/<namespace>/<dir>.jsonl.deleted-<stamp>` and back, each way with one
//! `rename(2)` inside the store followed by an `fsync` of both folders. A rename is
//! atomic, so a crash at any point leaves the file in exactly one of the two places;
//! its trashed name alone says where it came from and when it left.

use super::lock::FileLock;
use super::session::Session;
use super::{Store, layout, naming, private_dir};
use crate::error::{Error, Result};
use chrono::{DateTime, Utc};
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One session file in the trash.
#[derive(Debug, Clone)]
pub struct Trashed {
    pub namespace: String,
    pub dir: String,
    pub deleted_at: DateTime<Utc>,
    /// The trashed file.
    pub path: PathBuf,
    pub size: u64,
}

impl Trashed {
    pub fn session_id(&self) -> &str {
        naming::session_id_of_dir(&self.dir)
    }

    /// The trashed file read as a session (for its header and title; no index cache).
    pub fn session(&self) -> Session {
        Session::new(
            self.namespace.clone(),
            self.dir.clone(),
            self.path.clone(),
            None,
        )
    }
}

fn cpath(p: &Path) -> Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::invalid("path contains NUL"))
}

/// `rename(2)` that never replaces an existing `to` (EEXIST instead). Where the
/// filesystem lacks RENAME_NOREPLACE, a check then a plain rename (still one rename:
/// never a copy, never a link plus unlink that a crash could leave in both places).
fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    let (f, t) = (cpath(from)?, cpath(to)?);
    // SAFETY: valid C strings; renameat2 has no memory effects.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EEXIST) => Err(exists(to)),
        Some(libc::EINVAL | libc::ENOSYS) => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(exists(to));
            }
            std::fs::rename(from, to).map_err(|e| Error::io(from.display(), &e))
        }
        _ => Err(Error::io(from.display(), &e)),
    }
}

fn exists(to: &Path) -> Error {
    Error::new(
        libc::EEXIST,
        format!(
            "{} already exists; refusing to overwrite it (move it away first)",
            to.display()
        ),
    )
}

/// Makes a folder's entries durable: after a rename, both folders must be synced for
/// the move to survive power loss.
fn sync_dir(dir: &Path) -> Result<()> {
    let d = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| Error::io(dir.display(), &e))?;
    d.sync_all().map_err(|e| Error::io(dir.display(), &e))
}

/// A real folder (not a link to one), so a rename cannot leave the store.
fn real_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        _ => Err(Error::not_found(format!(
            "{} is not a folder",
            dir.display()
        ))),
    }
}

fn check_names(ns: &str, dir: &str) -> Result<()> {
    if !layout::is_plain_name(ns) || ns.starts_with('.') || !layout::is_plain_name(dir) {
        return Err(Error::not_found(format!("no session {ns}/{dir}")));
    }
    Ok(())
}

impl Store {
    /// Moves session `ns/dir` to the trash. The namespace folder goes too when this was
    /// its last session (and nothing else is in it).
    pub fn trash_session(&self, ns: &str, dir: &str) -> Result<Trashed> {
        check_names(ns, dir)?;
        let ns_path = layout::namespace_path(&self.root, ns);
        real_dir(&ns_path)?;
        let from = self.session_path(ns, dir);
        // The lock waits for an append in progress (ours or another process's), so
        // the move never splits one; O_NOFOLLOW: a link in the store is not a session.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&from)
            .map_err(|_| Error::not_found(format!("no session {ns}/{dir}")))?;
        let meta = file.metadata().map_err(|e| Error::io(from.display(), &e))?;
        if !meta.is_file() {
            return Err(Error::not_found(format!("no session {ns}/{dir}")));
        }
        let _lock = FileLock::exclusive(&file)?;

        let trash = layout::trash_dir(&self.root);
        let trash_ns = layout::trash_namespace(&self.root, ns);
        let created = std::fs::symlink_metadata(&trash_ns).is_err();
        private_dir(&trash)?;
        private_dir(&trash_ns)?;
        if created {
            // The new folders' own entries must be durable before a file moves in.
            sync_dir(&trash)?;
            sync_dir(&self.root)?;
        }
        let deleted_at = Utc::now();
        let to = trash_ns.join(layout::trashed_file_name(dir, &naming::stamp(deleted_at)));
        rename_noreplace(&from, &to)?;
        if std::env::var_os("FEN_FS_TEST_KILL_AFTER_TRASH_RENAME").is_some() {
            // Tests only: die as `kill -9` would, between the move and its fsyncs.
            // SAFETY: signalling ourselves.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
        self.forget(ns, dir);
        sync_dir(&trash_ns)?;
        sync_dir(&ns_path)?;
        drop(_lock);

        if self.session_dirs(ns).is_ok_and(|d| d.is_empty())
            && std::fs::remove_dir(&ns_path).is_ok()
        {
            let _ = sync_dir(&self.root);
        }
        Ok(Trashed {
            namespace: ns.to_string(),
            dir: dir.to_string(),
            deleted_at,
            path: to,
            size: meta.len(),
        })
    }

    /// Drops the in-memory state of `ns/dir` (its file just left).
    fn forget(&self, ns: &str, dir: &str) {
        self.sessions
            .lock()
            .unwrap()
            .remove(&(ns.to_string(), dir.to_string()));
    }

    /// Everything in the trash, most recently deleted first.
    pub fn trashed(&self) -> Result<Vec<Trashed>> {
        let trash = layout::trash_dir(&self.root);
        let mut out = Vec::new();
        let rd = match std::fs::read_dir(&trash) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(Error::io(trash.display(), &e)),
        };
        for ns_entry in rd.flatten() {
            let Some(ns) = ns_entry.file_name().to_str().map(String::from) else {
                continue;
            };
            if !ns_entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(files) = std::fs::read_dir(ns_entry.path()) else {
                continue;
            };
            for f in files.flatten() {
                let name = f.file_name();
                let Some((dir, stamp)) = name.to_str().and_then(layout::parse_trashed_file_name)
                else {
                    continue;
                };
                let (Some(deleted_at), Ok(meta)) = (naming::parse_stamp(stamp), f.metadata())
                else {
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                out.push(Trashed {
                    namespace: ns.clone(),
                    dir: dir.to_string(),
                    deleted_at,
                    path: f.path(),
                    size: meta.len(),
                });
            }
        }
        out.sort_by(|a, b| {
            b.deleted_at
                .cmp(&a.deleted_at)
                .then_with(|| a.dir.cmp(&b.dir))
        });
        Ok(out)
    }

    /// A trashed session named by id, unique prefix of an id (or of its folder name),
    /// or the trashed file's path. Deleted more than once (restored, deleted again
    /// and a copy put back meanwhile): the latest deletion.
    pub fn resolve_trashed(&self, spec: &str) -> Result<Trashed> {
        let all = self.trashed()?;
        if spec.contains('/') {
            let want = std::fs::canonicalize(spec).map_err(|e| Error::io(spec, &e))?;
            return all
                .into_iter()
                .find(|t| std::fs::canonicalize(&t.path).is_ok_and(|p| p == want))
                .ok_or_else(|| Error::not_found(format!("{spec} is not in the trash")));
        }
        if let Some(t) = all.iter().find(|t| t.session_id() == spec || t.dir == spec) {
            return Ok(t.clone());
        }
        let matches: Vec<&Trashed> = all
            .iter()
            .filter(|t| t.session_id().starts_with(spec) || t.dir.starts_with(spec))
            .collect();
        let first = matches
            .first()
            .ok_or_else(|| Error::not_found(format!("no trashed session matches {spec}")))?;
        if matches
            .iter()
            .any(|t| (&t.namespace, &t.dir) != (&first.namespace, &first.dir))
        {
            return Err(Error::invalid(format!(
                "{spec} matches several trashed sessions; give more of the id"
            )));
        }
        Ok((*first).clone())
    }

    /// Puts a trashed session back under its old name; refuses (EEXIST) when that
    /// name, or a chosen session-id, is taken meanwhile. Returns the restored path.
    pub fn restore(&self, t: &Trashed) -> Result<PathBuf> {
        check_names(&t.namespace, &t.dir)?;
        let ns_path = layout::namespace_path(&self.root, &t.namespace);
        let to = self.session_path(&t.namespace, &t.dir);
        // Session-ids are unique in the store (§4): the check and the move happen
        // under the same claim as creating a named session.
        let _claim = self.claim_session_ids()?;
        if let Some(other) = self.find_by_session_id(t.session_id())?
            && other.path != to
        {
            return Err(Error::new(
                libc::EEXIST,
                format!(
                    "session-id {} is in use by {}/{}; not restored",
                    t.session_id(),
                    other.namespace,
                    other.dir
                ),
            ));
        }
        let created = std::fs::symlink_metadata(&ns_path).is_err();
        private_dir(&ns_path)?;
        if created {
            sync_dir(&self.root)?;
        }
        rename_noreplace(&t.path, &to)?;
        self.forget(&t.namespace, &t.dir);
        let trash_ns = layout::trash_namespace(&self.root, &t.namespace);
        sync_dir(&ns_path)?;
        sync_dir(&trash_ns)?;
        // Best effort: an empty namespace folder in the trash is only clutter.
        let _ = std::fs::remove_dir(&trash_ns);
        Ok(to)
    }

    /// Removes a trashed file for good (and its persisted index, if no live session
    /// of that name needs it).
    pub fn purge(&self, t: &Trashed) -> Result<()> {
        match std::fs::symlink_metadata(&t.path) {
            Ok(m) if m.is_file() => {}
            _ => return Err(Error::not_found(format!("{} is gone", t.path.display()))),
        }
        std::fs::remove_file(&t.path).map_err(|e| Error::io(t.path.display(), &e))?;
        let trash_ns = layout::trash_namespace(&self.root, &t.namespace);
        sync_dir(&trash_ns)?;
        let _ = std::fs::remove_dir(&trash_ns);
        if std::fs::symlink_metadata(self.session_path(&t.namespace, &t.dir)).is_err() {
            let cache = layout::session_index_cache(&self.root, &t.namespace, &t.dir);
            let _ = std::fs::remove_file(cache.path());
        }
        Ok(())
    }

    /// Purges every trashed file deleted before `cutoff` (all of them with `None`);
    /// returns what was removed.
    pub fn empty_trash(&self, cutoff: Option<DateTime<Utc>>) -> Result<Vec<Trashed>> {
        let mut out = Vec::new();
        for t in self.trashed()? {
            if cutoff.is_none_or(|c| t.deleted_at < c) {
                self.purge(&t)?;
                out.push(t);
            }
        }
        Ok(out)
    }
}
