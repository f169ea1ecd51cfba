//! Goose's token usage (SPEC §13), from a session's dump (`db.rs`) or legacy file.
//!
//! Since schema version 15 Goose writes one `usage_ledger` row per model call
//! (`insert_usage_ledger_row` / `record_usage_metrics` in `session_manager.rs`): its
//! model, `input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens`,
//! the `cost` it recorded, and `is_compaction` (a compaction's call is ordinary
//! usage). A `carried_forward` row is what the session's running totals held beyond
//! the ledger when the ledger began: counted like the others. Goose's input count
//! includes the cached tokens (its providers' `Usage` adds cache reads and writes to
//! the input), so the cached ones are taken out of `input` here. Each row is one
//! response, keyed by session and row id.
//!
//! A session with no ledger rows (written before version 15, or a legacy JSONL file)
//! has only running totals (`accumulated_*` on its row or metadata line): those are
//! one record at the session's last update. The per-message `metadata.usage` repeats
//! the ledger and is not read.

use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of, raw_number, raw_str,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    created: Option<&'a RawValue>,
    #[serde(borrow)]
    working_dir: Option<&'a RawValue>,
    #[serde(borrow)]
    updated_at: Option<&'a RawValue>,
    #[serde(borrow)]
    model_config_json: Option<&'a RawValue>,
    #[serde(borrow)]
    accumulated_input_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    accumulated_output_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    accumulated_cache_read_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    accumulated_cache_write_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    accumulated_cost: Option<&'a RawValue>,
    #[serde(borrow)]
    usage_ledger: Option<Ledger<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Ledger<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    session_id: Option<&'a RawValue>,
    #[serde(borrow)]
    created_timestamp: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    input_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    output_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    cache_read_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    cache_write_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    cost: Option<&'a RawValue>,
}

/// A count column: Goose stores signed integers; a negative one counts as nothing.
fn count(v: Option<&RawValue>) -> Result<u64, String> {
    match v.map(|v| v.get()) {
        None | Some("null") => Ok(0),
        Some(s) => s
            .parse::<i64>()
            .map(|n| n.max(0) as u64)
            .map_err(|_| format!("{s} is not a token count")),
    }
}

/// Goose's counts with the cached tokens out of the input.
fn tokens(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Tokens {
    Tokens {
        input: input.saturating_sub(cache_read + cache_write),
        output,
        cache_read,
        cache_write_5m: cache_write,
        ..Tokens::default()
    }
}

/// The running totals of a session row or metadata line.
#[derive(Default)]
struct Totals {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: Option<f64>,
}

pub struct GooseUsage {
    facts: UnitFacts,
    session: Option<String>,
    cwd: Option<String>,
    model: Option<String>,
    totals: Option<Totals>,
    updated_ms: Option<i64>,
    last_message_ms: Option<i64>,
    ledger_rows: u64,
}

impl GooseUsage {
    pub fn new(facts: UnitFacts) -> Self {
        GooseUsage {
            facts,
            session: None,
            cwd: None,
            model: None,
            totals: None,
            updated_ms: None,
            last_message_ms: None,
            ledger_rows: 0,
        }
    }

    fn session(&self) -> String {
        self.session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default()
    }

    fn record(
        &self,
        time_ms: i64,
        model: Option<String>,
        tokens: Tokens,
        cost: Option<f64>,
        key: u64,
    ) -> UsageRecord {
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
            model: model.or_else(|| self.model.clone()).map(Arc::from),
            tokens,
            recorded_cost: cost,
            fast: false,
            key: Some(key),
            revision: 0,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            return;
        };
        if let Some(l) = &line.usage_ledger {
            self.ledger_rows += 1;
            let counts = (|| {
                Ok::<_, String>(tokens(
                    count(l.input_tokens)?,
                    count(l.output_tokens)?,
                    count(l.cache_read_tokens)?,
                    count(l.cache_write_tokens)?,
                ))
            })();
            let t = match counts {
                Ok(t) => t,
                Err(why) => return out.malformed(offset, || format!("usage_ledger: {why}")),
            };
            let Some(secs) = l
                .created_timestamp
                .and_then(|v| v.get().parse::<i64>().ok())
            else {
                return out.malformed(offset, || "usage_ledger: no created_timestamp".into());
            };
            if t.total() == 0 && raw_number(l.cost).unwrap_or(0.0) == 0.0 {
                return;
            }
            let session = raw_str(l.session_id)
                .map(|s| s.into_owned())
                .unwrap_or_else(|| self.session());
            let row = l.id.map(|v| v.get()).unwrap_or("");
            let key = key_of(&[b"goose", session.as_bytes(), row.as_bytes()]);
            let model = raw_str(l.model).map(|m| m.into_owned());
            let rec = self.record(
                super::db::message_ms(secs),
                model,
                t,
                raw_number(l.cost),
                key,
            );
            out.records.push(rec);
            return;
        }
        if line.role.is_some() {
            if let Some(c) = line.created.and_then(|v| v.get().parse::<i64>().ok()) {
                let ms = super::db::message_ms(c);
                self.last_message_ms = Some(self.last_message_ms.map_or(ms, |m| m.max(ms)));
            }
            return;
        }
        if offset != 0 {
            return;
        }
        // The session row, or a legacy file's metadata line.
        self.session = raw_str(line.id)
            .map(|s| s.into_owned())
            .or(self.session.take());
        self.cwd = raw_str(line.working_dir).map(|s| s.into_owned());
        self.updated_ms =
            raw_str(line.updated_at).and_then(|t| crate::sources::db_units::sqlite_time_ms(&t));
        self.model = raw_str(line.model_config_json)
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|m| m.get("model_name")?.as_str().map(str::to_string));
        let totals = (|| {
            Ok::<_, String>(Totals {
                input: count(line.accumulated_input_tokens)?,
                output: count(line.accumulated_output_tokens)?,
                cache_read: count(line.accumulated_cache_read_tokens)?,
                cache_write: count(line.accumulated_cache_write_tokens)?,
                cost: raw_number(line.accumulated_cost),
            })
        })();
        match totals {
            Ok(t) => self.totals = Some(t),
            Err(why) => out.malformed(offset, || format!("session totals: {why}")),
        }
    }
}

impl UsageReader for GooseUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn finish(&mut self, _offset: u64, _tail: &[u8], out: &mut UsageOut) {
        if self.ledger_rows > 0 {
            return;
        }
        let Some(t) = &self.totals else { return };
        let tokens = tokens(t.input, t.output, t.cache_read, t.cache_write);
        if tokens.total() == 0 && t.cost.unwrap_or(0.0) == 0.0 {
            return;
        }
        let Some(time_ms) = self.updated_ms.or(self.last_message_ms) else {
            return;
        };
        let session = self.session();
        let key = key_of(&[b"goose", session.as_bytes(), b"accumulated"]);
        let rec = self.record(time_ms, None, tokens, t.cost, key);
        out.records.push(rec);
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
