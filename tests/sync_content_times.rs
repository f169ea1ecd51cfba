//! Times come from the content (§12): a session file copied or synced arrives with a
//! new mtime, and its `updated_at` is still its last entry's time, for fen's own
//! sessions and for Claude Code's and Codex's files (whose pickers use the mtime).

mod support;

use serde_json::Value;
use std::path::Path;
use support::{fen_fs, out_text};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

/// The last `"timestamp"` of a JSONL file's lines.
fn last_timestamp(file: &Path) -> String {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["timestamp"].as_str().map(String::from))
        .unwrap()
}

fn set_mtime_now(path: &Path) {
    let f = std::fs::File::options().append(true).open(path).unwrap();
    f.set_modified(std::time::SystemTime::now()).unwrap();
}

#[test]
fn a_fresh_mtime_does_not_make_an_old_session_new() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let codex = tmp.path().join("codex");
    let cp = |from: &Path, to: &Path| {
        let out = std::process::Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", out_text(&out));
    };
    cp(&fixtures().join("claude"), &claude);
    cp(&fixtures().join("codex"), &codex);
    let claude_file =
        claude.join("projects/-workspace-example-app/55550000-0000-4000-8000-000000000001.jsonl");
    // A well-formed rollout (the fixtures hold broken ones too).
    let codex_file = walk(&codex)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .find(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            text.starts_with("{\"timestamp\"")
                && text.contains("session_meta")
                && text.lines().count() > 3
        })
        .unwrap();
    for f in [&claude_file, &codex_file] {
        set_mtime_now(f);
    }
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let out = fen_fs()
        .args(["list", "--all", "--json", "--no-detect", "--store"])
        .arg(&store)
        .arg("--source")
        .arg(format!("claude={}", claude.display()))
        .arg("--source")
        .arg(format!("codex={}", codex.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for (agent, file) in [("claude", &claude_file), ("codex", &codex_file)] {
        let want = last_timestamp(file);
        let got = list
            .iter()
            .find(|l| {
                l["agent"] == agent
                    && l["id"] != ""
                    && file.to_string_lossy().contains(l["id"].as_str().unwrap())
            })
            .unwrap_or_else(|| panic!("{agent} {}: {list:#?}", file.display()));
        let parse = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
        assert_eq!(
            parse(got["updated_at"].as_str().unwrap()),
            parse(&want),
            "{agent}: {got}"
        );
        assert!(got["host"].is_string(), "{got}");
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}
