//! Cline as a kind of agent: its data folder (`$CLINE_DATA_DIR`, else
//! `$CLINE_DIR/data`, else `~/.cline/data`), whose sessions (3.x `sessions/`) and
//! tasks (`tasks/`) are units of whole JSON files.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, env_path, home};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Cline;

impl AgentKind for Cline {
    fn agent(&self) -> Agent {
        Agent::Cline
    }

    fn display_name(&self) -> &'static str {
        "Cline"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x1f, 0x8a, 0x70)
    }

    /// As Cline's CLI resolves it (`resolveDataDir`).
    fn default_root(&self) -> Option<PathBuf> {
        env_path(&["CLINE_DATA_DIR"]).or_else(|| {
            env_path(&["CLINE_DIR"])
                .or_else(|| home().map(|h| h.join(".cline")))
                .map(|d| d.join("data"))
        })
    }

    fn root_hint(&self) -> &'static str {
        "$CLINE_DATA_DIR, else $CLINE_DIR/data, else ~/.cline/data"
    }

    fn present(&self, root: &Path) -> bool {
        super::present(&super::CLINE, root)
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::ClineReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(super::TaskUnits::new(
            super::CLINE,
            root,
        ))))
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::ClineUsage::new("cline", facts)))
    }

    /// `cline --id ID` (3.x; it resumes in its terminal interface only). A task of
    /// the older layout (a numeric id) has no command of the CLI.
    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        id.contains('_').then(|| OwnResume {
            program: "cline",
            args: vec!["--id".into(), id.into()],
        })
    }
}
