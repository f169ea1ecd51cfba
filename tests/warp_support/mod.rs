//! A Warp state folder made here: `warp.sqlite` with Warp's own migrations
//! (`tests/fixtures/warp/schema.sql`), each task encoded as Warp's protobuf `Task`.
#![allow(dead_code)]

use rusqlite::Connection;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = include_str!("../fixtures/warp/schema.sql");

/// Protobuf, field by field (what `prost`'s `encode_to_vec` writes).
pub fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

pub fn ld(n: u64, b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(n << 3 | 2, &mut out);
    varint(b.len() as u64, &mut out);
    out.extend_from_slice(b);
    out
}

pub fn num(n: u64, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(n << 3, &mut out);
    varint(v, &mut out);
    out
}

/// `Message {id = 1, task_id = 11, timestamp = 14, <kind> = k}`.
pub fn message(id: &str, task: &str, secs: u64, kind: u64, body: Vec<u8>) -> Vec<u8> {
    [
        ld(1, id.as_bytes()),
        ld(11, task.as_bytes()),
        ld(14, &num(1, secs)),
        ld(kind, &body),
    ]
    .concat()
}

pub fn user_query(q: &str, pwd: &str) -> Vec<u8> {
    // UserQuery {query = 1, context = 2 {directory = 1 {pwd = 1}}}
    [ld(1, q.as_bytes()), ld(2, &ld(1, &ld(1, pwd.as_bytes())))].concat()
}

pub fn task(id: &str, description: &str, parent: Option<&str>, messages: &[Vec<u8>]) -> Vec<u8> {
    let mut t = [ld(1, id.as_bytes()), ld(2, description.as_bytes())].concat();
    if let Some(p) = parent {
        t.extend(ld(3, &ld(1, p.as_bytes())));
    }
    for m in messages {
        t.extend(ld(5, m));
    }
    t
}

pub fn create(state: &Path) -> (PathBuf, Connection) {
    std::fs::create_dir_all(state).unwrap();
    let path = state.join("warp.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    (path, conn)
}

/// A conversation as `write_updated_conversation_state` writes it.
pub fn conversation(conn: &Connection, id: &str, data: Value, summary: Value, tasks: &[Vec<u8>]) {
    conn.execute(
        "INSERT INTO agent_conversations (conversation_id, conversation_data, summary, last_modified_at) VALUES (?1, ?2, ?3, '2026-08-16 04:30:00')",
        rusqlite::params![id, data.to_string(), summary.to_string()],
    )
    .unwrap();
    for (i, t) in tasks.iter().enumerate() {
        conn.execute(
            "INSERT INTO agent_tasks (conversation_id, task_id, task) VALUES (?1, ?2, ?3)",
            rusqlite::params![id, format!("{id}-task-{i}"), t],
        )
        .unwrap();
    }
}

/// A conversation of one task: a query, reasoning, a shell call and its result, the
/// answer, and a todo update the model does not read.
pub fn sample(conn: &Connection, id: &str) {
    let root = task(
        "root",
        "Find the large files",
        None,
        &[
            message(
                "m1",
                "root",
                1_786_854_600,
                2,
                user_query("Which files are over 1 MB?", "/home/u/wproj"),
            ),
            message(
                "m2",
                "root",
                1_786_854_601,
                15,
                ld(1, b"A find command does it."),
            ),
            // ToolCall {tool_call_id = 1, run_shell_command = 2 {command = 1}}
            message(
                "m3",
                "root",
                1_786_854_602,
                4,
                [ld(1, b"call_1"), ld(2, &ld(1, b"find . -size +1M"))].concat(),
            ),
            // ToolCallResult {tool_call_id = 1, run_shell_command = 2 {…}}
            message(
                "m4",
                "root",
                1_786_854_604,
                5,
                [
                    ld(1, b"call_1"),
                    ld(
                        2,
                        &[ld(1, b"find . -size +1M"), ld(2, b"./data/big.bin\n")].concat(),
                    ),
                ]
                .concat(),
            ),
            message(
                "m5",
                "root",
                1_786_854_606,
                3,
                ld(1, b"One: ./data/big.bin"),
            ),
            // UpdateTodos: not read by the model.
            message("m6", "root", 1_786_854_607, 10, ld(1, &ld(1, b"todo"))),
        ],
    );
    conversation(
        conn,
        id,
        json!({"server_conversation_token": "tok", "conversation_usage_metadata": {
            "was_summarized": false, "context_window_usage": 0.1, "credits_spent": 2.0,
            "total_provider_cost_in_cents": 1.5,
            "token_usage": [{"model_id": "claude-4-sonnet", "warp_tokens": 5200, "byok_tokens": 0}],
            "tool_usage_metadata": {}}}),
        json!({"initial_query": "Which files are over 1 MB?", "title": "Find the large files",
               "initial_working_directory": "/home/u/wproj", "is_restorable": true}),
        &[root],
    );
    conn.execute(
        "INSERT INTO ai_queries (exchange_id, conversation_id, start_ts, input, working_directory, output_status, model_id)
         VALUES ('ex1', ?1, '2026-08-16 04:29:59', '[{\"Query\":{\"text\":\"Which files are over 1 MB?\"}}]', '/home/u/wproj', 'Finished', 'claude-4-sonnet')",
        [id],
    )
    .unwrap();
}
