//! A Cursor (IDE) user folder made by the tests, with the keys and shapes the public
//! readers of Cursor's `state.vscdb` read (Dicklesworthstone/franken_agent_detection
//! 6ae73d5f78d2800b3fd1cadec27b0db43f483817 `src/connectors/cursor.rs`): the global
//! `cursorDiskKV` (`composerData:<id>`, `bubbleId:<id>:<bubble>`, bubble `type` 1
//! user / 2 assistant, `fullConversationHeadersOnly`, an older composer's inline
//! `conversation`), and a workspace's `ItemTable` `composer.composerData` listing its
//! composers beside its `workspace.json`. Cursor itself is closed: nothing here was
//! written by it.
#![allow(dead_code)]

use rusqlite::Connection;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub const NEW: &str = "c0ffee00-1111-4222-8333-444455556666";
pub const OLD: &str = "0ld00000-aaaa-4bbb-8ccc-dddddddddddd";
pub const EMPTY: &str = "e0000000-0000-4000-8000-000000000000";

/// The global database, open for writing (as Cursor keeps it).
pub struct CursorIde {
    pub root: PathBuf,
    pub global: Connection,
}

fn kv(c: &Connection, table: &str, key: &str, value: &Value) {
    c.execute(
        &format!("INSERT OR REPLACE INTO {table} (key, value) VALUES (?1, ?2)"),
        rusqlite::params![key, value.to_string()],
    )
    .unwrap();
}

impl CursorIde {
    pub fn create(root: &Path) -> CursorIde {
        let global_dir = root.join("globalStorage");
        std::fs::create_dir_all(&global_dir).unwrap();
        let global = Connection::open(global_dir.join("state.vscdb")).unwrap();
        global
            .execute_batch(
                "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
                 CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);",
            )
            .unwrap();
        let ide = CursorIde {
            root: root.to_path_buf(),
            global,
        };
        ide.composer_new();
        ide.composer_old();
        kv(
            &ide.global,
            "cursorDiskKV",
            &format!("composerData:{EMPTY}"),
            &json!({"_v": 3, "composerId": EMPTY, "fullConversationHeadersOnly": [], "createdAt": 1793000000000_i64}),
        );
        // The workspace that lists the new composer.
        let ws = root.join("workspaceStorage/9a8b7c6d5e4f");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join("workspace.json"),
            json!({"folder": "file:///home/u/cursor-proj"}).to_string(),
        )
        .unwrap();
        let wdb = Connection::open(ws.join("state.vscdb")).unwrap();
        wdb.execute_batch(
            "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);",
        )
        .unwrap();
        kv(
            &wdb,
            "ItemTable",
            "composer.composerData",
            &json!({"allComposers": [{"composerId": NEW, "name": "Fix the tokenizer",
                     "lastUpdatedAt": 1793000090000_i64, "createdAt": 1793000000000_i64,
                     "unifiedMode": "agent"}], "selectedComposerIds": [NEW]}),
        );
        ide
    }

    fn composer_new(&self) {
        let bubbles = [
            (
                "b1",
                json!({"_v": 2, "type": 1, "bubbleId": "b1", "text": "Why does the tokenizer split emoji?",
                          "createdAt": "2026-10-27T10:00:00.000Z", "tokenCount": {"inputTokens": 0, "outputTokens": 0}}),
            ),
            (
                "b2",
                json!({"_v": 2, "type": 2, "bubbleId": "b2", "text": "",
                          "thinking": {"text": "Look at the grapheme handling."},
                          "toolFormerData": {"tool": 5, "toolCallId": "toolu_9", "name": "read_file",
                                             "rawArgs": "{\"target_file\":\"src/tok.rs\"}", "status": "completed",
                                             "result": "{\"contents\":\"fn split(...)\"}"},
                          "createdAt": "2026-10-27T10:00:05.000Z",
                          "tokenCount": {"inputTokens": 1800, "outputTokens": 60},
                          "modelInfo": {"modelName": "claude-4-sonnet"}}),
            ),
            (
                "b3",
                json!({"_v": 2, "type": 2, "bubbleId": "b3", "text": "It splits on code points, not graphemes.",
                          "createdAt": "2026-10-27T10:00:09.000Z",
                          "tokenCount": {"inputTokens": 2100, "outputTokens": 40},
                          "workspaceProjectDir": "/home/u/elsewhere"}),
            ),
            (
                "b4",
                json!({"_v": 2, "type": 2, "bubbleId": "b4", "text": "", "createdAt": "2026-10-27T10:00:10.000Z"}),
            ),
        ];
        let headers: Vec<Value> = bubbles
            .iter()
            .map(|(id, b)| json!({"bubbleId": id, "type": b["type"]}))
            .collect();
        kv(
            &self.global,
            "cursorDiskKV",
            &format!("composerData:{NEW}"),
            &json!({"_v": 10, "composerId": NEW, "name": "Fix the tokenizer", "richText": "",
                    "fullConversationHeadersOnly": headers, "createdAt": 1793000000000_i64,
                    "lastUpdatedAt": 1793000090000_i64, "unifiedMode": "agent",
                    "modelConfig": {"modelName": "claude-4-sonnet", "maxMode": false}}),
        );
        for (id, b) in bubbles {
            kv(
                &self.global,
                "cursorDiskKV",
                &format!("bubbleId:{NEW}:{id}"),
                &b,
            );
        }
        // A bubble of the composer its headers do not list (not in the conversation).
        kv(
            &self.global,
            "cursorDiskKV",
            &format!("bubbleId:{NEW}:zz"),
            &json!({"type": 1, "bubbleId": "zz", "text": "a draft never sent"}),
        );
    }

    fn composer_old(&self) {
        kv(
            &self.global,
            "cursorDiskKV",
            &format!("composerData:{OLD}"),
            &json!({"composerId": OLD, "createdAt": 1792000000000_i64, "lastUpdatedAt": 1792000050000_i64,
            "conversation": [
                {"type": 1, "bubbleId": "o1", "text": "Rename the module", "workspaceUris": ["file:///home/u/old%20proj"]},
                {"type": 2, "bubbleId": "o2", "text": "Renamed to `lexer`."}
            ]}),
        );
    }

    /// Cursor answering once more in the new composer.
    pub fn add_bubble(&self, id: &str, text: &str) {
        let key = format!("composerData:{NEW}");
        let v: String = self
            .global
            .query_row(
                "SELECT value FROM cursorDiskKV WHERE key = ?1",
                [&key],
                |r| r.get(0),
            )
            .unwrap();
        let mut c: Value = serde_json::from_str(&v).unwrap();
        c["fullConversationHeadersOnly"]
            .as_array_mut()
            .unwrap()
            .push(json!({"bubbleId": id, "type": 1}));
        c["lastUpdatedAt"] = json!(1793000100000_i64);
        kv(&self.global, "cursorDiskKV", &key, &c);
        kv(
            &self.global,
            "cursorDiskKV",
            &format!("bubbleId:{NEW}:{id}"),
            &json!({"type": 1, "bubbleId": id, "text": text, "createdAt": "2026-10-27T10:01:00.000Z"}),
        );
    }
}
