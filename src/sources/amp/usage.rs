//! Amp's token usage (SPEC §13), from a thread's dump, as ccusage reads it: the
//! thread's `usageLedger.events` (one per inference: `model`, `timestamp`, `tokens
//! {input, output}`, the cache counts taken from the `usage` of the message the
//! event names in `toMessageId`), or, in threads without that ledger, each assistant
//! message's `usage` (`model`, `timestamp`, `inputTokens`, `outputTokens`,
//! `cacheCreationInputTokens`, `cacheReadInputTokens`). Amp's input excludes the
//! cache; for OpenAI models (`gpt-*`) Amp counts the uncached prompt as cache
//! creation, which is input there (AgentsView's reading). Each event or message is
//! one response, keyed by thread and event or message id.

use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of, parse_time_ms,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

fn n(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

fn tokens(model: &str, input: u64, output: u64, creation: u64, read: u64) -> Tokens {
    let openai = model.starts_with("gpt-");
    Tokens {
        input: if openai { input + creation } else { input },
        output,
        cache_write_5m: if openai { 0 } else { creation },
        cache_read: read,
        ..Tokens::default()
    }
}

fn time_of(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::String(s) => parse_time_ms(s),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

pub struct AmpUsage {
    facts: UnitFacts,
    thread: Option<String>,
    cwd: Option<String>,
    ledger: Option<Vec<Value>>,
    /// Each message's usage, by `messageId`, for the ledger's cache counts.
    by_message: HashMap<String, Value>,
    /// The records of messages' usage, used when the thread has no ledger.
    message_records: Vec<UsageRecord>,
}

impl AmpUsage {
    pub fn new(facts: UnitFacts) -> Self {
        AmpUsage {
            facts,
            thread: None,
            cwd: None,
            ledger: None,
            by_message: HashMap::new(),
            message_records: Vec::new(),
        }
    }

    fn session(&self) -> String {
        self.thread
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default()
    }

    fn record(&self, time_ms: i64, model: &str, tokens: Tokens, key: u64) -> UsageRecord {
        UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session: Arc::from(self.session()),
            cwd: self
                .cwd
                .as_deref()
                .or(self.facts.cwd.as_deref())
                .map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: (!model.is_empty()).then(|| Arc::from(model)),
            tokens,
            recorded_cost: None,
            fast: false,
            key: Some(key),
            revision: 0,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            return;
        };
        if offset == 0 {
            self.thread = v.get("id").and_then(Value::as_str).map(str::to_string);
            self.cwd = v
                .pointer("/env/initial/trees/0/uri")
                .and_then(Value::as_str)
                .and_then(super::reader::path_of_uri);
            self.ledger = v
                .pointer("/usageLedger/events")
                .and_then(Value::as_array)
                .cloned();
            return;
        }
        if v.get("role").and_then(Value::as_str) != Some("assistant") {
            return;
        }
        let Some(u) = v.get("usage") else { return };
        let id = v.get("messageId").map(|i| match i {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        if let Some(id) = &id {
            self.by_message.insert(id.clone(), u.clone());
        }
        let model = u.get("model").and_then(Value::as_str).unwrap_or("");
        let Some(time) = time_of(u.get("timestamp")).or_else(|| time_of(v.pointer("/meta/sentAt")))
        else {
            return out.malformed(offset, || "usage without a timestamp".into());
        };
        let t = tokens(
            model,
            n(u.get("inputTokens")),
            n(u.get("outputTokens")),
            n(u.get("cacheCreationInputTokens")),
            n(u.get("cacheReadInputTokens")),
        );
        if t.total() == 0 {
            // Only a total: counted as output, as ccusage does.
            let total = n(u.get("totalTokens"));
            if total == 0 {
                return;
            }
            let t = Tokens {
                output: total,
                ..Tokens::default()
            };
            let key = key_of(&[
                b"amp",
                self.session().as_bytes(),
                id.unwrap_or_default().as_bytes(),
            ]);
            let rec = self.record(time, model, t, key);
            self.message_records.push(rec);
            return;
        }
        let key = key_of(&[
            b"amp",
            self.session().as_bytes(),
            id.unwrap_or_default().as_bytes(),
        ]);
        let rec = self.record(time, model, t, key);
        self.message_records.push(rec);
    }
}

impl UsageReader for AmpUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn finish(&mut self, _offset: u64, _tail: &[u8], out: &mut UsageOut) {
        let Some(events) = self.ledger.take() else {
            out.records.append(&mut self.message_records);
            return;
        };
        for e in &events {
            let Some(time) = time_of(e.get("timestamp")) else {
                continue;
            };
            let model = e.get("model").and_then(Value::as_str).unwrap_or("");
            if model.is_empty() {
                continue;
            }
            let tk = e.get("tokens").unwrap_or(&Value::Null);
            let cache = e
                .get("toMessageId")
                .map(|i| match i {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .and_then(|id| self.by_message.get(&id));
            let t = tokens(
                model,
                n(tk.get("input")),
                n(tk.get("output")),
                n(cache.and_then(|c| c.get("cacheCreationInputTokens"))),
                n(cache.and_then(|c| c.get("cacheReadInputTokens"))),
            );
            if t.total() == 0 {
                continue;
            }
            let id = e.get("id").map(Value::to_string).unwrap_or_default();
            let key = key_of(&[b"amp-ledger", self.session().as_bytes(), id.as_bytes()]);
            let rec = self.record(time, model, t, key);
            out.records.push(rec);
        }
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
