//! Qwen Code's token usage (SPEC §13). Qwen records each model call three ways: the
//! `usageMetadata` of the assistant record it answered with, a `ui_telemetry` system
//! record of event `qwen-code.api_response` (every call of the session: the main
//! turns, and also the compression's and the memory extractor's side requests, which
//! leave no assistant record), and run totals outside the session files. fen-fs counts
//! the telemetry records, each once: its key is the record's `uuid`, which a fork
//! (`--fork-session`) copies unchanged into the new file, so a forked session's copied
//! calls are not counted again.
//!
//! The counts are the Gemini API's, as Qwen converts any provider's: `input` includes
//! the cached part (the cache read), and what `total` counts beyond input and output
//! is reasoning (the Gemini API counts thoughts apart; an OpenAI-compatible API counts
//! them inside the output, where they stay).

use crate::usage_record::{
    Needle, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line_holding, field_count,
    key_of, parse_time_ms, raw_str,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

static API_RESPONSE: Needle =
    Needle::new(|| memchr::memmem::Finder::new(b"\"qwen-code.api_response\""));

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow, default)]
    uuid: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "sessionId")]
    session_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    subtype: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "systemPayload")]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow, default, rename = "uiEvent")]
    event: Option<Event<'a>>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default, rename = "event.name")]
    name: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "event.timestamp")]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input_token_count: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output_token_count: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cached_content_token_count: Option<&'a RawValue>,
    #[serde(borrow, default)]
    thoughts_token_count: Option<&'a RawValue>,
    #[serde(borrow, default)]
    total_token_count: Option<&'a RawValue>,
}

pub struct QwenUsage {
    facts: UnitFacts,
}

impl QwenUsage {
    pub fn new(facts: UnitFacts) -> Self {
        QwenUsage { facts }
    }

    fn line(&self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return;
        };
        let Ok(rec) = serde_json::from_str::<Record>(text.trim()) else {
            return;
        };
        if raw_str(rec.subtype).as_deref() != Some("ui_telemetry") {
            return;
        }
        let Some(event) = rec.payload.and_then(|p| p.event) else {
            return;
        };
        if raw_str(event.name).as_deref() != Some("qwen-code.api_response") {
            return;
        }
        let tokens = match tokens_of(&event) {
            Ok(t) => t,
            Err(why) => return out.malformed(offset, || why),
        };
        let time = raw_str(rec.timestamp)
            .and_then(|t| parse_time_ms(&t))
            .or_else(|| raw_str(event.timestamp).and_then(|t| parse_time_ms(&t)));
        let Some(time_ms) = time else {
            return out.malformed(offset, || "no RFC 3339 timestamp".into());
        };
        let session = raw_str(rec.session_id)
            .map(|s| s.into_owned())
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let cwd = raw_str(rec.cwd)
            .map(|c| c.into_owned())
            .or_else(|| self.facts.cwd.clone());
        let key = raw_str(rec.uuid).map(|u| key_of(&[b"qwen", u.as_bytes()]));
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session: Arc::from(session),
            cwd: cwd.as_deref().map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: raw_str(event.model).map(|m| Arc::from(m.as_ref())),
            tokens,
            recorded_cost: None,
            fast: false,
            key,
            revision: 0,
        });
    }
}

fn tokens_of(e: &Event) -> Result<Tokens, String> {
    let n = |name: &str, v| field_count(name, v).map(|n| n.unwrap_or(0));
    let input = n("input_token_count", e.input_token_count)?;
    let output = n("output_token_count", e.output_token_count)?;
    let cached = n("cached_content_token_count", e.cached_content_token_count)?;
    let thoughts = n("thoughts_token_count", e.thoughts_token_count)?;
    let reasoning = match field_count("total_token_count", e.total_token_count)? {
        Some(total) if total >= input + output => total - input - output,
        _ => thoughts,
    };
    Ok(Tokens {
        input: input.saturating_sub(cached),
        output,
        cache_read: cached.min(input),
        reasoning,
        ..Tokens::default()
    })
}

impl UsageReader for QwenUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line_holding(offset, bytes, API_RESPONSE.finder(), |at, line| {
            self.line(at, line, out)
        })
    }

    fn finish(&mut self, offset: u64, tail: &[u8], out: &mut UsageOut) {
        // A last line without its `\n` that is whole (Qwen reads it too).
        if API_RESPONSE.is_in(tail) {
            self.line(offset, tail, out);
        }
    }
}
