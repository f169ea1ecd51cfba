//! Kilo Code CLI as a kind of agent: its data folder (`$XDG_DATA_HOME/kilo`), whose
//! sessions are OpenCode's units under Kilo's names.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, env_path, home};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Kilo;

impl AgentKind for Kilo {
    fn agent(&self) -> Agent {
        Agent::Kilo
    }

    fn display_name(&self) -> &'static str {
        "Kilo Code"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0xf8, 0xc4, 0x1c)
    }

    /// As OpenCode: xdg-basedir's $XDG_DATA_HOME, else ~/.local/share, everywhere.
    fn default_root(&self) -> Option<PathBuf> {
        env_path(&["XDG_DATA_HOME"])
            .or_else(|| home().map(|h| h.join(".local/share")))
            .map(|d| d.join("kilo"))
    }

    fn root_hint(&self) -> &'static str {
        "$XDG_DATA_HOME/kilo, else ~/.local/share/kilo"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(root)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        super::reader_for(file_name)
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(super::units(root))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(super::usage_reader(facts))
    }

    /// `kilo --session ID` in the session's folder (`kilo --continue`: the newest).
    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "kilo",
            args: vec!["--session".into(), id.into()],
        })
    }
}
