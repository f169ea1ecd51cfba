//! Where other agents keep their sessions (AGENT-FORMATS.md §0): each agent's root
//! folder, found from its environment variable or the home folder, and which files
//! under it are session files. Nothing here opens a file for writing.

use super::claude::ClaudeReader;
use super::codex::CodexReader;
use super::copilot::CopilotReader;
use super::cursor::CursorReader;
use super::foreign::{ForeignReader, ForeignSummary};
use super::gemini::GeminiReader;
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
pub const FOREIGN: [Agent; 8] = [
    Agent::Pi,
    Agent::Claude,
    Agent::Codex,
    Agent::Opencode,
    Agent::Gemini,
    Agent::Copilot,
    Agent::Cursor,
    Agent::Openclaw,
];

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
        // OpenClaw's resolveStateDir: the override, else ~/.openclaw if it exists, else
        // the first existing legacy folder of its earlier names, else ~/.openclaw.
        Agent::Openclaw => env("OPENCLAW_STATE_DIR")
            .or_else(|| env("CLAWDBOT_STATE_DIR"))
            .or_else(|| {
                let home = env("OPENCLAW_HOME").or_else(home)?;
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
            }),
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
            && present(agent, &root)
        {
            out.push(AgentRoot { agent, root });
        }
    }
    out
}

/// Whether `root` holds `agent`'s sessions: its sessions folder (OpenCode: its data
/// folder, which holds the databases and `storage/`, or a `$OPENCODE_DB` elsewhere),
/// or for Cursor its `chats/` folder of `store.db` files.
fn present(agent: Agent, root: &Path) -> bool {
    let dir = |p: PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    sessions_folders(agent, root)
        .into_iter()
        .any(|f| dir(f.path))
        || (agent == Agent::Opencode && dir(root.to_path_buf()))
        || (agent == Agent::Cursor && dir(root.join("chats")))
        || (agent == Agent::Opencode && !super::opencode::databases(root).is_empty())
}

/// Parses `KIND=DIR` (`--source`).
pub fn parse_source(spec: &str) -> Result<AgentRoot, String> {
    let kinds = || {
        Agent::ALL[1..]
            .iter()
            .map(|a| a.name())
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

/// One folder under an agent's root that holds session files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionsFolder {
    pub path: PathBuf,
    /// How many folder levels below it session files sit, at most (1: directly in it).
    pub depth: usize,
    /// Its sessions are archived ones (Codex `archived_sessions/`).
    pub archived: bool,
}

/// The folders under `root` holding `agent`'s session files: pi `sessions/<cwd>/`,
/// Claude `projects/<project>/`, Codex `sessions/YYYY/MM/DD/` and `archived_sessions/`,
/// Gemini `tmp/<project>/chats/`, Copilot `session-state/[<id>/]`, Cursor
/// `projects/<slug>/agent-transcripts/[<id>/]`, OpenClaw `agents/<agent>/sessions/`.
pub fn sessions_folders(agent: Agent, root: &Path) -> Vec<SessionsFolder> {
    let folder = |name: &str, depth: usize, archived: bool| SessionsFolder {
        path: root.join(name),
        depth,
        archived,
    };
    match agent {
        Agent::Pi => vec![folder("sessions", 2, false)],
        Agent::Claude => vec![folder("projects", 2, false)],
        // Codex's archive moves a rollout into `archived_sessions/` flat (it is read
        // at the date depth too, in case a version keeps the dated folders).
        Agent::Codex => vec![
            folder("sessions", 4, false),
            folder("archived_sessions", 4, true),
        ],
        Agent::Gemini => vec![folder("tmp", 3, false)],
        Agent::Copilot => vec![folder("session-state", 2, false)],
        Agent::Cursor => vec![folder("projects", 4, false)],
        Agent::Openclaw => vec![folder("agents", 3, false)],
        Agent::Opencode | Agent::Fen => Vec::new(),
    }
}

/// Whether the walk of a sessions folder goes into the folder `name` that sits
/// `level` levels below it (1: directly in it): only where session files can be.
pub fn enters_folder(agent: Agent, level: usize, name: &str) -> bool {
    match (agent, level) {
        (Agent::Gemini, 2) => name == "chats",
        (Agent::Cursor, 2) => name == "agent-transcripts",
        // `<id>/subagents/` holds subagent transcripts, not sessions.
        (Agent::Cursor, 3) => name != "subagents",
        (Agent::Openclaw, 2) => name == "sessions",
        _ => true,
    }
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
    match agent {
        Agent::Codex => {
            (level == folder.depth || folder.archived && level == 1) && is_session_file(agent, name)
        }
        Agent::Gemini => level == 3 && super::gemini::is_session_file_name(name),
        // `<id>.jsonl` before 1.0.11, `<id>/events.jsonl` since.
        Agent::Copilot => {
            (level == 1 && name.ends_with(".jsonl") && name.len() > ".jsonl".len())
                || (level == 2 && name == "events.jsonl")
        }
        // `agent-transcripts/<id>.jsonl` or `agent-transcripts/<id>/<id>.jsonl`.
        Agent::Cursor => {
            (level == 3 && name.ends_with(".jsonl") && name.len() > ".jsonl".len())
                || (level == 4 && name.strip_suffix(".jsonl") == Some(parent))
        }
        Agent::Openclaw => level == 3 && super::openclaw::is_session_file_name(name),
        _ => level == folder.depth && is_session_file(agent, name),
    }
}

/// How deep session files sit below the sessions folder: pi `<cwd>/<file>`, Claude
/// `<project>/<file>`, Codex `YYYY/MM/DD/<file>`.
pub fn file_depth(agent: Agent) -> usize {
    sessions_folders(agent, Path::new(""))
        .first()
        .map_or(2, |f| f.depth)
}

/// Whether a file name at the session depth is a session of `agent` (pi, Claude
/// Code, Codex; the others need the file's place too: [`is_session_entry`]).
pub fn is_session_file(agent: Agent, name: &str) -> bool {
    match agent {
        Agent::Claude => ClaudeReader::is_session_file_name(name),
        Agent::Codex => CodexReader::is_rollout_file_name(name),
        Agent::Pi => name.ends_with(".jsonl") && name.len() > ".jsonl".len(),
        _ => false,
    }
}

/// A fresh reader for one of `agent`'s files, knowing only its name.
pub fn reader_for(agent: Agent, file_name: &str) -> Box<dyn ForeignReader> {
    match agent {
        Agent::Claude => Box::new(ClaudeReader::new(file_name)),
        Agent::Codex => Box::new(CodexReader::new()),
        Agent::Opencode => Box::new(super::opencode::OpencodeReader::new(
            super::opencode::generation_of(file_name),
        )),
        // A `store.db` unit (cursor_store.rs); Cursor's transcripts: CursorReader.
        Agent::Cursor if file_name == super::cursor_store::STORE_FILE => {
            Box::new(super::cursor_store::CursorStoreReader::new())
        }
        Agent::Gemini => Box::new(GeminiReader::new(file_name)),
        Agent::Copilot => Box::new(CopilotReader::new(
            file_name.strip_suffix(".jsonl").filter(|s| *s != "events"),
        )),
        Agent::Cursor => Box::new(CursorReader::new(file_name)),
        // OpenClaw writes pi's session format (v3) through pi's own session manager.
        _ => Box::new(PiReader::new()),
    }
}

/// A fresh reader for the session file at `path` (its folder names the session for
/// Copilot's `<id>/events.jsonl`).
pub fn reader_for_path(agent: Agent, path: &Path) -> Box<dyn ForeignReader> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    match agent {
        Agent::Copilot => Box::new(CopilotReader::new(
            super::copilot::id_of_path(path).as_deref(),
        )),
        _ => reader_for(agent, &name),
    }
}

/// Fills in what `agent`'s session at `path` gets from outside the file itself: the
/// archive folder it sits in, Gemini's and Cursor's cwd (their files name none),
/// Copilot's `workspace.yaml`, Cursor's creation time.
pub fn complete_summary(agent: Agent, root: &Path, path: &Path, s: &mut ForeignSummary) {
    if sessions_folders(agent, root)
        .iter()
        .any(|f| f.archived && path.starts_with(&f.path))
    {
        s.archived = true;
    }
    match agent {
        Agent::Claude => s.archived |= claude_index_archives(path, &s.id),
        Agent::Gemini => s.cwd = super::gemini::project_cwd(root, path),
        Agent::Copilot => super::copilot::complete_from_workspace(path, s),
        Agent::Cursor => super::cursor::complete_from_path(path, s),
        _ => {}
    }
}

/// Whether one session id names one session of `agent` whichever files carry it
/// (Gemini's `.json` and the `.jsonl` it migrates to; Cursor's transcript and its
/// `store.db`): then only the file [`prefer`] ranks first is shown.
pub fn one_session_per_id(agent: Agent) -> bool {
    matches!(agent, Agent::Gemini | Agent::Cursor)
}

/// Of two files of `agent` carrying one session id, whether `a` is the one shown
/// (`Greater`) or `b` is. Cursor: a `store.db` (what Cursor resumes) before a
/// transcript. Then, as Gemini's listing: the later `updated_at`; on a tie, the file
/// whose name sorts first (`X.json` before `X.jsonl`).
pub fn prefer(
    agent: Agent,
    a: (&Path, &ForeignSummary),
    b: (&Path, &ForeignSummary),
) -> std::cmp::Ordering {
    let db = |p: &Path| agent == Agent::Cursor && p.file_name().is_some_and(|n| n == "store.db");
    let time = |s: &ForeignSummary| {
        s.updated_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    db(a.0)
        .cmp(&db(b.0))
        .then_with(|| time(a.1).cmp(&time(b.1)))
        .then_with(|| b.0.cmp(a.0))
}

/// The cwd a session file is likely in, cheaply, before it is read whole: the
/// project folder for agents whose files name none (Gemini, Cursor), else the first
/// `cwd` near the file's start.
pub fn cwd_hint(agent: Agent, root: &Path, path: &Path) -> Option<String> {
    match agent {
        Agent::Gemini => super::gemini::project_cwd(root, path),
        Agent::Cursor => super::cursor::cwd_of_path(path),
        _ => head_cwd(path),
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
        Agent::Opencode => super::opencode::to_neutral(message),
        Agent::Gemini => super::gemini::to_neutral(message),
        Agent::Copilot => super::copilot::to_neutral(message),
        // A `store.db` message blob in the AI SDK's shape, else a transcript's message.
        Agent::Cursor if super::cursor_store::is_blob_shape(message) => {
            super::cursor_store::to_neutral(message)
        }
        Agent::Cursor => super::cursor::to_neutral(message),
        Agent::Openclaw => super::openclaw::to_neutral(message),
    }
}

/// The sessions of `agent` that are not files but units of a database-backed store
/// (`sources/units.rs`), if it keeps any.
pub fn units_for(agent: Agent, root: &Path) -> Option<super::units::Units> {
    match agent {
        Agent::Opencode => Some(super::units::Units::new(Box::new(
            super::opencode::OpencodeUnits::new(root),
        ))),
        Agent::Cursor => Some(super::units::Units::new(Box::new(
            super::cursor_store::CursorStoreUnits::new(root),
        ))),
        _ => None,
    }
}

/// Whether the `sessions-index.json` beside a Claude Code session file marks it
/// archived (`entries[].isArchived`, keyed by `sessionId`): the only archive mark in a
/// Claude Code folder, kept by some versions and tools; the CLI itself has none, and
/// the desktop app keeps its own outside that folder.
fn claude_index_archives(path: &Path, id: &str) -> bool {
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

/// Codex's `session_index.jsonl` (renames), under its root.
pub fn codex_session_index(root: &Path) -> PathBuf {
    root.join("session_index.jsonl")
}

/// The first working directory a session file names near its start (a top-level
/// `cwd`, Codex's `payload.cwd`, Copilot's `data.context.cwd`): a cheap hint of its
/// namespace before the file is read whole.
pub fn head_cwd(path: &Path) -> Option<String> {
    use std::io::Read;
    let (file, _) = crate::store::open::open_regular(path).ok()?;
    let mut head = Vec::new();
    file.take(64 * 1024).read_to_end(&mut head).ok()?;
    head_cwd_in(&head)
}

/// The same, in a file's first bytes.
pub fn head_cwd_in(head: &[u8]) -> Option<String> {
    for line in head.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let cwd = v
            .get("cwd")
            .or_else(|| v.get("payload").and_then(|p| p.get("cwd")))
            .or_else(|| v.pointer("/data/context/cwd"));
        if let Some(serde_json::Value::String(cwd)) = cwd {
            return Some(cwd.clone());
        }
    }
    None
}

/// Whether one folder holds one project's sessions (pi, Claude Code, Gemini and
/// Cursor file them by cwd; Codex by date, Copilot and OpenClaw by session or
/// agent).
pub fn folders_are_projects(agent: Agent) -> bool {
    matches!(
        agent,
        Agent::Pi | Agent::Claude | Agent::Gemini | Agent::Cursor
    )
}

/// A fresh reader of the token usage `agent` records in the file (or unit dump) at
/// `path` (`sources/<agent>/usage.rs`); `None` for an agent that records none.
pub fn usage_reader_for(
    agent: Agent,
    path: &Path,
    facts: crate::usage_record::UnitFacts,
) -> Option<Box<dyn crate::usage_record::UsageReader>> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    Some(match agent {
        Agent::Claude => Box::new(super::claude::usage::ClaudeUsage::new(facts)),
        Agent::Codex => Box::new(super::codex::usage::CodexUsage::new(facts)),
        Agent::Gemini => Box::new(super::gemini::usage::GeminiUsage::new(facts, &name)),
        Agent::Pi | Agent::Openclaw => Box::new(super::pi::usage::PiUsage::new(facts)),
        Agent::Copilot => Box::new(super::copilot::usage::CopilotUsage::new(facts)),
        Agent::Opencode => Box::new(super::opencode::usage::OpencodeUsage::new(facts)),
        Agent::Cursor | Agent::Fen => return None,
    })
}

/// The files under `root` holding `agent`'s token usage, when they are more than its
/// session files: Claude Code's every `*.jsonl` under `projects/` (subagent
/// transcripts `<project>/agent-*.jsonl` and `<project>/<id>/subagents/*.jsonl`
/// included, as ccusage counts them); Gemini CLI's chats and its subagents' chats
/// (`tmp/<project>/chats/<parent id>/*.jsonl`). `None`: its session files are all.
/// Links are never followed; sorted by path.
pub fn usage_files(agent: Agent, root: &Path) -> Option<Vec<PathBuf>> {
    fn walk(dir: &Path, depth: usize, keep: &dyn Fn(usize, &str) -> bool, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in rd.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if ft.is_dir() && depth < 6 {
                walk(&entry.path(), depth + 1, keep, out);
            } else if ft.is_file() && keep(depth, &name) {
                out.push(entry.path());
            }
        }
    }
    let mut out = Vec::new();
    match agent {
        Agent::Claude => {
            let jsonl = |_: usize, name: &str| name.ends_with(".jsonl");
            walk(&root.join("projects"), 0, &jsonl, &mut out);
        }
        Agent::Gemini => {
            // tmp/<project>/chats/<file> (depth 2), tmp/<project>/chats/<parent>/<file>.
            let Ok(projects) = std::fs::read_dir(root.join("tmp")) else {
                return Some(out);
            };
            for p in projects.flatten() {
                if !p.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let chats = p.path().join("chats");
                let keep = |depth: usize, name: &str| match depth {
                    0 => super::gemini::is_session_file_name(name),
                    1 => name.ends_with(".jsonl"),
                    _ => false,
                };
                walk(&chats, 0, &keep, &mut out);
            }
        }
        _ => return None,
    }
    out.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    Some(out)
}
