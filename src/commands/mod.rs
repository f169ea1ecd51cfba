//! The `fen-fs` command line: with `main.rs`, the only users of `clap`. Each command
//! parses its options here and calls the library; the work is done there.

pub mod export;
pub mod keep;
pub mod list;
pub mod mcp;
pub mod resume;
pub mod search;
pub mod status;
pub mod sync;
pub mod trash;
pub mod usage;
pub mod web;

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

    /// The store for a command that only reads: never created. A store named by
    /// `--store` or $FEN_FS_STORE must exist (a typo is an error, not a new empty
    /// store); the default one may not exist yet (nothing was ever mounted), and then
    /// reads as empty.
    fn existing(&self) -> crate::Result<Store> {
        let root = self.root();
        let named =
            self.store.is_some() || std::env::var_os("FEN_FS_STORE").is_some_and(|v| !v.is_empty());
        match std::fs::metadata(&root) {
            Ok(m) if m.is_dir() => Ok(Store::open_existing(root)),
            Ok(_) => Err(crate::Error::invalid(format!(
                "{} is not a folder, so not a fen-fs store",
                root.display()
            ))),
            Err(_) if !named => Ok(Store::open_existing(root)),
            Err(_) => Err(crate::Error::not_found(format!(
                "no fen-fs store at {} (mistyped --store? `fen-fs mount` creates a store)",
                root.display()
            ))),
        }
    }
}

/// The `--store`, `--source`, `--no-detect`, `--peers` and `--map` options again, for
/// the commands a server prints (run elsewhere: folders absolute).
fn server_store_args(store: &StoreArg, sources: &SourceArgs, peers: &PeerArgs) -> Vec<String> {
    let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
    let mut args = Vec::new();
    if let Some(dir) = &store.store {
        args.extend(["--store".to_string(), absolute(dir).display().to_string()]);
    }
    for r in &sources.sources {
        args.push("--source".into());
        args.push(format!("{}={}", r.agent.name(), r.root.display()));
    }
    if sources.no_detect {
        args.push("--no-detect".into());
    }
    if let Some(dir) = &peers.peers {
        args.extend(["--peers".to_string(), absolute(dir).display().to_string()]);
    }
    for m in &peers.maps {
        args.extend(["--map".to_string(), format!("{}={}", m.from, m.to)]);
    }
    args
}

fn parse_fsync(s: &str) -> Result<FsyncMode, String> {
    FsyncMode::from_name(s).ok_or_else(|| format!("one of {}", FsyncMode::NAMES.join(", ")))
}

fn parse_limit(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("a number of sessions, 1 or more".into()),
    }
}

fn parse_view(s: &str) -> Result<ViewKind, String> {
    ViewKind::from_name(s).ok_or_else(|| {
        "one of conversation, md (conversation.md), meta, summary, transcript".into()
    })
}

/// Which other agents' stores to show (`mount`, `list`, `show`).
#[derive(clap::Args, Debug, Clone, Default)]
struct SourceArgs {
    /// Show KIND's sessions from DIR (KIND: an agent's name, e.g. claude, codex, pi,
    /// gemini; a wrong one lists them all); repeatable; replaces the detected root of
    /// that agent.
    #[arg(long = "source", value_name = "KIND=DIR", value_parser = agents::parse_source)]
    sources: Vec<AgentRoot>,
    /// Do not look for other agents' stores ($PI_CODING_AGENT_DIR or ~/.pi/agent,
    /// $CLAUDE_CONFIG_DIR or ~/.claude, $CODEX_HOME or ~/.codex, ~/.gemini, ~/.copilot,
    /// ~/.cursor, ~/.openclaw...).
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

/// Other machines' sessions (§12).
#[derive(clap::Args, Debug, Clone, Default)]
struct PeerArgs {
    /// Other machines' stores, one folder each, as Syncthing receives them (default:
    /// $XDG_STATE_HOME/fen/peers).
    #[arg(long, value_name = "DIR")]
    peers: Option<PathBuf>,
    /// Read other machines' working directories under FROM as under TO (repeatable;
    /// before config.toml's [[path_map]] rules).
    #[arg(long = "map", value_name = "FROM=TO", value_parser = crate::config::parse_map)]
    maps: Vec<crate::config::PathRule>,
}

impl PeerArgs {
    fn options(&self) -> crate::sources::peers::PeerOptions {
        crate::sources::peers::PeerOptions {
            dir: self.peers.clone(),
            maps: self.maps.clone(),
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
    #[arg(short = 'f', long)]
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
    /// Where the detached daemon logs (RUST_LOG sets the level); default
    /// $XDG_STATE_HOME/fen/fen-fs.log.
    #[arg(long)]
    log_file: Option<PathBuf>,
    /// Longest accepted ctl line (and unterminated buffer), in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_ENTRY_BYTES)]
    max_entry_bytes: usize,
    /// Mount over a folder that is not empty (its files are hidden while mounted).
    #[arg(long)]
    nonempty: bool,
    #[command(flatten)]
    sources: SourceArgs,
    #[command(flatten)]
    peers: PeerArgs,
    /// Do not keep copies of other agents' sessions (also FEN_FS_KEEP=off).
    #[arg(long)]
    no_keep: bool,
    /// Keep copies of this agent's sessions only (repeatable; default: every agent).
    #[arg(long = "keep-agent", value_name = "KIND", value_parser = keep::parse_agent)]
    keep_agents: Vec<crate::agent::Agent>,
    /// Mount options, comma-separated, as mount(8) and /etc/fstab pass them:
    /// fsync=MODE, allow_other, threads=N, log_file=FILE, max_entry_bytes=N,
    /// store=DIR, no_detect, nonempty, nokeep, keep_agent=KIND; generic ones (rw, nosuid, nodev, noatime, ...) are accepted.
    #[arg(short = 'o', value_name = "OPTS", value_delimiter = ',')]
    mount_options: Vec<String>,
    /// Set by `normalize_args` for mount(8)'s form: the store and the mount point
    /// must exist, nothing is created.
    #[arg(long, hide = true)]
    as_mount_helper: bool,
    /// mount(8)'s `-f` to its helper: a fake mount, everything checked, nothing mounted.
    #[arg(long, hide = true)]
    fake_mount: bool,
}

/// Mount options that mean nothing to fen-fs beyond what it always does, or that are
/// mount(8)'s own (fstab).
const GENERIC_OPTIONS: [&str; 16] = [
    "rw",
    "ro",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "exec",
    "noexec",
    "atime",
    "noatime",
    "auto",
    "noauto",
    "user",
    "users",
    "_netdev",
    "default_permissions",
];

impl MountArgs {
    /// Folds `-o key=value,...` into the options proper.
    fn apply_mount_options(&mut self) -> crate::Result<()> {
        for opt in std::mem::take(&mut self.mount_options) {
            let (key, value) = match opt.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (opt.as_str(), None),
            };
            let need = |v: Option<&str>| {
                v.map(str::to_string).ok_or_else(|| {
                    crate::Error::invalid(format!("mount option {key} needs a value"))
                })
            };
            let bad = |why: String| crate::Error::invalid(format!("mount option {opt}: {why}"));
            match key.replace('-', "_").as_str() {
                "fsync" => self.fsync = parse_fsync(&need(value)?).map_err(bad)?,
                "allow_other" => self.allow_other = true,
                "threads" => {
                    self.threads = need(value)?.parse().map_err(|e| bad(format!("{e}")))?
                }
                "max_entry_bytes" => {
                    self.max_entry_bytes = need(value)?.parse().map_err(|e| bad(format!("{e}")))?
                }
                "log_file" => self.log_file = Some(PathBuf::from(need(value)?)),
                "store" => self.store = Some(PathBuf::from(need(value)?)),
                "no_detect" => self.sources.no_detect = true,
                "peers" => self.peers.peers = Some(PathBuf::from(need(value)?)),
                "foreground" => self.foreground = true,
                "nonempty" => self.nonempty = true,
                "nokeep" | "no_keep" => self.no_keep = true,
                "keep_agent" => self
                    .keep_agents
                    .push(keep::parse_agent(&need(value)?).map_err(bad)?),
                k if GENERIC_OPTIONS.contains(&k) => {}
                _ => return Err(crate::Error::invalid(format!("unknown mount option {opt}"))),
            }
        }
        Ok(())
    }

    /// mount(8)'s form names a store and a mount point that exist: a missing one is
    /// an error (a typo there must not leave a new store or folder behind).
    fn check_both_exist(&self) -> crate::Result<()> {
        if !self.as_mount_helper {
            return Ok(());
        }
        let missing = |p: &std::path::Path| {
            std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        };
        let store = self.store.clone().unwrap_or_else(default_root);
        if missing(&store) {
            return Err(crate::Error::not_found(format!(
                "no fen-fs store at {} (mount(8)'s form creates nothing: `fen-fs mount MOUNTPOINT --store {}` creates a store)",
                store.display(),
                store.display()
            )));
        }
        if missing(&self.mountpoint) {
            return Err(crate::Error::not_found(format!(
                "no mount point {} (mount(8)'s form creates nothing: make the folder first)",
                self.mountpoint.display()
            )));
        }
        Ok(())
    }

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
            nonempty: self.nonempty,
            foreign: self.sources.options(),
            peers: self.peers.options(),
            keep: !self.no_keep,
            keep_agents: (!self.keep_agents.is_empty()).then_some(self.keep_agents),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Mount the store at MOUNTPOINT (returns once it is ready, leaving a daemon).
    Mount(MountArgs),
    /// Unmount (waiting for the daemon to exit), also a stale mount left by a killed
    /// daemon. Refuses what is not a fen-fs mount, and a busy one unless --lazy.
    Umount {
        mountpoint: PathBuf,
        /// Detach even while in use (MNT_DETACH): the daemon serves what is still
        /// open and exits when the last user leaves.
        #[arg(long, short = 'l')]
        lazy: bool,
    },
    /// The active fen-fs mounts: mount point, store, daemon pid, sessions, fsync mode.
    Status {
        /// One JSON object per mount instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Shell completions for bash, zsh or fish, printed to stdout.
    Completions { shell: clap_complete::Shell },
    /// The manual page (roff), printed to stdout.
    #[command(hide = true)]
    Manpage,
    /// Print the mount folder name of DIR's sessions (default: the current directory).
    Slug {
        dir: Option<PathBuf>,
        /// The namespace folder's name in the store instead (`--home-u-proj--`).
        #[arg(long)]
        on_disk: bool,
    },
    /// Print the folder of DIR's sessions in the mount of the store: `cd "$(fen-fs path)"`.
    Path {
        dir: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArg,
    },
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
        /// Only the sessions of this machine (a peer's name, or this one's).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Print one view of a session (by id, unique id prefix, or file path).
    Show {
        session: String,
        /// conversation, md (conversation.md), meta, summary or transcript.
        #[arg(long, value_parser = parse_view, default_value = "summary")]
        view: ViewKind,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Continue a session: print the command that resumes it in its own agent, or
    /// (--in AGENT) write it as a new session of fen, pi, Claude Code or Codex and
    /// print that agent's command. Nothing existing is changed.
    Resume {
        /// A session of any source: id, unique prefix of one, folder name, or file path.
        session: String,
        /// Continue it in this agent: fen, pi, claude or codex (a new session there).
        #[arg(long = "in", value_name = "AGENT", value_parser = resume::parse_target)]
        target: Option<crate::agent::Agent>,
        /// Continue it as if it had been started in DIR (a moved or renamed project):
        /// the new session's place and cwd follow DIR; without --in, a new copy in its
        /// own agent.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Run the printed command (in the session's working directory).
        #[arg(long)]
        exec: bool,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Write one session as a file to share: one self-contained HTML page (default),
    /// conversation.md or conversation.json, with every secret replaced by
    /// [REDACTED:<kind>] (stderr says what). Exit 2 when no session matches.
    Export {
        /// A session of any source: id, unique prefix of one, folder name, or file path.
        session: String,
        /// html (one file, no request when opened), md (conversation.md) or json
        /// (conversation.json).
        #[arg(long, value_parser = export::parse_format, default_value = "html")]
        format: crate::export::Format,
        /// Write to FILE (replaced only once the export is whole) instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Leave secrets in (stderr still says which were found).
        #[arg(long)]
        no_redact: bool,
        /// Also replace the home folder by ~ and the user name by `user`.
        #[arg(long, conflicts_with = "no_redact")]
        redact_paths: bool,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Find sessions by what was said in them, best first: words (all must match),
    /// "a phrase", -word (excluded), word* (prefix). Exit 2 for a bad query.
    Search {
        /// The query: words, "phrases", -excluded, prefix*.
        #[arg(required = true, value_name = "QUERY")]
        words: Vec<String>,
        /// One JSON object per line (while the index is built, a first line says how far).
        #[arg(long)]
        json: bool,
        /// At most N sessions.
        #[arg(long, default_value_t = crate::search::DEFAULT_LIMIT, value_parser = parse_limit)]
        limit: usize,
        /// Only this agent's sessions (fen, pi, claude, codex, ...).
        #[arg(long, value_name = "KIND", value_parser = search::parse_agent)]
        agent: Option<crate::agent::Agent>,
        /// Only the sessions of this directory.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Only messages since DATE (2026-11-01) or in the last DURATION (7d, 12h).
        #[arg(long, value_name = "DATE", value_parser = search::parse_since)]
        since: Option<i64>,
        /// Only the sessions of this machine (a peer's name, or this one's).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Share this store with other machines, and see theirs, through Syncthing
    /// (one writer per tree: this store send-only, each peer's received read-only).
    Sync {
        #[command(subcommand)]
        action: SyncCommand,
        /// Syncthing's home folder (else ~/.local/state/syncthing, then
        /// ~/.config/syncthing): where its config.xml gives the GUI address and API key.
        #[arg(long, global = true, value_name = "DIR")]
        syncthing_home: Option<PathBuf>,
        /// Where peers' stores are received (default: $XDG_STATE_HOME/fen/peers).
        #[arg(long, global = true, value_name = "DIR")]
        peers: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArg,
    },
    /// What the agents' model calls used and cost, per day (default), week, month,
    /// session, project, model, agent or host. Exit 2 for an unknown report or a bad
    /// date.
    Usage {
        /// daily, weekly, monthly, session, project, model, agent or host.
        #[arg(value_name = "REPORT", default_value = "daily", value_parser = usage::parse_report)]
        report: crate::usage::report::Kind,
        /// From this day on (2026-11-01, 20261101, or 7d: the last seven days).
        #[arg(long, value_name = "DATE", value_parser = usage::parse_day)]
        since: Option<usage::DayArg>,
        /// Up to this day, inclusive.
        #[arg(long, value_name = "DATE", value_parser = usage::parse_day)]
        until: Option<usage::DayArg>,
        /// Only this agent's usage (pi, claude, codex, gemini, ...).
        #[arg(long, value_name = "KIND", value_parser = search::parse_agent)]
        agent: Option<crate::agent::Agent>,
        /// Only the sessions of this directory.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Only the usage recorded on this host (this machine's host name, or a peer's).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// One row per model within each row.
        #[arg(long)]
        breakdown: bool,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Days in this time zone (an IANA name, UTC, or local; default $TZ, else the
        /// system's).
        #[arg(long, value_name = "ZONE", value_parser = crate::usage::zone::Zone::parse)]
        timezone: Option<crate::usage::zone::Zone>,
        /// Prices from this file, in LiteLLM's model_prices_and_context_window.json
        /// format (default: the snapshot shipped with fen-fs).
        #[arg(long, value_name = "FILE")]
        prices: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Serve the history to agents over the Model Context Protocol on stdio: read-only
    /// tools search_sessions, list_sessions, read_session, usage and resume_command
    /// (`claude mcp add fen -- fen-fs mcp`).
    Mcp {
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Serve the history as pages in a browser (sessions, search, each session,
    /// usage, machines) on 127.0.0.1, until SIGINT or SIGTERM; prints the address
    /// with its token.
    Web {
        /// The port (0: a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The address to listen on: 127.0.0.1 unless given; any other is reachable
        /// from elsewhere (warned; the token still guards every request).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
        listen: std::net::IpAddr,
        /// Open the page in the desktop's browser (xdg-open).
        #[arg(long)]
        open: bool,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        peers: PeerArgs,
    },
    /// Bring the kept copies of every other agent's session up to date once (as a
    /// mounted daemon does all the time), and say what was kept. For a timer.
    Keep {
        /// Keep this agent's sessions only (repeatable; default: every agent).
        #[arg(long = "keep-agent", value_name = "KIND", value_parser = keep::parse_agent)]
        keep_agents: Vec<crate::agent::Agent>,
        /// Only the summary line.
        #[arg(long, short = 'q')]
        quiet: bool,
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
    /// Move sessions to the trash (by id, unique id prefix, or file path); for another
    /// agent's session whose source is gone, its kept copy.
    Rm {
        #[arg(required = true)]
        sessions: Vec<String>,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Put trashed sessions back where they were (by id, unique id prefix, or path);
    /// write another agent's session whose source is gone back where its agent finds
    /// it, from its kept copy (a new file; nothing existing is changed).
    Restore {
        #[arg(required = true)]
        sessions: Vec<String>,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        sources: SourceArgs,
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
enum SyncCommand {
    /// Share this store send-only (Syncthing folder fen-<short id>), write its
    /// .stignore, and print this machine's device id.
    Init {
        /// Syncthing's watcher delay for the store, in seconds (its default is 10).
        #[arg(long, value_name = "SECS")]
        watch_delay: Option<u32>,
    },
    /// Add another machine: share this store with it and receive its store
    /// read-only into PEERS/NAME. Run it on both machines, each naming the other.
    Add {
        /// The other machine's device id (`fen-fs sync init` prints it there).
        device_id: String,
        /// Its name here: the HOST of its sessions, and its folder under peers/.
        #[arg(long)]
        name: String,
        /// Where to reach it (tcp://HOST:PORT); default: Syncthing's discovery.
        #[arg(long, value_name = "tcp://HOST:PORT")]
        address: Option<String>,
        /// Syncthing's watcher delay for the store, in seconds (its default is 10).
        #[arg(long, value_name = "SECS")]
        watch_delay: Option<u32>,
    },
    /// Remove a peer: its store is no longer received, this store no longer shared
    /// with it, and its copy under PEERS/NAME is deleted (its sessions stay on that
    /// machine). A running mount drops its sessions.
    Remove {
        /// The peer's name (as given to `sync add`; `sync status` lists them).
        name: String,
    },
    /// Each peer: connected, last synced, sessions.
    Status {
        /// One JSON object per peer and line.
        #[arg(long)]
        json: bool,
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

/// What `fen-fs list` says when it found nothing: where it looked, and how to see more.
fn no_sessions_message(cwd: Option<&str>, host: Option<&str>) -> String {
    let of_host = host.map(|h| format!(" of {h}")).unwrap_or_default();
    match cwd {
        Some(dir) => format!(
            "no sessions{of_host} in {dir} (`fen-fs list --all` lists every session, `--cwd DIR` another folder's)"
        ),
        None => format!(
            "no sessions{of_host} at all (none in the store, in the other agents' stores found, or from peers)"
        ),
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> crate::Result<ExitCode> {
    match cli.command {
        Command::Mount(mut args) => {
            args.apply_mount_options()?;
            args.check_both_exist()?;
            if args.fake_mount {
                return Ok(ExitCode::SUCCESS);
            }
            let options = args.options();
            let new_store = std::fs::symlink_metadata(&options.store).is_err();
            let said = format!("fen-fs: created a new store at {}", options.store.display());
            let foreground = options.foreground;
            if new_store && foreground {
                eprintln!("{said}");
            }
            let code = crate::daemon::mount(options)?;
            if new_store && !foreground && code == ExitCode::SUCCESS {
                eprintln!("{said}");
            }
            Ok(code)
        }
        Command::Status { json } => status::run(json),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "fen-fs", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Manpage => {
            let cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .map_err(|e| crate::Error::io("rendering the manual page", &e))?;
            let _ = std::io::stdout().write_all(&out);
            Ok(ExitCode::SUCCESS)
        }
        Command::Umount { mountpoint, lazy } => {
            crate::daemon::umount(&mountpoint, lazy).map(|_| ExitCode::SUCCESS)
        }
        Command::Slug { dir, on_disk } => {
            let ns = naming::slug(&list::absolute_dir(&dir.unwrap_or_else(current_dir)));
            println!("{}", if on_disk { ns } else { naming::mount_name(&ns) });
            Ok(ExitCode::SUCCESS)
        }
        Command::Path { dir, store } => {
            let root = store.root();
            let ns = naming::slug(&list::absolute_dir(&dir.unwrap_or_else(current_dir)));
            let same = |p: &std::path::Path| {
                std::fs::canonicalize(p).ok() == std::fs::canonicalize(&root).ok()
            };
            let mount = crate::mount_table::fen_mounts()
                .into_iter()
                .find(|m| m.store.as_deref().is_some_and(same))
                .ok_or_else(|| {
                    crate::Error::not_found(format!(
                        "the store at {} is not mounted (fen-fs mount MOUNTPOINT)",
                        root.display()
                    ))
                })?;
            println!(
                "{}",
                mount.mountpoint.join(naming::mount_name(&ns)).display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::List {
            cwd,
            all,
            json,
            host,
            store,
            sources,
            peers,
        } => {
            let store = store.existing()?;
            let mut all_sources: Vec<std::sync::Arc<dyn SessionSource>> =
                list::foreign_sources(&sources.options(), &store)
                    .into_iter()
                    .map(|f| f as std::sync::Arc<dyn SessionSource>)
                    .collect();
            all_sources.extend(list::peer_sources(&peers.options(), &store)?);
            let cwd = (!all).then(|| list::absolute_dir(&cwd.unwrap_or_else(current_dir)));
            let mut list = list::list_among(&store, &all_sources, cwd.as_deref())?;
            if let Some(h) = &host {
                list.retain(|l| l.host.as_deref() == Some(h.as_str()));
            }
            if list.is_empty() && !json {
                // A header alone reads as a broken listing: say what was looked at
                // and how to see more (on stderr, as `kubectl get` does; stdout stays
                // empty for pipes).
                eprintln!("{}", no_sessions_message(cwd.as_deref(), host.as_deref()));
                return Ok(ExitCode::SUCCESS);
            }
            let out = if json {
                listing::render_json(&list)
            } else {
                let agents = all || list.iter().any(|l| l.agent != crate::agent::Agent::Fen);
                let hosts = list.iter().any(|l| l.host != list[0].host);
                listing::render_table_with(&list, agents, hosts).into_bytes()
            };
            let _ = std::io::stdout().write_all(&out);
            Ok(ExitCode::SUCCESS)
        }
        Command::Show {
            session,
            view,
            store,
            sources,
            peers,
        } => {
            // A session file named by its path needs no store.
            let by_path = session.contains('/') || session.ends_with(".jsonl");
            let store = if by_path {
                Store::open_existing(store.root())
            } else {
                store.existing()?
            };
            let snap = match store.resolve(&session) {
                Ok(session) if view == ViewKind::Markdown => {
                    let messages = crate::sources::fen::session_messages(&session, false)?;
                    let text = views::markdown::render_owned(messages).into_bytes();
                    views::Snapshot::Bytes(std::sync::Arc::new(text))
                }
                Ok(session) => views::snapshot(&session, view, 0)?,
                Err(fen_err) => {
                    let mut others: Vec<std::sync::Arc<dyn SessionSource>> =
                        list::foreign_sources(&sources.options(), &store)
                            .into_iter()
                            .map(|f| f as std::sync::Arc<dyn SessionSource>)
                            .collect();
                    others.extend(list::peer_sources(&peers.options(), &store)?);
                    match list::resolve_foreign(&others, &session)? {
                        Some((source, ns, dir)) if view == ViewKind::Markdown => {
                            let messages = source.messages(&ns, &dir, false)?;
                            let text = views::markdown::render_owned(messages).into_bytes();
                            views::Snapshot::Bytes(std::sync::Arc::new(text))
                        }
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
        Command::Resume {
            session,
            target,
            cwd,
            exec,
            store,
            sources,
            peers,
        } => resume::run(resume::Args {
            session,
            target,
            cwd,
            exec,
            store_named: store.store.is_some()
                || std::env::var_os("FEN_FS_STORE").is_some_and(|v| !v.is_empty()),
            store_root: store.root(),
            foreign: sources.options(),
            peers: peers.options(),
        }),
        Command::Export {
            session,
            format,
            output,
            no_redact,
            redact_paths,
            store,
            sources,
            peers,
        } => export::run(export::Args {
            session,
            options: crate::export::Options {
                format,
                redact: !no_redact,
                redact_paths,
                counted: None,
            },
            output,
            store_named: store.store.is_some()
                || std::env::var_os("FEN_FS_STORE").is_some_and(|v| !v.is_empty()),
            store_root: store.root(),
            foreign: sources.options(),
            peers: peers.options(),
        }),
        Command::Rm {
            sessions,
            store,
            sources,
        } => {
            let store = store.existing()?;
            let foreign = std::cell::OnceCell::new();
            Ok(each(&sessions, |spec| {
                let fen_err = match trash::resolve_live(&store, spec) {
                    Ok((ns, dir)) => return Ok(trash::describe(&store.trash_session(&ns, &dir)?)),
                    Err(e) if e.errno == libc::ENOENT && !spec.contains('/') => e,
                    Err(e) => return Err(e),
                };
                let foreign =
                    foreign.get_or_init(|| list::foreign_sources(&sources.options(), &store));
                match crate::keep::restore::find(foreign, spec)? {
                    Some(k) => Ok(trash::describe_copy(
                        &store,
                        &crate::keep::restore::trash(&store.root, &k)?,
                    )),
                    None => Err(fen_err),
                }
            }))
        }
        Command::Restore {
            sessions,
            store,
            sources,
        } => {
            let store = store.existing()?;
            let foreign = std::cell::OnceCell::new();
            Ok(each(&sessions, |spec| {
                let fen_err = match store.resolve_trashed(spec) {
                    Ok(t) => {
                        let to = store.restore(&t)?;
                        return Ok(format!("restored {}", trash::relative(&store, &to)));
                    }
                    Err(e) if e.errno == libc::ENOENT && !spec.contains('/') => e,
                    Err(e) => return Err(e),
                };
                if let Some(t) = crate::keep::restore::find_trashed(&store.root, spec)? {
                    crate::keep::restore::restore_trashed(&store.root, &t)?;
                    return Ok(format!(
                        "restored the kept copy of {} ({})",
                        t.dir(),
                        t.agent
                    ));
                }
                let foreign =
                    foreign.get_or_init(|| list::foreign_sources(&sources.options(), &store));
                match crate::keep::restore::find(foreign, spec)? {
                    Some(k) => {
                        let (path, command) = crate::keep::restore::restore(&k)?;
                        Ok(match command {
                            Some(c) => format!("restored {}\nresume it with: {c}", path.display()),
                            None => format!("restored {}", path.display()),
                        })
                    }
                    None => {
                        Err(crate::keep::restore::why_not(&store.root, spec).unwrap_or(fen_err))
                    }
                }
            }))
        }
        Command::Trash {
            action: TrashCommand::List { json },
            store,
        } => {
            let store = store.existing()?;
            let mut list: Vec<_> = store
                .trashed()?
                .iter()
                .map(trash::TrashListing::of)
                .collect();
            list.extend(
                crate::keep::restore::trashed(&store.root)
                    .iter()
                    .map(trash::TrashListing::of_copy),
            );
            list.sort_by(|a, b| b.deleted_at.cmp(&a.deleted_at));
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
            let store = store.existing()?;
            // Older than more than the calendar holds: nothing is.
            let cutoff = older_than.map(|d| {
                chrono::Duration::from_std(d)
                    .ok()
                    .and_then(|d| chrono::Utc::now().checked_sub_signed(d))
                    .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
            });
            let removed = store.empty_trash(cutoff)?;
            let copies = crate::keep::restore::empty_trashed(&store.root, cutoff);
            let bytes: u64 = removed.iter().map(|t| t.size).sum::<u64>()
                + copies.iter().map(|c| c.size).sum::<u64>();
            println!(
                "removed {} trashed session(s), {}",
                removed.len() + copies.len(),
                trash::human_size(bytes)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Search {
            words,
            json,
            limit,
            agent,
            cwd,
            since,
            host,
            store,
            sources,
            peers,
        } => {
            let store = store.existing()?;
            let args = search::Args {
                words,
                json,
                limit,
                agent,
                cwd: cwd.map(|c| list::absolute_dir(&c)),
                since_ms: since,
                foreign: sources.options(),
                peers: peers.options(),
                host,
            };
            search::run(args, store)
        }
        Command::Keep {
            keep_agents,
            quiet,
            store,
            sources,
        } => keep::run(keep::Args {
            store_root: store.root(),
            foreign: sources.options(),
            agents: (!keep_agents.is_empty()).then_some(keep_agents),
            quiet,
        }),
        Command::Usage {
            report,
            since,
            until,
            agent,
            cwd,
            host,
            breakdown,
            json,
            timezone,
            prices,
            store,
            sources,
            peers,
        } => {
            let store = store.existing()?;
            usage::run(
                usage::Args {
                    report,
                    since,
                    until,
                    agent,
                    cwd: cwd.map(|c| list::absolute_dir(&c)),
                    host,
                    breakdown,
                    json,
                    zone: timezone,
                    prices,
                    foreign: sources.options(),
                    peers: peers.options(),
                },
                store,
            )
        }
        Command::Mcp {
            store,
            sources,
            peers,
        } => {
            let args = server_store_args(&store, &sources, &peers);
            mcp::run(store.existing()?, sources.options(), &peers.options(), args)
        }
        Command::Web {
            port,
            listen,
            open,
            store,
            sources,
            peers,
        } => {
            let args = server_store_args(&store, &sources, &peers);
            web::run(
                store.existing()?,
                sources.options(),
                &peers.options(),
                args,
                crate::web::Options { listen, port, open },
            )
        }
        Command::Sync {
            action,
            syncthing_home,
            peers,
            store,
        } => {
            let home = syncthing_home.as_deref();
            let peers_dir = peers.unwrap_or_else(crate::store::layout::default_peers_dir);
            match action {
                SyncCommand::Init { watch_delay } => sync::init(home, &store.root(), watch_delay),
                SyncCommand::Add {
                    device_id,
                    name,
                    address,
                    watch_delay,
                } => sync::add(
                    home,
                    &store.root(),
                    &peers_dir,
                    &device_id,
                    &name,
                    address.as_deref(),
                    watch_delay,
                ),
                SyncCommand::Remove { name } => {
                    sync::remove(home, &store.root(), &peers_dir, &name)
                }
                SyncCommand::Status { json } => sync::status(home, json),
            }
        }
        Command::Fsck { session, store } => {
            let store = store.existing()?;
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

/// The subcommands' names, for telling `fen-fs STORE MNT -o OPTS` (the form mount(8)
/// and /etc/fstab use, through mount.fuse) from a subcommand.
fn is_subcommand(name: &str) -> bool {
    <Cli as clap::CommandFactory>::command()
        .get_subcommands()
        .any(|c| c.get_name() == name || c.get_all_aliases().any(|a| a == name))
}

/// What mount(8) passes a helper besides the source, target and `-o OPTS`
/// (libmount: `-s` sloppy, `-n` no mtab, `-v` verbose; `-t TYPE` when the helper's
/// name does not already say it): meaningless to fen-fs, so dropped in that form. Its
/// `-f` (fake: do everything but mount) becomes `--fake-mount`, not `--foreground`.
const MOUNT_HELPER_FLAGS: [&str; 3] = ["-s", "-n", "-v"];

/// The command line as clap should see it: the mount helper form becomes `fen-fs mount
/// MOUNTPOINT --store STORE [-o OPTS]`, marked so that it creates nothing (no store,
/// no mount point: that form names things that exist); anything else is left as it is.
///
/// The mount helper form is two positional arguments, STORE and MOUNTPOINT, and more
/// than that: the program invoked as `mount.fuse.fen-fs` (any `mount.*`), or mount.fuse's
/// `-o OPTS` with the mount point already there. Two words alone are not enough: that is
/// also a mistyped subcommand and one argument (`fen-fs serch flaky`), which must get
/// clap's "unrecognized subcommand", not a new store and a mount.
pub fn normalize_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let helper = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with("mount."));
    // Arguments that are another's value: after `-o` (and, for a helper, `-t`).
    let is_value = |i: usize| args[i - 1] == "-o" || (helper && args[i - 1] == "-t");
    let positional: Vec<usize> = (1..args.len())
        .filter(|&i| !args[i].to_string_lossy().starts_with('-') && !is_value(i))
        .collect();
    let has_options = (1..args.len()).any(|i| {
        let a = args[i].to_string_lossy();
        a.starts_with("-o") && !is_value(i)
    });
    let mount_form = positional.len() == 2
        && if helper {
            true
        } else {
            let first = args[positional[0]].to_string_lossy();
            let mountpoint = std::path::Path::new(&args[positional[1]]);
            !is_subcommand(&first) && has_options && mountpoint.symlink_metadata().is_ok()
        };
    if !mount_form {
        return args;
    }
    let (store, mountpoint) = (args[positional[0]].clone(), args[positional[1]].clone());
    let mut out = vec![
        "fen-fs".into(),
        "mount".into(),
        mountpoint,
        "--store".into(),
        store,
        "--as-mount-helper".into(),
    ];
    let dropped = |i: usize| {
        let a = &args[i];
        positional.contains(&i)
            || (helper && (MOUNT_HELPER_FLAGS.iter().any(|f| a == f) || a == "-t"))
            || (helper && args[i - 1] == "-t")
    };
    out.extend((1..args.len()).filter(|&i| !dropped(i)).map(|i| {
        if helper && args[i] == "-f" {
            "--fake-mount".into()
        } else {
            args[i].clone()
        }
    }));
    out
}

/// `fen-fs search`'s `-word` exclusions are words, not options: every argument
/// beginning with `-` that is not one of its options moves after a `--` (the order of
/// a query's words does not matter).
pub fn search_words_after_dashes(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    const FLAGS: [&str; 4] = ["--json", "--no-detect", "--help", "-h"];
    const VALUED: [&str; 9] = [
        "--limit", "--agent", "--cwd", "--since", "--store", "--source", "--host", "--peers",
        "--map",
    ];
    let Some(at) = args.iter().position(|a| a == "search") else {
        return args;
    };
    // Only when `search` is the subcommand (nothing but options before it).
    if args[1..at]
        .iter()
        .any(|a| !a.to_string_lossy().starts_with('-'))
    {
        return args;
    }
    let mut out: Vec<std::ffi::OsString> = args[..=at].to_vec();
    let mut words = Vec::new();
    let mut i = at + 1;
    while i < args.len() {
        let a = args[i].to_string_lossy().into_owned();
        let name = a.split('=').next().unwrap_or("");
        if a == "--" {
            words.extend(args[i + 1..].iter().cloned());
            break;
        } else if FLAGS.contains(&a.as_str()) || (VALUED.contains(&name) && a.contains('=')) {
            out.push(args[i].clone());
        } else if VALUED.contains(&a.as_str()) {
            out.push(args[i].clone());
            if let Some(v) = args.get(i + 1) {
                out.push(v.clone());
                i += 1;
            }
        } else if a.starts_with('-') && a.len() > 1 {
            words.push(args[i].clone());
        } else {
            out.push(args[i].clone());
        }
        i += 1;
    }
    if !words.is_empty() {
        out.push("--".into());
        out.extend(words);
    }
    out
}

/// The parsed command line of this process.
pub fn parse() -> Cli {
    <Cli as Parser>::parse_from(search_words_after_dashes(normalize_args(
        std::env::args_os().collect(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(args: &[&str]) -> Vec<String> {
        normalize_args(args.iter().map(|a| (*a).into()).collect())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_mount_helper_form_becomes_mount() {
        let tmp = tempfile::tempdir().unwrap();
        let mp = tmp.path().to_str().unwrap();
        // mount.fuse's form: `-o OPTS`, the mount point there.
        assert_eq!(
            norm(&["fen-fs", "/s", mp, "-o", "rw,fsync=no"]),
            [
                "fen-fs",
                "mount",
                mp,
                "--store",
                "/s",
                "--as-mount-helper",
                "-o",
                "rw,fsync=no"
            ]
        );
        // The binary as mount(8)'s helper: libmount's own flags are dropped.
        assert_eq!(
            norm(&["/sbin/mount.fuse.fen-fs", "/s", "/m"]),
            [
                "fen-fs",
                "mount",
                "/m",
                "--store",
                "/s",
                "--as-mount-helper"
            ]
        );
        assert_eq!(
            norm(&[
                "/sbin/mount.fuse.fen-fs",
                "/s",
                "/m",
                "-n",
                "-v",
                "-f",
                "-o",
                "rw,noatime",
                "-t",
                "fuse.fen-fs"
            ]),
            [
                "fen-fs",
                "mount",
                "/m",
                "--store",
                "/s",
                "--as-mount-helper",
                "--fake-mount",
                "-o",
                "rw,noatime"
            ]
        );
        assert_eq!(
            norm(&["fen-fs", "list", "--all"]),
            ["fen-fs", "list", "--all"]
        );
        assert_eq!(norm(&["fen-fs", "show", "abc"]), ["fen-fs", "show", "abc"]);
        assert_eq!(norm(&["fen-fs", "mount", "/m"]), ["fen-fs", "mount", "/m"]);
    }

    #[test]
    fn a_mistyped_subcommand_is_no_mount() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("flaky");
        let missing = missing.to_str().unwrap();
        // Two words alone, or `-o` with no mount point there: left to clap.
        for args in [
            vec!["fen-fs", "serch", "flaky"],
            vec!["fen-fs", "serch", missing],
            vec!["fen-fs", "serch", missing, "-o", "rw"],
            // A subcommand's name first is that subcommand, whatever follows.
            vec!["fen-fs", "search", tmp.path().to_str().unwrap(), "-o", "rw"],
        ] {
            assert_eq!(norm(&args), args, "{args:?}");
        }
        let err = Cli::try_parse_from(norm(&["fen-fs", "serch", "flaky"]))
            .err()
            .expect("a usage error");
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidSubcommand);
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn mount_options_fold_into_the_options() {
        let mut cli = Cli::parse_from([
            "fen-fs",
            "mount",
            "/m",
            "-o",
            "fsync=no,allow_other,threads=3,noatime,nonempty",
        ]);
        let Command::Mount(args) = &mut cli.command else {
            panic!("not mount")
        };
        args.apply_mount_options().unwrap();
        assert!(args.nonempty);
        assert_eq!(args.fsync, FsyncMode::No);
        assert!(args.allow_other);
        assert_eq!(args.threads, 3);
        let mut bad = Cli::parse_from(["fen-fs", "mount", "/m", "-o", "colour=red"]);
        let Command::Mount(args) = &mut bad.command else {
            panic!("not mount")
        };
        assert!(
            args.apply_mount_options()
                .unwrap_err()
                .reason
                .contains("colour")
        );
    }
}

#[cfg(test)]
mod search_args_tests {
    use super::*;

    fn words_json(args: &[&str]) -> (Vec<String>, bool) {
        let mut all = vec!["fen-fs", "search"];
        all.extend(args);
        let all = search_words_after_dashes(all.into_iter().map(Into::into).collect());
        match Cli::try_parse_from(all).unwrap().command {
            Command::Search { words, json, .. } => (words, json),
            _ => panic!("not search"),
        }
    }

    #[test]
    fn exclusions_are_words_and_options_are_options() {
        assert_eq!(
            words_json(&["foo", "-bar"]),
            (vec!["foo".into(), "-bar".into()], false)
        );
        assert_eq!(words_json(&["foo", "--json"]), (vec!["foo".into()], true));
        assert_eq!(
            words_json(&["--json", "foo", "-bar"]),
            (vec!["foo".into(), "-bar".into()], true)
        );
        assert_eq!(
            words_json(&["-bar", "foo"]).0,
            vec!["foo".to_string(), "-bar".into()]
        );
        assert_eq!(
            words_json(&["foo", "--", "--json"]),
            (vec!["foo".into(), "--json".into()], false)
        );
        let all = search_words_after_dashes(
            ["fen-fs", "search", "--cwd", "-odd", "x", "--limit=3", "-y"]
                .into_iter()
                .map(Into::into)
                .collect(),
        );
        assert_eq!(
            all,
            [
                "fen-fs",
                "search",
                "--cwd",
                "-odd",
                "x",
                "--limit=3",
                "--",
                "-y"
            ]
        );
        // Other commands are left alone.
        let list: Vec<std::ffi::OsString> = ["fen-fs", "list", "--all"]
            .into_iter()
            .map(Into::into)
            .collect();
        assert_eq!(search_words_after_dashes(list.clone()), list);
    }
}
