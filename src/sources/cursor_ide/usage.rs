//! Cursor's token usage (SPEC §13), where it records any: an assistant bubble's
//! `tokenCount` (`inputTokens`, `outputTokens`; zero in most bubbles, which count
//! nothing), at its `createdAt`, the model its `modelInfo.modelName`, else the
//! composer's `modelConfig.modelName`. A response is its bubble id.

use crate::json::RawObject;
use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of,
};
use serde_json::Value;
use std::sync::Arc;

pub struct CursorIdeUsage {
    facts: UnitFacts,
    composer: Option<String>,
    model: Option<String>,
    cwd: Option<String>,
    updated_ms: Option<i64>,
}

impl CursorIdeUsage {
    pub fn new(facts: UnitFacts) -> Self {
        CursorIdeUsage {
            facts,
            composer: None,
            model: None,
            cwd: None,
            updated_ms: None,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            return;
        };
        if v.get("fen_file").is_some() {
            self.cwd = v.get("folder").and_then(Value::as_str).map(str::to_string);
            return;
        }
        let Some(key) = v.get("fen_key").and_then(Value::as_str) else {
            return;
        };
        if key.starts_with("composerData:") && !key.contains('#') {
            self.composer = Some(key["composerData:".len()..].to_string());
            self.model = v
                .pointer("/modelConfig/modelName")
                .and_then(Value::as_str)
                .map(str::to_string);
            self.updated_ms = v
                .get("lastUpdatedAt")
                .and_then(Value::as_f64)
                .map(|f| f as i64);
            return;
        }
        let Some(tc) = v.get("tokenCount") else {
            return;
        };
        let count = |k: &str| tc.get(k).and_then(Value::as_u64);
        let (Some(input), Some(output)) = (count("inputTokens"), count("outputTokens")) else {
            return out.malformed(offset, || "tokenCount is not two counts".into());
        };
        if input == 0 && output == 0 {
            return;
        }
        let raw_time = std::str::from_utf8(raw)
            .ok()
            .and_then(|t| RawObject::parse(t).ok())
            .and_then(|o| super::reader::time_of(o.get("createdAt")));
        let Some(time_ms) = raw_time
            .and_then(|t| crate::usage_record::parse_time_ms(&t))
            .or(self.updated_ms)
        else {
            return out.malformed(offset, || "no createdAt".into());
        };
        let session = self
            .composer
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let id = v
            .get("bubbleId")
            .and_then(Value::as_str)
            .unwrap_or(key)
            .to_string();
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            key: Some(key_of(&[b"cursor-ide", session.as_bytes(), id.as_bytes()])),
            session: Arc::from(session),
            cwd: self
                .cwd
                .as_deref()
                .or(self.facts.cwd.as_deref())
                .map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: v
                .pointer("/modelInfo/modelName")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| self.model.clone())
                .map(|m| Arc::from(m.as_str())),
            tokens: Tokens {
                input,
                output,
                ..Tokens::default()
            },
            recorded_cost: None,
            fast: false,
            revision: 0,
        });
    }
}

impl UsageReader for CursorIdeUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
