//! Cursor's token usage (SPEC §13), from a composer's dump: each bubble's `tokenCount`
//! (`{inputTokens, outputTokens}`, which Cursor fills on some of the model's bubbles,
//! the others keep zeros), one record per bubble with tokens, keyed by composer and
//! bubble; at the bubble's `createdAt` (else the composer's last update), with the
//! bubble's `modelInfo.modelName`, else the composer's `modelConfig.modelName`.
//! Cursor records no cache split and no cost.

use super::db::time_ms;
use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of,
};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line {
    cursor_ide: Option<String>,
    id: Option<Value>,
    cwd: Option<String>,
    composer: Option<Composer>,
    header: Option<Composer>,
    #[serde(rename = "bubbleId")]
    bubble_id: Option<String>,
    #[serde(rename = "createdAt")]
    created_at: Option<Value>,
    #[serde(rename = "tokenCount")]
    token_count: Option<Value>,
    #[serde(rename = "modelInfo")]
    model_info: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Composer {
    #[serde(rename = "lastUpdatedAt")]
    last_updated_at: Option<Value>,
    #[serde(rename = "modelConfig")]
    model_config: Option<Value>,
}

fn model_name(v: &Option<Value>) -> Option<String> {
    v.as_ref()?
        .get("modelName")?
        .as_str()
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

pub struct CursorIdeUsage {
    facts: UnitFacts,
    session: Option<String>,
    cwd: Option<String>,
    model: Option<String>,
    updated_ms: Option<i64>,
}

impl CursorIdeUsage {
    pub fn new(facts: UnitFacts) -> Self {
        CursorIdeUsage {
            facts,
            session: None,
            cwd: None,
            model: None,
            updated_ms: None,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        // Most bubbles record no tokens: skip them unparsed.
        if offset > 0 && memchr::memmem::find(raw, b"\"tokenCount\"").is_none() {
            return;
        }
        let Ok(l) = serde_json::from_slice::<Line>(raw) else {
            return;
        };
        if offset == 0 && l.cursor_ide.is_some() {
            self.session = l.id.as_ref().and_then(Value::as_str).map(str::to_string);
            self.cwd = l.cwd;
            let c = l.composer.unwrap_or_default();
            let h = l.header.unwrap_or_default();
            self.model = model_name(&c.model_config);
            self.updated_ms = c
                .last_updated_at
                .or(h.last_updated_at)
                .as_ref()
                .and_then(time_ms);
            return;
        }
        let Some(tc) = l.token_count.filter(|t| t.is_object()) else {
            return;
        };
        let n = |k: &str| -> Result<u64, String> {
            match tc.get(k) {
                None | Some(Value::Null) => Ok(0),
                Some(v) => v
                    .as_u64()
                    .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                    .ok_or_else(|| format!("tokenCount.{k}: {v} is not a token count")),
            }
        };
        let tokens = match (n("inputTokens"), n("outputTokens")) {
            (Ok(input), Ok(output)) => Tokens {
                input,
                output,
                ..Tokens::default()
            },
            (Err(why), _) | (_, Err(why)) => return out.malformed(offset, || why),
        };
        if tokens.total() == 0 {
            return;
        }
        let Some(time_ms) = l.created_at.as_ref().and_then(time_ms).or(self.updated_ms) else {
            return out.malformed(offset, || "a bubble with tokens has no time".into());
        };
        let session = self
            .session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let bubble = l.bubble_id.unwrap_or_else(|| format!("@{offset}"));
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session: Arc::from(session.as_str()),
            cwd: self
                .cwd
                .clone()
                .or_else(|| self.facts.cwd.clone())
                .map(|c| Arc::from(c.as_str())),
            host: self.facts.host.as_deref().map(Arc::from),
            model: model_name(&l.model_info)
                .or_else(|| self.model.clone())
                .map(|m| Arc::from(m.as_str())),
            tokens,
            recorded_cost: None,
            fast: false,
            key: Some(key_of(&[
                b"cursor-ide",
                session.as_bytes(),
                bubble.as_bytes(),
            ])),
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
