//! Goose's `sessions.db` (block/goose `crates/goose/src/session/session_manager.rs`,
//! schema version 16): tables `sessions`, `messages`, `usage_ledger` (since 15) and
//! `schema_version`. One session's dump, read through `sqlite_ro`:
//!
//! 1. the session row, every column by its name as stored (NULLs left out), plus
//!    `schema_version`;
//! 2. each message as Goose's `Message` serializes (`{id, role, created, content,
//!    metadata}`), in Goose's own order (`ORDER BY created_timestamp, id`), `content`
//!    and `metadata` the stored JSON text; a `content_json` that is not JSON is kept
//!    as a string under `fen_unparsed_content` (Goose fails to load such a session);
//! 3. each `usage_ledger` row as `{"usage_ledger": {column: value, …}}`, by `id`.
//!
//! The same shape as a pre-database JSONL session file (`legacy.rs`: a metadata line,
//! then one `Message` per line), so one reader reads both.

use crate::sources::db_units::{
    RowDump, RowEntry, SessionRows, column_json, columns, has_all, row_hash,
};
use crate::sources::json_text::ObjectWriter;
use crate::sources::units::Signature;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use std::collections::HashMap;

/// The newest `schema_version` this reader was built from.
pub const KNOWN_SCHEMA_VERSION: i64 = 16;

/// What the database's tables allow.
struct Schema {
    version: i64,
    message_id: bool,
    metadata: bool,
    ledger: bool,
}

fn schema(conn: &Connection) -> rusqlite::Result<Result<Schema, String>> {
    let sessions = columns(conn, "sessions")?;
    let messages = columns(conn, "messages")?;
    if !has_all(&sessions, &["id", "working_dir"]) {
        return Ok(Err(
            "unknown schema: no sessions table with id and working_dir (Goose's since 1.10)".into(),
        ));
    }
    if !has_all(
        &messages,
        &["session_id", "role", "content_json", "created_timestamp"],
    ) {
        return Ok(Err(
            "unknown schema: no messages table with session_id, role, content_json and created_timestamp"
                .into(),
        ));
    }
    let version = if columns(conn, "schema_version")?.is_empty() {
        0
    } else {
        conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_version",
            [],
            |r| r.get::<_, i64>(0),
        )?
    };
    let ledger = has_all(
        &columns(conn, "usage_ledger")?,
        &["id", "session_id", "created_timestamp"],
    );
    Ok(Ok(Schema {
        version,
        message_id: messages.iter().any(|c| c == "message_id"),
        metadata: messages.iter().any(|c| c == "metadata_json"),
        ledger,
    }))
}

/// Per-session facts a signature is made of.
#[derive(Default, Clone)]
struct Counts {
    messages: i64,
    max_row: i64,
    bytes: i64,
    last_created: i64,
    ledger: i64,
    max_ledger: i64,
}

fn counts(
    conn: &Connection,
    schema: &Schema,
    only: Option<&str>,
) -> rusqlite::Result<HashMap<String, Counts>> {
    let mut out: HashMap<String, Counts> = HashMap::new();
    let filter = if only.is_some() {
        " WHERE session_id = ?1"
    } else {
        ""
    };
    let meta = if schema.metadata {
        "octet_length(metadata_json)"
    } else {
        "0"
    };
    let sql = format!(
        "SELECT session_id, count(*), max(id), sum(octet_length(content_json)) + COALESCE(sum({meta}), 0), max(created_timestamp)
         FROM messages{filter} GROUP BY session_id"
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = match only {
        Some(id) => stmt.query([id])?,
        None => stmt.query([])?,
    };
    while let Some(r) = rows.next()? {
        let Ok(id) = r.get::<_, String>(0) else {
            continue;
        };
        let c = out.entry(id).or_default();
        c.messages = r.get(1)?;
        c.max_row = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
        c.bytes = r.get::<_, Option<i64>>(3)?.unwrap_or(0);
        c.last_created = r.get::<_, Option<i64>>(4)?.unwrap_or(0);
    }
    if schema.ledger {
        let sql = format!(
            "SELECT session_id, count(*), max(id) FROM usage_ledger{filter} GROUP BY session_id"
        );
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = match only {
            Some(id) => stmt.query([id])?,
            None => stmt.query([])?,
        };
        while let Some(r) = rows.next()? {
            let Ok(id) = r.get::<_, String>(0) else {
                continue;
            };
            let c = out.entry(id).or_default();
            c.ledger = r.get(1)?;
            c.max_ledger = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
        }
    }
    Ok(out)
}

/// Goose's message times are seconds (a few older writers used milliseconds).
pub fn message_ms(created: i64) -> i64 {
    if created > 10_000_000_000 {
        created
    } else {
        created.saturating_mul(1000)
    }
}

fn text(r: &Row, col: &str) -> Option<String> {
    match r.get_ref(col).ok()? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

fn entries(
    conn: &Connection,
    schema: &Schema,
    counts: &HashMap<String, Counts>,
    only: Option<&str>,
) -> rusqlite::Result<Vec<RowEntry>> {
    let sql = match only {
        Some(_) => "SELECT * FROM sessions WHERE id = ?1",
        None => "SELECT * FROM sessions ORDER BY id",
    };
    let mut stmt = conn.prepare(sql)?;
    let n = stmt.column_count();
    let mut rows = match only {
        Some(id) => stmt.query([id])?,
        None => stmt.query([])?,
    };
    let mut out = Vec::new();
    let mut bytes = Vec::new();
    while let Some(r) = rows.next()? {
        let Some(id) = text(r, "id") else { continue };
        let c = counts.get(&id).cloned().unwrap_or_default();
        bytes.clear();
        row_hash(r, n, &mut bytes);
        for v in [
            c.messages,
            c.max_row,
            c.bytes,
            c.last_created,
            c.ledger,
            c.max_ledger,
            schema.version,
        ] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let updated = text(r, "updated_at")
            .and_then(|t| crate::sources::db_units::sqlite_time_ms(&t))
            .unwrap_or(0)
            .max(if c.messages > 0 {
                message_ms(c.last_created)
            } else {
                0
            });
        out.push(RowEntry {
            cwd: text(r, "working_dir").filter(|d| !d.is_empty()),
            signature: Signature {
                hash: crate::store::atomic::checksum(&[&bytes]),
                updated_ms: updated,
            },
            id,
        });
    }
    Ok(out)
}

/// The session row as a JSON object: every column by name, NULLs left out.
fn session_line(r: &Row, names: &[String], version: i64) -> String {
    let mut w = ObjectWriter::default();
    for (i, name) in names.iter().enumerate() {
        match r.get_ref(i) {
            Ok(ValueRef::Null) | Ok(ValueRef::Blob(_)) | Err(_) => {}
            Ok(v) => {
                w.raw(name, &column_json(v));
            }
        }
    }
    w.raw("schema_version", &version.to_string());
    w.finish()
}

/// A stored JSON text as a value of the line, minified (`None`: not JSON).
fn json_value(text: &str) -> Option<String> {
    crate::sources::json_text::minify(text)
}

/// Goose's sessions database.
pub struct GooseRows;

impl SessionRows for GooseRows {
    fn agent(&self) -> &'static str {
        "goose"
    }

    fn list(&self, conn: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>> {
        let schema = match schema(conn)? {
            Ok(s) => s,
            Err(why) => return Ok(Err(why)),
        };
        let counts = counts(conn, &schema, None)?;
        Ok(Ok(entries(conn, &schema, &counts, None)?))
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
        let counts = counts(conn, &schema, Some(id))?;
        let Some(entry) = entries(conn, &schema, &counts, Some(id))?.pop() else {
            return Ok(Ok(None));
        };
        let mut out = Vec::new();
        {
            let mut stmt = conn.prepare("SELECT * FROM sessions WHERE id = ?1")?;
            let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
            let mut rows = stmt.query([id])?;
            if let Some(r) = rows.next()? {
                out.extend_from_slice(session_line(r, &names, schema.version).as_bytes());
                out.push(b'\n');
            }
        }
        let sql = format!(
            "SELECT id, {}, role, content_json, created_timestamp, {} FROM messages
             WHERE session_id = ?1 ORDER BY created_timestamp, id",
            if schema.message_id {
                "message_id"
            } else {
                "NULL"
            },
            if schema.metadata {
                "metadata_json"
            } else {
                "NULL"
            },
        );
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([id])?;
        while let Some(r) = rows.next()? {
            let row: i64 = r.get(0)?;
            let message_id = match r.get_ref(1)? {
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                // Before version 7 Goose named a message by its place: migration 7
                // names the existing ones `msg_<session>_<row>`.
                _ => format!("msg_{id}_{row}"),
            };
            let role = match r.get_ref(2)? {
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                _ => String::new(),
            };
            let content = match r.get_ref(3)? {
                ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
                _ => String::new(),
            };
            let created = match r.get_ref(4)? {
                ValueRef::Integer(v) => v,
                ValueRef::Real(v) => v as i64,
                _ => 0,
            };
            let metadata = match r.get_ref(5)? {
                ValueRef::Text(t) => json_value(&String::from_utf8_lossy(t)),
                _ => None,
            };
            let mut w = ObjectWriter::default();
            w.string("id", &message_id)
                .string("role", &role)
                .raw("created", &created.to_string());
            match json_value(&content) {
                Some(c) => w.raw("content", &c),
                None => w.string("fen_unparsed_content", &content),
            };
            if let Some(m) = metadata {
                w.raw("metadata", &m);
            }
            out.extend_from_slice(w.finish().as_bytes());
            out.push(b'\n');
        }
        if schema.ledger {
            let mut stmt =
                conn.prepare("SELECT * FROM usage_ledger WHERE session_id = ?1 ORDER BY id")?;
            let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
            let mut rows = stmt.query([id])?;
            while let Some(r) = rows.next()? {
                let mut row = ObjectWriter::default();
                for (i, name) in names.iter().enumerate() {
                    if let Ok(v) = r.get_ref(i)
                        && !matches!(v, ValueRef::Null)
                    {
                        row.raw(name, &column_json(v));
                    }
                }
                let mut w = ObjectWriter::default();
                w.raw("usage_ledger", &row.finish());
                out.extend_from_slice(w.finish().as_bytes());
                out.push(b'\n');
            }
        }
        Ok(Ok(Some((out, entry.signature))))
    }

    fn identity_line(&self, entry: &RowEntry) -> String {
        let mut w = ObjectWriter::default();
        w.string("id", &entry.id);
        if let Some(d) = &entry.cwd {
            w.string("working_dir", d);
        }
        w.finish()
    }
}
