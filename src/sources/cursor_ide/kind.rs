//! Cursor, the editor, as a kind of agent: its user folder, whose composers are rows
//! of `globalStorage/state.vscdb` and whose first chats are rows of its workspaces'
//! databases: units. Cursor reopens a chat from its own history; it has no command
//! that resumes one, and its deeplinks (prompts, commands, rules, MCP servers) open
//! none either, so `fen-fs resume` offers `--in`.

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
        "Cursor IDE"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x5a, 0x5a, 0x5a)
    }

    fn default_root(&self) -> Option<PathBuf> {
        super::default_root()
    }

    fn root_hint(&self) -> &'static str {
        "$XDG_CONFIG_HOME/Cursor/User, else ~/.config/Cursor/User"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::CursorIdeReader::new(file_name))
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::CursorIdeUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::CursorIdeUsage::new(facts)))
    }
}
