//! `fen-fs usage`: what it does apart from its options, so that it is testable.

use crate::agent::Agent;
use crate::error::Result;
use crate::store::Store;
use crate::usage::prices::Prices;
use crate::usage::report::{Kind, Query};
use crate::usage::zone::Zone;
use crate::usage::{Usage, table};
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

pub use crate::dates::{DayArg, parse_day};

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
    /// Other machines' stores (§12).
    pub peers: crate::sources::peers::PeerOptions,
}

pub fn run(args: Args, store: Store) -> Result<ExitCode> {
    let prices = match &args.prices {
        Some(p) => Prices::from_file(p)?,
        None => Prices::builtin(),
    };
    let zone = args.zone.unwrap_or_else(Zone::from_env);
    let foreign = crate::sources::foreign_sources(&args.foreign, &store.root, false);
    let cache = crate::usage::ledger_root(&store.root);
    let peers = crate::sources::all::peer_sources(&args.peers, &store)?;
    let sources = crate::sources::all::every(&Arc::new(store), &foreign, &peers);
    let usage = Usage::new(sources, cache.as_deref(), prices);
    usage.refresh_all()?;
    usage.persist();
    warn_malformed(&usage);
    let mut q = Query::new(args.report, zone);
    q.since = args.since.map(|d| d.day(zone.today()));
    q.until = args.until.map(|d| d.day(zone.today()));
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
    use chrono::NaiveDate;

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
        assert_eq!(DayArg::DaysBack(1).day(z.today()), z.today());
    }
}
