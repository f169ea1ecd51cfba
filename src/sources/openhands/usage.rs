//! OpenHands' token usage (SPEC §13), from a conversation's dump: `base_state.json`'s
//! `stats.usage_to_metrics` keeps, per LLM use (`agent`, `condenser`…), every
//! response's `token_usages` entry (`model`, `prompt_tokens` with the cached part
//! included, `cache_read_tokens`, `cache_write_tokens`, `completion_tokens`,
//! `reasoning_tokens`, `response_id`) and `costs` (`cost`, `response_id`). Each entry
//! is one record, at the time of the event that carries its `llm_response_id` (else
//! the conversation's last event).

use super::{BASE_STATE, rfc3339};
use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of, parse_time_ms,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

pub struct OpenhandsUsage {
    facts: UnitFacts,
    state: Option<Value>,
    times: HashMap<String, String>,
    last_time: Option<String>,
}

impl OpenhandsUsage {
    pub fn new(facts: UnitFacts) -> Self {
        OpenhandsUsage {
            facts,
            state: None,
            times: HashMap::new(),
            last_time: None,
        }
    }
}

impl UsageReader for OpenhandsUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], _out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |_, line| {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                return;
            };
            if v["fen_file"] == BASE_STATE {
                self.state = Some(v);
                return;
            }
            let Some(t) = v["timestamp"].as_str().map(rfc3339) else {
                return;
            };
            if let Some(r) = v["llm_response_id"].as_str() {
                self.times.entry(r.to_string()).or_insert_with(|| t.clone());
            }
            self.last_time = Some(t);
        })
    }

    fn finish(&mut self, offset: u64, _tail: &[u8], out: &mut UsageOut) {
        let Some(state) = &self.state else { return };
        let Some(uses) = state["stats"]["usage_to_metrics"].as_object() else {
            return;
        };
        let session = state["id"]
            .as_str()
            .map(|i| i.replace('-', ""))
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let cwd = state["workspace"]["working_dir"]
            .as_str()
            .map(str::to_string)
            .or_else(|| self.facts.cwd.clone());
        for (use_id, metrics) in uses {
            let costs: HashMap<&str, f64> = metrics["costs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| Some((c["response_id"].as_str()?, c["cost"].as_f64()?)))
                .collect();
            for (n, u) in metrics["token_usages"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let count = |k: &str| u[k].as_u64().unwrap_or(0);
                let cache_read = count("cache_read_tokens");
                let tokens = Tokens {
                    input: count("prompt_tokens").saturating_sub(cache_read),
                    output: count("completion_tokens"),
                    cache_read,
                    cache_write_5m: count("cache_write_tokens"),
                    reasoning: count("reasoning_tokens"),
                    ..Tokens::default()
                };
                let response = u["response_id"].as_str().unwrap_or("");
                let Some(time_ms) = self
                    .times
                    .get(response)
                    .or(self.last_time.as_ref())
                    .and_then(|t| parse_time_ms(t))
                else {
                    out.malformed(offset, || "no event time for a response's usage".into());
                    continue;
                };
                let n = n.to_string();
                out.records.push(UsageRecord {
                    time_ms,
                    agent: self.facts.agent,
                    key: Some(key_of(&[
                        b"openhands",
                        session.as_bytes(),
                        use_id.as_bytes(),
                        response.as_bytes(),
                        n.as_bytes(),
                    ])),
                    session: Arc::from(session.as_str()),
                    cwd: cwd.as_deref().map(Arc::from),
                    host: self.facts.host.as_deref().map(Arc::from),
                    model: u["model"]
                        .as_str()
                        .or(metrics["model_name"].as_str())
                        .map(Arc::from),
                    tokens,
                    recorded_cost: costs.get(response).copied().filter(|c| *c > 0.0),
                    fast: false,
                    revision: 0,
                });
            }
        }
    }

    fn follows_appends(&self) -> bool {
        // The dump is made anew on every change.
        false
    }
}
