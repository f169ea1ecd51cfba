//! Cursor (the IDE) as a kind of agent: its user folder, whose composers are units
//! of its global `state.vscdb`.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::AgentKind;
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct CursorIde;

impl AgentKind for CursorIde {
    fn agent(&self) -> Agent {
        Agent::CursorIde
    }

    fn display_name(&self) -> &'static str {
        "Cursor (IDE)"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x2b, 0x2b, 0x2b)
    }

    fn default_root(&self) -> Option<PathBuf> {
        crate::sources::vscode_state::user_dir("Cursor")
    }

    fn root_hint(&self) -> &'static str {
        "Cursor's user folder ($XDG_CONFIG_HOME/Cursor/User, else ~/.config/Cursor/User)"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::CursorIdeReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::CursorIdeUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::CursorIdeUsage::new(facts)))
    }
}
