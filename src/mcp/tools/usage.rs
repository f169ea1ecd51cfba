//! `usage`: what the agents' model calls used and cost (SPEC §13), the rows of
//! `fen-fs usage REPORT --json`, from the same ledgers.

use super::super::tool::{Tool, ToolError, last_lines_answer, lines_answer};
use super::{agent_arg, cwd_arg, host_arg};
use crate::dates::parse_day;
use crate::history::History;
use crate::usage::report::{Kind, Query, Report};
use crate::usage::zone::Zone;
use schemars::JsonSchema;
use serde::Deserialize;

/// What the rows are about.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum ReportArg {
    /// One row per day (`period`: 2026-11-26), oldest first.
    #[default]
    Daily,
    /// One row per ISO week (`period`: 2026-W48), oldest first.
    Weekly,
    /// One row per month (`period`: 2026-11), oldest first.
    Monthly,
    /// One row per session (`session`: its agent's id; with its cwd, first_activity
    /// and last_activity), most expensive first.
    Session,
    /// One row per project (`project`: the sessions' cwd), most expensive first.
    Project,
    /// One row per model (`model`), most expensive first.
    Model,
    /// One row per agent (`agent`: claude, codex, gemini...), most expensive first.
    Agent,
    /// One row per machine (`host`: this one's name, or a synced machine's), most
    /// expensive first.
    Host,
}

impl ReportArg {
    fn kind(self) -> Kind {
        match self {
            ReportArg::Daily => Kind::Daily,
            ReportArg::Weekly => Kind::Weekly,
            ReportArg::Monthly => Kind::Monthly,
            ReportArg::Session => Kind::Session,
            ReportArg::Project => Kind::Project,
            ReportArg::Model => Kind::Model,
            ReportArg::Agent => Kind::Agent,
            ReportArg::Host => Kind::Host,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The rows: daily (default), weekly, monthly, session, project, model, agent or
    /// host.
    #[serde(default)]
    pub report: Option<ReportArg>,
    /// The first day counted, inclusive, in the report's time zone: 2026-11-01 (or
    /// 20261101), or a number of days back counting today (7d: the last seven days;
    /// 2w).
    #[serde(default)]
    pub since: Option<String>,
    /// The last day counted, inclusive: 2026-11-30 (or 20261130).
    #[serde(default)]
    pub until: Option<String>,
    /// Only this agent's usage, by its name (claude, codex, gemini, pi, ...; an
    /// unknown name's error lists them all; some agents record no tokens).
    #[serde(default)]
    pub agent: Option<String>,
    /// Only the sessions started in this directory (an absolute path, e.g. the
    /// project's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Only the usage recorded on this machine: this one's name, or another machine's
    /// whose store is synced here (the host report lists them).
    #[serde(default)]
    pub host: Option<String>,
    /// One row per model within each row, each with `model` (default false).
    #[serde(default)]
    pub breakdown: Option<bool>,
    /// Days in this time zone: an IANA name (Europe/Berlin), UTC or local (default:
    /// the server's, $TZ or the system's).
    #[serde(default)]
    pub timezone: Option<String>,
}

pub struct UsageReport;

impl Tool for UsageReport {
    type Args = Args;
    const NAME: &'static str = "usage";
    const TITLE: &'static str = "Token usage and cost of past agent sessions";
    const DESCRIPTION: &'static str = "What coding agents' model calls used and cost (USD), from the tokens their sessions recorded (Claude Code, Codex, Gemini CLI, pi, OpenCode, Copilot CLI, OpenClaw; on this machine and on other machines whose store is synced here), each model response counted once, priced from the cost the agent recorded or else LiteLLM's price table. Use it to answer what was spent, when, in which project, on which model or agent. report: daily (default), weekly, monthly, session, project, model, agent or host; filters since, until, agent, cwd, host. Answers one JSON object per line, one per row (time rows oldest first, the others most expensive first): the row's subject (period, session, project, model, agent or host), input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, total_tokens, cost_usd (null when a model's price is unknown; cost_usd_priced then says what the priced part cost), agents, models, hosts, reasoning_tokens, responses. Then `note:` lines: the total of the rows, the time zone and price table, and what was left out.";

    fn call(history: &History, args: Args) -> Result<String, ToolError> {
        let kind = args.report.unwrap_or_default().kind();
        let zone = match args.timezone.as_deref().map(str::trim) {
            None => Zone::from_env(),
            Some(z) => Zone::parse(z).map_err(|e| ToolError::argument("timezone", e))?,
        };
        let today = zone.today();
        let day = |name: &str, v: Option<&str>| {
            v.map(|s| {
                parse_day(s)
                    .map(|d| d.day(today))
                    .map_err(|e| ToolError::argument(name, e))
            })
            .transpose()
        };
        let mut q = Query::new(kind, zone);
        q.since = day("since", args.since.as_deref())?;
        q.until = day("until", args.until.as_deref())?;
        if let (Some(s), Some(u)) = (q.since, q.until)
            && u < s
        {
            return Err(ToolError::argument(
                "until",
                format!("{u} is before since ({s}): no day is both"),
            ));
        }
        q.agent = agent_arg(args.agent.as_deref())?;
        q.cwd = cwd_arg(args.cwd.as_deref())?;
        q.host = host_arg(args.host.as_deref())?;
        q.breakdown = args.breakdown.unwrap_or(false);

        let usage = history.usage()?;
        let report = usage.report(&q);
        let lines = report.objects();
        let mut notes = Vec::new();
        if lines.is_empty() {
            notes.push("no usage recorded with these filters".to_string());
        } else {
            notes.push(total(&report));
        }
        notes.push(format!(
            "days in {}; prices: {} (where the agent recorded no cost)",
            report.zone,
            usage.prices().label
        ));
        let unreadable = usage.malformed();
        if !unreadable.is_empty() {
            notes.push(format!(
                "{} file(s) had usage objects that could not be read: skipped, the rest counted",
                unreadable.len()
            ));
        }
        let hint = "narrow with since, until, agent, cwd or host, or ask for a coarser report (weekly, monthly) or without breakdown";
        Ok(
            if matches!(kind, Kind::Daily | Kind::Weekly | Kind::Monthly) {
                // The latest periods matter most.
                last_lines_answer(&lines, &notes, hint)
            } else {
                lines_answer(&lines, &notes, hint)
            },
        )
    }
}

/// The note of the rows' total.
fn total(report: &Report) -> String {
    let t = &report.total;
    let cost = match t.cost() {
        Some(c) => format!("${c:.2}"),
        None => format!(
            "unknown (${:.2} for the priced responses; no price for {})",
            t.priced_cost,
            t.unpriced.iter().cloned().collect::<Vec<_>>().join(", ")
        ),
    };
    format!(
        "total of the {} row(s): {} tokens (input {}, output {}, cache write {}, cache read {}, reasoning {}), {} responses, cost {cost}",
        report.rows.len(),
        t.tokens.total(),
        t.tokens.input,
        t.tokens.output,
        t.tokens.cache_write(),
        t.tokens.cache_read,
        t.tokens.reasoning,
        t.responses,
    )
}
