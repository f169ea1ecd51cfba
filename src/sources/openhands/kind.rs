//! OpenHands CLI as a kind of agent: `conversations/<id>/` under
//! `$OPENHANDS_PERSISTENCE_DIR`, else `~/.openhands` (`openhands_cli/locations.py`), each conversation a unit.

use super::{ConversationUnits, OpenhandsReader};
use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, env_or_home, is_dir};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Openhands;

impl AgentKind for Openhands {
    fn agent(&self) -> Agent {
        Agent::Openhands
    }

    fn display_name(&self) -> &'static str {
        "OpenHands CLI"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0xc9, 0xa2, 0x27)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("OPENHANDS_PERSISTENCE_DIR", ".openhands")
    }

    fn root_hint(&self) -> &'static str {
        "$OPENHANDS_PERSISTENCE_DIR, else ~/.openhands"
    }

    fn present(&self, root: &Path) -> bool {
        is_dir(&root.join("conversations"))
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(OpenhandsReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(ConversationUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::OpenhandsUsage::new(facts)))
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "openhands",
            args: vec!["--resume".into(), id.into()],
        })
    }
}
