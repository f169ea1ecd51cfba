//! OpenClaw sessions: pi's session format, written through pi's own SessionManager, so
//! pi's reader reads them and pi's `open().buildSessionContext()` (tests/pi/oracle.mjs)
//! is the oracle for the fixtures; OpenClaw's own is which files are sessions and
//! where its state folder is.

use fen_fs::agent::Agent;
use fen_fs::sources::agents;
use fen_fs::sources::foreign::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn sessions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/agent-fixtures/openclaw/agents/main/sessions")
}

fn read(file: &Path) -> (ForeignSummary, Vec<Value>) {
    let bytes = std::fs::read(file).unwrap();
    let mut r = agents::reader_for_path(Agent::Openclaw, file);
    let tail = feed_all(r.as_mut(), &bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    (r.summary(tail), conv)
}

#[test]
fn fixtures_read_as_pi_headers_say() {
    let (s, _) = read(&sessions().join("openclaw-stage0-small.jsonl"));
    assert_eq!(s.id, "openclaw-stage0-small");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/repo"));
    assert_eq!(s.created_at.as_deref(), Some("2026-02-24T09:00:00.000Z"));
    assert_eq!(s.preview.as_deref(), Some("List files"));
    assert!(s.listed && s.resumable);
    let (s, _) = read(&sessions().join("openclaw-stage0-schema_drift.jsonl"));
    assert_eq!(s.cwd.as_deref(), Some("/tmp/drift"));
    assert_eq!(
        s.malformed_lines, 0,
        "an unknown entry type is still an entry"
    );
}

#[test]
fn fixtures_resume_as_pi_resumes_them() {
    let pi_dir = std::env::var_os("FEN_FS_PI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pi-agent"));
    if !pi_dir
        .join("node_modules/@mariozechner/pi-coding-agent/package.json")
        .exists()
    {
        assert_ne!(
            std::env::var("FEN_FS_REQUIRE_PI").as_deref(),
            Ok("1"),
            "pi package not installed"
        );
        eprintln!("\n*** SKIPPED fixtures_resume_as_pi_resumes_them: pi not installed ***\n");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(sessions())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let out = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi/oracle.mjs"))
        .arg("contexts")
        .args(&files)
        .env("PI_DIR", &pi_dir)
        .env("HOME", tmp.path())
        .env("PI_CODING_AGENT_DIR", tmp.path().join("agent"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    for file in &files {
        let ctx = &all[file.to_str().unwrap()];
        let (s, conv) = read(file);
        assert_eq!(ctx["ok"], true, "{}", file.display());
        assert!(s.resumable);
        assert_eq!(Value::Array(conv), ctx["messages"], "{}", file.display());
    }
}

#[test]
fn only_transcripts_are_sessions() {
    let folder = agents::SessionsFolder {
        path: PathBuf::from("/x/agents"),
        depth: 3,
        archived: false,
    };
    let is = |level: usize, parent: &str, name: &str| {
        agents::is_session_entry(Agent::Openclaw, &folder, level, parent, name)
    };
    assert!(is(3, "sessions", "abc.jsonl"));
    assert!(is(3, "sessions", "abc-topic-deploy.jsonl"));
    assert!(!is(3, "sessions", "sessions.json"));
    assert!(!is(3, "sessions", "abc.trajectory.jsonl"));
    assert!(!is(
        3,
        "sessions",
        "abc.checkpoint.0e4b6f1c-1111-4222-8333-444455556666.jsonl"
    ));
    assert!(!is(
        3,
        "sessions",
        "abc.jsonl.deleted.2026-01-01T00-00-00.000Z"
    ));
    assert!(
        !is(2, "main", "abc.jsonl"),
        "not beside the sessions folder"
    );
    assert!(agents::enters_folder(Agent::Openclaw, 2, "sessions"));
    assert!(!agents::enters_folder(Agent::Openclaw, 2, "workspace"));
}
