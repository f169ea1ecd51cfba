//! Qwen Code as a kind of agent: `projects/<sanitized cwd>/chats/<id>.jsonl` (and
//! `chats/archive/`) under `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else `~/.qwen`.

use super::QwenReader;
use crate::agent::Agent;
use crate::sources::foreign::{ForeignReader, ForeignSummary};
use crate::sources::kind::{AgentKind, OwnResume, SessionsFolder, env_path, home};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Qwen;

impl AgentKind for Qwen {
    fn agent(&self) -> Agent {
        Agent::Qwen
    }

    fn display_name(&self) -> &'static str {
        "Qwen Code"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x61, 0x5c, 0xed)
    }

    /// Qwen's `Storage.getRuntimeBaseDir`: `QWEN_RUNTIME_DIR`, else its global folder
    /// (`QWEN_HOME`, else `~/.qwen`).
    fn default_root(&self) -> Option<PathBuf> {
        env_path(&["QWEN_RUNTIME_DIR", "QWEN_HOME"]).or_else(|| home().map(|h| h.join(".qwen")))
    }

    fn root_hint(&self) -> &'static str {
        "$QWEN_RUNTIME_DIR, else $QWEN_HOME, else ~/.qwen"
    }

    /// `projects/<slug>/chats/<file>` (level 3), `…/chats/archive/<file>` (level 4).
    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "projects", 4)]
    }

    fn enters_folder(&self, level: usize, name: &str) -> bool {
        match level {
            2 => name == "chats",
            3 => name == "archive",
            _ => true,
        }
    }

    fn is_session_entry(&self, _: &SessionsFolder, level: usize, parent: &str, name: &str) -> bool {
        (level == 3 || level == 4 && parent == "archive") && super::is_session_file_name(name)
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(QwenReader::new())
    }

    fn complete_summary(&self, _root: &Path, path: &Path, s: &mut ForeignSummary) {
        s.archived |= super::is_archived_path(path);
    }

    fn folders_are_projects(&self) -> bool {
        true
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::QwenUsage::new(facts)))
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "qwen",
            args: vec!["--resume".into(), id.into()],
        })
    }
}
