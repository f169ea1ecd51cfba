//! The `fen-fs` command line: only wiring; the work is in the library.

use clap::{Parser, Subcommand};
use fen_fs::store::{Store, default_root, naming};
use fen_fs::views::{self, ViewKind, listing};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "fen-fs",
    version,
    about = "A FUSE filesystem for AI coding agents' sessions"
)]
struct Cli {
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

#[derive(Subcommand)]
enum Command {
    /// Mount the store at MOUNTPOINT (returns once it is ready, leaving a daemon).
    Mount(fen_fs::daemon::MountArgs),
    /// Unmount, also a stale mount left by a killed daemon.
    Umount { mountpoint: PathBuf },
    /// Print the namespace (folder name) of DIR (default: the current directory).
    Slug { dir: Option<PathBuf> },
    /// List sessions, newest first.
    List {
        /// Sessions whose header cwd is DIR (default: the current directory).
        #[arg(long, conflicts_with = "all")]
        cwd: Option<PathBuf>,
        /// Every session in the store.
        #[arg(long)]
        all: bool,
        /// A JSON array of index.json's objects instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Print one view of a session (by id, unique id prefix, or file path).
    Show {
        session: String,
        #[arg(long, value_enum, default_value = "summary")]
        view: ViewKind,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Check transcripts and report problems; changes nothing.
    Fsck {
        session: Option<String>,
        #[command(flatten)]
        store: StoreArg,
    },
}

fn current_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

fn run(cli: Cli) -> Result<ExitCode, fen_fs::Error> {
    match cli.command {
        Command::Mount(args) => fen_fs::daemon::mount(args),
        Command::Umount { mountpoint } => {
            fen_fs::daemon::umount(&mountpoint).map(|_| ExitCode::SUCCESS)
        }
        Command::Slug { dir } => {
            let dir = dir.unwrap_or_else(current_dir);
            println!("{}", naming::slug(&fen_fs::cli::absolute_dir(&dir)));
            Ok(ExitCode::SUCCESS)
        }
        Command::List {
            cwd,
            all,
            json,
            store,
        } => {
            let store = Store::open_existing(store.root());
            let cwd = (!all).then(|| fen_fs::cli::absolute_dir(&cwd.unwrap_or_else(current_dir)));
            let list = fen_fs::cli::list(&store, cwd.as_deref())?;
            let out = if json {
                listing::render_json(&list)
            } else {
                listing::render_table(&list).into_bytes()
            };
            let _ = std::io::stdout().write_all(&out);
            Ok(ExitCode::SUCCESS)
        }
        Command::Show {
            session,
            view,
            store,
        } => {
            let store = Store::open_existing(store.root());
            let session = store.resolve(&session)?;
            let snap = views::snapshot(&session, view, 0)?;
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
        Command::Fsck { session, store } => {
            let store = Store::open_existing(store.root());
            fen_fs::fsck::run(&store, session.as_deref())
        }
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fen-fs: {}", e.reason);
            ExitCode::from(1)
        }
    }
}
