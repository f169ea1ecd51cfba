//! `search_sessions`: SPEC §8's search, one hit per session, best first.

use super::super::tool::{Tool, ToolError, lines_answer};
use super::{agent_arg, cwd_arg, host_arg, json_line, limit_arg, since_arg};
use crate::history::History;
use crate::search::Request;
use schemars::JsonSchema;
use serde::Deserialize;

const MAX_LIMIT: usize = 100;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What was said: words (all must match in one message; case and accents do not
    /// matter; no stemming: `test` does not find `tests`, `test*` does), "a phrase" in
    /// double quotes, -word to leave out messages with it, word* for a prefix.
    pub query: String,
    /// Only sessions of this agent, by the name sessions give as their `agent` (fen,
    /// claude, codex, pi, gemini, ...; an unknown name's error lists them all).
    #[serde(default)]
    pub agent: Option<String>,
    /// Only sessions started in this directory (an absolute path, e.g. the project's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Only messages written since this date (2026-11-01, 2026-11-01T09:00:00Z) or
    /// within this long back from now (7d, 12h, 2w).
    #[serde(default)]
    pub since: Option<String>,
    /// Only sessions recorded on this machine: this one's name, or another machine's
    /// whose store is synced here (each hit says its `host`).
    #[serde(default)]
    pub host: Option<String>,
    /// At most this many sessions (default 20, at most 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<i64>,
}

pub struct SearchSessions;

impl Tool for SearchSessions {
    type Args = Args;
    const NAME: &'static str = "search_sessions";
    const TITLE: &'static str = "Search past agent sessions";
    const DESCRIPTION: &'static str = "Search the history of past coding-agent sessions (fen's own and those of Claude Code, Codex, pi, OpenCode, Gemini CLI, Copilot CLI, Cursor, OpenClaw on this machine, and those of other machines whose fen store is synced here) by what was said in them: user and assistant text, tool names, tool inputs and outputs. Use it to find what was decided, tried or fixed before. Answers one JSON object per line, one per session, best first: id, agent, host (the machine it was recorded on), cwd, title, dir, path (the session's folder in the fen-fs mount when mounted), role and timestamp of the best matching message, entry (that message's line or entry id), in_conversation (false when a compaction took it out of the conversation), snippet (the match in context, matched words in **bold**), score. Then `note:` lines, if any. Read a hit with read_session {id}; continue it with resume_command {id}.";

    fn call(history: &History, args: Args) -> Result<String, ToolError> {
        let query = crate::search::query::parse(&args.query)
            .map_err(|e| ToolError::argument("query", e.reason))?;
        let request = Request {
            query,
            agent: agent_arg(args.agent.as_deref())?,
            cwd: cwd_arg(args.cwd.as_deref())?,
            since_ms: since_arg(args.since.as_deref())?,
            limit: limit_arg(args.limit, crate::search::DEFAULT_LIMIT, MAX_LIMIT)?,
            host: host_arg(args.host.as_deref())?,
        };
        let found = history.search(&request)?;
        let hits = &found.answer.hits;
        let lines: Vec<String> = hits.iter().map(json_line).collect();
        let mut notes = found.notes;
        if let Some(b) = &found.answer.building {
            notes.push(format!("{}; ask again later for more", b.say()));
        }
        if hits.is_empty() {
            notes.insert(
                0,
                format!("no session matches {:?} (with these filters)", args.query),
            );
        } else if hits.len() == request.limit && request.limit < MAX_LIMIT {
            notes.push(format!(
                "{} sessions shown, there may be more: ask with a higher limit (at most {MAX_LIMIT}) or narrow with agent, cwd, host or since",
                hits.len()
            ));
        }
        Ok(lines_answer(
            &lines,
            &notes,
            "ask with a lower limit, or narrow with agent, cwd, host or since",
        ))
    }
}
