//! Reader of Factory Droid sessions (`~/.factory/sessions/<cwd slug>/<id>.jsonl`, with
//! `<id>.settings.json` beside), as Droid 0.225.2 (closed source) wrote them here
//! against a mock model (`tests/agent_droid.rs`).
//!
//! A file is JSON Lines: a `session_start` line (`id`, `title`, `cwd`, a fork's
//! `parent`), then `message` lines (`id`, `parentId`, `timestamp`, `message`: the
//! Anthropic-shaped `{role, content}` with `text`, `tool_use` and `tool_result` blocks)
//! and bookkeeping lines (`agent_turn_outcome`, `todo_state`). The conversation is the
//! chain of messages from the last one back through `parentId`, each `message` as
//! stored (byte ranges of the file). Droid's context messages (ids `context-…`,
//! `visibility: "llm_only"`) are part of it: a fork sent them back as stored. How Droid
//! rebuilds a resumed session is not public: `resume_rules` says "best effort".

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::sources::foreign::{
    ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece, restore_borsh, save_borsh,
};
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Message {
    id: String,
    parent: Option<String>,
    /// The `message` value's bytes in the file.
    start: u64,
    len: u64,
    role: String,
    timestamp: Option<String>,
    /// Context Droid adds for the model (not the user's words).
    context: bool,
    model: Option<String>,
}

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    id: Option<String>,
    cwd: Option<String>,
    title: Option<String>,
    parent: Option<String>,
    preview: Option<String>,
    messages: Vec<Message>,
    entries: u64,
    malformed: u64,
}

/// Reader of one Droid session file.
#[derive(Default)]
pub struct DroidReader {
    state: State,
}

impl DroidReader {
    pub fn new() -> DroidReader {
        DroidReader::default()
    }

    fn line(&mut self, bytes: &[u8], at: u64) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.state.malformed += 1;
            return;
        };
        if text.trim().is_empty() {
            return;
        }
        #[derive(serde::Deserialize)]
        struct Line<'a> {
            #[serde(rename = "type")]
            kind: Option<String>,
            id: Option<String>,
            #[serde(rename = "parentId")]
            parent_id: Option<String>,
            timestamp: Option<String>,
            title: Option<String>,
            cwd: Option<String>,
            parent: Option<String>,
            #[serde(borrow)]
            message: Option<&'a RawValue>,
        }
        let Ok(l) = serde_json::from_str::<Line>(text) else {
            self.state.malformed += 1;
            return;
        };
        self.state.entries += 1;
        let s = &mut self.state;
        match l.kind.as_deref() {
            Some("session_start") => {
                s.id = l.id.or(s.id.take());
                s.cwd = l.cwd.or(s.cwd.take());
                s.title = l.title.filter(|t| !t.is_empty()).or(s.title.take());
                s.parent = l.parent.or(s.parent.take());
            }
            Some("message") => {
                let (Some(id), Some(m)) = (l.id, l.message) else {
                    return;
                };
                let Ok(v) = serde_json::from_str::<Value>(m.get()) else {
                    return;
                };
                let role = v["role"].as_str().unwrap_or("").to_string();
                let context = id.starts_with("context-") || v["visibility"] == "llm_only";
                if role == "user" && !context && s.preview.is_none() {
                    s.preview = first_text(&v["content"]);
                }
                s.messages.push(Message {
                    id,
                    parent: l.parent_id,
                    start: at + crate::json::offset_in(text, m.get()) as u64,
                    len: m.get().len() as u64,
                    role,
                    timestamp: l.timestamp,
                    context,
                    model: v["modelId"].as_str().map(str::to_string),
                });
            }
            _ => {}
        }
    }

    /// The chain from the last message back to the first, in order (indexes).
    fn chain(&self) -> Vec<usize> {
        let msgs = &self.state.messages;
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        for (i, m) in msgs.iter().enumerate() {
            by_id.insert(m.id.as_str(), i);
        }
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut at = msgs.len().checked_sub(1);
        while let Some(i) = at {
            if !seen.insert(i) {
                break;
            }
            out.push(i);
            at = msgs[i]
                .parent
                .as_deref()
                .and_then(|p| by_id.get(p).copied());
        }
        out.reverse();
        out
    }
}

fn first_text(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .find(|b| b["type"] == "text")
            .and_then(|b| b["text"].as_str())?
            .to_string(),
        _ => return None,
    };
    let line = text.trim().lines().next().unwrap_or("").trim().to_string();
    (!line.is_empty()).then_some(line)
}

impl ForeignReader for DroidReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        crate::usage_record::each_line(offset, bytes, |at, line| self.line(line, at))
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let s = &self.state;
        let mut out = ForeignSummary {
            id: s.id.clone().unwrap_or_default(),
            cwd: s.cwd.clone(),
            title: s.title.clone(),
            preview: s.preview.clone(),
            created_at: s.messages.iter().find_map(|m| m.timestamp.clone()),
            updated_at: s.messages.iter().rev().find_map(|m| m.timestamp.clone()),
            entries: s.entries,
            malformed_lines: s.malformed,
            listed: s.id.is_some(),
            parent_id: None,
            resume_rules: Some("best effort".into()),
            ..ForeignSummary::default()
        };
        if s.id.is_none() {
            out.not_resumable_reason = Some("no session_start line names the session".into());
        } else if s.messages.is_empty() {
            out.not_resumable_reason = Some("no message to resume".into());
        } else {
            out.resumable = true;
            for i in self.chain() {
                out.messages += 1;
                *out.roles.entry(s.messages[i].role.clone()).or_insert(0) += 1;
            }
        }
        out
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn messages(&self, _tail: &[u8], history: bool) -> Vec<MessageRef> {
        let s = &self.state;
        if s.id.is_none() {
            return Vec::new();
        }
        let chain = self.chain();
        let on: HashSet<usize> = chain.iter().copied().collect();
        let refer = |i: usize, in_conversation: bool| {
            let m = &s.messages[i];
            MessageRef {
                pieces: vec![Piece::Range {
                    start: m.start,
                    len: m.len,
                }],
                entry: Some(m.id.clone()),
                timestamp: m.timestamp.clone(),
                in_conversation,
                injected: m.context,
                summary: false,
                model: m.model.clone().map(|model| crate::neutral::ModelRef {
                    provider: None,
                    api: None,
                    model,
                }),
            }
        };
        let mut out = Vec::new();
        if history {
            out.extend(
                (0..s.messages.len())
                    .filter(|i| !on.contains(i))
                    .map(|i| refer(i, false)),
            );
        }
        out.extend(chain.into_iter().map(|i| refer(i, true)));
        out
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        save_borsh(&self.state)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        restore_borsh(&mut self.state, state)
    }
}
