//! `resume_command`: the command that continues a session (SPEC §10), printed, never
//! run; nothing is written.

use super::super::tool::{Tool, ToolError};
use crate::agent::Agent;
use crate::history::History;
use crate::resume::command::{ResumeCommand as Command, ctl_in_mount, quote};
use crate::resume::{TARGETS, display_name, parse_target};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The session: its id (as search_sessions and list_sessions give it), a unique
    /// prefix of one, or its folder name (dir).
    pub id: String,
    /// Continue it in this agent instead of its own: fen, pi, claude or codex.
    #[serde(default, rename = "in")]
    pub in_agent: Option<String>,
}

pub struct ResumeCommand;

impl Tool for ResumeCommand {
    type Args = Args;
    const NAME: &'static str = "resume_command";
    const TITLE: &'static str = "How to continue a past agent session";
    const DESCRIPTION: &'static str = "Give the shell command that continues a past coding-agent session, for the user to run; runs nothing and writes nothing. Without `in`: the session's own agent's resume command, from the session's directory (`cd DIR && claude --resume ID`, `codex resume ID`, `pi --session ID`; for a fen session, the ctl file to append to in the fen-fs mount); for a session of another machine (its host is not this one), the `fen-fs resume` command that continues it here as a new session. With `in` (fen, pi, claude or codex): the `fen-fs resume ID --in AGENT` command that writes the conversation as a new session of that agent and prints how to open it (or, when that was done before from the same unchanged session, the command that opens the session made then). The first line is the command; the lines after it explain.";

    fn call(history: &History, args: Args) -> Result<String, ToolError> {
        let spec = args.id.trim();
        if spec.is_empty() {
            return Err(ToolError::argument("id", "empty: give a session's id"));
        }
        let target = args
            .in_agent
            .as_deref()
            .map(|a| parse_target(a.trim()).map_err(|e| ToolError::argument("in", e)))
            .transpose()?;
        let found = history.find(spec)?;
        let session = found.source.messages(&found.ns, &found.dir, false)?;
        if let Some(why) = crate::resume::unresumable(&session) {
            return Err(ToolError::new(why));
        }
        let facts = &session.facts;
        // Another machine's session is named by its folder (`…@host`: unique across
        // machines, whatever ids they chose).
        let peer = found.source.host().map(String::from);
        let id = if facts.id.is_empty() || peer.is_some() {
            found.dir.clone()
        } else {
            facts.id.clone()
        };
        let target = match (target, &peer) {
            (Some(t), _) => t,
            (None, None) => {
                return own_agent(history, facts, &id, &found);
            }
            // Its agent here has no copy of it: it goes on as a new session of its own
            // agent, as `fen-fs resume` does (§12).
            (None, Some(host)) => parse_target(facts.agent.name()).map_err(|_| {
                ToolError::new(format!(
                    "{id} is a {} session of {host}: fen-fs cannot write {} sessions here; continue it in another agent with in: {}",
                    display_name(facts.agent),
                    display_name(facts.agent),
                    TARGETS.join(", ")
                ))
            })?,
        };
        // Continued there before from the same unchanged file: that session's command.
        let cwd = facts
            .cwd
            .as_deref()
            .filter(|c| c.starts_with('/'))
            .map(crate::store::naming::normalize_cwd);
        if let Some(r) = crate::resume::made_earlier(&history.store().root, facts, target) {
            let cmd = match Command::of(target, &r.id, Some(&r.cwd)) {
                Some(c) => c.shell(),
                None => format!("fen-fs resume {}", quote(&r.id)),
            };
            return Ok(format!(
                "{cmd}\nThis session was already continued in {} at {} (unchanged since): the command above opens that session ({}).\n",
                display_name(target),
                r.made_at,
                r.path.display()
            ));
        }
        let mut words = vec!["fen-fs".to_string(), "resume".into(), quote(&id)];
        if args.in_agent.is_some() {
            words.extend(["--in".to_string(), target.name().into()]);
        }
        words.extend(history.store_args.iter().map(|a| quote(a)));
        let mut why = String::new();
        if let Some(host) = &peer {
            why.push_str(&format!(
                "This session was recorded on {host} (synced here, read-only): it goes on here as a new session. "
            ));
        }
        if target == Agent::Fen {
            why.push_str("Running it writes a new fen session in fen's store");
        } else {
            why.push_str(&format!(
                "Running it writes a new {} session where {} finds it",
                display_name(target),
                display_name(target)
            ));
        }
        why.push_str(&format!(
            ", holding this conversation ({} {id}){}; it changes nothing that exists, and prints the command that opens the new session{}.",
            facts.agent.name(),
            cwd.as_deref()
                .map(|c| format!(", in {c}"))
                .unwrap_or_default(),
            if target == Agent::Fen {
                ""
            } else {
                " (add --exec to run that too)"
            }
        ));
        if cwd.is_none() {
            why.push_str(" The session records no working directory: add --cwd DIR.");
        }
        Ok(format!("{}\n{why}\n", words.join(" ")))
    }
}

/// The session's own agent's command.
fn own_agent(
    history: &History,
    facts: &crate::neutral::SessionFacts,
    id: &str,
    found: &crate::resume::find::Found,
) -> Result<String, ToolError> {
    let (agent, cwd) = (facts.agent, facts.cwd.as_deref());
    if agent == Agent::Fen {
        let root = &history.store().root;
        return Ok(match ctl_in_mount(root, &found.ns, &found.dir) {
            Some(ctl) => format!(
                "{}\nA fen session goes on through its ctl file: append JSON lines to it (one message a line, as the mount's ctl files take them).\n",
                quote(&ctl.display().to_string())
            ),
            None => format!(
                "fen-fs mount MNT --store {}\nThe store is not mounted: mount it, then append to MNT/{}/{}/ctl (a fen session goes on through its ctl file).\n",
                quote(&root.display().to_string()),
                crate::store::naming::mount_name(&found.ns),
                found.dir
            ),
        });
    }
    let unknown = || {
        ToolError::new(format!(
            "fen-fs knows no resume command of {}; continue it in another agent with in: {}",
            agent.name(),
            TARGETS.join(", ")
        ))
    };
    let cmd = Command::of(agent, id, cwd).ok_or_else(unknown)?;
    let mut out = crate::resume::command::own_agent_line(
        agent,
        id,
        cwd,
        facts.source_deleted,
        &history.store_args,
    )
    .ok_or_else(unknown)?;
    out.push('\n');
    if facts.source_deleted {
        out.push_str(&format!(
            "Its file is gone from {}'s folder (fen-fs kept a copy): `fen-fs restore` writes it back where {} finds it, then {} resumes it.\n",
            display_name(agent),
            display_name(agent),
            display_name(agent)
        ));
    }
    if let Some(cwd) = &cmd.cwd
        && !std::path::Path::new(cwd).is_dir()
    {
        out.push_str(&format!(
            "{cwd} does not exist any more (moved or renamed?): recreate it, or continue the session elsewhere with `fen-fs resume {} --cwd NEWDIR`.\n",
            quote(id)
        ));
    }
    Ok(out)
}
