//! Crush databases made by the tests, with the tables its migrations create
//! (charmbracelet/crush `internal/db/migrations/`: the initial schema, then
//! `summary_message_id`, `provider`, `is_summary_message`, `todos`, `read_files`), in
//! WAL mode as Crush opens them, rows shaped as `internal/message/message.go` writes
//! them (`parts`: `[{type, data}]`; times in seconds, as `strftime('%s', 'now')` gives).
#![allow(dead_code)]

use rusqlite::{Connection, params};
use serde_json::{Value, json};
use std::path::Path;

pub const DDL: &str = "
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
  prompt_tokens INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
  completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens>= 0),
  cost REAL NOT NULL DEFAULT 0.0 CHECK (cost >= 0.0), updated_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL, summary_message_id TEXT, todos TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL,
  content TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, UNIQUE(path, session_id, version));
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
  parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
  is_summary_message INTEGER DEFAULT 0 NOT NULL);
CREATE INDEX idx_messages_session_id ON messages (session_id);
CREATE TABLE read_files (session_id TEXT NOT NULL, path TEXT NOT NULL, read_at INTEGER NOT NULL,
  PRIMARY KEY (path, session_id));
CREATE TRIGGER update_session_message_count_on_insert AFTER INSERT ON messages
BEGIN UPDATE sessions SET message_count = message_count + 1 WHERE id = new.session_id; END;
";

pub struct Db {
    pub conn: Connection,
}

impl Db {
    /// A new database at `path` (its folder made), WAL mode, no automatic checkpoint.
    pub fn create(path: &Path) -> Db {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "wal").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn.execute_batch(DDL).unwrap();
        Db { conn }
    }

    pub fn session(&self, id: &str, parent: Option<&str>, title: &str, t: i64) {
        self.conn
            .execute(
                "INSERT INTO sessions (id, parent_session_id, title, prompt_tokens, \
                 completion_tokens, cost, updated_at, created_at) VALUES (?1, ?2, ?3, 0, 0, 0, ?4, ?4)",
                params![id, parent, title, t],
            )
            .unwrap();
    }

    pub fn usage(&self, id: &str, prompt: i64, completion: i64, cost: f64, t: i64) {
        self.conn
            .execute(
                "UPDATE sessions SET prompt_tokens = ?2, completion_tokens = ?3, cost = ?4, \
                 updated_at = ?5 WHERE id = ?1",
                params![id, prompt, completion, cost, t],
            )
            .unwrap();
    }

    pub fn summary(&self, session: &str, message: &str) {
        self.conn
            .execute(
                "UPDATE sessions SET summary_message_id = ?2 WHERE id = ?1",
                params![session, message],
            )
            .unwrap();
    }

    pub fn message(&self, id: &str, session: &str, role: &str, parts: Value, t: i64) {
        let model = (role == "assistant").then_some("gpt-4o");
        self.conn
            .execute(
                "INSERT INTO messages (id, session_id, role, parts, model, provider, \
                 created_at, updated_at, finished_at, is_summary_message) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?7, 0)",
                params![
                    id,
                    session,
                    role,
                    parts.to_string(),
                    model,
                    model.map(|_| "openai"),
                    t
                ],
            )
            .unwrap();
    }

    pub fn text(role: &str, text: &str) -> Value {
        let _ = role;
        json!([{"type": "text", "data": {"text": text}}, {"type": "finish", "data": {"reason": "end_turn", "time": 1}}])
    }
}

/// A project with one conversation: a prompt, a tool call and its result, an answer,
/// a summary Crush made, a prompt after it; and a subagent's child session.
pub fn project_with_sessions(project: &Path) -> Db {
    let db = Db::create(&project.join(".crush/crush.db"));
    let t = 1_790_000_000;
    db.session("s-root", None, "Fix the flux capacitor", t);
    db.message(
        "m1",
        "s-root",
        "user",
        Db::text("user", "please fix quasar_widget"),
        t + 1,
    );
    db.message(
        "m2",
        "s-root",
        "assistant",
        json!([{"type": "tool_call", "data": {"id": "call_1", "name": "view",
                "input": "{\"file_path\":\"a.rs\"}", "provider_executed": false, "finished": true}}]),
        t + 2,
    );
    db.message(
        "m3",
        "s-root",
        "tool",
        json!([{"type": "tool_result", "data": {"tool_call_id": "call_1", "name": "view",
                "content": "fn main() {}", "data": "", "mime_type": "", "metadata": "", "is_error": false}}]),
        t + 3,
    );
    db.message(
        "m4",
        "s-root",
        "assistant",
        Db::text("assistant", "fixed it"),
        t + 4,
    );
    db.message(
        "m5",
        "s-root",
        "assistant",
        Db::text("assistant", "Summary: the widget is fixed"),
        t + 5,
    );
    db.summary("s-root", "m5");
    db.message(
        "m6",
        "s-root",
        "user",
        Db::text("user", "and now the tests"),
        t + 6,
    );
    db.usage("s-root", 1200, 300, 0.0125, t + 6);
    db.session("s-child", Some("s-root"), "Subagent", t + 2);
    db.message(
        "c1",
        "s-child",
        "user",
        Db::text("user", "look at a.rs"),
        t + 2,
    );
    db
}
