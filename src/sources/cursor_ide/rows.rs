//! Cursor's global `state.vscdb` (`cursorDiskKV`: `key TEXT, value BLOB`) as session
//! rows (`db_units.rs`): one session per `composerData:<composerId>` key, dumped as
//! that value then its bubbles (`bubbleId:<composerId>:<bubbleId>`) in the order the
//! composer's `fullConversationHeadersOnly` lists them, any other bubble of it after
//! (marked `fen_unlisted`); a composer of the versions before bubble keys holds its
//! messages inline (`conversation`, or `tabs[].bubbles`): those are its bubble lines.
//! Each line is the stored JSON with the key it came from spread in
//! (`"fen_key": KEY`); nothing else is re-encoded.

use crate::sources::db_units::{RowDump, RowEntry, SessionRows};
use crate::sources::json_text::{minify, spread};
use crate::sources::units::Signature;
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use serde_json::Value;

pub struct CursorRows;

const COMPOSER: &str = "composerData:";

fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

/// Keys from `prefix` up to the next prefix (`:` + 1 is `;`): one range of the index.
fn range(prefix: &str) -> (String, String) {
    let upper = format!("{};", prefix.strip_suffix(':').unwrap_or(prefix));
    (prefix.to_string(), upper)
}

fn has_table(conn: &Connection) -> rusqlite::Result<bool> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'cursorDiskKV'",
        [],
        |r| r.get(0),
    )?;
    Ok(n > 0)
}

/// The composer's bubbles: (key, stored value), by key.
fn bubbles(conn: &Connection, id: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let (lo, hi) = range(&format!("bubbleId:{id}:"));
    let mut stmt =
        conn.prepare_cached("SELECT key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2")?;
    let mut rows = stmt.query([&lo, &hi])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        if let (Some(k), Some(v)) = (text(r.get_ref(0)?), text(r.get_ref(1)?)) {
            out.push((k, v));
        }
    }
    Ok(out)
}

fn signature_of(composer: &str, bubbles: &[(String, String)], updated_ms: i64) -> Signature {
    let mut parts: Vec<&[u8]> = vec![composer.as_bytes()];
    for (k, v) in bubbles {
        parts.push(k.as_bytes());
        parts.push(v.as_bytes());
    }
    Signature {
        hash: crate::store::atomic::checksum(&parts),
        updated_ms,
    }
}

fn updated_ms(composer: &Value) -> i64 {
    let t = |k: &str| composer.get(k).and_then(Value::as_f64).map(|f| f as i64);
    t("lastUpdatedAt").or_else(|| t("createdAt")).unwrap_or(0)
}

/// One dump line: `value` (a JSON object) with `fen_key` spread in.
fn line(out: &mut Vec<u8>, key: &str, value: &str, extra: Option<(&str, String)>) {
    let mut fields = vec![("fen_key", crate::json::quote(key))];
    if let Some(e) = extra {
        fields.push(e);
    }
    let object = minify(value).unwrap_or_else(|| value.to_string());
    match spread(&object, &fields) {
        Some(s) => out.extend_from_slice(s.as_bytes()),
        None => {
            let mut w = crate::sources::json_text::ObjectWriter::default();
            w.string("fen_key", key).string("fen_unparsed_value", value);
            out.extend_from_slice(w.finish().as_bytes());
        }
    }
    out.push(b'\n');
}

impl SessionRows for CursorRows {
    fn agent(&self) -> &'static str {
        "cursor-ide"
    }

    fn list(&self, conn: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>> {
        if !has_table(conn)? {
            return Ok(Err(
                "not Cursor's state database: it has no cursorDiskKV table".into(),
            ));
        }
        let (lo, hi) = range(COMPOSER);
        let mut stmt =
            conn.prepare("SELECT key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2")?;
        let mut rows = stmt.query([&lo, &hi])?;
        let mut composers = Vec::new();
        while let Some(r) = rows.next()? {
            if let (Some(k), Some(v)) = (text(r.get_ref(0)?), text(r.get_ref(1)?)) {
                composers.push((k, v));
            }
        }
        let mut out = Vec::new();
        for (key, value) in composers {
            let id = key[COMPOSER.len()..].to_string();
            let parsed: Value = serde_json::from_str(&value).unwrap_or(Value::Null);
            // A composer never used (no message, no bubble) is not a session.
            let b = bubbles(conn, &id)?;
            let inline = parsed
                .get("conversation")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty());
            if b.is_empty() && !inline {
                continue;
            }
            out.push(RowEntry {
                signature: signature_of(&value, &b, updated_ms(&parsed)),
                id,
                cwd: None,
            });
        }
        Ok(Ok(out))
    }

    fn dump(
        &self,
        conn: &Connection,
        id: &str,
    ) -> rusqlite::Result<Result<Option<RowDump>, String>> {
        if !has_table(conn)? {
            return Ok(Err(
                "not Cursor's state database: it has no cursorDiskKV table".into(),
            ));
        }
        let key = format!("{COMPOSER}{id}");
        let value: Option<String> = conn
            .query_row(
                "SELECT value FROM cursorDiskKV WHERE key = ?1",
                [&key],
                |r| Ok(text(r.get_ref(0)?)),
            )
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        let Some(value) = value else {
            return Ok(Ok(None));
        };
        let parsed: Value = serde_json::from_str(&value).unwrap_or(Value::Null);
        let b = bubbles(conn, id)?;
        let mut out = Vec::new();
        line(&mut out, &key, &value, None);
        // Inline messages of older composers.
        for (i, m) in parsed
            .get("conversation")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            line(
                &mut out,
                &format!("{key}#conversation/{i}"),
                &m.to_string(),
                None,
            );
        }
        let order: Vec<String> = parsed
            .get("fullConversationHeadersOnly")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|h| {
                h.get("bubbleId")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect();
        let by_id: std::collections::HashMap<&str, (&str, &str)> = b
            .iter()
            .map(|(k, v)| (k.rsplit(':').next().unwrap_or(""), (k.as_str(), v.as_str())))
            .collect();
        let mut listed = std::collections::HashSet::new();
        for bid in &order {
            if let Some((k, v)) = by_id.get(bid.as_str()) {
                line(&mut out, k, v, None);
                listed.insert(*k);
            }
        }
        for (k, v) in &b {
            if !listed.contains(k.as_str()) {
                line(&mut out, k, v, Some(("fen_unlisted", "true".into())));
            }
        }
        Ok(Ok(Some((
            out,
            signature_of(&value, &b, updated_ms(&parsed)),
        ))))
    }

    fn identity_line(&self, entry: &RowEntry) -> String {
        let mut w = crate::sources::json_text::ObjectWriter::default();
        w.string("fen_key", &format!("{COMPOSER}{}", entry.id))
            .string("composerId", &entry.id);
        w.finish()
    }
}
