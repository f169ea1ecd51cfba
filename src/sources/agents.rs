//! Where other agents keep their sessions (AGENT-FORMATS.md §0), and the rest of what
//! each kind of agent knows (`kind.rs`), asked by agent: each function here is its
//! kind's answer (`registry.rs`), so callers name an agent, never its module. Nothing
//! here opens a file for writing.

use super::foreign::{ForeignReader, ForeignSummary};
use super::registry::kind;
use crate::agent::Agent;
use std::path::{Path, PathBuf};

pub use super::kind::SessionsFolder;

/// One agent's store: its root folder (`~/.pi/agent`, `~/.claude`, `~/.codex`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRoot {
    pub agent: Agent,
    pub root: PathBuf,
}

/// The root an agent itself would use: its override variable, else its folder in
/// the home folder (AGENT-FORMATS.md and AGENT-FORMATS-MORE.md §0).
pub fn default_root(agent: Agent) -> Option<PathBuf> {
    kind(agent).default_root()
}

/// The roots to show: detected ones (unless `detect` is false) that exist as folders,
/// with each explicit `--source KIND=DIR` adding or replacing its agent's root.
pub fn roots(detect: bool, explicit: &[AgentRoot]) -> Vec<AgentRoot> {
    let mut out = Vec::new();
    for k in super::registry::foreign() {
        let agent = k.agent();
        if let Some(given) = explicit.iter().rev().find(|r| r.agent == agent) {
            out.push(given.clone());
        } else if detect
            && let Some(root) = k.default_root()
            && k.present(&root)
        {
            out.push(AgentRoot { agent, root });
        }
    }
    out
}

/// Parses `KIND=DIR` (`--source`).
pub fn parse_source(spec: &str) -> Result<AgentRoot, String> {
    let kinds = || {
        super::registry::foreign()
            .map(|k| k.agent().name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (kind, dir) = spec
        .split_once('=')
        .ok_or_else(|| format!("{spec}: expected KIND=DIR, KIND one of {}", kinds()))?;
    let agent = Agent::from_kind(kind)
        .ok_or_else(|| format!("{kind}: not a source kind (one of {})", kinds()))?;
    if dir.is_empty() {
        return Err(format!("{spec}: DIR is empty"));
    }
    Ok(AgentRoot {
        agent,
        root: std::path::absolute(dir).unwrap_or_else(|_| PathBuf::from(dir)),
    })
}

/// The folder holding an agent's (non-archived) session files.
pub fn sessions_folder(agent: Agent, root: &Path) -> PathBuf {
    sessions_folders(agent, root)
        .into_iter()
        .next()
        .map(|f| f.path)
        .unwrap_or_else(|| root.join("sessions"))
}

/// The folders under `root` holding `agent`'s session files: pi `sessions/<cwd>/`,
/// Claude `projects/<project>/`, Codex `sessions/YYYY/MM/DD/` and `archived_sessions/`,
/// Gemini `tmp/<project>/chats/`, Copilot `session-state/[<id>/]`, Cursor
/// `projects/<slug>/agent-transcripts/[<id>/]`, OpenClaw `agents/<agent>/sessions/`.
pub fn sessions_folders(agent: Agent, root: &Path) -> Vec<SessionsFolder> {
    kind(agent).sessions_folders(root)
}

/// Whether the walk of a sessions folder goes into the folder `name` that sits
/// `level` levels below it (1: directly in it): only where session files can be.
pub fn enters_folder(agent: Agent, level: usize, name: &str) -> bool {
    kind(agent).enters_folder(level, name)
}

/// Whether the file `name`, `level` levels below `folder` (1: directly in it) in a
/// folder named `parent`, is one of `agent`'s sessions.
pub fn is_session_entry(
    agent: Agent,
    folder: &SessionsFolder,
    level: usize,
    parent: &str,
    name: &str,
) -> bool {
    kind(agent).is_session_entry(folder, level, parent, name)
}

/// Whether a file name at the session depth is a session of `agent` (pi, Claude
/// Code, Codex; the others need the file's place too: [`is_session_entry`]).
pub fn is_session_file(agent: Agent, name: &str) -> bool {
    kind(agent).is_session_file(name)
}

/// A fresh reader for one of `agent`'s files, knowing only its name.
pub fn reader_for(agent: Agent, file_name: &str) -> Box<dyn ForeignReader> {
    kind(agent).reader_for(file_name)
}

/// A fresh reader for the session file at `path` (its folder names the session for
/// Copilot's `<id>/events.jsonl`).
pub fn reader_for_path(agent: Agent, path: &Path) -> Box<dyn ForeignReader> {
    kind(agent).reader_for_path(path)
}

/// Fills in what `agent`'s session at `path` gets from outside the file itself: the
/// archive folder it sits in, and what its kind adds (Gemini's and Cursor's cwd,
/// which their files name not, Copilot's `workspace.yaml`, Claude Code's archive
/// index).
pub fn complete_summary(agent: Agent, root: &Path, path: &Path, s: &mut ForeignSummary) {
    let k = kind(agent);
    if k.sessions_folders(root)
        .iter()
        .any(|f| f.archived && path.starts_with(&f.path))
    {
        s.archived = true;
    }
    k.complete_summary(root, path, s)
}

/// Whether one session id names one session of `agent` whichever files carry it
/// (Gemini's `.json` and the `.jsonl` it migrates to; Cursor's transcript and its
/// `store.db`): then only the file [`prefer`] ranks first is shown.
pub fn one_session_per_id(agent: Agent) -> bool {
    kind(agent).one_session_per_id()
}

/// Of two files of `agent` carrying one session id, whether `a` is the one shown
/// (`Greater`) or `b` is.
pub fn prefer(
    agent: Agent,
    a: (&Path, &ForeignSummary),
    b: (&Path, &ForeignSummary),
) -> std::cmp::Ordering {
    kind(agent).prefer(a, b)
}

/// The cwd a session file is likely in, cheaply, before it is read whole: the
/// project folder for agents whose files name none (Gemini, Cursor), else the first
/// `cwd` near the file's start.
pub fn cwd_hint(agent: Agent, root: &Path, path: &Path) -> Option<String> {
    kind(agent).cwd_hint(root, path)
}

/// One message object of `agent`'s `conversation.json` as a neutral message (`None`:
/// nothing a person or a model reads). The agent's own module knows its shapes;
/// nothing outside `sources` reads an agent's format.
pub fn to_neutral(agent: Agent, message: &serde_json::Value) -> Option<crate::neutral::Message> {
    kind(agent).to_neutral(message)
}

/// The sessions of `agent` that are not files but units of a database-backed store
/// (`sources/units.rs`), if it keeps any.
pub fn units_for(agent: Agent, root: &Path) -> Option<super::units::Units> {
    kind(agent).units(root)
}

pub use super::kind::{head_cwd, head_cwd_in};

/// Whether one folder holds one project's sessions (pi, Claude Code, Gemini and
/// Cursor file them by cwd; Codex by date, Copilot and OpenClaw by session or
/// agent).
pub fn folders_are_projects(agent: Agent) -> bool {
    kind(agent).folders_are_projects()
}

/// A fresh reader of the token usage `agent` records in the file (or unit dump) at
/// `path` (`sources/<agent>/usage.rs`); `None` for an agent that records none.
pub fn usage_reader_for(
    agent: Agent,
    path: &Path,
    facts: crate::usage_record::UnitFacts,
) -> Option<Box<dyn crate::usage_record::UsageReader>> {
    kind(agent).usage_reader(path, facts)
}

/// The files under `root` holding `agent`'s token usage, when they are more than its
/// session files (Claude Code's and Gemini CLI's subagents' transcripts). `None`: its
/// session files are all. Links are never followed; sorted by path.
pub fn usage_files(agent: Agent, root: &Path) -> Option<Vec<PathBuf>> {
    kind(agent).usage_files(root)
}
