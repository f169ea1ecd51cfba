//! Which agent wrote a session: fen itself, or another agent whose store the mount
//! shows read-only.

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    #[default]
    Fen,
    Pi,
    Claude,
    Codex,
    Opencode,
    Gemini,
    Copilot,
    Cursor,
    Openclaw,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::Fen => "fen",
            Agent::Pi => "pi",
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Opencode => "opencode",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
            Agent::Cursor => "cursor",
            Agent::Openclaw => "openclaw",
        }
    }

    /// Every kind of store fen-fs reads, fen's own first.
    pub const ALL: [Agent; 9] = [
        Agent::Fen,
        Agent::Pi,
        Agent::Claude,
        Agent::Codex,
        Agent::Opencode,
        Agent::Gemini,
        Agent::Copilot,
        Agent::Cursor,
        Agent::Openclaw,
    ];

    /// The agent `name` names (`--agent KIND`, a tool's `agent`): fen, or one of the
    /// other agents' kinds; the error lists them.
    pub fn parse(name: &str) -> Result<Agent, String> {
        Agent::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Agent::ALL.iter().map(|a| a.name()).collect();
                format!("unknown agent {name:?}: one of {}", names.join(", "))
            })
    }

    /// The agent a `--source KIND=DIR` names (`fen` is not a source kind).
    pub fn from_kind(kind: &str) -> Option<Agent> {
        Some(match kind {
            "pi" => Agent::Pi,
            "claude" => Agent::Claude,
            "codex" => Agent::Codex,
            "opencode" => Agent::Opencode,
            "gemini" => Agent::Gemini,
            "copilot" => Agent::Copilot,
            "cursor" => Agent::Cursor,
            "openclaw" => Agent::Openclaw,
            _ => return None,
        })
    }
}
