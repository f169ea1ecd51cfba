//! Reader of one Amp thread's dump (`mod.rs`): the thread's line, then its messages.
//! Amp's resume rules are not public: `conversation.json` is every `user` and
//! `assistant` message of the thread as stored (Amp keeps a whole thread and starts
//! a new one to hand off; it has no compaction in the file), marked "best effort".

use crate::sources::db_units::rfc3339_ms;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Header {
    id: Option<String>,
    created: Option<Value>,
    title: Option<String>,
    archived: Option<Value>,
    env: Option<Value>,
    meta: Option<Value>,
    #[serde(rename = "mainThreadID")]
    main_thread: Option<String>,
    fen_unreadable: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    role: Option<String>,
    #[serde(rename = "messageId")]
    message_id: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    usage: Option<Value>,
    meta: Option<Value>,
    fen_unreadable: Option<String>,
}

/// A `file://` URI as a path (percent escapes decoded).
pub fn path_of_uri(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok().filter(|p| p.starts_with('/'))
}

fn time_ms(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => crate::usage_record::parse_time_ms(s),
        _ => None,
    }
}

struct Msg {
    id: String,
    start: u64,
    len: u64,
    role: String,
    time: Option<i64>,
    model: Option<String>,
}

pub struct AmpReader {
    name: String,
    lines: u64,
    malformed: u64,
    header: Option<Header>,
    unreadable: Option<String>,
    messages: Vec<Msg>,
    preview: Option<String>,
    latest: Option<i64>,
}

impl AmpReader {
    pub fn new(name: &str) -> Self {
        AmpReader {
            name: name.strip_suffix(".json").unwrap_or(name).to_string(),
            lines: 0,
            malformed: 0,
            header: None,
            unreadable: None,
            messages: Vec::new(),
            preview: None,
            latest: None,
        }
    }

    fn seen(&mut self, t: Option<i64>) {
        if let Some(t) = t {
            self.latest = Some(self.latest.map_or(t, |l| l.max(t)));
        }
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        let n = self.lines;
        self.lines += 1;
        if n == 0 {
            match serde_json::from_slice::<Header>(bytes) {
                Ok(h) => {
                    if let Some(why) = &h.fen_unreadable {
                        self.unreadable = Some(why.clone());
                    }
                    // The end of the last trace: when the thread last worked.
                    let traces = h
                        .meta
                        .as_ref()
                        .and_then(|m| m.get("traces"))
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    for t in traces {
                        self.seen(t.get("endTime").and_then(time_ms));
                    }
                    self.seen(h.created.as_ref().and_then(time_ms));
                    self.header = Some(h);
                }
                Err(_) => self.malformed += 1,
            }
            return;
        }
        let Ok(f) = serde_json::from_slice::<Line>(bytes) else {
            self.malformed += 1;
            return;
        };
        if let Some(why) = f.fen_unreadable {
            self.unreadable = Some(why);
            return;
        }
        let Some(role) = f.role else {
            self.malformed += 1;
            return;
        };
        let content: Option<Value> = f.content.and_then(|c| serde_json::from_str(c.get()).ok());
        if role == "user" && self.preview.is_none() {
            self.preview = content
                .as_ref()
                .and_then(|c| match c {
                    Value::String(s) => Some(s.clone()),
                    Value::Array(blocks) => blocks.iter().find_map(|b| {
                        (b.get("type")?.as_str()? == "text")
                            .then(|| b.get("text")?.as_str().map(str::to_string))
                            .flatten()
                    }),
                    _ => None,
                })
                .filter(|t| !t.trim().is_empty())
                .map(|t| crate::store::index::one_line(&t, 200));
        }
        let usage_time = f
            .usage
            .as_ref()
            .and_then(|u| u.get("timestamp"))
            .and_then(time_ms);
        let sent = f
            .meta
            .as_ref()
            .and_then(|m| m.get("sentAt"))
            .and_then(time_ms);
        let time = usage_time.or(sent);
        self.seen(time);
        self.messages.push(Msg {
            id: match &f.message_id {
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::String(s)) => s.clone(),
                _ => format!("{}", self.messages.len()),
            },
            start,
            len: bytes.len() as u64,
            role,
            time,
            model: f
                .usage
                .as_ref()
                .and_then(|u| u.get("model"))
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }

    fn not_resumable(&self) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(why.clone());
        }
        if self.malformed > 0 {
            return Some(format!("{} message(s) cannot be read", self.malformed));
        }
        None
    }

    fn resumed(&self) -> impl Iterator<Item = &Msg> {
        self.messages
            .iter()
            .filter(|m| m.role == "user" || m.role == "assistant")
    }

    fn pieces(m: &Msg) -> MessagePieces {
        vec![Piece::Range {
            start: m.start,
            len: m.len,
        }]
    }
}

impl ForeignReader for AmpReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            self.line(offset + consumed as u64, &bytes[consumed..consumed + nl]);
            consumed += nl + 1;
        }
        consumed as u64
    }

    fn follows_appends(&self) -> bool {
        // Amp rewrites the whole thread file.
        false
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let reason = self.not_resumable();
        let h = self.header.as_ref();
        let id = h
            .and_then(|h| h.id.clone())
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| self.name.clone());
        // The first workspace folder of the thread's environment.
        let cwd = h
            .and_then(|h| h.env.as_ref())
            .and_then(|e| e.pointer("/initial/trees/0/uri"))
            .and_then(Value::as_str)
            .and_then(path_of_uri);
        let mut roles = BTreeMap::new();
        let mut count = 0;
        if reason.is_none() {
            for m in self.resumed() {
                *roles.entry(m.role.clone()).or_insert(0) += 1;
                count += 1;
            }
        }
        let archived = h
            .and_then(|h| h.archived.as_ref())
            .is_some_and(|a| a.as_bool() == Some(true));
        ForeignSummary {
            id,
            cwd,
            title: h.and_then(|h| h.title.clone()).filter(|t| !t.is_empty()),
            preview: self.preview.clone(),
            created_at: h
                .and_then(|h| h.created.as_ref())
                .and_then(time_ms)
                .and_then(rfc3339_ms),
            updated_at: self.latest.and_then(rfc3339_ms),
            listed: h.is_some() && self.unreadable.is_none(),
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages: count,
            roles,
            compactions: 0,
            archived,
            parent_id: h.and_then(|h| h.main_thread.clone()),
            resume_rules: Some("best effort".into()),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        if self.not_resumable().is_some() {
            return Vec::new();
        }
        self.resumed().map(Self::pieces).collect()
    }

    fn messages(&self, _tail: &[u8], _history: bool) -> Vec<MessageRef> {
        if self.not_resumable().is_some() {
            return Vec::new();
        }
        self.resumed()
            .map(|m| MessageRef {
                pieces: Self::pieces(m),
                entry: Some(m.id.clone()),
                timestamp: m.time.and_then(rfc3339_ms),
                in_conversation: true,
                model: m.model.as_ref().map(|model| crate::neutral::ModelRef {
                    provider: None,
                    api: None,
                    model: model.clone(),
                }),
                ..MessageRef::default()
            })
            .collect()
    }
}
