//! OpenCode's data folder through a real mount: sessions appear in the namespace of
//! their directory and follow the database live, while nothing in OpenCode's folder is
//! ever created, locked or changed (no `-shm` made, no checkpoint), a writer holding
//! a transaction or checkpointing under the reader is never seen half, and damaged
//! input shows as a session that says why instead of failing the mount.

mod opencode_support;
mod support;

use opencode_support::{Db, Storage};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use support::Mount;

/// Every file under `dir`: (size, mtime, ctime, content hash) — what "changed nothing"
/// means, `-shm` and `-wal` included.
fn state(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, i64, i64, u64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap();
            out.insert(
                e.path(),
                (
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                    fen_fs::store::atomic::checksum(&[&bytes]),
                ),
            );
        }
    }
    out
}

fn mount(test: &str, data: &Path) -> Option<Mount> {
    let source = format!("opencode={}", data.display());
    Mount::with_args(test, &["--no-detect", "--source", &source])
}

/// The mount's folder of session `id` in the namespace of `cwd`.
fn folder(m: &Mount, cwd: &str, id: &str) -> PathBuf {
    let ns = fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(cwd));
    let ns_dir = m.mp.join(&ns);
    std::fs::read_dir(&ns_dir)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", ns_dir.display(), m.daemon_log()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&format!("_opencode-{id}")))
        .unwrap_or_else(|| panic!("no folder for {id} in {}", ns_dir.display()))
}

fn conversation(dir: &Path) -> Vec<Value> {
    let bytes = std::fs::read(dir.join("conversation.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    serde_json::from_slice(&bytes).expect("conversation.json is JSON")
}

fn texts(conv: &[Value]) -> Vec<String> {
    conv.iter()
        .map(|m| {
            m["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Reads every view of every session folder of the mount.
fn read_everything(mp: &Path) {
    for ns in std::fs::read_dir(mp).unwrap().flatten() {
        if !ns.file_type().unwrap().is_dir()
            || ns.file_name() == "search"
            || ns.file_name() == "usage"
        {
            continue;
        }
        std::fs::read(ns.path().join("index.json")).unwrap();
        for s in std::fs::read_dir(ns.path()).unwrap().flatten() {
            if s.file_type().unwrap().is_dir() {
                for v in [
                    "transcript.jsonl",
                    "conversation.json",
                    "conversation.md",
                    "meta.json",
                    "summary.txt",
                ] {
                    std::fs::read(s.path().join(v)).unwrap();
                }
            }
        }
    }
}

#[test]
fn a_live_database_is_read_without_creating_or_changing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    let mut db = Db::create(&data.join("opencode.db"));
    db.session("ses_a", "/home/u/proj", "Live one");
    db.user("ses_a", "msg_01", "hello");
    db.assistant("ses_a", "msg_02", "msg_01", "hi there");
    let st = Storage::new(&data);
    st.session("ses_old", "/home/u/old", "From the files");
    st.message("ses_old", "msg_1", "user", "old prompt");
    // The rows are in the -wal; the -shm is the writer's, mapped and live.
    assert!(data.join("opencode.db-wal").metadata().unwrap().len() > 0);
    assert!(data.join("opencode.db-shm").exists());
    let before = state(&data);
    let Some(m) = mount(
        "a_live_database_is_read_without_creating_or_changing_anything",
        &data,
    ) else {
        return;
    };
    let dir = folder(&m, "/home/u/proj", "ses_a");
    assert_eq!(texts(&conversation(&dir)), ["hello", "hi there"]);
    let meta = support::meta(&dir);
    assert_eq!(meta["agent"], "opencode");
    assert_eq!(meta["title"], "Live one");
    assert_eq!(
        meta["source_path"],
        Value::from(data.join("opencode.db").to_str())
    );
    assert_eq!(meta["archived"], false);
    let old = folder(&m, "/home/u/old", "ses_old");
    assert_eq!(texts(&conversation(&old)), ["old prompt"]);
    assert_eq!(
        support::meta(&old)["source_path"],
        Value::from(data.join("storage").to_str())
    );
    let md = std::fs::read_to_string(dir.join("conversation.md")).unwrap();
    assert!(md.contains("hello") && md.contains("hi there"), "{md}");
    assert!(!md.contains("Summary of the conversation"), "{md}");
    read_everything(&m.mp);
    let out = support::sh_in(
        &m.mp,
        "jq -c '.[].info.role' home-u-proj/2*/conversation.json",
        &[],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "\"user\"\n\"assistant\"\n"
    );
    assert_eq!(state(&data), before, "the mount changed OpenCode's folder");

    // Live: a new row shows on the next read, and still nothing of ours appears.
    db.user("ses_a", "msg_03", "one more");
    assert_eq!(
        texts(&conversation(&dir)),
        ["hello", "hi there", "one more"]
    );
    let transcript = std::fs::read_to_string(dir.join("transcript.jsonl")).unwrap();
    assert_eq!(
        transcript.len() as u64,
        std::fs::metadata(dir.join("transcript.jsonl"))
            .unwrap()
            .len()
    );
    assert!(transcript.contains("one more"));
    db.session("ses_b", "/home/u/proj", "A new one");
    db.user("ses_b", "msg_04", "new session");
    let b = folder(&m, "/home/u/proj", "ses_b");
    assert_eq!(texts(&conversation(&b)), ["new session"]);
    let before = state(&data);
    read_everything(&m.mp);
    assert_eq!(state(&data), before);
    drop(m);

    // Without a -shm (the writer gone without a checkpoint): read the same, none made.
    db.conn
        .set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
    drop(db);
    let _ = std::fs::remove_file(data.join("opencode.db-shm"));
    let before = state(&data);
    let Some(m) = mount(
        "a_live_database_is_read_without_creating_or_changing_anything",
        &data,
    ) else {
        return;
    };
    let dir = folder(&m, "/home/u/proj", "ses_a");
    assert_eq!(
        texts(&conversation(&dir)),
        ["hello", "hi there", "one more"]
    );
    read_everything(&m.mp);
    assert_eq!(state(&data), before);
    assert!(!data.join("opencode.db-shm").exists(), "a -shm was created");
}

#[test]
fn a_busy_database_is_never_shown_half() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    let mut db = Db::create(&data.join("opencode.db"));
    db.session("ses_a", "/w", "Busy");
    db.user("ses_a", "msg_0000", "first");
    let Some(m) = mount("a_busy_database_is_never_shown_half", &data) else {
        return;
    };
    let dir = folder(&m, "/w", "ses_a");
    assert_eq!(conversation(&dir).len(), 1);

    // A writer holding a transaction whose pages spill into the WAL: not seen.
    db.conn
        .execute_batch("PRAGMA cache_size = 2; BEGIN IMMEDIATE;")
        .unwrap();
    for i in 1..200 {
        db.user("ses_a", &format!("msg_{i:04}"), &"x".repeat(500));
    }
    assert_eq!(
        conversation(&dir).len(),
        1,
        "an uncommitted transaction was shown"
    );
    db.conn.execute_batch("COMMIT").unwrap();
    assert_eq!(conversation(&dir).len(), 200);

    // A writer committing turns (a user and an assistant message with a part each)
    // while checkpointing and restarting the WAL: every read is whole turns.
    let writer = std::thread::spawn(move || {
        for n in 0..150 {
            db.conn.execute_batch("BEGIN").unwrap();
            db.user("ses_a", &format!("msg_u{n:05}"), "q");
            db.assistant(
                "ses_a",
                &format!("msg_v{n:05}"),
                &format!("msg_u{n:05}"),
                "a",
            );
            db.conn.execute_batch("COMMIT").unwrap();
            if n % 25 == 24 {
                db.conn
                    .query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
                    .unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    });
    let mut seen = 0;
    let mut reads = 0;
    while !writer.is_finished() || reads == 0 {
        let conv = conversation(&dir);
        let users = conv.iter().filter(|m| m["info"]["role"] == "user").count();
        let assistants = conv.len() - users;
        assert_eq!(users, 200 + assistants, "a turn was shown half");
        assert!(
            conv.iter()
                .all(|m| m["parts"].as_array().unwrap().len() == 1)
        );
        seen = seen.max(assistants);
        reads += 1;
    }
    writer.join().unwrap();
    assert_eq!(conversation(&dir).len(), 200 + 300, "the last state, whole");
    let written = 150;
    assert!(
        seen > 0 && seen <= written,
        "{seen} of {written} turns seen"
    );
}

#[test]
fn damaged_input_shows_why_and_the_rest_of_the_mount_works() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    let mut db = Db::create(&data.join("opencode.db"));
    db.session("ses_ok", "/w", "Fine");
    db.user("ses_ok", "msg_1", "fine");
    std::fs::write(
        data.join("opencode-broken.db"),
        b"SQLite format 3\0 but not really",
    )
    .unwrap();
    let st = Storage::new(&data);
    st.session("ses_half", "/w", "Half written");
    let (msg, _) = st.message("ses_half", "msg_2", "user", "whole");
    std::fs::write(&msg, b"{\n  \"id\": \"msg_2\",\n  \"role\": ").unwrap();
    let Some(m) = mount(
        "damaged_input_shows_why_and_the_rest_of_the_mount_works",
        &data,
    ) else {
        return;
    };
    assert_eq!(texts(&conversation(&folder(&m, "/w", "ses_ok"))), ["fine"]);
    let half = folder(&m, "/w", "ses_half");
    let meta = support::meta(&half);
    assert_eq!(meta["resumable"], false);
    assert!(
        meta["not_resumable_reason"]
            .as_str()
            .unwrap()
            .contains("msg_2.json"),
        "{meta}"
    );
    assert_eq!(
        std::fs::read_to_string(half.join("conversation.json")).unwrap(),
        "[]\n"
    );
    // The broken database is one session saying why, in unknown-cwd.
    let unknown = m.mp.join("unknown-cwd");
    let broken: Vec<PathBuf> = std::fs::read_dir(&unknown)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p).unwrap().is_dir())
        .collect();
    assert_eq!(broken.len(), 1, "{broken:?}");
    let meta = support::meta(&broken[0]);
    assert_eq!(meta["resumable"], false);
    assert!(
        meta["not_resumable_reason"]
            .as_str()
            .unwrap()
            .contains("database")
    );
    assert_eq!(
        meta["source_path"],
        Value::from(data.join("opencode-broken.db").to_str())
    );
    assert!(
        m.daemon_log().contains("opencode-broken.db"),
        "a warning in the log"
    );
    // The half file is written whole: the session is read again.
    st.message("ses_half", "msg_2", "user", "whole");
    assert_eq!(texts(&conversation(&half)), ["whole"]);
}

#[test]
fn opencode_is_found_where_it_keeps_its_data_and_its_opencode_db() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let xdg = tmp.path().join("xdg");
    std::fs::create_dir_all(xdg.join("opencode")).unwrap();
    let mut db = Db::create(&xdg.join("opencode/opencode.db"));
    db.session("ses_here", "/w", "In the data folder");
    db.user("ses_here", "msg_1", "one");
    // A database named by $OPENCODE_DB, outside the data folder.
    let mut other = Db::create(&tmp.path().join("elsewhere.db"));
    other.session("ses_there", "/w", "Named by OPENCODE_DB");
    other.user("ses_there", "msg_2", "two");
    let list = |xdg_data: &Path, opencode_db: &Path| {
        let out = support::fen_fs()
            .args(["list", "--all", "--store"])
            .arg(&store)
            .env("XDG_DATA_HOME", xdg_data)
            .env("OPENCODE_DB", opencode_db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", support::out_text(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = list(&xdg, &tmp.path().join("elsewhere.db"));
    assert!(
        text.contains("ses_here") && text.contains("ses_there"),
        "{text}"
    );
    assert!(text.lines().filter(|l| l.starts_with("opencode")).count() == 2);
    // No data folder at all: $OPENCODE_DB alone is enough.
    let text = list(
        &tmp.path().join("nothing"),
        &tmp.path().join("elsewhere.db"),
    );
    assert!(
        text.contains("ses_there") && !text.contains("ses_here"),
        "{text}"
    );
    // The harness's defaults see none of it.
    let out = support::fen_fs()
        .args(["list", "--all", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("opencode"));
}
