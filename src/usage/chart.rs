//! `usage/daily.svg`: the last 30 days' cost, one stacked bar per day, one colour per
//! agent, drawn with plotters' SVG backend (a browser opens it). Responses without a
//! price add nothing to a bar; the caption says when there were any.

use super::report::Entry;
use super::zone::Zone;
use crate::agent::Agent;
use chrono::NaiveDate;
use plotters::prelude::*;
use std::collections::BTreeMap;

pub const DAYS: usize = 30;
const SIZE: (u32, u32) = (960, 440);

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
                .y_label_formatter(&|y| format!("${y:.2}"))
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
