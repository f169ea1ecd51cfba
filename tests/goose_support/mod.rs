//! A Goose data folder made here: `sessions/sessions.db` from Goose's own CREATE
//! statements (`tests/fixtures/goose/schema-*.sql`), in WAL mode as Goose opens it,
//! with rows shaped as Goose's `SessionStorage` writes them.
#![allow(dead_code)]

use rusqlite::Connection;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/goose");

pub struct GooseDb {
    pub path: PathBuf,
    pub conn: Connection,
    pub v16: bool,
}

impl GooseDb {
    /// `<data>/sessions/sessions.db` with the schema of `schema` (`"v16"`, `"v5"`).
    pub fn create(data: &Path, schema: &str) -> GooseDb {
        let dir = data.join("sessions");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sessions.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
        let sql = std::fs::read_to_string(format!("{FIXTURES}/schema-{schema}.sql")).unwrap();
        conn.execute_batch(&sql).unwrap();
        GooseDb {
            path,
            conn,
            v16: schema == "v16",
        }
    }

    /// A session row as `create_session` inserts it, then the columns a session's
    /// updates set (name, provider and model config at its first reply).
    pub fn session(&self, id: &str, working_dir: &str, name: &str, created: &str) {
        self.conn
            .execute(
                "INSERT INTO sessions (id, name, user_set_name, session_type, working_dir, extension_data, created_at, updated_at)
                 VALUES (?1, ?2, FALSE, 'user', ?3, '{}', ?4, ?4)",
                rusqlite::params![id, name, working_dir, created],
            )
            .unwrap();
        if self.v16 {
            self.conn
                .execute(
                    "UPDATE sessions SET provider_name = 'anthropic',
                     model_config_json = '{\"model_name\":\"claude-sonnet-4-5\",\"context_limit\":null,\"temperature\":null,\"max_tokens\":null,\"toolshim\":false,\"toolshim_model\":null}'
                     WHERE id = ?1",
                    [id],
                )
                .unwrap();
        }
    }

    pub fn set(&self, id: &str, column: &str, value: &dyn rusqlite::ToSql) {
        self.conn
            .execute(
                &format!("UPDATE sessions SET {column} = ?1 WHERE id = ?2"),
                rusqlite::params![value, id],
            )
            .unwrap();
    }

    /// A message as `add_message` inserts it: `content_json` and `metadata_json` are
    /// `serde_json::to_string` of the content and the metadata.
    pub fn message(
        &self,
        session: &str,
        message_id: &str,
        role: &str,
        created: i64,
        content: Value,
        metadata: Value,
    ) {
        if self.v16 {
            self.conn
                .execute(
                    "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    rusqlite::params![message_id, session, role, content.to_string(), created, metadata.to_string()],
                )
                .unwrap();
        } else {
            self.conn
                .execute(
                    "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    rusqlite::params![session, role, content.to_string(), created, metadata.to_string()],
                )
                .unwrap();
        }
        self.conn
            .execute(
                "UPDATE sessions SET updated_at = datetime(?2, 'unixepoch') WHERE id = ?1",
                rusqlite::params![session, created],
            )
            .unwrap();
    }

    /// A content string stored as is (a damaged row).
    pub fn raw_message(
        &self,
        session: &str,
        message_id: &str,
        role: &str,
        created: i64,
        content_json: &str,
    ) {
        self.conn
            .execute(
                "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, '{\"userVisible\":true,\"agentVisible\":true}')",
                rusqlite::params![message_id, session, role, content_json, created],
            )
            .unwrap();
    }

    /// A usage row as `insert_usage_ledger_row` inserts it.
    #[allow(clippy::too_many_arguments)]
    pub fn ledger(
        &self,
        session: &str,
        created: i64,
        model: Option<&str>,
        input: i64,
        output: i64,
        cache_read: Option<i64>,
        cache_write: Option<i64>,
        cost: Option<f64>,
        cost_source: Option<&str>,
        is_compaction: bool,
    ) {
        self.conn
            .execute(
                "INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens, output_tokens, total_tokens,
                 cache_read_tokens, cache_write_tokens, cost, cost_source, is_compaction)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                rusqlite::params![
                    session, created, model, input, output, input + output, cache_read, cache_write, cost,
                    cost_source, is_compaction as i64
                ],
            )
            .unwrap();
    }
}

/// Goose's default metadata (`MessageMetadata::default()`).
pub fn visible() -> Value {
    json!({"userVisible": true, "agentVisible": true})
}

pub fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

/// A tool call as Goose's `ToolRequest` serializes.
pub fn tool_request(id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "toolRequest", "id": id, "toolCall": {"status": "success", "value": {"name": name, "arguments": arguments}}})
}

/// A tool result as Goose's `ToolResponse` serializes (a `CallToolResult`).
pub fn tool_response(id: &str, output: &str) -> Value {
    json!({"type": "toolResponse", "id": id, "toolResult": {"status": "success", "value": {"content": [{"type": "text", "text": output}], "isError": false}}})
}

/// A session of two turns with a tool call, a compaction's hidden history and its
/// agent-only summary: the usual shape.
pub fn two_turns(db: &GooseDb, id: &str, cwd: &str) {
    db.session(id, cwd, "Fix the tests", "2026-08-16 04:25:20");
    let t = 1_786_854_320;
    db.message(id, "msg_u1", "user", t, text("Run the tests"), visible());
    db.message(
        id,
        "chatcmpl-1",
        "assistant",
        t + 1,
        json!([{"type": "text", "text": "Running them."}, tool_request("call_1", "developer__shell", json!({"command": "cargo test"}))]),
        json!({"userVisible": true, "agentVisible": true, "inference": {"provider": "anthropic", "requestedModel": "claude-sonnet-4-5"}}),
    );
    db.message(
        id,
        "msg_u2",
        "user",
        t + 2,
        json!([tool_response("call_1", "test result: ok. 3 passed")]),
        visible(),
    );
    db.message(
        id,
        "chatcmpl-2",
        "assistant",
        t + 3,
        text("All 3 pass."),
        visible(),
    );
}
