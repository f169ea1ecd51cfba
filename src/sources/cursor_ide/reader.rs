//! Reader of one Cursor composer's or chat tab's dump (`db.rs`): the header line, then
//! each stored message ("bubble"). Cursor is closed source and builds the model's
//! request on its server from these messages, so `conversation.json` is the
//! conversation's bubbles as stored, in Cursor's order (`resume_rules` says "best
//! effort"): for a composer the bubbles its `fullConversationHeadersOnly` names (the
//! other stored bubbles of the composer, left out by an edit or a revert, are history),
//! or its inline `conversation`; for a chat tab its `bubbles`. A bubble that ran a tool
//! holds the call and its result together (`toolFormerData`); its result follows it as
//! a message of its own, `{"cursor_tool_result": {"bubbleId", "toolFormerData"}}`,
//! whose `toolFormerData` is the stored bytes of the bubble's.

use crate::sources::db_units::rfc3339_ms;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::{BTreeMap, HashMap};

use super::db::time_ms;

/// What `resume_rules` says of every Cursor session.
pub const RESUME_RULES: &str = "best effort: Cursor is closed source; its stored messages in its order, as its public readers read them";

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    // The header.
    cursor_ide: Option<String>,
    id: Option<Value>,
    cwd: Option<String>,
    conversation_from: Option<String>,
    #[serde(borrow)]
    composer: Option<&'a RawValue>,
    #[serde(borrow)]
    tab: Option<&'a RawValue>,
    #[serde(borrow)]
    header: Option<&'a RawValue>,
    fen_unreadable: Option<String>,
    fen_skipped: Option<String>,
    // A bubble.
    #[serde(rename = "bubbleId")]
    bubble_id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<Value>,
    #[serde(rename = "createdAt")]
    created_at: Option<Value>,
    timestamp: Option<Value>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(rename = "toolFormerData", borrow)]
    tool: Option<&'a RawValue>,
    #[serde(rename = "modelInfo")]
    model_info: Option<Value>,
    #[serde(rename = "workspaceProjectDir")]
    project_dir: Option<String>,
    #[serde(rename = "workspaceUris")]
    workspace_uris: Option<Vec<Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Facts {
    name: Option<String>,
    #[serde(rename = "chatTitle")]
    chat_title: Option<String>,
    #[serde(rename = "createdAt")]
    created_at: Option<Value>,
    #[serde(rename = "lastUpdatedAt")]
    last_updated_at: Option<Value>,
    #[serde(rename = "lastSendTime")]
    last_send_time: Option<Value>,
    #[serde(rename = "isArchived")]
    archived: Option<bool>,
    #[serde(rename = "modelConfig")]
    model_config: Option<Value>,
    #[serde(rename = "fullConversationHeadersOnly")]
    headers: Option<Vec<Value>>,
    #[serde(rename = "_v")]
    version: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ToolFields<'a> {
    #[serde(rename = "toolCallId")]
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    #[serde(borrow)]
    pub result: Option<&'a RawValue>,
    pub status: Option<String>,
}

/// The role a bubble's `type` names: 1 or "user" a person, 2 or "ai" the model.
pub fn role_of(kind: &Value) -> Option<&'static str> {
    match kind {
        Value::Number(n) => match n.as_i64()? {
            1 => Some("user"),
            2 => Some("assistant"),
            _ => None,
        },
        Value::String(s) => match s.as_str() {
            "user" | "human" => Some("user"),
            "ai" | "assistant" | "bot" => Some("assistant"),
            _ => None,
        },
        _ => None,
    }
}

#[derive(Default, Clone)]
struct Header {
    id: String,
    cwd: Option<String>,
    from: Option<String>,
    title: Option<String>,
    created_ms: Option<i64>,
    updated_ms: Option<i64>,
    archived: bool,
    model: Option<String>,
    order: Option<Vec<String>>,
    version: Option<String>,
}

struct Tool {
    start: u64,
    len: u64,
    has_result: bool,
}

struct Bubble {
    id: String,
    start: u64,
    len: u64,
    role: &'static str,
    time: Option<i64>,
    model: Option<String>,
    tool: Option<Tool>,
}

pub struct CursorIdeReader {
    name: String,
    lines: u64,
    malformed: u64,
    skipped: u64,
    unknown_roles: u64,
    header: Option<Header>,
    unreadable: Option<String>,
    bubbles: Vec<Bubble>,
    preview: Option<String>,
    bubble_cwd: Option<String>,
}

fn facts_of(raw: Option<&RawValue>) -> Facts {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or_default()
}

impl CursorIdeReader {
    pub fn new(name: &str) -> Self {
        CursorIdeReader {
            name: name.to_string(),
            lines: 0,
            malformed: 0,
            skipped: 0,
            unknown_roles: 0,
            header: None,
            unreadable: None,
            bubbles: Vec::new(),
            preview: None,
            bubble_cwd: None,
        }
    }

    fn header_line(&mut self, f: Line) {
        let own = facts_of(f.composer.or(f.tab));
        let head = facts_of(f.header);
        let time = |v: &Option<Value>| v.as_ref().and_then(time_ms);
        let model = own
            .model_config
            .as_ref()
            .and_then(|m| m.get("modelName"))
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_string);
        let order = own.headers.map(|h| {
            h.iter()
                .filter_map(|b| b.get("bubbleId").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        });
        self.header = Some(Header {
            id: f
                .id
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            cwd: f.cwd.filter(|c| !c.is_empty()),
            from: f.conversation_from,
            title: own
                .name
                .or(own.chat_title)
                .or(head.name)
                .filter(|t| !t.trim().is_empty()),
            created_ms: time(&own.created_at).or(time(&head.created_at)),
            updated_ms: time(&own.last_updated_at)
                .or(time(&head.last_updated_at))
                .or(time(&own.last_send_time)),
            archived: own.archived.or(head.archived).unwrap_or(false),
            model,
            order,
            version: own.version.map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            }),
        });
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        let n = self.lines;
        self.lines += 1;
        let Ok(f) = serde_json::from_slice::<Line>(bytes) else {
            self.malformed += 1;
            return;
        };
        if let Some(why) = f.fen_unreadable {
            self.unreadable = Some(why);
            return;
        }
        if f.fen_skipped.is_some() {
            self.skipped += 1;
            return;
        }
        if n == 0 && f.cursor_ide.is_some() {
            return self.header_line(f);
        }
        let Some(role) = f.kind.as_ref().and_then(role_of) else {
            self.unknown_roles += 1;
            return;
        };
        let id = f
            .bubble_id
            .clone()
            .or_else(|| f.id.as_ref().and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| format!("line-{n}"));
        if self.preview.is_none()
            && role == "user"
            && let Some(t) = f
                .text
                .and_then(|t| serde_json::from_str::<String>(t.get()).ok())
            && !t.trim().is_empty()
        {
            self.preview = Some(crate::store::index::one_line(&t, 200));
        }
        if self.bubble_cwd.is_none() {
            self.bubble_cwd = f.project_dir.filter(|d| d.starts_with('/')).or_else(|| {
                f.workspace_uris
                    .iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .find_map(crate::sources::vscdb::path_of_uri)
            });
        }
        let tool = f.tool.and_then(|raw| {
            let t: ToolFields = serde_json::from_str(raw.get()).ok()?;
            let offset = raw.get().as_ptr() as usize - bytes.as_ptr() as usize;
            Some(Tool {
                start: start + offset as u64,
                len: raw.get().len() as u64,
                has_result: t.result.is_some_and(|r| r.get() != "null")
                    || t.status.as_deref() == Some("error"),
            })
        });
        self.bubbles.push(Bubble {
            id,
            start,
            len: bytes.len() as u64,
            role,
            time: f.created_at.or(f.timestamp).as_ref().and_then(time_ms),
            model: f
                .model_info
                .as_ref()
                .and_then(|m| m.get("modelName"))
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(str::to_string),
            tool,
        });
    }

    fn not_resumable(&self) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(why.clone());
        }
        let Some(h) = &self.header else {
            return Some("the composer's row is missing".into());
        };
        if h.id.is_empty() {
            return Some("the composer's row is missing".into());
        }
        if h.from.is_none() && !self.bubbles.is_empty() {
            return Some(format!(
                "the composerData (_v {}) orders its messages neither by fullConversationHeadersOnly nor by an inline conversation: a format this reader does not know",
                h.version.as_deref().unwrap_or("unknown")
            ));
        }
        if self.malformed > 0 {
            return Some(format!(
                "{} line(s) of the dump cannot be read",
                self.malformed
            ));
        }
        None
    }

    /// The bubbles of the conversation, in order.
    fn conversation_bubbles(&self) -> Vec<&Bubble> {
        let Some(order) = self.header.as_ref().and_then(|h| {
            (h.from.as_deref() == Some("fullConversationHeadersOnly"))
                .then_some(h.order.as_ref())
                .flatten()
        }) else {
            return self.bubbles.iter().collect();
        };
        let by_id: HashMap<&str, &Bubble> =
            self.bubbles.iter().map(|b| (b.id.as_str(), b)).collect();
        order
            .iter()
            .filter_map(|id| by_id.get(id.as_str()).copied())
            .collect()
    }

    fn missing(&self) -> usize {
        let Some(order) = self.header.as_ref().and_then(|h| h.order.as_ref()) else {
            return 0;
        };
        let ids: std::collections::HashSet<&str> =
            self.bubbles.iter().map(|b| b.id.as_str()).collect();
        order.iter().filter(|id| !ids.contains(id.as_str())).count()
    }

    /// The bubble's message and, for a tool that ran, its result's.
    fn pieces(b: &Bubble) -> Vec<(MessagePieces, bool)> {
        let mut out = vec![(
            vec![Piece::Range {
                start: b.start,
                len: b.len,
            }],
            false,
        )];
        if let Some(t) = &b.tool
            && t.has_result
        {
            out.push((
                vec![
                    Piece::Text(format!(
                        "{{\"cursor_tool_result\":{{\"bubbleId\":{},\"toolFormerData\":",
                        crate::json::quote(&b.id)
                    )),
                    Piece::Range {
                        start: t.start,
                        len: t.len,
                    },
                    Piece::Text("}}".into()),
                ],
                true,
            ));
        }
        out
    }
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
        // A dump is made again whenever a row changes.
        false
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let reason = self.not_resumable();
        let h = self.header.clone().unwrap_or_else(|| Header {
            id: self.name.clone(),
            ..Header::default()
        });
        let conv = if reason.is_none() {
            self.conversation_bubbles()
        } else {
            Vec::new()
        };
        let mut roles = BTreeMap::new();
        let mut messages = 0;
        for b in &conv {
            for (_, result) in Self::pieces(b) {
                *roles
                    .entry(if result { "tool" } else { b.role }.to_string())
                    .or_insert(0) += 1;
                messages += 1;
            }
        }
        let first = self.bubbles.iter().filter_map(|b| b.time).min();
        let last = self.bubbles.iter().filter_map(|b| b.time).max();
        let mut rules = RESUME_RULES.to_string();
        let missing = self.missing();
        if missing > 0 {
            rules.push_str(&format!(
                "; {missing} message(s) its conversation names are not stored"
            ));
        }
        if self.skipped + self.unknown_roles > 0 {
            rules.push_str(&format!(
                "; {} stored message(s) of no known shape left out",
                self.skipped + self.unknown_roles
            ));
        }
        ForeignSummary {
            id: if h.id.is_empty() {
                self.name.clone()
            } else {
                h.id.clone()
            },
            cwd: h.cwd.clone().or_else(|| self.bubble_cwd.clone()),
            title: h.title.clone(),
            preview: self.preview.clone(),
            created_at: h.created_ms.or(first).and_then(rfc3339_ms),
            updated_at: h.updated_ms.or(last).or(h.created_ms).and_then(rfc3339_ms),
            listed: self.header.is_some(),
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages,
            roles,
            compactions: 0,
            archived: h.archived,
            parent_id: None,
            resume_rules: Some(rules),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn messages(&self, _tail: &[u8], history: bool) -> Vec<MessageRef> {
        let ok = self.not_resumable().is_none();
        let model = self.header.as_ref().and_then(|h| h.model.clone());
        let reference =
            |b: &Bubble, pieces: MessagePieces, result: bool, in_conversation| MessageRef {
                pieces,
                entry: Some(if result {
                    format!("{}.result", b.id)
                } else {
                    b.id.clone()
                }),
                timestamp: b.time.and_then(rfc3339_ms),
                in_conversation,
                model: (b.role == "assistant" && !result)
                    .then(|| {
                        Some(crate::neutral::ModelRef {
                            provider: None,
                            api: None,
                            model: b.model.clone().or_else(|| model.clone())?,
                        })
                    })
                    .flatten(),
                ..MessageRef::default()
            };
        let conv: Vec<&Bubble> = if ok {
            self.conversation_bubbles()
        } else {
            Vec::new()
        };
        let mut out = Vec::new();
        if !history {
            for b in conv {
                for (p, result) in Self::pieces(b) {
                    out.push(reference(b, p, result, true));
                }
            }
            return out;
        }
        let in_conv: std::collections::HashSet<*const Bubble> =
            conv.iter().map(|b| *b as *const Bubble).collect();
        // The conversation first, in its order; then what it left out.
        for b in conv.iter().copied() {
            for (p, result) in Self::pieces(b) {
                out.push(reference(b, p, result, true));
            }
        }
        for b in &self.bubbles {
            if !in_conv.contains(&(b as *const Bubble)) {
                for (p, result) in Self::pieces(b) {
                    out.push(reference(b, p, result, false));
                }
            }
        }
        out
    }
}
