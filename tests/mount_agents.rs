//! Other agents' sessions through a real mount: every Claude Code and Codex fixture
//! (read in place from ../shared/agent-fixtures) and pi sessions written by pi itself
//! appear in the namespace of their cwd, with the agent's file byte for byte, the
//! conversation its reader resumes with, meta.json, and no way to change anything.

mod support;

use fen_fs::sources::agents;
use fen_fs::sources::foreign::{ForeignReader, feed_all, render_message};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{Mount, out_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

/// Every file under `dir`, recursively (links not followed).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.extend(files_under(&e.path()));
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// Bytes and mtime of every file under `dir`: what "left every byte unchanged" means.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap();
            (
                p.clone(),
                (std::fs::read(&p).unwrap(), m.modified().unwrap()),
            )
        })
        .collect()
}

/// What the agent's reader says about `file`: its summary and conversation.json.
fn expected(
    agent: fen_fs::agent::Agent,
    file: &Path,
) -> (fen_fs::sources::foreign::ForeignSummary, Vec<u8>) {
    let bytes = std::fs::read(file).unwrap();
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    let mut reader: Box<dyn ForeignReader> = agents::reader_for(agent, &name);
    let tail = feed_all(reader.as_mut(), &bytes);
    let msgs = reader.conversation(tail);
    let mut conv = Vec::new();
    if msgs.is_empty() {
        conv.extend_from_slice(b"[]\n");
    } else {
        conv.extend_from_slice(b"[\n");
        for (i, m) in msgs.iter().enumerate() {
            conv.extend(render_message(m, &bytes));
            conv.extend_from_slice(if i + 1 == msgs.len() {
                b"\n]\n"
            } else {
                b",\n"
            });
        }
    }
    (reader.summary(tail), conv)
}

/// The first session folder of a namespace folder.
fn first_session(ns: &Path) -> PathBuf {
    std::fs::read_dir(ns)
        .unwrap()
        .flatten()
        .find(|e| e.file_type().unwrap().is_dir())
        .unwrap()
        .path()
}

/// Every session folder of the mount: (namespace, dir) → meta.json.
fn session_folders(mp: &Path) -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for ns in std::fs::read_dir(mp).unwrap().flatten() {
        if !ns.file_type().unwrap().is_dir() {
            continue;
        }
        for s in std::fs::read_dir(ns.path()).unwrap().flatten() {
            if s.file_type().unwrap().is_dir() {
                let meta = std::fs::read(s.path().join("meta.json")).unwrap();
                out.push((s.path(), serde_json::from_slice(&meta).unwrap()));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn mount_fixtures(test: &str) -> Option<Mount> {
    let f = fixtures();
    let claude = format!("claude={}", f.join("claude").display());
    let codex = format!("codex={}", f.join("codex").display());
    Mount::with_args(
        test,
        &["--no-detect", "--source", &claude, "--source", &codex],
    )
}

#[test]
fn every_fixture_appears_as_its_agent_resumes_it() {
    let Some(m) = mount_fixtures("every_fixture_appears_as_its_agent_resumes_it") else {
        return;
    };
    let folders = session_folders(&m.mp);
    let mut seen = 0;
    for (agent, sub) in [
        (fen_fs::agent::Agent::Claude, "claude/projects"),
        (fen_fs::agent::Agent::Codex, "codex/sessions"),
    ] {
        for file in files_under(&fixtures().join(sub)) {
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            if !agents::is_session_file(agent, &name) {
                // agent-*.jsonl, sidecars: not sessions, never shown.
                assert!(
                    folders
                        .iter()
                        .all(|(_, meta)| Path::new(meta["source_path"].as_str().unwrap()) != file),
                    "{name} is not a session"
                );
                continue;
            }
            let (summary, conversation) = expected(agent, &file);
            let (dir, meta) = folders
                .iter()
                .find(|(_, meta)| Path::new(meta["source_path"].as_str().unwrap()) == file)
                .unwrap_or_else(|| panic!("{} is not in the mount", file.display()));
            seen += 1;
            assert_eq!(meta["agent"], agent.name(), "{name}");
            assert_eq!(meta["resumable"], summary.resumable, "{name}");
            assert_eq!(meta["cwd"].as_str(), summary.cwd.as_deref(), "{name}");
            assert_eq!(meta["id"], summary.id, "{name}");
            if !summary.resumable {
                assert!(meta["not_resumable_reason"].is_string(), "{name}: says why");
            }
            // The namespace is the cwd's slug.
            let ns = dir.parent().unwrap().file_name().unwrap().to_string_lossy();
            if let Some(cwd) = &summary.cwd {
                assert_eq!(
                    ns,
                    fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(cwd)),
                    "{name}"
                );
            }
            assert_eq!(
                std::fs::read(dir.join("transcript.jsonl")).unwrap(),
                std::fs::read(&file).unwrap(),
                "{name}"
            );
            let got = std::fs::read(dir.join("conversation.json")).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&conversation),
                "{name}"
            );
            let parsed: Value =
                serde_json::from_slice(&got).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                parsed.as_array().unwrap().len() as u64,
                summary.messages,
                "{name}"
            );
            // `stat` size is what `cat` reads, for every view.
            for view in [
                "conversation.json",
                "conversation.md",
                "meta.json",
                "summary.txt",
                "transcript.jsonl",
            ] {
                let p = dir.join(view);
                assert_eq!(
                    std::fs::metadata(&p).unwrap().len(),
                    std::fs::read(&p).unwrap().len() as u64,
                    "{name}/{view}"
                );
            }
            assert!(
                !dir.join("ctl").exists(),
                "{name}: no ctl in a foreign session"
            );
        }
    }
    assert!(seen >= 25, "only {seen} fixture sessions checked");
}

#[test]
fn writes_fail_with_erofs_and_change_nothing() {
    let Some(m) = mount_fixtures("writes_fail_with_erofs_and_change_nothing") else {
        return;
    };
    let before = snapshot(&fixtures());
    let (dir, _) = session_folders(&m.mp)
        .into_iter()
        .find(|(_, meta)| meta["agent"] == "claude")
        .unwrap();
    let d = dir.to_str().unwrap();
    for script in [
        format!("echo x > '{d}/ctl'"),
        format!("echo x >> '{d}/meta.json'"),
        format!("echo x > '{d}/transcript.jsonl'"),
        format!("touch '{d}/new'"),
        format!("mkdir '{d}/sub'"),
        format!("rm '{d}/conversation.json'"),
        format!("rmdir '{d}'"),
        format!("mv '{d}' '{d}-moved'"),
        format!("chmod 600 '{d}/meta.json'"),
        format!("truncate -s 0 '{d}/transcript.jsonl'"),
    ] {
        let out = m.sh(&script);
        assert!(!out.status.success(), "{script} succeeded");
        assert!(
            out_text(&out).contains("Read-only file system"),
            "{script}: {}",
            out_text(&out)
        );
    }
    assert!(before == snapshot(&fixtures()), "a fixture changed");
}

#[test]
fn a_namespace_lists_every_agents_sessions_together() {
    let Some(m) = mount_fixtures("a_namespace_lists_every_agents_sessions_together") else {
        return;
    };
    let fen = m.create_session("/tmp", "fen's own");
    let ns = m.path("tmp");
    assert_eq!(fen.parent().unwrap(), ns);
    let index: Value =
        serde_json::from_slice(&std::fs::read(ns.join("index.json")).unwrap()).unwrap();
    let rows = index.as_array().unwrap();
    let agents: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["agent"].as_str().unwrap()).collect();
    assert_eq!(agents, ["claude", "fen"].into_iter().collect());
    // Newest first, and `latest` is the newest: the session just made.
    let updated: Vec<&str> = rows
        .iter()
        .map(|r| r["updated_at"].as_str().unwrap())
        .collect();
    assert!(updated.windows(2).all(|w| w[0] >= w[1]), "{updated:?}");
    assert_eq!(rows[0]["agent"], "fen");
    let latest = std::fs::read_link(ns.join("latest")).unwrap();
    assert_eq!(latest, Path::new(fen.file_name().unwrap()));
    // `ls` lists them all, each folder name unique.
    let names: Vec<String> = std::fs::read_dir(&ns)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.len(), rows.len() + 2, "{names:?}");
}

/// A copy of one Claude fixture in a temporary CLAUDE_CONFIG_DIR, to append to.
fn claude_home(tmp: &Path) -> (PathBuf, PathBuf) {
    let root = tmp.join("claude");
    let project = root.join("projects/-tmp");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join("8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl");
    std::fs::copy(
        fixtures().join("claude/projects/-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl"),
        &file,
    )
    .unwrap();
    (root, file)
}

#[test]
fn live_appends_new_files_and_deletions_show_up() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, file) = claude_home(tmp.path());
    let source = format!("claude={}", root.display());
    let Some(m) = Mount::with_args(
        "live_appends_new_files_and_deletions_show_up",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let ns = m.path("tmp");
    let dir = first_session(&ns);
    let conv = |d: &Path| -> Vec<Value> {
        serde_json::from_slice::<Value>(&std::fs::read(d.join("conversation.json")).unwrap())
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let before = conv(&dir);
    let last_uuid = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|v| v["type"] == "assistant" || v["type"] == "user")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    // Claude Code appends a turn to the file while the mount is up.
    let line = serde_json::json!({
        "type": "user", "uuid": "99999999-0000-4000-8000-000000000001", "parentUuid": last_uuid,
        "sessionId": "s1", "cwd": "/tmp", "timestamp": "2025-07-01T11:00:00.000Z",
        "message": {"role": "user", "content": "appended while mounted"}
    });
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    use std::io::Write;
    writeln!(f, "{line}").unwrap();
    drop(f);
    let after = conv(&dir);
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap()["content"], "appended while mounted");
    assert_eq!(
        std::fs::read(dir.join("transcript.jsonl")).unwrap(),
        std::fs::read(&file).unwrap()
    );

    // A new session file shows up on the next listing; a deleted one disappears.
    let second = file.with_file_name("8946713b-92f7-55df-b77e-7ede087a76fc.jsonl");
    std::fs::copy(
        fixtures().join("claude/projects/-tmp/8946713b-92f7-55df-b77e-7ede087a76fc.jsonl"),
        &second,
    )
    .unwrap();
    let count = || {
        std::fs::read_dir(&ns)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_dir())
            .count()
    };
    assert_eq!(count(), 2);
    std::fs::remove_file(&second).unwrap();
    assert_eq!(count(), 1);
    // Nothing was created in the agent's folder.
    assert_eq!(files_under(&root), vec![file]);
}

#[test]
fn detected_roots_come_from_the_agents_variables() {
    let Some(m) = Mount::new("detected_roots_come_from_the_agents_variables") else {
        return;
    };
    // The harness hides the machine's agents; with CLAUDE_CONFIG_DIR set, list finds it.
    let out = support::fen_fs()
        .args(["list", "--all", "--store"])
        .arg(&m.store)
        .env("CLAUDE_CONFIG_DIR", fixtures().join("claude"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(text.starts_with("AGENT"), "{text}");
    assert!(
        text.lines().filter(|l| l.starts_with("claude")).count() >= 15,
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("codex")), "{text}");
    let none = support::fen_fs()
        .args(["list", "--all", "--no-detect", "--store"])
        .arg(&m.store)
        .env("CLAUDE_CONFIG_DIR", fixtures().join("claude"))
        .output()
        .unwrap();
    assert!(!out_text(&none).contains("claude"), "{}", out_text(&none));
    // `show` finds a foreign session by id prefix.
    let shown = support::fen_fs()
        .args(["show", "43c4655e", "--view", "conversation", "--store"])
        .arg(&m.store)
        .env("CLAUDE_CONFIG_DIR", fixtures().join("claude"))
        .output()
        .unwrap();
    assert!(shown.status.success(), "{}", out_text(&shown));
    let conv: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(conv.as_array().unwrap().len(), 3);
}

fn pi_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("FEN_FS_PI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pi-agent"));
    if dir
        .join("node_modules/@mariozechner/pi-coding-agent/package.json")
        .exists()
    {
        return Some(dir);
    }
    if std::env::var("FEN_FS_REQUIRE_PI").as_deref() == Ok("1") {
        panic!(
            "pi package not installed in {} (run scripts/install-pi)",
            dir.display()
        );
    }
    eprintln!("SKIPPED: pi package not installed (run scripts/install-pi)");
    None
}

#[test]
fn pi_sessions_written_by_pi_resume_as_pi_resumes_them() {
    let Some(pi) = pi_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let sessions = agent.join("sessions/--work-proj--");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::create_dir_all(tmp.path().join("home")).unwrap();
    let oracle = |args: &[&str]| -> Value {
        let out = Command::new("node")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi/oracle.mjs"))
            .args(args)
            .env("PI_DIR", &pi)
            .env("HOME", tmp.path().join("home"))
            .env("PI_CODING_AGENT_DIR", &agent)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let written = oracle(&["write", sessions.to_str().unwrap(), "/work/proj"]);
    let source = format!("pi={}", agent.display());
    let Some(m) = Mount::with_args(
        "pi_sessions_written_by_pi_resume_as_pi_resumes_them",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let folders = session_folders(&m.mp);
    let files = written.as_object().unwrap();
    assert!(files.len() >= 5, "{written}");
    for (scenario, file) in files {
        let file = Path::new(file.as_str().unwrap());
        let (dir, meta) = folders
            .iter()
            .find(|(_, meta)| Path::new(meta["source_path"].as_str().unwrap()) == file)
            .unwrap_or_else(|| panic!("{scenario} not in the mount"));
        assert_eq!(meta["agent"], "pi");
        assert_eq!(meta["cwd"], "/work/proj", "{scenario}");
        assert_eq!(dir.parent().unwrap().file_name().unwrap(), "work-proj");
        let got: Value =
            serde_json::from_slice(&std::fs::read(dir.join("conversation.json")).unwrap()).unwrap();
        assert_eq!(
            got,
            oracle(&["context", file.to_str().unwrap()])["messages"],
            "{scenario}"
        );
    }
}

/// A Claude Code file over 1 MiB: a chain of `turns` user/assistant entries whose
/// texts carry `word`.
fn big_claude_file(path: &Path, turns: usize, word: &str) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let mut parent = Value::Null;
    for i in 0..turns {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let line = serde_json::json!({
            "type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
            "cwd": "/big", "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": role, "content": format!("{word} {}", "x".repeat(400))}
        });
        writeln!(f, "{line}").unwrap();
        parent = Value::String(uuid);
    }
}

#[test]
fn a_persisted_conversation_is_used_only_for_the_file_it_was_made_from() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("claude/projects/-big");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join("5e55e55e-0000-4000-8000-000000000001.jsonl");
    big_claude_file(&file, 3000, "alpha");
    assert!(std::fs::metadata(&file).unwrap().len() > 1 << 20);
    let source = format!("claude={}", tmp.path().join("claude").display());
    let Some(m) = Mount::with_args(
        "a_persisted_conversation_is_used_only_for_the_file_it_was_made_from",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let conv = || -> Vec<u8> {
        std::fs::read(first_session(&m.path("big")).join("conversation.json")).unwrap()
    };
    let first = conv();
    assert_eq!(first, expected(fen_fs::agent::Agent::Claude, &file).1);
    // Unmounting saves the layout; a remount of the unchanged file serves it.
    assert!(m.umount().status.success());
    // The exiting daemon writes it (`umount` may return before the daemon is gone).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let cache_dir = m.store.join(".fen-cache/foreign/conversations");
    while files_under(&cache_dir).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        files_under(&cache_dir).len(),
        1,
        "the layout of a large file is kept"
    );
    m.mount();
    assert_eq!(conv(), first);
    // Rewritten in place behind our back, same size and mtime: not the same file.
    assert!(m.umount().status.success());
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    big_claude_file(&file, 3000, "omega");
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    m.mount();
    let after = conv();
    assert_eq!(after, expected(fen_fs::agent::Agent::Claude, &file).1);
    assert!(String::from_utf8_lossy(&after).contains("omega"));
    // A damaged layout is never served.
    assert!(m.umount().status.success());
    for c in files_under(&m.store.join(".fen-cache/foreign/conversations")) {
        let mut bytes = std::fs::read(&c).unwrap();
        let n = bytes.len();
        bytes[n - 3] ^= 0xff;
        std::fs::write(&c, bytes).unwrap();
    }
    m.mount();
    assert_eq!(conv(), after);
}
