//! Copilot Chat's token usage (SPEC §13), from a session's dump: each answered
//! request's `result.metadata` `promptTokens` (the whole prompt of the turn) and
//! `outputTokens`, at the request's `timestamp`, the model `resolvedModel` (else the
//! request's `modelId` without `copilot/`). No cost is recorded (a subscription).
//! A response is its request id within the session. Read whole on each change.

use crate::json::RawObject;
use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of,
};
use serde_json::Value;
use std::sync::Arc;

pub struct ChatUsage {
    facts: UnitFacts,
    session: Option<String>,
    cwd: Option<String>,
}

impl ChatUsage {
    pub fn new(facts: UnitFacts) -> Self {
        ChatUsage {
            facts,
            session: None,
            cwd: None,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Some(o) = std::str::from_utf8(raw)
            .ok()
            .and_then(|t| RawObject::parse(t).ok())
        else {
            return;
        };
        let s = |k: &str| o.get(k).and_then(crate::json::as_string);
        if let Some(name) = s("fen_file") {
            if name == "workspace.json" {
                self.cwd = s("folder");
            } else {
                self.session =
                    s("sessionId").or_else(|| name.rsplit_once('.').map(|(id, _)| id.to_string()));
            }
            return;
        }
        if s("role").as_deref() != Some("assistant") {
            return;
        }
        let Some(meta) = o
            .get("result")
            .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
            .and_then(|r| r.get("metadata").cloned())
        else {
            return;
        };
        let count = |k: &str| meta.get(k).and_then(Value::as_u64);
        let (Some(input), Some(output)) = (count("promptTokens"), count("outputTokens")) else {
            if meta.get("promptTokens").is_some() || meta.get("outputTokens").is_some() {
                out.malformed(offset, || {
                    "promptTokens or outputTokens is not a count".into()
                });
            }
            return;
        };
        let Some(ts) = o
            .get("timestamp")
            .and_then(|t| t.get().parse::<f64>().ok())
            .map(|f| f as i64)
        else {
            return out.malformed(offset, || "no timestamp".into());
        };
        let model = meta
            .get("resolvedModel")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| s("modelId").map(|m| m.strip_prefix("copilot/").unwrap_or(&m).to_string()));
        let session = self
            .session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let id = s("requestId").unwrap_or_else(|| ts.to_string());
        out.records.push(UsageRecord {
            time_ms: ts,
            agent: self.facts.agent,
            key: Some(key_of(&[
                b"vscode-copilot",
                session.as_bytes(),
                id.as_bytes(),
            ])),
            session: Arc::from(session),
            cwd: self
                .cwd
                .as_deref()
                .or(self.facts.cwd.as_deref())
                .map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: model.map(|m| Arc::from(m.as_str())),
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

impl UsageReader for ChatUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
