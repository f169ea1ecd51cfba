//! OpenCode's token usage (SPEC §13), from a session's dump (`db.rs`, `storage.rs`):
//! each assistant message's `tokens` `{input, output, reasoning, cache: {read,
//! write}}` and the `cost` OpenCode recorded, at `time.created`. The parts' own
//! `step-finish` tokens repeat the message's and are not counted. A response is its
//! message id. A dump is made anew when its database changes: it is read whole.

use crate::usage_record::{
    Needle, Tokens, UnitFacts, UsageOut, UsageReader, UsageRecord, each_line, field_count, key_of,
    raw_number, raw_str,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

static TOKENS: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"tokens\""));

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    role: Option<&'a RawValue>,
    #[serde(borrow, default)]
    directory: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "modelID")]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cost: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tokens: Option<Counts<'a>>,
    #[serde(borrow, default)]
    time: Option<Time<'a>>,
}

#[derive(Deserialize)]
struct Counts<'a> {
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reasoning: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cache: Option<Cache<'a>>,
}

#[derive(Deserialize)]
struct Cache<'a> {
    #[serde(borrow, default)]
    read: Option<&'a RawValue>,
    #[serde(borrow, default)]
    write: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Time<'a> {
    #[serde(borrow, default)]
    created: Option<&'a RawValue>,
}

pub struct OpencodeUsage {
    facts: UnitFacts,
    /// The agent's name, the first part of each record's key (a fork's message ids are
    /// its own).
    name: &'static str,
    session: Option<String>,
    cwd: Option<String>,
}

impl OpencodeUsage {
    pub fn new(facts: UnitFacts) -> Self {
        Self::of(&super::OPENCODE, facts)
    }

    /// The usage of an agent storing sessions as OpenCode does, by its names.
    pub fn of(flavor: &super::Flavor, facts: UnitFacts) -> Self {
        OpencodeUsage {
            facts,
            name: flavor.name,
            session: None,
            cwd: None,
        }
    }

    fn line(&mut self, offset: u64, raw: &[u8], out: &mut UsageOut) {
        let first = offset == 0;
        if !first && !TOKENS.is_in(raw) {
            return;
        }
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return;
        };
        let Ok(line) = serde_json::from_str::<Line>(text) else {
            return;
        };
        if first {
            // The session itself.
            self.session = raw_str(line.id).map(|s| s.into_owned());
            self.cwd = raw_str(line.directory).map(|s| s.into_owned());
            return;
        }
        if raw_str(line.role).as_deref() != Some("assistant") {
            return;
        }
        let Some(c) = &line.tokens else { return };
        let bad = |why: String| move || why;
        let n = |name: &str, v| field_count(name, v).map(|n| n.unwrap_or(0));
        let tokens = (|| {
            let cache = c.cache.as_ref();
            Ok::<_, String>(Tokens {
                input: n("input", c.input)?,
                output: n("output", c.output)?,
                reasoning: n("reasoning", c.reasoning)?,
                cache_read: n("cache.read", cache.and_then(|c| c.read))?,
                cache_write_5m: n("cache.write", cache.and_then(|c| c.write))?,
                ..Tokens::default()
            })
        })();
        let tokens = match tokens {
            Ok(t) => t,
            Err(why) => return out.malformed(offset, bad(format!("tokens: {why}"))),
        };
        let Some(time_ms) = line
            .time
            .as_ref()
            .and_then(|t| t.created)
            .and_then(|t| t.get().parse::<i64>().ok())
        else {
            return out.malformed(offset, bad("no time.created".into()));
        };
        let session = self
            .session
            .clone()
            .or_else(|| self.facts.session.clone())
            .unwrap_or_default();
        let key = raw_str(line.id).map(|id| key_of(&[self.name.as_bytes(), id.as_bytes()]));
        out.records.push(UsageRecord {
            time_ms,
            agent: self.facts.agent,
            session: Arc::from(session),
            cwd: self
                .cwd
                .as_deref()
                .or(self.facts.cwd.as_deref())
                .map(Arc::from),
            host: self.facts.host.as_deref().map(Arc::from),
            model: raw_str(line.model).map(|m| Arc::from(m.as_ref())),
            tokens,
            recorded_cost: raw_number(line.cost),
            fast: false,
            key,
            revision: 0,
        });
    }
}

impl UsageReader for OpencodeUsage {
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64 {
        each_line(offset, bytes, |at, line| self.line(at, line, out))
    }

    fn follows_appends(&self) -> bool {
        false
    }
}
