//! `fen-fs usage`: what it does apart from its options, so that it is testable.

use crate::agent::Agent;
use crate::error::Result;
use crate::sources::SessionSource;
use crate::sources::fen::FenSource;
use crate::store::Store;
use crate::usage::prices::Prices;
use crate::usage::report::{Kind, Query};
use crate::usage::zone::Zone;
use crate::usage::{Usage, table};
use chrono::NaiveDate;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// `REPORT`: daily, weekly, monthly, session, project, model, agent or host.
pub fn parse_report(s: &str) -> std::result::Result<Kind, String> {
    Kind::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        format!("unknown report {s:?}: one of {}", names.join(", "))
    })
}

/// `--since`/`--until DATE`: `2026-11-01` or `20261101` (a day in the report's time
/// zone), or for `--since` a duration back from today (`7d`, `2w`: the days that
/// include today).
pub fn parse_day(s: &str) -> std::result::Result<DayArg, String> {
    let s = s.trim();
    for fmt in ["%Y-%m-%d", "%Y%m%d"] {
        if let Ok(d) = NaiveDate::parse_from_str(s, fmt) {
            return Ok(DayArg::Date(d));
        }
    }
    match super::trash::parse_duration(s) {
        Ok(d) if d.as_secs() % 86_400 == 0 && d.as_secs() > 0 => {
            Ok(DayArg::DaysBack((d.as_secs() / 86_400) as i64))
        }
        _ => Err(format!(
            "{s:?} is not a date (2026-11-01 or 20261101) or a number of days back (7d, 2w)"
        )),
    }
}

/// A day as given: a date, or so many days counting today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayArg {
    Date(NaiveDate),
    DaysBack(i64),
}

impl DayArg {
    fn day(self, zone: Zone) -> NaiveDate {
        match self {
            DayArg::Date(d) => d,
            DayArg::DaysBack(n) => zone.today() - chrono::Duration::days(n - 1),
        }
    }
}

/// What `fen-fs usage` was asked.
pub struct Args {
    pub report: Kind,
    pub since: Option<DayArg>,
    pub until: Option<DayArg>,
    pub agent: Option<Agent>,
    pub cwd: Option<String>,
    pub host: Option<String>,
    pub breakdown: bool,
    pub json: bool,
    pub zone: Option<Zone>,
    pub prices: Option<PathBuf>,
    pub foreign: crate::sources::ForeignOptions,
}

/// Where ledgers are kept: the store, else fen-fs's cache folder (created, 0700).
fn cache_root(store: &Store) -> Option<PathBuf> {
    if store.root.is_dir() {
        return Some(store.root.clone());
    }
    let dir = crate::store::layout::xdg_cache_dir();
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    made.is_ok().then_some(dir)
}

use std::os::unix::fs::DirBuilderExt;

pub fn run(args: Args, store: Store) -> Result<ExitCode> {
    let prices = match &args.prices {
        Some(p) => Prices::from_file(p)?,
        None => Prices::builtin(),
    };
    let zone = args.zone.unwrap_or_else(Zone::from_env);
    let foreign = crate::sources::foreign_sources(&args.foreign, &store.root, false);
    let cache = cache_root(&store);
    let mut sources: Vec<Arc<dyn SessionSource>> = vec![Arc::new(FenSource::new(Arc::new(store)))];
    sources.extend(foreign.iter().map(|f| f.clone() as Arc<dyn SessionSource>));
    let usage = Usage::new(sources, cache.as_deref(), prices);
    usage.refresh_all()?;
    usage.persist();
    warn_malformed(&usage);
    let mut q = Query::new(args.report, zone);
    q.since = args.since.map(|d| d.day(zone));
    q.until = args.until.map(|d| d.day(zone));
    q.agent = args.agent;
    q.cwd = args.cwd;
    q.host = args.host;
    q.breakdown = args.breakdown;
    let report = usage.report(&q);
    let bytes = if args.json {
        report.json_lines()
    } else if report.rows.is_empty() {
        b"No usage found.\n".to_vec()
    } else {
        let mut text = format!(
            "Usage by {}, {}; prices: {}\n\n",
            match args.report {
                Kind::Daily => "day",
                Kind::Weekly => "ISO week",
                Kind::Monthly => "month",
                k => k.name(),
            },
            zone.name(),
            usage.prices().label
        );
        text.push_str(&table::render(&report));
        if let Some(c) = report.total.cost().is_none().then_some(&report.total) {
            let models: Vec<&str> = c.unpriced.iter().map(String::as_str).collect();
            text.push_str(&format!(
                "\n+? : no price for {} (counted, cost unknown)\n",
                models.join(", ")
            ));
        }
        text.into_bytes()
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes);
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// Says which files had usage objects that could not be read (skipped).
fn warn_malformed(usage: &Usage) {
    let bad = usage.malformed();
    let shown = 5;
    for (agent, unit, n, first) in bad.iter().take(shown) {
        eprintln!(
            "fen-fs: warning: {} {unit}: {n} usage object(s) could not be read and were skipped ({})",
            agent.name(),
            first.as_deref().unwrap_or("?")
        );
    }
    if bad.len() > shown {
        eprintln!(
            "fen-fs: warning: and {} more files with usage objects that could not be read",
            bad.len() - shown
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_and_days() {
        assert_eq!(parse_report("daily").unwrap(), Kind::Daily);
        assert!(parse_report("yearly").unwrap_err().contains("one of daily"));
        let d = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap();
        assert_eq!(parse_day("2026-11-01").unwrap(), DayArg::Date(d));
        assert_eq!(parse_day("20261101").unwrap(), DayArg::Date(d));
        assert_eq!(parse_day("7d").unwrap(), DayArg::DaysBack(7));
        for bad in ["2026-13-01", "yesterday", "12h", ""] {
            assert!(parse_day(bad).is_err(), "{bad}");
        }
        let z = Zone::parse("UTC").unwrap();
        assert_eq!(DayArg::DaysBack(1).day(z), z.today());
    }
}
