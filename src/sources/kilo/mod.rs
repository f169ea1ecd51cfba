//! Kilo Code CLI (`@kilocode/cli`), a fork of OpenCode that keeps its sessions exactly
//! as OpenCode 1.2+ does: SQLite `session`/`message`/`part` rows (JSON `data` columns)
//! in `kilo.db` in its data folder, and the JSON tree under `storage/` before that.
//! Only the names differ (the folder, the database files, `$KILO_DB`), so Kilo is
//! OpenCode's units, reader, conversion and usage over [`KILO`]'s names: nothing of
//! OpenCode's rules is copied here.
//!
//! Checked against Kilo 7.7.7 (`tests/agent_kilo.rs`): its tables are OpenCode 1.18's
//! (plus tables of its own that hold no conversation), and a session resumes with
//! what OpenCode's rules give.

pub mod kind;

use super::foreign::ForeignReader;
use super::opencode::{Flavor, OpencodeReader, OpencodeUnits, generation_of};
use super::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::Path;

pub use super::opencode::to_neutral;

/// Kilo's names for OpenCode's store.
pub const KILO: Flavor = Flavor {
    name: "kilo",
    db_prefix: "kilo",
    db_env: "KILO_DB",
};

/// Whether `root` holds Kilo's sessions: a database there (or `$KILO_DB`), or the
/// `storage/session/` folder of the JSON files.
pub fn present(root: &Path) -> bool {
    !super::opencode::databases_of(&KILO, root).is_empty()
        || std::fs::symlink_metadata(root.join("storage/session")).is_ok_and(|m| m.is_dir())
}

/// Kilo's sessions as units (`<database>/<session id>`, or a `storage/` session file).
pub fn units(root: &Path) -> Units {
    Units::new(Box::new(OpencodeUnits::of(KILO, root)))
}

/// A fresh reader of one unit's dump: OpenCode's, by the generation its key names.
pub fn reader_for(file_name: &str) -> Box<dyn ForeignReader> {
    Box::new(OpencodeReader::new(generation_of(file_name)))
}

/// A fresh reader of one unit's token usage: OpenCode's (each assistant message's
/// `tokens` and `cost`), keyed by Kilo's message ids.
pub fn usage_reader(facts: UnitFacts) -> Box<dyn UsageReader> {
    Box::new(super::opencode::usage::OpencodeUsage::of(&KILO, facts))
}
