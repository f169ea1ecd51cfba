//! Amp as a kind of agent: its data folder, whose threads are one JSON file each in
//! `threads/`, rewritten whole: units.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Amp;

impl AgentKind for Amp {
    fn agent(&self) -> Agent {
        Agent::Amp
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0xf3, 0x4e, 0x3f)
    }

    fn default_root(&self) -> Option<PathBuf> {
        super::default_root()
    }

    fn root_hint(&self) -> &'static str {
        "$AMP_DATA_DIR, else $XDG_DATA_HOME/amp, else ~/.local/share/amp"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::AmpReader::new(file_name))
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::AmpUnits::new(root))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::AmpUsage::new(facts)))
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "amp",
            args: vec!["threads".into(), "continue".into(), id.into()],
        })
    }
}
