//! Reader of a Cursor `store.db` dump (see `cursor_store.rs`): the meta row, the JSON
//! blobs by id, and the root node's ordered references; the conversation is the
//! referenced message blobs, each kept byte for byte.

use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::{image_from_url, role_of, str_field, text_of};
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, Piece};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line {
    // The header.
    store: Option<Value>,
    cwd: Option<Value>,
    // A meta row.
    meta: Option<String>,
    value: Option<Value>,
    // A blob row.
    id: Option<String>,
    data: Option<Box<serde_json::value::RawValue>>,
    protobuf: Option<BTreeMap<String, Vec<Value>>>,
    fen_unreadable: Option<String>,
}

/// A message blob the root lists: its id, where its JSON is in the dump, its role.
type Referenced = (String, (u64, u64), String);

#[derive(Default)]
pub struct CursorStoreReader {
    lines: u64,
    malformed: u64,
    header: bool,
    cwd: Option<String>,
    meta: Option<Value>,
    unreadable: Option<String>,
    /// JSON blobs: id → (offset, length) of the blob's JSON in the dump, and its role.
    json: HashMap<String, ((u64, u64), String)>,
    /// Protobuf nodes: id → the references in field 1 (hex ids).
    nodes: HashMap<String, Vec<String>>,
    /// The first user text seen, for the preview.
    first_user: Vec<(String, String)>,
}

impl CursorStoreReader {
    pub fn new() -> Self {
        Self::default()
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        self.lines += 1;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(l) = serde_json::from_slice::<Line>(bytes) else {
            self.malformed += 1;
            return;
        };
        if let Some(why) = l.fen_unreadable {
            self.unreadable = Some(why);
            return;
        }
        if l.store.is_some() && !self.header {
            self.header = true;
            self.cwd = l.cwd.as_ref().and_then(Value::as_str).map(str::to_string);
            return;
        }
        if let Some(key) = &l.meta {
            if key == "0" || self.meta.is_none() {
                self.meta = l.value;
            }
            return;
        }
        let Some(id) = l.id else {
            self.malformed += 1;
            return;
        };
        if let Some(data) = l.data {
            // The raw blob sits inside the line exactly as the dump wrote it.
            // `{"id":…,"data":<blob>}`: the blob ends just before the final brace.
            let text = data.get();
            let Some(at) = (bytes.len() - 1).checked_sub(text.len()) else {
                self.malformed += 1;
                return;
            };
            let v = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
            let role = str_field(&v, "role").unwrap_or("").to_string();
            if role == "user" {
                self.first_user.push((id.clone(), user_text(&v)));
            }
            self.json
                .insert(id, ((start + at as u64, text.len() as u64), role));
        } else if let Some(fields) = l.protobuf {
            let refs = fields
                .get("1")
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            self.nodes.insert(id, refs);
        }
    }

    fn meta_str(&self, key: &str) -> Option<String> {
        self.meta.as_ref()?.get(key)?.as_str().map(str::to_string)
    }

    /// The root's message blobs, in order, or why there is no conversation.
    fn resumed(&self) -> Result<Vec<Referenced>, String> {
        if let Some(why) = &self.unreadable {
            return Err(why.clone());
        }
        let root = self
            .meta_str("latestRootBlobId")
            .ok_or("the store names no latestRootBlobId")?;
        let refs = self
            .nodes
            .get(&root)
            .ok_or_else(|| format!("the root blob {root} is not in the store"))?;
        let messages: Vec<Referenced> = refs
            .iter()
            .filter_map(|r| {
                self.json
                    .get(r)
                    .map(|(at, role)| (r.clone(), *at, role.clone()))
            })
            .collect();
        if messages.is_empty() {
            return Err("the root lists no message blob".into());
        }
        Ok(messages)
    }
}

/// A user message's text, without the `<user_query>` wrapper Cursor adds.
fn user_text(v: &Value) -> String {
    let text = match v.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter(|i| str_field(i, "type") == Some("text"))
            .filter_map(|i| str_field(i, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let t = text.trim();
    match (t.find("<user_query>"), t.rfind("</user_query>")) {
        (Some(a), Some(b)) if a + 12 <= b => t[a + 12..b].trim().to_string(),
        _ => t.to_string(),
    }
}

fn rfc3339_ms(ms: i64) -> Option<String> {
    let t = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)?;
    Some(crate::store::naming::timestamp(t))
}

impl ForeignReader for CursorStoreReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            self.line(offset + consumed as u64, &bytes[consumed..consumed + nl]);
            consumed += nl + 1;
        }
        consumed as u64
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let resumed = self.resumed();
        let messages = resumed.as_ref().map(Vec::len).unwrap_or(0) as u64;
        let created = self
            .meta
            .as_ref()
            .and_then(|m| m.get("createdAt"))
            .and_then(|c| c.as_i64().or_else(|| c.as_str()?.parse().ok()))
            .and_then(rfc3339_ms);
        let in_conv: std::collections::HashSet<&str> = resumed
            .as_ref()
            .map(|r| r.iter().map(|(id, _, _)| id.as_str()).collect())
            .unwrap_or_default();
        let preview = self
            .first_user
            .iter()
            .filter(|(id, _)| in_conv.is_empty() || in_conv.contains(id.as_str()))
            .map(|(_, t)| t)
            .find(|t| !t.is_empty())
            .map(|t| crate::store::index::one_line(t, 200));
        let mut roles = BTreeMap::new();
        for (_, _, role) in resumed.iter().flatten() {
            *roles.entry(role.clone()).or_insert(0) += 1;
        }
        ForeignSummary {
            id: self.meta_str("agentId").unwrap_or_default(),
            cwd: self.cwd.clone(),
            title: self.meta_str("name").filter(|n| !n.trim().is_empty()),
            preview,
            created_at: created,
            updated_at: None,
            listed: self.meta_str("latestRootBlobId").is_some(),
            resumable: resumed.is_ok(),
            not_resumable_reason: resumed.err(),
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages,
            roles,
            compactions: 0,
            resume_rules: Some("best effort".into()),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        self.resumed()
            .map(|r| {
                r.into_iter()
                    .map(|(_, (start, len), _)| vec![Piece::Range { start, len }])
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Whether a message has the AI SDK's part shapes (`tool-call`, `tool-result`,
/// `reasoning`, `toolCallId`) that `store.db` blobs are said to use, rather than the
/// Anthropic-like blocks of Cursor's transcripts (read by `cursor::to_neutral`).
pub fn is_blob_shape(v: &Value) -> bool {
    v.get("content")
        .and_then(Value::as_array)
        .is_some_and(|items| {
            items.iter().any(|i| {
                matches!(
                    str_field(i, "type"),
                    Some("tool-call" | "reasoning" | "image")
                ) || i.get("toolCallId").is_some()
            })
        })
}

/// One message blob of a Cursor store (an AI-SDK-like `{role, content}`) as a neutral
/// message: text, reasoning, tool calls and tool results, images.
pub fn to_neutral(v: &Value) -> Option<Message> {
    let role_name = str_field(v, "role")?;
    let mut parts = Vec::new();
    match v.get("content") {
        Some(Value::String(s)) => parts.push(Part::Text { text: s.clone() }),
        Some(Value::Array(items)) => {
            for item in items {
                let s = |k: &str| item.get(k).map(text_of).unwrap_or_default();
                match str_field(item, "type").unwrap_or("") {
                    "text" => parts.push(Part::Text { text: s("text") }),
                    "reasoning" | "thinking" => parts.push(Part::Reasoning {
                        vendor: Vendor::Other,
                        text: if item.get("text").is_some() {
                            s("text")
                        } else {
                            s("thinking")
                        },
                        opaque: None,
                    }),
                    "tool-call" | "tool_use" => parts.push(Part::ToolCall {
                        id: if item.get("toolCallId").is_some() {
                            s("toolCallId")
                        } else {
                            s("id")
                        },
                        name: if item.get("toolName").is_some() {
                            s("toolName")
                        } else {
                            s("name")
                        },
                        input: item
                            .get("args")
                            .or_else(|| item.get("input"))
                            .cloned()
                            .unwrap_or(Value::Null),
                    }),
                    "tool-result" | "tool_result" => parts.push(Part::ToolResult {
                        call_id: if item.get("toolCallId").is_some() {
                            s("toolCallId")
                        } else {
                            s("tool_use_id")
                        },
                        name: str_field(item, "toolName").map(str::to_string),
                        content: vec![Part::Text {
                            text: item
                                .get("result")
                                .or_else(|| item.get("output"))
                                .or_else(|| item.get("content"))
                                .map(text_of)
                                .unwrap_or_default(),
                        }],
                        is_error: item.get("isError").and_then(Value::as_bool) == Some(true),
                    }),
                    "image" => parts.push(image_from_url(&s("image"))),
                    other => parts.push(Part::Other {
                        what: other.to_string(),
                        text: s("text"),
                    }),
                }
            }
        }
        _ => {}
    }
    let role = match role_name {
        "tool" => Role::Tool,
        other => role_of(other),
    };
    let mut m = Message::new(role, parts);
    m.entry = str_field(v, "id").map(str::to_string);
    if role_name == "user" {
        // Cursor wraps the prompt; what the person typed is inside.
        if let Some(Part::Text { text }) = m.parts.first_mut() {
            let inner = user_text(&serde_json::json!({"content": text.clone()}));
            *text = inner;
        }
    }
    Some(m)
}
