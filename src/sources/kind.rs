//! What fen-fs knows of one kind of agent: where its store is, which of its files are
//! sessions, how to read them, what their messages mean, the token usage they record,
//! and how its own CLI resumes a session. One implementation per agent, in its folder
//! (`sources/<agent>/kind.rs`), listed once in `sources/registry.rs`; everything else
//! (search, usage, keep, the tree, resume's messages) asks the kind and names no agent.
//! The defaults fit a JSON Lines agent whose files name their own cwd; such an agent
//! implements `agent`, `colour`, `default_root`, `sessions_folders`, `is_session_file`,
//! `reader_for` and `to_neutral` (docs/agents.md, "Adding an agent").
//!
//! What a new reader reuses instead of writing again:
//! - **Following appends** (JSON Lines): a [`ForeignReader`] is fed whole lines from
//!   the file's start and keeps only what its rules need (ids, offsets, never the
//!   text); the source feeds it the new bytes when the file grows, and keeps its state
//!   between mounts when `save_state`/`restore_state` give it (one borsh value:
//!   [`save_borsh`](super::foreign::save_borsh),
//!   [`restore_borsh`](super::foreign::restore_borsh)). A reader that can tell an
//!   append only added messages hands those over ([`super::growth::Resumed`],
//!   `pi.rs` is the worked case). Messages are pieces: byte ranges of the file served
//!   as they are ([`super::foreign::MessagePieces`]).
//! - **Usage** (`sources/<agent>/usage.rs`): a [`UsageReader`] is fed the same bytes;
//!   `usage_record` has the line walkers (`each_line`, `each_line_holding` with a
//!   [`Needle`](crate::usage_record::Needle)), the field readers (`raw_str`,
//!   `field_count`, `parse_time_ms`, `key_of`), and [`UsageReader::state`] saves and
//!   restores what it keeps between lines (any borsh value) for it.
//! - **Databases**: SQLite strictly read-only through [`super::sqlite_ro`] (never a
//!   `-shm`, lock or checkpoint in the agent's folder); a session that is rows, not a
//!   file, is a *unit* ([`super::units`]): a generated JSON Lines dump its reader is
//!   fed like a file (`units` below; OpenCode and Cursor's `store.db` do this).
//! - **Neutral messages**: [`super::convert`] reads the shapes several formats share
//!   (roles, text or text blocks, data URLs, tool arguments);
//!   [`super::convert::anthropic`] converts Anthropic Messages content blocks,
//!   [`super::convert::openai`] OpenAI Chat Completions messages; pi's AgentMessages
//!   are `pi::to_neutral` (OpenClaw's kind reuses pi's reader, usage and conversion
//!   whole). An agent's `neutral.rs` calls these, then applies its own rules
//!   (injected context, summaries, wrappers it adds).

use super::foreign::{ForeignReader, ForeignSummary};
use super::units::Units;
use crate::agent::Agent;
use crate::usage_record::{UnitFacts, UsageReader};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One folder under an agent's root that holds session files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionsFolder {
    pub path: PathBuf,
    /// How many folder levels below it session files sit, at most (1: directly in it).
    pub depth: usize,
    /// Its sessions are archived ones (Codex `archived_sessions/`).
    pub archived: bool,
}

impl SessionsFolder {
    /// `root/name`, session files at most `depth` levels below it.
    pub fn new(root: &Path, name: &str, depth: usize) -> Self {
        SessionsFolder {
            path: root.join(name),
            depth,
            archived: false,
        }
    }
}

/// The command that resumes a session in the agent's own CLI, run from the session's
/// cwd (`claude --resume ID`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnResume {
    pub program: &'static str,
    pub args: Vec<String>,
}

/// One kind of agent (see the module's comment).
pub trait AgentKind: Sync {
    /// The agent this kind is (its name and serialized form are `Agent`'s).
    fn agent(&self) -> Agent;

    /// How people call it in messages ("Claude Code"); its name by default.
    fn display_name(&self) -> &'static str {
        self.agent().name()
    }

    /// Its colour in usage charts (RGB).
    fn colour(&self) -> (u8, u8, u8);

    /// The root the agent itself uses: its override variable, else its folder in the
    /// home folder (AGENT-FORMATS.md §0). `None`: none (fen's store is named apart).
    fn default_root(&self) -> Option<PathBuf> {
        None
    }

    /// Where `default_root` looks, for messages ("$CODEX_HOME, else ~/.codex").
    fn root_hint(&self) -> &'static str {
        "its folder in the home folder"
    }

    /// The folders under `root` holding its session files (none: its sessions are all
    /// units of a database, `units`).
    fn sessions_folders(&self, _root: &Path) -> Vec<SessionsFolder> {
        Vec::new()
    }

    /// Whether `root` holds its sessions (detection): by default, whether one of its
    /// sessions folders is a folder.
    fn present(&self, root: &Path) -> bool {
        self.sessions_folders(root)
            .into_iter()
            .any(|f| is_dir(&f.path))
    }

    /// Whether the walk of a sessions folder goes into the folder `name` that sits
    /// `level` levels below it (1: directly in it): only where session files can be.
    fn enters_folder(&self, _level: usize, _name: &str) -> bool {
        true
    }

    /// Whether a file name at the session depth is one of its sessions.
    fn is_session_file(&self, _name: &str) -> bool {
        false
    }

    /// Whether the file `name`, `level` levels below `folder` (1: directly in it) in a
    /// folder named `parent`, is one of its sessions: by default a session file name
    /// at the folder's depth.
    fn is_session_entry(
        &self,
        folder: &SessionsFolder,
        level: usize,
        _parent: &str,
        name: &str,
    ) -> bool {
        level == folder.depth && self.is_session_file(name)
    }

    /// A fresh reader for one of its files (or units), knowing only its name.
    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader>;

    /// A fresh reader for the session file at `path` (for an agent whose folder names
    /// the session); by the file's name by default.
    fn reader_for_path(&self, path: &Path) -> Box<dyn ForeignReader> {
        self.reader_for(&path.file_name().unwrap_or_default().to_string_lossy())
    }

    /// Fills in what a session at `path` gets from outside its file (a cwd its file
    /// names not, an archive mark kept elsewhere). An archived sessions folder is
    /// marked already.
    fn complete_summary(&self, _root: &Path, _path: &Path, _s: &mut ForeignSummary) {}

    /// The cwd a session file is likely in, cheaply, before it is read whole: by
    /// default the first `cwd` near the file's start.
    fn cwd_hint(&self, _root: &Path, path: &Path) -> Option<String> {
        head_cwd(path)
    }

    /// Whether one folder holds one project's sessions (its files are filed by cwd).
    fn folders_are_projects(&self) -> bool {
        false
    }

    /// One message object of its `conversation.json` as a neutral message (`None`:
    /// nothing a person or a model reads).
    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message>;

    /// Its sessions that are not files but units of a database-backed store.
    fn units(&self, _root: &Path) -> Option<Units> {
        None
    }

    /// Whether one session id names one session whichever files carry it (then only
    /// the file `prefer` ranks first is shown).
    fn one_session_per_id(&self) -> bool {
        false
    }

    /// Of two files carrying one session id, whether `a` is the one shown (`Greater`)
    /// or `b` is: by default the later `updated_at`, then the name that sorts first.
    fn prefer(&self, a: (&Path, &ForeignSummary), b: (&Path, &ForeignSummary)) -> Ordering {
        later_then_first_name(a, b)
    }

    /// A file under `root` that renames its sessions (Codex's `session_index.jsonl`),
    /// read with `read_renames` whenever it changes.
    fn renames_file(&self, _root: &Path) -> Option<PathBuf> {
        None
    }

    /// Session id → title, from the bytes of `renames_file`.
    fn read_renames(&self, _bytes: &[u8]) -> HashMap<String, String> {
        HashMap::new()
    }

    /// Notes a cwd some session names (any agent's): a candidate for placing sessions
    /// whose store names their cwd only by a hash (Cursor's `store.db`).
    fn note_cwd(&self, _cwd: &str) {}

    /// A fresh reader of the token usage it records in the file (or unit dump) at
    /// `path` (`sources/<agent>/usage.rs`); `None`: it records none.
    fn usage_reader(&self, _path: &Path, _facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        None
    }

    /// The files under `root` holding its usage, when they are more than its session
    /// files (subagents' transcripts), sorted by path; `None`: its session files.
    fn usage_files(&self, _root: &Path) -> Option<Vec<PathBuf>> {
        None
    }

    /// The cwd of usage unit `path` when its records name none but its place does
    /// (Gemini: the chat's project folder). `None` by default.
    fn usage_cwd(&self, _root: &Path, _path: &Path) -> Option<String> {
        None
    }

    /// Whether `usage_cwd` is where its usage's cwd comes from (so a kept copy takes
    /// the cwd its record kept of the place).
    fn usage_cwd_from_place(&self) -> bool {
        false
    }

    /// The command of its own CLI that resumes session `id` (run from the session's
    /// cwd); `None` for an agent fen-fs knows no such command of.
    fn resume_command(&self, _id: &str) -> Option<OwnResume> {
        None
    }
}

/// Whether `p` is a folder (not through a link).
pub fn is_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// The default of [`AgentKind::prefer`] (Gemini's listing's rule): the later
/// `updated_at`; on a tie, the file whose name sorts first (`X.json` before
/// `X.jsonl`).
pub fn later_then_first_name(a: (&Path, &ForeignSummary), b: (&Path, &ForeignSummary)) -> Ordering {
    let time = |s: &ForeignSummary| {
        s.updated_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    time(a.1).cmp(&time(b.1)).then_with(|| b.0.cmp(a.0))
}

/// The value of the first of `vars` that is set and not empty.
pub fn env_path(vars: &[&str]) -> Option<PathBuf> {
    vars.iter().find_map(|var| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// The home folder (`$HOME`, when set and not empty).
pub fn home() -> Option<PathBuf> {
    env_path(&["HOME"])
}

/// `$var`, else `home/in_home`: the usual way an agent finds its root.
pub fn env_or_home(var: &str, in_home: &str) -> Option<PathBuf> {
    env_path(&[var]).or_else(|| home().map(|h| h.join(in_home)))
}

/// The files below `dir` (links never followed, at most 6 levels down) whose name
/// `keep` takes at their depth (0: directly in `dir`), appended to `out`.
pub fn files_below(dir: &Path, keep: &dyn Fn(usize, &str) -> bool, out: &mut Vec<PathBuf>) {
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
    walk(dir, 0, keep, out)
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
