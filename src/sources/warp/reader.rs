//! Reader of one Warp conversation's dump (`db.rs`): the header, then each task's
//! line and its messages. What Warp sends when the conversation goes on is its task
//! list (the server keeps the rest): `conversation.json` is every message the model
//! reads (user and system queries, the agent's output and reasoning, tool calls and
//! results, summaries) in task order, marked "best effort" since the request is
//! assembled server-side.

use crate::sources::db_units::{rfc3339_ms, sqlite_time_ms};
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde_json::Value;
use std::collections::BTreeMap;

/// The message kinds that are part of the conversation.
const KINDS: [&str; 7] = [
    "user_query",
    "system_query",
    "agent_output",
    "agent_reasoning",
    "tool_call",
    "tool_call_result",
    "summarization",
];

struct Msg {
    id: String,
    start: u64,
    len: u64,
    role: &'static str,
    time: Option<i64>,
}

#[derive(Default)]
struct Header {
    id: String,
    cwd: Option<String>,
    title: Option<String>,
    updated_ms: Option<i64>,
    created_ms: Option<i64>,
    unlisted: bool,
    restorable: Option<bool>,
    parent: Option<String>,
}

pub struct WarpReader {
    name: String,
    lines: u64,
    malformed: u64,
    header: Option<Header>,
    unreadable: Option<String>,
    messages: Vec<Msg>,
    first_task: Option<String>,
    preview: Option<String>,
    pwd: Option<String>,
}

impl WarpReader {
    pub fn new(name: &str) -> Self {
        WarpReader {
            name: name.to_string(),
            lines: 0,
            malformed: 0,
            header: None,
            unreadable: None,
            messages: Vec::new(),
            first_task: None,
            preview: None,
            pwd: None,
        }
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        let n = self.lines;
        self.lines += 1;
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            self.malformed += 1;
            return;
        };
        if let Some(why) = v.get("fen_unreadable").and_then(Value::as_str) {
            self.unreadable = Some(why.to_string());
            return;
        }
        let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        if n == 0 && v.get("conversation_id").is_some() {
            let created = v
                .pointer("/exchanges/0/start_ts")
                .and_then(Value::as_str)
                .and_then(sqlite_time_ms);
            self.header = Some(Header {
                id: s(&v, "/conversation_id").unwrap_or_default(),
                cwd: s(&v, "/cwd"),
                title: s(&v, "/summary/title").filter(|t| !t.is_empty()),
                updated_ms: s(&v, "/last_modified_at").and_then(|t| sqlite_time_ms(&t)),
                created_ms: created,
                unlisted: v.pointer("/summary/is_unlisted_auto_code_diff")
                    == Some(&Value::Bool(true)),
                restorable: v.pointer("/summary/is_restorable").and_then(Value::as_bool),
                parent: s(&v, "/conversation_data/parent_conversation_id"),
            });
            return;
        }
        if let Some(task) = v.get("task") {
            if self.first_task.is_none() {
                self.first_task = s(task, "/description").filter(|d| !d.is_empty());
            }
            return;
        }
        let Some(kind) = KINDS.iter().find(|k| v.get(**k).is_some()) else {
            // A message the model does not read (todos, events, debug output).
            return;
        };
        if *kind == "user_query" {
            if self.preview.is_none() {
                self.preview = s(&v, "/user_query/query")
                    .filter(|q| !q.trim().is_empty())
                    .map(|q| crate::store::index::one_line(&q, 200));
            }
            if self.pwd.is_none() {
                self.pwd = s(&v, "/user_query/pwd");
            }
        }
        let role = match *kind {
            "user_query" | "system_query" => "user",
            "tool_call_result" => "tool",
            _ => "assistant",
        };
        self.messages.push(Msg {
            id: s(&v, "/id").unwrap_or_default(),
            start,
            len: bytes.len() as u64,
            role,
            time: v.get("timestamp_ms").and_then(Value::as_i64),
        });
    }

    fn not_resumable(&self) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(why.clone());
        }
        if self.malformed > 0 {
            return Some(format!(
                "{} line(s) of the dump cannot be read",
                self.malformed
            ));
        }
        if self.header.as_ref().and_then(|h| h.restorable) == Some(false) {
            return Some("Warp marks its tasks not restorable (no single root task)".into());
        }
        None
    }

    fn pieces(m: &Msg) -> MessagePieces {
        vec![Piece::Range {
            start: m.start,
            len: m.len,
        }]
    }
}

impl ForeignReader for WarpReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            self.line(offset + consumed as u64, &bytes[consumed..consumed + nl]);
            consumed += nl + 1;
        }
        consumed as u64
    }

    fn follows_appends(&self) -> bool {
        // Warp rewrites each task's row whole.
        false
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let reason = self.not_resumable();
        let default = Header::default();
        let h = self.header.as_ref().unwrap_or(&default);
        let mut roles = BTreeMap::new();
        if reason.is_none() {
            for m in &self.messages {
                *roles.entry(m.role.to_string()).or_insert(0) += 1;
            }
        }
        let first = self.messages.iter().filter_map(|m| m.time).min();
        let last = self.messages.iter().filter_map(|m| m.time).max();
        ForeignSummary {
            id: if h.id.is_empty() {
                self.name.clone()
            } else {
                h.id.clone()
            },
            cwd: h.cwd.clone().or_else(|| self.pwd.clone()),
            title: h.title.clone().or_else(|| self.first_task.clone()),
            preview: self.preview.clone(),
            created_at: h.created_ms.or(first).and_then(rfc3339_ms),
            updated_at: h.updated_ms.max(last).and_then(rfc3339_ms),
            // Warp's history hides passive code-diff conversations and children.
            listed: self.header.is_some() && !h.unlisted && h.parent.is_none(),
            resumable: reason.is_none(),
            not_resumable_reason: reason.clone(),
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages: if reason.is_none() {
                self.messages.len() as u64
            } else {
                0
            },
            roles,
            compactions: 0,
            archived: false,
            parent_id: h.parent.clone(),
            resume_rules: Some("best effort".into()),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        if self.not_resumable().is_some() {
            return Vec::new();
        }
        self.messages.iter().map(Self::pieces).collect()
    }

    fn messages(&self, _tail: &[u8], _history: bool) -> Vec<MessageRef> {
        if self.not_resumable().is_some() {
            return Vec::new();
        }
        self.messages
            .iter()
            .map(|m| MessageRef {
                pieces: Self::pieces(m),
                entry: Some(m.id.clone()),
                timestamp: m.time.and_then(rfc3339_ms),
                in_conversation: true,
                ..MessageRef::default()
            })
            .collect()
    }
}
