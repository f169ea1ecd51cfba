//! Roo Code as a kind of agent: its folder in VS Code's global storage, whose tasks
//! are units of whole JSON files read as Cline's.

use crate::agent::Agent;
use crate::sources::cline::{ClineReader, TaskUnits, usage::ClineUsage};
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::AgentKind;
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Roo;

impl AgentKind for Roo {
    fn agent(&self) -> Agent {
        Agent::Roo
    }

    fn display_name(&self) -> &'static str {
        "Roo Code"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x8e, 0x44, 0xad)
    }

    fn default_root(&self) -> Option<PathBuf> {
        crate::sources::vscdb::user_dir("Code")
            .map(|u| u.join("globalStorage").join(super::STORAGE))
    }

    fn root_hint(&self) -> &'static str {
        "VS Code's globalStorage/rooveterinaryinc.roo-cline"
    }

    fn present(&self, root: &Path) -> bool {
        crate::sources::cline::present(&super::ROO, root)
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(ClineReader::roo())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        crate::sources::cline::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(TaskUnits::new(super::ROO, root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(ClineUsage::new("roo", facts)))
    }
}
