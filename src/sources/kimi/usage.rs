//! Kimi's token usage (SPEC §13), from each session's `wire.jsonl` (the UI event
//! log beside `context.jsonl`, `wire/file.py`): a `StatusUpdate` record per step
//! carries `payload.token_usage` (`input_other`, `output`, `input_cache_read`,
//! `input_cache_creation`: kosong's `TokenUsage`) and the step's `message_id`, at the
//! record's `timestamp` (seconds since the epoch), keyed by both (a fork copies its
//! parent's records whole; a provider may reuse a response id). Kimi records no model
//! there.
//! A subagent's `wire.jsonl` (`<session>/subagents/<id>/`) counts for its session.

use crate::usage_record::{
    Needle, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line_holding, key_of,
};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

static TOKEN_USAGE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"token_usage\""));

pub struct KimiUsage {
    facts: UnitFacts,
    /// The session's id: the folder under the work dir's folder.
    session: String,
}

impl KimiUsage {
    pub fn new(facts: UnitFacts, path: &Path) -> Self {
        // sessions/<md5>/<id>/wire.jsonl, or …/<id>/subagents/<sub>/wire.jsonl.
        let session = path
            .ancestors()
            .skip(1)
            .find(|a| {
                a.parent()
                    .and_then(Path::parent)
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "sessions")
            })
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .or_else(|| facts.session.clone())
            .unwrap_or_default();
        KimiUsage { facts, session }
    }
}

impl UsageReader for KimiUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line_holding(offset, bytes, TOKEN_USAGE.finder(), |at, line| {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                return out.malformed(at, || "not a JSON line".into());
            };
            let m = &v["message"];
            if m["type"] != "StatusUpdate" {
                return;
            }
            let u = &m["payload"]["token_usage"];
            if !u.is_object() {
                return;
            }
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let tokens = Tokens {
                input: n("input_other"),
                output: n("output"),
                cache_read: n("input_cache_read"),
                cache_write_5m: n("input_cache_creation"),
                ..Tokens::default()
            };
            let Some(secs) = v["timestamp"].as_f64() else {
                return out.malformed(at, || "a StatusUpdate without a timestamp".into());
            };
            // The response's id and the record's time: a fork copies both.
            let step = m["payload"]["message_id"].as_str().unwrap_or("");
            let time = v["timestamp"].to_string();
            out.records.push(UsageRecord {
                time_ms: (secs * 1000.0) as i64,
                agent: self.facts.agent,
                key: Some(key_of(&[b"kimi", step.as_bytes(), time.as_bytes()])),
                session: Arc::from(self.session.as_str()),
                cwd: self.facts.cwd.as_deref().map(Arc::from),
                host: self.facts.host.as_deref().map(Arc::from),
                model: None,
                tokens,
                recorded_cost: None,
                fast: false,
                revision: 0,
            });
        })
    }
}
