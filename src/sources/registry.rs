//! Every kind of agent, by the `Agent` it is: the one list a new agent is added to
//! (its folder `sources/<agent>/` holds its kind; `agent.rs` its name). The match is
//! exhaustive, so an agent without a kind does not compile.

use super::kind::AgentKind;
use super::{
    aider, amp, claude, cline, codex, continue_cli, copilot, crush, cursor, cursor_ide, droid, fen,
    gemini, goose, kilo, kimi, openclaw, opencode, openhands, pi, qwen, roo, vscode_copilot, warp,
    zed,
};
use crate::agent::Agent;

/// What fen-fs knows of `agent`.
pub fn kind(agent: Agent) -> &'static dyn AgentKind {
    match agent {
        Agent::Fen => &fen::kind::Fen,
        Agent::Pi => &pi::kind::Pi,
        Agent::Claude => &claude::kind::Claude,
        Agent::Codex => &codex::kind::Codex,
        Agent::Opencode => &opencode::kind::Opencode,
        Agent::Gemini => &gemini::kind::Gemini,
        Agent::Copilot => &copilot::kind::Copilot,
        Agent::Cursor => &cursor::kind::Cursor,
        Agent::Openclaw => &openclaw::kind::Openclaw,
        Agent::Qwen => &qwen::kind::Qwen,
        Agent::Aider => &aider::kind::Aider,
        Agent::Continue => &continue_cli::kind::Continue,
        Agent::Droid => &droid::kind::Droid,
        Agent::Crush => &crush::kind::Crush,
        Agent::Goose => &goose::kind::Goose,
        Agent::Amp => &amp::kind::Amp,
        Agent::Zed => &zed::kind::Zed,
        Agent::Warp => &warp::kind::Warp,
        Agent::CursorIde => &cursor_ide::kind::CursorIde,
        Agent::Kilo => &kilo::kind::Kilo,
        Agent::Cline => &cline::kind::Cline,
        Agent::Roo => &roo::kind::Roo,
        Agent::VscodeCopilot => &vscode_copilot::kind::VscodeCopilot,
        Agent::Kimi => &kimi::kind::Kimi,
        Agent::Openhands => &openhands::kind::Openhands,
    }
}

/// The other agents' kinds (all but fen), in `Agent::ALL`'s order.
pub fn foreign() -> impl Iterator<Item = &'static dyn AgentKind> {
    Agent::ALL
        .into_iter()
        .filter(|a| *a != Agent::Fen)
        .map(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_has_its_own_kind() {
        for a in Agent::ALL {
            assert_eq!(kind(a).agent(), a, "the kind listed for {}", a.name());
        }
    }
}
