//! `fen-fs keep`: brings every kept copy up to date once, without a mount (for a
//! timer), and says what it kept.

use crate::agent::Agent;
use crate::background::Background;
use crate::keep::{KeepOptions, Keeper, human_size};
use crate::sources::ForeignOptions;
use crate::store::Store;
use crate::store::durability::FsyncMode;
use crate::store::kept::Control;
use std::path::PathBuf;
use std::process::ExitCode;

pub struct Args {
    pub store_root: PathBuf,
    pub foreign: ForeignOptions,
    pub agents: Option<Vec<Agent>>,
    /// Only the summary line, not one line per copy.
    pub quiet: bool,
}

/// `KIND` of `--keep-agent` (any agent fen-fs reads but fen itself).
pub fn parse_agent(s: &str) -> Result<Agent, String> {
    Agent::from_kind(s).ok_or_else(|| {
        let kinds: Vec<&str> = (Agent::ALL.iter())
            .filter(|a| **a != Agent::Fen)
            .map(|a| a.name())
            .collect();
        format!("one of {}", kinds.join(", "))
    })
}

pub fn run(args: Args) -> crate::Result<ExitCode> {
    let created = std::fs::symlink_metadata(&args.store_root).is_err();
    Store::open(&args.store_root, FsyncMode::default())?;
    if created {
        eprintln!(
            "fen-fs: created a new store at {}",
            args.store_root.display()
        );
    }
    let live: Vec<_> = crate::sources::foreign_sources(&args.foreign, &args.store_root, false)
        .into_iter()
        .filter(|s| s.kept_copies().is_none())
        .collect();
    let options = KeepOptions {
        agents: args.agents.clone(),
        lines: !args.quiet,
    };
    let Some(keeper) = Keeper::new(&args.store_root, live.clone(), options)? else {
        println!(
            "another keeper (a mount of this store, or another fen-fs keep) is keeping {}; nothing done",
            args.store_root.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let started = std::time::Instant::now();
    // SIGINT/SIGTERM stop it at the next session, saving what it kept.
    let bg = stopped_by_signals();
    let test_pause = crate::keep::test_pause();
    // The agents' first indexes are built while the keeper copies the sessions of
    // those already built.
    let report = std::thread::scope(|scope| {
        for s in &live {
            let bg = &bg;
            scope.spawn(move || s.build_index_with(bg));
        }
        keeper.pass(&Control {
            stop: &|| bg.should_stop(),
            pause: &|| {
                if let Some(d) = test_pause {
                    std::thread::sleep(d);
                }
            },
        })
    });
    // The indexes, so that the next run (or mount) need not read unchanged files.
    for s in &live {
        crate::sources::SessionSource::persist(s.as_ref());
    }
    if !args.quiet {
        for line in &report.lines {
            println!("{line}");
        }
    }
    let (disk, held) = keeper.sizes();
    println!(
        "kept in {:.1?}: {}; {} copies take {} for {} of sessions, in {}",
        started.elapsed(),
        report.say(),
        keeper.copies().len(),
        human_size(disk),
        human_size(held),
        crate::store::layout::kept_dir(&args.store_root).display()
    );
    for f in &report.failed {
        eprintln!("fen-fs: keep: {f}");
    }
    if report.stopped {
        eprintln!("fen-fs: keep: stopped; what was kept is saved, run fen-fs keep again to go on");
        return Ok(ExitCode::from(130));
    }
    if report.disk_full {
        eprintln!("fen-fs: keep: the disk is full; run fen-fs keep again once there is room");
    }
    Ok(if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A `Background` that the first SIGINT or SIGTERM stops (a second one ends the
/// process at once). The signals are blocked in this thread, and so in every thread
/// started after it, and taken by one thread of their own.
fn stopped_by_signals() -> Background {
    let bg = Background::new();
    // SAFETY: a signal set built and used in place.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let stop = bg.clone();
    let started = std::thread::Builder::new()
        .name("fen-keep-signals".into())
        .spawn(move || {
            let mut sig = 0;
            // SAFETY: a valid set and out-pointer.
            unsafe { libc::sigwait(&set, &mut sig) };
            log::info!("signal {sig}: stopping at the next session");
            stop.stop();
            // SAFETY: as above.
            unsafe { libc::sigwait(&set, &mut sig) };
            std::process::exit(128 + sig);
        });
    if started.is_err() {
        // No thread to take them: the signals end the process as before.
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
    bg
}
