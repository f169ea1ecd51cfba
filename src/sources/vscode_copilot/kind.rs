//! GitHub Copilot Chat in VS Code as a kind of agent: VS Code's user folder, whose
//! chat sessions are units (JSON documents and operation logs).

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::AgentKind;
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct VscodeCopilot;

impl AgentKind for VscodeCopilot {
    fn agent(&self) -> Agent {
        Agent::VscodeCopilot
    }

    fn display_name(&self) -> &'static str {
        "Copilot Chat (VS Code)"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x00, 0x7a, 0xcc)
    }

    fn default_root(&self) -> Option<PathBuf> {
        crate::sources::vscdb::user_dir("Code")
    }

    fn root_hint(&self) -> &'static str {
        "VS Code's user folder ($XDG_CONFIG_HOME/Code/User, else ~/.config/Code/User)"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::ChatReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::ChatUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::ChatUsage::new(facts)))
    }
}
