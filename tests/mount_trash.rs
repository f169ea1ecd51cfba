//! The trash through a real mount: `rmdir` of a session folder, EBUSY with a `ctl`
//! writer, EPERM for single views, and a daemon killed between the move and its
//! fsyncs.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Mount, ctl_ok, out_text};

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Trashed files of the store, wherever they are in `.trash`.
fn trashed_files(store: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(store.join(".trash")) else {
        return out;
    };
    for ns in rd.flatten() {
        for f in std::fs::read_dir(ns.path()).unwrap().flatten() {
            out.push(f.path());
        }
    }
    out
}

fn gone_within(p: &Path, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::fs::symlink_metadata(p).is_err() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn rmdir_moves_a_session_to_the_trash_and_restore_brings_it_back() {
    let Some(m) = Mount::new("rmdir_moves_a_session_to_the_trash_and_restore_brings_it_back")
    else {
        return;
    };
    let s1 = m.create_session("/home/u/proj", "one");
    std::thread::sleep(Duration::from_millis(5));
    let s2 = m.create_session("/home/u/proj", "two");
    ctl_ok(&s2, r#"{"role":"assistant","content":"three"}"#);
    let ns = s2.parent().unwrap().to_path_buf();
    let dir2 = s2.file_name().unwrap().to_string_lossy().into_owned();
    let dir1 = s1.file_name().unwrap().to_string_lossy().into_owned();
    let bytes = std::fs::read(m.backing_file(&s2)).unwrap();

    // The folder holds views and goes whole; they cannot go one by one.
    let e = std::fs::remove_file(s2.join("meta.json")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EPERM));
    std::fs::remove_dir(&s2).unwrap();
    assert!(!s2.exists());
    assert_eq!(
        names(&ns),
        [dir1.clone(), "index.json".into(), "latest".into()]
    );
    let index = std::fs::read_to_string(ns.join("index.json")).unwrap();
    assert!(!index.contains(&dir2), "{index}");
    assert_eq!(
        std::fs::read_link(ns.join("latest")).unwrap(),
        PathBuf::from(&dir1)
    );
    assert!(!m.backing_file(&s2).exists());

    let out = support::fen_on(&m.store, &["trash", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{}", out_text(&out));
    assert_eq!(list[0]["dir"], dir2.as_str());
    assert_eq!(list[0]["cwd"], "/home/u/proj");

    let out = support::fen_on(&m.store, &["restore", &dir2]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(std::fs::read(m.backing_file(&s2)).unwrap(), bytes);
    assert_eq!(std::fs::read(s2.join("transcript.jsonl")).unwrap(), bytes);

    // `rm -r` is not the way: the views refuse, the session stays.
    let out = m.sh(&format!("rm -r '{}'", s1.display()));
    assert!(!out.status.success(), "{}", out_text(&out));
    assert!(m.backing_file(&s1).exists());

    // The last session of a namespace takes the namespace with it.
    std::fs::remove_dir(&s1).unwrap();
    std::fs::remove_dir(&s2).unwrap();
    assert!(!names(&m.mp).iter().any(|n| n.starts_with("home")));
    assert!(
        gone_within(&ns, Duration::from_secs(1)),
        "namespace still there"
    );
    assert!(!m.backing_namespace(&ns).exists());
    assert_eq!(trashed_files(&m.store).len(), 2);
    // Removing it again: gone.
    let e = std::fs::remove_dir(&s1).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));

    // Restored behind the daemon's back, the namespace comes back with it.
    let out = support::fen_on(&m.store, &["restore", &dir1]);
    assert!(out.status.success(), "{}", out_text(&out));
    let start = Instant::now();
    while !ns.join("index.json").exists() && start.elapsed().as_secs() < 2 {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        names(&ns),
        [dir1.clone(), "index.json".into(), "latest".into()]
    );
    let index = std::fs::read_to_string(ns.join("index.json")).unwrap();
    assert!(index.contains(&dir1), "{index}");
    assert_eq!(
        std::fs::read_link(ns.join("latest")).unwrap(),
        PathBuf::from(&dir1)
    );
}

#[test]
fn rmdir_with_an_open_ctl_writer_is_busy() {
    let Some(m) = Mount::new("rmdir_with_an_open_ctl_writer_is_busy") else {
        return;
    };
    let s = m.create_session("/p", "one");
    let writer = std::fs::OpenOptions::new()
        .write(true)
        .open(s.join("ctl"))
        .unwrap();
    let e = std::fs::remove_dir(&s).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBUSY), "{e}");
    assert!(m.backing_file(&s).exists());
    drop(writer);
    // The release reaches the daemon just after close returns.
    let start = Instant::now();
    loop {
        match std::fs::remove_dir(&s) {
            Ok(()) => break,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && start.elapsed().as_secs() < 5 => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!("rmdir after close: {e}"),
        }
    }
    assert!(!m.backing_file(&s).exists());
    assert_eq!(trashed_files(&m.store).len(), 1);
}

#[test]
fn a_daemon_killed_between_the_move_and_its_fsyncs_loses_nothing() {
    const TEST: &str = "a_daemon_killed_between_the_move_and_its_fsyncs_loses_nothing";
    if !support::fuse_available(TEST) {
        return;
    }
    let m = Mount::unmounted(&[]);
    // This daemon kills itself (SIGKILL) right after the trash's rename.
    let out = support::fen_fs()
        .arg("mount")
        .arg(&m.mp)
        .arg("--store")
        .arg(&m.store)
        .env("FEN_FS_TEST_KILL_AFTER_TRASH_RENAME", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let a = m.create_session("/p", "keep");
    let b = m.create_session("/p", "delete me");
    ctl_ok(&b, r#"{"role":"assistant","content":"sure"}"#);
    let (a_file, b_file) = (m.backing_file(&a), m.backing_file(&b));
    let (a_bytes, b_bytes) = (
        std::fs::read(&a_file).unwrap(),
        std::fs::read(&b_file).unwrap(),
    );

    let e = std::fs::remove_dir(&b).unwrap_err();
    assert!(
        matches!(e.raw_os_error(), Some(libc::ECONNABORTED | libc::ENOTCONN)),
        "{e}"
    );
    let start = Instant::now();
    while m.daemon_pid().is_some() && start.elapsed().as_secs() < 10 {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(m.daemon_pid().is_none(), "the daemon survived");
    let out = m.umount();
    assert!(out.status.success(), "{}", out_text(&out));

    // Exactly one copy of each session, byte for byte.
    assert_eq!(std::fs::read(&a_file).unwrap(), a_bytes);
    assert!(!b_file.exists(), "the rename happened before the kill");
    let trashed = trashed_files(&m.store);
    assert_eq!(trashed.len(), 1, "{trashed:?}");
    assert_eq!(std::fs::read(&trashed[0]).unwrap(), b_bytes);

    // A new daemon sees the deletion; a restore brings the same bytes back.
    m.mount();
    let ns = b.parent().unwrap();
    let b_name = b.file_name().unwrap().to_string_lossy().into_owned();
    assert!(!names(ns).contains(&b_name));
    let out = support::fen_on(&m.store, &["restore", &b_name]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(std::fs::read(&b_file).unwrap(), b_bytes);
    assert_eq!(std::fs::read(b.join("transcript.jsonl")).unwrap(), b_bytes);
}
