//! Cline's and Roo Code's token usage (SPEC §13), from a session's dump
//! (`sources/whole_json.rs` sections):
//!
//! - Cline 3.x: each assistant message's `metrics` (`inputTokens`, `outputTokens`,
//!   `cacheReadTokens`, `cacheWriteTokens`, `cost` when known) in `<id>.messages.json`,
//!   at its `ts`, the model its `modelInfo.id`. `inputTokens` is the AI SDK's total
//!   input (cache reads and writes included: Cline's own pricing takes them out, as
//!   here). The compaction file's copies of messages are not counted again.
//! - Task folders (Cline before 3.x, Roo Code): each request's `api_req_started` UI
//!   message (`tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`, `cost`) at its
//!   `ts`; no model is recorded there.
//!
//! A response is its message id (3.x) or its request's time (task folders) within
//! the session. A dump is made anew when a file changes: it is read whole.

use crate::json::RawObject;
use crate::usage_record::{
    Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, key_of, raw_number,
};
use std::sync::Arc;

pub struct ClineUsage {
    facts: UnitFacts,
    name: &'static str,
    section: String,
    session: Option<String>,
    cwd: Option<String>,
}

impl ClineUsage {
    /// The usage of `name`'s sessions (`cline`, `roo`: the first part of each key).
    pub fn new(name: &'static str, facts: UnitFacts) -> Self {
        ClineUsage {
            facts,
            name,
            section: String::new(),
            session: None,
            cwd: None,
        }
    }

    fn count(o: &RawObject, k: &str) -> Result<u64, String> {
        match o.get(k).map(|v| v.get()) {
            None | Some("null") => Ok(0),
            Some(s) => s
                .parse::<f64>()
                .ok()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
                .ok_or_else(|| format!("{k}: {s} is not a token count")),
        }
    }

    fn push(
        &self,
        out: &mut UsageOut,
        time_ms: i64,
        model: Option<String>,
        tokens: Tokens,
        cost: Option<f64>,
        id: &str,
    ) {
        let session = self
            .session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            key: Some(key_of(&[
                self.name.as_bytes(),
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
            tokens,
            recorded_cost: cost,
            fast: false,
            revision: 0,
        });
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(text) = std::str::from_utf8(raw) else {
            return;
        };
        let Ok(o) = RawObject::parse(text) else {
            return;
        };
        let s = |k: &str| o.get(k).and_then(crate::json::as_string);
        if let Some(name) = s("fen_file") {
            match name.as_str() {
                "state/taskHistory.json" | "history_item.json" => {
                    self.session = s("id").or(self.session.take());
                    self.cwd = s("cwdOnTaskInitialization")
                        .or_else(|| s("workspace"))
                        .or(self.cwd.take());
                }
                n if n.ends_with(".messages.json") => {
                    self.session = s("sessionId").or(self.session.take());
                }
                n if n.ends_with(".json")
                    && !n.ends_with(".compaction.json")
                    && n != "api_conversation_history.json"
                    && n != "ui_messages.json"
                    && n != "task_metadata.json" =>
                {
                    self.session = s("session_id").or(self.session.take());
                    self.cwd = s("cwd").or(self.cwd.take());
                }
                _ => {}
            }
            self.section = name;
            return;
        }
        let ms = |k: &str| {
            o.get(k)
                .and_then(|v| v.get().parse::<f64>().ok())
                .map(|f| f as i64)
        };
        if self.section.ends_with(".messages.json") {
            if s("role").as_deref() != Some("assistant") {
                return;
            }
            let Some(metrics) = o.get("metrics") else {
                return;
            };
            let Ok(m) = RawObject::parse(metrics.get()) else {
                return out.malformed(offset, || "metrics is not an object".into());
            };
            let counts = (|| {
                let read = Self::count(&m, "cacheReadTokens")?;
                let write = Self::count(&m, "cacheWriteTokens")?;
                let input = Self::count(&m, "inputTokens")?;
                Ok::<_, String>(Tokens {
                    input: input.saturating_sub(read + write),
                    output: Self::count(&m, "outputTokens")?,
                    cache_read: read,
                    cache_write_5m: write,
                    ..Tokens::default()
                })
            })();
            let tokens = match counts {
                Ok(t) => t,
                Err(why) => return out.malformed(offset, || why),
            };
            let Some(ts) = ms("ts") else {
                return out.malformed(offset, || "no ts".into());
            };
            let model = o
                .get("modelInfo")
                .and_then(|i| RawObject::parse(i.get()).ok())
                .and_then(|i| i.get("id").and_then(crate::json::as_string));
            let id = s("id").unwrap_or_else(|| ts.to_string());
            let cost = raw_number(m.get("cost"));
            self.push(out, ts, model, tokens, cost, &id);
        } else if self.section == "ui_messages.json" {
            if s("say").as_deref() != Some("api_req_started") {
                return;
            }
            let Some(info) = s("text") else { return };
            let Ok(r) = RawObject::parse(&info) else {
                return out.malformed(offset, || "api_req_started text is not JSON".into());
            };
            if r.get("tokensIn").is_none() && r.get("tokensOut").is_none() {
                // A request still running (or cancelled before any count).
                return;
            }
            let counts = (|| {
                Ok::<_, String>(Tokens {
                    input: Self::count(&r, "tokensIn")?,
                    output: Self::count(&r, "tokensOut")?,
                    cache_read: Self::count(&r, "cacheReads")?,
                    cache_write_5m: Self::count(&r, "cacheWrites")?,
                    ..Tokens::default()
                })
            })();
            let tokens = match counts {
                Ok(t) => t,
                Err(why) => return out.malformed(offset, || why),
            };
            let Some(ts) = ms("ts") else {
                return out.malformed(offset, || "no ts".into());
            };
            let cost = raw_number(r.get("cost"));
            self.push(out, ts, None, tokens, cost, &ts.to_string());
        }
    }
}

impl UsageReader for ClineUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
