//! Reader of one Cursor composer's dump (`rows.rs`, after `mod.rs`'s workspace
//! header): the composer, then its bubbles in Cursor's order. `conversation.json` is
//! the bubbles the composer lists that hold something (text, thinking, a tool call),
//! in order: best effort (Cursor is closed and rebuilds the model's context on its
//! servers).

use crate::json::RawObject;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Bubble {
    start: u64,
    len: u64,
    role: String,
    id: Option<String>,
    ts: Option<String>,
    listed: bool,
    text: Option<String>,
}

#[derive(Default)]
pub struct CursorIdeReader {
    lines: u64,
    malformed: u64,
    folder: Option<String>,
    bubble_dir: Option<String>,
    id: Option<String>,
    title: Option<String>,
    created: Option<String>,
    updated: Option<String>,
    archived: bool,
    unreadable: Option<String>,
    bubbles: Vec<Bubble>,
}

fn s(o: &RawObject, k: &str) -> Option<String> {
    o.get(k).and_then(crate::json::as_string)
}

/// A time Cursor stores as epoch milliseconds or an RFC 3339 string.
pub fn time_of(v: Option<&serde_json::value::RawValue>) -> Option<String> {
    let v = v?;
    if let Ok(ms) = v.get().parse::<f64>() {
        return chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms as i64)
            .map(crate::store::naming::timestamp);
    }
    let t = chrono::DateTime::parse_from_rfc3339(&crate::json::as_string(v)?).ok()?;
    Some(crate::store::naming::timestamp(
        t.with_timezone(&chrono::Utc),
    ))
}

/// A bubble's role: `type` 1 user, 2 assistant (older: "user", "ai").
pub fn role_of(o: &RawObject) -> Option<&'static str> {
    let t = o.get("type")?.get();
    match t {
        "1" | "\"user\"" => Some("user"),
        "2" | "\"ai\"" | "\"assistant\"" => Some("assistant"),
        _ => None,
    }
}

fn has_content(o: &RawObject) -> bool {
    let filled = |k: &str| {
        o.get(k)
            .is_some_and(|v| !matches!(v.get(), "null" | "\"\"" | "{}" | "[]"))
    };
    filled("text") || filled("toolFormerData") || filled("thinking")
}

impl CursorIdeReader {
    pub fn new() -> Self {
        CursorIdeReader::default()
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        self.lines += 1;
        let Some(o) = std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| RawObject::parse(t).ok())
        else {
            self.malformed += 1;
            return;
        };
        if s(&o, "fen_file").is_some() {
            self.folder = s(&o, "folder");
            return;
        }
        if let Some(why) = s(&o, "fen_unreadable") {
            self.unreadable = Some(why);
            return;
        }
        let Some(key) = s(&o, "fen_key") else {
            self.malformed += 1;
            return;
        };
        if key.starts_with("composerData:") && !key.contains('#') {
            self.id =
                s(&o, "composerId").or_else(|| Some(key["composerData:".len()..].to_string()));
            self.title = s(&o, "name").filter(|n| !n.is_empty());
            self.created = time_of(o.get("createdAt"));
            self.updated = time_of(o.get("lastUpdatedAt"));
            self.archived = o.get("isArchived").is_some_and(|v| v.get() == "true");
            return;
        }
        let Some(role) = role_of(&o) else {
            return;
        };
        if self.bubble_dir.is_none() {
            self.bubble_dir = s(&o, "workspaceProjectDir")
                .filter(|d| !d.is_empty())
                .or_else(|| {
                    let uris: Vec<String> = o
                        .get("workspaceUris")
                        .and_then(|u| serde_json::from_str(u.get()).ok())
                        .unwrap_or_default();
                    uris.iter()
                        .find_map(|u| crate::sources::vscode_state::file_uri_path(u))
                });
        }
        if !has_content(&o) {
            return;
        }
        self.bubbles.push(Bubble {
            start,
            len: bytes.len() as u64,
            role: role.to_string(),
            id: s(&o, "bubbleId"),
            ts: time_of(o.get("createdAt")).or_else(|| time_of(o.get("timestamp"))),
            listed: o.get("fen_unlisted").is_none(),
            text: (role == "user").then(|| s(&o, "text")).flatten(),
        });
    }

    fn conversation_bubbles(&self) -> impl Iterator<Item = &Bubble> {
        self.bubbles.iter().filter(|b| b.listed)
    }

    fn not_resumable(&self) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(format!("Cursor's database cannot be read now: {why}"));
        }
        if !self.conversation_bubbles().any(|b| b.role == "user") {
            return Some("the composer holds no message".into());
        }
        None
    }
}

fn pieces(b: &Bubble) -> MessagePieces {
    vec![Piece::Range {
        start: b.start,
        len: b.len,
    }]
}

impl ForeignReader for CursorIdeReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            self.line(offset + consumed as u64, &bytes[consumed..consumed + nl]);
            consumed += nl + 1;
        }
        consumed as u64
    }

    fn follows_appends(&self) -> bool {
        false
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let reason = self.not_resumable();
        let conv: Vec<&Bubble> = if reason.is_none() {
            self.conversation_bubbles().collect()
        } else {
            Vec::new()
        };
        let mut roles = BTreeMap::new();
        for b in &conv {
            *roles.entry(b.role.clone()).or_insert(0) += 1;
        }
        let first = self
            .bubbles
            .iter()
            .find_map(|b| b.text.clone())
            .map(|t| crate::store::index::one_line(&t, 200));
        ForeignSummary {
            id: self.id.clone().unwrap_or_default(),
            cwd: self.folder.clone().or_else(|| self.bubble_dir.clone()),
            title: self.title.clone().or_else(|| first.clone()),
            preview: first,
            created_at: self.created.clone(),
            updated_at: self
                .updated
                .clone()
                .or_else(|| self.bubbles.iter().filter_map(|b| b.ts.clone()).max()),
            listed: !self.archived,
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages: conv.len() as u64,
            roles,
            compactions: 0,
            archived: self.archived,
            parent_id: None,
            resume_rules: Some("best effort".into()),
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        if self.not_resumable().is_some() {
            return Vec::new();
        }
        self.conversation_bubbles().map(pieces).collect()
    }

    fn messages(&self, _tail: &[u8], _history: bool) -> Vec<MessageRef> {
        let ok = self.not_resumable().is_none();
        self.bubbles
            .iter()
            .map(|b| MessageRef {
                pieces: pieces(b),
                entry: b.id.clone(),
                timestamp: b.ts.clone(),
                in_conversation: ok && b.listed,
                ..MessageRef::default()
            })
            .collect()
    }
}
