//! The command that resumes a session in its agent, printed for the user (and run
//! by `--exec`): `claude --resume ID`, `codex resume ID`, `pi --session ID`, from the
//! session's working directory. An agent works in the folder it starts in, Claude
//! Code's picker and `--continue` list only that folder's sessions, pi asks to fork a
//! session of another cwd, Codex's picker filters by cwd: so every command starts
//! with `cd CWD &&`.

use crate::agent::Agent;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeCommand {
    pub program: String,
    pub args: Vec<String>,
    /// Where to run it.
    pub cwd: Option<String>,
}

impl ResumeCommand {
    /// `agent`'s own resume command for session `id`, or `None` for an agent fen-fs
    /// knows no such command of (and for fen, whose sessions go on through `ctl`).
    pub fn of(agent: Agent, id: &str, cwd: Option<&str>) -> Option<ResumeCommand> {
        let own = crate::sources::registry::kind(agent).resume_command(id)?;
        Some(ResumeCommand {
            program: own.program.into(),
            args: own.args,
            cwd: cwd.map(String::from),
        })
    }

    /// As a shell command line.
    pub fn shell(&self) -> String {
        let mut words = vec![quote(&self.program)];
        words.extend(self.args.iter().map(|a| quote(a)));
        let cmd = words.join(" ");
        match &self.cwd {
            Some(cwd) => format!("cd {} && {cmd}", quote(cwd)),
            None => cmd,
        }
    }
}

/// The command a user runs to go on with a session in its own agent: `agent`'s
/// resume command for `id`, from `cwd`; for a session its agent deleted (shown from
/// fen's kept copy, `source_deleted`) with `fen-fs restore ID` first, since the
/// agent resumes only what it finds in its own folder. `store_args` are the
/// options that name the store and sources (`--store`, `--source`, `--no-detect`;
/// others are left out, `restore` takes only these).
pub fn own_agent_line(
    agent: Agent,
    id: &str,
    cwd: Option<&str>,
    source_deleted: bool,
    store_args: &[String],
) -> Option<String> {
    let cmd = ResumeCommand::of(agent, id, cwd)?.shell();
    if !source_deleted {
        return Some(cmd);
    }
    let mut words = vec!["fen-fs".to_string(), "restore".into(), quote(id)];
    words.extend(local_store_args(store_args).iter().map(|a| quote(a)));
    Some(format!("{} && {cmd}", words.join(" ")))
}

/// Of a server's `--store`, `--source`, `--no-detect`, `--peers` and `--map`
/// options, those that name this machine's store and sources.
fn local_store_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--store" | "--source" => {
                out.push(a.clone());
                out.extend(it.next().cloned());
            }
            "--no-detect" => out.push(a.clone()),
            _ => {
                // --peers DIR, --map FROM=TO
                it.next();
            }
        }
    }
    out
}

/// `s` as one shell word: as it is when it holds only safe characters, else in
/// single quotes.
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | '.' | '/' | ':' | '@' | '%' | '+' | '=' | ',')
        });
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The `ctl` file of fen session `ns/dir` in the mount of the store at `store_root`,
/// if it is mounted: a fen session goes on through it.
pub fn ctl_in_mount(store_root: &Path, ns: &str, dir: &str) -> Option<PathBuf> {
    mount_of(store_root).map(|mnt| {
        mnt.join(crate::store::naming::mount_name(ns))
            .join(dir)
            .join("ctl")
    })
}

/// The mount point of the store at `root`, if it is mounted.
fn mount_of(root: &Path) -> Option<PathBuf> {
    let want = std::fs::canonicalize(root).ok()?;
    crate::mount_table::fen_mounts()
        .into_iter()
        .find(|m| {
            m.store
                .as_deref()
                .and_then(|s| std::fs::canonicalize(s).ok())
                .is_some_and(|s| s == want)
        })
        .map(|m| m.mountpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_the_agents_own_and_quoted_for_the_shell() {
        let c = ResumeCommand::of(Agent::Claude, "3f0c", Some("/home/u/my proj")).unwrap();
        assert_eq!(c.shell(), "cd '/home/u/my proj' && claude --resume 3f0c");
        let c = ResumeCommand::of(Agent::Codex, "019c", Some("/p")).unwrap();
        assert_eq!(c.shell(), "cd /p && codex resume 019c");
        let c = ResumeCommand::of(Agent::Pi, "019d", None).unwrap();
        assert_eq!(c.shell(), "pi --session 019d");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert!(ResumeCommand::of(Agent::Fen, "x", None).is_none());
    }

    #[test]
    fn a_session_its_agent_deleted_is_restored_before_it_is_resumed() {
        assert_eq!(
            own_agent_line(Agent::Claude, "3f0c", Some("/p"), false, &[]).unwrap(),
            "cd /p && claude --resume 3f0c"
        );
        let args: Vec<String> = [
            "--store",
            "/s",
            "--source",
            "claude=/c",
            "--no-detect",
            "--peers",
            "/peers",
            "--map",
            "/a=/b",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            own_agent_line(Agent::Claude, "3f0c", Some("/p"), true, &args).unwrap(),
            "fen-fs restore 3f0c --store /s --source claude=/c --no-detect && cd /p && claude --resume 3f0c"
        );
        assert!(own_agent_line(Agent::Fen, "x", None, true, &args).is_none());
    }
}
