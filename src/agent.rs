//! Which agent wrote a session: fen itself, or another agent whose store the mount
//! shows read-only. Each agent is one line below: its variant and its name (the
//! `--source KIND=DIR` kind, `--agent`, `meta.json`'s `agent`, and the serialized form
//! caches and ledgers keep: a name never changes). Everything else an agent is, is
//! its kind in `sources/<agent>/kind.rs`, listed in `sources/registry.rs`.

use serde::{Deserialize, Serialize};

/// Declares the agents: the enum (its order is the order of `ALL`, of maps keyed by
/// agent and of listings), each variant serialized as its name, and `name`/`ALL`.
macro_rules! agents {
    ($($variant:ident = $name:literal,)*) => {
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize,
            Deserialize,
        )]
        pub enum Agent {
            #[default]
            $(#[serde(rename = $name)] $variant,)*
        }

        impl Agent {
            pub fn name(self) -> &'static str {
                match self {
                    $(Agent::$variant => $name,)*
                }
            }

            /// Every kind of store fen-fs reads, fen's own first.
            pub const ALL: [Agent; [$($name),*].len()] = [$(Agent::$variant),*];
        }
    };
}

agents! {
    Fen = "fen",
    Pi = "pi",
    Claude = "claude",
    Codex = "codex",
    Opencode = "opencode",
    Gemini = "gemini",
    Copilot = "copilot",
    Cursor = "cursor",
    Openclaw = "openclaw",
    Qwen = "qwen",
    Aider = "aider",
    Continue = "continue",
    Droid = "droid",
    Crush = "crush",
    Goose = "goose",
    Amp = "amp",
    Zed = "zed",
    Warp = "warp",
    CursorIde = "cursor-ide",
    Kilo = "kilo",
    Cline = "cline",
    Roo = "roo",
    VscodeCopilot = "vscode-copilot",
    Kimi = "kimi",
    Openhands = "openhands",
}

impl Agent {
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
        Agent::ALL
            .into_iter()
            .find(|a| *a != Agent::Fen && a.name() == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::Agent;

    #[test]
    fn names_and_serialized_forms_are_the_ones_kept_on_disk() {
        let names: Vec<&str> = Agent::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(
            names[..9],
            [
                "fen", "pi", "claude", "codex", "opencode", "gemini", "copilot", "cursor",
                "openclaw"
            ]
        );
        for a in Agent::ALL {
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{}\"", a.name()));
            assert_eq!(serde_json::from_str::<Agent>(&json).unwrap(), a);
            assert_eq!(Agent::parse(a.name()), Ok(a));
        }
        assert_eq!(Agent::default(), Agent::Fen);
        assert_eq!(Agent::from_kind("fen"), None);
        assert_eq!(Agent::from_kind("claude"), Some(Agent::Claude));
        // Maps keyed by agent list them in this order.
        assert!(Agent::ALL.windows(2).all(|w| w[0] < w[1]));
    }
}
