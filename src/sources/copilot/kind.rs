//! Copilot CLI as a kind of agent: `session-state/<id>.jsonl` (before 1.0.11) or
//! `session-state/<id>/events.jsonl` under `~/.copilot`.

use super::CopilotReader;
use crate::agent::Agent;
use crate::sources::foreign::{ForeignReader, ForeignSummary};
use crate::sources::kind::{AgentKind, SessionsFolder, env_or_home};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Copilot;

impl AgentKind for Copilot {
    fn agent(&self) -> Agent {
        Agent::Copilot
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x6e, 0x76, 0x81)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("COPILOT_HOME", ".copilot")
    }

    fn root_hint(&self) -> &'static str {
        "$COPILOT_HOME, else ~/.copilot"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "session-state", 2)]
    }

    /// `<id>.jsonl` before 1.0.11, `<id>/events.jsonl` since.
    fn is_session_entry(&self, _: &SessionsFolder, level: usize, _: &str, name: &str) -> bool {
        (level == 1 && name.ends_with(".jsonl") && name.len() > ".jsonl".len())
            || (level == 2 && name == "events.jsonl")
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(CopilotReader::new(
            file_name.strip_suffix(".jsonl").filter(|s| *s != "events"),
        ))
    }

    /// `<id>/events.jsonl`: its folder names the session.
    fn reader_for_path(&self, path: &Path) -> Box<dyn ForeignReader> {
        Box::new(CopilotReader::new(super::id_of_path(path).as_deref()))
    }

    fn complete_summary(&self, _root: &Path, path: &Path, s: &mut ForeignSummary) {
        super::complete_from_workspace(path, s)
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::CopilotUsage::new(facts)))
    }
}
