//! The agents fen-fs reads from their public source only (Goose, Amp, Zed, Warp; no
//! build of any installs here), through a real mount and the real command line: each
//! `--source KIND=DIR` shows its session with every view, as its reader makes them,
//! in its cwd's namespace, leaving the agent's folder byte for byte as it was; a
//! deleted session stays, kept; `fen-fs usage` counts their tokens; `fen-fs resume`
//! prints the agent's own command where it has one.

mod goose_support;
mod support;
mod warp_support;
mod zed_support;

use fen_fs::agent::Agent;
use fen_fs::sources::foreign::{feed_all, render_message};
use fen_fs::sources::registry::kind;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::Mount;

const AMP_THREAD: &str = "T-7f3c2a10-1b2c-4d5e-8f90-a1b2c3d4e5f6";
const ZED_THREAD: &str = "5d1f2a3b-0c4d-4e5f-8a9b-0c1d2e3f4a5b";

/// The four stores, made from each agent's schema and serializer.
struct Stores {
    _tmp: tempfile::TempDir,
    goose: PathBuf,
    amp: PathBuf,
    zed: PathBuf,
    warp: PathBuf,
    goose_db: goose_support::GooseDb,
    zed_db: rusqlite::Connection,
    warp_db: rusqlite::Connection,
}

fn stores() -> Stores {
    let tmp = tempfile::tempdir().unwrap();
    let goose = tmp.path().join("goose");
    let goose_db = goose_support::GooseDb::create(&goose, "v16");
    goose_support::two_turns(&goose_db, "20260816_3", "/home/u/gproj");
    goose_db.ledger(
        "20260816_3",
        1_786_854_321,
        Some("claude-sonnet-4-5"),
        7466,
        15,
        None,
        None,
        None,
        None,
        false,
    );
    let amp = tmp.path().join("amp");
    std::fs::create_dir_all(amp.join("threads")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/amp/threads/{AMP_THREAD}.json")),
        amp.join(format!("threads/{AMP_THREAD}.json")),
    )
    .unwrap();
    let zed = tmp.path().join("zed");
    let (_, zed_db) = zed_support::create(&zed, true);
    zed_support::save(
        &zed_db,
        ZED_THREAD,
        &zed_support::fixture("thread-0.3.0.json"),
        &["/home/u/zproj"],
        None,
    );
    let warp = tmp.path().join("warp-terminal");
    let (_, warp_db) = warp_support::create(&warp);
    warp_support::sample(&warp_db, "c-1");
    Stores {
        _tmp: tmp,
        goose,
        amp,
        zed,
        warp,
        goose_db,
        zed_db,
        warp_db,
    }
}

impl Stores {
    fn args(&self) -> Vec<String> {
        let mut out = vec!["--no-detect".to_string()];
        for (k, p) in [
            ("goose", &self.goose),
            ("amp", &self.amp),
            ("zed", &self.zed),
            ("warp", &self.warp),
        ] {
            out.push("--source".into());
            out.push(format!("{k}={}", p.display()));
        }
        out
    }

    fn roots(&self) -> [(Agent, &PathBuf); 4] {
        [
            (Agent::Goose, &self.goose),
            (Agent::Amp, &self.amp),
            (Agent::Zed, &self.zed),
            (Agent::Warp, &self.warp),
        ]
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
        .find(|k| {
            k.file_name()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches(".json")
                == id
        })
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

/// Each agent's session: (agent, id, its cwd, text its conversation.md shows).
const SESSIONS: [(Agent, &str, &str, &str); 4] = [
    (
        Agent::Goose,
        "20260816_3",
        "/home/u/gproj",
        "test result: ok. 3 passed",
    ),
    (
        Agent::Amp,
        AMP_THREAD,
        "/home/u/amp proj",
        "7 TODOs are left in src.",
    ),
    (
        Agent::Zed,
        ZED_THREAD,
        "/home/u/zproj",
        "return a Result instead",
    ),
    (Agent::Warp, "c-1", "/home/u/wproj", "One: ./data/big.bin"),
];

#[test]
fn each_agent_built_from_source_shows_every_view_of_its_session() {
    let test = "each_agent_built_from_source_shows_every_view_of_its_session";
    let s = stores();
    let before: Vec<_> = s.roots().iter().map(|(_, r)| state(r)).collect();
    let args = s.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args(test, &args) else {
        return;
    };
    for (agent, id, cwd, text) in SESSIONS {
        let root = s
            .roots()
            .iter()
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
    }
    // Live: a new message Goose writes shows on the next read.
    let (goose_dir, _) = session(&m.mp, Agent::Goose, "20260816_3").unwrap();
    s.goose_db.message(
        "20260816_3",
        "msg_live",
        "user",
        1_786_854_500,
        goose_support::text("one more thing: quokka"),
        goose_support::visible(),
    );
    wait(10, "the new message", || {
        let c = std::fs::read_to_string(goose_dir.join("conversation.json")).ok()?;
        c.contains("quokka").then_some(())
    });
    // Searchable like any other session.
    let hits = wait(20, "a search hit", || {
        let h =
            std::fs::read_to_string(m.path("search").join("big.bin").join("hits.jsonl")).ok()?;
        h.contains("\"warp\"").then_some(h)
    });
    assert!(hits.contains("c-1"), "{hits}");
    assert!(m.umount().status.success());
    // Goose's own write aside (its database and WAL), nothing changed.
    let after: Vec<_> = s.roots().iter().map(|(_, r)| state(r)).collect();
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        if i == 0 {
            assert_eq!(
                b.keys().collect::<Vec<_>>(),
                a.keys().collect::<Vec<_>>(),
                "a file appeared in Goose's folder"
            );
        } else {
            assert!(
                b == a,
                "the mount changed {}'s folder",
                s.roots()[i].0.name()
            );
        }
    }
}

#[test]
fn a_deleted_session_stays_kept_as_it_was() {
    let test = "a_deleted_session_stays_kept_as_it_was";
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
    for (agent, id, _, _) in SESSIONS {
        let (dir, _) = wait(20, &format!("{} {id}", agent.name()), || {
            session(&m.mp, agent, id)
        });
        wait(20, &format!("{}'s copy", agent.name()), || {
            let kept = std::fs::read_dir(m.store.join(".kept").join(agent.name())).ok()?;
            (kept.flatten().count() > 0).then_some(())
        });
        was.push((agent, id, dir.clone(), views(&dir)));
    }
    // Each agent deletes its session.
    for sql in [
        "DELETE FROM messages WHERE session_id = '20260816_3'",
        "DELETE FROM usage_ledger WHERE session_id = '20260816_3'",
        "DELETE FROM sessions WHERE id = '20260816_3'",
    ] {
        s.goose_db.conn.execute(sql, []).unwrap();
    }
    std::fs::remove_file(s.amp.join(format!("threads/{AMP_THREAD}.json"))).unwrap();
    s.zed_db
        .execute("DELETE FROM threads WHERE id = ?1", [ZED_THREAD])
        .unwrap();
    s.warp_db
        .execute("DELETE FROM agent_tasks WHERE conversation_id = 'c-1'", [])
        .unwrap();
    s.warp_db
        .execute(
            "DELETE FROM agent_conversations WHERE conversation_id = 'c-1'",
            [],
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
fn usage_counts_their_tokens_and_resume_prints_their_own_command() {
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
    assert_eq!(tokens(&row("goose")), (7466, 15, 0, 0));
    assert_eq!(tokens(&row("amp")), (9, 134, 4350, 26200));
    assert_eq!(tokens(&row("zed")), (2722, 136, 2048, 2048));
    assert_eq!(tokens(&row("warp")), (5200, 0, 0, 0));
    let resume = |id: &str| {
        support::fen_fs()
            .args(["resume", id, "--store"])
            .arg(&store)
            .args(s.args())
            .output()
            .unwrap()
    };
    let goose = resume("20260816_3");
    assert!(
        goose.status.success(),
        "{}",
        String::from_utf8_lossy(&goose.stderr)
    );
    assert!(
        String::from_utf8_lossy(&goose.stdout)
            .contains("goose session --resume --session-id 20260816_3"),
        "{}",
        String::from_utf8_lossy(&goose.stdout)
    );
    let amp = resume(AMP_THREAD);
    assert!(
        String::from_utf8_lossy(&amp.stdout)
            .contains(&format!("amp threads continue {AMP_THREAD}")),
        "{}",
        String::from_utf8_lossy(&amp.stderr)
    );
}
