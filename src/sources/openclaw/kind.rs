//! OpenClaw as a kind of agent: `agents/<agent>/sessions/<id>.jsonl` under
//! `~/.openclaw`, in pi's session format (read by pi's reader, usage and conversion).

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, SessionsFolder, env_path, home};
use crate::sources::pi::PiReader;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Openclaw;

impl AgentKind for Openclaw {
    fn agent(&self) -> Agent {
        Agent::Openclaw
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0xe6, 0x7e, 0x22)
    }

    /// OpenClaw's resolveStateDir: the override, else ~/.openclaw if it exists, else
    /// the first existing legacy folder of its earlier names, else ~/.openclaw.
    fn default_root(&self) -> Option<PathBuf> {
        env_path(&["OPENCLAW_STATE_DIR", "CLAWDBOT_STATE_DIR"]).or_else(|| {
            let home = env_path(&["OPENCLAW_HOME"]).or_else(home)?;
            let exists = |p: &PathBuf| std::fs::symlink_metadata(p).is_ok();
            let new = home.join(".openclaw");
            if exists(&new) {
                return Some(new);
            }
            [".clawdbot", ".moldbot", ".moltbot"]
                .iter()
                .map(|d| home.join(d))
                .find(exists)
                .or(Some(new))
        })
    }

    fn root_hint(&self) -> &'static str {
        "$OPENCLAW_STATE_DIR, else ~/.openclaw"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "agents", 3)]
    }

    fn enters_folder(&self, level: usize, name: &str) -> bool {
        level != 2 || name == "sessions"
    }

    fn is_session_entry(&self, _: &SessionsFolder, level: usize, _: &str, name: &str) -> bool {
        level == 3 && super::is_session_file_name(name)
    }

    /// OpenClaw writes pi's session format (v3) through pi's own session manager.
    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(PiReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(crate::sources::pi::usage::PiUsage::new(facts)))
    }
}
