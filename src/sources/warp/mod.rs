//! Warp's agent conversations (warpdotdev/warp, whose client is public source), built
//! from that source only (no build of Warp installs here). Warp keeps them in its
//! state database, `<state>/warp.sqlite` with `<state>` `$XDG_STATE_HOME/warp-terminal`,
//! else `~/.local/state/warp-terminal` (`crates/warp_core/src/paths.rs` `state_dir`,
//! `app/src/persistence/sqlite.rs`): one conversation per `agent_conversations` row,
//! its content in the protobuf tasks of `agent_tasks` (`task.rs`), read as units
//! (`db_units.rs`), each dumped by `db.rs`.

mod db;
pub mod kind;
pub mod neutral;
pub mod reader;
pub mod task;
pub mod usage;

pub use db::WarpRows;
pub use neutral::to_neutral;
pub use reader::WarpReader;

use super::db_units::DbUnits;
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use std::path::{Path, PathBuf};

/// The database in the state folder.
pub fn database(root: &Path) -> PathBuf {
    root.join("warp.sqlite")
}

/// The state folder Warp itself would use on Linux.
pub fn default_root() -> Option<PathBuf> {
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").map(|h| h.join(".local/state")))
        .map(|d| d.join("warp-terminal"))
}

/// Whether `root` (a state folder) holds Warp's database.
pub fn present(root: &Path) -> bool {
    std::fs::symlink_metadata(database(root)).is_ok_and(|m| m.is_file())
}

/// Warp's conversations as units.
pub struct WarpUnits {
    db: DbUnits<WarpRows>,
}

impl WarpUnits {
    pub fn new(root: &Path) -> Self {
        WarpUnits {
            db: DbUnits::new(&database(root), WarpRows),
        }
    }
}

impl UnitSource for WarpUnits {
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
