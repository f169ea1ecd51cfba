//! `fen-fs resume` from the command line: finding the session among every source,
//! the command it prints per agent, `--in` and `--cwd`, `--exec`, the ledger, and its
//! errors (exit 1 naming what is wrong, 2 for usage). Other agents' sessions are the
//! public fixtures, read in place; every agent root is a temporary folder.

mod resume_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{fen_fs, out_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `fen-fs resume ARGS --store STORE --no-detect` plus `extra` sources.
fn resume(store: &Path, args: &[&str]) -> Output {
    fen_fs()
        .arg("resume")
        .args(args)
        .arg("--store")
        .arg(store)
        .arg("--no-detect")
        .output()
        .unwrap()
}

/// A store with two fen sessions (made through the library, no mount).
fn store_with_two_sessions(dir: &Path) -> (PathBuf, Vec<String>) {
    let store_root = dir.join("store");
    let store = fen_fs::store::Store::open(&store_root, Default::default()).unwrap();
    let mut ids = Vec::new();
    for text in ["first", "second"] {
        let line = format!("{{\"role\":\"user\",\"content\":\"{text}\"}}");
        let entry = fen_fs::ctl::grammar::parse_session_line(line.as_bytes()).unwrap();
        let (s, _) = store
            .create_session("/p", None, &entry, &fen_fs::ctl::grammar::check_against)
            .unwrap();
        ids.push(s.session_id().to_string());
    }
    (store_root, ids)
}

#[test]
fn an_unknown_or_ambiguous_session_is_named_in_the_error() {
    let t = tempfile::tempdir().unwrap();
    let (store, ids) = store_with_two_sessions(t.path());
    let o = resume(&store, &["nosuchsession"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        stderr(&o).contains("no session matches nosuchsession"),
        "{}",
        stderr(&o)
    );
    let common: String = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let o = resume(&store, &[&common]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        stderr(&o).contains(&format!("{common} matches 2 sessions")),
        "{}",
        stderr(&o)
    );
    let o = resume(&store, &["/no/such/file.jsonl"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(stderr(&o).contains("/no/such/file.jsonl"), "{}", stderr(&o));
}

#[test]
fn a_missing_target_root_is_named_and_not_created() {
    let t = tempfile::tempdir().unwrap();
    let (store, ids) = store_with_two_sessions(t.path());
    // fen_fs() points CLAUDE_CONFIG_DIR at a folder that does not exist.
    let o = fen_fs()
        .args(["resume", &ids[0], "--in", "claude", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let e = stderr(&o);
    assert!(
        e.contains("/nonexistent/fen-fs-tests") && e.contains("CLAUDE_CONFIG_DIR"),
        "{e}"
    );
    assert!(!Path::new("/nonexistent").exists());
    let missing = t.path().join("no-codex-here");
    let o = resume(
        &store,
        &[
            &ids[0],
            "--in",
            "codex",
            "--source",
            &format!("codex={}", missing.display()),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        stderr(&o).contains(&format!("--source codex={}", missing.display())),
        "{}",
        stderr(&o)
    );
    assert!(!missing.exists());
    let o = resume(&store, &[&ids[0], "--in", "pi"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(stderr(&o).contains("--source pi=DIR"), "{}", stderr(&o));
}

#[test]
fn usage_errors_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let (store, ids) = store_with_two_sessions(t.path());
    for args in [
        vec![ids[0].as_str(), "--in", "gemini"],
        vec![ids[0].as_str(), "--in", "fen", "--exec"],
        vec![],
    ] {
        let o = resume(&store, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", out_text(&o));
    }
    assert!(fixtures().is_dir());
}
