//! Where other agents keep their sessions (AGENT-FORMATS.md §0): each agent's root
//! folder, found from its environment variable or the home folder, and which files
//! under it are session files. Nothing here opens a file for writing.

use super::claude::ClaudeReader;
use super::codex::CodexReader;
use super::foreign::ForeignReader;
use super::pi::PiReader;
use crate::agent::Agent;
use std::path::{Path, PathBuf};

/// One agent's store: its root folder (`~/.pi/agent`, `~/.claude`, `~/.codex`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRoot {
    pub agent: Agent,
    pub root: PathBuf,
}

/// The foreign agents, in the order their sources are listed.
pub const FOREIGN: [Agent; 3] = [Agent::Pi, Agent::Claude, Agent::Codex];

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The root an agent itself would use: its override variable, else its folder in
/// the home folder (AGENT-FORMATS.md and AGENT-FORMATS-MORE.md §0).
pub fn default_root(agent: Agent) -> Option<PathBuf> {
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match agent {
        Agent::Pi => env("PI_CODING_AGENT_DIR").or_else(|| home().map(|h| h.join(".pi/agent"))),
        Agent::Claude => env("CLAUDE_CONFIG_DIR").or_else(|| home().map(|h| h.join(".claude"))),
        Agent::Codex => env("CODEX_HOME").or_else(|| home().map(|h| h.join(".codex"))),
        // xdg-basedir: $XDG_DATA_HOME, else ~/.local/share, on every platform.
        Agent::Opencode => env("XDG_DATA_HOME")
            .or_else(|| home().map(|h| h.join(".local/share")))
            .map(|d| d.join("opencode")),
        Agent::Gemini => env("GEMINI_CLI_HOME")
            .or_else(home)
            .map(|h| h.join(".gemini")),
        Agent::Copilot => env("COPILOT_HOME").or_else(|| home().map(|h| h.join(".copilot"))),
        Agent::Cursor => home().map(|h| h.join(".cursor")),
        Agent::Openclaw => {
            env("OPENCLAW_STATE_DIR").or_else(|| home().map(|h| h.join(".openclaw")))
        }
        Agent::Fen => None,
    }
}

/// The roots to show: detected ones (unless `detect` is false) that exist as folders,
/// with each explicit `--source KIND=DIR` adding or replacing its agent's root.
pub fn roots(detect: bool, explicit: &[AgentRoot]) -> Vec<AgentRoot> {
    let mut out = Vec::new();
    for agent in FOREIGN {
        if let Some(given) = explicit.iter().rev().find(|r| r.agent == agent) {
            out.push(given.clone());
        } else if detect
            && let Some(root) = default_root(agent)
            && std::fs::symlink_metadata(sessions_folder(agent, &root)).is_ok_and(|m| m.is_dir())
        {
            out.push(AgentRoot { agent, root });
        }
    }
    out
}

/// Parses `KIND=DIR` (`--source`).
pub fn parse_source(spec: &str) -> Result<AgentRoot, String> {
    let (kind, dir) = spec
        .split_once('=')
        .ok_or_else(|| format!("{spec}: expected KIND=DIR, KIND one of pi, claude, codex"))?;
    let agent = Agent::from_kind(kind)
        .ok_or_else(|| format!("{kind}: not a source kind (pi, claude or codex)"))?;
    if dir.is_empty() {
        return Err(format!("{spec}: DIR is empty"));
    }
    Ok(AgentRoot {
        agent,
        root: std::path::absolute(dir).unwrap_or_else(|_| PathBuf::from(dir)),
    })
}

/// The folder holding an agent's session files.
pub fn sessions_folder(agent: Agent, root: &Path) -> PathBuf {
    match agent {
        Agent::Claude => root.join("projects"),
        _ => root.join("sessions"),
    }
}

/// How deep session files sit below the sessions folder: pi `<cwd>/<file>`, Claude
/// `<project>/<file>`, Codex `YYYY/MM/DD/<file>`.
pub fn file_depth(agent: Agent) -> usize {
    match agent {
        Agent::Codex => 4,
        _ => 2,
    }
}

/// Whether a file name at the session depth is a session of `agent`.
pub fn is_session_file(agent: Agent, name: &str) -> bool {
    match agent {
        Agent::Claude => ClaudeReader::is_session_file_name(name),
        Agent::Codex => CodexReader::is_rollout_file_name(name),
        Agent::Pi => name.ends_with(".jsonl") && name.len() > ".jsonl".len(),
        _ => false,
    }
}

/// A fresh reader for one of `agent`'s files.
pub fn reader_for(agent: Agent, file_name: &str) -> Box<dyn ForeignReader> {
    match agent {
        Agent::Claude => Box::new(ClaudeReader::new(file_name)),
        Agent::Codex => Box::new(CodexReader::new()),
        _ => Box::new(PiReader::new()),
    }
}

/// One message object of `agent`'s `conversation.json` as a neutral message (`None`:
/// nothing a person or a model reads). The agent's own module knows its shapes;
/// nothing outside `sources` reads an agent's format.
pub fn to_neutral(agent: Agent, message: &serde_json::Value) -> Option<crate::neutral::Message> {
    match agent {
        Agent::Fen => super::fen::neutral::to_neutral(message),
        Agent::Pi => super::pi::to_neutral(message),
        Agent::Claude => super::claude::to_neutral(message),
        Agent::Codex => super::codex::to_neutral(message),
        _ => None,
    }
}

/// Codex's `session_index.jsonl` (renames), under its root.
pub fn codex_session_index(root: &Path) -> PathBuf {
    root.join("session_index.jsonl")
}

/// The first working directory a session file names near its start (a top-level
/// `cwd`, or Codex's `payload.cwd`): a cheap hint of its namespace before the file is
/// read whole.
pub fn head_cwd(path: &Path) -> Option<String> {
    use std::io::Read;
    let (file, _) = crate::store::open::open_regular(path).ok()?;
    let mut head = Vec::new();
    file.take(64 * 1024).read_to_end(&mut head).ok()?;
    for line in head.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let cwd = v
            .get("cwd")
            .or_else(|| v.get("payload").and_then(|p| p.get("cwd")));
        if let Some(serde_json::Value::String(cwd)) = cwd {
            return Some(cwd.clone());
        }
    }
    None
}

/// Whether one folder holds one project's sessions (pi and Claude Code file them by
/// cwd; Codex by date).
pub fn folders_are_projects(agent: Agent) -> bool {
    agent != Agent::Codex
}
