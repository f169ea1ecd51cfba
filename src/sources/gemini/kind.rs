//! Gemini CLI as a kind of agent: `tmp/<project>/chats/session-*.json[l]` under
//! `~/.gemini`; its files name no cwd, the project folder does.

use super::GeminiReader;
use crate::agent::Agent;
use crate::sources::foreign::{ForeignReader, ForeignSummary};
use crate::sources::kind::{AgentKind, SessionsFolder, env_path, files_below, home};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Gemini;

impl AgentKind for Gemini {
    fn agent(&self) -> Agent {
        Agent::Gemini
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x42, 0x85, 0xf4)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_path(&["GEMINI_CLI_HOME"])
            .or_else(home)
            .map(|h| h.join(".gemini"))
    }

    fn root_hint(&self) -> &'static str {
        "$GEMINI_CLI_HOME/.gemini, else ~/.gemini"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "tmp", 3)]
    }

    fn enters_folder(&self, level: usize, name: &str) -> bool {
        level != 2 || name == "chats"
    }

    fn is_session_entry(&self, _: &SessionsFolder, level: usize, _: &str, name: &str) -> bool {
        level == 3 && super::is_session_file_name(name)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(GeminiReader::new(file_name))
    }

    fn complete_summary(&self, root: &Path, path: &Path, s: &mut ForeignSummary) {
        s.cwd = super::project_cwd(root, path);
    }

    fn cwd_hint(&self, root: &Path, path: &Path) -> Option<String> {
        super::project_cwd(root, path)
    }

    fn folders_are_projects(&self) -> bool {
        true
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    /// A `.json` chat and the `.jsonl` it migrates to are one session.
    fn one_session_per_id(&self) -> bool {
        true
    }

    fn usage_reader(&self, path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        Some(Box::new(super::usage::GeminiUsage::new(facts, &name)))
    }

    /// Its chats and its subagents' chats (`tmp/<project>/chats/<parent id>/*.jsonl`).
    fn usage_files(&self, root: &Path) -> Option<Vec<PathBuf>> {
        let mut out = Vec::new();
        let Ok(projects) = std::fs::read_dir(root.join("tmp")) else {
            return Some(out);
        };
        for p in projects.flatten() {
            if !p.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            // chats/<file> (depth 0), chats/<parent>/<file> (depth 1).
            let keep = |depth: usize, name: &str| match depth {
                0 => super::is_session_file_name(name),
                1 => name.ends_with(".jsonl"),
                _ => false,
            };
            files_below(&p.path().join("chats"), &keep, &mut out);
        }
        out.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        Some(out)
    }

    /// A chat's project folder is its cwd (a subagent's chat sits one deeper).
    fn usage_cwd(&self, root: &Path, path: &Path) -> Option<String> {
        path.ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "chats"))
            .and_then(|chats| super::project_cwd(root, &chats.join("chat")))
    }

    fn usage_cwd_from_place(&self) -> bool {
        true
    }
}
