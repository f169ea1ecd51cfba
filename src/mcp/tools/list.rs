//! `list_sessions`: sessions newest first, as `fen-fs list --json` gives them.

use super::super::tool::{Tool, ToolError, lines_answer};
use super::{agent_arg, cwd_arg, host_arg, json_line, limit_arg};
use crate::history::History;
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 200;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Only sessions started in this directory (an absolute path, e.g. the project's);
    /// leave out for every project.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Only sessions of this agent, by the name sessions give as their `agent` (fen,
    /// claude, codex, pi, gemini, ...; an unknown name's error lists them all).
    #[serde(default)]
    pub agent: Option<String>,
    /// Only sessions recorded on this machine: this one's name, or another machine's
    /// whose store is synced here (every session carries its `host`).
    #[serde(default)]
    pub host: Option<String>,
    /// At most this many sessions, newest first (default 20, at most 200).
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<i64>,
}

pub struct ListSessions;

impl Tool for ListSessions {
    type Args = Args;
    const NAME: &'static str = "list_sessions";
    const TITLE: &'static str = "List past agent sessions";
    const DESCRIPTION: &'static str = "List past coding-agent sessions (fen's own and those of Claude Code, Codex, pi, OpenCode, Gemini CLI, Copilot CLI, Cursor, OpenClaw on this machine, and those of other machines whose fen store is synced here), newest first. Use it to see what was worked on recently, or in one project (cwd), or on one machine (host). Answers one JSON object per line, one per session: dir, id, cwd, title, preview (its first request), created_at, updated_at, messages (how many), agent, host (the machine it was recorded on), cwd_on_host (the cwd as recorded there; cwd is after fen's path map). Then `note:` lines, if any (how many more there are). Read one with read_session {id}; search them by content with search_sessions.";

    fn call(history: &History, args: Args) -> Result<String, ToolError> {
        let cwd = cwd_arg(args.cwd.as_deref())?;
        let agent = agent_arg(args.agent.as_deref())?;
        let limit = limit_arg(args.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
        let host = host_arg(args.host.as_deref())?;
        let mut notes = Vec::new();
        let mut all: Vec<serde_json::Value> = history
            .list(cwd.as_deref())?
            .into_iter()
            .filter(|l| agent.is_none_or(|a| l.agent == a))
            .map(|l| serde_json::to_value(&l).expect("a listing serializes"))
            .collect();
        if let Some(host) = host.as_deref() {
            // Every listing carries its host (§12): this machine's name or a peer's.
            all.retain(|l| {
                l.get("host")
                    .and_then(|h| h.as_str())
                    .is_some_and(|h| h.eq_ignore_ascii_case(host))
            });
        }
        let total = all.len();
        let lines: Vec<String> = all.iter().take(limit).map(json_line).collect();
        if total == 0 {
            notes.insert(0, "no session matches these filters".into());
        } else if total > lines.len() {
            notes.push(format!(
                "{} of {total} sessions shown, newest first: ask with a higher limit (at most {MAX_LIMIT}) or narrow with cwd, agent or host",
                lines.len()
            ));
        }
        Ok(lines_answer(
            &lines,
            &notes,
            "ask with a lower limit, or narrow with cwd, agent or host",
        ))
    }
}
