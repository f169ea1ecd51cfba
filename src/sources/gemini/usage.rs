//! Gemini CLI's token usage (SPEC §13): the `tokens` of its `gemini` messages, in chat
//! files (`.jsonl`, and the legacy `.json` read whole) and subagent chats. Observed of
//! ccusage 20.0.24, which fen-fs matches:
//! - a message is its session id + message id; the recorder re-appends a message that
//!   changed, and the last copy counts;
//! - `input` includes `cached`: input is the rest plus `tool` (tool-use prompt
//!   tokens), the cached part is the cache read; `thoughts` (or what `total` counts
//!   beyond input, output and tool) are reasoning, priced as output and counted in the
//!   total, not in the output column;
//! - a message without a model takes the file's previous one; before any, it is not
//!   counted.

use crate::usage_record::{
    Needle, SavedState, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line,
    field_count, key_of, parse_time_ms, raw_str,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

static TOKENS: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"tokens\""));
static SESSION_ID: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"sessionId\""));

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tokens: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "sessionId")]
    session_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct Counts<'a> {
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cached: Option<&'a RawValue>,
    #[serde(borrow, default)]
    thoughts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool: Option<&'a RawValue>,
    #[serde(borrow, default)]
    total: Option<&'a RawValue>,
}

#[derive(Debug, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    session: Option<String>,
    model: Option<String>,
}

pub struct GeminiUsage {
    facts: UnitFacts,
    state: State,
    /// A legacy `.json` chat: one document, read whole at the end.
    whole: bool,
}

impl GeminiUsage {
    pub fn new(facts: UnitFacts, file_name: &str) -> Self {
        GeminiUsage {
            facts,
            state: State::default(),
            whole: file_name.ends_with(".json"),
        }
    }

    fn record(&mut self, offset: u64, rec: &Record, revision: u64, out: &mut UsageOut) {
        if let Some(id) = raw_str(rec.session_id) {
            self.state.session = Some(id.into_owned());
        }
        if raw_str(rec.kind).as_deref() != Some("gemini") {
            return;
        }
        if let Some(m) = raw_str(rec.model) {
            self.state.model = Some(m.into_owned());
        }
        let Some(tokens) = rec.tokens.filter(|t| t.get() != "null") else {
            return;
        };
        let bad = |why: String| move || why;
        let tokens = match serde_json::from_str::<Counts>(tokens.get())
            .map_err(|e| e.to_string())
            .and_then(|c| tokens_of(&c))
        {
            Ok(t) => t,
            Err(why) => return out.malformed(offset, bad(format!("tokens: {why}"))),
        };
        let Some(time_ms) = raw_str(rec.timestamp).and_then(|t| parse_time_ms(&t)) else {
            return out.malformed(offset, bad("no RFC 3339 timestamp".into()));
        };
        let Some(model) = self.state.model.clone() else {
            return;
        };
        let session = self
            .state
            .session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let key = raw_str(rec.id).map(|id| key_of(&[b"gemini", session.as_bytes(), id.as_bytes()]));
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session: Arc::from(session),
            cwd: self.facts.cwd.as_deref().map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: Some(Arc::from(model)),
            tokens,
            recorded_cost: None,
            fast: false,
            key,
            revision,
        });
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        if !(TOKENS.is_in(raw) || SESSION_ID.is_in(raw)) {
            return;
        }
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return;
        };
        if let Ok(rec) = serde_json::from_str::<Record>(text) {
            // A later copy of a message replaces an earlier one: its place is its
            // revision.
            self.record(offset, &rec, offset, out);
        }
    }
}

fn tokens_of(c: &Counts) -> Result<Tokens, String> {
    let n = |name: &str, v| field_count(name, v).map(|n| n.unwrap_or(0));
    let (input, output, cached) = (
        n("input", c.input)?,
        n("output", c.output)?,
        n("cached", c.cached)?,
    );
    let (thoughts, tool) = (n("thoughts", c.thoughts)?, n("tool", c.tool)?);
    let reasoning = match field_count("total", c.total)? {
        Some(total) if total >= input + output + tool => total - input - output - tool,
        _ => thoughts,
    };
    Ok(Tokens {
        input: input.saturating_sub(cached) + tool,
        output,
        cache_read: cached,
        reasoning,
        ..Tokens::default()
    })
}

impl UsageReader for GeminiUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        if self.whole {
            return 0;
        }
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn finish(&mut self, offset: u64, tail: &[u8], out: &mut UsageOut) {
        if !self.whole {
            return;
        }
        let Ok(text) = simdutf8::basic::from_utf8(tail) else {
            return;
        };
        let Ok(doc) = serde_json::from_str::<Record>(text) else {
            return;
        };
        self.record(offset, &doc, 0, out);
        for (i, m) in doc.messages.iter().flatten().enumerate() {
            if let Ok(rec) = serde_json::from_str::<Record>(m.get()) {
                let at = offset + crate::json::offset_in(text, m.get()) as u64;
                self.record(at, &rec, i as u64, out);
            }
        }
    }

    fn follows_appends(&self) -> bool {
        // A `.json` chat is rewritten whole on every change.
        !self.whole
    }

    fn state(&mut self) -> Option<&mut dyn SavedState> {
        Some(&mut self.state)
    }
}
