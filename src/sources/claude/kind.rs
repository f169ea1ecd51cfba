//! Claude Code as a kind of agent: `projects/<project>/<uuid>.jsonl` under
//! `~/.claude`.

use super::ClaudeReader;
use crate::agent::Agent;
use crate::sources::foreign::{ForeignReader, ForeignSummary};
use crate::sources::kind::{AgentKind, OwnResume, SessionsFolder, env_or_home, files_below};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Claude;

impl AgentKind for Claude {
    fn agent(&self) -> Agent {
        Agent::Claude
    }

    fn display_name(&self) -> &'static str {
        "Claude Code"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0xd9, 0x77, 0x57)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("CLAUDE_CONFIG_DIR", ".claude")
    }

    fn root_hint(&self) -> &'static str {
        "$CLAUDE_CONFIG_DIR, else ~/.claude"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "projects", 2)]
    }

    fn is_session_file(&self, name: &str) -> bool {
        super::is_session_file_name(name)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(ClaudeReader::new(file_name))
    }

    fn complete_summary(&self, _root: &Path, path: &Path, s: &mut ForeignSummary) {
        s.archived |= index_archives(path, &s.id);
    }

    fn folders_are_projects(&self) -> bool {
        true
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, _path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::ClaudeUsage::new(facts)))
    }

    /// Every `*.jsonl` under `projects/`: subagent transcripts
    /// `<project>/agent-*.jsonl` and `<project>/<id>/subagents/*.jsonl` included, as
    /// ccusage counts them.
    fn usage_files(&self, root: &Path) -> Option<Vec<PathBuf>> {
        let mut out = Vec::new();
        let jsonl = |_: usize, name: &str| name.ends_with(".jsonl");
        files_below(&root.join("projects"), &jsonl, &mut out);
        out.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        Some(out)
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "claude",
            args: vec!["--resume".into(), id.into()],
        })
    }
}

/// Whether the `sessions-index.json` beside a Claude Code session file marks it
/// archived (`entries[].isArchived`, keyed by `sessionId`): the only archive mark in a
/// Claude Code folder, kept by some versions and tools; the CLI itself has none, and
/// the desktop app keeps its own outside that folder.
fn index_archives(path: &Path, id: &str) -> bool {
    use crate::store::index::FileStamp;
    use std::collections::HashSet;
    use std::sync::Mutex;
    /// An index as read: its path and stamp, and the ids it marks archived.
    struct Read {
        path: PathBuf,
        stamp: FileStamp,
        archived: HashSet<String>,
    }
    /// The last index read (every file of a project asks about the same one), used
    /// only while the file's stamp is unchanged.
    static LAST: Mutex<Option<Read>> = Mutex::new(None);
    let Some(index) = path.parent().map(|p| p.join("sessions-index.json")) else {
        return false;
    };
    let Ok(meta) = std::fs::symlink_metadata(&index) else {
        return false;
    };
    let stamp = FileStamp::of(&meta);
    let mut last = LAST.lock().unwrap();
    if let Some(r) = last.as_ref()
        && r.path == index
        && r.stamp == stamp
    {
        return r.archived.contains(id);
    }
    let v = crate::store::open::read_small(&index, 64 << 20)
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .unwrap_or_default();
    let archived: HashSet<String> = v
        .get("entries")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .filter(|e| e.get("isArchived") == Some(&serde_json::Value::Bool(true)))
        .filter_map(|e| e.get("sessionId")?.as_str().map(str::to_string))
        .collect();
    let found = archived.contains(id);
    *last = Some(Read {
        path: index,
        stamp,
        archived,
    });
    found
}
