//! Copilot CLI's token usage (SPEC §13): a `session.shutdown` event closes each run of
//! a session with `modelMetrics.<model>.usage` `{inputTokens, outputTokens,
//! cacheReadTokens, cacheWriteTokens}` for that run (as ccusage 20.0.24 reads them:
//! input includes the cache read; a shutdown in the older `tokenDetails` shape names no
//! model and is not counted). One record per run and model, at the event's time.

use crate::usage_record::{
    Needle, SavedState, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line,
    field_count, key_of, parse_time_ms, raw_str,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::Arc;

static START: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"session.start\""));
static SHUTDOWN: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"session.shutdown\""));

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<Data<'a>>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow, default, rename = "sessionId")]
    session_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    context: Option<Context<'a>>,
    #[serde(borrow, default, rename = "modelMetrics")]
    model_metrics: Option<BTreeMap<String, Metrics<'a>>>,
}

#[derive(Deserialize)]
struct Context<'a> {
    #[serde(borrow, default)]
    cwd: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Metrics<'a> {
    #[serde(borrow, default)]
    usage: Option<Counts<'a>>,
}

#[derive(Deserialize)]
struct Counts<'a> {
    #[serde(borrow, default, rename = "inputTokens")]
    input: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "outputTokens")]
    output: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "cacheReadTokens")]
    cache_read: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "cacheWriteTokens")]
    cache_write: Option<&'a RawValue>,
}

#[derive(Debug, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    session: Option<String>,
    cwd: Option<String>,
}

pub struct CopilotUsage {
    facts: UnitFacts,
    state: State,
}

impl CopilotUsage {
    pub fn new(facts: UnitFacts) -> Self {
        CopilotUsage {
            facts,
            state: State::default(),
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        if !(START.is_in(raw) || SHUTDOWN.is_in(raw)) {
            return;
        }
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return;
        };
        let Ok(ev) = serde_json::from_str::<Event>(text) else {
            return;
        };
        let Some(data) = &ev.data else { return };
        match raw_str(ev.kind).as_deref() {
            Some("session.start") => {
                self.state.session = raw_str(data.session_id).map(|s| s.into_owned());
                self.state.cwd = data
                    .context
                    .as_ref()
                    .and_then(|c| raw_str(c.cwd))
                    .map(|s| s.into_owned());
            }
            Some("session.shutdown") => {
                let Some(metrics) = &data.model_metrics else {
                    return;
                };
                let bad = |why: String| move || why;
                let Some(time_ms) = raw_str(ev.timestamp).and_then(|t| parse_time_ms(&t)) else {
                    return out.malformed(offset, bad("no RFC 3339 timestamp".into()));
                };
                let session = self
                    .state
                    .session
                    .clone()
                    .or_else(|| self.facts.session.clone())
                    .unwrap_or_default();
                let event = raw_str(ev.id).unwrap_or_default().into_owned();
                for (model, m) in metrics {
                    let Some(c) = &m.usage else { continue };
                    let n = |name: &str, v| field_count(name, v).map(|n| n.unwrap_or(0));
                    let counts = (|| {
                        Ok::<_, String>((
                            n("inputTokens", c.input)?,
                            n("outputTokens", c.output)?,
                            n("cacheReadTokens", c.cache_read)?,
                            n("cacheWriteTokens", c.cache_write)?,
                        ))
                    })();
                    let (input, output, cache_read, cache_write) = match counts {
                        Ok(c) => c,
                        Err(why) => {
                            out.malformed(
                                offset,
                                bad(format!("modelMetrics.{model}.usage: {why}")),
                            );
                            continue;
                        }
                    };
                    out.records.push(UsageRecord {
                        time_ms,
                        agent: self.facts.agent,
                        session: Arc::from(session.as_str()),
                        cwd: self
                            .state
                            .cwd
                            .as_deref()
                            .or(self.facts.cwd.as_deref())
                            .map(Arc::from),
                        host: self.facts.host.as_deref().map(Arc::from),
                        model: Some(Arc::from(model.as_str())),
                        tokens: Tokens {
                            input: input.saturating_sub(cache_read),
                            output,
                            cache_read,
                            cache_write_5m: cache_write,
                            ..Tokens::default()
                        },
                        recorded_cost: None,
                        fast: false,
                        key: Some(key_of(&[
                            b"copilot",
                            session.as_bytes(),
                            event.as_bytes(),
                            model.as_bytes(),
                        ])),
                        revision: 0,
                    });
                }
            }
            _ => {}
        }
    }
}

impl UsageReader for CopilotUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn state(&mut self) -> Option<&mut dyn SavedState> {
        Some(&mut self.state)
    }
}
