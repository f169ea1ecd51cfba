//! Aider's token usage (SPEC §13): the `Tokens: … Cost: …` line Aider writes into its
//! history after each answer (`calculate_and_show_tokens_and_cost`), read from a run's
//! dump (`aider.rs`). fen-fs counts them, marked for what they are:
//! - the counts are the API's usage when the provider returned it, else Aider's own
//!   estimate of the prompt and answer, and they are shown rounded (`1.2k`, `12k`):
//!   a record's tokens are as precise as that line;
//! - one line covers one user message: every model call it took (a reflection, a
//!   retry), so a record is a message, not a call; `sent` includes the cache writes
//!   Aider adds for providers that report them;
//! - the cost is Aider's (`$… message`), kept as the recorded cost;
//! - the file has no time per message: each record takes its run's start; the model
//!   is the one the run's `Model:` (or `Main model:`) line names.

use crate::usage_record::{Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, key_of};
use std::sync::Arc;

pub struct AiderUsage {
    facts: UnitFacts,
    run: Option<Run>,
    /// `Tokens:` lines seen in this run (the key of each).
    lines: u64,
}

#[derive(Clone)]
struct Run {
    id: String,
    cwd: Option<String>,
    time_ms: Option<i64>,
    model: Option<String>,
}

impl AiderUsage {
    pub fn new(facts: UnitFacts) -> Self {
        AiderUsage {
            facts,
            run: None,
            lines: 0,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(raw) else {
            return;
        };
        if v["type"] == "run" {
            let time = v["started_at"]
                .as_str()
                .or(v["updated_at"].as_str())
                .and_then(crate::usage_record::parse_time_ms);
            self.run = Some(Run {
                id: v["id"].as_str().unwrap_or_default().to_string(),
                cwd: v["cwd"].as_str().map(str::to_string),
                time_ms: time,
                model: None,
            });
            return;
        }
        if v["role"] != "tool" {
            return;
        }
        let Some(content) = v["content"].as_str() else {
            return;
        };
        for l in content.lines() {
            let l = l.trim_end();
            if let Some(m) = model_of(l)
                && let Some(run) = &mut self.run
                && run.model.is_none()
            {
                run.model = Some(m.to_string());
            }
            let Some(counts) = l.strip_prefix("Tokens: ") else {
                continue;
            };
            self.lines += 1;
            let Some(run) = self.run.clone() else {
                return out.malformed(offset, || "a Tokens line before the run's header".into());
            };
            let Some(time_ms) = run.time_ms else {
                return out.malformed(offset, || "the run names no start time".into());
            };
            let (tokens, cost) = match parse_tokens(counts) {
                Some(t) => t,
                None => {
                    let line = l.to_string();
                    out.malformed(offset, || format!("unreadable {line:?}"));
                    continue;
                }
            };
            let session = if run.id.is_empty() {
                self.facts.session.clone().unwrap_or_default()
            } else {
                run.id.clone()
            };
            let n = self.lines.to_string();
            out.records.push(UsageRecord {
                time_ms,
                agent: self.facts.agent,
                key: Some(key_of(&[b"aider", session.as_bytes(), n.as_bytes()])),
                session: Arc::from(session),
                cwd: run
                    .cwd
                    .or_else(|| self.facts.cwd.clone())
                    .as_deref()
                    .map(Arc::from),
                host: self.facts.host.as_deref().map(Arc::from),
                model: run.model.as_deref().map(Arc::from),
                tokens,
                recorded_cost: cost,
                fast: false,
                revision: 0,
            });
        }
    }
}

/// The model a run's announcement names: `Model: X with …` or `Main model: X with …`.
fn model_of(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("Main model: ")
        .or_else(|| line.strip_prefix("Model: "))?;
    let model = rest.split(" with ").next()?.trim();
    (!model.is_empty()).then_some(model)
}

/// A count as Aider shows it (`format_tokens`): `999`, `1.2k`, `12k`.
fn count(s: &str) -> Option<u64> {
    let s = s.trim().replace(',', "");
    if let Some(k) = s.strip_suffix('k') {
        return k.parse::<f64>().ok().map(|n| (n * 1000.0).round() as u64);
    }
    if let Some(m) = s.strip_suffix('M') {
        return m
            .parse::<f64>()
            .ok()
            .map(|n| (n * 1_000_000.0).round() as u64);
    }
    s.parse().ok()
}

/// `124 sent, 5 received. Cost: $0.00013 message, $0.00013 session.` (and the
/// `cache write` / `cache hit` parts between): the tokens and the message's cost.
fn parse_tokens(s: &str) -> Option<(Tokens, Option<f64>)> {
    let (counts, cost) = match s.split_once("Cost:") {
        Some((c, cost)) => (c, Some(cost)),
        None => (s, None),
    };
    let mut t = Tokens::default();
    let mut sent = None;
    for part in counts.trim().trim_end_matches('.').split(", ") {
        let part = part.trim().trim_end_matches('.');
        let (n, what) = part.split_once(' ')?;
        let n = count(n)?;
        match what {
            "sent" => sent = Some(n),
            "received" => t.output = n,
            "cache write" => t.cache_write_5m = n,
            "cache hit" => t.cache_read = n,
            _ => return None,
        }
    }
    t.input = sent?.saturating_sub(t.cache_write_5m);
    let cost = cost.and_then(|c| {
        let first = c.trim().split(',').next()?.trim();
        first
            .strip_prefix('$')?
            .strip_suffix(" message")?
            .parse::<f64>()
            .ok()
    });
    Some((t, cost))
}

impl UsageReader for AiderUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        crate::usage_record::each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn follows_appends(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_lines_read_as_aider_writes_them() {
        let (t, cost) =
            parse_tokens("124 sent, 5 received. Cost: $0.00013 message, $0.00013 session.")
                .unwrap();
        assert_eq!((t.input, t.output, cost), (124, 5, Some(0.00013)));
        let (t, _) =
            parse_tokens("2.5k sent, 1.1k cache write, 12k cache hit, 147 received.").unwrap();
        assert_eq!(
            (t.input, t.cache_write_5m, t.cache_read, t.output),
            (1400, 1100, 12000, 147)
        );
        assert!(parse_tokens("many sent").is_none());
        assert_eq!(
            model_of(
                "Main model: anthropic/claude-sonnet-4 with diff edit format, infinite output"
            ),
            Some("anthropic/claude-sonnet-4")
        );
        assert_eq!(
            model_of("Model: openai/mock with whole edit format"),
            Some("openai/mock")
        );
    }
}
