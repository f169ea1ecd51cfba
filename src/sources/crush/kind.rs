//! Crush as a kind of agent: a SQLite database in each project
//! (`<project>/.crush/crush.db`), the projects listed in `projects.json` under its
//! global data folder; each session is a unit.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::{AgentKind, OwnResume, env_path, home};
use crate::sources::units::Units;
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Crush;

impl AgentKind for Crush {
    fn agent(&self) -> Agent {
        Agent::Crush
    }

    fn display_name(&self) -> &'static str {
        "Crush"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x6b, 0x50, 0xff)
    }

    /// Crush's global data folder (`GlobalConfigData`'s folder), which holds
    /// `projects.json`.
    fn default_root(&self) -> Option<PathBuf> {
        env_path(&["CRUSH_GLOBAL_DATA"])
            .or_else(|| env_path(&["XDG_DATA_HOME"]).map(|d| d.join("crush")))
            .or_else(|| home().map(|h| h.join(".local/share/crush")))
    }

    fn root_hint(&self) -> &'static str {
        "$CRUSH_GLOBAL_DATA, else $XDG_DATA_HOME/crush, else ~/.local/share/crush (its projects.json), and the cwds of other agents' sessions"
    }

    fn present(&self, _root: &Path) -> bool {
        true
    }

    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(super::CrushReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    /// A root `--source` names is searched for projects too (the detected one holds
    /// `projects.json` only).
    fn units(&self, root: &Path) -> Option<Units> {
        let searched = if self.default_root().as_deref() == Some(root) {
            Vec::new()
        } else {
            vec![root.to_path_buf()]
        };
        Some(Units::new(Box::new(super::CrushUnits::new(root, searched))))
    }

    fn note_cwd(&self, cwd: &str) {
        crate::sources::projects::note_cwd(cwd);
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::CrushUsage::new(facts)))
    }

    /// Run in the session's project folder.
    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "crush",
            args: vec!["--session".into(), id.into()],
        })
    }
}
