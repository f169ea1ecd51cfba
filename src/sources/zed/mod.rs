//! Zed's agent threads (zed-industries/zed `crates/agent`), built from its public
//! source only (no build of Zed installs here). Zed keeps them in
//! `<data>/threads/threads.db`, `<data>` being `$FLATPAK_XDG_DATA_HOME/zed`, else
//! `$XDG_DATA_HOME/zed`, else `~/.local/share/zed` (`crates/paths`): one row per
//! thread, read as units (`db_units.rs`), each dumped by `db.rs`.
//!
//! Not read: the first agent's LMDB store (`threads/threads-db.1.mdb`, replaced by
//! this database) and the text threads of the older assistant
//! (`conversations/*.zed.json`), which are not agent sessions.

mod db;
pub mod kind;
pub mod neutral;
pub mod reader;
pub mod usage;

pub use db::{CURRENT_VERSION, ZedRows, ordered_paths};
pub use neutral::to_neutral;
pub use reader::ZedReader;

use super::db_units::DbUnits;
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use std::path::{Path, PathBuf};

/// The database under the data folder.
pub fn database(root: &Path) -> PathBuf {
    root.join("threads").join("threads.db")
}

/// The data folder Zed itself would use on Linux.
pub fn default_root() -> Option<PathBuf> {
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("FLATPAK_XDG_DATA_HOME")
        .or_else(|| env("XDG_DATA_HOME"))
        .or_else(|| env("HOME").map(|h| h.join(".local/share")))
        .map(|d| d.join("zed"))
}

/// Whether `root` (a data folder) holds Zed's threads database.
pub fn present(root: &Path) -> bool {
    std::fs::symlink_metadata(database(root)).is_ok_and(|m| m.is_file())
}

/// Zed's threads as units.
pub struct ZedUnits {
    db: DbUnits<ZedRows>,
}

impl ZedUnits {
    pub fn new(root: &Path) -> Self {
        ZedUnits {
            db: DbUnits::new(&database(root), ZedRows),
        }
    }
}

impl UnitSource for ZedUnits {
    fn changed(&self) -> bool {
        self.db.changed()
    }

    fn list(&self) -> Vec<UnitInfo> {
        self.db.list()
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        self.db.signature(key)
    }

    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        self.db.listed_signature(key)
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        self.db.dump(key)
    }

    fn source_path(&self, _key: &Path) -> PathBuf {
        self.db.path().to_path_buf()
    }
}
