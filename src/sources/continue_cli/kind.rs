//! Continue's CLI (`cn`) as a kind of agent: `sessions/<id>.json` under
//! `$CONTINUE_GLOBAL_DIR`, else `~/.continue`.

use super::ContinueReader;
use crate::agent::Agent;
use crate::sources::foreign::{ForeignReader, ForeignSummary};
use crate::sources::kind::{AgentKind, OwnResume, SessionsFolder, env_or_home};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Continue;

impl AgentKind for Continue {
    fn agent(&self) -> Agent {
        Agent::Continue
    }

    fn display_name(&self) -> &'static str {
        "Continue"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0xbe, 0x18, 0x5d)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("CONTINUE_GLOBAL_DIR", ".continue")
    }

    fn root_hint(&self) -> &'static str {
        "$CONTINUE_GLOBAL_DIR, else ~/.continue"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "sessions", 1)]
    }

    fn is_session_file(&self, name: &str) -> bool {
        super::is_session_file_name(name)
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(ContinueReader::new())
    }

    fn complete_summary(&self, _root: &Path, path: &Path, s: &mut ForeignSummary) {
        super::complete_from_index(path, s);
    }

    /// The file is one pretty-printed JSON document: no `cwd` near its start that a
    /// line would hold, so its `workspaceDirectory` is read from the head.
    fn cwd_hint(&self, _root: &Path, path: &Path) -> Option<String> {
        super::head_cwd(path)
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::ContinueUsage::new(facts, path)))
    }

    /// `cn --resume` takes the most recent session of any folder; a given one is
    /// continued by forking it.
    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "cn",
            args: vec!["--fork".into(), id.into()],
        })
    }
}
