//! Droid's token usage (SPEC §13). Droid records no usage per message: the session's
//! `<id>.settings.json` beside its file keeps the running total of its own model calls
//! (`tokenUsage`: `inputTokens`, `outputTokens`, `cacheCreationTokens`,
//! `cacheReadTokens`, `thinkingTokens`) and the model. fen-fs counts that total as one
//! record per session, at its last message's time (a fork keeps only its own calls'
//! total, so nothing is counted twice). `inputTokens` is without the cached part (seen
//! with an OpenAI-compatible provider: the prompts' tokens less `cacheReadTokens`).

use crate::usage_record::{Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, key_of};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

pub struct DroidUsage {
    facts: UnitFacts,
    settings: Option<Value>,
    session: Option<String>,
    cwd: Option<String>,
    last_time: Option<String>,
}

/// `<dir>/<id>.settings.json` of the session file at `path`.
pub fn settings_path(path: &Path) -> Option<std::path::PathBuf> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    Some(path.with_file_name(format!("{stem}.settings.json")))
}

impl DroidUsage {
    pub fn new(facts: UnitFacts, path: &Path) -> Self {
        let settings = settings_path(path)
            .and_then(|p| crate::store::open::read_small(&p, 16 << 20))
            .and_then(|b| serde_json::from_slice(&b).ok());
        DroidUsage::with_settings(facts, settings)
    }

    /// With the settings given (tests, kept copies).
    pub fn with_settings(facts: UnitFacts, settings: Option<Value>) -> Self {
        DroidUsage {
            facts,
            settings,
            session: None,
            cwd: None,
            last_time: None,
        }
    }
}

impl UsageReader for DroidUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], _out: &mut UsageOut) -> u64 {
        crate::usage_record::each_line(offset, bytes, |_, line| {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                return;
            };
            if v["type"] == "session_start" {
                self.session = v["id"].as_str().map(str::to_string);
                self.cwd = v["cwd"].as_str().map(str::to_string);
            }
            if let Some(t) = v["timestamp"].as_str() {
                self.last_time = Some(t.to_string());
            }
        })
    }

    fn finish(&mut self, offset: u64, _tail: &[u8], out: &mut UsageOut) {
        let Some(s) = &self.settings else { return };
        let u = &s["tokenUsage"];
        if !u.is_object() {
            return;
        }
        let n = |k: &str| u[k].as_u64().unwrap_or(0);
        let tokens = Tokens {
            input: n("inputTokens"),
            output: n("outputTokens"),
            cache_write_5m: n("cacheCreationTokens"),
            cache_read: n("cacheReadTokens"),
            reasoning: n("thinkingTokens"),
            ..Tokens::default()
        };
        if tokens.total() == 0 {
            return;
        }
        let Some(time_ms) = self
            .last_time
            .as_deref()
            .and_then(crate::usage_record::parse_time_ms)
        else {
            return out.malformed(offset, || "no message time for the session's usage".into());
        };
        let session = self
            .session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            key: Some(key_of(&[b"droid", session.as_bytes()])),
            session: Arc::from(session.as_str()),
            cwd: self
                .cwd
                .clone()
                .or_else(|| self.facts.cwd.clone())
                .as_deref()
                .map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: s["model"].as_str().map(Arc::from),
            tokens,
            recorded_cost: None,
            fast: false,
            revision: tokens.total(),
        });
    }

    fn follows_appends(&self) -> bool {
        // The total lives in the settings file, rewritten beside the session's.
        false
    }
}
