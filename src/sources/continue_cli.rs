//! Reader of Continue's CLI (`cn`) sessions (`~/.continue/sessions/<sessionId>.json`,
//! `$CONTINUE_GLOBAL_DIR/sessions/`; `sessions.json` beside them lists them), as
//! `@continuedev/cli` 1.5.47 writes and loads them (its `src/session.ts`,
//! `services/ChatHistoryService.ts`, `compaction.ts`, shipped in the package) and as
//! a real run showed (`tests/agent_continue.rs`).
//!
//! A session is one pretty-printed JSON file `{sessionId, title, workspaceDirectory,
//! history, usage}` that `cn` rewrites whole on every change: any change is read
//! anew. Each `history` item is `{message: {role, content, toolCalls?, usage?},
//! contextItems, toolCallStates?, conversationSummary?}`; a tool's result is kept in
//! the calling item's `toolCallStates[].output`, not as a message. `cn --resume` (the
//! most recently written session) and `cn --fork ID` send the history from the first
//! item holding a `conversationSummary` (a compaction), else all of it, after a fresh
//! system message: `conversation.json` is those items, each as stored (whitespace
//! removed).

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde_json::Value;
use std::path::Path;

/// The title `cn` gives a session it has not named (`DEFAULT_SESSION_TITLE`).
const DEFAULT_TITLE: &str = "Untitled Session";

/// Whether a file of `sessions/` is a session (`<id>.json`, not the `sessions.json`
/// index).
pub fn is_session_file_name(name: &str) -> bool {
    name.ends_with(".json") && name != "sessions.json" && name.len() > ".json".len()
}

/// What the parsed file gives: its facts and its history items (minified).
struct Parsed {
    id: Option<String>,
    cwd: Option<String>,
    title: Option<String>,
    items: Vec<(String, Value)>,
}

fn parse(bytes: &[u8]) -> Result<Parsed, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the file is not UTF-8".to_string())?;
    if text.trim().is_empty() {
        return Err("the file is empty (cn may be rewriting it)".into());
    }
    let v: Value = serde_json::from_str(text).map_err(|_| {
        "the file is not valid JSON (cut short, or cn is rewriting it), so cn cannot load it"
            .to_string()
    })?;
    let obj = v
        .as_object()
        .ok_or("the file is not a cn session (not a JSON object)")?;
    let history = obj
        .get("history")
        .and_then(Value::as_array)
        .ok_or("the session has no history list, on which cn's resume fails")?;
    // Each item as stored, its whitespace removed (strings and numbers kept).
    let raw_items = raw_history(text).unwrap_or_default();
    let items = history
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let text = raw_items
                .get(i)
                .and_then(|r| crate::sources::json_text::minify(r))
                .unwrap_or_else(|| item.to_string());
            (text, item.clone())
        })
        .collect();
    let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(Parsed {
        id: s("sessionId"),
        cwd: s("workspaceDirectory").filter(|c| !c.is_empty()),
        title: s("title").filter(|t| !t.is_empty() && t != DEFAULT_TITLE),
        items,
    })
}

/// The `history` items' raw JSON texts, in order.
fn raw_history(text: &str) -> Option<Vec<&str>> {
    let obj = crate::json::RawObject::parse(text).ok()?;
    let history = obj
        .fields
        .iter()
        .rev()
        .find(|(k, _)| k == "history")
        .map(|(_, v)| *v)?;
    let items: Vec<&serde_json::value::RawValue> = serde_json::from_str(history.get()).ok()?;
    Some(items.into_iter().map(|i| i.get()).collect())
}

/// `findCompactionIndex`: the first item holding a `conversationSummary`.
fn compaction_index(items: &[(String, Value)]) -> Option<usize> {
    items
        .iter()
        .position(|(_, v)| v.get("conversationSummary").is_some())
}

/// The first user message's text, as `cn ls` previews it.
fn first_user_text(items: &[(String, Value)]) -> Option<String> {
    let m = items
        .iter()
        .map(|(_, v)| &v["message"])
        .find(|m| m["role"] == "user")?;
    match &m["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .find(|p| p["type"] == "text")
                .and_then(|p| p["text"].as_str())
                .unwrap_or("(multimodal message)")
                .to_string(),
        ),
        _ => None,
    }
}

/// Reader of one `cn` session file: the whole file is read at each look (it is
/// rewritten, never appended to), so `feed` consumes nothing and the file is the tail.
#[derive(Default)]
pub struct ContinueReader;

impl ContinueReader {
    pub fn new() -> ContinueReader {
        ContinueReader
    }
}

impl ForeignReader for ContinueReader {
    fn feed(&mut self, _offset: u64, _bytes: &[u8]) -> u64 {
        0
    }

    fn follows_appends(&self) -> bool {
        false
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let mut s = ForeignSummary::default();
        match parse(tail) {
            Err(why) => {
                s.malformed_lines = 1;
                s.not_resumable_reason = Some(why);
            }
            Ok(p) => {
                s.entries = 1;
                s.id = p.id.clone().unwrap_or_default();
                s.cwd = p.cwd.clone();
                s.title = p.title.clone();
                s.preview = first_user_text(&p.items)
                    .map(|t| t.lines().next().unwrap_or("").trim().to_string())
                    .filter(|t| !t.is_empty());
                s.listed = true;
                let from = compaction_index(&p.items).unwrap_or(0);
                s.compactions = u64::from(compaction_index(&p.items).is_some());
                if p.id.is_none() {
                    s.not_resumable_reason =
                        Some("the session names no sessionId, so cn cannot find it".into());
                } else {
                    s.resumable = true;
                    for (_, v) in &p.items[from..] {
                        s.messages += 1;
                        let role = v["message"]["role"].as_str().unwrap_or("message");
                        *s.roles.entry(role.to_string()).or_insert(0) += 1;
                    }
                }
            }
        }
        s
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let Ok(p) = parse(tail) else {
            return Vec::new();
        };
        if p.id.is_none() {
            return Vec::new();
        }
        let from = compaction_index(&p.items).unwrap_or(0);
        p.items
            .into_iter()
            .enumerate()
            .filter(|(i, _)| history || *i >= from)
            .map(|(i, (text, v))| MessageRef {
                pieces: vec![Piece::Text(text)],
                entry: Some(i.to_string()),
                timestamp: None,
                in_conversation: i >= from,
                injected: false,
                summary: v.get("conversationSummary").is_some(),
                model: v["message"]["usage"]["model"]
                    .as_str()
                    .map(|m| crate::neutral::ModelRef {
                        provider: None,
                        api: None,
                        model: m.to_string(),
                    }),
            })
            .collect()
    }
}

/// What `sessions.json` (beside the session files) says of session `id`: its
/// creation time (RFC 3339) and whether `cn ls` lists it.
pub fn index_entry(sessions_dir: &Path, id: &str) -> Option<Option<String>> {
    let bytes = crate::store::open::read_small(&sessions_dir.join("sessions.json"), 64 << 20)?;
    let list: Vec<Value> = serde_json::from_slice(&bytes).ok()?;
    let e = list.iter().find(|e| e["sessionId"] == id)?;
    let created = match &e["dateCreated"] {
        Value::String(s) => s.parse::<i64>().ok().or_else(|| {
            chrono::DateTime::parse_from_rfc3339(s)
                .ok()
                .map(|t| t.timestamp_millis())
        }),
        Value::Number(n) => n.as_i64(),
        _ => None,
    };
    Some(created.and_then(|ms| chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339())))
}

/// Fills in from `sessions.json` what the session file does not say: its creation
/// time, and whether `cn ls` lists it (it lists the index's entries).
pub fn complete_from_index(path: &Path, s: &mut ForeignSummary) {
    let Some(dir) = path.parent() else { return };
    match index_entry(dir, &s.id) {
        Some(created) => {
            if s.created_at.is_none() {
                s.created_at = created;
            }
        }
        None => s.listed = false,
    }
}

/// The `workspaceDirectory` a session file names near its start (the listing's hint
/// before the file is read whole).
pub fn head_cwd(path: &Path) -> Option<String> {
    use std::io::Read;
    let (file, _) = crate::store::open::open_regular(path).ok()?;
    let mut head = Vec::new();
    file.take(64 * 1024).read_to_end(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head);
    let at = text.find("\"workspaceDirectory\"")?;
    let rest = text[at + "\"workspaceDirectory\"".len()..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let end = rest[1..].find('"').map(|e| e + 2)?;
    serde_json::from_str::<String>(&rest[..end]).ok()
}
