//! The mount's lifecycle: detaching with a readiness pipe, the notifier and sync
//! threads, clean unmount on SIGINT/SIGTERM, and clearing stale mounts.

use crate::ctl::CtlService;
use crate::error::{Error, Result};
use crate::sources::SessionSource;
use crate::sources::fen::FenSource;
use crate::store::Store;
use crate::store::durability::FsyncMode;
use crate::tree::Tree;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
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
    /// Which other agents' stores to show beside fen's own.
    pub foreign: crate::sources::ForeignOptions,
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

/// Refuses a mount point that is missing, not a folder, or a stale mount. Opening the
/// folder always reaches a (dead) daemon; a `stat` may be answered from the kernel's
/// attribute cache.
fn check_mountpoint(mp: &Path) -> Result<()> {
    let probe = std::fs::metadata(mp).and_then(|m| std::fs::read_dir(mp).map(|_| m));
    match probe {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::invalid(format!("{} is not a folder", mp.display()))),
        // ECONNABORTED: a request caught in flight while the daemon died.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)) => {
            Err(stale_mount(mp))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            Err(Error::invalid(format!("{} is not a folder", mp.display())))
        }
        Err(e) => Err(Error::io(mp.display(), &e)),
    }
}

pub fn mount(args: MountOptions) -> Result<ExitCode> {
    check_mountpoint(&args.mountpoint)?;
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
    if !args.foreign.detect {
        cmd.arg("--no-detect");
    }
    for r in &args.foreign.explicit {
        let mut spec = std::ffi::OsString::from(format!("{}=", r.agent.name()));
        spec.push(&r.root);
        cmd.arg("--source").arg(spec);
    }
    let stderr = match &args.log_file {
        Some(path) => std::process::Stdio::from(
            // 0600 whatever the umask: the log names sessions and their folders.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(libc::O_CLOEXEC)
                .open(path)
                .map_err(|e| Error::io(path.display(), &e))?,
        ),
        None => std::process::Stdio::null(),
    };
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
    let store = match Store::open(&root, args.fsync) {
        Ok(s) => Arc::new(s),
        Err(e) => return fail(&mut ready, e),
    };
    let ctl = Arc::new(CtlService::new(store.clone(), args.max_entry_bytes));
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut sources: Vec<Arc<dyn SessionSource>> =
        vec![Arc::new(FenSource::watching(store.clone()))];
    // Other agents' stores are indexed in the background: the mount is ready at once,
    // and a listing that needs them waits for their first index.
    for foreign in crate::sources::foreign_sources(&args.foreign, &root, true) {
        let indexer = foreign.clone();
        std::thread::Builder::new()
            .name(format!("fen-index-{}", foreign.agent().name()))
            .spawn(move || indexer.build_index())
            .map_err(|e| Error::io("index thread", &e))?;
        sources.push(foreign);
    }
    let tree = Arc::new(Tree::new(sources.clone(), Some(ctl), uid, gid));
    let config = crate::fuse::MountConfig {
        allow_other: args.allow_other,
        threads: args.threads,
    };
    // Wake the main thread when the kernel ends the session (umount).
    // SAFETY: sending a signal to our own process.
    let on_end = || unsafe {
        libc::kill(libc::getpid(), libc::SIGUSR1);
    };
    let mut mounted = match crate::fuse::mount(tree, &args.mountpoint, &config, on_end) {
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
    log::info!(
        "mounted {} at {}",
        root.display(),
        args.mountpoint.display()
    );
    if let Some(mut r) = ready.take() {
        let _ = writeln!(r, "ready");
    }
    let mut sig = 0;
    // SAFETY: valid set and out-pointer.
    unsafe { libc::sigwait(&signals, &mut sig) };
    if sig != libc::SIGUSR1 {
        log::info!("signal {sig}: unmounting");
        if let Err(e) = mounted.unmount() {
            log::warn!("unmount: {e}");
        }
    }
    // Indexes, so the next mount need not re-read unchanged files.
    for s in &sources {
        s.persist();
    }
    match mounted.join() {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(Error::io("fuse session", &e)),
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

/// The pids of daemons serving `mp` (found by the command line `detach` gives them).
fn daemons_of(mp: &Path) -> Vec<i32> {
    let mp = std::path::absolute(mp).unwrap_or_else(|_| mp.to_path_buf());
    let mut needle = b"mount\0".to_vec();
    needle.extend_from_slice(mp.as_os_str().as_encoded_bytes());
    needle.extend_from_slice(b"\0--foreground\0");
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(needle.len()).any(|w| w == needle.as_slice()))
        })
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

/// Unmounts `mp` and returns once its daemon has exited (caches written, nothing
/// more to touch); a stale mount of a killed daemon is detached lazily.
pub fn umount(mp: &Path) -> Result<()> {
    let daemons = daemons_of(mp);
    unmount_only(mp)?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while daemons.iter().any(|&p| alive(p)) {
        if std::time::Instant::now() > deadline {
            log::warn!("the daemon of {} has not exited after 60 s", mp.display());
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn unmount_only(mp: &Path) -> Result<()> {
    let path = std::ffi::CString::new(mp.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::invalid("mount point contains NUL"))?;
    // SAFETY: valid C string.
    if unsafe { libc::umount2(path.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let first = std::io::Error::last_os_error();
    if first.raw_os_error() == Some(libc::EPERM) {
        // Not root: the setuid helper can unmount what this user mounted.
        let status = std::process::Command::new("fusermount3")
            .arg("-u")
            .arg("-z")
            .arg(mp)
            .status();
        return match status {
            Ok(s) if s.success() => Ok(()),
            _ => Err(Error::io(format!("unmounting {}", mp.display()), &first)),
        };
    }
    // SAFETY: as above. A dead connection or a busy mount: detach it.
    if first.raw_os_error() != Some(libc::EINVAL)
        && unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) } == 0
    {
        return Ok(());
    }
    Err(Error::io(
        format!("unmounting {} (is it mounted?)", mp.display()),
        &first,
    ))
}
