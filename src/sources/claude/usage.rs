//! Claude Code's token usage (SPEC §13): every line with a `message.usage` object, in
//! session files, subagent transcripts and anything else under `projects/` (as ccusage
//! counts them). Observed of ccusage 20.0.24, which fen-fs matches:
//! - a response is `message.id` + `requestId` (without a request id: `message.id` and
//!   the time); repeated (every content block repeats it, and so do resumed copies and
//!   subagent files), the copy with the most tokens counts, the first one on a tie; a
//!   line without `message.id` is counted as it is;
//! - `cache_creation.ephemeral_5m_input_tokens`/`ephemeral_1h_input_tokens`, when
//!   given, are the cache writes (else `cache_creation_input_tokens`, as 5-minute ones);
//! - `costUSD`, when the line has one, is the cost; `usage.speed: "fast"` is fast mode;
//! - a line whose usage lacks `input_tokens` or `output_tokens`, has a count that is
//!   not a non-negative integer, or has no RFC 3339 `timestamp` is skipped.
//!   fen-fs warns about such a line; a `null` model counts as none (ccusage skips it).

use crate::usage_record::{
    Needle, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line_holding, field_count,
    key_of, parse_time_ms, raw_number, raw_str,
};

static USAGE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"usage\""));
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "sessionId")]
    session_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "requestId")]
    request_id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "costUSD")]
    cost: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Usage<'a> {
    #[serde(borrow, default)]
    input_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cache_creation_input_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cache_read_input_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cache_creation: Option<CacheCreation<'a>>,
    #[serde(borrow, default)]
    speed: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CacheCreation<'a> {
    #[serde(borrow, default)]
    ephemeral_5m_input_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ephemeral_1h_input_tokens: Option<&'a RawValue>,
}

/// Reads one file's usage. Each line stands alone: nothing is carried between lines.
pub struct ClaudeUsage {
    facts: UnitFacts,
    session: Option<Arc<str>>,
    cwd: Option<Arc<str>>,
}

impl ClaudeUsage {
    pub fn new(facts: UnitFacts) -> Self {
        ClaudeUsage {
            facts,
            session: None,
            cwd: None,
        }
    }

    /// A line with a `"usage"` key (the other lines, most of the bytes: tool results,
    /// user text, are never looked at line by line).
    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return;
        };
        let Ok(line) = serde_json::from_str::<Line>(text) else {
            return;
        };
        let Some(message) = &line.message else { return };
        let Some(usage) = message.usage else { return };
        if usage.get() == "null" {
            return;
        }
        let bad = |why: String| move || why;
        let usage = match serde_json::from_str::<Usage>(usage.get()) {
            Ok(u) => u,
            Err(e) => return out.malformed(offset, bad(format!("message.usage: {e}"))),
        };
        let tokens = match tokens_of(&usage) {
            Ok(t) => t,
            Err(why) => return out.malformed(offset, bad(format!("message.usage: {why}"))),
        };
        let Some(time_ms) = raw_str(line.timestamp).and_then(|t| parse_time_ms(&t)) else {
            return out.malformed(offset, bad("no RFC 3339 timestamp".into()));
        };
        let key = match (raw_str(message.id), raw_str(line.request_id)) {
            (Some(id), Some(req)) => Some(key_of(&[b"claude", id.as_bytes(), req.as_bytes()])),
            (Some(id), None) => Some(key_of(&[b"claude@", id.as_bytes(), &time_ms.to_le_bytes()])),
            (None, _) => None,
        };
        let session = self.intern_session(raw_str(line.session_id).as_deref());
        let cwd = self.intern_cwd(raw_str(line.cwd).as_deref());
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session,
            cwd,
            host: self.facts.host.as_deref().map(Arc::from),
            model: raw_str(message.model).map(|m| Arc::from(m.as_ref())),
            tokens,
            recorded_cost: raw_number(line.cost),
            fast: raw_str(usage.speed).as_deref() == Some("fast"),
            key,
            revision: 0,
        });
    }

    /// The line's session id (the file's when it names none), shared between records.
    fn intern_session(&mut self, id: Option<&str>) -> Arc<str> {
        let id = id.or(self.facts.session.as_deref()).unwrap_or_default();
        match &self.session {
            Some(s) if &**s == id => s.clone(),
            _ => {
                let s: Arc<str> = Arc::from(id);
                self.session = Some(s.clone());
                s
            }
        }
    }

    fn intern_cwd(&mut self, cwd: Option<&str>) -> Option<Arc<str>> {
        let cwd = cwd.or(self.facts.cwd.as_deref())?;
        Some(match &self.cwd {
            Some(c) if &**c == cwd => c.clone(),
            _ => {
                let c: Arc<str> = Arc::from(cwd);
                self.cwd = Some(c.clone());
                c
            }
        })
    }
}

fn tokens_of(u: &Usage) -> Result<Tokens, String> {
    let n = |name: &str, v| field_count(name, v).map(|n| n.unwrap_or(0));
    let input = field_count("input_tokens", u.input_tokens)?.ok_or("no input_tokens")?;
    let output = field_count("output_tokens", u.output_tokens)?.ok_or("no output_tokens")?;
    let written = n("cache_creation_input_tokens", u.cache_creation_input_tokens)?;
    let (cache_write_5m, cache_write_1h) = match &u.cache_creation {
        Some(c) => (
            n("ephemeral_5m_input_tokens", c.ephemeral_5m_input_tokens)?,
            n("ephemeral_1h_input_tokens", c.ephemeral_1h_input_tokens)?,
        ),
        None => (written, 0),
    };
    Ok(Tokens {
        input,
        output,
        cache_write_5m,
        cache_write_1h,
        cache_read: n("cache_read_input_tokens", u.cache_read_input_tokens)?,
        reasoning: 0,
    })
}

impl UsageReader for ClaudeUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line_holding(offset, bytes, USAGE.finder(), |at, line| {
            self.line(at, line, out)
        })
    }
}
