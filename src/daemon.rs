//! The mount's lifecycle: the mount point's checks, detaching with a readiness pipe,
//! systemd's readiness protocol, the notifier and sync threads, clean unmount on
//! SIGINT/SIGTERM (only of the mount this daemon made), and `fen-fs umount`.

use crate::background::Class;
use crate::ctl::CtlService;
use crate::error::{Error, Result};
use crate::mount_table::{self, MountEntry};
use crate::sources::SessionSource;
use crate::sources::fen::FenSource;
use crate::sources::set::SourceSet;
use crate::store::Store;
use crate::store::durability::FsyncMode;
use crate::tree::Tree;
use crate::workers::Workers;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The environment variable carrying the readiness pipe to a detached daemon.
const READY_FD_ENV: &str = "FEN_FS_READY_FD";

/// What `fen-fs mount` was asked for (the command line's parsed options).
#[derive(Debug, Clone)]
pub struct MountOptions {
    pub mountpoint: PathBuf,
    pub store: PathBuf,
    /// Stay attached instead of leaving a daemon.
    pub foreground: bool,
    pub fsync: FsyncMode,
    pub allow_other: bool,
    pub threads: usize,
    pub log_file: Option<PathBuf>,
    pub max_entry_bytes: usize,
    /// Mount over a folder that is not empty.
    pub nonempty: bool,
    /// Which other agents' stores to show beside fen's own.
    pub foreign: crate::sources::ForeignOptions,
    /// Other machines' stores (§12) and their path maps.
    pub peers: crate::sources::peers::PeerOptions,
    /// Keep copies of the other agents' sessions (§11); of these agents only, if set.
    pub keep: bool,
    pub keep_agents: Option<Vec<crate::agent::Agent>>,
}

fn os_error(what: impl std::fmt::Display) -> Error {
    Error::io(what, &std::io::Error::last_os_error())
}

fn stale_mount(mp: &Path) -> Error {
    Error::new(
        libc::ENOTCONN,
        format!(
            "{} is a stale mount of a fen-fs daemon that died (Transport endpoint is not connected).\n\
             Clear it with: fen-fs umount {}",
            mp.display(),
            mp.display()
        ),
    )
}

fn already_mounted(mp: &Path) -> Error {
    let norm = mount_table::normalize(mp);
    let m = mount_table::fen_mounts()
        .into_iter()
        .rfind(|m| m.mountpoint == norm);
    let pid = m
        .as_ref()
        .and_then(|m| m.pid)
        .map_or("not found".to_string(), |p| p.to_string());
    let store = m
        .and_then(|m| m.store)
        .map_or(String::new(), |s| format!(", store {}", s.display()));
    Error::new(
        libc::EBUSY,
        format!(
            "{} is already a fen-fs mount (daemon pid {pid}{store}).\n\
             Unmount it first: fen-fs umount {}",
            mp.display(),
            mp.display()
        ),
    )
}

/// Readies the mount point: creates it if missing (saying so on stderr), and refuses
/// a stale mount, a live fen-fs mount, anything not a folder, and a folder with files
/// in it unless `nonempty` (mounting would hide them). Opening the folder always
/// reaches a (dead) daemon; a `stat` may be answered from the kernel's attribute cache.
fn prepare_mountpoint(mp: &Path, nonempty: bool) -> Result<()> {
    let entries = match std::fs::read_dir(mp) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(mp).map_err(|e| Error::io(mp.display(), &e))?;
            eprintln!("fen-fs: created mount point {}", mp.display());
            return Ok(());
        }
        // ECONNABORTED: a request caught in flight while the daemon died.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)) => {
            return Err(stale_mount(mp));
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(Error::invalid(format!("{} is not a folder", mp.display())));
        }
        Err(e) => return Err(Error::io(mp.display(), &e)),
    };
    if mount_table::mounted_at(mp) == Some(true) {
        return Err(already_mounted(mp));
    }
    let names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if let Some(first) = names.first().filter(|_| !nonempty) {
        return Err(Error::new(
            libc::ENOTEMPTY,
            format!(
                "{} is not empty ({} {}, e.g. {first}): mounting would hide them.\n\
                 Mount on an empty folder, or pass --nonempty (-o nonempty) to mount over it anyway",
                mp.display(),
                names.len(),
                if names.len() == 1 { "entry" } else { "entries" }
            ),
        ));
    }
    Ok(())
}

pub fn mount(args: MountOptions) -> Result<ExitCode> {
    prepare_mountpoint(&args.mountpoint, args.nonempty)?;
    let root = args.store.clone();
    Store::open(&root, args.fsync)?;
    if args.foreground {
        let ready = std::env::var(READY_FD_ENV)
            .ok()
            .and_then(|v| v.parse::<i32>().ok());
        // SAFETY: the fd was created for us by the parent `mount` and is ours alone.
        let ready = ready.map(|fd| unsafe { std::fs::File::from_raw_fd(fd) });
        return serve(args, root, ready);
    }
    detach(&args, &root)
}

/// Starts `fen-fs mount --foreground` as a daemon in its own session and waits until
/// it says the mount is ready (or why it is not).
fn detach(args: &MountOptions, root: &Path) -> Result<ExitCode> {
    let mut fds = [0i32; 2];
    // SAFETY: valid out-array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_error("pipe"));
    }
    // SAFETY: both fds were just created and are owned here.
    let (mut reader, writer) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    let exe = std::env::current_exe().map_err(|e| Error::io("current_exe", &e))?;
    let mut cmd = std::process::Command::new(exe);
    // Absolute, so that `fen-fs umount` can find this daemon by its command line.
    let mp = std::path::absolute(&args.mountpoint).unwrap_or_else(|_| args.mountpoint.clone());
    cmd.arg("mount")
        .arg(&mp)
        .arg("--foreground")
        .arg("--store")
        .arg(root)
        .arg("--fsync")
        .arg(args.fsync.name())
        .arg("--threads")
        .arg(args.threads.to_string())
        .arg("--max-entry-bytes")
        .arg(args.max_entry_bytes.to_string());
    if args.allow_other {
        cmd.arg("--allow-other");
    }
    if args.nonempty {
        cmd.arg("--nonempty");
    }
    if !args.foreign.detect {
        cmd.arg("--no-detect");
    }
    if !args.keep {
        cmd.arg("--no-keep");
    }
    for a in args.keep_agents.iter().flatten() {
        cmd.arg("--keep-agent").arg(a.name());
    }
    for r in &args.foreign.explicit {
        let mut spec = std::ffi::OsString::from(format!("{}=", r.agent.name()));
        spec.push(&r.root);
        cmd.arg("--source").arg(spec);
    }
    if let Some(dir) = &args.peers.dir {
        cmd.arg("--peers")
            .arg(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
    }
    for m in &args.peers.maps {
        cmd.arg("--map").arg(format!("{}={}", m.from, m.to));
    }
    let log_path = match &args.log_file {
        Some(path) => path.clone(),
        None => {
            let path = crate::store::layout::default_log_file();
            if let Some(dir) = path.parent() {
                // 0700: fen's own folder (the store may have made it first, under the
                // umask), and the log names sessions and their folders.
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .and_then(|()| {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    })
                    .map_err(|e| Error::io(dir.display(), &e))?;
            }
            path
        }
    };
    // 0600 whatever the umask: the log names sessions and their folders.
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(&log_path)
        .map_err(|e| Error::io(log_path.display(), &e))?;
    let stderr = std::process::Stdio::from(log);
    let child_fd = fds[1];
    cmd.env(READY_FD_ENV, child_fd.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            // Keep the readiness pipe open across exec.
            let flags = libc::fcntl(child_fd, libc::F_GETFD);
            libc::fcntl(child_fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io("starting the daemon", &e))?;
    drop(writer);
    let mut said = String::new();
    let _ = reader.read_to_string(&mut said);
    if said.starts_with("ready") {
        eprintln!(
            "fen-fs: mounted {} at {}; log: {}",
            std::path::absolute(root)
                .unwrap_or_else(|_| root.to_path_buf())
                .display(),
            mp.display(),
            log_path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let _ = child.try_wait();
    let why = said.trim();
    Err(Error::new(
        libc::EIO,
        if why.is_empty() {
            "the daemon exited before the mount was ready".to_string()
        } else {
            why.to_string()
        },
    ))
}

/// Runs the filesystem until unmounted or signalled.
fn serve(args: MountOptions, root: PathBuf, mut ready: Option<std::fs::File>) -> Result<ExitCode> {
    let fail = |ready: &mut Option<std::fs::File>, e: Error| {
        if let Some(r) = ready.as_mut() {
            let _ = writeln!(r, "{}", e.reason);
        }
        Err(e)
    };
    // Block the signals in every thread; the main thread takes them with sigwait.
    let signals = signal_set(&[libc::SIGINT, libc::SIGTERM, libc::SIGUSR1]);
    // SAFETY: valid signal set.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };

    raise_open_file_limit();
    crate::workers::limit_malloc_arenas();
    let store = match Store::open(&root, args.fsync) {
        Ok(s) => Arc::new(s),
        Err(e) => return fail(&mut ready, e),
    };
    let ctl = Arc::new(CtlService::new(store.clone(), args.max_entry_bytes));
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut sources: Vec<Arc<dyn SessionSource>> =
        vec![Arc::new(FenSource::watching(store.clone()))];
    // Every worker beside the mount's requests is started through this registry: it
    // stops them at unmount, and each runs in its work's priority class.
    let workers = Arc::new(Workers::new());
    let background = workers.background().clone();
    // Other agents' stores are indexed in the background: the mount is ready at once,
    // and a listing that needs them waits for their first index.
    let mut live_foreign = Vec::new();
    // The keeper is given this store's kept copies too: the records it holds are the
    // ones their listing holds (`KeptCopies::share`), not a second set.
    let mut to_keeper = Vec::new();
    for foreign in crate::sources::foreign_sources(&args.foreign, &root, true) {
        if foreign.kept_copies().is_none() {
            live_foreign.push(foreign.clone());
        }
        to_keeper.push(foreign.clone());
        workers.first_indexes(std::slice::from_ref(&foreign))?;
        sources.push(foreign);
    }
    // Other machines' stores (§12), read-only, their caches in this store's; peers
    // that come or go while the mount runs are followed (`watch_peers`).
    let mut peer_hosts = Vec::new();
    match crate::sources::peers::peer_sources(&args.peers, &root, true) {
        Ok(peers) => {
            for p in peers {
                index_kept_copies(&p, &workers)?;
                if !peer_hosts.iter().any(|h| h == p.host_name()) {
                    peer_hosts.push(p.host_name().to_string());
                }
                sources.push(p as Arc<dyn SessionSource>);
            }
        }
        Err(e) => return fail(&mut ready, e),
    }
    // One set of sources, which the tree, the search indexer and the usage counter
    // share: a peer added to it shows everywhere at once.
    let sources = SourceSet::new(sources);
    // The search index is opened, checked and brought up to date in the background.
    let search = Arc::new(crate::search::Search::open_deferred(
        &root,
        &args.mountpoint,
        sources.clone(),
        background.clone(),
    ));
    // Usage (usage/) is counted once in the background after the mount, then on each
    // open of its files, from what changed.
    let usage = Arc::new(crate::usage::Usage::new(
        sources.clone(),
        Some(&root),
        crate::usage::prices::Prices::builtin(),
    ));
    let tree = Arc::new(
        Tree::new(sources.clone(), Some(ctl), uid, gid)
            .with_search(search.clone())
            .with_usage(usage.clone(), crate::usage::zone::Zone::from_env())
            .with_background(background.clone()),
    );
    let status = MountStatus {
        pid: std::process::id(),
        mountpoint: std::path::absolute(&args.mountpoint).unwrap_or(args.mountpoint.clone()),
        passthrough: String::new(),
        sources: live_foreign
            .iter()
            .map(|s| (s.agent(), s.root().to_path_buf()))
            .collect(),
        keeping: keeping_at_start(&args),
    };
    let status_file = crate::store::layout::mount_status_file(&root, status.pid);
    let status = Arc::new(Mutex::new(status));
    let passthrough = {
        let status_file = status_file.clone();
        let status = status.clone();
        crate::fuse::Passthrough::new(move |state| {
            let mut s = status.lock().unwrap();
            s.passthrough = state.to_string();
            s.write(&status_file);
        })
    };
    if std::env::var_os(PASSTHROUGH_ENV).is_some_and(|v| v == "off") {
        passthrough.turn_off(&format!("turned off by {PASSTHROUGH_ENV}=off"));
    }
    let config = crate::fuse::MountConfig {
        allow_other: args.allow_other,
        threads: args.threads,
        passthrough,
    };
    // Wake the main thread when the kernel ends the session (umount).
    // SAFETY: sending a signal to our own process.
    let on_end = || unsafe {
        libc::kill(libc::getpid(), libc::SIGUSR1);
    };
    let mounted = match crate::fuse::mount(tree.clone(), &args.mountpoint, &config, on_end) {
        Ok(m) => m,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)) => {
            return fail(&mut ready, stale_mount(&args.mountpoint));
        }
        Err(e) => {
            return fail(
                &mut ready,
                Error::io(format!("mounting {}", args.mountpoint.display()), &e),
            );
        }
    };
    if args.fsync == FsyncMode::Everysec {
        let store = store.clone();
        std::thread::Builder::new()
            .name("fen-everysec".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                    for s in store.known_sessions() {
                        if let Err(e) = s.sync_if_dirty() {
                            log::error!("everysec fdatasync of {}: {e}", s.path.display());
                        }
                    }
                }
            })
            .map_err(|e| Error::io("sync thread", &e))?;
    }
    // What identifies this mount (not the path: another can be mounted there later).
    let ours = mount_table::entry_at(&args.mountpoint).filter(|e| e.fen);
    log::info!(
        "mounted {} at {} (mount id {:?})",
        root.display(),
        args.mountpoint.display(),
        ours.as_ref().map(|e| e.id)
    );
    if std::env::var_os(SEARCH_ENV).is_some_and(|v| v == "off") {
        // The index is left as it is: `fen-fs search` brings it up to date itself
        // (no daemon holds its lock), and the mount's search/ answers from it.
        log::info!("the search indexer is off ({SEARCH_ENV}=off)");
    } else if let Err(e) = workers.search(&search) {
        log::error!("{}", e.reason);
    }
    start_keeper(&args, &root, to_keeper, &status, &status_file, &workers);
    if let Err(e) = workers.trimmer() {
        log::error!("{}", e.reason);
    }
    if std::env::var_os(USAGE_ENV).is_some_and(|v| v == "off") {
        log::info!("usage is counted only when usage/ is read ({USAGE_ENV}=off)");
    } else if let Err(e) = workers.usage(&usage) {
        log::error!("{}", e.reason);
    }
    let peers = PeersFollowed {
        options: args.peers.clone(),
        root: root.clone(),
        sources: sources.clone(),
        tree,
        search: search.clone(),
        workers: workers.clone(),
    };
    if let Err(e) = watch_peers(peers, peer_hosts) {
        log::error!("{}", e.reason);
    }
    log::info!(
        "background workers: {}",
        workers
            .started()
            .iter()
            .map(|(name, class)| format!("{name} ({})", class.name()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(mut r) = ready.take() {
        let _ = writeln!(r, "ready");
    }
    sd_notify("READY=1");
    let mut sig = 0;
    // SAFETY: valid set and out-pointer.
    unsafe { libc::sigwait(&signals, &mut sig) };
    let stopping = std::time::Instant::now();
    if sig != libc::SIGUSR1 {
        log::info!("signal {sig}: unmounting");
        sd_notify("STOPPING=1");
    }
    // Background work stops at its next message and saves what it has; what has not
    // saved within the budget is left at its last save (the next mount goes on from
    // there). On a signal this comes before the unmount: once the mount is gone, this
    // daemon writes nothing more into the store.
    if !workers.stop_and_wait(STOP_BUDGET) {
        log::info!(
            "background work still saving after {STOP_BUDGET:?}: its last save stands, \
             the next mount goes on from there"
        );
    }
    // Indexes, so the next mount need not re-read unchanged files.
    for s in sources.current().iter() {
        s.persist();
    }
    usage.persist();
    crate::store::atomic::remove_file(&status_file);
    if sig != libc::SIGUSR1 {
        // Whoever sees this unmount return may copy or mount the store: a worker that
        // has not stopped (starved at idle priority) must not write into it after.
        // The writes under way end first; every later one fails.
        if !crate::store::write_gate::STORE.close(STOP_BUDGET) {
            log::info!("a write into the store still under way after {STOP_BUDGET:?}");
        }
    }
    let ends = sig == libc::SIGUSR1 || unmount_own(&args.mountpoint, ours.as_ref());
    log::info!("stopped in {:?}", stopping.elapsed());
    if !ends {
        // The session would end by fuser unmounting the path, which may now hold
        // another mount: exit instead; closing /dev/fuse ends this connection only.
        std::process::exit(0);
    }
    if sig != libc::SIGUSR1 {
        // Unmounted on a signal: exit at once. Dropping what is left (the index's
        // writer waits for its merges, then records what it checked) or a merge past
        // the budget would otherwise write into the store after the unmount returned.
        std::process::exit(0);
    }
    match mounted.join() {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(Error::io("fuse session", &e)),
    }
}

/// Builds the first index of a peer's kept copies (§11), if it is a source over
/// them, in the background, as the agents' stores are.
fn index_kept_copies(p: &crate::sources::peers::PeerSource, workers: &Workers) -> Result<()> {
    if let Some(kept) = p.kept_index() {
        let name = format!("fen-index-{}@{}", kept.agent().name(), p.host_name());
        workers.first_index(kept, &name)?;
    }
    Ok(())
}

/// What following the peers folder changes: the shared set of sources, and who must
/// hear of a change.
struct PeersFollowed {
    options: crate::sources::peers::PeerOptions,
    root: PathBuf,
    sources: SourceSet,
    tree: Arc<Tree>,
    search: Arc<crate::search::Search>,
    workers: Arc<Workers>,
}

/// Follows the peers folder (§12) while the mount runs: a peer's folder that appears
/// adds its sources to the set (the tree, search and usage show it at once; the
/// indexer indexes it now), one that goes takes them out (its names leave the
/// kernel's caches, its sessions the index). `shown`: the peers shown at mount.
fn watch_peers(f: PeersFollowed, mut shown: Vec<String>) -> Result<()> {
    let dir = f.options.peers_dir();
    let mut watch = crate::sources::peers_watch::PeersWatch::new(&dir)
        .map_err(|e| Error::io(format!("watching {}", dir.display()), &e))?;
    let waker = watch.waker();
    let bg = f.workers.background().clone();
    bg.on_stop(move || waker.wake());
    let workers = f.workers.clone();
    workers.spawn("fen-peers", Class::Fresh, move || {
        while !bg.should_stop() {
            watch.wait();
            if bg.should_stop() {
                break;
            }
            let now = watch.names();
            if now == shown {
                continue;
            }
            let gone: Vec<String> = shown.iter().filter(|h| !now.contains(h)).cloned().collect();
            let new: Vec<String> = now.iter().filter(|h| !shown.contains(h)).cloned().collect();
            let removed = f
                .sources
                .remove(|s| s.host().is_some_and(|h| gone.iter().any(|g| g == h)));
            for s in &removed {
                log::info!(
                    "peer {} is gone: its sessions leave the mount",
                    s.host().unwrap_or("?")
                );
            }
            if !new.is_empty() {
                // The path map as config.toml says it now (a rule for the new peer may
                // have been written with it).
                let rules = f.options.rules().unwrap_or_else(|e| {
                    log::warn!("{}: the peers' paths are not mapped", e.reason);
                    f.options.maps.clone()
                });
                for name in &new {
                    log::info!("peer {name} arrived in {}: showing it", dir.display());
                    let made = crate::sources::peers::one_peer_sources(
                        name,
                        watch.dir(),
                        &rules,
                        &f.root,
                        true,
                    );
                    for p in made {
                        if let Err(e) = index_kept_copies(&p, &f.workers) {
                            log::warn!("peer {name}: {}", e.reason);
                        }
                        f.sources.add(p as Arc<dyn SessionSource>);
                    }
                }
            }
            shown = now;
            f.tree.sources_changed(&gone);
            f.search.sources_changed();
        }
    })?;
    Ok(())
}

/// What `fen-fs status` says of keeping before the keeper says more.
fn keeping_at_start(args: &MountOptions) -> String {
    if !args.keep {
        "off (-o nokeep)".into()
    } else if crate::keep::off_by_env() {
        format!("off ({}=off)", crate::keep::KEEP_ENV)
    } else {
        "starting".into()
    }
}

/// Starts keeping the other agents' sessions (§11) as background work (stopped at
/// unmount with the rest), unless turned off. `sources`: the agents' own, and the
/// sources over this store's kept copies.
fn start_keeper(
    args: &MountOptions,
    root: &Path,
    sources: Vec<Arc<crate::sources::foreign_source::ForeignSource>>,
    status: &Arc<Mutex<MountStatus>>,
    status_file: &crate::store::layout::CacheFile,
    workers: &Workers,
) {
    if !args.keep || crate::keep::off_by_env() {
        log::info!("keeping is off");
        return;
    }
    if sources.iter().all(|s| s.kept_copies().is_some()) {
        // fen's own sessions are in the store already: nothing to keep.
        let mut s = status.lock().unwrap();
        s.keeping = "on (no other agent's store shown)".into();
        s.write(status_file);
        return;
    }
    let said = {
        let status = status.clone();
        let file = status_file.clone();
        move |state: &str| {
            let mut s = status.lock().unwrap();
            if s.keeping != state {
                s.keeping = state.to_string();
                s.write(&file);
            }
        }
    };
    let options = crate::keep::KeepOptions {
        agents: args.keep_agents.clone(),
        lines: false,
    };
    if let Err(e) = workers.keeper(root.to_path_buf(), sources, options, said) {
        log::error!("{}", e.reason);
    }
}

/// How long background work gets to stop and save at unmount: `fen-fs umount` (and
/// SIGTERM) returns within a second whatever the daemon is doing.
const STOP_BUDGET: Duration = Duration::from_millis(400);

/// `off` turns FUSE passthrough off (transcripts are then read through the daemon).
pub const PASSTHROUGH_ENV: &str = "FEN_FS_PASSTHROUGH";
/// `FEN_FS_SEARCH=off` in `mount`'s environment: no background search indexer.
pub const SEARCH_ENV: &str = "FEN_FS_SEARCH";
/// `FEN_FS_USAGE=off` in `mount`'s environment: usage is not counted in the background
/// after the mount (only when `usage/` is read).
pub const USAGE_ENV: &str = "FEN_FS_USAGE";

/// What `fen-fs status` learns of a running daemon from its store (`.fen-cache/mounts/
/// <pid>.json`): what its command line does not say.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MountStatus {
    pub pid: u32,
    pub mountpoint: PathBuf,
    /// FUSE passthrough for transcripts: `on`, `off (why)`, `not negotiated`.
    pub passthrough: String,
    /// The other agents' stores it shows.
    pub sources: Vec<(crate::agent::Agent, PathBuf)>,
    /// Keeping copies of their sessions (§11): `on`, `off (...)`, `paused: disk full
    /// since ...`.
    #[serde(default)]
    pub keeping: String,
}

impl MountStatus {
    fn write(&self, file: &crate::store::layout::CacheFile) {
        if let Ok(bytes) = serde_json::to_vec(self) {
            crate::store::atomic::replace_file(file, &bytes);
        }
    }

    /// The status daemon `pid` wrote in `store`, if it did.
    pub fn of(store: &Path, pid: u32) -> Option<MountStatus> {
        let file = crate::store::layout::mount_status_file(store, pid);
        let bytes = crate::store::atomic::read_file(&file, 1 << 20)?;
        serde_json::from_slice::<MountStatus>(&bytes)
            .ok()
            .filter(|s| s.pid == pid)
    }
}

/// Unmounts the mount this daemon made, and only it: what is at the path now must be
/// the mount recorded at mount time (same mount id and device). After a lazy unmount
/// of ours, a new mount at the path is someone else's, and is left alone. Whether the
/// request loop will now end by itself (else the caller exits).
fn unmount_own(mp: &Path, ours: Option<&MountEntry>) -> bool {
    let now = mount_table::entry_at(mp);
    let owned = matches!((ours, &now), (Some(o), Some(n)) if o.id == n.id && o.dev == n.dev);
    if !owned {
        log::warn!(
            "{} is no longer this daemon's mount (now: {:?}); leaving it mounted",
            mp.display(),
            now.map(|n| (n.id, n.fstype))
        );
        return false;
    }
    let Ok(path) = std::ffi::CString::new(mp.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: valid C string.
    if unsafe { libc::umount2(path.as_ptr(), 0) } == 0 {
        return true;
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // Not root: the setuid helper unmounts what this user mounted.
        Some(libc::EPERM) => {
            let ok = |lazy: bool| {
                let mut cmd = std::process::Command::new("fusermount3");
                cmd.arg("-u").arg("-q");
                if lazy {
                    cmd.arg("-z");
                }
                cmd.arg("--")
                    .arg(mp)
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if ok(false) {
                return true;
            }
            log::warn!("{} is busy: detaching it lazily", mp.display());
            ok(true);
            false
        }
        Some(libc::EBUSY) => {
            // Still in use: free the path; what is open fails once this daemon exits.
            log::warn!("{} is busy: detaching it lazily", mp.display());
            // SAFETY: valid C string.
            unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
            false
        }
        _ => {
            log::warn!("unmounting {}: {e}", mp.display());
            false
        }
    }
}

/// systemd's readiness protocol (sd_notify(3)): one datagram to `$NOTIFY_SOCKET`, a
/// socket path or an `@name` in the abstract namespace. Unset: nothing to tell.
fn sd_notify(state: &str) {
    use std::os::unix::ffi::OsStrExt;
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET").filter(|v| !v.is_empty()) else {
        return;
    };
    let send = || -> std::io::Result<()> {
        let d = std::os::unix::net::UnixDatagram::unbound()?;
        match socket.as_bytes().strip_prefix(b"@") {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                d.send_to_addr(state.as_bytes(), &addr)?;
            }
            None => {
                d.send_to(state.as_bytes(), &socket)?;
            }
        }
        Ok(())
    };
    if let Err(e) = send() {
        log::warn!("sd_notify {state} to {}: {e}", socket.to_string_lossy());
    }
}

/// Each session appended to keeps its descriptor open, and each open view holds one:
/// take the hard limit rather than fail with EMFILE at the usual soft 1024.
fn raise_open_file_limit() {
    // SAFETY: valid out-pointer; setrlimit only with values getrlimit returned.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset initializes the set before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// The pids of live daemons serving `mp`: `fen-fs mount ... --foreground` processes
/// whose mount point argument (against their working folder) is `mp`.
fn daemons_of(mp: &Path) -> Vec<i32> {
    let mp = mount_table::normalize(mp);
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<&[u8]> = raw.split(|&b| b == 0).collect();
            if args.get(1) != Some(&&b"mount"[..]) || !args.contains(&&b"--foreground"[..]) {
                return false;
            }
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            args.iter().skip(2).any(|a| {
                let a = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(a));
                mount_table::normalize(&cwd.join(a)) == mp
            })
        })
        .filter(|&pid| alive(pid))
        .collect()
}
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// How long `umount` asks again while the mount is busy before it says so.
const BUSY_PATIENCE: Duration = Duration::from_secs(1);

/// Unmounts the fen-fs mount at `mp` and returns once its daemon has exited (caches
/// written, nothing more to touch). Refuses what is not a fen-fs mount, and a busy
/// one (naming who uses it, after `BUSY_PATIENCE`) unless `lazy`; a stale mount of a
/// killed daemon is cleared even while busy (there is nothing left to serve).
pub fn umount(mp: &Path, lazy: bool) -> Result<()> {
    let norm = mount_table::normalize(mp);
    let Some(entry) = mount_table::entry_at(&norm) else {
        return Err(Error::invalid(format!(
            "{} is not a mount point: nothing to unmount",
            mp.display()
        )));
    };
    if !entry.fen {
        return Err(Error::invalid(format!(
            "{} is not a fen-fs mount (it is {}): nothing unmounted",
            mp.display(),
            entry.fstype
        )));
    }
    let daemons = daemons_of(&norm);
    let path = std::ffi::CString::new(norm.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::invalid("mount point contains NUL"))?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    let try_umount = || {
        // SAFETY: valid C string.
        if unsafe { libc::umount2(path.as_ptr(), flags) } == 0 {
            None
        } else {
            Some(std::io::Error::last_os_error())
        }
    };
    let mut first = try_umount();
    // Busy may be a reference that goes by itself (a `cat` ending, a child process
    // between fork and exec that still holds its parent's open file): asked again for
    // a moment before it is said, with who holds it then.
    let busy_until = std::time::Instant::now() + BUSY_PATIENCE;
    while first.as_ref().and_then(|e| e.raw_os_error()) == Some(libc::EBUSY)
        && !daemons.is_empty()
        && std::time::Instant::now() < busy_until
    {
        std::thread::sleep(Duration::from_millis(20));
        first = try_umount();
    }
    match first.as_ref().and_then(|e| e.raw_os_error()) {
        None => {}
        Some(libc::EPERM) => fusermount_u(&norm, lazy)?,
        Some(libc::EBUSY) if !daemons.is_empty() => return Err(busy(mp, &norm)),
        Some(libc::EINVAL) => {
            return Err(Error::invalid(format!(
                "{} is not mounted (it was unmounted meanwhile)",
                mp.display()
            )));
        }
        // A stale mount (no daemon; busy or its connection gone): detach it.
        // SAFETY: valid C string.
        Some(_) if unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) } == 0 => {}
        Some(_) => {
            return Err(Error::io(
                format!("unmounting {}", mp.display()),
                first.as_ref().unwrap(),
            ));
        }
    }
    // Lazily detached while in use, the daemon serves what is open until it is closed.
    let patience = if lazy {
        Duration::from_secs(2)
    } else {
        Duration::from_secs(60)
    };
    let deadline = std::time::Instant::now() + patience;
    loop {
        let left: Vec<i32> = daemons.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            if lazy {
                eprintln!(
                    "fen-fs: detached {}; still in use, so its daemon (pid {left:?}) serves \
                     what is open and exits when the last user leaves",
                    mp.display()
                );
            } else {
                log::warn!("the daemon of {} has not exited after 60 s", mp.display());
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Not root: the setuid helper unmounts what this user mounted.
fn fusermount_u(mp: &Path, lazy: bool) -> Result<()> {
    let mut cmd = std::process::Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd
        .arg("--")
        .arg(mp)
        .output()
        .map_err(|e| Error::io("running fusermount3", &e))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    if said.contains("busy") {
        return Err(busy(mp, mp));
    }
    Err(Error::new(
        libc::EIO,
        format!("unmounting {}: {}", mp.display(), said.trim()),
    ))
}

fn busy(mp: &Path, norm: &Path) -> Error {
    let users = users_of(norm);
    let mut msg = format!("{} is busy (Device or resource busy)", mp.display());
    if users.is_empty() {
        msg.push_str(": no process here uses it (another mount inside it, or a process in another mount namespace?)");
    } else {
        msg.push_str(", in use by:");
        for (pid, comm, what) in users.iter().take(20) {
            msg.push_str(&format!("\n  pid {pid} ({comm}): {what}"));
        }
        if users.len() > 20 {
            msg.push_str(&format!("\n  ... and {} more", users.len() - 20));
        }
    }
    msg.push_str(&format!(
        "\nClose those files or leave the folder, then retry; or detach it anyway: \
         fen-fs umount --lazy {}",
        mp.display()
    ));
    Error::new(libc::EBUSY, msg)
}

/// The processes using something under `mp`: as working folder, root, or open file
/// (their links in /proc name the path without asking the file system).
fn users_of(mp: &Path) -> Vec<(i32, String, String)> {
    let me = std::process::id() as i32;
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for pid in rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| p != me)
    {
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let under = |link: &Path| std::fs::read_link(link).ok().filter(|t| t.starts_with(mp));
        let mut uses = Vec::new();
        for (name, what) in [("cwd", "working folder"), ("root", "root folder")] {
            if let Some(t) = under(&proc.join(name)) {
                uses.push(format!("{what} {}", t.display()));
            }
        }
        if let Ok(fds) = std::fs::read_dir(proc.join("fd")) {
            for fd in fds.flatten() {
                if let Some(t) = under(&fd.path()) {
                    uses.push(format!("open file {}", t.display()));
                }
            }
        }
        if uses.is_empty() {
            continue;
        }
        let comm = std::fs::read_to_string(proc.join("comm")).unwrap_or_default();
        out.push((pid, comm.trim().to_string(), uses.join(", ")));
    }
    out
}
