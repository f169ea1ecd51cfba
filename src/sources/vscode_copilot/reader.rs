//! Reader of one VS Code chat session's dump (`mod.rs`): the workspace header, the
//! session header, then a user line and (once answered) an assistant line per
//! request. `conversation.json` is every turn in order: the history VS Code hands
//! Copilot Chat when the session goes on (its rebuild of the model's messages from
//! them, `toolCallRounds` and all, is Copilot's own and not public in whole:
//! `resume_rules: "best effort"`).

use crate::json::RawObject;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Turn {
    start: u64,
    len: u64,
    role: String,
    request_id: Option<String>,
    ts: Option<i64>,
    /// The user's text (user turns), for the preview and title.
    text: Option<String>,
}

#[derive(Default)]
pub struct ChatReader {
    lines: u64,
    malformed: u64,
    folder: Option<String>,
    session_id: Option<String>,
    title: Option<String>,
    created: Option<i64>,
    unreadable: Option<String>,
    turns: Vec<Turn>,
}

fn ms(o: &RawObject, k: &str) -> Option<i64> {
    o.get(k)?
        .get()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(|f| f as i64)
}

fn s(o: &RawObject, k: &str) -> Option<String> {
    o.get(k).and_then(crate::json::as_string)
}

fn rfc3339_ms(ms: i64) -> Option<String> {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms).map(crate::store::naming::timestamp)
}

impl ChatReader {
    pub fn new() -> Self {
        ChatReader::default()
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
        if let Some(name) = s(&o, "fen_file") {
            if name == "workspace.json" {
                self.folder = s(&o, "folder");
                return;
            }
            if let Some(why) = s(&o, "fen_unreadable") {
                self.unreadable = Some(format!("{name}: {why}"));
            }
            self.session_id =
                s(&o, "sessionId").or_else(|| name.rsplit_once('.').map(|(id, _)| id.to_string()));
            self.title = s(&o, "customTitle");
            self.created = ms(&o, "creationDate");
            return;
        }
        let Some(role) = s(&o, "role") else {
            self.malformed += 1;
            return;
        };
        let text = (role == "user")
            .then(|| {
                o.get("message")
                    .and_then(|m| RawObject::parse(m.get()).ok())
                    .and_then(|m| s(&m, "text"))
            })
            .flatten();
        self.turns.push(Turn {
            start,
            len: bytes.len() as u64,
            role,
            request_id: s(&o, "requestId"),
            ts: ms(&o, "timestamp"),
            text,
        });
    }

    fn not_resumable(&self) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(format!("VS Code cannot load the session: {why}"));
        }
        if self.session_id.is_none() {
            return Some("no session file".into());
        }
        if !self.turns.iter().any(|t| t.role == "user") {
            return Some("the session holds no request".into());
        }
        None
    }
}

fn pieces(t: &Turn) -> MessagePieces {
    vec![Piece::Range {
        start: t.start,
        len: t.len,
    }]
}

impl ForeignReader for ChatReader {
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
        let conversation: &[Turn] = if reason.is_none() { &self.turns } else { &[] };
        let mut roles = BTreeMap::new();
        for t in conversation {
            *roles.entry(t.role.clone()).or_insert(0) += 1;
        }
        let first = self
            .turns
            .iter()
            .find_map(|t| t.text.clone())
            .map(|t| crate::store::index::one_line(&t, 200));
        ForeignSummary {
            id: self.session_id.clone().unwrap_or_default(),
            cwd: self.folder.clone(),
            // VS Code's list shows the custom title, else the first request.
            title: self.title.clone().or_else(|| first.clone()),
            preview: first,
            created_at: self.created.and_then(rfc3339_ms),
            updated_at: self
                .turns
                .iter()
                .filter_map(|t| t.ts)
                .max()
                .or(self.created)
                .and_then(rfc3339_ms),
            listed: true,
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages: conversation.len() as u64,
            roles,
            compactions: 0,
            archived: false,
            parent_id: None,
            resume_rules: Some("best effort".into()),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        if self.not_resumable().is_some() {
            return Vec::new();
        }
        self.turns.iter().map(pieces).collect()
    }

    fn messages(&self, _tail: &[u8], _history: bool) -> Vec<MessageRef> {
        let ok = self.not_resumable().is_none();
        self.turns
            .iter()
            .map(|t| MessageRef {
                pieces: pieces(t),
                entry: t.request_id.clone(),
                timestamp: t.ts.and_then(rfc3339_ms),
                in_conversation: ok,
                ..MessageRef::default()
            })
            .collect()
    }
}
