//! OpenCode's SQLite database, read through `sqlite_ro` (never written, locked or
//! checkpointed): the sessions it holds with a signature of their rows, and one
//! session's rows as a JSON Lines dump.
//!
//! V1 (1.2 – 1.18, AGENT-FORMATS-MORE.md §1.2): tables `session`, `message`, `part`;
//! messages in `(time_created, id)` order, each followed by its parts in `id` order,
//! hydrated as OpenCode does (`{...data, id, sessionID}`, parts `{...data, id,
//! sessionID, messageID}`). OpenCode 2 (§1.7, best effort): a session with rows in
//! `session_message` is dumped from them in `seq` order as `{...data, id, type}`
//! (`SessionHistory.decodeMessageRow`); its session row comes from `session_v2` when
//! that table holds it, else from `session`.
//!
//! The signature of a session: its row, plus, when the sync event log exists
//! (`event_sequence`, bumped by every message and part write), its sequence number and
//! the message and part counts (index-only counts); without the log, the counts, the
//! newest `time_updated` and the rows' byte sizes (`octet_length` reads no content).

use crate::sources::json_text::{ObjectWriter, minify, spread_into};
use crate::sources::units::Signature;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use std::collections::HashMap;

/// A session as the listing finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub directory: Option<String>,
    pub created_ms: Option<i64>,
    /// Dumped from OpenCode 2's `session_message` rows.
    pub v2: bool,
    pub signature: Signature,
}

/// What the database's tables allow.
struct Schema {
    /// The V1 session table's columns (empty: no such table).
    session: Vec<String>,
    /// `session_v2`'s columns (empty: no such table).
    session_v2: Vec<String>,
    v1_rows: bool,
    v2_rows: bool,
    events: bool,
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let cols = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(cols)
}

fn has_all(cols: &[String], want: &[&str]) -> bool {
    want.iter().all(|w| cols.iter().any(|c| c == w))
}

/// The schema, or why it is not one this reader knows.
fn schema(conn: &Connection) -> rusqlite::Result<Result<Schema, String>> {
    let session = columns(conn, "session")?;
    let session_v2 = columns(conn, "session_v2")?;
    if session.is_empty() && session_v2.is_empty() {
        return Ok(Err(
            "not an OpenCode database: it has no session table".into()
        ));
    }
    for (name, cols) in [("session", &session), ("session_v2", &session_v2)] {
        if !cols.is_empty() && !has_all(cols, &["id", "directory", "time_created", "time_updated"])
        {
            return Ok(Err(format!(
                "unknown schema version: table {name} lacks id, directory, time_created or time_updated"
            )));
        }
    }
    let message = columns(conn, "message")?;
    let part = columns(conn, "part")?;
    let v1_rows = has_all(&message, &["id", "session_id", "time_created", "data"])
        && has_all(&part, &["id", "message_id", "session_id", "data"]);
    if !message.is_empty() && !v1_rows {
        return Ok(Err(
            "unknown schema version: tables message and part lack the columns OpenCode 1.2 – 1.18 have"
                .into(),
        ));
    }
    let v2 = columns(conn, "session_message")?;
    let v2_rows = has_all(&v2, &["id", "session_id", "type", "seq", "data"]);
    let events = has_all(&columns(conn, "event_sequence")?, &["aggregate_id", "seq"]);
    Ok(Ok(Schema {
        session,
        session_v2,
        v1_rows,
        v2_rows,
        events,
    }))
}

/// Per-session facts the signature is made of.
#[derive(Default, Clone)]
struct Counts {
    messages: i64,
    parts: i64,
    seq: i64,
    v2_rows: i64,
    extra: Vec<i64>,
}

/// The counts of every session (`only`: of that one).
fn counts(
    conn: &Connection,
    schema: &Schema,
    only: Option<&str>,
) -> rusqlite::Result<HashMap<String, Counts>> {
    let mut out: HashMap<String, Counts> = HashMap::new();
    let filter = |col: &str| match only {
        Some(_) => format!(" WHERE {col} = ?1"),
        None => String::new(),
    };
    let mut run = |sql: String, f: &mut dyn FnMut(&mut Counts, &Row) -> rusqlite::Result<()>| {
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = match only {
            Some(id) => stmt.query([id])?,
            None => stmt.query([])?,
        };
        while let Some(r) = rows.next()? {
            let Ok(id) = r.get::<_, String>(0) else {
                continue;
            };
            f(out.entry(id).or_default(), r)?;
        }
        Ok::<_, rusqlite::Error>(())
    };
    if schema.v1_rows {
        for table in ["message", "part"] {
            let sql = if schema.events {
                format!(
                    "SELECT session_id, count(*) FROM {table}{} GROUP BY session_id",
                    filter("session_id")
                )
            } else {
                format!(
                    "SELECT session_id, count(*), max(time_updated), sum(octet_length(data)) FROM {table}{} GROUP BY session_id",
                    filter("session_id")
                )
            };
            let is_message = table == "message";
            run(sql, &mut |c, r| {
                let n: i64 = r.get(1)?;
                if is_message {
                    c.messages = n;
                } else {
                    c.parts = n;
                }
                if !schema.events {
                    c.extra.push(r.get::<_, Option<i64>>(2)?.unwrap_or(0));
                    c.extra.push(r.get::<_, Option<i64>>(3)?.unwrap_or(0));
                }
                Ok(())
            })?;
        }
    }
    if schema.events {
        run(
            format!(
                "SELECT aggregate_id, seq FROM event_sequence{}",
                filter("aggregate_id")
            ),
            &mut |c, r| {
                c.seq = r.get::<_, Option<i64>>(1)?.unwrap_or(0);
                Ok(())
            },
        )?;
    }
    if schema.v2_rows {
        run(
            format!(
                "SELECT session_id, count(*), max(seq), max(time_updated) FROM session_message{} GROUP BY session_id",
                filter("session_id")
            ),
            &mut |c, r| {
                c.v2_rows = r.get(1)?;
                c.extra.push(r.get::<_, Option<i64>>(2)?.unwrap_or(0));
                c.extra.push(r.get::<_, Option<i64>>(3)?.unwrap_or(0));
                Ok(())
            },
        )?;
    }
    Ok(out)
}

/// A hash of a whole row, every column.
fn row_hash(row: &Row, n: usize, into: &mut Vec<u8>) {
    for i in 0..n {
        match row.get_ref(i) {
            Ok(ValueRef::Null) | Err(_) => into.push(0),
            Ok(ValueRef::Integer(v)) => into.extend_from_slice(&v.to_le_bytes()),
            Ok(ValueRef::Real(v)) => into.extend_from_slice(&v.to_le_bytes()),
            Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => {
                into.extend_from_slice(&(t.len() as u64).to_le_bytes());
                into.extend_from_slice(t);
            }
        }
        into.push(0xff);
    }
}

fn signature(row_bytes: &[u8], c: &Counts, updated_ms: i64) -> Signature {
    let mut b = row_bytes.to_vec();
    for v in [c.messages, c.parts, c.seq, c.v2_rows]
        .iter()
        .chain(c.extra.iter())
    {
        b.extend_from_slice(&v.to_le_bytes());
    }
    Signature {
        hash: crate::store::atomic::checksum(&[&b]),
        updated_ms,
    }
}

/// One session table's rows (`only`: that id), with their hashes.
fn session_rows(
    conn: &Connection,
    table: &str,
    only: Option<&str>,
    mut f: impl FnMut(&Row, &[u8]) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let sql = match only {
        Some(_) => format!("SELECT * FROM {table} WHERE id = ?1"),
        None => format!("SELECT * FROM {table}"),
    };
    let mut stmt = conn.prepare(&sql)?;
    let n = stmt.column_count();
    let mut rows = match only {
        Some(id) => stmt.query([id])?,
        None => stmt.query([])?,
    };
    let mut bytes = Vec::new();
    while let Some(r) = rows.next()? {
        bytes.clear();
        bytes.extend_from_slice(table.as_bytes());
        row_hash(r, n, &mut bytes);
        f(r, &bytes)?;
    }
    Ok(())
}

fn get_str(r: &Row, col: &str) -> Option<String> {
    match r.get_ref(col).ok()? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

fn get_i64(r: &Row, col: &str) -> Option<i64> {
    match r.get_ref(col).ok()? {
        ValueRef::Integer(v) => Some(v),
        ValueRef::Real(v) => Some(v as i64),
        _ => None,
    }
}

/// Every session with its signature, or why the database is not one this reader
/// knows.
pub fn list(conn: &Connection) -> rusqlite::Result<Result<Vec<Entry>, String>> {
    let schema = match schema(conn)? {
        Ok(s) => s,
        Err(why) => return Ok(Err(why)),
    };
    let counts = counts(conn, &schema, None)?;
    Ok(Ok(entries(conn, &schema, &counts, None)?))
}

fn entries(
    conn: &Connection,
    schema: &Schema,
    counts: &HashMap<String, Counts>,
    only: Option<&str>,
) -> rusqlite::Result<Vec<Entry>> {
    let mut by_id: HashMap<String, Entry> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    // `session_v2` first: its row wins when an id is in both tables.
    for table in ["session_v2", "session"] {
        let cols = if table == "session" {
            &schema.session
        } else {
            &schema.session_v2
        };
        if cols.is_empty() {
            continue;
        }
        session_rows(conn, table, only, |r, bytes| {
            let Some(id) = get_str(r, "id") else {
                return Ok(());
            };
            if by_id.contains_key(&id) {
                return Ok(());
            }
            let c = counts.get(&id).cloned().unwrap_or_default();
            let entry = Entry {
                id: id.clone(),
                directory: get_str(r, "directory"),
                created_ms: get_i64(r, "time_created"),
                v2: c.v2_rows > 0 || table == "session_v2",
                signature: signature(bytes, &c, get_i64(r, "time_updated").unwrap_or(0)),
            };
            order.push(id.clone());
            by_id.insert(id, entry);
            Ok(())
        })?;
    }
    Ok(order
        .into_iter()
        .filter_map(|id| by_id.remove(&id))
        .collect())
}

/// A session's dump and the signature of the rows it was made from.
pub type Dump = (Vec<u8>, Signature);

/// Session `id`'s rows as JSON Lines, with the signature of what was read (`Ok(None)`:
/// no such session now).
pub fn dump(
    conn: &Connection,
    id: &str,
    v2: bool,
) -> rusqlite::Result<Result<Option<Dump>, String>> {
    let schema = match schema(conn)? {
        Ok(s) => s,
        Err(why) => return Ok(Err(why)),
    };
    let counts = counts(conn, &schema, Some(id))?;
    let Some(entry) = entries(conn, &schema, &counts, Some(id))?.pop() else {
        return Ok(Ok(None));
    };
    let mut out = Vec::new();
    let table = if v2 && !schema.session_v2.is_empty() && row_exists(conn, "session_v2", id)? {
        "session_v2"
    } else {
        "session"
    };
    session_rows(conn, table, Some(id), |r, _| {
        out.extend_from_slice(session_info(r).as_bytes());
        out.push(b'\n');
        Ok(())
    })?;
    if v2 && schema.v2_rows {
        let mut stmt = conn.prepare_cached(
            "SELECT id, type, data FROM session_message WHERE session_id = ?1 ORDER BY seq",
        )?;
        let mut rows = stmt.query([id])?;
        while let Some(r) = rows.next()? {
            let (mid, kind) = (q(&text(r, 0)), q(&text(r, 1)));
            push_line(&mut out, bytes(r, 2), &[("id", &mid), ("type", &kind)]);
        }
    } else if schema.v1_rows {
        // Each message, then its parts (by the `(message_id, id)` index).
        let mut parts = conn.prepare_cached(
            "SELECT id, session_id, data FROM part WHERE message_id = ?1 ORDER BY id",
        )?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, session_id, data FROM message WHERE session_id = ?1
             ORDER BY time_created, id",
        )?;
        let mut rows = stmt.query([id])?;
        while let Some(r) = rows.next()? {
            let mid = text(r, 0);
            let (qmid, qsid) = (q(&mid), q(&text(r, 1)));
            push_line(
                &mut out,
                bytes(r, 2),
                &[("id", &qmid), ("sessionID", &qsid)],
            );
            let mut prows = parts.query([&mid])?;
            while let Some(p) = prows.next()? {
                let (pid, psid) = (q(&text(p, 0)), q(&text(p, 1)));
                let extra = [
                    ("id", pid.as_str()),
                    ("sessionID", &psid),
                    ("messageID", &qmid),
                ];
                push_line(&mut out, bytes(p, 2), &extra);
            }
        }
    }
    Ok(Ok(Some((out, entry.signature))))
}

fn row_exists(conn: &Connection, table: &str, id: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        &format!("SELECT count(*) FROM {table} WHERE id = ?1"),
        [id],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn text(r: &Row, i: usize) -> String {
    match r.get_ref(i) {
        Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => String::from_utf8_lossy(t).into_owned(),
        Ok(ValueRef::Integer(v)) => v.to_string(),
        Ok(ValueRef::Real(v)) => v.to_string(),
        _ => String::new(),
    }
}

fn q(s: &str) -> String {
    crate::json::quote(s)
}

/// A column's bytes (text or blob; anything else as nothing).
fn bytes<'a>(r: &'a Row, i: usize) -> &'a [u8] {
    match r.get_ref(i) {
        Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => t,
        _ => &[],
    }
}

/// One row as a dump line: `{...data, extra}`; a `data` that is not a JSON object is
/// kept as a string under `fen_unparsed_data` (the reader counts the line malformed).
fn push_line(out: &mut Vec<u8>, data: &[u8], extra: &[(&str, &str)]) {
    if !spread_into(out, data, extra) {
        let mut w = ObjectWriter::default();
        for (k, v) in extra {
            w.raw(k, v);
        }
        w.string("fen_unparsed_data", &String::from_utf8_lossy(data));
        out.extend_from_slice(w.finish().as_bytes());
    }
    out.push(b'\n');
}

/// The session row as OpenCode hydrates it (`Session.fromRow`, OC-BIN 1.18.33): its
/// keys in that order, `undefined` ones left out, JSON columns kept as stored.
fn session_info(r: &Row) -> String {
    let mut w = ObjectWriter::default();
    let s = |c: &str| get_str(r, c);
    let json = |c: &str| get_str(r, c).and_then(|t| minify(&t));
    let num = |c: &str| -> Option<String> {
        match r.get_ref(c).ok()? {
            ValueRef::Integer(v) => Some(v.to_string()),
            ValueRef::Real(v) => Some(v.to_string()),
            _ => None,
        }
    };
    if let Some(v) = s("id") {
        w.string("id", &v);
    }
    if let Some(v) = s("slug") {
        w.string("slug", &v);
    }
    if let Some(v) = s("project_id") {
        w.string("projectID", &v);
    }
    if let Some(v) = s("workspace_id") {
        w.string("workspaceID", &v);
    }
    if let Some(v) = s("directory") {
        w.string("directory", &v);
    }
    if let Some(v) = s("path") {
        w.string("path", &v);
    }
    if let Some(v) = s("parent_id") {
        w.string("parentID", &v);
    }
    if let Some(v) = s("title") {
        w.string("title", &v);
    }
    if let Some(v) = s("agent") {
        w.string("agent", &v);
    }
    if let Some(v) = json("model") {
        w.raw("model", &v);
    }
    if let Some(v) = s("version") {
        w.string("version", &v);
    }
    let (a, d, f) = (
        num("summary_additions"),
        num("summary_deletions"),
        num("summary_files"),
    );
    if a.is_some() || d.is_some() || f.is_some() {
        let mut sum = ObjectWriter::default();
        let zero = || "0".to_string();
        sum.raw("additions", &a.unwrap_or_else(zero))
            .raw("deletions", &d.unwrap_or_else(zero))
            .raw("files", &f.unwrap_or_else(zero));
        if let Some(diffs) = json("summary_diffs") {
            sum.raw("diffs", &diffs);
        }
        w.raw("summary", &sum.finish());
    }
    if let Some(v) = num("cost") {
        w.raw("cost", &v);
    }
    if r.get_ref("tokens_input").is_ok() {
        let n = |c: &str| num(c).unwrap_or_else(|| "0".into());
        let mut cache = ObjectWriter::default();
        cache
            .raw("read", &n("tokens_cache_read"))
            .raw("write", &n("tokens_cache_write"));
        let mut tokens = ObjectWriter::default();
        tokens
            .raw("input", &n("tokens_input"))
            .raw("output", &n("tokens_output"))
            .raw("reasoning", &n("tokens_reasoning"))
            .raw("cache", &cache.finish());
        w.raw("tokens", &tokens.finish());
    }
    if let Some(v) = s("share_url") {
        let mut share = ObjectWriter::default();
        share.string("url", &v);
        w.raw("share", &share.finish());
    }
    for (col, key) in [
        ("metadata", "metadata"),
        ("revert", "revert"),
        ("permission", "permission"),
    ] {
        if let Some(v) = json(col).filter(|v| v != "null") {
            w.raw(key, &v);
        }
    }
    let mut time = ObjectWriter::default();
    for (col, key) in [
        ("time_created", "created"),
        ("time_updated", "updated"),
        ("time_compacting", "compacting"),
        ("time_archived", "archived"),
    ] {
        if let Some(v) = num(col) {
            time.raw(key, &v);
        }
    }
    w.raw("time", &time.finish());
    w.finish()
}
