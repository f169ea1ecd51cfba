//! Warp as a kind of agent: its state folder, whose agent conversations are rows of
//! `warp.sqlite`: units. Warp reopens a conversation from its own history; it has no
//! command that resumes one.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::AgentKind;
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Warp;

impl AgentKind for Warp {
    fn agent(&self) -> Agent {
        Agent::Warp
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x01, 0xa4, 0xff)
    }

    fn default_root(&self) -> Option<PathBuf> {
        super::default_root()
    }

    fn root_hint(&self) -> &'static str {
        "$XDG_STATE_HOME/warp-terminal, else ~/.local/state/warp-terminal"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::WarpReader::new(file_name))
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::WarpUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::WarpUsage::new(facts)))
    }
}
