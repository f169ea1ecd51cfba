//! The mount's lifecycle through the real binary: remounting one mount point over and
//! over, a daemon that never unmounts a mount it no longer owns, what `mount` and
//! `umount` refuse (and why), the default log file, and systemd's readiness protocol.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{Mount, fen_fs, fuse_available, out_text};

fn fen_mounted(mp: &Path) -> bool {
    fen_fs::mount_table::mounted_at(mp) == Some(true)
}

/// The mount answers: its root lists `ctl`.
fn serving(mp: &Path) -> bool {
    std::fs::read_dir(mp).is_ok_and(|rd| rd.flatten().any(|e| e.file_name() == "ctl"))
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| !s.contains("State:\tZ"))
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mount_cmd(mp: &Path, store: &Path) -> Command {
    let mut cmd = fen_fs();
    cmd.arg("mount")
        .arg(mp)
        .arg("--store")
        .arg(store)
        .arg("--no-detect");
    cmd
}

fn umount(mp: &Path, lazy: bool) -> Output {
    let mut cmd = fen_fs();
    cmd.arg("umount").arg(mp);
    if lazy {
        cmd.arg("--lazy");
    }
    cmd.output().unwrap()
}

/// Issue 12 case 10: each `umount` returns only once its daemon is gone, and no old
/// daemon takes the next mount down with it.
#[test]
fn forty_rounds_of_mount_umount_mount_keep_the_new_mount_serving() {
    let Some(m) = Mount::new("forty_rounds_of_mount_umount_mount_keep_the_new_mount_serving")
    else {
        return;
    };
    let s = m.create_session("/home/u/p", "hi");
    for round in 0..40 {
        let old = m.daemon_pid().expect("daemon running");
        let out = m.umount();
        assert!(out.status.success(), "round {round}: {}", out_text(&out));
        assert!(
            !alive(old),
            "round {round}: umount returned before its daemon exited"
        );
        m.mount();
        assert!(fen_mounted(&m.mp), "round {round}: not mounted");
        assert!(
            serving(&m.mp),
            "round {round}: the new mount does not serve"
        );
        assert!(s.join("meta.json").exists(), "round {round}");
    }
    // Whatever the old daemons did on their way out, the last mount still serves.
    std::thread::sleep(Duration::from_millis(200));
    assert!(serving(&m.mp));
    support::ctl_ok(&s, r#"{"role":"user","content":"after 40 rounds"}"#);
}

/// An old daemon whose mount was lazily detached, signalled after a new mount was made
/// at the same path, exits without unmounting the new one.
#[test]
fn a_daemon_never_unmounts_a_mount_it_no_longer_owns() {
    let Some(m) = Mount::new("a_daemon_never_unmounts_a_mount_it_no_longer_owns") else {
        return;
    };
    let old = m.daemon_pid().expect("daemon running");
    // An open folder keeps the old mount alive after it is detached.
    let held = std::fs::File::open(&m.mp).unwrap();
    let out = umount(&m.mp, true);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        alive(old),
        "the old daemon serves the open folder until it is closed"
    );
    assert!(!fen_mounted(&m.mp));

    m.mount();
    let new = m.daemon_pid_other_than(old).expect("new daemon");
    assert!(serving(&m.mp));
    // SAFETY: signalling the daemon this test started.
    assert_eq!(unsafe { libc::kill(old, libc::SIGTERM) }, 0);
    // Without the ownership check, the old daemon unmounts the path (the new mount)
    // and then waits forever for its own session.
    wait_until(
        "the old daemon to exit or the new mount to go",
        Duration::from_secs(10),
        || !alive(old) || !fen_mounted(&m.mp),
    );
    assert!(fen_mounted(&m.mp), "the old daemon unmounted the new mount");
    wait_until("the old daemon to exit", Duration::from_secs(10), || {
        !alive(old)
    });
    assert!(serving(&m.mp), "the new mount does not serve");
    assert!(alive(new));
    m.create_session("/home/u/p", "still here");
    drop(held);
}

#[test]
fn mount_refuses_an_already_mounted_fen_fs_naming_its_daemon() {
    let Some(m) = Mount::new("mount_refuses_an_already_mounted_fen_fs_naming_its_daemon") else {
        return;
    };
    let pid = m.daemon_pid().unwrap();
    let out = mount_cmd(&m.mp, &m.store).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = stderr(&out);
    assert!(err.contains("already a fen-fs mount"), "{err}");
    assert!(err.contains(&format!("pid {pid}")), "{err}");
    assert!(err.contains("fen-fs umount"), "{err}");
    assert!(serving(&m.mp));
    assert_eq!(
        m.daemon_pid_other_than(pid),
        None,
        "a second daemon started"
    );
}

#[test]
fn mount_refuses_a_non_empty_folder_unless_told_nonempty() {
    if !fuse_available("mount_refuses_a_non_empty_folder_unless_told_nonempty") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mp, store) = (tmp.path().join("mnt"), tmp.path().join("store"));
    std::fs::create_dir(&mp).unwrap();
    std::fs::write(mp.join("precious.txt"), "keep").unwrap();
    let out = mount_cmd(&mp, &store).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("not empty") && err.contains("precious.txt") && err.contains("--nonempty"),
        "{err}"
    );
    assert!(!fen_mounted(&mp));

    for force in [&["--nonempty"][..], &["-o", "nonempty"][..]] {
        let out = mount_cmd(&mp, &store).args(force).output().unwrap();
        assert!(out.status.success(), "{force:?}: {}", out_text(&out));
        assert!(serving(&mp));
        assert!(!mp.join("precious.txt").exists(), "hidden while mounted");
        let out = umount(&mp, false);
        assert!(out.status.success(), "{}", out_text(&out));
    }
    assert_eq!(std::fs::read(mp.join("precious.txt")).unwrap(), b"keep");
}

#[test]
fn mount_creates_a_missing_mount_point_and_says_so() {
    if !fuse_available("mount_creates_a_missing_mount_point_and_says_so") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mp, store) = (tmp.path().join("a/b/mnt"), tmp.path().join("store"));
    let out = mount_cmd(&mp, &store).output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        stderr(&out).contains(&format!("created mount point {}", mp.display())),
        "{}",
        out_text(&out)
    );
    assert!(serving(&mp));
    let out = umount(&mp, false);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(mp.is_dir());
}

#[test]
fn umount_refuses_what_is_not_a_fen_fs_mount() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let out = umount(&plain, false);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    assert!(
        stderr(&out).contains("not a mount point"),
        "{}",
        out_text(&out)
    );

    // An unrelated tmpfs (root only) is named and left mounted.
    let tmpfs = tmp.path().join("tmpfs");
    std::fs::create_dir(&tmpfs).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "fen-fs-test"])
        .arg(&tmpfs)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("(tmpfs part skipped: cannot mount tmpfs here)");
        return;
    }
    let out = umount(&tmpfs, false);
    let still = fen_fs::mount_table::mounted_at(&tmpfs).is_some();
    let _ = Command::new("umount").arg(&tmpfs).status();
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    assert!(
        stderr(&out).contains("not a fen-fs mount (it is tmpfs)"),
        "{}",
        out_text(&out)
    );
    assert!(still, "fen-fs umount unmounted a tmpfs");
}

#[test]
fn umount_of_a_busy_mount_names_its_users_and_lazy_detaches_it() {
    let Some(m) = Mount::new("umount_of_a_busy_mount_names_its_users_and_lazy_detaches_it") else {
        return;
    };
    let daemon = m.daemon_pid().unwrap();
    let mut user = Command::new("sleep")
        .arg("60")
        .current_dir(&m.mp)
        .spawn()
        .unwrap();
    let out = umount(&m.mp, false);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = stderr(&out);
    assert!(err.contains("busy"), "{err}");
    assert!(err.contains(&format!("pid {} (sleep)", user.id())), "{err}");
    assert!(err.contains("--lazy"), "{err}");
    assert!(serving(&m.mp), "a refused umount unmounted anyway");

    let out = umount(&m.mp, true);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(!fen_mounted(&m.mp));
    user.kill().unwrap();
    user.wait().unwrap();
    // The last user gone, the detached mount ends and so does its daemon.
    wait_until("the daemon to exit", Duration::from_secs(10), || {
        !alive(daemon)
    });
}

/// A reference that goes by itself within a moment (a file closed, a child process
/// that still held its parent's open file until its exec) does not fail `umount`.
#[test]
fn umount_waits_out_a_reference_that_goes_by_itself() {
    let Some(m) = Mount::new("umount_waits_out_a_reference_that_goes_by_itself") else {
        return;
    };
    let daemon = m.daemon_pid().unwrap();
    let held = std::fs::File::open(m.mp.join("ctl")).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(held);
    });
    let out = umount(&m.mp, false);
    closer.join().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(!fen_mounted(&m.mp));
    assert!(!alive(daemon), "umount returned before its daemon exited");
    m.mount();
    assert!(serving(&m.mp));
}

/// A killed daemon's stale mount is cleared even while a process still sits in it.
#[test]
fn umount_clears_a_stale_mount_even_while_busy() {
    let Some(m) = Mount::new("umount_clears_a_stale_mount_even_while_busy") else {
        return;
    };
    let mut user = Command::new("sleep")
        .arg("60")
        .current_dir(&m.mp)
        .spawn()
        .unwrap();
    m.kill9();
    let out = umount(&m.mp, false);
    user.kill().unwrap();
    user.wait().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(!fen_mounted(&m.mp));
    m.mount();
    assert!(serving(&m.mp));
}

#[test]
fn a_detached_daemon_logs_to_the_default_log_file() {
    if !fuse_available("a_detached_daemon_logs_to_the_default_log_file") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mp, store, state) = (
        tmp.path().join("mnt"),
        tmp.path().join("store"),
        tmp.path().join("state"),
    );
    let out = mount_cmd(&mp, &store)
        .env("XDG_STATE_HOME", &state)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let log = state.join("fen/fen-fs.log");
    let said = format!(
        "fen-fs: mounted {} at {}; log: {}",
        store.display(),
        mp.display(),
        log.display()
    );
    assert!(stderr(&out).contains(&said), "{}", out_text(&out));
    let out = umount(&mp, false);
    assert!(out.status.success(), "{}", out_text(&out));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(log.parent().unwrap()), 0o700);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("mounted"), "{text}");
}

/// `Type=notify`: READY=1 once the mount serves, STOPPING=1 when SIGTERM begins the
/// unmount; to a socket path and to an abstract `@name`.
#[test]
fn the_foreground_daemon_tells_systemd_ready_and_stopping() {
    if !fuse_available("the_foreground_daemon_tells_systemd_ready_and_stopping") {
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    let tmp = tempfile::tempdir().unwrap();
    let (mp, store) = (tmp.path().join("mnt"), tmp.path().join("store"));
    std::fs::create_dir(&mp).unwrap();
    let path = tmp.path().join("notify.sock");
    let abstract_name = format!("fen-fs-test-notify-{}", std::process::id());
    let sockets = [
        (
            UnixDatagram::bind(&path).unwrap(),
            path.display().to_string(),
        ),
        (
            UnixDatagram::bind_addr(
                &std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap(),
            )
            .unwrap(),
            format!("@{abstract_name}"),
        ),
    ];
    for (sock, env) in sockets {
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut child = mount_cmd(&mp, &store)
            .arg("--foreground")
            .env("NOTIFY_SOCKET", &env)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut buf = [0u8; 256];
        let n = sock.recv(&mut buf).unwrap_or_else(|e| {
            let _ = child.kill();
            panic!("{env}: no READY=1: {e}")
        });
        assert_eq!(&buf[..n], b"READY=1", "{env}");
        assert!(serving(&mp), "{env}: READY=1 before the mount serves");
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let n = sock.recv(&mut buf).expect("STOPPING=1");
        assert_eq!(&buf[..n], b"STOPPING=1", "{env}");
        let status = child.wait().unwrap();
        assert!(status.success(), "{env}: {status:?}");
        assert!(!fen_mounted(&mp), "{env}: left mounted");
    }
}
