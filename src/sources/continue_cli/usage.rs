//! `cn`'s token usage (SPEC §13): the `usage` of each assistant message of a
//! session's history (`prompt_tokens` including `prompt_tokens_details.cached_tokens`,
//! `completion_tokens`, `model`, `cost_cents`), each response once. A fork (`cn --fork
//! ID`) copies the history into a new session, so a response is known by its content
//! (the message and its usage), not by its place. The file keeps no time per message:
//! each record takes the session's creation (from `sessions.json`), else the file's
//! last change. A compaction's request leaves no message: its tokens are only in the
//! session's running total (`usage`), which is not counted (it would count every
//! response twice).

use crate::usage_record::{Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, key_of};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

pub struct ContinueUsage {
    facts: UnitFacts,
    time_ms: Option<i64>,
}

impl ContinueUsage {
    /// `path`: the session file (its creation time comes from `sessions.json` beside
    /// it, else its mtime).
    pub fn new(facts: UnitFacts, path: &Path) -> Self {
        let mtime = std::fs::symlink_metadata(path)
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64);
        let created = path.parent().and_then(|dir| {
            let id = path.file_stem()?.to_str()?;
            super::index_entry(dir, id)
                .flatten()
                .and_then(|t| crate::usage_record::parse_time_ms(&t))
        });
        ContinueUsage {
            facts,
            time_ms: created.or(mtime),
        }
    }

    /// With a known time (tests, kept copies).
    pub fn at(facts: UnitFacts, time_ms: i64) -> Self {
        ContinueUsage {
            facts,
            time_ms: Some(time_ms),
        }
    }
}

fn count(v: &Value) -> Result<u64, String> {
    match v {
        Value::Null => Ok(0),
        v => v
            .as_u64()
            .ok_or_else(|| format!("{v} is not a token count")),
    }
}

impl UsageReader for ContinueUsage {
    fn feed(&mut self, _offset: u64, _bytes: &[u8], _out: &mut UsageOut) -> u64 {
        // One JSON document, rewritten whole: read at the end.
        0
    }

    fn finish(&mut self, offset: u64, tail: &[u8], out: &mut UsageOut) {
        let Ok(doc) = serde_json::from_slice::<Value>(tail) else {
            return;
        };
        let session = doc["sessionId"]
            .as_str()
            .map(str::to_string)
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let cwd = doc["workspaceDirectory"]
            .as_str()
            .map(str::to_string)
            .or_else(|| self.facts.cwd.clone());
        let Some(time_ms) = self.time_ms else {
            return;
        };
        for item in doc["history"].as_array().into_iter().flatten() {
            let message = &item["message"];
            let usage = &message["usage"];
            if message["role"] != "assistant" || !usage.is_object() {
                continue;
            }
            let read = (|| -> Result<Tokens, String> {
                let prompt = count(&usage["prompt_tokens"])?;
                let cached = count(&usage["prompt_tokens_details"]["cached_tokens"])?;
                let written = count(&usage["prompt_tokens_details"]["cache_write_tokens"])?;
                Ok(Tokens {
                    input: prompt.saturating_sub(cached),
                    output: count(&usage["completion_tokens"])?,
                    cache_read: cached.min(prompt),
                    cache_write_5m: written,
                    ..Tokens::default()
                })
            })();
            let tokens = match read {
                Ok(t) => t,
                Err(why) => {
                    out.malformed(offset, || format!("usage: {why}"));
                    continue;
                }
            };
            let cost = usage["cost_cents"]
                .as_f64()
                .filter(|c| *c > 0.0)
                .map(|c| c / 100.0);
            out.records.push(UsageRecord {
                time_ms,
                agent: self.facts.agent,
                session: Arc::from(session.as_str()),
                cwd: cwd.as_deref().map(Arc::from),
                host: self.facts.host.as_deref().map(Arc::from),
                model: usage["model"].as_str().map(Arc::from),
                tokens,
                recorded_cost: cost,
                fast: false,
                key: Some(key_of(&[b"continue", message.to_string().as_bytes()])),
                revision: 0,
            });
        }
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
