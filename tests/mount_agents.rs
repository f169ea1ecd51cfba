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
    let mut reader: Box<dyn ForeignReader> = agents::reader_for_path(agent, file);
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
            // Claude Code's subagents' transcripts are sessions too (beside their
            // parent, tests/source_claude_subagents.rs).
            let subagent = agent == fen_fs::agent::Agent::Claude
                && fen_fs::sources::claude::is_subagent_file_name(&name);
            if !agents::is_session_file(agent, &name) && !subagent {
                // Sidecars: not sessions, never shown.
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
    // No keeping: a deleted file's session is then gone from the mount (with keeping,
    // it stays, shown from its copy: tests/keep_sessions.rs).
    let Some(m) = Mount::with_args(
        "live_appends_new_files_and_deletions_show_up",
        &["--no-detect", "--no-keep", "--source", &source],
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

    // A new session file shows up on the next listing; a deleted one disappears. (Once
    // the first index is built: until then a listing shows what it found; `ls` of the
    // root waits for it.)
    std::fs::read_dir(m.path("")).unwrap().for_each(drop);
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

// ---------------------------------------------------------------------------
// Gemini CLI, Copilot CLI, Cursor agent CLI, OpenClaw; archived sessions

/// What the agent's reader says about `file` (found at its place): its summary and
/// conversation.json bytes.
fn expected_at(agent: fen_fs::agent::Agent, file: &Path) -> (Value, Vec<u8>) {
    let bytes = std::fs::read(file).unwrap();
    let mut reader = agents::reader_for_path(agent, file);
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
    (serde_json::to_value(reader.summary(tail)).unwrap(), conv)
}

fn mount_new_agents(test: &str) -> Option<Mount> {
    let f = fixtures();
    let sources: Vec<String> = ["gemini", "copilot", "cursor", "openclaw"]
        .iter()
        .map(|k| format!("{k}={}", f.join(k).display()))
        .collect();
    let mut args = vec!["--no-detect"];
    for s in &sources {
        args.extend(["--source", s.as_str()]);
    }
    Mount::with_args(test, &args)
}

#[test]
fn new_agents_fixtures_appear_as_their_agent_resumes_them() {
    use fen_fs::agent::Agent;
    let Some(m) = mount_new_agents("new_agents_fixtures_appear_as_their_agent_resumes_them") else {
        return;
    };
    let before = snapshot(&fixtures());
    let folders = session_folders(&m.mp);
    let session_files: Vec<(Agent, PathBuf)> = [
        (Agent::Gemini, "gemini"),
        (Agent::Copilot, "copilot"),
        (Agent::Cursor, "cursor"),
        (Agent::Openclaw, "openclaw"),
    ]
    .into_iter()
    .flat_map(|(agent, sub)| {
        files_under(&fixtures().join(sub))
            .into_iter()
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.ends_with(".jsonl") || name.ends_with(".json")
            })
            .map(move |p| (agent, p))
    })
    .collect();
    let mut seen = BTreeMap::new();
    for (agent, file) in &session_files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let found = folders
            .iter()
            .find(|(_, meta)| Path::new(meta["source_path"].as_str().unwrap()) == file);
        let inside = file.strip_prefix(fixtures()).unwrap();
        if inside.components().any(|c| c.as_os_str() == "subagents") {
            assert!(
                found.is_none(),
                "{name}: a subagent transcript is not a session"
            );
            continue;
        }
        let (dir, meta) = found.unwrap_or_else(|| panic!("{} not in the mount", file.display()));
        *seen.entry(agent.name()).or_insert(0) += 1;
        let (summary, conversation) = expected_at(*agent, file);
        assert_eq!(meta["agent"], agent.name(), "{name}");
        assert_eq!(meta["resumable"], summary["resumable"], "{name}");
        assert_eq!(meta["id"], summary["id"], "{name}");
        assert_eq!(meta["archived"], false, "{name}");
        assert_eq!(
            std::fs::read(dir.join("transcript.jsonl")).unwrap(),
            std::fs::read(file).unwrap(),
            "{name}"
        );
        let got = std::fs::read(dir.join("conversation.json")).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&conversation),
            "{name}"
        );
        if meta["resumable"] == false {
            assert!(meta["not_resumable_reason"].is_string(), "{name}: says why");
            assert_eq!(got, b"[]\n", "{name}");
        }
        let ns = dir
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        match agent {
            // Copilot's rebuild is a guess, and says so.
            Agent::Copilot if meta["resumable"] == true => {
                assert_eq!(meta["resume_rules"], "best effort", "{name}")
            }
            // No .project_root for the fixture's project, no cwd in the files.
            Agent::Gemini => assert_eq!(ns, "unknown-cwd", "{name}"),
            Agent::Cursor => {
                assert!(
                    meta["not_resumable_reason"]
                        .as_str()
                        .unwrap()
                        .contains("store.db")
                )
            }
            _ => {}
        }
        if let Some(cwd) = meta["cwd"].as_str() {
            assert_eq!(
                ns,
                fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(cwd)),
                "{name}"
            );
        }
        assert!(!dir.join("ctl").exists());
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
        // conversation.md renders the messages through the agent's neutral converter.
        let md = std::fs::read_to_string(dir.join("conversation.md")).unwrap();
        for (file_part, text) in [
            ("gemini_s.jsonl", "Say hello and list files."),
            ("tool_calls_with_results.json", "Read the planning doc"),
            ("ccccddddeeee/events.jsonl", "List the files"),
            ("openclaw-stage0-small.jsonl", "main.swift"),
        ] {
            if file.to_str().unwrap().ends_with(file_part) {
                assert!(md.contains(text), "{name}: {md}");
            }
        }
    }
    assert_eq!(
        seen,
        BTreeMap::from([
            ("copilot", 4),
            ("cursor", 5),
            ("gemini", 9),
            ("openclaw", 3)
        ])
    );
    // Copilot's session with a cwd sits in its namespace; OpenClaw's too.
    assert!(m.path("tmp-project").is_dir());
    assert!(m.path("tmp-repo").is_dir());
    // Writes fail with EROFS and change nothing.
    for agent in ["gemini", "copilot", "cursor", "openclaw"] {
        let (dir, _) = folders
            .iter()
            .find(|(_, meta)| meta["agent"] == agent)
            .unwrap();
        let d = dir.to_str().unwrap();
        for script in [
            format!("echo x >> '{d}/transcript.jsonl'"),
            format!("echo x > '{d}/ctl'"),
            format!("rm '{d}/meta.json'"),
        ] {
            let out = m.sh(&script);
            assert!(
                out_text(&out).contains("Read-only file system"),
                "{agent}: {script}: {}",
                out_text(&out)
            );
        }
    }
    assert!(before == snapshot(&fixtures()), "a fixture changed");
}

fn append(file: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    writeln!(f, "{line}").unwrap();
}

fn conversation(dir: &Path) -> Vec<Value> {
    serde_json::from_slice::<Value>(&std::fs::read(dir.join("conversation.json")).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn meta_of(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap()
}

/// The one session folder of `ns` whose meta.json names `agent`.
fn session_of(mp: &Path, agent: &str) -> PathBuf {
    session_folders(mp)
        .into_iter()
        .find(|(_, meta)| meta["agent"] == agent)
        .unwrap_or_else(|| panic!("no {agent} session"))
        .0
}

#[test]
fn new_agents_live_appends_show_on_the_next_read() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // Gemini: a project folder with its marker, one chat file.
    let chats = t.join("gemini/tmp/proj/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(t.join("gemini/tmp/proj/.project_root"), "/work/gem-proj\n").unwrap();
    let gem = chats.join("session-2026-06-01T09-00-aaaa1111.jsonl");
    std::fs::write(&gem, "").unwrap();
    append(
        &gem,
        r#"{"sessionId":"aaaa1111-0000-4000-8000-000000000001","projectHash":"x","startTime":"2026-06-01T09:00:00.000Z","lastUpdated":"2026-06-01T09:00:00.000Z","kind":"main"}"#,
    );
    append(
        &gem,
        r#"{"id":"u1","type":"user","content":[{"text":"hello gemini"}]}"#,
    );
    // A subagent's chat sits in a folder of its parent session: never a session.
    let sub =
        chats.join("aaaa1111-0000-4000-8000-000000000001/session-2026-06-01T09-00-sub00001.jsonl");
    std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
    std::fs::write(
        &sub,
        std::fs::read_to_string(&gem)
            .unwrap()
            .replace("aaaa1111-0000-4000-8000-000000000001", "subagent-1"),
    )
    .unwrap();
    // Copilot: the directory layout.
    let cop_dir = t.join("copilot/session-state/bbbb2222-0000-4000-8000-000000000002");
    std::fs::create_dir_all(&cop_dir).unwrap();
    let cop = cop_dir.join("events.jsonl");
    std::fs::write(&cop, "").unwrap();
    append(
        &cop,
        r#"{"type":"session.start","data":{"sessionId":"bbbb2222-0000-4000-8000-000000000002","startTime":"2026-06-01T09:00:00.000Z","context":{"cwd":"/work/cop-proj"}},"id":"e1","timestamp":"2026-06-01T09:00:00.000Z","parentId":null}"#,
    );
    append(
        &cop,
        r#"{"type":"user.message","data":{"content":"hello copilot"},"id":"e2","timestamp":"2026-06-01T09:00:01.000Z","parentId":"e1"}"#,
    );
    // Cursor: a transcript in a project folder naming a folder that exists.
    let proj = t.join("cursor-proj");
    std::fs::create_dir_all(&proj).unwrap();
    let proj = std::fs::canonicalize(proj).unwrap();
    let slug = proj
        .to_str()
        .unwrap()
        .trim_start_matches('/')
        .replace('/', "-");
    let cur_dir = t
        .join("cursor/projects")
        .join(&slug)
        .join("agent-transcripts/cccc3333-0000-4000-8000-000000000003");
    std::fs::create_dir_all(&cur_dir).unwrap();
    let cur = cur_dir.join("cccc3333-0000-4000-8000-000000000003.jsonl");
    std::fs::write(&cur, "").unwrap();
    append(
        &cur,
        r#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>\nhello cursor\n</user_query>"}]}}"#,
    );
    // OpenClaw: pi's format.
    let oc_dir = t.join("openclaw/agents/main/sessions");
    std::fs::create_dir_all(&oc_dir).unwrap();
    let oc = oc_dir.join("dddd4444-0000-4000-8000-000000000004.jsonl");
    std::fs::write(&oc, "").unwrap();
    append(
        &oc,
        r#"{"type":"session","version":3,"id":"dddd4444-0000-4000-8000-000000000004","timestamp":"2026-06-01T09:00:00.000Z","cwd":"/work/oc-proj"}"#,
    );
    append(
        &oc,
        r#"{"type":"message","id":"m1","parentId":null,"timestamp":"2026-06-01T09:00:01.000Z","message":{"role":"user","content":"hello openclaw","timestamp":1}}"#,
    );
    let sources: Vec<String> = ["gemini", "copilot", "cursor", "openclaw"]
        .iter()
        .map(|k| format!("{k}={}", t.join(k).display()))
        .collect();
    let mut args = vec!["--no-detect"];
    for s in &sources {
        args.extend(["--source", s.as_str()]);
    }
    let Some(m) = Mount::with_args("new_agents_live_appends_show_on_the_next_read", &args) else {
        return;
    };
    assert_eq!(
        session_folders(&m.mp)
            .iter()
            .filter(|(_, meta)| meta["agent"] == "gemini")
            .count(),
        1
    );
    let gem_s = session_of(&m.mp, "gemini");
    assert_eq!(gem_s.parent().unwrap(), m.path("work-gem-proj"));
    assert_eq!(meta_of(&gem_s)["cwd"], "/work/gem-proj");
    assert_eq!(conversation(&gem_s).len(), 1);
    let cop_s = session_of(&m.mp, "copilot");
    assert_eq!(cop_s.parent().unwrap(), m.path("work-cop-proj"));
    assert_eq!(conversation(&cop_s).len(), 1);
    let cur_s = session_of(&m.mp, "cursor");
    assert_eq!(meta_of(&cur_s)["cwd"], proj.to_str().unwrap());
    assert_eq!(meta_of(&cur_s)["preview"], "hello cursor");
    let oc_s = session_of(&m.mp, "openclaw");
    assert_eq!(oc_s.parent().unwrap(), m.path("work-oc-proj"));
    assert_eq!(conversation(&oc_s).len(), 1);

    append(
        &gem,
        r#"{"id":"g1","type":"gemini","content":"hi from gemini"}"#,
    );
    append(
        &cop,
        r#"{"type":"assistant.message","data":{"messageId":"m","content":"hi from copilot","toolRequests":[]},"id":"e3","timestamp":"2026-06-01T09:00:02.000Z","parentId":"e2"}"#,
    );
    append(
        &cur,
        r#"{"role":"user","message":{"content":[{"type":"text","text":"again"}]}}"#,
    );
    append(
        &oc,
        r#"{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-06-01T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi from openclaw"}],"timestamp":2}}"#,
    );

    let c = conversation(&gem_s);
    assert_eq!(c.len(), 2);
    assert_eq!(c[1]["parts"][0]["text"], "hi from gemini");
    assert_eq!(
        conversation(&cop_s)[1]["data"]["content"],
        "hi from copilot"
    );
    assert_eq!(meta_of(&cop_s)["updated_at"], "2026-06-01T09:00:02.000Z");
    assert_eq!(meta_of(&cur_s)["entries"], 2);
    assert_eq!(conversation(&oc_s)[1]["role"], "assistant");
    for (dir, file) in [(&gem_s, &gem), (&cop_s, &cop), (&cur_s, &cur), (&oc_s, &oc)] {
        assert_eq!(
            std::fs::read(dir.join("transcript.jsonl")).unwrap(),
            std::fs::read(file).unwrap()
        );
    }
}

#[test]
fn gemini_legacy_files_rewritten_in_place_and_migrated() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("gemini");
    let chats = root.join("tmp/proj/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(root.join("tmp/proj/.project_root"), "/work/legacy").unwrap();
    let legacy = chats.join("session-2025-01-01T10-00-eeee5555.json");
    let record = |msgs: &[(&str, &str, &str)], updated: &str| {
        let messages: Vec<Value> = msgs
            .iter()
            .map(|(id, ty, text)| serde_json::json!({"id": id, "type": ty, "content": text}))
            .collect();
        serde_json::to_string_pretty(&serde_json::json!({
            "sessionId": "eeee5555-0000-4000-8000-000000000005", "projectHash": "x",
            "startTime": "2025-01-01T10:00:00.000Z", "lastUpdated": updated, "messages": messages
        }))
        .unwrap()
    };
    std::fs::write(
        &legacy,
        record(&[("u1", "user", "first")], "2025-01-01T10:00:01.000Z"),
    )
    .unwrap();
    let source = format!("gemini={}", root.display());
    let Some(m) = Mount::with_args(
        "gemini_legacy_files_rewritten_in_place_and_migrated",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let ns = m.path("work-legacy");
    let dir = first_session(&ns);
    assert_eq!(conversation(&dir).len(), 1);
    // Gemini < 0.39 rewrites the whole file in place (same inode, larger): read anew.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&legacy)
        .unwrap();
    use std::io::Write;
    let mut f = f;
    f.write_all(
        record(
            &[
                ("u1", "user", "first"),
                ("g1", "gemini", "answer"),
                ("u2", "user", "second"),
            ],
            "2025-01-01T10:00:05.000Z",
        )
        .as_bytes(),
    )
    .unwrap();
    drop(f);
    let c = conversation(&dir);
    assert_eq!(c.len(), 3, "{c:?}");
    assert_eq!(c[2]["parts"][0]["text"], "second");
    // A half-written rewrite: shown, not resumable, nothing fails.
    std::fs::write(&legacy, "{\n  \"sessionId\": \"eeee5555").unwrap();
    let dirs: Vec<PathBuf> = std::fs::read_dir(&ns)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let meta = meta_of(&dirs[0]);
    assert_eq!(meta["resumable"], false);
    assert!(
        meta["not_resumable_reason"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    assert_eq!(conversation(&dirs[0]).len(), 0);
    std::fs::write(
        &legacy,
        record(
            &[("u1", "user", "first"), ("g1", "gemini", "answer")],
            "2025-01-01T10:00:05.000Z",
        ),
    )
    .unwrap();
    // Resumed by Gemini 0.39+: the migrated `.jsonl` beside it, updated later, is the
    // one session shown (Gemini's listing keeps the later lastUpdated).
    let migrated = chats.join("session-2025-01-01T10-00-eeee5555.jsonl");
    std::fs::write(&migrated, "").unwrap();
    append(
        &migrated,
        r#"{"sessionId":"eeee5555-0000-4000-8000-000000000005","projectHash":"x","startTime":"2025-01-01T10:00:00.000Z","lastUpdated":"2025-01-01T10:00:05.000Z"}"#,
    );
    append(&migrated, r#"{"id":"u1","type":"user","content":"first"}"#);
    append(
        &migrated,
        r#"{"id":"g1","type":"gemini","content":"answer"}"#,
    );
    append(
        &migrated,
        r#"{"id":"u3","type":"user","content":"resumed"}"#,
    );
    append(
        &migrated,
        r#"{"$set":{"lastUpdated":"2026-02-01T00:00:00.000Z"}}"#,
    );
    let sessions = || -> Vec<(PathBuf, Value)> {
        session_folders(&m.mp)
            .into_iter()
            .filter(|(d, _)| d.parent().unwrap() == ns)
            .collect()
    };
    let shown = sessions();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!(
        Path::new(shown[0].1["source_path"].as_str().unwrap()),
        migrated
    );
    assert_eq!(conversation(&shown[0].0).len(), 3);
    // Without the newer file, the older one shows again.
    std::fs::remove_file(&migrated).unwrap();
    let shown = sessions();
    assert_eq!(shown.len(), 1);
    assert_eq!(
        Path::new(shown[0].1["source_path"].as_str().unwrap()),
        legacy
    );
}

#[test]
fn archived_codex_sessions_are_shown_and_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("codex");
    let active = root.join("sessions/2026/02/23");
    std::fs::create_dir_all(&active).unwrap();
    let name_a = "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl";
    let name_b = "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl";
    let src = fixtures().join("codex/sessions/2026/02/23");
    std::fs::copy(src.join(name_a), active.join(name_a)).unwrap();
    let source = format!("codex={}", root.display());
    let Some(m) = Mount::with_args(
        "archived_codex_sessions_are_shown_and_marked",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let folders = session_folders(&m.mp);
    assert_eq!(folders.len(), 1);
    assert_eq!(folders[0].1["archived"], false);
    // Codex archives a rollout into archived_sessions/, flat; the folder did not
    // exist when the mount started.
    let archive = root.join("archived_sessions");
    std::fs::create_dir_all(&archive).unwrap();
    std::fs::copy(src.join(name_b), archive.join(name_b)).unwrap();
    let folders = session_folders(&m.mp);
    assert_eq!(folders.len(), 2, "{folders:?}");
    let archived = folders
        .iter()
        .find(|(_, meta)| meta["source_path"].as_str().unwrap().ends_with(name_b))
        .unwrap();
    assert_eq!(archived.1["archived"], true);
    assert_eq!(archived.1["resumable"], true);
    let summary = std::fs::read_to_string(archived.0.join("summary.txt")).unwrap();
    assert!(summary.contains("\narchived   yes\n"), "{summary}");
}

#[test]
fn claude_sessions_an_index_marks_archived_are_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, file) = claude_home(tmp.path());
    let id = file.file_stem().unwrap().to_str().unwrap().to_string();
    let index = file.with_file_name("sessions-index.json");
    std::fs::write(
        &index,
        serde_json::json!({"version": 1, "entries": [
            {"sessionId": "other", "isArchived": false},
            {"sessionId": id, "fullPath": file, "isArchived": true}
        ]})
        .to_string(),
    )
    .unwrap();
    let source = format!("claude={}", root.display());
    let Some(m) = Mount::with_args(
        "claude_sessions_an_index_marks_archived_are_marked",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let folders = session_folders(&m.mp);
    assert_eq!(folders.len(), 1, "the index itself is no session");
    assert_eq!(folders[0].1["archived"], true);
    assert_eq!(folders[0].1["resumable"], true);
}

#[test]
fn detected_roots_of_the_new_agents() {
    let Some(m) = Mount::new("detected_roots_of_the_new_agents") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    std::os::unix::fs::symlink(fixtures().join("gemini"), home.join(".gemini")).unwrap();
    std::os::unix::fs::symlink(fixtures().join("cursor"), home.join(".cursor")).unwrap();
    // OpenClaw's earlier name, used when ~/.openclaw does not exist.
    std::os::unix::fs::symlink(fixtures().join("openclaw"), home.join(".clawdbot")).unwrap();
    let list = |envs: &[(&str, &Path)], removed: &[&str]| -> String {
        let mut cmd = support::fen_fs();
        cmd.args(["list", "--all", "--store"]).arg(&m.store);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        for k in removed {
            cmd.env_remove(k);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", out_text(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let count = |text: &str, agent: &str| text.lines().filter(|l| l.starts_with(agent)).count();
    let text = list(
        &[
            ("GEMINI_CLI_HOME", home),
            ("HOME", home),
            ("COPILOT_HOME", &fixtures().join("copilot")),
        ],
        &["OPENCLAW_STATE_DIR"],
    );
    assert_eq!(count(&text, "gemini"), 9, "{text}");
    assert_eq!(count(&text, "copilot"), 4, "{text}");
    // Five transcripts and the metadata-only store.db (another session id).
    assert_eq!(count(&text, "cursor"), 6, "{text}");
    assert_eq!(count(&text, "openclaw"), 3, "{text}");
    // The harness's variables hide them all.
    let text = list(&[], &[]);
    for agent in ["gemini", "copilot", "cursor", "openclaw"] {
        assert_eq!(count(&text, agent), 0, "{text}");
    }
}
