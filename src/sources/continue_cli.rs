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

/// What the parsed file gives: its facts and its history items (each minified, and
/// what the rules read of it).
struct Parsed {
    id: Option<String>,
    cwd: Option<String>,
    title: Option<String>,
    items: Vec<Item>,
}

/// One history item: its text as stored without whitespace, and what the rules need.
struct Item {
    text: String,
    role: Option<String>,
    /// The first user message's preview text (for a user item).
    first_text: Option<String>,
    summary: bool,
    model: Option<String>,
}

fn parse(bytes: &[u8]) -> Result<Parsed, String> {
    use serde::Deserialize;
    let text = std::str::from_utf8(bytes).map_err(|_| "the file is not UTF-8".to_string())?;
    if text.trim().is_empty() {
        return Err("the file is empty (cn may be rewriting it)".into());
    }
    #[derive(Deserialize)]
    struct Doc<'a> {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
        title: Option<String>,
        #[serde(rename = "workspaceDirectory")]
        cwd: Option<String>,
        #[serde(borrow)]
        history: Option<Vec<&'a serde_json::value::RawValue>>,
    }
    let doc: Doc = match serde_json::from_str(text) {
        Ok(d) => d,
        Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() => {
            return Err("the file is not a cn session (not an object with a history list)".into());
        }
        Err(_) => {
            return Err(
                "the file is not valid JSON (cut short, or cn is rewriting it), so cn cannot load it"
                    .into(),
            );
        }
    };
    let history = doc
        .history
        .ok_or("the session has no history list, on which cn's resume fails")?;
    #[derive(Deserialize)]
    struct Msg<'a> {
        role: Option<String>,
        #[serde(borrow)]
        content: Option<&'a serde_json::value::RawValue>,
        usage: Option<Usage>,
    }
    #[derive(Deserialize)]
    struct Usage {
        model: Option<String>,
    }
    #[derive(Deserialize)]
    struct RawItem<'a> {
        #[serde(borrow)]
        message: Option<Msg<'a>>,
        #[serde(rename = "conversationSummary")]
        summary: Option<serde::de::IgnoredAny>,
    }
    let items = history
        .into_iter()
        .map(|raw| {
            let text = crate::sources::json_text::minify_valid(raw.get());
            let item = serde_json::from_str::<RawItem>(raw.get()).ok();
            let summary = item.as_ref().is_some_and(|i| i.summary.is_some())
                || raw.get().contains("\"conversationSummary\"")
                    && serde_json::from_str::<Value>(raw.get())
                        .is_ok_and(|v| v.get("conversationSummary").is_some());
            let message = item.and_then(|i| i.message);
            let role = message.as_ref().and_then(|m| m.role.clone());
            let first_text = (role.as_deref() == Some("user"))
                .then(|| {
                    let c = message.as_ref()?.content?;
                    match serde_json::from_str::<Value>(c.get()).ok()? {
                        Value::String(s) => Some(s),
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
                })
                .flatten();
            let model = message.and_then(|m| m.usage).and_then(|u| u.model);
            Item {
                text,
                role,
                first_text,
                summary,
                model,
            }
        })
        .collect();
    Ok(Parsed {
        id: doc.session_id,
        cwd: doc.cwd.filter(|c| !c.is_empty()),
        title: doc.title.filter(|t| !t.is_empty() && t != DEFAULT_TITLE),
        items,
    })
}

/// `findCompactionIndex`: the first item holding a `conversationSummary`.
fn compaction_index(items: &[Item]) -> Option<usize> {
    items.iter().position(|i| i.summary)
}

/// The first user message's text, as `cn ls` previews it.
fn first_user_text(items: &[Item]) -> Option<String> {
    items
        .iter()
        .find(|i| i.role.as_deref() == Some("user"))
        .and_then(|i| i.first_text.clone())
}

/// A file's reading: its facts and items, or why cn cannot load it.
type Reading = std::sync::Arc<Result<Parsed, String>>;

/// Reader of one `cn` session file: the whole file is read at each look (it is
/// rewritten, never appended to), so `feed` consumes nothing and the file is the tail.
/// The file's reading is kept for the next question about the same bytes (the
/// listing, `conversation.json` and search ask one after another).
#[derive(Default)]
pub struct ContinueReader {
    parsed: std::sync::Mutex<Option<(u64, Reading)>>,
}

impl ContinueReader {
    pub fn new() -> ContinueReader {
        ContinueReader::default()
    }

    fn parsed(&self, tail: &[u8]) -> Reading {
        let key = crate::store::atomic::checksum(&[tail]);
        let mut kept = self.parsed.lock().unwrap();
        if let Some((k, p)) = kept.as_ref()
            && *k == key
        {
            return p.clone();
        }
        let p = std::sync::Arc::new(parse(tail));
        *kept = Some((key, p.clone()));
        p
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
        match self.parsed(tail).as_ref() {
            Err(why) => {
                s.malformed_lines = 1;
                s.not_resumable_reason = Some(why.clone());
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
                    for i in &p.items[from..] {
                        s.messages += 1;
                        let role = i.role.as_deref().unwrap_or("message");
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
        let parsed = self.parsed(tail);
        let Ok(p) = parsed.as_ref() else {
            return Vec::new();
        };
        if p.id.is_none() {
            return Vec::new();
        }
        let from = compaction_index(&p.items).unwrap_or(0);
        p.items
            .iter()
            .enumerate()
            .filter(|(i, _)| history || *i >= from)
            .map(|(i, item)| MessageRef {
                pieces: vec![Piece::Text(item.text.clone())],
                entry: Some(i.to_string()),
                timestamp: None,
                in_conversation: i >= from,
                injected: false,
                summary: item.summary,
                model: item.model.clone().map(|model| crate::neutral::ModelRef {
                    provider: None,
                    api: None,
                    model,
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
