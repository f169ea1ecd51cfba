//! Reader of Kimi CLI sessions (MoonshotAI/kimi-cli, PyPI `kimi-cli`):
//! `~/.kimi/sessions/<md5 of the cwd>/<session id>/context.jsonl`, built from its
//! public source (`src/kimi_cli/session.py`, `soul/context.py`,
//! `packages/kosong/src/kosong/message.py`).
//!
//! `context.jsonl` is what Kimi resumes with (`Context.restore`): JSON Lines of
//! kosong `Message`s (`role` system/user/assistant/tool, `content` a string or parts
//! `text`/`think`/`image_url`/…, `tool_calls` in OpenAI's shape, `tool_call_id`) and
//! bookkeeping records whose role starts with `_`: `_system_prompt` (the system
//! prompt, sent first on resume), `_usage` (the context's token count) and
//! `_checkpoint`. Kimi appends to it; a compaction, `/clear` or a revert moves it
//! aside (`context_<n>.jsonl`) and writes a fresh one, which the source reads anew.
//! The cwd is not in the session's files: `~/.kimi/kimi.json` lists the work dirs,
//! whose md5 names the folder (`kind.rs`); the title and archive mark are in
//! `state.json` beside; token usage is in `wire.jsonl` beside (`usage.rs`).

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::sources::foreign::{
    ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece, restore_borsh, save_borsh,
};
use serde_json::Value;
use serde_json::value::RawValue;

/// Kimi's user message that stands for the compacted context (`soul/compaction.py`).
const COMPACTION_PREFIX: &str = "<system>Previous context has been compacted.";

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Message {
    /// The line's bytes in the file (the message as stored is the line).
    start: u64,
    len: u64,
    role: String,
    /// Text Kimi adds for the model (`<system>…` / `<system-reminder>` user messages).
    injected: bool,
    /// The compaction's summary message.
    summary: bool,
}

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    /// The `_system_prompt`'s `content` value (bytes of the file).
    system: Option<(u64, u64)>,
    messages: Vec<Message>,
    preview: Option<String>,
    entries: u64,
    malformed: u64,
    /// The first record of a kind this reader does not know (a newer Kimi).
    unknown: Option<String>,
}

/// Reader of one `context.jsonl`; the session id is its folder's name.
#[derive(Default)]
pub struct KimiReader {
    id: String,
    state: State,
}

impl KimiReader {
    pub fn new(id: &str) -> KimiReader {
        KimiReader {
            id: id.to_string(),
            state: State::default(),
        }
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
            role: Option<String>,
            #[serde(borrow)]
            content: Option<&'a RawValue>,
        }
        let Ok(l) = serde_json::from_str::<Line>(text) else {
            self.state.malformed += 1;
            return;
        };
        let s = &mut self.state;
        s.entries += 1;
        let Some(role) = l.role else {
            s.malformed += 1;
            return;
        };
        match role.as_str() {
            "_system_prompt" => {
                if let Some(c) = l.content {
                    let start = at + crate::json::offset_in(text, c.get()) as u64;
                    s.system = Some((start, c.get().len() as u64));
                }
            }
            "_usage" | "_checkpoint" => {}
            "system" | "user" | "assistant" | "tool" => {
                let content: Value = l
                    .content
                    .and_then(|c| serde_json::from_str(c.get()).ok())
                    .unwrap_or(Value::Null);
                let first = first_text(&content);
                let injected = role == "user"
                    && first.as_deref().is_some_and(|t| {
                        t.starts_with("<system>") || t.starts_with("<system-reminder>")
                    });
                let summary = injected
                    && first
                        .as_deref()
                        .is_some_and(|t| t.starts_with(COMPACTION_PREFIX));
                if role == "user" && !injected && s.preview.is_none() {
                    s.preview = first
                        .as_deref()
                        .and_then(|t| t.trim().lines().next())
                        .map(|l| l.trim().to_string())
                        .filter(|l| !l.is_empty());
                }
                s.messages.push(Message {
                    start: at,
                    len: bytes.len() as u64,
                    role,
                    injected,
                    summary,
                });
            }
            other => {
                if s.unknown.is_none() {
                    s.unknown = Some(other.to_string());
                }
            }
        }
    }

    /// Why Kimi could not resume this file as it is, if so.
    fn not_resumable(&self, tail: &[u8]) -> Option<String> {
        let s = &self.state;
        if let Some(role) = &s.unknown {
            return Some(format!(
                "a record of role {role:?} this reader does not know (a newer Kimi?)"
            ));
        }
        if !tail.iter().all(u8::is_ascii_whitespace) {
            return Some(
                "the last line is cut off (a crash or a write in progress): Kimi would drop it"
                    .into(),
            );
        }
        if s.messages.is_empty() {
            return Some("no message to resume".into());
        }
        None
    }
}

/// The first text of kosong content: a string, or the first `text` part.
fn first_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => parts
            .iter()
            .find(|p| p["type"] == "text")
            .and_then(|p| p["text"].as_str())
            .map(str::to_string),
        _ => None,
    }
}

impl ForeignReader for KimiReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        crate::usage_record::each_line(offset, bytes, |at, line| self.line(line, at))
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let s = &self.state;
        let torn = !tail.iter().all(u8::is_ascii_whitespace);
        let mut out = ForeignSummary {
            id: self.id.clone(),
            preview: s.preview.clone(),
            entries: s.entries,
            malformed_lines: s.malformed + u64::from(torn),
            // Kimi's picker skips a session with no message (`Session.is_empty`).
            listed: !s.messages.is_empty(),
            compactions: s.messages.iter().filter(|m| m.summary).count() as u64,
            ..ForeignSummary::default()
        };
        match self.not_resumable(tail) {
            Some(why) => out.not_resumable_reason = Some(why),
            None => out.resumable = true,
        }
        if out.resumable {
            out.messages = s.messages.len() as u64 + u64::from(s.system.is_some());
            if s.system.is_some() {
                *out.roles.entry("system".into()).or_insert(0) += 1;
            }
            for m in &s.messages {
                *out.roles.entry(m.role.clone()).or_insert(0) += 1;
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

    fn messages(&self, tail: &[u8], _history: bool) -> Vec<MessageRef> {
        if self.not_resumable(tail).is_some() && self.state.messages.is_empty() {
            return Vec::new();
        }
        let refer = |pieces: MessagePieces, injected: bool, summary: bool| MessageRef {
            pieces,
            entry: None,
            timestamp: None,
            in_conversation: true,
            injected,
            summary,
            model: None,
        };
        let mut out = Vec::new();
        // On resume Kimi sends the stored system prompt first (`app.py`).
        if let Some((start, len)) = self.state.system {
            out.push(refer(
                vec![
                    Piece::Text("{\"role\":\"system\",\"content\":".into()),
                    Piece::Range { start, len },
                    Piece::Text("}".into()),
                ],
                true,
                false,
            ));
        }
        out.extend(self.state.messages.iter().map(|m| {
            refer(
                vec![Piece::Range {
                    start: m.start,
                    len: m.len,
                }],
                m.injected,
                m.summary,
            )
        }));
        out
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        save_borsh(&self.state)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        restore_borsh(&mut self.state, state)
    }
}
