//! The tools of `fen-fs mcp`, one file each, and the arguments they share. Adding a
//! tool is a file implementing `tool::Tool` and its line in [`all`].

pub mod list;
pub mod read;
pub mod resume;
pub mod search;
pub mod usage;

use super::tool::{Entry, ToolError, entry};
use crate::agent::Agent;

/// Every tool, in the order `tools/list` gives them.
pub fn all() -> Vec<Entry> {
    vec![
        entry::<search::SearchSessions>(),
        entry::<list::ListSessions>(),
        entry::<read::ReadSession>(),
        entry::<usage::UsageReport>(),
        entry::<resume::ResumeCommand>(),
    ]
}

/// `agent`: fen or another agent's kind.
pub fn agent_arg(agent: Option<&str>) -> Result<Option<Agent>, ToolError> {
    agent
        .map(|a| Agent::parse(a.trim()).map_err(|e| ToolError::argument("agent", e)))
        .transpose()
}

/// `cwd`: a directory as sessions record it (absolute, normalized; a relative one is
/// taken from the server's working directory, as `fen-fs list --cwd` does).
pub fn cwd_arg(cwd: Option<&str>) -> Result<Option<String>, ToolError> {
    match cwd.map(str::trim) {
        None => Ok(None),
        Some("") => Err(ToolError::argument(
            "cwd",
            "empty: give a directory (an absolute path), or leave cwd out",
        )),
        Some(c) => Ok(Some(crate::store::naming::absolute_cwd(
            std::path::Path::new(c),
        ))),
    }
}

/// `host`: a machine's name as sessions carry it (this machine's, or a peer's).
pub fn host_arg(host: Option<&str>) -> Result<Option<String>, ToolError> {
    match host.map(str::trim) {
        Some("") => Err(ToolError::argument(
            "host",
            "empty: give a machine's name, or leave host out",
        )),
        h => Ok(h.map(String::from)),
    }
}

/// `limit`: `default` when absent, 1 to `max`.
pub fn limit_arg(limit: Option<i64>, default: usize, max: usize) -> Result<usize, ToolError> {
    match limit {
        None => Ok(default),
        Some(n) if n >= 1 && n as u64 <= max as u64 => Ok(n as usize),
        Some(n) => Err(ToolError::argument(
            "limit",
            format!("{n} is out of range: 1 to {max}"),
        )),
    }
}

/// `since`: a date or a duration back from now, in milliseconds since the epoch.
pub fn since_arg(since: Option<&str>) -> Result<Option<i64>, ToolError> {
    since
        .map(|s| crate::dates::parse_since(s).map_err(|e| ToolError::argument("since", e)))
        .transpose()
}

/// One JSON object as one line.
pub fn json_line<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_with_a_reason() {
        assert_eq!(agent_arg(Some("codex")).unwrap(), Some(Agent::Codex));
        assert!(
            agent_arg(Some("vim"))
                .unwrap_err()
                .0
                .contains("one of fen, pi")
        );
        assert_eq!(
            cwd_arg(Some("/a/b/../c/")).unwrap().as_deref(),
            Some("/a/c")
        );
        assert!(cwd_arg(Some(" ")).is_err());
        assert_eq!(limit_arg(None, 20, 100).unwrap(), 20);
        assert!(
            limit_arg(Some(0), 20, 100)
                .unwrap_err()
                .0
                .contains("1 to 100")
        );
        assert!(limit_arg(Some(101), 20, 100).is_err());
        assert_eq!(host_arg(Some(" mac ")).unwrap().as_deref(), Some("mac"));
        assert!(
            host_arg(Some(""))
                .unwrap_err()
                .0
                .starts_with("argument host")
        );
        assert!(since_arg(Some("7d")).unwrap().is_some());
        assert!(
            since_arg(Some("yesterday"))
                .unwrap_err()
                .0
                .starts_with("argument since")
        );
    }

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        let tools = all();
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                "search_sessions",
                "list_sessions",
                "read_session",
                "usage",
                "resume_command"
            ]
        );
        for t in &tools {
            assert_eq!(t.spec.input_schema["type"], "object", "{}", t.name());
            assert!(
                t.spec.description.as_ref().unwrap().len() > 80,
                "{}",
                t.name()
            );
        }
    }
}
