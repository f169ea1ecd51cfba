//! The editors' agents fen-fs reads (Cursor's composers; no build of either editor
//! runs here), through a real mount and the real command line: `--source KIND=DIR`
//! shows each session with every view as its reader makes it, in its cwd's
//! namespace, searchable, leaving the editor's folder byte for byte as it was; a new
//! message shows on the next read; a deleted session stays, kept; `fen-fs usage`
//! counts its tokens; `fen-fs resume` says the editor has no resume command of its
//! own and offers `--in`.

mod cursor_ide_support;
mod support;

use fen_fs::agent::Agent;
use fen_fs::sources::foreign::{feed_all, render_message};
use fen_fs::sources::registry::kind;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::Mount;

/// The editors' folders, made from each one's storage as its readers document it.
struct Stores {
    _tmp: tempfile::TempDir,
    cursor: PathBuf,
    cursor_db: rusqlite::Connection,
}

fn stores() -> Stores {
    let tmp = tempfile::tempdir().unwrap();
    let cursor = tmp.path().join("Cursor").join("User");
    let (_, cursor_db) = cursor_ide_support::create(&cursor);
    cursor_ide_support::sample(&cursor_db);
    Stores {
        _tmp: tmp,
        cursor,
        cursor_db,
    }
}

impl Stores {
    fn args(&self) -> Vec<String> {
        let mut out = vec!["--no-detect".to_string()];
        for (agent, root) in self.roots() {
            out.push("--source".into());
            out.push(format!("{}={}", agent.name(), root.display()));
        }
        out
    }

    fn roots(&self) -> Vec<(Agent, &PathBuf)> {
        vec![(Agent::CursorIde, &self.cursor)]
    }
}

/// Every file under `dir`: size, mtime, content. What "nothing changed" means.
fn state(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(
                    e.path(),
                    (
                        m.len(),
                        m.mtime(),
                        m.mtime_nsec(),
                        std::fs::read(e.path()).unwrap(),
                    ),
                );
            }
        }
    }
    out
}

fn wait<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "waited {secs} s for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The mount's session folder of `agent`'s session `id` (not a kept version).
fn session(mp: &Path, agent: Agent, id: &str) -> Option<(PathBuf, Value)> {
    for ns in std::fs::read_dir(mp).ok()?.flatten() {
        for s in std::fs::read_dir(ns.path()).into_iter().flatten().flatten() {
            let Ok(b) = std::fs::read(s.path().join("meta.json")) else {
                continue;
            };
            let Ok(v) = serde_json::from_slice::<Value>(&b) else {
                continue;
            };
            if v["agent"] == agent.name() && v["id"] == id && v["version"].is_null() {
                return Some((s.path(), v));
            }
        }
    }
    None
}

/// What the agent's units and reader say `id` is: its dump and conversation.json.
fn expected(agent: Agent, root: &Path, id: &str) -> (Vec<u8>, Vec<u8>) {
    let units = kind(agent).units(root).unwrap();
    let key = units
        .list()
        .into_iter()
        .map(|u| u.key)
        .find(|k| k.file_name().unwrap().to_string_lossy() == id)
        .unwrap();
    let (file, stamp) = units.open(&key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0).unwrap();
    let mut reader = kind(agent).reader_for(&key.file_name().unwrap().to_string_lossy());
    let tail = feed_all(reader.as_mut(), &bytes);
    let msgs = reader.conversation(tail);
    let mut conv = b"[\n".to_vec();
    for (i, m) in msgs.iter().enumerate() {
        conv.extend(render_message(m, &bytes));
        conv.extend_from_slice(if i + 1 == msgs.len() {
            b"\n]\n"
        } else {
            b",\n"
        });
    }
    (bytes, conv)
}

/// Each editor's session: (agent, id, its cwd, text its conversation.md shows, a
/// word only it holds).
const SESSIONS: [(Agent, &str, &str, &str, &str); 1] = [(
    Agent::CursorIde,
    cursor_ide_support::COMPOSER,
    "/home/u/cproj",
    "Return a Result instead.",
    "panicked",
)];

#[test]
fn each_editor_agent_shows_every_view_of_its_session_and_follows_it() {
    let test = "each_editor_agent_shows_every_view_of_its_session_and_follows_it";
    let s = stores();
    let before: Vec<_> = s.roots().iter().map(|(_, r)| state(r)).collect();
    let args = s.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args(test, &args) else {
        return;
    };
    for (agent, id, cwd, text, word) in SESSIONS {
        let root = s
            .roots()
            .into_iter()
            .find(|(a, _)| *a == agent)
            .unwrap()
            .1
            .clone();
        let (dir, meta) = wait(20, &format!("{} {id}", agent.name()), || {
            session(&m.mp, agent, id)
        });
        let name = agent.name();
        assert_eq!(meta["resumable"], true, "{name}: {meta}");
        assert_eq!(meta["cwd"], cwd, "{name}");
        assert!(meta["title"].is_string(), "{name}: {meta}");
        assert!(
            meta["resume_rules"]
                .as_str()
                .is_some_and(|r| r.starts_with("best effort")),
            "{name}: {meta}"
        );
        let source = meta["source_path"].as_str().unwrap();
        assert!(Path::new(source).starts_with(&root), "{name}: {source}");
        let ns = dir
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        assert_eq!(
            ns,
            fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(cwd)),
            "{name}"
        );
        let (dump, conv) = expected(agent, &root, id);
        assert_eq!(
            std::fs::read(dir.join("transcript.jsonl")).unwrap(),
            dump,
            "{name}"
        );
        assert_eq!(
            String::from_utf8_lossy(&std::fs::read(dir.join("conversation.json")).unwrap()),
            String::from_utf8_lossy(&conv),
            "{name}"
        );
        let md = std::fs::read_to_string(dir.join("conversation.md")).unwrap();
        assert!(md.contains(text), "{name}: {md}");
        let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
        assert!(summary.contains(id), "{name}: {summary}");
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
        // Read-only: nothing can be written there.
        assert!(std::fs::write(dir.join("conversation.json"), b"x").is_err());
        assert!(!dir.join("ctl").exists());
        // Searchable like any other session.
        let hits = wait(20, &format!("a search hit for {word}"), || {
            let h = std::fs::read_to_string(m.path("search").join(word).join("hits.jsonl")).ok()?;
            h.contains(&format!("\"{name}\"")).then_some(h)
        });
        assert!(hits.contains(id), "{hits}");
    }
    // Reading every view changed nothing in the editors' folders.
    for (i, (agent, root)) in s.roots().into_iter().enumerate() {
        assert!(
            state(root) == before[i],
            "the mount changed {}'s folder",
            agent.name()
        );
    }
    // Live: a message Cursor writes shows on the next read.
    let (dir, _) = session(&m.mp, Agent::CursorIde, cursor_ide_support::COMPOSER).unwrap();
    cursor_ide_support::bubble(
        &s.cursor_db,
        cursor_ide_support::COMPOSER,
        r#"{"_v":3,"type":1,"bubbleId":"b7-user-0007","text":"one more thing: quokka","createdAt":"2026-08-16T04:30:00.000Z"}"#,
    );
    let mut c: Value =
        serde_json::from_slice(&cursor_ide_support::fixture("composerData.json")).unwrap();
    c["fullConversationHeadersOnly"]
        .as_array_mut()
        .unwrap()
        .push(json!({"bubbleId": "b7-user-0007", "type": 1}));
    cursor_ide_support::composer(&s.cursor_db, cursor_ide_support::COMPOSER, &c.to_string());
    wait(10, "the new Cursor message", || {
        let c = std::fs::read_to_string(dir.join("conversation.json")).ok()?;
        c.contains("quokka").then_some(())
    });
    assert!(m.umount().status.success());
}

#[test]
fn a_deleted_session_stays_kept_as_it_was() {
    let test = "a_deleted_ide_session_stays_kept_as_it_was";
    let s = stores();
    let args = s.args();
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
    let mut was = Vec::new();
    for (agent, id, _, _, _) in SESSIONS {
        let (dir, _) = wait(20, &format!("{} {id}", agent.name()), || {
            session(&m.mp, agent, id)
        });
        wait(20, &format!("{}'s copy", agent.name()), || {
            let kept = std::fs::read_dir(m.store.join(".kept").join(agent.name())).ok()?;
            (kept.flatten().count() > 0).then_some(())
        });
        was.push((agent, id, dir.clone(), views(&dir)));
    }
    // Cursor deletes the composer: its row and its bubbles.
    s.cursor_db
        .execute(
            "DELETE FROM cursorDiskKV WHERE key LIKE ?1 OR key = ?2",
            [
                format!("bubbleId:{}:%", cursor_ide_support::COMPOSER),
                format!("composerData:{}", cursor_ide_support::COMPOSER),
            ],
        )
        .unwrap();
    for (agent, id, dir, views_before) in was {
        let meta = wait(20, &format!("{} {id} kept", agent.name()), || {
            let v: Value =
                serde_json::from_slice(&std::fs::read(dir.join("meta.json")).ok()?).ok()?;
            (v["kept"] == true && v["source_deleted"] == true).then_some(v)
        });
        assert_eq!(meta["agent"], agent.name());
        assert_eq!(
            views(&dir),
            views_before,
            "{}: the kept copy differs",
            agent.name()
        );
    }
}

#[test]
fn usage_counts_their_tokens_and_resume_offers_another_agent() {
    let s = stores();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let out = support::fen_fs()
        .args(["usage", "agent", "--json", "--store"])
        .arg(&store)
        .args(s.args())
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let row = |agent: &str| {
        rows.iter()
            .find(|r| r["agent"] == agent)
            .unwrap_or_else(|| panic!("no {agent} row: {rows:?}"))
            .clone()
    };
    let tokens = |r: &Value| {
        (
            r["input_tokens"].as_u64().unwrap(),
            r["output_tokens"].as_u64().unwrap(),
            r["cache_write_tokens"].as_u64().unwrap(),
            r["cache_read_tokens"].as_u64().unwrap(),
        )
    };
    assert_eq!(tokens(&row("cursor-ide")), (7900, 520, 0, 0));
    for (agent, id, _, _, _) in SESSIONS {
        let out = support::fen_fs()
            .args(["resume", id, "--store"])
            .arg(&store)
            .args(s.args())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", agent.name());
        assert!(
            err.contains("knows no resume command") && err.contains("--in"),
            "{}: {err}",
            agent.name()
        );
    }
}
