//! A Zed data folder made here: `threads/threads.db` with Zed's own table
//! (`tests/fixtures/zed/schema.sql`), threads stored as Zed's `save_thread_sync`
//! stores them.
#![allow(dead_code)]

use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/zed");

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

/// `<data>/threads/threads.db` with Zed's table (`full`: with the columns later
/// versions add).
pub fn create(data: &Path, full: bool) -> (PathBuf, Connection) {
    let dir = data.join("threads");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("threads.db");
    let conn = Connection::open(&path).unwrap();
    let sql = std::fs::read_to_string(format!("{FIXTURES}/schema.sql")).unwrap();
    let sql = if full {
        sql
    } else {
        sql.split("\nALTER").next().unwrap().to_string()
    };
    conn.execute_batch(&sql).unwrap();
    (path, conn)
}

/// A thread as `save_thread_sync` stores it: zstd level 3 of its JSON, the folder
/// list serialized as `PathList` does (sorted paths, the order they were given).
pub fn save(conn: &Connection, id: &str, json: &[u8], folders: &[&str], parent: Option<&str>) {
    let doc: Value = serde_json::from_slice(json).unwrap();
    let title = doc["title"].as_str().unwrap_or("").to_string();
    let updated = doc["updated_at"].as_str().unwrap().to_string();
    let mut sorted: Vec<(usize, &str)> = folders.iter().copied().enumerate().collect();
    sorted.sort_by(|a, b| a.1.cmp(b.1));
    let paths: Vec<&str> = sorted.iter().map(|p| p.1).collect();
    let order: Vec<String> = sorted.iter().map(|p| p.0.to_string()).collect();
    let data = zstd::encode_all(json, 3).unwrap();
    conn.execute(
        "INSERT INTO threads (id, parent_id, folder_paths, folder_paths_order, summary, updated_at, data_type, data, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'zstd', ?7, ?6)
         ON CONFLICT(id) DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at, data = excluded.data",
        rusqlite::params![
            id,
            parent,
            (!paths.is_empty()).then(|| paths.join("\n")),
            (!paths.is_empty()).then(|| order.join(",")),
            title,
            updated,
            data
        ],
    )
    .unwrap();
}
