//! The `fen-fs` command line: with `main.rs`, the only users of `clap`. Each command
//! parses its options here and calls the library; the work is done there.

pub mod list;
pub mod trash;

use crate::ctl::DEFAULT_MAX_ENTRY_BYTES;
use crate::daemon::MountOptions;
use crate::sources::agents::{self, AgentRoot};
use crate::sources::{ForeignOptions, SessionSource};
use crate::store::durability::FsyncMode;
use crate::store::{Store, default_root, naming};
use crate::views::{self, ViewKind, listing};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "fen-fs",
    version,
    about = "A FUSE filesystem for AI coding agents' sessions"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct StoreArg {
    /// The store folder (else $FEN_FS_STORE, else $XDG_STATE_HOME/fen/sessions).
    #[arg(long, global = true)]
    store: Option<PathBuf>,
}

impl StoreArg {
    fn root(&self) -> PathBuf {
        self.store.clone().unwrap_or_else(default_root)
    }
}

fn parse_fsync(s: &str) -> Result<FsyncMode, String> {
    FsyncMode::from_name(s).ok_or_else(|| format!("one of {}", FsyncMode::NAMES.join(", ")))
}

fn parse_view(s: &str) -> Result<ViewKind, String> {
    ViewKind::from_name(s).ok_or_else(|| "one of conversation, meta, summary, transcript".into())
}

/// Which other agents' stores to show (`mount`, `list`, `show`).
#[derive(clap::Args, Debug, Clone, Default)]
struct SourceArgs {
    /// Show KIND's sessions from DIR (KIND: pi, claude or codex); repeatable; replaces
    /// the detected root of that agent.
    #[arg(long = "source", value_name = "KIND=DIR", value_parser = agents::parse_source)]
    sources: Vec<AgentRoot>,
    /// Do not look for other agents' stores ($PI_CODING_AGENT_DIR or ~/.pi/agent,
    /// $CLAUDE_CONFIG_DIR or ~/.claude, $CODEX_HOME or ~/.codex).
    #[arg(long)]
    no_detect: bool,
}

impl SourceArgs {
    fn options(&self) -> ForeignOptions {
        ForeignOptions {
            detect: !self.no_detect,
            explicit: self.sources.clone(),
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
struct MountArgs {
    mountpoint: PathBuf,
    /// The store folder (else $FEN_FS_STORE, else $XDG_STATE_HOME/fen/sessions).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Stay attached to the terminal instead of leaving a daemon.
    #[arg(long)]
    foreground: bool,
    /// When an acknowledged append reaches the disk: always, everysec or no.
    #[arg(long, value_parser = parse_fsync, default_value = "always")]
    fsync: FsyncMode,
    /// Let other users see the mount (needs user_allow_other for non-root).
    #[arg(long)]
    allow_other: bool,
    /// Request-handling threads.
    #[arg(long, default_value_t = 16)]
    threads: usize,
    /// Where the detached daemon logs (RUST_LOG sets the level).
    #[arg(long)]
    log_file: Option<PathBuf>,
    /// Longest accepted ctl line (and unterminated buffer), in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_ENTRY_BYTES)]
    max_entry_bytes: usize,
    #[command(flatten)]
    sources: SourceArgs,
}

impl MountArgs {
    fn options(self) -> MountOptions {
        MountOptions {
            mountpoint: self.mountpoint,
            store: self.store.unwrap_or_else(default_root),
            foreground: self.foreground,
            fsync: self.fsync,
            allow_other: self.allow_other,
            threads: self.threads,
            log_file: self.log_file,
            max_entry_bytes: self.max_entry_bytes,
            foreign: self.sources.options(),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Mount the store at MOUNTPOINT (returns once it is ready, leaving a daemon).
    Mount(MountArgs),
    /// Unmount, also a stale mount left by a killed daemon.
    Umount { mountpoint: PathBuf },
    /// Print the namespace (folder name) of DIR (default: the current directory).
    Slug { dir: Option<PathBuf> },
    /// List sessions, newest first.
    List {
        /// Sessions whose header cwd is DIR (default: the current directory).
        #[arg(long, conflicts_with = "all")]
        cwd: Option<PathBuf>,
        /// Every session: fen's and other agents', with an AGENT column.
        #[arg(long)]
        all: bool,
        /// A JSON array of index.json's objects instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Print one view of a session (by id, unique id prefix, or file path).
    Show {
        session: String,
        /// conversation, meta, summary or transcript.
        #[arg(long, value_parser = parse_view, default_value = "summary")]
        view: ViewKind,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Check transcripts and report problems; changes nothing.
    Fsck {
        session: Option<String>,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Move sessions to the trash (by id, unique id prefix, or file path).
    Rm {
        #[arg(required = true)]
        sessions: Vec<String>,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Put trashed sessions back where they were (by id, unique id prefix, or path).
    Restore {
        #[arg(required = true)]
        sessions: Vec<String>,
        #[command(flatten)]
        store: StoreArg,
    },
    /// What is in the trash, and emptying it.
    Trash {
        #[command(subcommand)]
        action: TrashCommand,
        #[command(flatten)]
        store: StoreArg,
    },
}

#[derive(Subcommand)]
enum TrashCommand {
    /// Trashed sessions, most recently deleted first.
    List {
        /// A JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove trashed sessions for good.
    Empty {
        /// Only those deleted longer ago than this (30d, 12h, 90m, 2w, 1d12h).
        #[arg(long, value_parser = trash::parse_duration)]
        older_than: Option<std::time::Duration>,
    },
}

/// Runs `one` for each of `specs`; a failure is reported and the rest still run.
fn each(specs: &[String], mut one: impl FnMut(&str) -> crate::Result<String>) -> ExitCode {
    let mut failed = false;
    for spec in specs {
        match one(spec) {
            Ok(msg) => println!("{msg}"),
            Err(e) => {
                eprintln!("fen-fs: {spec}: {}", e.reason);
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn current_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> crate::Result<ExitCode> {
    match cli.command {
        Command::Mount(args) => crate::daemon::mount(args.options()),
        Command::Umount { mountpoint } => {
            crate::daemon::umount(&mountpoint).map(|_| ExitCode::SUCCESS)
        }
        Command::Slug { dir } => {
            let dir = dir.unwrap_or_else(current_dir);
            println!("{}", naming::slug(&list::absolute_dir(&dir)));
            Ok(ExitCode::SUCCESS)
        }
        Command::List {
            cwd,
            all,
            json,
            store,
            sources,
        } => {
            let store = Store::open_existing(store.root());
            let foreign = list::foreign_sources(&sources.options(), &store);
            let cwd = (!all).then(|| list::absolute_dir(&cwd.unwrap_or_else(current_dir)));
            let list = list::list_with(&store, &foreign, cwd.as_deref())?;
            let out = if json {
                listing::render_json(&list)
            } else {
                let agents = all || list.iter().any(|l| l.agent != crate::agent::Agent::Fen);
                listing::render_table(&list, agents).into_bytes()
            };
            let _ = std::io::stdout().write_all(&out);
            Ok(ExitCode::SUCCESS)
        }
        Command::Show {
            session,
            view,
            store,
            sources,
        } => {
            let store = Store::open_existing(store.root());
            let snap = match store.resolve(&session) {
                Ok(session) => views::snapshot(&session, view, 0)?,
                Err(fen_err) => {
                    let foreign = list::foreign_sources(&sources.options(), &store);
                    match list::resolve_foreign(&foreign, &session)? {
                        Some((source, ns, dir)) => source.snapshot(&ns, &dir, view, 0)?,
                        None => return Err(fen_err),
                    }
                }
            };
            let mut stdout = std::io::stdout().lock();
            let mut off = 0u64;
            let size = snap.size();
            while off < size {
                let chunk = snap.read_at(off, 1 << 20)?;
                if chunk.is_empty() {
                    break;
                }
                off += chunk.len() as u64;
                if stdout.write_all(&chunk).is_err() {
                    break;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Rm { sessions, store } => {
            let store = Store::open_existing(store.root());
            Ok(each(&sessions, |spec| {
                let (ns, dir) = trash::resolve_live(&store, spec)?;
                Ok(trash::describe(&store.trash_session(&ns, &dir)?))
            }))
        }
        Command::Restore { sessions, store } => {
            let store = Store::open_existing(store.root());
            Ok(each(&sessions, |spec| {
                let t = store.resolve_trashed(spec)?;
                let to = store.restore(&t)?;
                Ok(format!("restored {}", trash::relative(&store, &to)))
            }))
        }
        Command::Trash {
            action: TrashCommand::List { json },
            store,
        } => {
            let store = Store::open_existing(store.root());
            let list: Vec<_> = store
                .trashed()?
                .iter()
                .map(trash::TrashListing::of)
                .collect();
            let out = if json {
                trash::render_json(&list)
            } else {
                trash::render_table(&list).into_bytes()
            };
            let _ = std::io::stdout().write_all(&out);
            Ok(ExitCode::SUCCESS)
        }
        Command::Trash {
            action: TrashCommand::Empty { older_than },
            store,
        } => {
            let store = Store::open_existing(store.root());
            // Older than more than the calendar holds: nothing is.
            let cutoff = older_than.map(|d| {
                chrono::Duration::from_std(d)
                    .ok()
                    .and_then(|d| chrono::Utc::now().checked_sub_signed(d))
                    .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
            });
            let removed = store.empty_trash(cutoff)?;
            println!(
                "removed {} trashed session(s), {}",
                removed.len(),
                trash::total_size(&removed)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Fsck { session, store } => {
            let store = Store::open_existing(store.root());
            let report = crate::check::check_store(&store, session.as_deref())?;
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(report.render().as_bytes());
            let _ = stdout.flush();
            Ok(if report.bad() > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}
