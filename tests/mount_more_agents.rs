//! The agents whose sessions are units of a store (Kilo's database, Cline's and Roo
//! Code's JSON files, VS Code's chat sessions) Kimi CLI's JSON Lines, OpenHands' event files through a real mount and the real command line, from their
//! fixtures (`tests/fixtures/<kind>/`): each shows in the namespace of its cwd with
//! every view readable and its words found by search, `fen-fs usage` counts what each recorded, a session its agent
//! deletes stays kept, and nothing in their folders changes.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::Mount;

fn fixture(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(kind)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// The agents' roots, copied from the fixtures into `tmp`: (kind, root).
fn roots(tmp: &Path) -> Vec<(&'static str, PathBuf)> {
    let kilo = tmp.join("kilo");
    std::fs::create_dir_all(&kilo).unwrap();
    std::fs::copy(fixture("kilo").join("kilo.db"), kilo.join("kilo.db")).unwrap();
    let cline = tmp.join("cline");
    copy_dir(&fixture("cline").join("data"), &cline);
    let roo = tmp.join("roo");
    copy_dir(&fixture("roo"), &roo);
    std::fs::remove_file(roo.join("README.md")).unwrap();
    let code = tmp.join("Code/User");
    copy_dir(&fixture("vscode-copilot").join("User"), &code);
    let kimi = tmp.join("kimi");
    copy_dir(&fixture("kimi"), &kimi);
    let openhands = tmp.join("openhands");
    copy_dir(&fixture("openhands"), &openhands);
    vec![
        ("kilo", kilo),
        ("cline", cline),
        ("roo", roo),
        ("vscode-copilot", code),
        ("kimi", kimi),
        ("openhands", openhands),
    ]
}

fn source_args(roots: &[(&str, PathBuf)]) -> Vec<String> {
    let mut args = vec!["--no-detect".to_string()];
    for (kind, root) in roots {
        args.push("--source".into());
        args.push(format!("{kind}={}", root.display()));
    }
    args
}

fn wait<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "waited for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The folder of `agent`'s session `id` in the namespace of `cwd`.
fn folder(mp: &Path, cwd: &str, agent: &str, id: &str) -> Option<PathBuf> {
    let ns = fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(cwd));
    std::fs::read_dir(mp.join(ns))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with(&format!("_{agent}-{id}"))
        })
}

/// One session of each agent: (kind, cwd, id, title, a word its conversation holds).
const SESSIONS: [(&str, &str, &str, &str, &str); 6] = [
    (
        "kilo",
        "/home/u/proj",
        "ses_de27f3cedffeJkvpNJ44a4d1PA",
        "Mock reply",
        "after compaction",
    ),
    (
        "cline",
        "/home/u/proj",
        "1795792383814_xzqel",
        "RUNTOOL second",
        "Context summary",
    ),
    (
        "roo",
        "/home/u/roo-proj",
        "r-parent",
        "Refactor the parser",
        "Delegating the tests",
    ),
    (
        "vscode-copilot",
        "/home/u/vs proj",
        "3a4b5c6d-7e8f-4a0b-8c1d-2e3f4a5b6c7d",
        "Cache explained",
        "last 32 dumps",
    ),
    (
        "kimi",
        "/home/u/kimi-proj",
        "4f7c2a10-5b3e-4d8a-9c21-6e0f8b7d1a23",
        "Kimi lists files",
        "prints a greeting",
    ),
    (
        "openhands",
        "/home/u/oh-proj",
        "5e4274e3516047f385c171092a8ad825",
        "list files please",
        "a second question",
    ),
];

#[test]
fn each_agents_session_shows_every_view_in_the_namespace_of_its_cwd() {
    let test = "each_agents_session_shows_every_view_in_the_namespace_of_its_cwd";
    let tmp = tempfile::tempdir().unwrap();
    let roots = roots(tmp.path());
    let before: Vec<_> = roots
        .iter()
        .map(|(_, r)| support::folder_state(r))
        .collect();
    let args = source_args(&roots);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args(test, &args) else {
        return;
    };
    for (kind, cwd, id, title, word) in SESSIONS {
        let dir = wait(&format!("{kind} {id}"), || folder(&m.mp, cwd, kind, id));
        let meta = support::meta(&dir);
        assert_eq!(meta["agent"], kind, "{meta}");
        assert_eq!(meta["id"], id, "{meta}");
        assert_eq!(meta["title"], title, "{meta}");
        assert_eq!(meta["resumable"], true, "{meta}");
        assert_eq!(meta["archived"], false, "{meta}");
        assert!(meta["source_path"].is_string(), "{meta}");
        let transcript = std::fs::read_to_string(dir.join("transcript.jsonl")).unwrap();
        assert!(!transcript.is_empty());
        for line in transcript.lines() {
            serde_json::from_str::<Value>(line).expect("transcript.jsonl is JSON Lines");
        }
        let conversation: Vec<Value> =
            serde_json::from_slice(&std::fs::read(dir.join("conversation.json")).unwrap()).unwrap();
        assert_eq!(
            conversation.len() as u64,
            meta["messages"].as_u64().unwrap(),
            "{kind}"
        );
        assert!(
            serde_json::to_string(&conversation).unwrap().contains(word),
            "{kind}: {word}"
        );
        let md = std::fs::read_to_string(dir.join("conversation.md")).unwrap();
        assert!(
            md.contains(word),
            "{kind}: conversation.md lacks {word}:\n{md}"
        );
        let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
        assert!(summary.contains(id), "{kind}: {summary}");
        // Read-only.
        let err = std::fs::write(dir.join("conversation.json"), b"[]").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{kind}");
    }
    // Search finds each agent's words (its neutral messages are indexed).
    for (kind, word) in [
        ("kilo", "compaction"),
        ("cline", "fourth"),
        ("roo", "Delegating"),
        ("vscode-copilot", "dumps"),
        ("kimi", "greeting"),
        ("openhands", "second"),
    ] {
        let hits = m.path("search").join(word).join("hits.jsonl");
        wait(&format!("a search hit of {kind} for {word}"), || {
            std::fs::read_to_string(&hits)
                .ok()?
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .any(|h| h["agent"] == kind)
                .then_some(())
        });
    }
    // A Roo subtask is a session of its own, naming its parent.
    let child = wait("roo's subtask", || {
        folder(&m.mp, "/home/u/roo-proj", "roo", "r-child")
    });
    assert_eq!(support::meta(&child)["parent_id"], "r-parent");
    // Cline's older task folders show too, in their own cwd.
    let task = wait("cline's task", || {
        folder(&m.mp, "/home/u/legacy", "cline", "1790000000000")
    });
    assert_eq!(support::meta(&task)["title"], "List the files");
    drop(m);
    for ((kind, root), was) in roots.iter().zip(before) {
        assert_eq!(support::folder_state(root), was, "{kind}'s folder changed");
    }
}

#[test]
fn usage_counts_what_each_agent_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = roots(tmp.path());
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let mut args = vec!["usage", "agent", "--json", "--timezone", "UTC"];
    let sources = source_args(&roots);
    args.extend(sources.iter().map(String::as_str));
    let out = support::fen_on(&store, &args);
    assert!(out.status.success(), "{}", support::out_text(&out));
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let row = |agent: &str| {
        rows.iter()
            .find(|r| r["agent"] == agent)
            .unwrap_or_else(|| panic!("no row for {agent}: {rows:#?}"))
            .clone()
    };
    let n = |r: &Value, k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    // Roo: three requests' counts and the costs it recorded.
    let roo = row("roo");
    assert_eq!(n(&roo, "responses"), 3, "{roo}");
    assert_eq!(n(&roo, "input_tokens"), 200 + 100 + 50, "{roo}");
    assert_eq!(n(&roo, "output_tokens"), 40 + 20 + 10, "{roo}");
    assert_eq!(n(&roo, "cache_read_tokens"), 100, "{roo}");
    assert!(
        (roo["cost_usd"].as_f64().unwrap() - 0.021).abs() < 1e-9,
        "{roo}"
    );
    // Cline: six answers of the compacted session (its compaction's copies not
    // again), one of the other, the two finished requests of a task folder.
    let cline = row("cline");
    assert_eq!(n(&cline, "responses"), 6 + 1 + 2, "{cline}");
    assert_eq!(n(&cline, "output_tokens"), 7 * 5 + 80 + 20, "{cline}");
    assert_eq!(n(&cline, "cache_write_tokens"), 1000, "{cline}");
    // Kilo: each assistant message once (the mock answered 10 in, 5 out each time).
    let kilo = row("kilo");
    assert!(n(&kilo, "responses") >= 6, "{kilo}");
    assert_eq!(
        n(&kilo, "output_tokens"),
        5 * n(&kilo, "responses"),
        "{kilo}"
    );
    // Kimi: the three steps its wire.jsonl recorded.
    let kimi = row("kimi");
    assert_eq!(n(&kimi, "responses"), 3, "{kimi}");
    assert_eq!(n(&kimi, "input_tokens"), 2000 + 100 + 50, "{kimi}");
    assert_eq!(n(&kimi, "output_tokens"), 30 + 12 + 8, "{kimi}");
    assert_eq!(n(&kimi, "cache_read_tokens"), 200 + 2200 + 2300, "{kimi}");
    // OpenHands: the three responses its base_state.json recorded.
    let openhands = row("openhands");
    assert_eq!(n(&openhands, "responses"), 3, "{openhands}");
    assert_eq!(n(&openhands, "input_tokens"), 3 * 100, "{openhands}");
    assert_eq!(n(&openhands, "cache_read_tokens"), 3 * 20, "{openhands}");
    assert_eq!(n(&openhands, "output_tokens"), 3 * 7, "{openhands}");
    // `fen-fs resume` prints Kimi's and OpenHands' own commands.
    for (id, command) in [
        (
            "4f7c2a10-5b3e-4d8a-9c21-6e0f8b7d1a23",
            "kimi --session 4f7c2a10-5b3e-4d8a-9c21-6e0f8b7d1a23",
        ),
        (
            "5e4274e3516047f385c171092a8ad825",
            "openhands --resume 5e4274e3516047f385c171092a8ad825",
        ),
    ] {
        let mut args = vec!["resume", id];
        args.extend(sources.iter().map(String::as_str));
        let out = support::fen_on(&store, &args);
        assert!(out.status.success(), "{}", support::out_text(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(command), "{text}");
    }
}

#[test]
fn a_session_its_agent_deletes_stays_kept() {
    let test = "a_session_its_agent_deletes_stays_kept";
    let tmp = tempfile::tempdir().unwrap();
    let roots = roots(tmp.path());
    let args = source_args(&roots);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args(test, &args) else {
        return;
    };
    let views = |dir: &Path| -> Vec<Vec<u8>> {
        ["transcript.jsonl", "conversation.json", "conversation.md"]
            .iter()
            .map(|v| std::fs::read(dir.join(v)).unwrap())
            .collect()
    };
    let mut kept = Vec::new();
    for (kind, cwd, id, ..) in SESSIONS {
        let dir = wait(&format!("{kind} {id}"), || folder(&m.mp, cwd, kind, id));
        wait(&format!("{kind}'s copy"), || {
            std::fs::read_dir(m.store.join(".kept").join(kind))
                .ok()?
                .flatten()
                .any(|e| {
                    std::fs::read_to_string(e.path().join("kept.json"))
                        .is_ok_and(|k| k.contains(id))
                })
                .then_some(())
        });
        kept.push((kind, dir.clone(), views(&dir)));
    }
    // Roo's subagent stays while its parent goes: each still links to the other.
    let child = wait("roo r-child", || {
        folder(&m.mp, "/home/u/roo-proj", "roo", "r-child")
    });
    let child_views = views(&child);
    let child_parent = support::meta(&child)["parent"].clone();
    assert!(child_parent.is_string(), "{child_parent}");
    // The agents delete them.
    let root = |k: &str| roots.iter().find(|(n, _)| *n == k).unwrap().1.clone();
    let db = rusqlite::Connection::open(root("kilo").join("kilo.db")).unwrap();
    for sql in [
        "DELETE FROM part WHERE session_id = 'ses_de27f3cedffeJkvpNJ44a4d1PA'",
        "DELETE FROM message WHERE session_id = 'ses_de27f3cedffeJkvpNJ44a4d1PA'",
        "DELETE FROM session WHERE id = 'ses_de27f3cedffeJkvpNJ44a4d1PA'",
    ] {
        db.execute(sql, []).unwrap();
    }
    drop(db);
    std::fs::remove_dir_all(root("cline").join("sessions/1795792383814_xzqel")).unwrap();
    std::fs::remove_dir_all(root("roo").join("tasks/r-parent")).unwrap();
    std::fs::remove_file(root("vscode-copilot").join(
        "workspaceStorage/5f1e0c2d9a7b3e4f/chatSessions/3a4b5c6d-7e8f-4a0b-8c1d-2e3f4a5b6c7d.jsonl",
    ))
    .unwrap();
    std::fs::remove_dir_all(
        root("kimi")
            .join("sessions/9413e71e4e637bdd9e5dc6443c2d621e/4f7c2a10-5b3e-4d8a-9c21-6e0f8b7d1a23"),
    )
    .unwrap();
    std::fs::remove_dir_all(
        root("openhands").join("conversations/5e4274e3516047f385c171092a8ad825"),
    )
    .unwrap();
    for (kind, dir, was) in kept {
        let meta = wait(&format!("{kind} kept"), || {
            let v: Value =
                serde_json::from_slice(&std::fs::read(dir.join("meta.json")).ok()?).ok()?;
            (v["kept"] == true && v["source_deleted"] == true).then_some(v)
        });
        assert_eq!(meta["agent"], kind);
        assert_eq!(views(&dir), was, "{kind}: the kept copy is what was shown");
    }
    assert_eq!(support::meta(&child)["parent"], child_parent);
    assert_eq!(
        views(&child),
        child_views,
        "roo's subagent links to its kept parent"
    );
}

/// A unit-backed agent's store is listed again only when inotify saw a change in its
/// folders: a session file its agent rewrites, and a session that comes, must still
/// show on the very next read (no waiting), round after round.
#[test]
fn a_rewritten_or_new_unit_session_shows_on_the_next_read() {
    let test = "a_rewritten_or_new_unit_session_shows_on_the_next_read";
    let tmp = tempfile::tempdir().unwrap();
    let roots: Vec<_> = roots(tmp.path())
        .into_iter()
        .filter(|(kind, _)| ["cline", "roo"].contains(kind))
        .collect();
    let args = source_args(&roots);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args(test, &args) else {
        return;
    };
    let (cline_cwd, cline_id) = ("/home/u/proj", "1795792383814_xzqel");
    let dir = wait("cline's session", || {
        folder(&m.mp, cline_cwd, "cline", cline_id)
    });
    let messages_file = roots[0]
        .1
        .join(format!("sessions/{cline_id}/{cline_id}.messages.json"));
    let conversation = || std::fs::read_to_string(dir.join("conversation.json")).unwrap();
    let index = dir.parent().unwrap().join("index.json");
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let listed_messages = || -> u64 {
        let list: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
        list.as_array()
            .unwrap()
            .iter()
            .find(|l| l["dir"] == name.as_str())
            .unwrap()["messages"]
            .as_u64()
            .unwrap()
    };
    // Read twice first: the first check after a listing sets the watches.
    listed_messages();
    let messages = listed_messages();
    for round in 0..5u64 {
        let text = format!("a rewritten cline prompt {round}");
        support::cline_rewrite_with_prompt(&messages_file, round, &text);
        assert_eq!(
            listed_messages(),
            messages + round + 1,
            "round {round}: the rewrite is not in the next index.json"
        );
        assert!(
            conversation().contains(&text),
            "round {round}: the rewrite is not on the next read"
        );
    }
    // A new Roo task (its folder made, then its files written) shows in its
    // namespace's index.json at once.
    let roo_tasks = roots[1].1.join("tasks");
    let ns = fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug("/home/u/roo-proj"));
    let index = m.mp.join(ns).join("index.json");
    wait("roo's task", || {
        std::fs::read_to_string(&index)
            .ok()?
            .contains("r-parent")
            .then_some(())
    });
    for round in 0..3 {
        let id = format!("r-new-{round}");
        let new = roo_tasks.join(&id);
        copy_dir(&roo_tasks.join("r-parent"), &new);
        let mut item: Value =
            serde_json::from_slice(&std::fs::read(new.join("history_item.json")).unwrap()).unwrap();
        item["id"] = Value::String(id.clone());
        std::fs::write(
            new.join("history_item.json"),
            serde_json::to_vec(&item).unwrap(),
        )
        .unwrap();
        assert!(
            std::fs::read_to_string(&index).unwrap().contains(&id),
            "round {round}: the new task is not in the next index.json"
        );
    }
}
