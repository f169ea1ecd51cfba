//! `usage/daily.svg`: the last 30 days' cost, one stacked bar per day, one colour per
//! agent, drawn with plotters' SVG backend (a browser opens it). Responses without a
//! price add nothing to a bar; the caption says when there were any.

use super::report::Entry;
use super::zone::Zone;
use crate::agent::Agent;
use chrono::{Datelike, NaiveDate};
use plotters::prelude::*;
use std::collections::BTreeMap;

pub const DAYS: usize = 30;
const SIZE: (u32, u32) = (960, 440);
/// Labels on a chart's cost axis (plotters' default, set so that `Money` sees the
/// same ticks the mesh draws).
const COST_LABELS: usize = 11;

/// How a cost axis's labels are written: as many decimals as the step between its
/// ticks needs (a week of a few cents is $0.002, $0.004, …, not $0.00 five times),
/// whole dollars when the step is, and at least cents otherwise.
#[derive(Debug, Clone, Copy)]
struct Money {
    decimals: usize,
}

impl Money {
    /// For an axis from 0 to `top` with `COST_LABELS` labels.
    fn axis(top: f64) -> Money {
        use plotters::coord::ranged1d::Ranged;
        use plotters::coord::types::RangedCoordf64;
        let ticks = RangedCoordf64::from(0f64..top).key_points(COST_LABELS);
        let step = ticks
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|s| *s > 0.0)
            .fold(f64::INFINITY, f64::min);
        Money {
            decimals: Self::decimals_of(step),
        }
    }

    /// The decimals that write every multiple of `step` apart from its neighbours.
    fn decimals_of(step: f64) -> usize {
        if !step.is_finite() || step <= 0.0 {
            return 2;
        }
        let needed = (0..=8)
            .find(|&d| {
                let scaled = step * 10f64.powi(d as i32);
                (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
            })
            .unwrap_or(8);
        match needed {
            0 => 0,
            d => d.max(2),
        }
    }

    fn label(self, v: f64) -> String {
        format!("${v:.*}", self.decimals)
    }
}

fn colour(agent: Agent) -> RGBColor {
    let (r, g, b) = crate::sources::registry::kind(agent).colour();
    RGBColor(r, g, b)
}

/// The chart of `entries` for the 30 days ending `today` (in `zone`).
pub fn daily_svg(entries: &[Entry], zone: Zone, today: NaiveDate) -> String {
    let first = today - chrono::Duration::days(DAYS as i64 - 1);
    let mut per: BTreeMap<Agent, [f64; DAYS]> = BTreeMap::new();
    let mut unpriced = 0u64;
    for e in entries {
        let day = zone.date_of(e.time_ms);
        if day < first || day > today {
            continue;
        }
        let i = (day - first).num_days() as usize;
        match e.cost {
            Some(c) => per.entry(e.agent).or_insert([0.0; DAYS])[i] += c,
            None => unpriced += 1,
        }
    }
    let stacked: Vec<f64> = (0..DAYS)
        .map(|i| per.values().map(|v| v[i]).sum())
        .collect();
    let top = stacked.iter().cloned().fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let money = Money::axis(top);
    let mut caption = format!(
        "Cost per day by agent (USD), {} to {} ({})",
        first.format("%Y-%m-%d"),
        today.format("%Y-%m-%d"),
        zone.name()
    );
    if unpriced > 0 {
        caption.push_str(&format!("; {unpriced} responses without a price not shown"));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let drawn = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(caption, ("sans-serif", 16))
                .margin(14)
                .x_label_area_size(36)
                .y_label_area_size(64)
                .build_cartesian_2d(-0.5f64..DAYS as f64 - 0.5, 0f64..top)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .y_max_light_lines(1)
                .x_labels(DAYS / 3)
                // Bars are centred on their day's number.
                .x_label_formatter(&|x| {
                    let d = first + chrono::Duration::days(x.round() as i64);
                    d.format("%m-%d").to_string()
                })
                .y_labels(COST_LABELS)
                .y_label_formatter(&|y| money.label(*y))
                .y_desc("USD")
                .draw()?;
            let mut base = [0.0f64; DAYS];
            for (agent, costs) in &per {
                let c = colour(*agent);
                let bars: Vec<Rectangle<(f64, f64)>> = (0..DAYS)
                    .filter(|&i| costs[i] > 0.0)
                    .map(|i| {
                        let (x, y) = (i as f64, base[i]);
                        Rectangle::new([(x - 0.38, y), (x + 0.38, y + costs[i])], c.filled())
                    })
                    .collect();
                for i in 0..DAYS {
                    base[i] += costs[i];
                }
                chart
                    .draw_series(bars)?
                    .label(agent.name())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled())
                    });
            }
            if !per.is_empty() {
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperLeft)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK.mix(0.3))
                    .draw()?;
            }
            root.present()?;
            Ok(())
        })();
        if let Err(e) = drawn {
            log::warn!("daily.svg: {e}");
        }
    }
    svg
}

/// What the bars of a day are stacked by (the web page's Usage chart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    Agent,
    Model,
}

/// Series beyond this many are drawn as one, "other".
const MAX_SERIES: usize = 8;

/// A palette for series without a colour of their own (models).
const PALETTE: [RGBColor; MAX_SERIES + 1] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x7f, 0x7f, 0x7f),
];

/// The cost per day from `first` to `last` (inclusive, in `zone`), one stacked bar a
/// day, stacked by agent or by model (the `MAX_SERIES - 1` costliest models, the
/// rest as "other"). Responses without a price add nothing; the caption says so.
pub fn stacked_svg(
    entries: &[Entry],
    zone: Zone,
    first: NaiveDate,
    last: NaiveDate,
    by: Stack,
) -> String {
    let days = ((last - first).num_days() + 1).max(1) as usize;
    let mut per: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut colours: BTreeMap<String, RGBColor> = BTreeMap::new();
    let mut unpriced = 0u64;
    for e in entries {
        let day = zone.date_of(e.time_ms);
        if day < first || day > last {
            continue;
        }
        let i = (day - first).num_days() as usize;
        let Some(c) = e.cost else {
            unpriced += 1;
            continue;
        };
        let key = match by {
            Stack::Agent => {
                colours.insert(e.agent.name().to_string(), colour(e.agent));
                e.agent.name().to_string()
            }
            Stack::Model => e
                .model
                .as_deref()
                .unwrap_or(super::report::NO_MODEL)
                .to_string(),
        };
        per.entry(key).or_insert_with(|| vec![0.0; days])[i] += c;
    }
    if by == Stack::Model && per.len() > MAX_SERIES {
        let mut totals: Vec<(String, f64)> = per
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().sum()))
            .collect();
        totals.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut other = vec![0.0; days];
        for (k, _) in &totals[MAX_SERIES - 1..] {
            for (o, c) in other.iter_mut().zip(per.remove(k).unwrap_or_default()) {
                *o += c;
            }
        }
        per.insert("other".into(), other);
    }
    if by == Stack::Model {
        for (i, k) in per.keys().enumerate() {
            colours.insert(k.clone(), PALETTE[i.min(MAX_SERIES)]);
        }
    }
    let top = (0..days)
        .map(|i| per.values().map(|v| v[i]).sum::<f64>())
        .fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let money = Money::axis(top);
    // A range over a new year names the year of each day (`01-05` alone would be
    // either January).
    let day_format = if first.year() == last.year() {
        "%m-%d"
    } else {
        "%Y-%m-%d"
    };
    let mut caption = format!(
        "Cost per day by {} (USD), {} to {} ({})",
        match by {
            Stack::Agent => "agent",
            Stack::Model => "model",
        },
        first.format("%Y-%m-%d"),
        last.format("%Y-%m-%d"),
        zone.name()
    );
    if unpriced > 0 {
        caption.push_str(&format!("; {unpriced} responses without a price not shown"));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let drawn = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(caption, ("sans-serif", 16))
                .margin(14)
                .x_label_area_size(36)
                .y_label_area_size(64)
                .build_cartesian_2d(-0.5f64..days as f64 - 0.5, 0f64..top)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .y_max_light_lines(1)
                .x_labels(days.clamp(2, 12))
                .x_label_formatter(&|x| {
                    let d = first + chrono::Duration::days(x.round() as i64);
                    d.format(day_format).to_string()
                })
                .y_labels(COST_LABELS)
                .y_label_formatter(&|y| money.label(*y))
                .y_desc("USD")
                .draw()?;
            let mut base = vec![0.0f64; days];
            let half = 0.38f64.min(0.5 - 0.5 / days as f64).max(0.3);
            for (key, costs) in &per {
                let c = colours.get(key).copied().unwrap_or(PALETTE[MAX_SERIES]);
                let bars: Vec<Rectangle<(f64, f64)>> = (0..days)
                    .filter(|&i| costs[i] > 0.0)
                    .map(|i| {
                        let (x, y) = (i as f64, base[i]);
                        Rectangle::new([(x - half, y), (x + half, y + costs[i])], c.filled())
                    })
                    .collect();
                for i in 0..days {
                    base[i] += costs[i];
                }
                chart
                    .draw_series(bars)?
                    .label(key.as_str())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled())
                    });
            }
            if !per.is_empty() {
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperLeft)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK.mix(0.3))
                    .draw()?;
            }
            root.present()?;
            Ok(())
        })();
        if let Err(e) = drawn {
            log::warn!("usage chart: {e}");
        }
    }
    svg
}

/// Horizontal bars of cost, one per row (`rows`: label and cost, costliest first;
/// at most `MAX_BARS` drawn). A row without a price has no bar, and says so.
pub fn bars_svg(caption: &str, rows: &[(String, Option<f64>)]) -> String {
    const MAX_BARS: usize = 15;
    let rows = &rows[..rows.len().min(MAX_BARS)];
    let n = rows.len().max(1);
    let height = (80 + 28 * n) as u32;
    let top = rows.iter().filter_map(|(_, c)| *c).fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    let money = Money::axis(top);
    let label = |s: &str| -> String {
        let chars: Vec<char> = s.chars().collect();
        if chars.len() > 40 {
            format!("…{}", chars[chars.len() - 39..].iter().collect::<String>())
        } else {
            s.to_string()
        }
    };
    let labels: Vec<String> = rows.iter().map(|(l, _)| label(l)).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        let drawn = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(caption, ("sans-serif", 16))
                .margin(14)
                .x_label_area_size(30)
                .y_label_area_size(300)
                .build_cartesian_2d(0f64..top, -0.5f64..n as f64 - 0.5)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .x_max_light_lines(1)
                .y_labels(n)
                .y_label_formatter(&|y| {
                    let i = y.round();
                    if (y - i).abs() > 0.01 || i < 0.0 {
                        return String::new();
                    }
                    // Costliest at the top.
                    labels.get(n - 1 - i as usize).cloned().unwrap_or_default()
                })
                .x_labels(COST_LABELS)
                .x_label_formatter(&|x| money.label(*x))
                .draw()?;
            let c = PALETTE[0];
            chart.draw_series(rows.iter().enumerate().filter_map(|(i, (_, cost))| {
                let y = (n - 1 - i) as f64;
                cost.map(|v| Rectangle::new([(0.0, y - 0.35), (v, y + 0.35)], c.filled()))
            }))?;
            root.present()?;
            Ok(())
        })();
        if let Err(e) = drawn {
            log::warn!("usage chart: {e}");
        }
    }
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::report::Entry;
    use std::sync::Arc;

    /// The labels of the cost axis: the texts of the SVG that start with `$`.
    fn cost_labels(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = t[t.find('>')? + 1..t.find("</text>")?].trim();
                body.starts_with('$').then(|| body.to_string())
            })
            .collect()
    }

    fn entry(day: NaiveDate, cost: f64) -> Entry {
        let t = day
            .and_hms_opt(12, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp_millis();
        Entry {
            time_ms: t,
            agent: Agent::Claude,
            session: Arc::from("s"),
            cwd: None,
            host: Arc::from("h"),
            model: Some(Arc::from("m")),
            tokens: Default::default(),
            cost: Some(cost),
        }
    }

    /// Each label says a different amount, in increasing order, for costs of any
    /// size: a fraction of a cent, cents, dollars, thousands.
    #[test]
    fn cost_axis_labels_are_distinct_at_every_scale() {
        let zone = crate::usage::zone::Zone::parse("UTC").unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 3, 10).unwrap();
        for top in [0.0004, 0.003, 0.012, 0.07, 0.9, 4.2, 37.0, 5_200.0] {
            let entries = vec![entry(day, top), entry(day.pred_opt().unwrap(), top / 3.0)];
            let charts = [
                ("daily", daily_svg(&entries, zone, day)),
                (
                    "stacked",
                    stacked_svg(
                        &entries,
                        zone,
                        day - chrono::Duration::days(6),
                        day,
                        Stack::Agent,
                    ),
                ),
                (
                    "bars",
                    bars_svg(
                        "by model",
                        &[("m".into(), Some(top)), ("n".into(), Some(top / 2.0))],
                    ),
                ),
            ];
            for (what, svg) in charts {
                let labels = cost_labels(&svg);
                assert!(labels.len() >= 3, "{what} at {top}: {labels:?}");
                let values: Vec<f64> = labels
                    .iter()
                    .map(|l| l[1..].parse().unwrap_or_else(|_| panic!("{what}: {l}")))
                    .collect();
                assert!(
                    values.windows(2).all(|w| w[0] < w[1]),
                    "{what} at {top}: the labels repeat or go back: {labels:?}"
                );
                // No more decimals than the step needs: a step of whole cents is not
                // written to the tenth of a cent.
                let decimals = labels[1].split('.').nth(1).map_or(0, str::len);
                assert!(decimals <= 6, "{what} at {top}: {labels:?}");
            }
        }
    }

    /// The days of a range within one year are `MM-DD`; of a range over a new year,
    /// `YYYY-MM-DD`.
    #[test]
    fn day_labels_name_the_year_when_the_range_spans_two() {
        let zone = crate::usage::zone::Zone::parse("UTC").unwrap();
        let first = NaiveDate::from_ymd_opt(2025, 11, 1).unwrap();
        let last = NaiveDate::from_ymd_opt(2026, 2, 28).unwrap();
        let entries = vec![entry(last, 1.0)];
        let svg = stacked_svg(&entries, zone, first, last, Stack::Agent);
        let days = |svg: &str| -> Vec<String> {
            svg.split("<text")
                .skip(1)
                .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim().to_string()))
                .filter(|t| t.starts_with(|c: char| c.is_ascii_digit()))
                .collect()
        };
        let spanning = days(&svg);
        assert!(
            spanning.contains(&"2025-11-01".to_string())
                && spanning.iter().any(|d| d.starts_with("2026-")),
            "{spanning:?}"
        );
        let within = stacked_svg(
            &entries,
            zone,
            NaiveDate::from_ymd_opt(2026, 1, 1).unwrap(),
            last,
            Stack::Agent,
        );
        let within = days(&within);
        assert!(
            within.contains(&"01-01".to_string()) && !within.iter().any(|d| d.starts_with("2026-")),
            "{within:?}"
        );
    }

    #[test]
    fn decimals_follow_the_step() {
        assert_eq!(Money::decimals_of(0.001), 3);
        assert_eq!(Money::decimals_of(0.002), 3);
        assert_eq!(Money::decimals_of(0.0005), 4);
        assert_eq!(Money::decimals_of(0.01), 2);
        assert_eq!(Money::decimals_of(0.5), 2);
        assert_eq!(Money::decimals_of(1.0), 0);
        assert_eq!(Money::decimals_of(500.0), 0);
        assert_eq!(Money { decimals: 3 }.label(0.004), "$0.004");
    }
}
