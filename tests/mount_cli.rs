//! The command line as a user of a mountable filesystem expects it: the mount.fuse
//! form (`fen-fs STORE MNT -o OPTS`, or the binary as `mount.fuse.fen-fs`), `-o`
//! options, `-f`, `fen-fs status`, completions and the manual page.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::Output;
use support::{fen_fs, fuse_available, out_text};

fn run(cmd: &mut std::process::Command) -> Output {
    cmd.output().expect("run fen-fs")
}

fn status() -> Vec<Value> {
    let out = run(fen_fs().args(["status", "--json"]));
    assert!(out.status.success(), "{}", out_text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ours<'a>(rows: &'a [Value], mp: &Path) -> Option<&'a Value> {
    rows.iter()
        .find(|r| Path::new(r["mountpoint"].as_str().unwrap()) == mp)
}

#[test]
fn the_mount_helper_form_with_options_mounts_and_status_shows_it() {
    if !fuse_available("the_mount_helper_form_with_options_mounts_and_status_shows_it") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (store, mp) = (tmp.path().join("store"), tmp.path().join("mnt"));
    // mount(8)'s form names a store and a mount point that exist.
    std::fs::create_dir(&store).unwrap();
    std::fs::create_dir(&mp).unwrap();
    let out = run(fen_fs()
        .arg(&store)
        .arg(&mp)
        .args(["-o", "rw,nosuid,nodev,fsync=no,no_detect"]));
    assert!(out.status.success(), "{}", out_text(&out));
    let rows = status();
    let row = ours(&rows, &mp).unwrap_or_else(|| panic!("not in status: {rows:?}"));
    assert_eq!(row["fsync"], "no");
    assert_eq!(Path::new(row["store"].as_str().unwrap()), store);
    assert!(row["pid"].as_u64().is_some());
    assert_eq!(row["sessions"], 0);
    assert!(run(fen_fs().arg("umount").arg(&mp)).status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ours(&status(), &mp).is_some() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ours(&status(), &mp).is_none(), "still listed after umount");

    // mount(8) runs /sbin/mount.fuse.fen-fs STORE MNT -o OPTS: the same binary.
    let helper = tmp.path().join("mount.fuse.fen-fs");
    std::os::unix::fs::symlink(support::bin(), &helper).unwrap();
    let out = run(std::process::Command::new(&helper)
        .env("CLAUDE_CONFIG_DIR", "/nonexistent")
        .env("CODEX_HOME", "/nonexistent")
        .env("PI_CODING_AGENT_DIR", "/nonexistent")
        .arg(&store)
        .arg(&mp)
        .args(["-o", "fsync=everysec"]));
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(ours(&status(), &mp).unwrap()["fsync"], "everysec");
    assert!(run(fen_fs().arg("umount").arg(&mp)).status.success());
}

/// Every path under `dir`, for "nothing was created".
fn everything_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            }
            out.push(e.path());
        }
    }
    out.sort();
    out
}

#[test]
fn a_mistyped_subcommand_creates_nothing_and_is_a_usage_error() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    // The default store and log would land under the scratch folder too.
    let fen = || {
        let mut cmd = fen_fs();
        cmd.current_dir(dir)
            .env("XDG_STATE_HOME", dir.join("state"));
        cmd
    };
    let out = run(fen().args(["serch", "flaky"]));
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
    assert!(
        out_text(&out).contains("unrecognized subcommand 'serch'"),
        "{}",
        out_text(&out)
    );
    assert_eq!(everything_under(dir), Vec::<std::path::PathBuf>::new());
    // mount.fuse's `-o` with no mount point there: the same usage error.
    let out = run(fen().args(["serch", "flaky", "-o", "rw"]));
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
    assert_eq!(everything_under(dir), Vec::<std::path::PathBuf>::new());

    // The mount helper form creates neither a missing store nor a missing mount point.
    let helper = tempfile::tempdir().unwrap();
    let link = helper.path().join("mount.fuse.fen-fs");
    std::os::unix::fs::symlink(support::bin(), &link).unwrap();
    let mut cmd = std::process::Command::new(&link);
    cmd.current_dir(dir)
        .env("XDG_STATE_HOME", dir.join("state"));
    let out = run(cmd.args(["serch", "flaky", "-o", "rw"]));
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    assert!(
        out_text(&out).contains("no fen-fs store at serch"),
        "{}",
        out_text(&out)
    );
    std::fs::create_dir(dir.join("store")).unwrap();
    let out = run(std::process::Command::new(&link)
        .current_dir(dir)
        .env("XDG_STATE_HOME", dir.join("state"))
        .args(["store", "flaky", "-o", "rw"]));
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    assert!(
        out_text(&out).contains("no mount point flaky"),
        "{}",
        out_text(&out)
    );
    assert_eq!(everything_under(dir), [dir.join("store")]);
    // mount(8)'s `-f` to a helper is a fake mount: checked, not mounted.
    std::fs::create_dir(dir.join("flaky")).unwrap();
    let out = run(std::process::Command::new(&link)
        .current_dir(dir)
        .env("XDG_STATE_HOME", dir.join("state"))
        .args(["store", "flaky", "-f", "-o", "rw"]));
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&dir.join("flaky").display().to_string()));
}

/// mount(8) itself, as /etc/fstab's line runs it: `mount -t fuse.fen-fs STORE MNT -o
/// OPTS` finds /sbin/mount.fuse.fen-fs and runs it with libmount's arguments. The
/// link is put there in a private mount namespace (a folder bound over /sbin), so the
/// machine's /sbin is not touched; the mount lives and is unmounted in that namespace.
#[test]
fn mount_8_mounts_through_the_helper_link() {
    if !fuse_available("mount_8_mounts_through_the_helper_link") {
        return;
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "\n*** SKIPPED mount_8_mounts_through_the_helper_link: needs root (a mount namespace) ***\n"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (store, mp, sbin) = (
        tmp.path().join("store"),
        tmp.path().join("mnt"),
        tmp.path().join("sbin"),
    );
    for d in [&store, &mp, &sbin] {
        std::fs::create_dir(d).unwrap();
    }
    std::os::unix::fs::symlink(support::bin(), sbin.join("mount.fuse.fen-fs")).unwrap();
    let script = r#"
        set -e
        mount --bind "$1" /sbin
        mount -t fuse.fen-fs -o rw,nosuid,fsync=everysec,no_detect "$2" "$3"
        trap '"$4" umount "$3"' EXIT
        grep " $3 fuse" /proc/self/mounts
        "$4" status --json
        printf '%s
' '{"cwd":"/home/u/p","role":"user","content":"via fstab"}' > "$3/ctl"
        cat "$3"/home-u-p/latest/conversation.json
    "#;
    let mut cmd = std::process::Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(&sbin)
    .arg(&store)
    .arg(&mp)
    .arg(support::bin())
    .env("XDG_STATE_HOME", tmp.path().join("state"))
    .env("CLAUDE_CONFIG_DIR", "/nonexistent")
    .env("CODEX_HOME", "/nonexistent")
    .env("PI_CODING_AGENT_DIR", "/nonexistent");
    let out = run(&mut cmd);
    let text = out_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"fsync\":\"everysec\""), "{text}");
    assert!(text.contains("via fstab"), "{text}");
    // The namespace's mount is gone with its daemon; nothing of it is visible here.
    assert!(ours(&status(), &mp).is_none());
}

#[test]
fn unknown_mount_options_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(fen_fs()
        .args(["mount", "-o", "fsync=no,colour=red"])
        .arg(tmp.path()));
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    assert!(
        out_text(&out).contains("unknown mount option colour=red"),
        "{}",
        out_text(&out)
    );
    let out = run(fen_fs()
        .args(["mount", "-o", "fsync=sometimes"])
        .arg(tmp.path()));
    assert!(!out.status.success());
    assert!(
        out_text(&out).contains("fsync=sometimes"),
        "{}",
        out_text(&out)
    );
}

#[test]
fn completions_and_the_manual_page_come_from_the_command_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(fen_fs().args(["completions", shell]));
        assert!(out.status.success(), "{shell}: {}", out_text(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("fen-fs") && text.contains("umount"),
            "{shell}"
        );
    }
    let out = run(fen_fs().arg("manpage"));
    let man = String::from_utf8_lossy(&out.stdout);
    assert!(
        man.contains(".TH fen-fs 1") && man.contains("mount"),
        "{man}"
    );
    let bad = run(fen_fs().args(["completions", "tcsh"]));
    assert_eq!(bad.status.code(), Some(2), "a usage error");
}

#[test]
fn commands_that_read_never_create_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("typo");
    for args in [
        vec!["list", "--all"],
        vec!["show", "abc"],
        vec!["fsck"],
        vec!["trash", "list"],
        vec!["rm", "abc"],
    ] {
        let out = run(fen_fs().args(&args).arg("--store").arg(&missing));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out_text(&out));
        assert!(
            out_text(&out).contains(&format!("no fen-fs store at {}", missing.display())),
            "{args:?}: {}",
            out_text(&out)
        );
        assert!(!missing.exists(), "{args:?} created the store");
    }
    // The same through $FEN_FS_STORE.
    let out = run(fen_fs()
        .args(["list", "--all"])
        .env("FEN_FS_STORE", &missing));
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    assert!(!missing.exists());
}

#[test]
fn mount_creates_a_missing_store_and_says_so() {
    if !fuse_available("mount_creates_a_missing_store_and_says_so") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (store, mp) = (tmp.path().join("new-store"), tmp.path().join("mnt"));
    std::fs::create_dir(&mp).unwrap();
    let out = run(fen_fs()
        .arg("mount")
        .arg(&mp)
        .arg("--store")
        .arg(&store)
        .arg("--no-detect"));
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("created a new store at {}", store.display())),
        "{}",
        out_text(&out)
    );
    assert!(store.is_dir());
    assert!(run(fen_fs().arg("umount").arg(&mp)).status.success());
}

#[test]
fn a_cwd_with_a_trailing_slash_or_dots_is_one_namespace() {
    let Some(m) = support::Mount::new("a_cwd_with_a_trailing_slash_or_dots_is_one_namespace")
    else {
        return;
    };
    let a = m.create_session("/home/u/proj", "a");
    let b = m.create_session("/home/u/proj/", "b");
    let c = m.create_session("/home/u/x/../proj/.", "c");
    assert_eq!(a.parent(), b.parent());
    assert_eq!(a.parent(), c.parent());
    for s in [&b, &c] {
        assert_eq!(support::meta(s)["cwd"], "/home/u/proj");
    }
    let out = run(fen_fs()
        .args([
            "list",
            "--cwd",
            "/home/u/proj/../proj/",
            "--json",
            "--store",
        ])
        .arg(&m.store));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 3, "{}", out_text(&out));
}

#[test]
fn no_mount_name_begins_with_a_dash_and_path_finds_the_folder() {
    let Some(m) = support::Mount::new("no_mount_name_begins_with_a_dash_and_path_finds_the_folder")
    else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let root = m.create_session("/", "at the root");
    assert_eq!(s.parent().unwrap(), m.path("home-u-proj"));
    assert_eq!(root.parent().unwrap(), m.path("_"));
    for e in std::fs::read_dir(&m.mp).unwrap().flatten() {
        assert!(!e.file_name().to_string_lossy().starts_with('-'));
    }
    // The store on disk keeps its layout.
    assert!(m.store.join("--home-u-proj--").is_dir());
    assert!(m.store.join("----").is_dir());
    let text = |o: Output| String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(
        text(run(fen_fs().args(["slug", "/home/u/proj/"]))),
        "home-u-proj"
    );
    assert_eq!(
        text(run(fen_fs().args(["slug", "--on-disk", "/home/u/proj"]))),
        "--home-u-proj--"
    );
    assert_eq!(text(run(fen_fs().args(["slug", "/"]))), "_");
    let out = run(fen_fs()
        .args(["path", "/home/u/proj", "--store"])
        .arg(&m.store));
    assert_eq!(Path::new(&text(out)), m.path("home-u-proj"));
    // `cd "$(fen-fs path)"` works from the project folder, and tools take the names.
    let sh = m.sh(&format!(
        "cd \"$({} path /home/u/proj --store '{}')\" && ls && jq -r '.[0].dir' index.json",
        support::bin(),
        m.store.display()
    ));
    assert!(sh.status.success(), "{}", out_text(&sh));
    let unmounted = tempfile::tempdir().unwrap();
    let out = run(fen_fs().args(["path", "--store"]).arg(unmounted.path()));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out_text(&out).contains("is not mounted"),
        "{}",
        out_text(&out)
    );
}

#[test]
fn list_in_a_folder_without_sessions_says_so_and_how_to_see_them_all() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let list = |args: &[&str]| {
        run(fen_fs()
            .arg("list")
            .args(args)
            .arg("--store")
            .arg(&store)
            .arg("--no-detect")
            .current_dir(tmp.path()))
    };
    let out = list(&[]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(out.stdout.is_empty(), "no table: {}", out_text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    let here = tmp.path().canonicalize().unwrap();
    assert!(
        said.contains(&format!("no sessions in {}", here.display())) && said.contains("--all"),
        "{said}"
    );
    // Another folder, named: the same, naming it.
    let out = list(&["--cwd", "/home/u/elsewhere"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no sessions in /home/u/elsewhere"));
    // Nothing anywhere.
    let out = list(&["--all"]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no sessions at all"));
    // JSON stays an empty array, with nothing on stderr.
    let out = list(&["--json"]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    assert!(out.stderr.is_empty(), "{}", out_text(&out));
}
