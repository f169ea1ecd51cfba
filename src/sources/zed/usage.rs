//! Zed's token usage (SPEC §13), from a thread's dump header: the thread's
//! `request_token_usage`, one `TokenUsage {input_tokens, output_tokens,
//! cache_creation_input_tokens, cache_read_input_tokens}` per user message (the
//! first agent's list, one per assistant message, is mapped to user messages as Zed's
//! upgrade does), each one record keyed by thread and user message; when a thread has
//! none, its `cumulative_token_usage` as one record. Zed keeps no time per message:
//! the records are at the thread's last update. The model is the thread's.

use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of,
};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Header {
    id: Option<String>,
    updated_at: Option<String>,
    folder_paths: Option<Vec<String>>,
    worktree_paths: Option<Vec<String>>,
    data_type: Option<Value>,
    thread: Option<Thread>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Thread {
    request_token_usage: BTreeMap<String, Value>,
    cumulative_token_usage: Option<Value>,
    model: Option<Value>,
}

fn tokens(u: &Value) -> Result<Tokens, String> {
    let n = |k: &str| match u.get(k) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("{k}: {v} is not a token count")),
    };
    Ok(Tokens {
        input: n("input_tokens")?,
        output: n("output_tokens")?,
        cache_write_5m: n("cache_creation_input_tokens")?,
        cache_read: n("cache_read_input_tokens")?,
        ..Tokens::default()
    })
}

pub struct ZedUsage {
    facts: UnitFacts,
}

impl ZedUsage {
    pub fn new(facts: UnitFacts) -> Self {
        ZedUsage { facts }
    }

    fn header(&self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(h) = serde_json::from_slice::<Header>(raw) else {
            return;
        };
        if h.data_type.is_none() {
            return;
        }
        let Some(thread) = h.thread else { return };
        let Some(time_ms) = h
            .updated_at
            .as_deref()
            .and_then(crate::sources::db_units::sqlite_time_ms)
        else {
            return out.malformed(offset, || "the thread has no updated_at".into());
        };
        let session =
            h.id.or_else(|| self.facts.session.clone())
                .unwrap_or_default();
        let cwd = h
            .folder_paths
            .and_then(|p| p.into_iter().next())
            .or_else(|| h.worktree_paths.and_then(|p| p.into_iter().next()))
            .or_else(|| self.facts.cwd.clone());
        let model = thread
            .model
            .as_ref()
            .and_then(|m| m.get("model"))
            .and_then(Value::as_str)
            .map(Arc::<str>::from);
        let push = |what: &str, usage: &Value, out: &mut UsageOut| {
            let t = match tokens(usage) {
                Ok(t) => t,
                Err(why) => return out.malformed(offset, || format!("{what}: {why}")),
            };
            if t.total() == 0 {
                return;
            }
            out.records.push(UsageRecord {
                time_ms,
                agent: self.facts.agent,
                session: Arc::from(session.as_str()),
                cwd: cwd.as_deref().map(Arc::from),
                host: self.facts.host.as_deref().map(Arc::from),
                model: model.clone(),
                tokens: t,
                recorded_cost: None,
                fast: false,
                key: Some(key_of(&[b"zed", session.as_bytes(), what.as_bytes()])),
                revision: 0,
            });
        };
        if thread.request_token_usage.is_empty() {
            if let Some(c) = &thread.cumulative_token_usage {
                push("cumulative", c, out);
            }
            return;
        }
        for (user, usage) in &thread.request_token_usage {
            push(user, usage, out);
        }
    }
}

impl UsageReader for ZedUsage {
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
