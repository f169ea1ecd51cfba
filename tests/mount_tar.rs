//! GNU tar over a mount at rest (§2: `tar` behaves as on a disk file): every file the
//! mount generates (fen's views, `index.json`, `latest`, other agents' sessions, a
//! peer's `meta.json`, `usage/`'s reports and chart, a query's `hits.jsonl` and links)
//! keeps its size and mtime from tar's `stat` to its last read, so tar warns of no
//! `file changed as we read it` (its exit status 1 means warnings); two archives made
//! one after the other are the same bytes (sizes, times and contents at rest).

mod support;
mod usage_support;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Mount, fen_fs, out_text};

fn tar_available(test: &str) -> bool {
    let ok = Command::new("tar")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("GNU tar")
        });
    if !ok {
        eprintln!("\n*** SKIPPED {test}: GNU tar not installed ***\n");
    }
    ok
}

/// `tar ARGS`, its archive read here to the end (so every file is read, not skipped
/// as for `-f /dev/null`): (exit status, stderr, the archive's length and hash).
fn tar_to_stdout(dir: &Path, args: &[&std::ffi::OsStr]) -> (Option<i32>, String, usize, u64) {
    let mut child = Command::new("tar")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut archive = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut archive)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        archive.len(),
        fen_fs::store::naming::fnv1a64(&archive),
    )
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: not within 60 s");
}

/// A fen session file as another machine's fen-fs wrote it.
fn peer_session(peer: &Path) {
    let ns = peer.join("--home-u-proj--");
    std::fs::create_dir_all(&ns).unwrap();
    let header = r#"{"type":"session","version":2,"id":"0190a000-0000-7000-8000-0000000000b1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/u/proj"}"#;
    let entry = r#"{"type":"message","id":"0190a000-0000-7000-8000-000000000001","parent-id":null,"timestamp":"2026-01-02T03:04:05.000Z","message":{"role":"user","content":"the capybara almanac"}}"#;
    std::fs::write(
        ns.join("2026-01-01T00-00-00-000Z_0190a000-0000-7000-8000-0000000000b1.jsonl"),
        format!("{header}\n{entry}\n"),
    )
    .unwrap();
}

#[test]
fn tar_reads_a_mount_at_rest_without_a_file_changing_as_it_reads() {
    let test = "tar_reads_a_mount_at_rest_without_a_file_changing_as_it_reads";
    if !tar_available(test) {
        return;
    }
    let extra = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&extra.path().join("history"));
    let peers = extra.path().join("peers");
    peer_session(&peers.join("laptop"));
    let mut args = h.source_args();
    args.extend(["--peers".into(), peers.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args(test, &args) else {
        return;
    };
    // fen's own sessions: two in one project (latest, index.json), one appended to.
    let a = m.create_session("/home/u/proj", "the wombat ledger");
    m.create_session("/home/u/proj", "a second session");
    support::ctl_ok(
        &a,
        r#"{"role":"assistant","content":"the wombat ledger, kept"}"#,
    );
    // At rest: the index complete, the first keep done, the usage counted.
    wait_for("the index complete", || {
        let hits = std::fs::read_to_string(m.path("search/wombat/hits.jsonl")).unwrap_or_default();
        hits.contains("\"id\"")
            && !hits.starts_with("{\"index\"")
            && std::fs::read_to_string(m.path("search/capybara/hits.jsonl"))
                .is_ok_and(|t| t.contains("\"host\":\"laptop\""))
    });
    let mut status = String::new();
    wait_for("the first keep done", || {
        let out = fen_fs().args(["status", "--json"]).output().unwrap();
        status = String::from_utf8_lossy(&out.stdout).into_owned();
        status
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|s| s["mountpoint"] == m.mp.to_str().unwrap() && s["keeping"] == "on")
    });
    for f in ["daily.json", "daily.svg", "by-model.json"] {
        assert!(!std::fs::read(m.path("usage").join(f)).unwrap().is_empty());
    }
    // At rest for longer than the kernel keeps a folder's attributes (1 s): what tar
    // stats first is what the mount says now.
    std::thread::sleep(Duration::from_millis(1500));
    // Names relative to the mount's parent (no "Removing leading /" said).
    let parent = m.mp.parent().unwrap().to_path_buf();
    let query = Path::new("mnt/search/wombat");
    let mp = std::ffi::OsStr::new("mnt");
    assert_eq!(m.mp, parent.join("mnt"));
    // As the issue ran it: `-f /dev/null` (GNU tar stats every file; it skips the
    // reading then), and the archive on stdout, every byte of every file read.
    let out = Command::new("tar")
        .current_dir(&parent)
        .args([
            std::ffi::OsStr::new("-cf"),
            "/dev/null".as_ref(),
            mp,
            query.as_os_str(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "tar -cf /dev/null: {}",
        out_text(&out)
    );
    let run = || {
        tar_to_stdout(
            &parent,
            &["-cf".as_ref(), "-".as_ref(), mp, query.as_os_str()],
        )
    };
    let first = run();
    assert!(first.1.is_empty() && first.0 == Some(0), "tar: {first:?}");
    assert!(first.2 > 10_000, "an archive of everything: {first:?}");
    let second = run();
    assert_eq!(second.0, Some(0), "{second:?}");
    assert_eq!(
        (first.2, first.3),
        (second.2, second.3),
        "two archives of a mount at rest differ"
    );
    // Every kind of generated file was in it.
    let list = Command::new("tar")
        .current_dir(&parent)
        .args([
            std::ffi::OsStr::new("-cvf"),
            "/dev/null".as_ref(),
            mp,
            query.as_os_str(),
        ])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    for kind in [
        "/ctl",
        "/index.json",
        "/latest",
        "/conversation.json",
        "/conversation.md",
        "/summary.txt",
        "/meta.json",
        "/transcript.jsonl",
        "@laptop/meta.json",
        "usage/by-model.json",
        "usage/daily.svg",
        "search/wombat/hits.jsonl",
        "search/wombat/01-",
    ] {
        assert!(listed.contains(kind), "{kind} not archived:\n{listed}");
    }
    for agent in ["claude", "codex", "gemini"] {
        assert!(
            listed
                .lines()
                .any(|l| l.contains(agent) || l.contains("home-u-")),
            "{agent}"
        );
    }
}
