//! pi as a kind of agent: `sessions/<cwd>/<file>.jsonl` under `~/.pi/agent`.

use super::PiReader;
use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, SessionsFolder, env_or_home};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Pi;

impl AgentKind for Pi {
    fn agent(&self) -> Agent {
        Agent::Pi
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x8e, 0x44, 0xad)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("PI_CODING_AGENT_DIR", ".pi/agent")
    }

    fn root_hint(&self) -> &'static str {
        "$PI_CODING_AGENT_DIR, else ~/.pi/agent"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "sessions", 2)]
    }

    fn is_session_file(&self, name: &str) -> bool {
        name.ends_with(".jsonl") && name.len() > ".jsonl".len()
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(PiReader::new())
    }

    fn folders_are_projects(&self) -> bool {
        true
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::PiUsage::new(facts)))
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "pi",
            args: vec!["--session".into(), id.into()],
        })
    }
}
