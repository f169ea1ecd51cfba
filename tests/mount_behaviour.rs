//! Mounted tests of the mount as a filesystem (§2, §2.1, §5): what cannot be done
//! through it, changes made behind its back, `ls -t` order, and the daemon's
//! lifecycle (stale mounts after `kill -9`, clean unmount on SIGTERM).
mod support;
use support::{ctl_ok, meta, out_text};

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn is_fuse_mounted(mp: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let mp = mp.to_string_lossy();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(mp.as_ref()))
}

fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn names(dir: &Path) -> Vec<String> {
    let out = Command::new("ls").arg("-a").arg(dir).output().unwrap();
    assert!(out.status.success(), "ls {dir:?}: {}", out_text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// (8) Views cannot be written (EACCES); structure cannot be changed (EPERM).
#[test]
fn the_tree_is_read_only_except_ctl() {
    let Some(m) = support::Mount::new("the_tree_is_read_only_except_ctl") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let sd = s.display().to_string();
    let ns = s.parent().unwrap().display().to_string();
    let transcript = std::fs::read(m.backing_file(&s)).unwrap();

    let denied = |script: &str, expect: &str| {
        let out = m.sh(script);
        assert!(!out.status.success(), "{script}: succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{script}: {err:?}, wanted {expect:?}");
    };
    for view in [
        "meta.json",
        "conversation.json",
        "conversation.md",
        "summary.txt",
        "transcript.jsonl",
    ] {
        denied(&format!("echo x > '{sd}/{view}'"), "Permission denied");
        denied(&format!("echo x >> '{sd}/{view}'"), "Permission denied");
    }
    denied(&format!("echo x > '{ns}/index.json'"), "Permission denied");
    denied(
        &format!("truncate -s 0 '{sd}/meta.json'"),
        "Permission denied",
    );

    // The same through the API: EACCES for writing a view, EPERM for structure.
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(s.join("conversation.json"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    let e = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_TRUNC)
        .write(true)
        .open(s.join("transcript.jsonl"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES));

    let eperm = "Operation not permitted";
    denied(&format!("touch '{sd}/new'"), eperm);
    denied(&format!("touch '{ns}/new'"), eperm);
    denied("touch ./new", eperm);
    denied(&format!("echo x > '{sd}/new.txt'"), eperm);
    denied(&format!("mkdir '{sd}/d'"), eperm);
    denied(&format!("mkdir '{ns}/d'"), eperm);
    denied("mkdir ./--new-ns--", eperm);
    denied(&format!("rm -f '{sd}/meta.json'"), eperm);
    denied(&format!("rm -f '{sd}/transcript.jsonl'"), eperm);
    denied(&format!("rm -f '{ns}/index.json'"), eperm);
    denied(&format!("rm -f '{ns}/latest'"), eperm);
    denied("rm -f ./ctl", eperm);
    denied(&format!("rm -rf '{sd}'"), eperm);
    // (`rmdir` of a session folder moves it to the trash: tests/mount_trash.rs.)
    denied(&format!("rmdir '{ns}'"), eperm);
    denied(&format!("mv '{sd}/meta.json' '{sd}/m.json'"), eperm);
    denied(&format!("mv '{sd}' '{ns}/renamed'"), eperm);
    denied(&format!("mv '{ns}' ./--renamed--"), eperm);
    denied(&format!("ln '{sd}/meta.json' '{sd}/hard'"), eperm);
    denied(&format!("ln -s meta.json '{sd}/soft'"), eperm);
    denied(&format!("chmod 666 '{sd}/meta.json'"), eperm);

    // Nothing changed, the session is intact, the modes are as §2 says.
    assert_eq!(std::fs::read(m.backing_file(&s)).unwrap(), transcript);
    assert_eq!(
        names(&s),
        [
            ".",
            "..",
            "conversation.json",
            "conversation.md",
            "ctl",
            "meta.json",
            "summary.txt",
            "transcript.jsonl"
        ]
    );
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&s.join("meta.json")), 0o444);
    assert_eq!(mode(&s.join("transcript.jsonl")), 0o444);
    assert_eq!(mode(&s.join("ctl")), 0o600);
    assert_eq!(mode(&m.path("ctl")), 0o600);
    assert_eq!(mode(&s), 0o755);
    assert_eq!(mode(s.parent().unwrap()), 0o755);
    assert_eq!(mode(&m.backing_file(&s)), 0o600, "store files are private");
}

/// Appends one entry to a session file directly, as §1.1's writers must: `flock`,
/// `O_APPEND`, one `write(2)`, a new id chained to the last one.
fn append_directly(file: &Path, content: &str) -> String {
    let f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    // SAFETY: valid descriptor; released when `f` closes.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    let text = std::fs::read_to_string(file).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let last_id = last["id"].as_str().unwrap().to_string();
    let last_uuid = uuid::Uuid::parse_str(&last_id).unwrap();
    let id = uuid::Uuid::from_u128(last_uuid.as_u128() + 1);
    assert_eq!(id.get_version_num(), 7);
    let line = format!(
        r#"{{"type":"message","id":"{id}","parent-id":"{last_id}","timestamp":"2026-11-21T00:00:00.000Z","message":{{"role":"user","content":{}}}}}"#,
        serde_json::to_string(content).unwrap()
    );
    (&f).write_all(format!("{line}\n").as_bytes()).unwrap();
    id.to_string()
}

/// Writes a complete session file into the store directly.
fn new_session_file(store: &Path, cwd: &str, ns: &str, stamp: &str, content: &str) -> PathBuf {
    let sid = uuid::Uuid::now_v7();
    let eid = uuid::Uuid::now_v7();
    let dir = store.join(ns);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{stamp}_{sid}.jsonl"));
    let text = format!(
        "{{\"type\":\"session\",\"version\":2,\"id\":\"{sid}\",\"timestamp\":\"2026-11-20T00:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n\
         {{\"type\":\"message\",\"id\":\"{eid}\",\"parent-id\":null,\"timestamp\":\"2026-11-20T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{content}\"}}}}\n"
    );
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
    path
}

/// (9) An agent writing the store directly: appends, new files and deletions show up
/// on the next access.
#[test]
fn changes_behind_the_mounts_back_show_up() {
    let Some(m) = support::Mount::new("changes_behind_the_mounts_back_show_up") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    ctl_ok(&s, r#"{"role":"assistant","content":"hello"}"#);
    // Read every view first, so the daemon has indexed the file.
    let before = meta(&s);
    assert_eq!(before["messages"], 2);
    let conv_size = std::fs::metadata(s.join("conversation.json"))
        .unwrap()
        .len();
    let _ = std::fs::read(s.join("transcript.jsonl")).unwrap();

    let id = append_directly(&m.backing_file(&s), "direct");
    let conv = std::fs::read_to_string(s.join("conversation.json")).unwrap();
    assert!(
        conv.ends_with(",\n{\"role\":\"user\",\"content\":\"direct\"}\n]\n"),
        "{conv}"
    );
    assert_eq!(
        std::fs::metadata(s.join("conversation.json"))
            .unwrap()
            .len(),
        conv.len() as u64
    );
    assert!(conv.len() as u64 > conv_size);
    let after = meta(&s);
    assert_eq!(after["messages"], 3, "{after}");
    assert_eq!(after["last_entry_id"], id.as_str());
    assert_eq!(after["updated_at"], "2026-11-21T00:00:00.000Z");
    assert_eq!(after["malformed_lines"], 0);
    // The transcript view shows the new line, by stat size and by content (cat).
    let t = Command::new("cat")
        .arg(s.join("transcript.jsonl"))
        .output()
        .unwrap();
    assert_eq!(t.stdout, std::fs::read(m.backing_file(&s)).unwrap());
    assert_eq!(
        std::fs::metadata(s.join("transcript.jsonl")).unwrap().len(),
        t.stdout.len() as u64
    );
    // A ctl append after it chains onto the direct entry.
    let next = ctl_ok(&s, r#"{"role":"assistant","content":"after direct"}"#);
    let text = std::fs::read_to_string(m.backing_file(&s)).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["id"], next.as_str());
    assert_eq!(last["parent-id"], id.as_str());
    assert!(next > id, "ids increase: {next} after {id}");

    // A new session file in an existing namespace, and one in a new namespace.
    let ns = s.parent().unwrap().to_path_buf();
    let f1 = new_session_file(
        &m.store,
        "/home/u/proj",
        "--home-u-proj--",
        "2026-11-20T00-00-00-000Z",
        "made directly",
    );
    let d1 = f1.file_stem().unwrap().to_string_lossy().into_owned();
    assert!(names(&ns).contains(&d1), "{:?}", names(&ns));
    assert_eq!(
        std::fs::read_to_string(ns.join(&d1).join("conversation.json")).unwrap(),
        "[\n{\"role\":\"user\",\"content\":\"made directly\"}\n]\n"
    );
    let idx: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ns.join("index.json")).unwrap()).unwrap();
    assert!(
        idx.as_array()
            .unwrap()
            .iter()
            .any(|e| e["dir"] == d1.as_str()),
        "{idx}"
    );
    let f2 = new_session_file(
        &m.store,
        "/srv/direct",
        "--srv-direct--",
        "2026-11-20T00-00-01-000Z",
        "new namespace",
    );
    let d2 = f2.file_stem().unwrap().to_string_lossy().into_owned();
    assert!(names(&m.mp).contains(&"srv-direct".to_string()));
    assert!(names(&m.path("srv-direct")).contains(&d2));
    assert_eq!(
        std::fs::read_link(m.path("srv-direct").join("latest")).unwrap(),
        PathBuf::from(&d2)
    );

    // Non-jsonl files and empty folders in the store are ignored.
    std::fs::write(m.store.join("--home-u-proj--").join("notes.txt"), "x").unwrap();
    std::fs::create_dir(m.store.join("--empty--")).unwrap();
    assert!(!names(&ns).iter().any(|n| n.starts_with("notes")));
    assert!(!names(&m.mp).contains(&"empty".to_string()));

    // Deleted files disappear, and so does a namespace left without sessions.
    std::fs::remove_file(&f1).unwrap();
    assert!(!names(&ns).contains(&d1), "{:?}", names(&ns));
    std::fs::remove_file(&f2).unwrap();
    assert!(!names(&m.mp).contains(&"srv-direct".to_string()));
    let out = m.sh(&format!("stat '{}/{d1}/meta.json'", ns.display()));
    assert!(!out.status.success(), "{}", out_text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such file"));
    // The live session is unaffected.
    assert_eq!(meta(&s)["messages"], 4);
}

/// (10) After `kill -9` of the daemon the mount is stale; `fen-fs mount` says how to
/// clear it, `fen-fs umount` clears it, and a new mount serves the same data.
#[test]
fn umount_clears_the_stale_mount_of_a_killed_daemon() {
    let Some(m) = support::Mount::new("umount_clears_the_stale_mount_of_a_killed_daemon") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "survive");
    ctl_ok(&s, r#"{"role":"assistant","content":"me too"}"#);
    let conv = std::fs::read(s.join("conversation.json")).unwrap();
    let transcript = std::fs::read(m.backing_file(&s)).unwrap();

    m.kill9();
    let out = Command::new("ls").arg(&m.mp).output().unwrap();
    assert!(!out.status.success(), "{}", out_text(&out));
    // A request caught in flight while the daemon died gets ECONNABORTED; after
    // that, every access gets ENOTCONN.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Transport endpoint is not connected") || err.contains("connection abort"),
        "{}",
        out_text(&out)
    );
    let out = Command::new("ls").arg(&m.mp).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Transport endpoint is not connected"),
        "{}",
        out_text(&out)
    );

    let out = support::fen_fs()
        .arg("mount")
        .arg(&m.mp)
        .arg("--store")
        .arg(&m.store)
        .output()
        .unwrap();
    assert!(!out.status.success(), "mount over a stale mount succeeded");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fen-fs umount"), "{err}");
    assert!(err.contains("not connected"), "{err}");

    let out = m.umount();
    assert!(out.status.success(), "umount: {}", out_text(&out));
    assert!(!is_fuse_mounted(&m.mp));
    let out = Command::new("ls").arg(&m.mp).output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(out.stdout.is_empty(), "the bare mount point is empty");

    m.mount();
    assert!(is_fuse_mounted(&m.mp));
    assert_eq!(std::fs::read(s.join("conversation.json")).unwrap(), conv);
    assert_eq!(
        std::fs::read(s.join("transcript.jsonl")).unwrap(),
        transcript
    );
    ctl_ok(&s, r#"{"role":"user","content":"after remount"}"#);
    assert_eq!(meta(&s)["messages"], 3);
}

/// (11) SIGTERM unmounts cleanly: the detached daemon and a `--foreground` one, which
/// exits 0.
#[test]
fn sigterm_unmounts_cleanly() {
    let Some(m) = support::Mount::new("sigterm_unmounts_cleanly") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let pid = m.daemon_pid().expect("daemon running");
    assert!(is_fuse_mounted(&m.mp));
    // SAFETY: signalling the daemon this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    wait_until("the daemon to exit", Duration::from_secs(10), || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_or(true, |st| st.contains("State:\tZ"))
    });
    assert!(!is_fuse_mounted(&m.mp), "stale mount left after SIGTERM");
    let out = Command::new("ls").arg(&m.mp).output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(out.stdout.is_empty());
    assert!(m.backing_file(&s).is_file());

    // In the foreground, as systemd runs it: SIGTERM, exit status 0, no mount left.
    let mut child = support::fen_fs()
        .arg("mount")
        .arg(&m.mp)
        .arg("--foreground")
        .arg("--store")
        .arg(&m.store)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the foreground mount", Duration::from_secs(10), || {
        is_fuse_mounted(&m.mp) && s.join("meta.json").exists()
    });
    assert_eq!(meta(&s)["messages"], 1);
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the foreground daemon did not exit on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "exit {status:?}: {err}");
    assert!(!is_fuse_mounted(&m.mp), "stale mount left after SIGTERM");
}

/// (12) Folder mtimes follow the last update, so `ls -t` puts the newest first.
#[test]
fn ls_t_sorts_sessions_by_last_update() {
    let Some(m) = support::Mount::new("ls_t_sorts_sessions_by_last_update") else {
        return;
    };
    let a = m.create_session("/home/u/proj", "older");
    std::thread::sleep(Duration::from_millis(50));
    let b = m.create_session("/home/u/proj", "newer");
    let ns = a.parent().unwrap().to_path_buf();
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let ls_t = || -> Vec<String> {
        let out = Command::new("ls").arg("-t").arg(&ns).output().unwrap();
        assert!(out.status.success(), "{}", out_text(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| *l != "latest" && *l != "index.json")
            .map(str::to_string)
            .collect()
    };
    assert_eq!(ls_t(), [name(&b), name(&a)]);

    std::thread::sleep(Duration::from_millis(50));
    ctl_ok(&a, r#"{"role":"user","content":"touch a"}"#);
    assert_eq!(ls_t(), [name(&a), name(&b)], "append to the older one");
    assert_eq!(
        std::fs::read_link(ns.join("latest")).unwrap(),
        PathBuf::from(name(&a))
    );
    let idx: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ns.join("index.json")).unwrap()).unwrap();
    assert_eq!(idx[0]["dir"], name(&a).as_str());
    assert_eq!(idx[1]["dir"], name(&b).as_str());
    // The folder's mtime is the backing file's.
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    assert_eq!(mtime(&a), mtime(&m.backing_file(&a)));
    assert!(mtime(&a) > mtime(&b));

    std::thread::sleep(Duration::from_millis(50));
    ctl_ok(&b, r#"{"role":"user","content":"touch b"}"#);
    assert_eq!(ls_t(), [name(&b), name(&a)]);
}

/// A torn last line left by a crashed direct writer: views skip it, and a `ctl`
/// append writes `\n` first so the new entry is not glued to it (§1.1).
#[test]
fn a_torn_line_is_skipped_and_never_glued_to() {
    let Some(m) = support::Mount::new("a_torn_line_is_skipped_and_never_glued_to") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let file = m.backing_file(&s);
    let conv = std::fs::read(s.join("conversation.json")).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    f.write_all(br#"{"type":"message","id":"01"#).unwrap();
    drop(f);
    assert_eq!(std::fs::read(s.join("conversation.json")).unwrap(), conv);
    let before = std::fs::read(&file).unwrap();

    let id = ctl_ok(&s, r#"{"role":"assistant","content":"after the tear"}"#);
    let after = std::fs::read(&file).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "existing bytes rewritten"
    );
    let added = std::str::from_utf8(&after[before.len()..]).unwrap();
    assert!(
        added.starts_with('\n'),
        "no newline before the entry: {added:?}"
    );
    let entry: serde_json::Value = serde_json::from_str(added.trim()).unwrap();
    assert_eq!(entry["id"], id.as_str());
    assert_eq!(
        std::fs::read_to_string(s.join("conversation.json")).unwrap(),
        "[\n{\"role\":\"user\",\"content\":\"hi\"},\n{\"role\":\"assistant\",\"content\":\"after the tear\"}\n]\n"
    );
    let v = meta(&s);
    assert_eq!(v["messages"], 2, "{v}");
    assert_eq!(v["malformed_lines"], 1, "{v}");
    assert_eq!(v["last_entry_id"], id.as_str());
}

/// A session file deleted behind the mount: a `ctl` write fails with ENOENT (the
/// reply says so) and does not recreate the file; the folder disappears.
#[test]
fn writing_to_a_deleted_session_fails_with_enoent() {
    let Some(m) = support::Mount::new("writing_to_a_deleted_session_fails_with_enoent") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let other = m.create_session("/home/u/proj", "stays");
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.join("ctl"))
        .unwrap();
    std::fs::remove_file(m.backing_file(&s)).unwrap();
    let e = f
        .write_all(b"{\"role\":\"user\",\"content\":\"gone\"}\n")
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    let mut reply = String::new();
    f.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("err ENOENT "), "{reply:?}");
    drop(f);
    assert!(!m.backing_file(&s).exists(), "the file was recreated");
    let ns = s.parent().unwrap();
    let listed = names(ns);
    assert!(
        !listed.contains(&s.file_name().unwrap().to_string_lossy().into_owned()),
        "{listed:?}"
    );
    assert_eq!(
        std::fs::read_link(ns.join("latest")).unwrap(),
        PathBuf::from(other.file_name().unwrap())
    );
}

/// Namespace folders' mtime is their newest session's last update, so `ls -t` at the
/// root puts the namespace with the latest activity first (§2: "Folder mtime is the
/// session's last update, so `ls -t` sorts newest first").
#[test]
fn ls_t_sorts_namespaces_by_last_update() {
    let Some(m) = support::Mount::new("ls_t_sorts_namespaces_by_last_update") else {
        return;
    };
    let a = m.create_session("/srv/a", "older");
    std::thread::sleep(Duration::from_millis(50));
    let _b = m.create_session("/srv/b", "newer");
    std::thread::sleep(Duration::from_millis(50));
    ctl_ok(&a, r#"{"role":"user","content":"touch a"}"#);
    let out = Command::new("ls").arg("-t").arg(&m.mp).output().unwrap();
    let order: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("srv-"))
        .map(str::to_string)
        .collect();
    assert_eq!(order, ["srv-a", "srv-b"]);
}

/// `index.json` and `latest` are served from a cached rendering while inotify reports
/// nothing: every append or new file made behind the mount's back must still show on
/// the very next read (repeated, to catch a race between write and read).
#[test]
fn index_json_sees_direct_appends_immediately() {
    let Some(m) = support::Mount::with_args(
        "index_json_sees_direct_appends_immediately",
        &["--fsync", "no"],
    ) else {
        return;
    };
    let a = m.create_session("/home/u/watch", "a");
    let b = m.create_session("/home/u/watch", "b");
    let index = a.parent().unwrap().join("index.json");
    let latest = a.parent().unwrap().join("latest");
    let messages_of = |dir: &Path| -> u64 {
        let list: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
        let name = dir.file_name().unwrap().to_string_lossy();
        list.as_array()
            .unwrap()
            .iter()
            .find(|l| l["dir"] == name.as_ref())
            .unwrap()["messages"]
            .as_u64()
            .unwrap()
    };
    for round in 0..40u64 {
        let target = if round % 2 == 0 { &a } else { &b };
        let before = messages_of(target);
        let text = std::fs::read_to_string(m.backing_file(target)).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let last_id = uuid::Uuid::parse_str(last["id"].as_str().unwrap()).unwrap();
        let next = uuid::Uuid::from_u128(last_id.as_u128() + 1);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(m.backing_file(target))
            .unwrap();
        writeln!(
            f,
            "{{\"type\":\"message\",\"id\":\"{next}\",\"parent-id\":\"{last_id}\",\"timestamp\":\"2030-01-01T00:00:{:02}.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"direct {round}\"}}}}",
            round % 60
        )
        .unwrap();
        drop(f);
        assert_eq!(
            messages_of(target),
            before + 1,
            "round {round}: index.json missed a direct append"
        );
        let newest = std::fs::read_link(&latest).unwrap();
        assert_eq!(
            newest.as_os_str(),
            target.file_name().unwrap(),
            "round {round}: latest"
        );
    }
    // A session file created behind the mount's back shows at once too.
    let ns_dir = m.backing_namespace(a.parent().unwrap());
    let new = ns_dir.join("2030-01-02T00-00-00-000Z_direct-new.jsonl");
    std::fs::write(
        &new,
        "{\"type\":\"session\",\"version\":2,\"id\":\"direct-new\",\"timestamp\":\"2030-01-02T00:00:00.000Z\",\"cwd\":\"/home/u/watch\"}\n",
    )
    .unwrap();
    let list = String::from_utf8(std::fs::read(&index).unwrap()).unwrap();
    assert!(list.contains("direct-new"), "{list}");
}

/// Every `--fsync` mode appends and reads back the same (durability itself needs a
/// power cut to test; this guards the plumbing of each mode, including the everysec
/// thread running while appends continue).
#[test]
fn every_fsync_mode_appends() {
    for mode in ["always", "everysec", "no"] {
        let Some(m) = support::Mount::with_args("every_fsync_mode_appends", &["--fsync", mode])
        else {
            return;
        };
        let s = m.create_session("/home/u/modes", mode);
        for i in 0..20 {
            ctl_ok(
                &s,
                &format!(r#"{{"role":"assistant","content":"{mode} {i}"}}"#),
            );
            if mode == "everysec" && i == 10 {
                std::thread::sleep(Duration::from_millis(1200)); // let the sync thread run
            }
        }
        assert_eq!(meta(&s)["messages"], 21, "{mode}");
        let transcript = std::fs::read_to_string(m.backing_file(&s)).unwrap();
        assert_eq!(
            transcript.lines().count(),
            22,
            "{mode}: header + 21 entries"
        );
        assert!(
            m.daemon_log().lines().all(|l| !l.contains("ERROR")),
            "{mode}: {}",
            m.daemon_log()
        );
    }
}
