//! Claude Code as a kind of agent: `projects/<project>/<uuid>.jsonl` under
//! `~/.claude`, and its subagents' transcripts: `<project>/<uuid>/subagents/agent-<id>.jsonl`
//! (workflow runs' in `subagents/workflows/<run>/`) with their `agent-<id>.meta.json`,
//! and older versions' `<project>/agent-<id>.jsonl` beside the parent.

use super::{ClaudeReader, SubagentFile};
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

    /// Session files two levels down (`<project>/<uuid>.jsonl`); subagents' four
    /// (`<project>/<uuid>/subagents/agent-<id>.jsonl`) and six (a workflow run's).
    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "projects", 6)]
    }

    /// Project folders, a session's own folder (its uuid), its `subagents/`, that
    /// folder's `workflows/` and each run's folder; nothing else (`tool-results/`...).
    fn enters_folder(&self, level: usize, name: &str) -> bool {
        match level {
            1 | 5 => true,
            2 => super::is_uuid(name),
            3 => name == "subagents",
            4 => name == "workflows",
            _ => false,
        }
    }

    /// Sessions, subagents' transcripts and forked helper runs' (indexed to be kept,
    /// never shown: `helper.rs`).
    fn is_session_entry(&self, _: &SessionsFolder, level: usize, parent: &str, name: &str) -> bool {
        let agent = super::subagent_file_id(name).is_some();
        match level {
            2 => super::is_session_file_name(name) || agent,
            4 => parent == "subagents" && agent,
            6 => agent,
            _ => false,
        }
    }

    fn is_session_file(&self, name: &str) -> bool {
        super::is_session_file_name(name)
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(ClaudeReader::new(file_name))
    }

    /// A subagent's transcript by its name and place (the parent's id is the folder
    /// above `subagents/`; beside the parent, the lines' `sessionId`).
    fn reader_for_path(&self, path: &Path) -> Box<dyn ForeignReader> {
        match subagent_file(path) {
            Some(f) if super::is_forked_helper_id(&f.agent_id) => {
                Box::new(super::helper::HelperRun::new(f))
            }
            Some(f) => Box::new(ClaudeReader::subagent(f)),
            None => self.reader_for(&path.file_name().unwrap_or_default().to_string_lossy()),
        }
    }

    fn complete_summary(&self, _root: &Path, path: &Path, s: &mut ForeignSummary) {
        if s.hidden {
            return;
        }
        if s.subagent.is_some() {
            complete_from_sidecar(path, s);
            return;
        }
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

/// What a subagent (or forked helper run) transcript's path says of it:
/// `agent-<id>.jsonl` in `<parent>/subagents/`, in `<parent>/subagents/workflows/<run>/`,
/// or elsewhere (an older version's, beside its parent's file). `None`: not one.
pub fn subagent_file(path: &Path) -> Option<SubagentFile> {
    let name = path.file_name()?.to_str()?;
    let agent_id = super::subagent_file_id(name)?.to_string();
    let up: Vec<&str> = path
        .ancestors()
        .skip(1)
        .take(4)
        .map(|p| p.file_name().and_then(|n| n.to_str()).unwrap_or(""))
        .collect();
    let uuid = |s: &&str| super::is_uuid(s);
    let (parent_id, workflow) = match up.as_slice() {
        [sub, parent, ..] if *sub == "subagents" && uuid(parent) => (Some(parent), None),
        [run, wf, sub, parent] if *wf == "workflows" && *sub == "subagents" && uuid(parent) => {
            (Some(parent), Some(run.to_string()))
        }
        _ => (None, None),
    };
    Some(SubagentFile {
        agent_id,
        parent_id: parent_id.map(|p| p.to_string()),
        workflow,
    })
}

/// The `agent-<id>.meta.json` Claude Code writes beside a subagent's transcript:
/// `agentType`, `description`, `toolUseId` (the parent's Agent call), `spawnDepth`,
/// `finished`, and `parentAgentId` for a subagent another subagent started (its
/// parent is then that subagent's session).
fn complete_from_sidecar(path: &Path, s: &mut ForeignSummary) {
    let Some(sidecar) = path
        .to_str()
        .and_then(|p| p.strip_suffix(".jsonl"))
        .map(|p| PathBuf::from(format!("{p}.meta.json")))
    else {
        return;
    };
    let Some(v) = crate::store::open::read_small(&sidecar, 1 << 20)
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    else {
        return;
    };
    let text = |k: &str| {
        v.get(k)
            .and_then(|x| x.as_str())
            .filter(|x| !x.is_empty())
            .map(str::to_string)
    };
    if let Some(sub) = s.subagent.as_mut() {
        sub.agent_type = text("agentType");
        sub.call_id = text("toolUseId");
        sub.depth = v
            .get("spawnDepth")
            .and_then(|d| d.as_u64())
            .map(|d| d.min(u32::MAX as u64) as u32);
        sub.finished = v.get("finished").and_then(|f| f.as_bool());
    }
    if s.title.is_none() {
        s.title = text("description");
    }
    if let Some(parent) = text("parentAgentId") {
        s.parent_id = Some(parent);
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
