//! OpenCode as a kind of agent: its data folder (`$XDG_DATA_HOME/opencode`), whose
//! sessions are rows of its databases or JSON files of `storage/`: units.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, env_path, home, is_dir};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Opencode;

impl AgentKind for Opencode {
    fn agent(&self) -> Agent {
        Agent::Opencode
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x34, 0x49, 0x5e)
    }

    /// xdg-basedir: $XDG_DATA_HOME, else ~/.local/share, on every platform.
    fn default_root(&self) -> Option<PathBuf> {
        env_path(&["XDG_DATA_HOME"])
            .or_else(|| home().map(|h| h.join(".local/share")))
            .map(|d| d.join("opencode"))
    }

    fn root_hint(&self) -> &'static str {
        "$XDG_DATA_HOME/opencode, else ~/.local/share/opencode"
    }

    /// Its data folder (the databases and `storage/`), or a `$OPENCODE_DB` elsewhere.
    fn present(&self, root: &Path) -> bool {
        is_dir(root) || !super::databases(root).is_empty()
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::OpencodeReader::new(super::generation_of(file_name)))
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::OpencodeUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::OpencodeUsage::new(facts)))
    }
}
