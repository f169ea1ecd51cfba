//! Aider as a kind of agent: no store of its own, a history file in each project
//! (`<git root>/.aider.chat.history.md`), found by `sources/projects.rs` in the cwds
//! other sessions name and under the folder `--source aider=DIR` names; each run is a
//! unit.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, home};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Aider;

impl AgentKind for Aider {
    fn agent(&self) -> Agent {
        Agent::Aider
    }

    fn display_name(&self) -> &'static str {
        "Aider"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x14, 0xb0, 0x14)
    }

    /// The home folder stands for "the projects other sessions name": it is not
    /// searched itself (a root `--source` names is).
    fn default_root(&self) -> Option<PathBuf> {
        home()
    }

    fn root_hint(&self) -> &'static str {
        "the cwds of every other agent's sessions (and their git roots)"
    }

    fn present(&self, _root: &Path) -> bool {
        true
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::AiderReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        let searched = if home().as_deref() == Some(root) {
            Vec::new()
        } else {
            vec![root.to_path_buf()]
        };
        Some(Units::new(Box::new(super::AiderUnits::new(searched, true))))
    }

    fn note_cwd(&self, cwd: &str) {
        crate::sources::projects::note_cwd(cwd);
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::AiderUsage::new(facts)))
    }

    /// Run in the session's folder: Aider restores that project's whole history.
    fn resume_command(&self, _id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "aider",
            args: vec!["--restore-chat-history".into()],
        })
    }
}
