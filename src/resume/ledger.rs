//! What `fen-fs resume --in AGENT` made, in fen's cache: one JSON line per new
//! session, naming the source file with its size, mtime and a hash of its bytes, and
//! the session made from it. The same unchanged source continued in the same agent
//! at the same cwd again finds the session already made (if its file is still there)
//! instead of making a second one. Like every cache, it proves itself: a line counts
//! only while the source still has that size, mtime and hash and the target file
//! still exists. It lives in `<store>/.fen-cache/` (or `$XDG_CACHE_HOME/fen-fs/` when
//! there is no store), never in an agent's folder.

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::store::layout;
use crate::store::open::Dir;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A ledger larger than this is not read (it would take many thousand sessions).
const MAX_LEDGER_BYTES: u64 = 64 << 20;

/// A source file as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStamp {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: i128,
    /// FNV-1a (64 bits) of the whole file, hex.
    pub hash: String,
}

/// One session made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub source: SourceStamp,
    pub source_agent: Agent,
    pub source_id: String,
    pub agent: Agent,
    pub cwd: String,
    pub path: PathBuf,
    pub id: String,
    pub made_at: String,
}

/// The source file `path` as it is now.
pub fn stamp(path: &Path) -> Result<SourceStamp> {
    let (mut file, meta) = crate::store::open::open_regular(path)?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| Error::io(path.display(), &e))?;
        if n == 0 {
            break;
        }
        for &b in &buf[..n] {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Ok(SourceStamp {
        path: path.to_path_buf(),
        size: meta.len(),
        mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        hash: format!("{h:016x}"),
    })
}

/// Where the ledger is.
#[derive(Debug, Clone)]
pub enum Ledger {
    /// In the store's `.fen-cache` (the store root).
    Store(PathBuf),
    /// In this folder (the XDG cache's `fen-fs`), made when missing.
    Folder(PathBuf),
}

impl Ledger {
    /// In the store's `.fen-cache` when the store exists, else in the XDG cache.
    pub fn for_store(store_root: &Path) -> Ledger {
        if std::fs::symlink_metadata(store_root).is_ok_and(|m| m.is_dir()) {
            Ledger::Store(store_root.to_path_buf())
        } else {
            Ledger::Folder(layout::xdg_cache_dir())
        }
    }

    pub fn path(&self) -> PathBuf {
        match self {
            Ledger::Store(root) => layout::cache_dir(root).join(layout::RESUME_LEDGER),
            Ledger::Folder(dir) => dir.join(layout::RESUME_LEDGER),
        }
    }

    fn folder(&self, create: bool) -> std::io::Result<Dir> {
        match self {
            Ledger::Store(root) => {
                let root = Dir::open_root(root)?;
                if create {
                    root.create_dir(layout::CACHE_DIR)
                } else {
                    root.open_dir(layout::CACHE_DIR)
                }
            }
            Ledger::Folder(dir) => {
                if create {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(dir)?;
                }
                Dir::open_root(dir)
            }
        }
    }

    /// Every record, oldest first (unreadable lines skipped).
    pub fn records(&self) -> Vec<Record> {
        let Ok(bytes) = self
            .folder(false)
            .and_then(|d| d.read_file(layout::RESUME_LEDGER, MAX_LEDGER_BYTES))
        else {
            return Vec::new();
        };
        bytes
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect()
    }

    /// The session already made from `source` in `agent` at `cwd`, if its file is
    /// still there.
    pub fn find(&self, source: &SourceStamp, agent: Agent, cwd: &str) -> Option<Record> {
        self.records().into_iter().rev().find(|r| {
            r.source == *source
                && r.agent == agent
                && r.cwd == cwd
                && std::fs::symlink_metadata(&r.path).is_ok_and(|m| m.is_file())
        })
    }

    /// `find` for the source file at `path` as it is now, hashing it only when a
    /// record names it with its present size and mtime: a page that shows the
    /// commands of a session of hundreds of MB reads the ledger, not the session.
    pub fn find_for_path(&self, path: &Path, agent: Agent, cwd: &str) -> Option<Record> {
        let meta = std::fs::metadata(path).ok()?;
        let mtime_ns = meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128;
        let named = self.records().into_iter().any(|r| {
            r.source.path == path
                && r.source.size == meta.len()
                && r.source.mtime_ns == mtime_ns
                && r.agent == agent
                && r.cwd == cwd
        });
        if !named {
            return None;
        }
        self.find(&stamp(path).ok()?, agent, cwd)
    }

    /// The ledger taken for one run (find, write, add): an exclusive lock on its
    /// file, so that a second resume of the same source started meanwhile waits and
    /// then finds the session the first made. Released when the value drops.
    pub fn hold(&self) -> Result<crate::store::lock::HeldFile> {
        let dir = self
            .folder(true)
            .map_err(|e| Error::io(self.path().display(), &e))?;
        let (f, _) = dir
            .open_file_with(
                layout::RESUME_LEDGER,
                libc::O_RDWR | libc::O_APPEND | libc::O_CREAT,
                0o600,
            )
            .map_err(|e| Error::io(self.path().display(), &e))?;
        crate::store::lock::HeldFile::exclusive(f)
    }

    /// Adds `record` (one line, appended with one write).
    pub fn add(&self, record: &Record) -> Result<()> {
        let mut line = serde_json::to_string(record).expect("a record serializes");
        line.push('\n');
        let dir = self
            .folder(true)
            .map_err(|e| Error::io(self.path().display(), &e))?;
        let (mut f, _) = dir
            .open_file_with(
                layout::RESUME_LEDGER,
                libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT,
                0o600,
            )
            .map_err(|e| Error::io(self.path().display(), &e))?;
        use std::io::Write;
        f.write_all(line.as_bytes())
            .map_err(|e| Error::io(self.path().display(), &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_found_only_while_source_and_target_are_as_they_were() {
        let t = tempfile::tempdir().unwrap();
        let store = t.path().join("store");
        std::fs::create_dir(&store).unwrap();
        let src = t.path().join("src.jsonl");
        std::fs::write(&src, "one\n").unwrap();
        let target = t.path().join("made.jsonl");
        std::fs::write(&target, "x\n").unwrap();
        let ledger = Ledger::for_store(&store);
        assert!(ledger.path().starts_with(store.join(".fen-cache")));
        let s = stamp(&src).unwrap();
        let rec = Record {
            source: s.clone(),
            source_agent: Agent::Claude,
            source_id: "a".into(),
            agent: Agent::Codex,
            cwd: "/p".into(),
            path: target.clone(),
            id: "b".into(),
            made_at: "now".into(),
        };
        ledger.add(&rec).unwrap();
        assert_eq!(ledger.find(&s, Agent::Codex, "/p"), Some(rec.clone()));
        assert_eq!(
            ledger.find_for_path(&src, Agent::Codex, "/p"),
            Some(rec.clone())
        );
        assert_eq!(ledger.find_for_path(&src, Agent::Codex, "/q"), None);
        assert_eq!(ledger.find(&s, Agent::Pi, "/p"), None);
        assert_eq!(ledger.find(&s, Agent::Codex, "/q"), None);
        // The source grew: a new session is due.
        std::fs::write(&src, "one\ntwo\n").unwrap();
        assert_eq!(ledger.find(&stamp(&src).unwrap(), Agent::Codex, "/p"), None);
        // The target is gone: likewise.
        std::fs::remove_file(&target).unwrap();
        assert_eq!(ledger.find(&s, Agent::Codex, "/p"), None);
        assert_eq!(ledger.find_for_path(&src, Agent::Codex, "/p"), None);
        // The same bytes hash the same; different bytes do not.
        std::fs::write(&src, "one\n").unwrap();
        assert_eq!(stamp(&src).unwrap().hash, s.hash);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(ledger.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
