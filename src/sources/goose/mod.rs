//! Goose (block/goose) sessions, built from its public source only (no installable
//! build here). Goose keeps its data folder at `$GOOSE_PATH_ROOT/data` (an absolute
//! `GOOSE_PATH_ROOT`), else `$XDG_DATA_HOME/goose`, else `~/.local/share/goose`
//! (`crates/goose/src/config/paths.rs`); its sessions are under `sessions/`:
//!
//! - since 1.10, rows of `sessions/sessions.db` (SQLite: `sessions`, `messages`,
//!   `usage_ledger`), each session a unit `<database>/<id>` dumped by `db.rs`;
//! - before, one JSONL file per session, `sessions/<id>.jsonl` (a metadata line, then
//!   one message per line). Goose imports those into the database when it creates it
//!   and leaves the files: a file is shown only when no database row has its id.
//!
//! Both read with one reader (`reader.rs`), since a dump has the files' shape.

mod db;
pub mod kind;
pub mod neutral;
pub mod reader;
pub mod usage;

pub use db::{GooseRows, KNOWN_SCHEMA_VERSION};
pub use neutral::to_neutral;
pub use reader::GooseReader;

use super::db_units::DbUnits;
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use crate::store::index::FileStamp;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The database's name in the sessions folder.
pub const DB_NAME: &str = "sessions.db";

/// The data folder Goose itself would use.
pub fn default_root() -> Option<PathBuf> {
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(root) = env("GOOSE_PATH_ROOT").filter(|p| p.is_absolute()) {
        return Some(root.join("data"));
    }
    env("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").map(|h| h.join(".local/share")))
        .map(|d| d.join("goose"))
}

/// Whether `root` (a data folder) holds Goose sessions.
pub fn present(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join("sessions")).is_ok_and(|m| m.is_dir())
}

/// The sessions folder of a data folder.
pub fn sessions_dir(root: &Path) -> PathBuf {
    root.join("sessions")
}

/// A legacy session file's name: `<id>.jsonl`.
pub fn is_legacy_name(name: &str) -> bool {
    name.len() > ".jsonl".len() && name.ends_with(".jsonl")
}

fn stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

fn file_signature(s: FileStamp) -> Signature {
    Signature {
        hash: crate::store::atomic::checksum(&[
            &s.dev.to_le_bytes(),
            &s.ino.to_le_bytes(),
            &s.size.to_le_bytes(),
            &s.mtime_ns.to_le_bytes(),
            &s.ctime_ns.to_le_bytes(),
        ]),
        updated_ms: (s.mtime_ns / 1_000_000) as i64,
    }
}

/// Goose's data folder as units.
pub struct GooseUnits {
    root: PathBuf,
    db: DbUnits<GooseRows>,
}

impl GooseUnits {
    pub fn new(root: &Path) -> Self {
        GooseUnits {
            root: root.to_path_buf(),
            db: DbUnits::new(&sessions_dir(root).join(DB_NAME), GooseRows),
        }
    }

    /// The legacy session files, sorted by name.
    fn legacy_files(&self) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(sessions_dir(&self.root)) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter(|e| is_legacy_name(&e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect();
        out.sort();
        out
    }

    fn is_legacy(&self, key: &Path) -> bool {
        key.parent() == Some(sessions_dir(&self.root).as_path())
            && key
                .file_name()
                .is_some_and(|n| is_legacy_name(&n.to_string_lossy()))
    }
}

impl UnitSource for GooseUnits {
    /// The sessions folder (the database, its `-wal`, the legacy files) and the root.
    fn watched(&self) -> Vec<PathBuf> {
        vec![sessions_dir(&self.root), self.root.clone()]
    }

    fn list(&self) -> Vec<UnitInfo> {
        let mut out = self.db.list();
        let in_db: HashSet<String> = self.db.ids().into_iter().collect();
        for file in self.legacy_files() {
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if in_db.contains(&stem) {
                continue;
            }
            out.push(UnitInfo {
                key: file,
                cwd: None,
            });
        }
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        if self.is_legacy(key) {
            return stamp(key).map(file_signature);
        }
        self.db.signature(key)
    }

    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        if self.is_legacy(key) {
            return self.signature(key);
        }
        self.db.listed_signature(key)
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        if self.is_legacy(key) {
            // The file's bytes as they are: it already has the dump's shape.
            let (file, meta) = crate::store::open::open_regular(key).ok()?;
            let before = FileStamp::of(&meta);
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            use std::io::Read;
            (&file).read_to_end(&mut bytes).ok()?;
            return Some(Dump {
                bytes,
                signature: file_signature(before),
                transient: false,
            });
        }
        self.db.dump(key)
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        if self.is_legacy(key) {
            return key.to_path_buf();
        }
        self.db.path().to_path_buf()
    }
}
