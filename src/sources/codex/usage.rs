//! Codex's token usage (SPEC §13): its `event_msg` `token_count` events, one per model
//! call. Observed of ccusage 20.0.24, which fen-fs matches:
//! - a call's usage is `info.last_token_usage`; without it, the growth of
//!   `info.total_token_usage` since the previous event; an event whose total did not
//!   change is a repeat (Codex sends one per rate-limit update) and is skipped;
//! - `input_tokens` includes `cached_input_tokens`: input is the rest, the cached part
//!   is the cache read; `output_tokens` already includes `reasoning_output_tokens`;
//! - the model is `info.model`, else the last `turn_context.model`, else `gpt-5`;
//! - a response is the event's timestamp and counts: a fork or a resumed copy replays
//!   its parent's lines with their times, and those count once.

use crate::usage_record::{
    Needle, SavedState, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line,
    field_count, key_of, parse_time_ms, raw_str,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

/// The model ccusage assumes when a rollout names none (Codex's default).
const DEFAULT_MODEL: &str = "gpt-5";
/// How far into a line its kind is looked for.
const HEAD: usize = 200;

static PAYLOAD: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"payload\""));
static TOKEN_COUNT: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"token_count\""));
static TURN_CONTEXT: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"turn_context\""));
static SESSION_META: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"session_meta\""));

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    info: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Info<'a> {
    #[serde(borrow, default)]
    total_token_usage: Option<Counts<'a>>,
    #[serde(borrow, default)]
    last_token_usage: Option<Counts<'a>>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Counts<'a> {
    #[serde(borrow, default)]
    input_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cached_input_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reasoning_output_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    total_tokens: Option<&'a RawValue>,
}

/// `[input, cached, output, reasoning, total]`.
type Totals = [u64; 5];

fn totals(c: &Counts) -> Result<Totals, String> {
    let n = |name: &str, v| field_count(name, v).map(|n| n.unwrap_or(0));
    Ok([
        n("input_tokens", c.input_tokens)?,
        n("cached_input_tokens", c.cached_input_tokens)?,
        n("output_tokens", c.output_tokens)?,
        n("reasoning_output_tokens", c.reasoning_output_tokens)?,
        n("total_tokens", c.total_tokens)?,
    ])
}

/// What the next lines of a rollout need from the earlier ones.
#[derive(Debug, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    session: Option<String>,
    cwd: Option<String>,
    model: Option<String>,
    last_total: Option<Totals>,
}

pub struct CodexUsage {
    facts: UnitFacts,
    state: State,
    shared: Option<(Arc<str>, Option<Arc<str>>)>,
}

impl CodexUsage {
    pub fn new(facts: UnitFacts) -> Self {
        CodexUsage {
            facts,
            state: State::default(),
            shared: None,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        // Codex writes `timestamp`, `type`, then `payload` (whose `type` comes first):
        // the kind of a line is in its first bytes. A line written otherwise (another
        // tool's, keys sorted) is searched whole.
        let head = &raw[..raw.len().min(HEAD)];
        let codex_order = raw.starts_with(b"{\"timestamp\":") && PAYLOAD.is_in(head);
        let within = if codex_order { head } else { raw };
        if !(TOKEN_COUNT.is_in(within) || TURN_CONTEXT.is_in(within) || SESSION_META.is_in(within))
        {
            return;
        }
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return;
        };
        let Ok(line) = serde_json::from_str::<Line>(text) else {
            return;
        };
        let Some(p) = &line.payload else { return };
        match raw_str(line.kind).as_deref() {
            Some("session_meta") => {
                if let Some(id) = raw_str(p.id) {
                    self.state.session = Some(id.into_owned());
                }
                if let Some(cwd) = raw_str(p.cwd) {
                    self.state.cwd = Some(cwd.into_owned());
                }
                self.shared = None;
            }
            Some("turn_context") => {
                if let Some(m) = raw_str(p.model) {
                    self.state.model = Some(m.into_owned());
                }
            }
            Some("event_msg") if raw_str(p.kind).as_deref() == Some("token_count") => {
                self.token_count(offset, line.timestamp, p.info, out)
            }
            _ => {}
        }
    }

    fn token_count(
        &mut self,
        offset: u64,
        timestamp: Option<&RawValue>,
        info: Option<&RawValue>,
        out: &mut UsageOut,
    ) {
        let Some(info) = info.filter(|i| i.get() != "null") else {
            return;
        };
        let bad = |why: String| move || why;
        let info = match serde_json::from_str::<Info>(info.get()) {
            Ok(i) => i,
            Err(e) => return out.malformed(offset, bad(format!("token_count info: {e}"))),
        };
        let read = |c: &Option<Counts>| c.as_ref().map(totals).transpose();
        let (total, last) = match (read(&info.total_token_usage), read(&info.last_token_usage)) {
            (Ok(t), Ok(l)) => (t, l),
            (Err(why), _) | (_, Err(why)) => {
                return out.malformed(offset, bad(format!("token_count: {why}")));
            }
        };
        if total.is_some() && total == self.state.last_total {
            return;
        }
        let used = match (last, total, self.state.last_total) {
            (Some(l), _, _) => l,
            (None, Some(t), Some(p)) => std::array::from_fn(|i| t[i].saturating_sub(p[i])),
            (None, Some(t), None) => t,
            (None, None, _) => return,
        };
        if total.is_some() {
            self.state.last_total = total;
        }
        let Some(ts) = raw_str(timestamp) else {
            return out.malformed(offset, bad("token_count without a timestamp".into()));
        };
        let Some(time_ms) = parse_time_ms(&ts) else {
            return out.malformed(offset, bad(format!("timestamp {ts:?} is not RFC 3339")));
        };
        let model = raw_str(info.model)
            .map(|m| m.into_owned())
            .or_else(|| self.state.model.clone())
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        let mut key: Vec<u8> = ts.as_bytes().to_vec();
        for n in total.unwrap_or_default().iter().chain(used.iter()) {
            key.extend_from_slice(&n.to_le_bytes());
        }
        let [input, cached, output, _reasoning, _] = used;
        let (session, cwd) = self.shared();
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session,
            cwd,
            host: self.facts.host.as_deref().map(Arc::from),
            model: Some(Arc::from(model)),
            tokens: Tokens {
                input: input.saturating_sub(cached),
                output,
                cache_read: cached,
                ..Tokens::default()
            },
            recorded_cost: None,
            fast: false,
            key: Some(key_of(&[b"codex", &key])),
            revision: 0,
        });
    }

    fn shared(&mut self) -> (Arc<str>, Option<Arc<str>>) {
        if self.shared.is_none() {
            let session = self
                .state
                .session
                .clone()
                .or_else(|| self.facts.session.clone())
                .unwrap_or_default();
            let cwd = self.state.cwd.clone().or_else(|| self.facts.cwd.clone());
            self.shared = Some((Arc::from(session), cwd.map(Arc::from)));
        }
        self.shared.clone().expect("set above")
    }
}

impl UsageReader for CodexUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    /// Restored on a fresh reader, whose `shared` is still to be made from it.
    fn state(&mut self) -> Option<&mut dyn SavedState> {
        Some(&mut self.state)
    }
}
