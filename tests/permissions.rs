//! Sessions hold private code and secrets (§1): the store is 0700 and session files
//! 0600 whatever the daemon's umask; the mount's modes are fixed (§2); symbolic links
//! inside the store are never followed, neither by the mount nor by the CLI.

mod support;

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn write_line(ctl: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new().write(true).open(ctl).unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// A `fen-fs mount` started by `sh` with `umask 000`, on a store path that does not
/// exist yet (so the daemon creates it). Unmounted on drop.
struct PermissiveMount {
    tmp: tempfile::TempDir,
    mp: PathBuf,
    store: PathBuf,
}

impl PermissiveMount {
    fn new(test: &str) -> Option<PermissiveMount> {
        if !support::fuse_available(test) {
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let mp = tmp.path().join("mnt");
        std::fs::create_dir(&mp).unwrap();
        let store = tmp.path().join("state/fen/sessions");
        let log = tmp.path().join("daemon.log");
        let out = Command::new("sh")
            .arg("-c")
            .arg(r#"umask 000; exec "$0" mount "$1" --store "$2" --log-file "$3""#)
            .arg(support::bin())
            .arg(&mp)
            .arg(&store)
            .arg(&log)
            .output()
            .unwrap();
        let m = PermissiveMount { tmp, mp, store };
        assert!(
            out.status.success(),
            "fen-fs mount under umask 000: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(m)
    }
}

impl Drop for PermissiveMount {
    fn drop(&mut self) {
        let _ = support::fen_fs().arg("umount").arg(&self.mp).output();
        let _ = &self.tmp;
    }
}

#[test]
fn private_modes_under_a_permissive_umask() {
    let Some(m) = PermissiveMount::new("private_modes_under_a_permissive_umask") else {
        return;
    };
    // The daemon really runs with umask 000.
    let pid = find_daemon(&m.mp).expect("daemon pid");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(
        status.lines().any(|l| l == "Umask:\t0000"),
        "daemon umask: {status}"
    );

    assert_eq!(mode(&m.store), 0o700, "the store folder");
    // Sessions created by writers that also have umask 000.
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 000; echo '{"cwd":"/home/u/proj","role":"user","content":"secret"}' > "$0/ctl" && echo '{"cwd":"/home/u/proj","role":"user","content":"two"}' > "$0/ctl""#)
        .arg(&m.mp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ns = m.store.join("--home-u-proj--");
    assert_eq!(
        mode(&ns) & 0o077,
        0,
        "the namespace folder is private: {:o}",
        mode(&ns)
    );
    let files = names(&ns);
    assert_eq!(files.len(), 2, "{files:?}");
    for f in &files {
        assert_eq!(mode(&ns.join(f)), 0o600, "session file {f}");
    }
    // Appending does not widen anything.
    let dir = files.iter().next().unwrap().trim_end_matches(".jsonl");
    let session = m.mp.join("home-u-proj").join(dir);
    write_line(
        &session.join("ctl"),
        r#"{"role":"assistant","content":"ok"}"#,
    );
    assert_eq!(mode(&ns.join(format!("{dir}.jsonl"))), 0o600);
    assert_eq!(mode(&m.store), 0o700);

    // The mount's modes (§2): views 0444, ctl 0600, folders 0755, owned by the mounter.
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let check = |p: &Path, want: u32| {
        let md = std::fs::symlink_metadata(p).unwrap();
        assert_eq!(md.permissions().mode() & 0o7777, want, "{}", p.display());
        assert_eq!(md.uid(), uid, "{}", p.display());
    };
    check(&m.mp.join("ctl"), 0o600);
    check(&m.mp.join("home-u-proj"), 0o755);
    check(&session, 0o755);
    check(&session.join("ctl"), 0o600);
    for view in [
        "transcript.jsonl",
        "conversation.json",
        "conversation.md",
        "summary.txt",
        "meta.json",
    ] {
        check(&session.join(view), 0o444);
    }
    check(&m.mp.join("home-u-proj/index.json"), 0o444);
}

fn find_daemon(mp: &Path) -> Option<i32> {
    let needle = format!("mount\0{}\0--foreground", mp.display());
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let e = e.ok()?;
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmd)
            .contains(&needle)
            .then_some(pid)
    })
}

// ---------------------------------------------------------------------------------

const SECRET: &str = "SECRET-OUTSIDE-THE-STORE";
const PASSWD_MARK: &str = "root:x:0:";
const OUTSIDE_ID: &str = "0193aaaa-0000-7000-8000-00000000beef";

/// A valid session file outside the store, with a future timestamp (so it would be
/// `latest` and first in every listing if it were followed) and a secret.
fn outside_session(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("2099-01-01T00-00-00-000Z_{OUTSIDE_ID}.jsonl"));
    let text = format!(
        "{{\"type\":\"session\",\"version\":2,\"id\":\"{OUTSIDE_ID}\",\"timestamp\":\"2099-01-01T00:00:00.000Z\",\"cwd\":\"/home/u/proj\"}}\n\
         {{\"type\":\"message\",\"id\":\"0193aaaa-0000-7000-8000-000000000001\",\"parent-id\":null,\"timestamp\":\"2099-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{SECRET}\"}}}}\n\
         {{\"type\":\"title\",\"id\":\"0193aaaa-0000-7000-8000-000000000002\",\"parent-id\":\"0193aaaa-0000-7000-8000-000000000001\",\"timestamp\":\"2099-01-01T00:00:00.000Z\",\"title\":\"{SECRET}\"}}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Reads every file under `dir` (not following links), as `cat -r` would.
fn all_contents(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let md = std::fs::symlink_metadata(&p).unwrap();
        if md.is_dir() {
            all_contents(&p, out);
        } else if md.is_file() && p.file_name().unwrap() != "ctl" {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        } else if md.file_type().is_symlink() {
            let target = std::fs::read_link(&p).unwrap();
            out.push((p, target.as_os_str().as_encoded_bytes().to_vec()));
        }
    }
}

fn leaks(text: &[u8]) -> bool {
    let t = String::from_utf8_lossy(text);
    t.contains(SECRET) || t.contains(PASSWD_MARK) || t.contains(OUTSIDE_ID)
}

#[test]
fn symlinks_in_the_store_are_not_followed() {
    let Some(m) = support::Mount::new("symlinks_in_the_store_are_not_followed") else {
        return;
    };
    let real = m.create_session("/home/u/proj", "the real one");
    let real_dir = real.file_name().unwrap().to_string_lossy().into_owned();
    let outside = outside_session(&m.tmp.path().join("outside"));

    // A namespace holding only links; symlinked namespace folders; links in a real
    // namespace, shaped like session files.
    let evil = m.store.join("--evil--");
    std::fs::create_dir(&evil).unwrap();
    symlink("/etc/passwd", evil.join("x.jsonl")).unwrap();
    symlink(
        &outside,
        evil.join(format!("2099-01-01T00-00-00-000Z_{OUTSIDE_ID}.jsonl")),
    )
    .unwrap();
    symlink("/etc", m.store.join("--link--")).unwrap();
    symlink(outside.parent().unwrap(), m.store.join("--link2--")).unwrap();
    let ns = m.store.join("--home-u-proj--");
    symlink(
        &outside,
        ns.join(format!("2099-01-01T00-00-00-000Z_{OUTSIDE_ID}.jsonl")),
    )
    .unwrap();
    symlink(
        "/etc/passwd",
        ns.join("2098-01-01T00-00-00-000Z_passwd.jsonl"),
    )
    .unwrap();

    // The mount shows none of it.
    assert_eq!(
        names(&m.mp),
        BTreeSet::from([
            "ctl".to_string(),
            "home-u-proj".to_string(),
            "search".to_string(),
            "usage".to_string()
        ])
    );
    for hidden in [
        "evil",
        "link",
        "link2",
        "evil/x",
        "link/passwd",
        &format!("link2/2099-01-01T00-00-00-000Z_{OUTSIDE_ID}"),
        &format!("home-u-proj/2099-01-01T00-00-00-000Z_{OUTSIDE_ID}"),
        &format!("home-u-proj/2099-01-01T00-00-00-000Z_{OUTSIDE_ID}/transcript.jsonl"),
        "home-u-proj/2098-01-01T00-00-00-000Z_passwd/transcript.jsonl",
    ] {
        let err = std::fs::symlink_metadata(m.mp.join(hidden))
            .map(|_| ())
            .expect_err(hidden);
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{hidden}");
    }
    assert_eq!(
        names(&m.mp.join("home-u-proj")),
        BTreeSet::from([
            "latest".to_string(),
            "index.json".to_string(),
            real_dir.clone()
        ])
    );
    assert_eq!(
        std::fs::read_link(m.mp.join("home-u-proj/latest")).unwrap(),
        PathBuf::from(&real_dir)
    );
    let mut contents = Vec::new();
    all_contents(&m.mp, &mut contents);
    assert!(contents.len() >= 6, "{contents:?}");
    for (p, bytes) in &contents {
        assert!(
            !leaks(bytes),
            "{} shows a linked file's content",
            p.display()
        );
    }

    // Nor does the CLI.
    let store = m.store.to_string_lossy().into_owned();
    let run = |args: &[&str]| {
        let out = support::fen_fs()
            .args(args)
            .args(["--store", &store])
            .current_dir("/")
            .output()
            .unwrap();
        (out.status.success(), out.stdout, out.stderr)
    };
    for args in [
        &["list", "--all"][..],
        &["list", "--all", "--json"],
        &["list", "--cwd", "/home/u/proj"],
        &["list", "--cwd", "/home/u/proj", "--json"],
    ] {
        let (ok, stdout, stderr) = run(args);
        assert!(ok, "{args:?}: {}", String::from_utf8_lossy(&stderr));
        assert!(!leaks(&stdout) && !leaks(&stderr), "{args:?} leaks");
        assert!(
            String::from_utf8_lossy(&stdout).contains(&real_dir)
                || String::from_utf8_lossy(&stdout).contains("the real one"),
            "{args:?} lists the real session: {}",
            String::from_utf8_lossy(&stdout)
        );
    }
    let (ok, stdout, _) = run(&["list", "--all", "--json"]);
    assert!(ok);
    let list: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    // `show` by id, and by the link's path, prints nothing of the target.
    let linked = ns.join(format!("2099-01-01T00-00-00-000Z_{OUTSIDE_ID}.jsonl"));
    for args in [
        vec!["show", OUTSIDE_ID, "--view", "transcript"],
        vec!["show", linked.to_str().unwrap(), "--view", "transcript"],
    ] {
        let (_, stdout, stderr) = run(&args);
        assert!(!leaks(&stdout), "{args:?} prints the target");
        assert!(!String::from_utf8_lossy(&stderr).contains(SECRET));
    }
    let (_, stdout, stderr) = run(&["fsck"]);
    assert!(!leaks(&stdout) && !String::from_utf8_lossy(&stderr).contains(SECRET));

    // The link targets are untouched.
    assert!(std::fs::read_to_string(&outside).unwrap().contains(SECRET));
}

/// A session file replaced by a link after the daemon knew it: appends do not go
/// through the link, and the session disappears from the mount.
#[test]
fn session_file_swapped_for_a_symlink() {
    let Some(m) = support::Mount::new("session_file_swapped_for_a_symlink") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hello");
    let file = m.backing_file(&s);
    let outside = outside_session(&m.tmp.path().join("outside"));
    let target_before = std::fs::read(&outside).unwrap();
    let mut ctl = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.join("ctl"))
        .unwrap();
    std::fs::remove_file(&file).unwrap();
    symlink(&outside, &file).unwrap();

    let r = ctl.write(b"{\"role\":\"user\",\"content\":\"through the link?\"}\n");
    assert!(
        r.is_err(),
        "an append through a symlinked session file: {r:?}"
    );
    assert!(
        std::fs::read(&outside).unwrap() == target_before,
        "the link target was written"
    );
    let err = std::fs::symlink_metadata(s.join("transcript.jsonl")).expect_err("gone");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    let mut contents = Vec::new();
    all_contents(&m.mp, &mut contents);
    for (p, bytes) in &contents {
        assert!(!leaks(bytes), "{} shows the link target", p.display());
    }
}
