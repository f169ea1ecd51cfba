//! The trash without a mount: `fen-fs rm`, `restore`, `trash list|empty` on a store
//! (the real binary), and what a restore refuses.

mod support;

use std::path::{Path, PathBuf};

use support::out_text;

/// Writes a session file as another writer would; returns its path.
fn session(store: &Path, ns: &str, id: &str, title: &str) -> PathBuf {
    let dir = store.join(ns);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2026-11-21T14-03-11-123Z_{id}.jsonl"));
    std::fs::write(
        &path,
        format!(
            "{{\"type\":\"session\",\"version\":2,\"id\":\"{id}\",\"timestamp\":\"2026-11-21T14:03:11.123Z\",\"cwd\":\"/p\"}}\n\
             {{\"type\":\"title\",\"title\":\"{title}\"}}\n\
             {{\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n"
        ),
    )
    .unwrap();
    path
}

fn trash_list(store: &Path) -> Vec<serde_json::Value> {
    let out = support::fen_on(store, &["trash", "list", "--json"]);
    assert!(out.status.success(), "{}", out_text(&out));
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn rm_then_restore_gives_back_identical_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = session(&store, "--p--", "aaaa", "first");
    let b = session(&store, "--p--", "bbbb", "second");
    let bytes = std::fs::read(&a).unwrap();

    let out = support::fen_on(&store, &["rm", "aaaa"]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(!a.exists() && b.exists());
    let list = trash_list(&store);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], "aaaa");
    assert_eq!(list[0]["cwd"], "/p");
    assert_eq!(list[0]["title"], "first");
    assert_eq!(list[0]["size_bytes"], bytes.len());
    assert!(list[0]["deleted_at"].as_str().unwrap().ends_with('Z'));
    // Gone from `list` too.
    let out = support::fen_on(&store, &["list", "--all", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("aaaa"));
    let table = support::fen_on(&store, &["trash", "list"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("first"));

    let out = support::fen_on(&store, &["restore", "aa"]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(std::fs::read(&a).unwrap(), bytes);
    assert!(trash_list(&store).is_empty());

    // Several at once; the last of a namespace takes its folder with it.
    let out = support::fen_on(&store, &["rm", "aaaa", b.to_str().unwrap()]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(!store.join("--p--").exists());
    let out = support::fen_on(&store, &["restore", "aaaa", "bbbb"]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(std::fs::read(&a).unwrap(), bytes);
    assert!(b.exists());
}

#[test]
fn restore_refuses_to_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = session(&store, "--p--", "aaaa", "first");
    let original = std::fs::read(&a).unwrap();
    assert!(support::fen_on(&store, &["rm", "aaaa"]).status.success());
    // Something else took the name meanwhile.
    std::fs::create_dir_all(a.parent().unwrap()).unwrap();
    std::fs::write(
        &a,
        b"{\"type\":\"session\",\"version\":2,\"id\":\"aaaa\"}\n",
    )
    .unwrap();
    let out = support::fen_on(&store, &["restore", "aaaa"]);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already exists"), "{err}");
    // Neither copy was touched.
    assert_ne!(std::fs::read(&a).unwrap(), original);
    let list = trash_list(&store);
    assert_eq!(list.len(), 1);
    assert_eq!(
        std::fs::read(list[0]["path"].as_str().unwrap()).unwrap(),
        original
    );
}

#[test]
fn another_agents_file_and_unknown_ids_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    session(&store, "--p--", "aaaa", "first");
    let foreign = session(&tmp.path().join("claude"), "proj", "cccc", "theirs");
    let out = support::fen_on(&store, &["rm", foreign.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("never another agent's"), "{err}");
    assert!(foreign.exists());
    let out = support::fen_on(&store, &["rm", "zzzz"]);
    assert_eq!(out.status.code(), Some(1));
    let out = support::fen_on(&store, &["restore", "aaaa"]);
    assert_eq!(out.status.code(), Some(1), "not in the trash");
    let out = support::fen_on(&store, &["trash", "empty", "--older-than", "soon"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn trash_empty_removes_by_age() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    session(&store, "--p--", "old1", "old");
    session(&store, "--q--", "new1", "new");
    assert!(
        support::fen_on(&store, &["rm", "old1", "new1"])
            .status
            .success()
    );
    // Backdate one deletion by 40 days: the stamp is in the trashed file's name.
    let list = trash_list(&store);
    let old = list.iter().find(|t| t["id"] == "old1").unwrap();
    let old_path = PathBuf::from(old["path"].as_str().unwrap());
    let name = old_path.file_name().unwrap().to_str().unwrap();
    let (head, _) = name.rsplit_once(".deleted-").unwrap();
    let then = chrono::Utc::now() - chrono::Duration::days(40);
    let backdated = old_path.with_file_name(format!(
        "{head}.deleted-{}",
        then.format("%Y-%m-%dT%H-%M-%S-%3fZ")
    ));
    std::fs::rename(&old_path, &backdated).unwrap();

    let out = support::fen_on(&store, &["trash", "empty", "--older-than", "30d"]);
    assert!(out.status.success(), "{}", out_text(&out));
    let left: Vec<_> = trash_list(&store)
        .into_iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(left, ["new1"]);
    assert!(!backdated.exists());

    let out = support::fen_on(&store, &["trash", "empty", "--older-than", "12h"]);
    assert!(out.status.success());
    assert_eq!(trash_list(&store).len(), 1, "deleted just now: kept");
    let out = support::fen_on(&store, &["trash", "empty"]);
    assert!(out.status.success());
    assert!(trash_list(&store).is_empty());
    // Nothing of the store's sessions was touched, and `.trash` is no namespace.
    let out = support::fen_on(&store, &["list", "--all", "--json"]);
    assert_eq!(out.stdout, b"[]\n");
}

#[test]
fn restore_refuses_a_session_id_taken_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = session(&store, "--p--", "named", "first");
    assert!(support::fen_on(&store, &["rm", "named"]).status.success());
    // A new session chose the same session-id (in another namespace).
    session(&store, "--q--", "named", "second");
    let out = support::fen_on(&store, &["restore", "named"]);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use"), "{err}");
    assert!(!a.exists());
    assert_eq!(trash_list(&store).len(), 1);
}
