//! Zed as a kind of agent: its data folder, whose agent threads are rows of
//! `threads/threads.db`: units. Zed opens a thread from its agent panel's history;
//! it has no command that resumes one.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::AgentKind;
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Zed;

impl AgentKind for Zed {
    fn agent(&self) -> Agent {
        Agent::Zed
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x08, 0x4c, 0xcf)
    }

    fn default_root(&self) -> Option<PathBuf> {
        super::default_root()
    }

    fn root_hint(&self) -> &'static str {
        "$FLATPAK_XDG_DATA_HOME/zed, else $XDG_DATA_HOME/zed, else ~/.local/share/zed"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::ZedReader::new(file_name))
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::ZedUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::ZedUsage::new(facts)))
    }
}
