//! Goose as a kind of agent: its data folder, whose sessions are rows of
//! `sessions/sessions.db` or (before it) JSONL files beside it: units.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Goose;

impl AgentKind for Goose {
    fn agent(&self) -> Agent {
        Agent::Goose
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x2f, 0x2f, 0x2f)
    }

    fn default_root(&self) -> Option<PathBuf> {
        super::default_root()
    }

    fn root_hint(&self) -> &'static str {
        "$GOOSE_PATH_ROOT/data, else $XDG_DATA_HOME/goose, else ~/.local/share/goose"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::GooseReader::new(file_name))
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::GooseUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::GooseUsage::new(facts)))
    }

    /// `goose session --resume --session-id ID` (a pre-database session is imported
    /// under its file's name, its id here).
    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "goose",
            args: vec![
                "session".into(),
                "--resume".into(),
                "--session-id".into(),
                id.into(),
            ],
        })
    }
}
