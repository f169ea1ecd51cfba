//! Zed's `threads/threads.db` (zed-industries/zed `crates/agent/src/db.rs`): one
//! table, `threads(id, summary, updated_at, data_type, data, parent_id, folder_paths,
//! folder_paths_order, created_at)`, each row one whole thread: `data` is the
//! thread's JSON (`DbThread` with `"version": "0.3.0"`), zstd-compressed when
//! `data_type` is `zstd` (what Zed writes), as text when `json` (older rows). Threads
//! of the first agent (`legacy_thread.rs`: versions `0.1.0`, `0.2.0`, or none) are
//! upgraded as `DbThread::upgrade_from_agent_1` does, with stable ids for the user
//! messages it would name at random.
//!
//! One thread's dump: a header line (the row's columns, `folder_paths` as the ordered
//! list of paths, and the thread without its messages and UI state), then for each of
//! its messages `{"zed_message": <the message as stored>}` followed by the messages
//! Zed sends for it (`Message::to_request`: a user message; an assistant message and
//! a user message of its tool results; `Resume` as "Continue where you left off"),
//! each `{"role", "content", "of": <message index>}` with Zed's `MessageContent`
//! items.

use crate::sources::db_units::{RowDump, RowEntry, SessionRows, columns, has_all, row_hash};
use crate::sources::json_text::ObjectWriter;
use crate::sources::units::Signature;
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use serde_json::{Map, Value, json};

/// The thread version Zed writes now.
pub const CURRENT_VERSION: &str = "0.3.0";

/// A thread's JSON larger than this is not decompressed (a damaged or hostile row).
const MAX_THREAD_BYTES: u64 = 512 << 20;

/// What the table's columns allow.
struct Schema {
    parent: bool,
    folders: bool,
    order: bool,
    created: bool,
}

fn schema(conn: &Connection) -> rusqlite::Result<Result<Schema, String>> {
    let cols = columns(conn, "threads")?;
    if !has_all(&cols, &["id", "summary", "updated_at", "data_type", "data"]) {
        return Ok(Err(
            "unknown schema: no threads table with id, summary, updated_at, data_type and data"
                .into(),
        ));
    }
    let has = |c: &str| cols.iter().any(|x| x == c);
    Ok(Ok(Schema {
        parent: has("parent_id"),
        folders: has("folder_paths"),
        order: has("folder_paths_order"),
        created: has("created_at"),
    }))
}

fn select(schema: &Schema, data: bool) -> String {
    let opt = |present: bool, col: &str| {
        if present {
            col.to_string()
        } else {
            format!("NULL AS {col}")
        }
    };
    format!(
        "SELECT id, summary, updated_at, data_type, {}, {}, {}, {}, {} FROM threads",
        if data { "data" } else { "length(data)" },
        opt(schema.parent, "parent_id"),
        opt(schema.folders, "folder_paths"),
        opt(schema.order, "folder_paths_order"),
        opt(schema.created, "created_at"),
    )
}

fn text(r: &rusqlite::Row, i: usize) -> Option<String> {
    match r.get_ref(i).ok()? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

/// `PathList::deserialize` then `ordered_paths`: the folders in the order the user
/// opened them.
pub fn ordered_paths(paths: &str, order: &str) -> Vec<String> {
    let mut list: Vec<String> = if paths.is_empty() {
        Vec::new()
    } else {
        paths.split('\n').map(str::to_string).collect()
    };
    let mut idx: Vec<usize> = order.split(',').filter_map(|s| s.parse().ok()).collect();
    if !list.is_sorted() || idx.len() != list.len() {
        list.sort();
        idx = (0..list.len()).collect();
    }
    let mut pairs: Vec<(usize, String)> = idx.into_iter().zip(list).collect();
    pairs.sort_by_key(|(i, _)| *i);
    pairs.into_iter().map(|(_, p)| p).collect()
}

fn entry_of(r: &rusqlite::Row) -> Option<RowEntry> {
    let id = text(r, 0)?;
    let mut bytes = Vec::new();
    row_hash(r, 9, &mut bytes);
    let updated = text(r, 2)
        .and_then(|t| crate::sources::db_units::sqlite_time_ms(&t))
        .unwrap_or(0);
    let folders = ordered_paths(
        text(r, 6).as_deref().unwrap_or(""),
        text(r, 7).as_deref().unwrap_or(""),
    );
    Some(RowEntry {
        id,
        cwd: folders.into_iter().next(),
        signature: Signature {
            hash: crate::store::atomic::checksum(&[&bytes]),
            updated_ms: updated,
        },
    })
}

/// A thread's JSON from its `data` column.
fn thread_json(data_type: &str, data: &[u8]) -> Result<Vec<u8>, String> {
    match data_type {
        "zstd" => {
            use std::io::Read;
            let mut out = Vec::new();
            let decoder = zstd::stream::read::Decoder::new(data)
                .map_err(|e| format!("zstd data cannot be read: {e}"))?;
            decoder
                .take(MAX_THREAD_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("zstd data is damaged: {e}"))?;
            if out.len() as u64 > MAX_THREAD_BYTES {
                return Err(format!(
                    "the thread is larger than {} MiB",
                    MAX_THREAD_BYTES >> 20
                ));
            }
            Ok(out)
        }
        "json" => Ok(data.to_vec()),
        other => Err(format!(
            "unknown data_type {other:?}: Zed fails with \"Unknown data type\""
        )),
    }
}

/// Zed's `Role` in the first agent's messages.
fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// `SerializedThread::from_json`: the first agent's thread as version 0.2.0.
fn legacy_to_0_2(doc: Value) -> Result<Value, String> {
    let version = doc.get("version").cloned();
    match version {
        None => {
            // `LegacySerializedThread`: each message's `text` becomes one segment.
            let mut doc = doc;
            let messages = doc
                .get("messages")
                .and_then(Value::as_array)
                .cloned()
                .ok_or("a thread without messages")?;
            let upgraded: Vec<Value> = messages
                .into_iter()
                .map(|m| {
                    json!({
                        "id": m.get("id").cloned().unwrap_or(Value::Null),
                        "role": m.get("role").cloned().unwrap_or(Value::Null),
                        "segments": [{"type": "text", "text": m.get("text").cloned().unwrap_or(json!(""))}],
                        "tool_uses": m.get("tool_uses").cloned().unwrap_or(json!([])),
                        "tool_results": m.get("tool_results").cloned().unwrap_or(json!([])),
                    })
                })
                .collect();
            doc["messages"] = Value::Array(upgraded);
            doc["version"] = json!("0.2.0");
            Ok(doc)
        }
        Some(Value::String(v)) if v == "0.1.0" => {
            // A user message of tool results is folded into the assistant's before.
            let mut doc = doc;
            let messages = doc
                .get("messages")
                .and_then(Value::as_array)
                .cloned()
                .ok_or("a thread without messages")?;
            let mut out: Vec<Value> = Vec::new();
            for m in messages {
                let has_results = m
                    .get("tool_results")
                    .and_then(Value::as_array)
                    .is_some_and(|r| !r.is_empty());
                if role(&m) == "user"
                    && has_results
                    && let Some(last) = out.last_mut()
                {
                    last["tool_results"] = m["tool_results"].clone();
                    continue;
                }
                out.push(m);
            }
            doc["messages"] = Value::Array(out);
            doc["version"] = json!("0.2.0");
            Ok(doc)
        }
        Some(Value::String(v)) if v == "0.2.0" => Ok(doc),
        Some(v) => Err(format!(
            "unrecognized serialized thread version {v}: Zed fails to load the thread"
        )),
    }
}

/// `DbThread::upgrade_from_agent_1`, with user message ids `legacy-<index>` where
/// Zed makes random ones.
fn upgrade_from_agent_1(doc: Value) -> Result<Value, String> {
    let doc = legacy_to_0_2(doc)?;
    let messages = doc
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("a thread without messages")?;
    let request_usage = doc
        .get("request_token_usage")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut usage = Map::new();
    let mut last_user: Option<String> = None;
    for (ix, msg) in messages.iter().enumerate() {
        let segments = msg
            .get("segments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        match role(msg) {
            "user" => {
                let mut content = Vec::new();
                for s in &segments {
                    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
                    if ty == "text" || ty == "thinking" {
                        content.push(json!({"Text": s.get("text").cloned().unwrap_or(json!(""))}));
                    }
                }
                let context = msg.get("context").and_then(Value::as_str).unwrap_or("");
                if content.is_empty() && !context.is_empty() {
                    content.push(json!({"Text": context}));
                }
                let id = format!("legacy-{ix}");
                last_user = Some(id.clone());
                out.push(json!({"User": {"id": id, "content": content}}));
            }
            "assistant" => {
                let mut content = Vec::new();
                for s in &segments {
                    match s.get("type").and_then(Value::as_str).unwrap_or("") {
                        "text" => content.push(json!({"Text": s.get("text").cloned().unwrap_or(json!(""))})),
                        "thinking" => content.push(json!({"Thinking": {
                            "text": s.get("text").cloned().unwrap_or(json!("")),
                            "signature": s.get("signature").cloned().unwrap_or(Value::Null),
                        }})),
                        "RedactedThinking" => content.push(json!({"RedactedThinking": s.get("data").cloned().unwrap_or(json!(""))})),
                        _ => {}
                    }
                }
                let mut names = std::collections::HashMap::new();
                for u in msg
                    .get("tool_uses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let id = u.get("id").cloned().unwrap_or(Value::Null);
                    let name = u.get("name").cloned().unwrap_or(json!(""));
                    names.insert(id.to_string(), name.clone());
                    let input = u.get("input").cloned().unwrap_or(Value::Null);
                    content.push(json!({"ToolUse": {
                        "id": id, "name": name, "raw_input": input.to_string(),
                        "input": input, "is_input_complete": true, "thought_signature": null,
                    }}));
                }
                let mut results = Map::new();
                for r in msg
                    .get("tool_results")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let id = r.get("tool_use_id").cloned().unwrap_or(Value::Null);
                    let name = names.remove(&id.to_string()).unwrap_or(json!("unknown"));
                    let key = id.as_str().unwrap_or_default().to_string();
                    results.insert(
                        key,
                        json!({
                            "tool_use_id": id, "tool_name": name,
                            "is_error": r.get("is_error").cloned().unwrap_or(json!(false)),
                            "content": r.get("content").cloned().unwrap_or(json!("")),
                            "output": r.get("output").cloned().unwrap_or(Value::Null),
                        }),
                    );
                }
                if let Some(user) = &last_user
                    && let Some(u) = request_usage.get(ix)
                {
                    usage.insert(user.clone(), u.clone());
                }
                out.push(json!({"Agent": {"content": content, "tool_results": results, "reasoning_details": null}}));
            }
            // System messages are not kept by the new agent.
            _ => {}
        }
    }
    let mut thread = Map::new();
    thread.insert(
        "title".into(),
        doc.get("summary").cloned().unwrap_or(json!("")),
    );
    thread.insert("messages".into(), Value::Array(out));
    for key in [
        "updated_at",
        "initial_project_snapshot",
        "cumulative_token_usage",
        "model",
        "profile",
    ] {
        if let Some(v) = doc.get(key) {
            thread.insert(key.into(), v.clone());
        }
    }
    if let Some(Value::Object(state)) = doc.get("detailed_summary_state")
        && let Some(text) = state.get("Generated").and_then(|g| g.get("text"))
    {
        thread.insert("detailed_summary".into(), text.clone());
    }
    thread.insert("request_token_usage".into(), Value::Object(usage));
    thread.insert("version".into(), json!(CURRENT_VERSION));
    Ok(Value::Object(thread))
}

/// `LanguageModelToolResultContent` as a request carries it: text or an image (the
/// stored forms are several; Zed's own deserializer accepts them all).
fn result_content(v: &Value) -> Value {
    match v {
        Value::String(s) => json!({"Text": s}),
        Value::Object(o) => {
            let get = |k: &str| {
                o.iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case(k))
                    .map(|(_, v)| v)
            };
            if let Some(t) = get("text").filter(|t| t.is_string()) {
                return json!({"Text": t});
            }
            if let Some(img) = get("image") {
                return json!({"Image": img});
            }
            if o.contains_key("source") {
                return json!({"Image": v});
            }
            json!({"Text": v.to_string()})
        }
        Value::Array(items) => items
            .first()
            .map(result_content)
            .unwrap_or(json!({"Text": ""})),
        other => json!({"Text": other.to_string()}),
    }
}

/// `Message::to_request` for one stored message: the request messages Zed sends.
fn to_request(message: &Value) -> Vec<Value> {
    if message.as_str() == Some("Resume") {
        return vec![json!({"role": "user", "content": [{"Text": "Continue where you left off"}]})];
    }
    if let Some(user) = message.get("User") {
        let mut content = Vec::new();
        let mut context = Vec::new();
        for c in user
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(t) = c.get("Text") {
                content.push(json!({"Text": t}));
            } else if let Some(img) = c.get("Image") {
                content.push(json!({"Image": img}));
            } else if let Some(m) = c.get("Mention") {
                // The mention's link in the text, its content in the context block.
                let uri = m.get("uri").map(Value::to_string).unwrap_or_default();
                content.push(json!({"Text": uri}));
                if let Some(body) = m.get("content").and_then(Value::as_str)
                    && !body.is_empty()
                {
                    context.push(body.to_string());
                }
            }
        }
        if content.is_empty() {
            return Vec::new();
        }
        if !context.is_empty() {
            content.push(json!({"Text": "<context>\nThe following items were attached by the user. They are up-to-date and don't need to be re-read.\n\n"}));
            for c in context {
                content.push(json!({"Text": c}));
            }
            content.push(json!({"Text": "</context>"}));
        }
        return vec![json!({"role": "user", "content": content})];
    }
    let Some(agent) = message.get("Agent") else {
        return Vec::new();
    };
    let results = agent.get("tool_results").and_then(Value::as_object);
    let mut assistant = Vec::new();
    for c in agent
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = c.get("Text") {
            assistant.push(json!({"Text": t}));
        } else if let Some(t) = c.get("Thinking") {
            assistant.push(json!({"Thinking": t}));
        } else if let Some(t) = c.get("RedactedThinking") {
            assistant.push(json!({"RedactedThinking": t}));
        } else if let Some(u) = c.get("ToolUse") {
            // Only a call that has its result is sent.
            let id = u.get("id").and_then(Value::as_str).unwrap_or("");
            if results.is_some_and(|r| r.contains_key(id)) {
                assistant.push(json!({"ToolUse": u}));
            }
        } else if let Some(img) = c.get("Image") {
            assistant.push(json!({"Image": img}));
        }
    }
    let mut user = Vec::new();
    for r in results.into_iter().flat_map(|r| r.values()) {
        let mut r = r.clone();
        let content = result_content(r.get("content").unwrap_or(&Value::Null));
        let empty = content.get("Text").and_then(Value::as_str) == Some("");
        r["content"] = if empty {
            json!({"Text": "<Tool returned an empty string>"})
        } else {
            content
        };
        user.push(json!({"ToolResult": r}));
    }
    let mut out = Vec::new();
    if !assistant.is_empty() {
        let mut m = json!({"role": "assistant", "content": assistant});
        if let Some(d) = agent.get("reasoning_details").filter(|d| !d.is_null()) {
            m["reasoning_details"] = d.clone();
        }
        out.push(m);
    }
    if !user.is_empty() {
        out.push(json!({"role": "user", "content": user}));
    }
    out
}

/// The thread's keys that are the UI's own state, not the conversation (left out of
/// the header).
const UI_KEYS: [&str; 5] = [
    "messages",
    "initial_project_snapshot",
    "draft_prompt",
    "ui_scroll_position",
    "sandboxed_terminal_temp_dir",
];

/// A thread's dump from its row and its JSON (or why Zed cannot load it: then the
/// header only, and the reason line).
fn dump_thread(r: &rusqlite::Row, out: &mut Vec<u8>) -> Result<(), String> {
    let id = text(r, 0).unwrap_or_default();
    let data_type = text(r, 3).unwrap_or_default();
    let folders = ordered_paths(
        text(r, 6).as_deref().unwrap_or(""),
        text(r, 7).as_deref().unwrap_or(""),
    );
    let mut header = ObjectWriter::default();
    header.string("id", &id);
    for (i, key) in [
        (1, "summary"),
        (2, "updated_at"),
        (8, "created_at"),
        (5, "parent_id"),
    ] {
        if let Some(v) = text(r, i) {
            header.string(key, &v);
        }
    }
    header.raw(
        "folder_paths",
        &serde_json::to_string(&folders).unwrap_or_else(|_| "[]".into()),
    );
    header.string("data_type", &data_type);
    let data: &[u8] = match r.get_ref(4) {
        Ok(ValueRef::Blob(b)) | Ok(ValueRef::Text(b)) => b,
        _ => &[],
    };
    let parsed = thread_json(&data_type, data).and_then(|bytes| {
        let doc: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the thread's JSON cannot be read: {e}"))?;
        if !doc.is_object() {
            return Err("the thread's JSON is not an object".into());
        }
        let stored_version = doc
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string);
        if stored_version.as_deref() == Some(CURRENT_VERSION) {
            Ok((doc, stored_version))
        } else {
            upgrade_from_agent_1(doc).map(|d| (d, stored_version))
        }
    });
    let (doc, stored_version) = match parsed {
        Ok(p) => p,
        Err(why) => {
            out.extend_from_slice(header.finish().as_bytes());
            out.push(b'\n');
            return Err(why);
        }
    };
    header.raw(
        "stored_version",
        &stored_version.map_or("null".into(), |v| crate::json::quote(&v)),
    );
    // Where the thread was started when the row names no folder (older rows).
    let worktrees: Vec<&str> = doc
        .pointer("/initial_project_snapshot/worktree_snapshots")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|w| w.get("worktree_path").and_then(Value::as_str))
        .collect();
    if !worktrees.is_empty() {
        header.raw(
            "worktree_paths",
            &serde_json::to_string(&worktrees).unwrap_or_default(),
        );
    }
    let mut thread = Map::new();
    if let Value::Object(o) = &doc {
        for (k, v) in o {
            if !UI_KEYS.contains(&k.as_str()) {
                thread.insert(k.clone(), v.clone());
            }
        }
    }
    header.raw("thread", &Value::Object(thread).to_string());
    out.extend_from_slice(header.finish().as_bytes());
    out.push(b'\n');
    let messages = doc
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, m) in messages.iter().enumerate() {
        out.extend_from_slice(json!({"zed_message": m}).to_string().as_bytes());
        out.push(b'\n');
        for mut req in to_request(m) {
            req["of"] = json!(i);
            out.extend_from_slice(req.to_string().as_bytes());
            out.push(b'\n');
        }
    }
    Ok(())
}

/// Zed's threads database.
pub struct ZedRows;

impl SessionRows for ZedRows {
    fn agent(&self) -> &'static str {
        "zed"
    }

    fn list(&self, conn: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>> {
        let schema = match schema(conn)? {
            Ok(s) => s,
            Err(why) => return Ok(Err(why)),
        };
        // The data's length, not the data: a listing reads no thread.
        let mut stmt = conn.prepare(&format!("{} ORDER BY id", select(&schema, false)))?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            if let Some(e) = entry_of(r) {
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
        let signature = {
            let mut stmt = conn.prepare(&format!("{} WHERE id = ?1", select(&schema, false)))?;
            let mut rows = stmt.query([id])?;
            match rows.next()? {
                Some(r) => entry_of(r).map(|e| e.signature),
                None => None,
            }
        };
        let Some(signature) = signature else {
            return Ok(Ok(None));
        };
        let mut stmt = conn.prepare(&format!("{} WHERE id = ?1", select(&schema, true)))?;
        let mut rows = stmt.query([id])?;
        let Some(r) = rows.next()? else {
            return Ok(Ok(None));
        };
        let mut out = Vec::new();
        if let Err(why) = dump_thread(r, &mut out) {
            let mut w = ObjectWriter::default();
            w.string("fen_unreadable", &why);
            out.extend_from_slice(w.finish().as_bytes());
            out.push(b'\n');
        }
        Ok(Ok(Some((out, signature))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_paths_come_back_in_the_order_they_were_opened() {
        assert_eq!(ordered_paths("/a\n/b\n/c", "1,0,2"), ["/b", "/a", "/c"]);
        assert_eq!(ordered_paths("/b\n/a", ""), ["/a", "/b"]);
        assert!(ordered_paths("", "").is_empty());
    }

    #[test]
    fn an_agent_message_is_an_assistant_message_then_its_results() {
        let m = json!({"Agent": {"content": [
            {"Text": "Reading."},
            {"ToolUse": {"id": "t1", "name": "read_file", "raw_input": "{}", "input": {}, "is_input_complete": true}},
            {"ToolUse": {"id": "t2", "name": "never_ran", "raw_input": "{}", "input": {}, "is_input_complete": false}}
        ], "tool_results": {"t1": {"tool_use_id": "t1", "tool_name": "read_file", "is_error": false, "content": "", "output": null}}, "reasoning_details": null}});
        let r = to_request(&m);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0]["role"], "assistant");
        assert_eq!(
            r[0]["content"].as_array().unwrap().len(),
            2,
            "the call without a result is not sent"
        );
        assert_eq!(
            r[1]["content"][0]["ToolResult"]["content"]["Text"],
            "<Tool returned an empty string>"
        );
        assert_eq!(
            to_request(&json!("Resume"))[0]["content"][0]["Text"],
            "Continue where you left off"
        );
        assert!(to_request(&json!({"User": {"id": "u", "content": []}})).is_empty());
    }
}
