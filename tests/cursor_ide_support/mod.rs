//! A Cursor user folder made here (Cursor is closed source: no build of it runs
//! here): `globalStorage/state.vscdb` with VS Code's and Cursor's key/value tables
//! (`tests/fixtures/cursor-ide/schema.sql`), rows written as VS Code's storage writes
//! them (a plain `INSERT`, the table's `ON CONFLICT REPLACE` replacing a key), and
//! workspaces (`workspaceStorage/<hash>/workspace.json` + `state.vscdb`).
#![allow(dead_code)]

use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cursor-ide");

/// The composer of the fixtures (`composerData.json`, `bubbles.jsonl`).
pub const COMPOSER: &str = "3f1c9a2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b";
/// The older composer with an inline conversation (`composerData-inline.json`).
pub const INLINE: &str = "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918";
/// Its workspace, and the workspace the header of `COMPOSER` names.
pub const LEGACY_WS: &str = "0f9e8d7c6b5a49382716a5b4c3d2e1f0";
pub const HEADER_WS: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

/// A fixture's JSON as Cursor stores it (JSON.stringify: compact).
pub fn compact(name: &str) -> String {
    serde_json::from_slice::<Value>(&fixture(name))
        .unwrap()
        .to_string()
}

fn open_kv(path: &Path, wal: bool) -> Connection {
    let conn = Connection::open(path).unwrap();
    if wal {
        conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    }
    conn.execute_batch(&std::fs::read_to_string(format!("{FIXTURES}/schema.sql")).unwrap())
        .unwrap();
    conn
}

/// `user/globalStorage/state.vscdb`, in WAL mode as Cursor keeps it.
pub fn create(user: &Path) -> (PathBuf, Connection) {
    let dir = user.join("globalStorage");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.vscdb");
    let conn = open_kv(&path, true);
    (path, conn)
}

/// A key written as VS Code's storage writes it.
pub fn put(conn: &Connection, table: &str, key: &str, value: &str) {
    conn.execute(
        &format!("INSERT INTO {table} VALUES (?1, ?2)"),
        [key, value],
    )
    .unwrap();
}

pub fn composer(conn: &Connection, id: &str, json: &str) {
    put(conn, "cursorDiskKV", &format!("composerData:{id}"), json);
}

pub fn bubble(conn: &Connection, composer: &str, json: &str) {
    let v: Value = serde_json::from_str(json).unwrap();
    let id = v["bubbleId"].as_str().unwrap();
    put(
        conn,
        "cursorDiskKV",
        &format!("bubbleId:{composer}:{id}"),
        json,
    );
}

/// The fixtures' composer: its composerData, its bubbles and Cursor 3's header.
pub fn sample(conn: &Connection) {
    composer(conn, COMPOSER, &compact("composerData.json"));
    for line in String::from_utf8(fixture("bubbles.jsonl")).unwrap().lines() {
        bubble(conn, COMPOSER, line);
    }
    put(
        conn,
        "ItemTable",
        "composer.composerHeaders",
        &compact("composerHeaders.json"),
    );
}

/// `user/workspaceStorage/<hash>/` for `folder` (a URI), with its database.
pub fn workspace(user: &Path, hash: &str, folder: &str) -> (PathBuf, Connection) {
    let dir = user.join("workspaceStorage").join(hash);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("workspace.json"),
        serde_json::json!({ "folder": folder }).to_string(),
    )
    .unwrap();
    let path = dir.join("state.vscdb");
    let conn = open_kv(&path, false);
    (path, conn)
}

/// The older composer in the global database, listed by a workspace of its own
/// (with the first chats of that workspace).
pub fn older(user: &Path, global: &Connection) -> (PathBuf, Connection) {
    composer(global, INLINE, &compact("composerData-inline.json"));
    let (db, ws) = workspace(user, LEGACY_WS, "file:///home/u/legacy%20proj");
    put(
        &ws,
        "ItemTable",
        "composer.composerData",
        &compact("workspace-composerData.json"),
    );
    put(
        &ws,
        "ItemTable",
        "workbench.panel.aichat.view.aichat.chatdata",
        &compact("chatdata.json"),
    );
    (db, ws)
}
