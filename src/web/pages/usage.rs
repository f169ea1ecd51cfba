//! The Usage page (`/usage`): §13's reports as charts and tables, over the same
//! counts as `fen-fs usage` (`Usage::report`): the cost per day stacked by agent or
//! model over the last 30 or 90 days or a chosen range, by project, by model, by
//! agent. Each table links its rows as `/api/usage?report=…`, byte for byte the lines
//! of `fen-fs usage REPORT --json` with the same filters.
//!
//! Before the first count is done the page says so (it never waits for it) and
//! `app.js` loads it again when `/api/status` says it is.

use super::chrome::{self, Tab, count, dollars, esc, url_part};
use crate::dates::parse_day;
use crate::usage::Usage;
use crate::usage::chart::Stack;
use crate::usage::report::{Kind, Query, Report};
use crate::usage::zone::Zone;
use crate::web::app::App;
use chrono::NaiveDate;
use serde::Deserialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// The longest range a chart draws a bar a day for.
const MAX_DAYS: i64 = 731;

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(default)]
pub struct Range {
    /// `30` (default), `90`, or `custom` (then `since` and `until`).
    pub range: String,
    pub since: String,
    pub until: String,
    /// `agent` (default) or `model`.
    pub stack: String,
    /// For `/api/usage` and the charts: which report.
    pub report: String,
}

impl Range {
    /// The first and last day, in `zone`; or what is wrong.
    pub fn days(&self, zone: &Zone) -> Result<(NaiveDate, NaiveDate), String> {
        let today = zone.today();
        let back = |n: i64| today - chrono::Duration::days(n - 1);
        let (first, last) = match self.range.as_str() {
            "" | "30" => (back(30), today),
            "90" => (back(90), today),
            "custom" => {
                let day = |name: &str, s: &str, default: NaiveDate| {
                    if s.trim().is_empty() {
                        Ok(default)
                    } else {
                        parse_day(s)
                            .map(|d| d.day(today))
                            .map_err(|e| format!("{name}: {e}"))
                    }
                };
                (
                    day("since", &self.since, back(30))?,
                    day("until", &self.until, today)?,
                )
            }
            other => return Err(format!("range {other:?}: 30, 90 or custom")),
        };
        if last < first {
            return Err(format!("until ({last}) is before since ({first})"));
        }
        if (last - first).num_days() >= MAX_DAYS {
            return Err(format!(
                "a range of at most {MAX_DAYS} days (this one has {})",
                (last - first).num_days() + 1
            ));
        }
        Ok((first, last))
    }

    pub fn stack(&self) -> Stack {
        if self.stack == "model" {
            Stack::Model
        } else {
            Stack::Agent
        }
    }

    /// This range's query string (without `report`).
    fn query(&self) -> String {
        let mut q = Vec::new();
        for (k, v) in [
            ("range", &self.range),
            ("since", &self.since),
            ("until", &self.until),
            ("stack", &self.stack),
        ] {
            if !v.is_empty() {
                q.push(format!("{k}={}", url_part(v)));
            }
        }
        q.join("&")
    }
}

/// The report of `kind` over the range's days.
pub fn report(usage: &Usage, kind: Kind, zone: Zone, first: NaiveDate, last: NaiveDate) -> Report {
    let mut q = Query::new(kind, zone);
    q.since = Some(first);
    q.until = Some(last);
    usage.report(&q)
}

/// The page; `usage` is `None` while the first count runs.
pub fn page(app: &Arc<App>, r: &Range, usage: Option<Arc<Usage>>) -> String {
    let mut out = chrome::start("Usage", Tab::Usage, "");
    out.push_str("<h1>Usage</h1>\n");
    let Some(usage) = usage else {
        match app.usage_failure() {
            Some(why) => chrome::note(
                &mut out,
                "error",
                &format!("The usage could not be counted: {why}"),
            ),
            None => {
                out.push_str("<p class=\"note partial\" role=\"status\" id=\"counting\" data-reload-when-counted=\"1\">The agents' usage is still being counted (a first count reads every session file once; later ones only what changed). This page fills in when it is done.</p>\n");
            }
        }
        return chrome::end(out);
    };
    let zone = Zone::from_env();
    let (first, last) = match r.days(&zone) {
        Ok(d) => d,
        Err(e) => {
            range_form(&mut out, r);
            chrome::note(&mut out, "error", &e);
            return chrome::end(out);
        }
    };
    range_form(&mut out, r);
    // This range's query, to follow `report=…&` in the links.
    let q = match r.query() {
        q if q.is_empty() => "range=30".to_string(),
        q => q,
    };
    let daily = report(&usage, Kind::Daily, zone, first, last);
    let t = &daily.total;
    let _ = writeln!(
        out,
        "<p class=\"total\" id=\"total\">{} to {}: <strong>{}</strong>, {} tokens in {} responses (days in {}; prices: {})</p>",
        first,
        last,
        esc(&match t.cost() {
            Some(c) => format!("${c:.2}"),
            None => format!(
                "${:.2} for the priced responses (no price for {})",
                t.priced_cost,
                t.unpriced.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        }),
        count(t.tokens.total()),
        count(t.responses),
        esc(&daily.zone),
        esc(&usage.prices().label)
    );
    let malformed = usage.malformed();
    if !malformed.is_empty() {
        chrome::note(
            &mut out,
            "partial",
            &format!(
                "{} file(s) had usage objects that could not be read: skipped, the rest counted",
                malformed.len()
            ),
        );
    }
    let _ = writeln!(
        out,
        "<figure class=\"chart\"><img src=\"/usage/chart.svg?report=daily&amp;{}\" alt=\"cost per day\" width=\"960\" height=\"440\"></figure>",
        esc(&q)
    );
    let by_project = report(&usage, Kind::Project, zone, first, last);
    let by_model = report(&usage, Kind::Model, zone, first, last);
    let by_agent = report(&usage, Kind::Agent, zone, first, last);
    out.push_str("<div class=\"charts\">");
    for (kind, rep) in [("project", &by_project), ("model", &by_model)] {
        let n = rep.rows.len().clamp(1, 15);
        let _ = write!(
            out,
            "<figure class=\"chart\"><img src=\"/usage/chart.svg?report={kind}&amp;{}\" alt=\"cost by {kind}\" width=\"960\" height=\"{}\"></figure>",
            esc(&q),
            80 + 28 * n
        );
    }
    out.push_str("</div>\n");
    for (title, kind, rep) in [
        ("By agent", "agent", &by_agent),
        ("By model", "model", &by_model),
        ("By project", "project", &by_project),
        ("Per day", "daily", &daily),
    ] {
        table(&mut out, title, kind, rep, &q);
    }
    chrome::end(out)
}

fn range_form(out: &mut String, r: &Range) {
    let opt = |v: &str, selected: bool, text: &str| {
        format!(
            "<option value=\"{v}\"{}>{text}</option>",
            if selected { " selected" } else { "" }
        )
    };
    let range = if r.range.is_empty() {
        "30"
    } else {
        r.range.as_str()
    };
    let by_model = r.stack == "model";
    let _ = writeln!(
        out,
        "<form class=\"filters\" method=\"get\" action=\"/usage\" id=\"range\"><label>Days <select name=\"range\">{}{}{}</select></label> \
<label>from <input type=\"date\" name=\"since\" value=\"{}\"></label> <label>to <input type=\"date\" name=\"until\" value=\"{}\"></label> \
<label>Stacked by <select name=\"stack\">{}{}</select></label> <button type=\"submit\">Show</button></form>",
        opt("30", range == "30", "last 30"),
        opt("90", range == "90", "last 90"),
        opt("custom", range == "custom", "from … to …"),
        esc(&r.since),
        esc(&r.until),
        opt("agent", !by_model, "agent"),
        opt("model", by_model, "model"),
    );
}

fn table(out: &mut String, title: &str, kind: &str, rep: &Report, q: &str) {
    let _ = writeln!(
        out,
        "<section class=\"report\" id=\"by-{kind}\"><h2>{title} <a class=\"json\" href=\"/api/usage?report={kind}&amp;{}\">as JSON</a></h2>",
        esc(q)
    );
    if rep.rows.is_empty() {
        chrome::note(out, "empty", "No usage recorded in these days.");
        out.push_str("</section>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<table class=\"usage\"><thead><tr><th>{}</th><th class=\"num\">Input</th><th class=\"num\">Output</th><th class=\"num\">Cache write</th><th class=\"num\">Cache read</th><th class=\"num\">Total tokens</th><th class=\"num\">Cost</th></tr></thead><tbody>",
        esc(match kind {
            "daily" => "Day",
            "project" => "Project",
            "model" => "Model",
            _ => "Agent",
        })
    );
    let rows: Box<dyn Iterator<Item = _>> = if kind == "daily" {
        Box::new(rep.rows.iter().rev())
    } else {
        Box::new(rep.rows.iter())
    };
    for row in rows {
        let s = &row.sum;
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&row.key),
            count(s.tokens.input),
            count(s.tokens.output),
            count(s.tokens.cache_write()),
            count(s.tokens.cache_read),
            count(s.tokens.total()),
            esc(&dollars(s.cost()))
        );
    }
    out.push_str("</tbody></table></section>\n");
}

/// The chart of `r.report` (`daily`, `project` or `model`) as SVG.
pub fn chart(usage: &Usage, r: &Range) -> Result<String, String> {
    let zone = Zone::from_env();
    let (first, last) = r.days(&zone)?;
    Ok(match r.report.as_str() {
        "" | "daily" => {
            crate::usage::chart::stacked_svg(&usage.entries(), zone, first, last, r.stack())
        }
        "project" | "model" => {
            let kind = if r.report == "project" {
                Kind::Project
            } else {
                Kind::Model
            };
            let rep = report(usage, kind, zone, first, last);
            let rows: Vec<(String, Option<f64>)> = rep
                .rows
                .iter()
                .map(|row| (row.key.clone(), row.sum.cost()))
                .collect();
            crate::usage::chart::bars_svg(
                &format!("Cost by {} (USD), {first} to {last}", r.report),
                &rows,
            )
        }
        other => return Err(format!("report {other:?}: daily, project or model")),
    })
}

/// `/api/usage`: the lines `fen-fs usage REPORT --json --since FIRST --until LAST`
/// prints.
pub fn json_lines(usage: &Usage, r: &Range) -> Result<Vec<u8>, String> {
    let zone = Zone::from_env();
    let (first, last) = r.days(&zone)?;
    let kind = Kind::parse(if r.report.is_empty() {
        "daily"
    } else {
        &r.report
    })
    .ok_or_else(|| {
        format!(
            "report {:?}: one of daily, weekly, monthly, session, project, model, agent, host",
            r.report
        )
    })?;
    Ok(report(usage, kind, zone, first, last).json_lines())
}
