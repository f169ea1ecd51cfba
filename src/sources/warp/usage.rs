//! Warp's token usage (SPEC §13), from a conversation's dump header: its
//! `conversation_data.conversation_usage_metadata.token_usage`, one entry per model
//! with the conversation's total tokens (`warp_tokens`, `byok_tokens`,
//! `custom_endpoint_tokens`). Warp records no split into input and output and no time
//! per response: each model's total is one record at the conversation's last change,
//! counted as input, keyed by conversation and model; the server's recorded cost
//! (`total_provider_cost_in_cents`) goes with it when one model did all the work.

use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of,
};
use serde_json::Value;
use std::sync::Arc;

pub struct WarpUsage {
    facts: UnitFacts,
}

impl WarpUsage {
    pub fn new(facts: UnitFacts) -> Self {
        WarpUsage { facts }
    }

    fn header(&self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            return;
        };
        let Some(id) = v.get("conversation_id").and_then(Value::as_str) else {
            return;
        };
        let Some(meta) = v.pointer("/conversation_data/conversation_usage_metadata") else {
            return;
        };
        let Some(time_ms) = v
            .get("last_modified_at")
            .and_then(Value::as_str)
            .and_then(crate::sources::db_units::sqlite_time_ms)
        else {
            return out.malformed(offset, || "no last_modified_at".into());
        };
        let models: Vec<&Value> = meta
            .get("token_usage")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let cost = meta
            .get("total_provider_cost_in_cents")
            .and_then(Value::as_f64)
            .filter(|_| models.len() == 1)
            .map(|c| c / 100.0);
        let n = |m: &Value, k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
        for m in models {
            let model = m.get("model_id").and_then(Value::as_str).unwrap_or("");
            let total = n(m, "warp_tokens")
                + n(m, "total_tokens")
                + n(m, "byok_tokens")
                + n(m, "custom_endpoint_tokens");
            if total == 0 {
                continue;
            }
            out.records.push(UsageRecord {
                time_ms,
                agent: self.facts.agent,
                session: Arc::from(id),
                cwd: v
                    .get("cwd")
                    .and_then(Value::as_str)
                    .or(self.facts.cwd.as_deref())
                    .map(Arc::from),
                host: self.facts.host.as_deref().map(Arc::from),
                model: (!model.is_empty()).then(|| Arc::from(model)),
                tokens: Tokens {
                    input: total,
                    ..Tokens::default()
                },
                recorded_cost: cost,
                fast: false,
                key: Some(key_of(&[b"warp", id.as_bytes(), model.as_bytes()])),
                revision: 0,
            });
        }
    }
}

impl UsageReader for WarpUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| {
            if at == 0 {
                self.header(at, line, out);
            }
        })
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
