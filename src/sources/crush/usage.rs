//! Crush's token usage (SPEC §13): each session's row keeps the running totals of its
//! model calls (`prompt_tokens`, `completion_tokens`, `cost` in USD as Crush priced
//! them); no call is recorded apart. fen-fs counts a session's totals as one record
//! at its last update, with the model of its last assistant message and Crush's cost.

use crate::usage_record::{Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, key_of};
use serde_json::Value;
use std::sync::Arc;

pub struct CrushUsage {
    facts: UnitFacts,
    session: Option<Value>,
    model: Option<String>,
}

impl CrushUsage {
    pub fn new(facts: UnitFacts) -> Self {
        CrushUsage {
            facts,
            session: None,
            model: None,
        }
    }
}

impl UsageReader for CrushUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], _out: &mut UsageOut) -> u64 {
        crate::usage_record::each_line(offset, bytes, |_, line| {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                return;
            };
            if v["type"] == "session" {
                self.session = Some(v);
            } else if v["role"] == "assistant"
                && let Some(m) = v["model"].as_str().filter(|m| !m.is_empty())
            {
                self.model = Some(m.to_string());
            }
        })
    }

    fn finish(&mut self, _offset: u64, _tail: &[u8], out: &mut UsageOut) {
        let Some(s) = &self.session else { return };
        let tokens = Tokens {
            input: s["prompt_tokens"].as_u64().unwrap_or(0),
            output: s["completion_tokens"].as_u64().unwrap_or(0),
            ..Tokens::default()
        };
        if tokens.total() == 0 {
            return;
        }
        let Some(t) = s["updated_at"].as_i64() else {
            return;
        };
        let time_ms = if t > 100_000_000_000 { t } else { t * 1000 };
        let id = s["id"].as_str().unwrap_or_default().to_string();
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            key: Some(key_of(&[
                b"crush",
                s["db"].to_string().as_bytes(),
                id.as_bytes(),
            ])),
            session: Arc::from(id.as_str()),
            cwd: s["cwd"]
                .as_str()
                .map(str::to_string)
                .or_else(|| self.facts.cwd.clone())
                .as_deref()
                .map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: self.model.as_deref().map(Arc::from),
            tokens,
            recorded_cost: s["cost"].as_f64().filter(|c| *c > 0.0),
            fast: false,
            revision: tokens.total(),
        });
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
