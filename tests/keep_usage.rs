//! Usage of kept sessions (§11, §13): a session counts once in `fen-fs usage`, from its
//! source while there is one (its kept copy is not counted a second time), from its
//! kept copy once its agent deleted it (what keeping is for): the totals do not move.
//! (A response two files hold, a resumed or forked session's copy of its parent's, is
//! counted once, for the file read first: with one of them deleted, it may move to
//! the other session. The day's totals stay.)

mod support;
mod usage_support;

use serde_json::Value;
use std::path::Path;

/// `fen-fs usage REPORT --json`: each row's subject, tokens and cost (rounded).
fn usage(h: &usage_support::History, store: &Path, report: &str) -> Vec<(String, u64, String)> {
    let key = if report == "session" {
        "session"
    } else {
        "period"
    };
    let o = support::fen_fs()
        .args(["usage", report, "--json", "--store"])
        .arg(store)
        .args(h.source_args())
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", support::out_text(&o));
    let mut rows: Vec<(String, u64, String)> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r[key].as_str().unwrap_or_default().to_string(),
                r["total_tokens"].as_u64().unwrap(),
                // To the nano-dollar: sums of the same costs in another order differ
                // in their last bits.
                r["cost_usd"]
                    .as_f64()
                    .map(|c| format!("{c:.9}"))
                    .unwrap_or_default(),
            )
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_deleted_session_still_counts_once_in_usage() {
    let tmp = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&tmp.path().join("history"));
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let before = usage(&h, &store, "session");
    let daily = usage(&h, &store, "daily");
    assert!(before.iter().any(|r| r.1 > 0), "{before:?}");

    let keep = support::fen_fs()
        .args(["keep", "--quiet", "--store"])
        .arg(&store)
        .args(h.source_args())
        .output()
        .unwrap();
    assert!(keep.status.success(), "{}", support::out_text(&keep));
    // Kept, sources still there: each session once.
    assert_eq!(usage(&h, &store, "session"), before);

    // Claude Code deletes a session file with usage, with its subagents' folder
    // (subagents, a workflow run's, a side question's run replaying it) and its
    // older-layout subagent beside it; a Codex rollout goes too.
    let project = h.claude.join("projects/-home-u-alpha");
    let claude = std::fs::read_dir(&project)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                && p.with_extension("").join("subagents").is_dir()
        })
        .unwrap();
    let id = claude.file_stem().unwrap().to_string_lossy().into_owned();
    assert!(
        before.iter().any(|r| r.0 == id && r.1 > 0),
        "{id} has usage: {before:?}"
    );
    std::fs::remove_file(&claude).unwrap();
    std::fs::remove_dir_all(claude.with_extension("")).unwrap();
    std::fs::remove_file(project.join("agent-d4e5f6.jsonl")).unwrap();
    let mut codex = Vec::new();
    let mut todo = vec![h.codex.join("sessions")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with("rollout-") {
                codex.push(e.path());
            }
        }
    }
    codex.sort();
    std::fs::remove_file(&codex[0]).unwrap();
    assert_eq!(
        usage(&h, &store, "daily"),
        daily,
        "the deleted sessions count from their kept copies, once"
    );
    let after = usage(&h, &store, "session");
    assert!(
        after.iter().any(|r| r.0 == id && r.1 > 0),
        "{id} still counts: {after:?}"
    );
}
