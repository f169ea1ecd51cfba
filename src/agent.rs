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
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::Fen => "fen",
            Agent::Pi => "pi",
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    /// The agent a `--source KIND=DIR` names (`fen` is not a source kind).
    pub fn from_kind(kind: &str) -> Option<Agent> {
        Some(match kind {
            "pi" => Agent::Pi,
            "claude" => Agent::Claude,
            "codex" => Agent::Codex,
            _ => return None,
        })
    }
}
