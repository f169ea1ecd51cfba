//! `fen-fs resume SESSION [--in AGENT] [--cwd DIR] [--exec]`: what it prints and
//! runs, apart from its options (the work is `crate::resume`'s).

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::neutral::SessionMessages;
use crate::resume::command::{ResumeCommand, quote};
use crate::resume::ledger::Ledger;
use crate::resume::{Made, Target};
use crate::sources::ForeignOptions;
use crate::sources::agents::{self, AgentRoot};
use crate::store::{Store, naming};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

pub use crate::resume::{TARGETS, display_name, parse_target};

/// What the command was asked.
pub struct Args {
    pub session: String,
    pub target: Option<Agent>,
    pub cwd: Option<PathBuf>,
    pub exec: bool,
    /// The store's root, and whether it was named (`--store`, `$FEN_FS_STORE`).
    pub store_root: PathBuf,
    pub store_named: bool,
    pub foreign: ForeignOptions,
    /// Other machines' sessions (§12).
    pub peers: crate::sources::peers::PeerOptions,
}

/// The root folder `--in agent` writes under: `--source agent=DIR`, else the
/// agent's own (its variable, else its folder in the home folder) unless detection is
/// off. It must exist: fen-fs creates only the session's own folders inside it.
fn target_root(agent: Agent, foreign: &ForeignOptions) -> Result<PathBuf> {
    let variable = crate::sources::registry::kind(agent).root_hint();
    let (root, given) = match foreign.explicit.iter().rev().find(|r| r.agent == agent) {
        Some(AgentRoot { root, .. }) => (root.clone(), true),
        None if foreign.detect => (
            agents::default_root(agent).ok_or_else(|| {
                Error::not_found(format!(
                    "no folder for {}: HOME is not set ({variable})",
                    display_name(agent)
                ))
            })?,
            false,
        ),
        None => {
            return Err(Error::invalid(format!(
                "--no-detect: name {}'s folder with --source {}=DIR",
                display_name(agent),
                agent.name()
            )));
        }
    };
    if std::fs::metadata(&root).is_ok_and(|m| m.is_dir()) {
        return Ok(root);
    }
    Err(Error::not_found(if given {
        format!(
            "--source {}={}: that folder does not exist (fen-fs creates only the session's own folder inside an existing root)",
            agent.name(),
            root.display()
        )
    } else {
        format!(
            "{}'s folder {} does not exist ({variable}): is {} used here? fen-fs creates only the session's own folder inside an existing root; name another with --source {}=DIR",
            display_name(agent),
            root.display(),
            display_name(agent),
            agent.name()
        )
    }))
}

/// A fen session goes on through its `ctl`: its path in the mount, else (stderr) how
/// to get one, and the file's path.
fn fen_next(store_root: &Path, ns: &str, dir: &str, file: &Path) -> String {
    match crate::resume::command::ctl_in_mount(store_root, ns, dir) {
        Some(ctl) => ctl.display().to_string(),
        None => {
            eprintln!(
                "fen-fs: the store at {} is not mounted: `fen-fs mount MNT`, then append to MNT/{}/{dir}/ctl",
                store_root.display(),
                naming::mount_name(ns)
            );
            file.display().to_string()
        }
    }
}

/// Says so when `cwd` does not exist (the session was still written).
fn note_missing_cwd(cwd: &str) {
    if !Path::new(cwd).is_dir() {
        eprintln!(
            "fen-fs: {cwd} does not exist (moved or renamed?): recreate it or move the project back there and run the command from it, or continue the session elsewhere with --cwd NEWDIR"
        );
    }
}

fn print_line(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
    let _ = out.flush();
}

/// Runs `cmd` in place of this process.
fn exec(cmd: &ResumeCommand) -> Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    let mut c = std::process::Command::new(&cmd.program);
    c.args(&cmd.args);
    if let Some(cwd) = &cmd.cwd {
        if !Path::new(cwd).is_dir() {
            return Err(Error::not_found(format!(
                "cannot run {}: {cwd} does not exist",
                cmd.program
            )));
        }
        c.current_dir(cwd);
    }
    let err = c.exec();
    Err(Error::new(
        libc::ENOENT,
        format!("cannot run {}: {err}", quote(&cmd.program)),
    ))
}

fn describe(made: &Made, session: &SessionMessages) {
    let f = &session.facts;
    let what = display_name(made.agent);
    match &made.earlier {
        Some(when) => eprintln!(
            "fen-fs: {} session {} was already continued in {what} at {when} (unchanged since): {}",
            f.agent.name(),
            f.id,
            made.path.display()
        ),
        None => {
            eprintln!(
                "fen-fs: wrote a new {what} session {} from {} session {} ({} messages): {}",
                made.id,
                f.agent.name(),
                f.id,
                made.messages,
                made.path.display()
            );
            for l in made.report.lines() {
                eprintln!("fen-fs:   {l}");
            }
        }
    }
}

/// Runs `fen-fs resume`.
pub fn run(args: Args) -> Result<ExitCode> {
    let mut writes = args.target.is_some() || args.cwd.is_some();
    if args.exec && args.target == Some(Agent::Fen) {
        eprintln!(
            "fen-fs: --exec has nothing to run for --in fen: a fen session goes on through its ctl file"
        );
        return Ok(ExitCode::from(2));
    }
    // `--in fen` makes a store that does not exist yet (as `mount` does); otherwise
    // a store that is named must exist, and a missing default one reads as empty.
    let store = if args.target == Some(Agent::Fen) {
        Store::open(&args.store_root, Default::default())?
    } else if args.store_root.is_dir()
        || !args.store_named
        || args.session.contains('/')
        || args.session.ends_with(".jsonl")
    {
        Store::open_existing(&args.store_root)
    } else {
        return Err(Error::not_found(format!(
            "no fen-fs store at {} (mistyped --store?)",
            args.store_root.display()
        )));
    };
    let store = Arc::new(store);
    // A missing target root is said before any session is read.
    let early_root = match args.target {
        Some(a) if a != Agent::Fen => Some(target_root(a, &args.foreign)?),
        _ => None,
    };
    let foreign = super::list::foreign_sources(&args.foreign, &store);
    let peers = super::list::peer_sources(&args.peers, &store)?;
    let found = crate::resume::find::find_among(&store, &foreign, &peers, &args.session)?;
    let session = found.source.messages(&found.ns, &found.dir, false)?;
    let facts = &session.facts;
    let source_agent = facts.agent;
    if let Some(why) = crate::resume::unresumable(&session) {
        return Err(Error::invalid(why));
    }
    // Another machine's session (§12) goes on here as a new session, in its cwd as
    // mapped here; nothing is written under `peers/`.
    let store = if facts.host.is_some() {
        writes = true;
        match args.target.unwrap_or(source_agent) {
            Agent::Fen => Arc::new(Store::open(&args.store_root, Default::default())?),
            _ => store,
        }
    } else {
        store
    };

    if !writes {
        // Its own agent's command.
        if source_agent == Agent::Fen {
            if args.exec {
                eprintln!(
                    "fen-fs: --exec has nothing to run for a fen session: it goes on through its ctl file"
                );
                return Ok(ExitCode::from(2));
            }
            print_line(&fen_next(
                &store.root,
                &found.ns,
                &found.dir,
                &facts.source_path,
            ));
            return Ok(ExitCode::SUCCESS);
        }
        let cmd = ResumeCommand::of(source_agent, &facts.id, facts.cwd.as_deref()).ok_or_else(
            || {
                Error::invalid(format!(
                    "fen-fs knows no resume command of {}; continue it in another agent with --in {}",
                    source_agent.name(),
                    TARGETS.join("|")
                ))
            },
        )?;
        if facts.source_deleted {
            // Shown from fen-fs's kept copy: the agent's own resume needs its file.
            eprintln!(
                "fen-fs: {}'s file is gone (fen-fs kept a copy): `fen-fs restore {}` writes it back first",
                crate::resume::session_name(facts),
                facts.id
            );
        }
        print_line(&cmd.shell());
        if let Some(cwd) = &cmd.cwd {
            note_missing_cwd(cwd);
        }
        return if args.exec {
            exec(&cmd)
        } else {
            Ok(ExitCode::SUCCESS)
        };
    }

    // `--cwd` without `--in`: a copy in its own agent.
    let agent = args.target.unwrap_or(source_agent);
    if args.exec && agent == Agent::Fen {
        eprintln!(
            "fen-fs: --exec has nothing to run for a fen session: it goes on through its ctl file"
        );
        return Ok(ExitCode::from(2));
    }
    if !TARGETS.contains(&agent.name()) {
        return Err(Error::invalid(format!(
            "fen-fs cannot write {} sessions; continue it in another agent with --in {}",
            agent.name(),
            TARGETS.join("|")
        )));
    }
    let cwd = match &args.cwd {
        Some(dir) => super::list::absolute_dir(dir),
        None => facts
            .cwd
            .clone()
            .filter(|c| c.starts_with('/'))
            .map(|c| naming::normalize_cwd(&c))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{} records no working directory: say where to continue it with --cwd DIR",
                    crate::resume::session_name(facts)
                ))
            })?,
    };
    let target = match agent {
        Agent::Fen => Target::Fen(store.clone()),
        a => Target::Agent {
            agent: a,
            root: match early_root {
                Some(root) => root,
                None => target_root(a, &args.foreign)?,
            },
        },
    };
    let ledger = Ledger::for_store(&store.root);
    let made = crate::resume::make(&session, &target, &cwd, &ledger)?;
    describe(&made, &session);
    if agent == Agent::Fen {
        let (ns, dir) = made.fen_dir.clone().unwrap_or_default();
        print_line(&fen_next(&store.root, &ns, &dir, &made.path));
        return Ok(ExitCode::SUCCESS);
    }
    let cmd = ResumeCommand::of(agent, &made.id, Some(&made.cwd)).expect("a target agent");
    print_line(&cmd.shell());
    note_missing_cwd(&made.cwd);
    if args.exec {
        exec(&cmd)
    } else {
        Ok(ExitCode::SUCCESS)
    }
}
