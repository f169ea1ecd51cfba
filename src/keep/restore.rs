//! `fen-fs restore` of a kept session whose source is gone: its kept bytes written
//! back, as a new file, where its agent finds it (so the agent's own resume works
//! again); and `fen-fs rm` of such a session: its kept copy moved to the trash, where
//! `trash list` shows it, `trash empty` removes it and `restore` brings it back.

use crate::error::{Error, Result};
use crate::sources::SessionSource;
use crate::sources::foreign_source::ForeignSource;
use crate::store::kept::{self, KeptRecord, KeptStore};
use crate::store::layout;
use crate::store::naming;
use crate::store::open::Dir;
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A kept session named on the command line: its source (over the copies), namespace
/// and folder.
pub struct KeptSession {
    pub source: Arc<ForeignSource>,
    pub ns: String,
    pub dir: String,
}

/// The kept session `spec` names (id, unique prefix of one, or folder name) among
/// the sources over kept copies; `None` when none does. An id names the current
/// copy before its earlier versions.
pub fn find(sources: &[Arc<ForeignSource>], spec: &str) -> Result<Option<KeptSession>> {
    let mut exact = Vec::new();
    let mut prefix = Vec::new();
    for s in sources.iter().filter(|s| s.kept_copies().is_some()) {
        for ns in s.namespaces()? {
            for l in s.listings(&ns)? {
                let hit = KeptSession {
                    source: s.clone(),
                    ns: ns.clone(),
                    dir: l.dir.clone(),
                };
                if l.dir == spec || l.id == spec {
                    exact.push((l.version, hit));
                } else if l.id.starts_with(spec) || l.dir.starts_with(spec) {
                    prefix.push((l.version, hit));
                }
            }
        }
    }
    let pick = |mut all: Vec<(Option<u32>, KeptSession)>| -> Result<Option<KeptSession>> {
        if all.len() > 1 {
            // The session itself, not its earlier versions (named by `<dir>.v<N>`).
            all.retain(|(v, _)| v.is_none());
        }
        match all.len() {
            0 | 1 => Ok(all.pop().map(|(_, k)| k)),
            n => Err(Error::invalid(format!(
                "{spec} matches {n} kept sessions; give more of the id"
            ))),
        }
    };
    if !exact.is_empty() {
        return pick(exact);
    }
    pick(prefix)
}

/// Why `spec` cannot be restored although a copy of it is kept: its source is
/// there (a second restore, or a session never deleted). `None` when no copy matches.
pub fn why_not(root: &Path, spec: &str) -> Option<Error> {
    let store = KeptStore::open(root, false).ok()??;
    let hit = store.agents().into_iter().find_map(|a| {
        store.records(&a).into_iter().find(|(_, r)| {
            r.id == spec
                || r.id.starts_with(spec)
                || r.facts
                    .dir
                    .as_deref()
                    .is_some_and(|d| d == spec || d.starts_with(spec))
        })
    })?;
    let r = hit.1;
    std::fs::symlink_metadata(&r.source).is_ok().then(|| {
        Error::new(
            libc::EEXIST,
            format!(
                "{} is there already; not overwriting it (its session is not gone, so there is nothing to restore)",
                r.source.display()
            ),
        )
    })
}

/// Writes kept session `k`'s bytes back where its agent keeps it (a new file: never
/// over an existing one), read back before it gets its name. Returns the file and
/// the command that resumes it.
pub fn restore(k: &KeptSession) -> Result<(PathBuf, Option<String>)> {
    let (key, f) = k
        .source
        .kept_source_of(&k.ns, &k.dir)
        .ok_or_else(|| Error::not_found(format!("no kept session {}", k.dir)))?;
    let r = &f.record;
    // Its agent's resume command is given only for what the agent resumes (not a
    // subagent's transcript).
    let resumable = k.source.kept_resumable(&k.ns, &k.dir);
    if f.version.is_some() {
        return Err(Error::invalid(format!(
            "{} is an earlier version of a session; restore writes back a session whose \
             source is gone (its bytes: fen-fs show {} --view transcript)",
            k.dir, k.dir
        )));
    }
    if r.unit {
        return Err(Error::invalid(format!(
            "{} was kept from {}'s database as the lines of its rows; fen-fs cannot write \
             rows back (its lines: fen-fs show {} --view transcript)",
            k.dir, r.agent, k.dir
        )));
    }
    if let Some(why) = &f.damaged {
        return Err(Error::new(
            libc::EIO,
            format!(
                "the kept copy of {} is damaged ({why}); see fen-fs fsck",
                k.dir
            ),
        ));
    }
    if !f.source_deleted || std::fs::symlink_metadata(&r.source).is_ok() {
        return Err(Error::new(
            libc::EEXIST,
            format!(
                "{} is there already; not overwriting it (the session is not gone)",
                r.source.display()
            ),
        ));
    }
    let (file, stamp) = k.source.open_to_keep(&key)?;
    // Read by offset: the descriptor may be shared with the copy's other readers.
    let mut bytes = vec![0u8; stamp.size as usize];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0)
        .map_err(|e| Error::io("the kept copy", &e))?;
    if bytes.is_empty() {
        return Err(Error::new(
            libc::EIO,
            format!(
                "the kept copy of {} holds no bytes; nothing to restore",
                k.dir
            ),
        ));
    }
    let rel = r.source.strip_prefix(&r.source_root).map_err(|_| {
        Error::invalid(format!(
            "{} is not under its agent's root {}",
            r.source.display(),
            r.source_root.display()
        ))
    })?;
    let mut folders: Vec<String> = rel
        .parent()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    folders.retain(|f| !f.is_empty());
    let name = rel
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::invalid(format!("{} names no file", r.source.display())))?;
    if folders.iter().any(|f| f == ".." || f == ".") {
        return Err(Error::invalid(format!(
            "{} is not a plain path",
            r.source.display()
        )));
    }
    // The agent's root itself may be gone too (a whole folder deleted).
    if std::fs::symlink_metadata(&r.source_root).is_err() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&r.source_root)
            .map_err(|e| Error::io(r.source_root.display(), &e))?;
    }
    let path =
        crate::resume::publish::publish_exact(&r.source_root, &folders, name, &bytes, |back| {
            if back == bytes.as_slice() {
                Ok(())
            } else {
                Err(Error::new(
                    libc::EIO,
                    "the restored file did not read back as kept",
                ))
            }
        })?;
    let command = crate::agent::Agent::from_kind(&r.agent)
        .filter(|_| resumable)
        .and_then(|a| crate::resume::command::ResumeCommand::of(a, &r.id, r.facts.cwd.as_deref()))
        .map(|c| c.shell());
    if let Some(c) = k.source.kept_copies() {
        c.invalidate();
    }
    Ok((path, command))
}

/// Moves kept session `k`'s copy (every version of it) into the trash. Only a copy
/// whose source is gone: while it is there, the copy is the keeper's.
pub fn trash(root: &Path, k: &KeptSession) -> Result<TrashedCopy> {
    let (_, f) = k
        .source
        .kept_source_of(&k.ns, &k.dir)
        .ok_or_else(|| Error::not_found(format!("no kept session {}", k.dir)))?;
    if !f.source_deleted {
        return Err(Error::new(
            libc::EBUSY,
            format!(
                "{} is an earlier version of a session that is still at {}; it is kept with \
                 that session's copy",
                k.dir,
                f.record.source.display()
            ),
        ));
    }
    let copies = k
        .source
        .kept_copies()
        .ok_or_else(|| Error::not_found(format!("no kept session {}", k.dir)))?;
    let name = copies
        .folder_of(&f)
        .ok_or_else(|| Error::not_found(format!("no kept copy of {}", k.dir)))?;
    let store = KeptStore::open(root, false)?
        .ok_or_else(|| Error::not_found("this store keeps no copies".to_string()))?;
    let trash_root = Dir::open_root(root)
        .and_then(|d| d.create_dir(layout::TRASH_DIR))
        .and_then(|d| d.create_dir(layout::KEPT_DIR))
        .map_err(|e| Error::io(layout::trash_kept_dir(root).display(), &e))?;
    let agent = f.record.agent.clone();
    let moved = store.trash(&agent, &name, &trash_root)?;
    copies.invalidate();
    let size = trash_root
        .open_dir(&agent)
        .map(|d| kept::folder_size(&d, &moved))
        .unwrap_or(0);
    Ok(TrashedCopy {
        agent,
        name: moved.clone(),
        deleted_at: Utc::now(),
        path: layout::trash_kept_dir(root)
            .join(&f.record.agent)
            .join(&moved),
        size,
        record: f.record.clone(),
    })
}

/// A kept copy in the trash.
#[derive(Debug, Clone)]
pub struct TrashedCopy {
    pub agent: String,
    /// Its folder's name in the trash (`<copy>.deleted-<stamp>`).
    pub name: String,
    pub deleted_at: DateTime<Utc>,
    pub path: PathBuf,
    pub size: u64,
    pub record: KeptRecord,
}

impl TrashedCopy {
    pub fn dir(&self) -> String {
        self.record
            .facts
            .dir
            .clone()
            .unwrap_or_else(|| self.name.clone())
    }
}

/// Every kept copy in the trash, most recently deleted first.
pub fn trashed(root: &Path) -> Vec<TrashedCopy> {
    let mut out = Vec::new();
    let Ok(trash) = Dir::open_root(root)
        .and_then(|d| d.open_dir(layout::TRASH_DIR))
        .and_then(|d| d.open_dir(layout::KEPT_DIR))
    else {
        return out;
    };
    for (agent, kind) in trash.read_dir().unwrap_or_default() {
        let Some(agent) = agent.to_str().filter(|_| kind.is_dir()) else {
            continue;
        };
        let Ok(d) = trash.open_dir(agent) else {
            continue;
        };
        for (name, kind) in d.read_dir().unwrap_or_default() {
            let Some(name) = name.to_str().filter(|_| kind.is_dir()) else {
                continue;
            };
            let Some((_, stamp)) = layout::parse_trashed_copy_name(name) else {
                continue;
            };
            let (Some(deleted_at), Some(record)) = (
                naming::parse_stamp(stamp),
                d.open_dir(name).ok().as_ref().and_then(kept::read_record),
            ) else {
                continue;
            };
            out.push(TrashedCopy {
                agent: agent.to_string(),
                name: name.to_string(),
                deleted_at,
                path: layout::trash_kept_dir(root).join(agent).join(name),
                size: kept::folder_size(&d, name),
                record,
            });
        }
    }
    out.sort_by(|a, b| {
        b.deleted_at
            .cmp(&a.deleted_at)
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

/// The trashed copy `spec` names (id, unique prefix, or folder name).
pub fn find_trashed(root: &Path, spec: &str) -> Result<Option<TrashedCopy>> {
    let all = trashed(root);
    if let Some(t) = all.iter().find(|t| t.record.id == spec || t.dir() == spec) {
        return Ok(Some(t.clone()));
    }
    let matches: Vec<&TrashedCopy> = all
        .iter()
        .filter(|t| t.record.id.starts_with(spec) || t.dir().starts_with(spec))
        .collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        _ => Err(Error::invalid(format!(
            "{spec} matches several trashed kept sessions; give more of the id"
        ))),
    }
}

/// Puts a trashed copy back among the kept copies (under its old name).
pub fn restore_trashed(root: &Path, t: &TrashedCopy) -> Result<PathBuf> {
    let (copy, _) = layout::parse_trashed_copy_name(&t.name)
        .ok_or_else(|| Error::invalid(format!("{} is not a trashed copy", t.name)))?;
    let store = KeptStore::open(root, true)?.expect("created");
    let to = store.agent_dir(&t.agent)?;
    let from = Dir::open_root(root)
        .and_then(|d| d.walk(&[layout::TRASH_DIR, layout::KEPT_DIR, &t.agent]))
        .map_err(|e| Error::io(t.path.display(), &e))?;
    kept::rename_between(&from, &t.name, &to, copy).map_err(|e| match e.raw_os_error() {
        Some(libc::EEXIST) => Error::new(
            libc::EEXIST,
            format!("a kept copy named {copy} is there already; not replacing it"),
        ),
        _ => Error::io(t.path.display(), &e),
    })?;
    let _ = to.sync();
    let _ = from.sync();
    Ok(store.path().join(&t.agent).join(copy))
}

/// Removes trashed copies for good (those deleted before `cutoff`, if given).
pub fn empty_trashed(root: &Path, cutoff: Option<DateTime<Utc>>) -> Vec<TrashedCopy> {
    let mut removed = Vec::new();
    for t in trashed(root) {
        if cutoff.is_some_and(|c| t.deleted_at >= c) {
            continue;
        }
        let Ok(d) = Dir::open_root(root)
            .and_then(|d| d.walk(&[layout::TRASH_DIR, layout::KEPT_DIR, &t.agent]))
        else {
            continue;
        };
        kept::remove_tree(&d, &t.name);
        if d.stat(&t.name).is_err() {
            removed.push(t);
        }
    }
    removed
}
