//! pi's token usage (SPEC §13), also OpenClaw's (it writes pi's session format): the
//! `usage` of each assistant message entry, `{input, output, cacheRead, cacheWrite,
//! totalTokens, cost: {total, ...}}`; the cost pi recorded wins over a computed one.
//! A response is its session id + entry id, so a copy of the file (kept, synced) counts
//! once (ccusage 20.0.24 does not de-duplicate pi's entries and counts a copy twice).

use crate::usage_record::{
    Needle, SavedState, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line_holding,
    field_count, key_of, parse_time_ms, raw_number, raw_str,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

static USAGE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"usage\""));

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Usage<'a> {
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "cacheRead")]
    cache_read: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "cacheWrite")]
    cache_write: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cost: Option<Cost<'a>>,
}

#[derive(Deserialize)]
struct Cost<'a> {
    #[serde(borrow, default)]
    total: Option<&'a RawValue>,
}

#[derive(Debug, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    session: Option<String>,
    cwd: Option<String>,
}

pub struct PiUsage {
    facts: UnitFacts,
    state: State,
}

impl PiUsage {
    pub fn new(facts: UnitFacts) -> Self {
        PiUsage {
            facts,
            state: State::default(),
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return;
        };
        let Ok(line) = serde_json::from_str::<Line>(text) else {
            return;
        };
        if raw_str(line.kind).as_deref() == Some("session") {
            self.state.session = raw_str(line.id).map(|s| s.into_owned());
            self.state.cwd = raw_str(line.cwd).map(|s| s.into_owned());
            return;
        }
        let Some(m) = &line.message else { return };
        let Some(usage) = m.usage.filter(|u| u.get() != "null") else {
            return;
        };
        if raw_str(m.role).as_deref() != Some("assistant") {
            return;
        }
        let bad = |why: String| move || why;
        let usage = match serde_json::from_str::<Usage>(usage.get()) {
            Ok(u) => u,
            Err(e) => return out.malformed(offset, bad(format!("usage: {e}"))),
        };
        let n = |name: &str, v| field_count(name, v).map(|n| n.unwrap_or(0));
        let tokens = match (|| -> Result<Tokens, String> {
            Ok(Tokens {
                input: n("input", usage.input)?,
                output: n("output", usage.output)?,
                cache_read: n("cacheRead", usage.cache_read)?,
                cache_write_5m: n("cacheWrite", usage.cache_write)?,
                ..Tokens::default()
            })
        })() {
            Ok(t) => t,
            Err(why) => return out.malformed(offset, bad(format!("usage: {why}"))),
        };
        let time_ms = raw_str(line.timestamp)
            .and_then(|t| parse_time_ms(&t))
            .or_else(|| m.timestamp.and_then(|t| t.get().parse::<i64>().ok()));
        let Some(time_ms) = time_ms else {
            return out.malformed(offset, bad("no timestamp".into()));
        };
        let session = self
            .state
            .session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let key = raw_str(line.id).map(|id| key_of(&[b"pi", session.as_bytes(), id.as_bytes()]));
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session: Arc::from(session),
            cwd: self
                .state
                .cwd
                .as_deref()
                .or(self.facts.cwd.as_deref())
                .map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: raw_str(m.model).map(|s| Arc::from(s.as_ref())),
            tokens,
            recorded_cost: usage.cost.as_ref().and_then(|c| raw_number(c.total)),
            fast: false,
            key,
            revision: 0,
        });
    }
}

impl UsageReader for PiUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        // The header (the first line), then the lines with a `"usage"` key.
        let mut skip = 0;
        if offset == 0 {
            let Some(nl) = memchr::memchr(b'\n', bytes) else {
                return 0;
            };
            self.line(0, &bytes[..nl], out);
            skip = nl + 1;
        }
        skip as u64
            + each_line_holding(
                offset + skip as u64,
                &bytes[skip..],
                USAGE.finder(),
                |at, l| self.line(at, l, out),
            )
    }

    fn state(&mut self) -> Option<&mut dyn SavedState> {
        Some(&mut self.state)
    }
}
