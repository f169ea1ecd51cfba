//! The reports of `fen-fs usage` and `usage/`: priced responses grouped by day, ISO
//! week, month, session, project (cwd), model, agent or host, filtered by date (in the
//! report's time zone), agent, cwd and host; as JSON objects (SPEC §13's field names)
//! or a table.

use super::zone::Zone;
use crate::agent::Agent;
use crate::usage_record::Tokens;
use chrono::{Datelike, NaiveDate};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// What rows are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Daily,
    Weekly,
    Monthly,
    Session,
    Project,
    Model,
    Agent,
    Host,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Daily,
        Kind::Weekly,
        Kind::Monthly,
        Kind::Session,
        Kind::Project,
        Kind::Model,
        Kind::Agent,
        Kind::Host,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Daily => "daily",
            Kind::Weekly => "weekly",
            Kind::Monthly => "monthly",
            Kind::Session => "session",
            Kind::Project => "project",
            Kind::Model => "model",
            Kind::Agent => "agent",
            Kind::Host => "host",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The JSON key that names a row's subject.
    pub fn key_name(self) -> &'static str {
        match self {
            Kind::Daily | Kind::Weekly | Kind::Monthly => "period",
            Kind::Session => "session",
            Kind::Project => "project",
            Kind::Model => "model",
            Kind::Agent => "agent",
            Kind::Host => "host",
        }
    }

    /// The table's first column.
    fn heading(self) -> &'static str {
        match self {
            Kind::Daily => "DAY",
            Kind::Weekly => "WEEK",
            Kind::Monthly => "MONTH",
            Kind::Session => "SESSION",
            Kind::Project => "PROJECT",
            Kind::Model => "MODEL",
            Kind::Agent => "AGENT",
            Kind::Host => "HOST",
        }
    }

    fn is_time(self) -> bool {
        matches!(self, Kind::Daily | Kind::Weekly | Kind::Monthly)
    }
}

/// What a report is asked.
#[derive(Debug, Clone)]
pub struct Query {
    pub kind: Kind,
    /// First and last day counted (inclusive), in `zone`.
    pub since: Option<NaiveDate>,
    pub until: Option<NaiveDate>,
    pub agent: Option<Agent>,
    /// Only the sessions whose cwd is this folder.
    pub cwd: Option<String>,
    pub host: Option<String>,
    /// One row per model within each row.
    pub breakdown: bool,
    pub zone: Zone,
}

impl Query {
    pub fn new(kind: Kind, zone: Zone) -> Query {
        Query {
            kind,
            since: None,
            until: None,
            agent: None,
            cwd: None,
            host: None,
            breakdown: false,
            zone,
        }
    }
}

/// One counted response, priced.
#[derive(Debug, Clone)]
pub struct Entry {
    pub time_ms: i64,
    pub agent: Agent,
    pub session: Arc<str>,
    pub cwd: Option<Arc<str>>,
    pub host: Arc<str>,
    /// The model as shown (`<model>-fast` in fast mode); `None`: the file names none.
    pub model: Option<Arc<str>>,
    pub tokens: Tokens,
    /// `None`: no price for its model.
    pub cost: Option<f64>,
}

/// Shown for a response whose file names no model.
pub const NO_MODEL: &str = "(unknown model)";
/// Shown for a session whose files name no working directory.
pub const NO_CWD: &str = "(unknown)";

/// What the responses of a row add up to.
#[derive(Debug, Clone, Default)]
pub struct Sum {
    pub tokens: Tokens,
    /// The priced responses' cost.
    pub priced_cost: f64,
    /// Models of responses without a price (their cost is unknown).
    pub unpriced: BTreeSet<String>,
    pub agents: BTreeSet<Agent>,
    pub models: BTreeSet<String>,
    pub hosts: BTreeSet<String>,
    pub cwds: BTreeSet<String>,
    pub responses: u64,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

impl Sum {
    pub fn add(&mut self, e: &Entry) {
        self.tokens.add(&e.tokens);
        let model = e.model.as_deref().unwrap_or(NO_MODEL);
        match e.cost {
            Some(c) => self.priced_cost += c,
            None => {
                self.unpriced.insert(model.to_string());
            }
        }
        self.agents.insert(e.agent);
        // Claude Code's own messages are no model's (ccusage leaves them out too).
        if model != super::prices::SYNTHETIC {
            self.models.insert(model.to_string());
        }
        self.hosts.insert(e.host.to_string());
        if let Some(c) = &e.cwd {
            self.cwds.insert(c.to_string());
        }
        self.responses += 1;
        self.first_ms = Some(self.first_ms.map_or(e.time_ms, |f| f.min(e.time_ms)));
        self.last_ms = Some(self.last_ms.map_or(e.time_ms, |l| l.max(e.time_ms)));
    }

    /// The cost, `None` when a price is unknown (never shown as 0).
    pub fn cost(&self) -> Option<f64> {
        self.unpriced.is_empty().then_some(self.priced_cost)
    }
}

/// One row: its subject and sums, and per model with `--breakdown`.
#[derive(Debug, Clone)]
pub struct Row {
    pub key: String,
    pub sum: Sum,
    pub by_model: BTreeMap<String, Sum>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub kind: Kind,
    pub breakdown: bool,
    pub rows: Vec<Row>,
    pub total: Sum,
    pub zone: String,
}

fn matches(e: &Entry, q: &Query, day: NaiveDate) -> bool {
    q.since.is_none_or(|s| day >= s)
        && q.until.is_none_or(|u| day <= u)
        && q.agent.is_none_or(|a| a == e.agent)
        && q.cwd.as_deref().is_none_or(|c| e.cwd.as_deref() == Some(c))
        && q.host.as_deref().is_none_or(|h| h == &*e.host)
}

/// Groups `entries` as `q` asks.
pub fn build(entries: &[Entry], q: &Query) -> Report {
    // Days are looked up per entry: cache them per UTC minute (a busy minute has
    // several responses; zones shift by whole minutes).
    let mut days: HashMap<i64, NaiveDate> = HashMap::new();
    let mut rows: HashMap<String, Row> = HashMap::new();
    let mut total = Sum::default();
    for e in entries {
        let minute = e.time_ms.div_euclid(60_000);
        let day = *days
            .entry(minute)
            .or_insert_with(|| q.zone.date_of(minute * 60_000));
        if !matches(e, q, day) {
            continue;
        }
        let key = match q.kind {
            Kind::Daily => day.format("%Y-%m-%d").to_string(),
            Kind::Weekly => {
                let w = day.iso_week();
                format!("{}-W{:02}", w.year(), w.week())
            }
            Kind::Monthly => day.format("%Y-%m").to_string(),
            Kind::Session => format!("{}\u{0}{}", e.agent.name(), e.session),
            Kind::Project => e.cwd.as_deref().unwrap_or(NO_CWD).to_string(),
            Kind::Model => e.model.as_deref().unwrap_or(NO_MODEL).to_string(),
            Kind::Agent => e.agent.name().to_string(),
            Kind::Host => e.host.to_string(),
        };
        let row = rows.entry(key).or_insert_with_key(|k| Row {
            key: k.clone(),
            sum: Sum::default(),
            by_model: BTreeMap::new(),
        });
        row.sum.add(e);
        if q.breakdown {
            let model = e.model.as_deref().unwrap_or(NO_MODEL).to_string();
            row.by_model.entry(model).or_default().add(e);
        }
        total.add(e);
    }
    let mut rows: Vec<Row> = rows.into_values().collect();
    if q.kind.is_time() {
        rows.sort_by(|a, b| a.key.cmp(&b.key));
    } else {
        rows.sort_by(|a, b| {
            let cost = |r: &Row| r.sum.priced_cost;
            cost(b)
                .total_cmp(&cost(a))
                .then(b.sum.tokens.total().cmp(&a.sum.tokens.total()))
                .then(a.key.cmp(&b.key))
        });
    }
    if q.kind == Kind::Session {
        for r in &mut rows {
            r.key = r.key.split('\u{0}').nth(1).unwrap_or_default().to_string();
        }
    }
    Report {
        kind: q.kind,
        breakdown: q.breakdown,
        rows,
        total,
        zone: q.zone.name(),
    }
}

/// A session among every source's: its agent, the machine it was recorded on and its
/// id. An id alone does not name one (two agents can write ids of one form, and
/// another machine's session is not this one's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    pub agent: Agent,
    pub host: String,
    pub id: String,
}

impl SessionKey {
    /// The key of a session recorded on `host` (`None`: this machine).
    pub fn new(agent: Agent, host: Option<&str>, id: &str) -> SessionKey {
        SessionKey {
            agent,
            host: host.unwrap_or(crate::host::this_host()).to_string(),
            id: id.to_string(),
        }
    }
}

/// What one session's responses used, as counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionCost {
    pub tokens: u64,
    /// `None` when a response's model has no price (never shown as 0).
    pub cost: Option<f64>,
}

/// Each session's tokens and cost (the `session` report's sums, keyed by agent,
/// host and id rather than by id alone).
pub fn by_session(entries: &[Entry]) -> HashMap<SessionKey, SessionCost> {
    let mut out: HashMap<SessionKey, SessionCost> = HashMap::new();
    for e in entries {
        let key = SessionKey {
            agent: e.agent,
            host: e.host.to_string(),
            id: e.session.to_string(),
        };
        let sum = out.entry(key).or_insert(SessionCost {
            tokens: 0,
            cost: Some(0.0),
        });
        sum.tokens += e.tokens.total();
        sum.cost = match (sum.cost, e.cost) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }
    out
}

/// A row's JSON fields after its subject (SPEC §13).
#[derive(Serialize)]
struct Fields<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    input_tokens: u64,
    output_tokens: u64,
    cache_write_tokens: u64,
    cache_read_tokens: u64,
    total_tokens: u64,
    cost_usd: Option<f64>,
    agents: Vec<&'static str>,
    models: Vec<&'a str>,
    hosts: Vec<&'a str>,
    /// Counted apart from output (Gemini's thoughts): priced as output, in the total.
    reasoning_tokens: u64,
    /// Of the cache writes, those kept an hour.
    cache_write_1h_tokens: u64,
    responses: u64,
    /// When a price is unknown: what the priced responses cost, and which models
    /// have no price.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd_priced: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unpriced_models: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_activity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_activity: Option<String>,
}

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Report {
    fn object(&self, key: &str, model: Option<&str>, s: &Sum) -> String {
        let sessionish = matches!(self.kind, Kind::Session);
        let f = Fields {
            model,
            input_tokens: s.tokens.input,
            output_tokens: s.tokens.output,
            cache_write_tokens: s.tokens.cache_write(),
            cache_read_tokens: s.tokens.cache_read,
            total_tokens: s.tokens.total(),
            cost_usd: s.cost(),
            agents: s.agents.iter().map(|a| a.name()).collect(),
            models: s.models.iter().map(String::as_str).collect(),
            hosts: s.hosts.iter().map(String::as_str).collect(),
            reasoning_tokens: s.tokens.reasoning,
            cache_write_1h_tokens: s.tokens.cache_write_1h,
            responses: s.responses,
            cost_usd_priced: (!s.unpriced.is_empty()).then_some(s.priced_cost),
            unpriced_models: s.unpriced.iter().map(String::as_str).collect(),
            cwd: sessionish
                .then(|| s.cwds.iter().next().map(String::as_str))
                .flatten(),
            first_activity: sessionish.then(|| s.first_ms.map(rfc3339)).flatten(),
            last_activity: sessionish.then(|| s.last_ms.map(rfc3339)).flatten(),
        };
        let rest = serde_json::to_string(&f).expect("a row serializes");
        format!(
            "{{{}:{},{}",
            crate::json::quote(self.kind.key_name()),
            crate::json::quote(key),
            &rest[1..]
        )
    }

    /// One JSON object per row (and with `breakdown`, per row and model instead).
    pub fn objects(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.rows {
            if self.breakdown && self.kind != Kind::Model {
                for (m, s) in &r.by_model {
                    out.push(self.object(&r.key, Some(m), s));
                }
            } else {
                out.push(self.object(&r.key, None, &r.sum));
            }
        }
        out
    }

    /// `--json`: one object per line.
    pub fn json_lines(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for o in self.objects() {
            out.extend_from_slice(o.as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// The mount's files: a JSON array, one object per line (`[]` when empty).
    pub fn json_array(&self) -> Vec<u8> {
        let objects = self.objects();
        if objects.is_empty() {
            return b"[]\n".to_vec();
        }
        let mut out = b"[\n".to_vec();
        for (i, o) in objects.iter().enumerate() {
            out.extend_from_slice(o.as_bytes());
            out.extend_from_slice(if i + 1 < objects.len() { b",\n" } else { b"\n" });
        }
        out.extend_from_slice(b"]\n");
        out
    }

    pub fn heading(&self) -> &'static str {
        self.kind.heading()
    }
}
