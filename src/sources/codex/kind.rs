//! Codex as a kind of agent: `sessions/YYYY/MM/DD/rollout-*.jsonl` and
//! `archived_sessions/` under `~/.codex`, renamed by `session_index.jsonl`.

use super::CodexReader;
use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, SessionsFolder, env_or_home};
use crate::usage_record::{UnitFacts, UsageReader};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub struct Codex;

impl AgentKind for Codex {
    fn agent(&self) -> Agent {
        Agent::Codex
    }

    fn display_name(&self) -> &'static str {
        "Codex"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x10, 0xa3, 0x7f)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("CODEX_HOME", ".codex")
    }

    fn root_hint(&self) -> &'static str {
        "$CODEX_HOME, else ~/.codex"
    }

    /// Codex's archive moves a rollout into `archived_sessions/` flat (it is read at
    /// the date depth too, in case a version keeps the dated folders).
    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![
            SessionsFolder::new(root, "sessions", 4),
            SessionsFolder {
                archived: true,
                ..SessionsFolder::new(root, "archived_sessions", 4)
            },
        ]
    }

    fn is_session_file(&self, name: &str) -> bool {
        CodexReader::is_rollout_file_name(name)
    }

    fn is_session_entry(
        &self,
        folder: &SessionsFolder,
        level: usize,
        _parent: &str,
        name: &str,
    ) -> bool {
        (level == folder.depth || folder.archived && level == 1) && self.is_session_file(name)
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(CodexReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn renames_file(&self, root: &Path) -> Option<PathBuf> {
        Some(root.join("session_index.jsonl"))
    }

    fn read_renames(&self, bytes: &[u8]) -> HashMap<String, String> {
        CodexReader::read_session_index(bytes)
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::CodexUsage::new(facts)))
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "codex",
            args: vec!["resume".into(), id.into()],
        })
    }
}
