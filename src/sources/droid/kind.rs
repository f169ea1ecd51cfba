//! Factory Droid as a kind of agent: `sessions/<cwd slug>/<id>.jsonl` under
//! `~/.factory`.

use super::DroidReader;
use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, SessionsFolder, env_or_home};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Droid;

impl AgentKind for Droid {
    fn agent(&self) -> Agent {
        Agent::Droid
    }

    fn display_name(&self) -> &'static str {
        "Factory Droid"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0xf5, 0x9e, 0x0b)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("FACTORY_HOME", ".factory")
    }

    fn root_hint(&self) -> &'static str {
        "$FACTORY_HOME, else ~/.factory"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "sessions", 2)]
    }

    fn is_session_file(&self, name: &str) -> bool {
        name.ends_with(".jsonl") && name.len() > ".jsonl".len()
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(DroidReader::new())
    }

    fn folders_are_projects(&self) -> bool {
        true
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::DroidUsage::new(facts, path)))
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "droid",
            args: vec!["--resume".into(), id.into()],
        })
    }
}
