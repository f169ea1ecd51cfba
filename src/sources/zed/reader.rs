//! Reader of one Zed thread's dump (`db.rs`): the header, then each stored message
//! (`{"zed_message": …}`) followed by the request messages Zed sends for it (`{role,
//! content, of}`). What Zed resumes with is every request message, in order: Zed
//! keeps the whole thread (its summaries are for people, they replace nothing), so
//! `conversation.json` is those lines' bytes.

use crate::sources::db_units::{rfc3339_ms, sqlite_time_ms};
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    // The header.
    id: Option<Value>,
    summary: Option<Value>,
    updated_at: Option<Value>,
    created_at: Option<Value>,
    parent_id: Option<Value>,
    folder_paths: Option<Vec<String>>,
    worktree_paths: Option<Vec<String>>,
    data_type: Option<Value>,
    #[serde(borrow)]
    thread: Option<&'a RawValue>,
    // A stored message.
    #[serde(borrow)]
    zed_message: Option<&'a RawValue>,
    // A request message.
    role: Option<String>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    of: Option<u64>,
    fen_unreadable: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Thread {
    title: Option<String>,
    model: Option<Model>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct Model {
    provider: Option<String>,
    model: Option<String>,
}

fn string(v: &Option<Value>) -> Option<String> {
    v.as_ref()
        .and_then(Value::as_str)
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

#[derive(Default, Clone)]
struct Header {
    id: String,
    title: Option<String>,
    cwd: Option<String>,
    created_ms: Option<i64>,
    updated_ms: Option<i64>,
    parent_id: Option<String>,
    model: Option<Model>,
}

struct Request {
    start: u64,
    len: u64,
    role: String,
    of: u64,
}

pub struct ZedReader {
    name: String,
    lines: u64,
    malformed: u64,
    header: Option<Header>,
    unreadable: Option<String>,
    requests: Vec<Request>,
    stored: u64,
    preview: Option<String>,
    mentions: bool,
}

impl ZedReader {
    pub fn new(name: &str) -> Self {
        ZedReader {
            name: name.to_string(),
            lines: 0,
            malformed: 0,
            header: None,
            unreadable: None,
            requests: Vec::new(),
            stored: 0,
            preview: None,
            mentions: false,
        }
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        let n = self.lines;
        self.lines += 1;
        let Ok(f) = serde_json::from_slice::<Line>(bytes) else {
            self.malformed += 1;
            return;
        };
        if let Some(why) = &f.fen_unreadable {
            self.unreadable = Some(why.as_str().unwrap_or("unreadable").to_string());
            return;
        }
        if n == 0 && f.data_type.is_some() || n == 0 && f.id.is_some() && f.role.is_none() {
            let thread: Thread = f
                .thread
                .and_then(|t| serde_json::from_str(t.get()).ok())
                .unwrap_or_default();
            let cwd = f
                .folder_paths
                .as_ref()
                .and_then(|p| p.first().cloned())
                .or_else(|| f.worktree_paths.as_ref().and_then(|p| p.first().cloned()));
            let time =
                |v: &Option<Value>| v.as_ref().and_then(Value::as_str).and_then(sqlite_time_ms);
            self.header = Some(Header {
                id: string(&f.id).unwrap_or_default(),
                title: string(&f.summary).or(thread.title.filter(|t| !t.is_empty())),
                cwd,
                created_ms: time(&f.created_at),
                updated_ms: time(&f.updated_at),
                parent_id: string(&f.parent_id),
                model: thread.model,
            });
            return;
        }
        if let Some(m) = f.zed_message {
            self.stored += 1;
            let v: Value = serde_json::from_str(m.get()).unwrap_or(Value::Null);
            if let Some(user) = v.get("User") {
                let content = user.get("content").and_then(Value::as_array);
                self.mentions |= content
                    .into_iter()
                    .flatten()
                    .any(|c| c.get("Mention").is_some());
                if self.preview.is_none() {
                    self.preview = content
                        .into_iter()
                        .flatten()
                        .find_map(|c| c.get("Text").and_then(Value::as_str))
                        .filter(|t| !t.trim().is_empty())
                        .map(|t| crate::store::index::one_line(t, 200));
                }
            }
            return;
        }
        if let (Some(role), Some(_)) = (f.role, f.content) {
            self.requests.push(Request {
                start,
                len: bytes.len() as u64,
                role,
                of: f.of.unwrap_or(0),
            });
            return;
        }
        self.malformed += 1;
    }

    fn not_resumable(&self) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(why.clone());
        }
        if self.header.as_ref().is_none_or(|h| h.id.is_empty()) {
            return Some("the thread's row is missing".into());
        }
        if self.malformed > 0 {
            return Some(format!(
                "{} line(s) of the dump cannot be read",
                self.malformed
            ));
        }
        None
    }

    fn pieces(r: &Request) -> MessagePieces {
        vec![Piece::Range {
            start: r.start,
            len: r.len,
        }]
    }
}

impl ForeignReader for ZedReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            self.line(offset + consumed as u64, &bytes[consumed..consumed + nl]);
            consumed += nl + 1;
        }
        consumed as u64
    }

    fn follows_appends(&self) -> bool {
        // Zed rewrites the whole row (one compressed document) at every save.
        false
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let reason = self.not_resumable();
        let h = self.header.clone().unwrap_or_else(|| Header {
            id: self.name.clone(),
            ..Header::default()
        });
        let mut roles = BTreeMap::new();
        if reason.is_none() {
            for r in &self.requests {
                *roles.entry(r.role.clone()).or_insert(0) += 1;
            }
        }
        ForeignSummary {
            id: h.id.clone(),
            cwd: h.cwd.clone(),
            title: h.title.clone(),
            preview: self.preview.clone(),
            created_at: h.created_ms.and_then(rfc3339_ms),
            updated_at: h.updated_ms.and_then(rfc3339_ms),
            // The history lists threads; a subagent's thread opens from its parent.
            listed: self.header.is_some() && h.parent_id.is_none(),
            resumable: reason.is_none(),
            not_resumable_reason: reason.clone(),
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages: if reason.is_none() {
                self.requests.len() as u64
            } else {
                0
            },
            roles,
            compactions: 0,
            archived: false,
            parent_id: h.parent_id.clone(),
            resume_rules: self
                .mentions
                .then(|| "best effort: the context block of mentions is simplified".into()),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        if self.summary(tail).not_resumable_reason.is_some() {
            return Vec::new();
        }
        self.requests.iter().map(Self::pieces).collect()
    }

    fn messages(&self, tail: &[u8], _history: bool) -> Vec<MessageRef> {
        if self.summary(tail).not_resumable_reason.is_some() {
            return Vec::new();
        }
        let model = self.header.as_ref().and_then(|h| h.model.clone());
        let time = self
            .header
            .as_ref()
            .and_then(|h| h.updated_ms)
            .and_then(rfc3339_ms);
        self.requests
            .iter()
            .map(|r| MessageRef {
                pieces: Self::pieces(r),
                entry: Some(format!("{}.{}", r.of, r.role)),
                timestamp: time.clone(),
                in_conversation: true,
                model: (r.role == "assistant")
                    .then(|| {
                        let m = model.as_ref()?;
                        Some(crate::neutral::ModelRef {
                            provider: m.provider.clone(),
                            api: None,
                            model: m.model.clone()?,
                        })
                    })
                    .flatten(),
                ..MessageRef::default()
            })
            .collect()
    }
}
