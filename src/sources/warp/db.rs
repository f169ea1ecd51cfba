//! Warp's `warp.sqlite` (warpdotdev/warp `crates/persistence`, diesel migrations):
//! `agent_conversations(id, conversation_id, conversation_data, last_modified_at,
//! summary)` (one row per conversation; `conversation_data` is JSON, `summary` the
//! task-derived title, first query and working directory), `agent_tasks(id,
//! conversation_id, task_id, task, last_modified_at)` (each task a protobuf blob,
//! `task.rs`) and `ai_queries` (one row per exchange: its time, model and working
//! directory).
//!
//! One conversation's dump: a header line (the conversation's row, its
//! `conversation_data` and `summary` as JSON, its exchanges without their input),
//! then for each task (the root first, then by row) a `{"task": …}` line and its
//! messages (`task.rs`), one per line.

use crate::sources::db_units::{RowDump, RowEntry, SessionRows, columns, has_all, row_hash};
use crate::sources::json_text::ObjectWriter;
use crate::sources::units::Signature;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use serde_json::{Value, json};

struct Schema {
    summary: bool,
    tasks: bool,
    queries: bool,
}

fn schema(conn: &Connection) -> rusqlite::Result<Result<Schema, String>> {
    let conv = columns(conn, "agent_conversations")?;
    if !has_all(
        &conv,
        &["conversation_id", "conversation_data", "last_modified_at"],
    ) {
        return Ok(Err(
            "unknown schema: no agent_conversations table with conversation_id, conversation_data and last_modified_at"
                .into(),
        ));
    }
    Ok(Ok(Schema {
        summary: conv.iter().any(|c| c == "summary"),
        tasks: has_all(
            &columns(conn, "agent_tasks")?,
            &["conversation_id", "task_id", "task"],
        ),
        queries: has_all(
            &columns(conn, "ai_queries")?,
            &[
                "conversation_id",
                "start_ts",
                "working_directory",
                "model_id",
            ],
        ),
    }))
}

fn text(r: &Row, i: usize) -> Option<String> {
    match r.get_ref(i).ok()? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

fn json_of(t: Option<String>) -> Value {
    t.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// `(count, newest, bytes)` of a conversation's tasks and exchanges, for its
/// signature, and the first working directory its exchanges name.
fn extra(
    conn: &Connection,
    schema: &Schema,
    id: &str,
) -> rusqlite::Result<(Vec<i64>, Option<String>)> {
    let mut v = Vec::new();
    if schema.tasks {
        conn.query_row(
            "SELECT count(*), COALESCE(max(id), 0), COALESCE(sum(length(task)), 0), COALESCE(max(last_modified_at), '')
             FROM agent_tasks WHERE conversation_id = ?1",
            [id],
            |r| {
                v.push(r.get(0)?);
                v.push(r.get(1)?);
                v.push(r.get(2)?);
                let t: String = r.get(3)?;
                v.push(crate::sources::db_units::sqlite_time_ms(&t).unwrap_or(0));
                Ok(())
            },
        )?;
    }
    let mut cwd = None;
    if schema.queries {
        conn.query_row(
            "SELECT count(*), COALESCE(max(start_ts), ''),
                    (SELECT working_directory FROM ai_queries WHERE conversation_id = ?1
                     AND COALESCE(working_directory, '') != '' ORDER BY start_ts LIMIT 1)
             FROM ai_queries WHERE conversation_id = ?1",
            [id],
            |r| {
                v.push(r.get(0)?);
                let t: String = r.get(1)?;
                v.push(crate::sources::db_units::sqlite_time_ms(&t).unwrap_or(0));
                cwd = r.get::<_, Option<String>>(2)?;
                Ok(())
            },
        )?;
    }
    Ok((v, cwd))
}

fn select(schema: &Schema) -> String {
    format!(
        "SELECT conversation_id, conversation_data, last_modified_at, {} FROM agent_conversations",
        if schema.summary {
            "summary"
        } else {
            "NULL AS summary"
        }
    )
}

fn entry(conn: &Connection, schema: &Schema, r: &Row) -> rusqlite::Result<Option<RowEntry>> {
    let Some(id) = text(r, 0) else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    row_hash(r, 4, &mut bytes);
    let (counts, query_cwd) = extra(conn, schema, &id)?;
    for c in &counts {
        bytes.extend_from_slice(&c.to_le_bytes());
    }
    let summary = json_of(text(r, 3));
    let cwd = summary
        .get("initial_working_directory")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(query_cwd)
        .filter(|c| !c.is_empty());
    let updated = text(r, 2)
        .and_then(|t| crate::sources::db_units::sqlite_time_ms(&t))
        .unwrap_or(0);
    Ok(Some(RowEntry {
        id,
        cwd,
        signature: Signature {
            hash: crate::store::atomic::checksum(&[&bytes]),
            updated_ms: updated,
        },
    }))
}

/// Warp's database.
pub struct WarpRows;

impl SessionRows for WarpRows {
    fn agent(&self) -> &'static str {
        "warp"
    }

    fn list(&self, conn: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>> {
        let schema = match schema(conn)? {
            Ok(s) => s,
            Err(why) => return Ok(Err(why)),
        };
        let mut stmt = conn.prepare(&format!("{} ORDER BY id", select(&schema)))?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            if let Some(e) = entry(conn, &schema, r)? {
                out.push(e);
            }
        }
        Ok(Ok(out))
    }

    fn dump(
        &self,
        conn: &Connection,
        id: &str,
    ) -> rusqlite::Result<Result<Option<RowDump>, String>> {
        let schema = match schema(conn)? {
            Ok(s) => s,
            Err(why) => return Ok(Err(why)),
        };
        let mut stmt = conn.prepare(&format!("{} WHERE conversation_id = ?1", select(&schema)))?;
        let mut rows = stmt.query([id])?;
        let Some(r) = rows.next()? else {
            return Ok(Ok(None));
        };
        let Some(e) = entry(conn, &schema, r)? else {
            return Ok(Ok(None));
        };
        let mut header = ObjectWriter::default();
        header.string("conversation_id", id);
        if let Some(t) = text(r, 2) {
            header.string("last_modified_at", &t);
        }
        header.raw("conversation_data", &json_of(text(r, 1)).to_string());
        header.raw("summary", &json_of(text(r, 3)).to_string());
        if let Some(cwd) = &e.cwd {
            header.string("cwd", cwd);
        }
        let mut exchanges = Vec::new();
        if schema.queries {
            let mut q = conn.prepare(
                "SELECT exchange_id, start_ts, model_id, working_directory, output_status
                 FROM ai_queries WHERE conversation_id = ?1 ORDER BY start_ts",
            )?;
            let mut rows = q.query([id])?;
            while let Some(r) = rows.next()? {
                exchanges.push(json!({
                    "exchange_id": text(r, 0), "start_ts": text(r, 1), "model_id": text(r, 2),
                    "working_directory": text(r, 3), "output_status": text(r, 4),
                }));
            }
        }
        header.raw("exchanges", &Value::Array(exchanges).to_string());
        let mut out = header.finish().into_bytes();
        out.push(b'\n');
        if schema.tasks {
            let mut q = conn.prepare(
                "SELECT task_id, task FROM agent_tasks WHERE conversation_id = ?1 ORDER BY id",
            )?;
            let mut rows = q.query([id])?;
            let mut tasks = Vec::new();
            while let Some(r) = rows.next()? {
                let task_id = text(r, 0).unwrap_or_default();
                let blob = match r.get_ref(1)? {
                    ValueRef::Blob(b) | ValueRef::Text(b) => b.to_vec(),
                    _ => Vec::new(),
                };
                tasks.push((task_id, super::task::decode(&blob)));
            }
            // The root task (no parent) first, as Warp builds its task tree from it.
            tasks.sort_by_key(|(_, t)| t.as_ref().map_or(1, |t| t.parent.is_some() as u8));
            for (task_id, t) in tasks {
                match t {
                    Ok(t) => {
                        let line = json!({"task": {
                            "id": t.id, "description": t.description,
                            "parent_task_id": t.parent, "summary": t.summary,
                        }});
                        out.extend_from_slice(line.to_string().as_bytes());
                        out.push(b'\n');
                        for m in t.messages {
                            out.extend_from_slice(m.to_string().as_bytes());
                            out.push(b'\n');
                        }
                    }
                    Err(why) => {
                        let mut w = ObjectWriter::default();
                        w.string("fen_unreadable", &format!("task {task_id}: {why}"));
                        out.extend_from_slice(w.finish().as_bytes());
                        out.push(b'\n');
                    }
                }
            }
        }
        Ok(Ok(Some((out, e.signature))))
    }

    fn identity_line(&self, entry: &RowEntry) -> String {
        let mut w = ObjectWriter::default();
        w.string("conversation_id", &entry.id);
        if let Some(c) = &entry.cwd {
            w.string("cwd", c);
        }
        w.finish()
    }
}
