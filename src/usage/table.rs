//! The terminal table of a report: aligned columns, a totals line, and a bar per row
//! (its cost against the largest row's; tokens when no cost is known) so the shape
//! shows at a glance.

use super::report::{Kind, Report, Sum};

/// The bar of the largest row, in characters.
const BAR: usize = 24;
/// Eighths of a character cell.
const BLOCKS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cost: `$12.34`; with responses of unknown price, what is known and `+?`.
pub fn money(s: &Sum) -> String {
    let known = if s.priced_cost > 0.0 && s.priced_cost < 0.005 {
        "<$0.01".to_string()
    } else {
        format!("${:.2}", s.priced_cost)
    };
    match s.cost() {
        Some(_) => known,
        None if s.priced_cost > 0.0 => format!("{known}+?"),
        None => "?".into(),
    }
}

fn bar(value: f64, max: f64) -> String {
    if max <= 0.0 || value <= 0.0 {
        return String::new();
    }
    let eighths = ((value / max) * (BAR * 8) as f64).round().max(1.0) as usize;
    let mut out = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        out.push(BLOCKS[eighths % 8 - 1]);
    }
    out
}

pub fn render(r: &Report) -> String {
    let by_cost = r.rows.iter().any(|row| row.sum.priced_cost > 0.0);
    let measure = |s: &Sum| {
        if by_cost {
            s.priced_cost
        } else {
            s.tokens.total() as f64
        }
    };
    let max = r
        .rows
        .iter()
        .map(|row| measure(&row.sum))
        .fold(0.0, f64::max);
    let mut lines: Vec<[String; 8]> = Vec::new();
    let cells = |label: String, s: &Sum, bar: String| -> [String; 8] {
        [
            label,
            thousands(s.tokens.input),
            thousands(s.tokens.output),
            thousands(s.tokens.cache_write()),
            thousands(s.tokens.cache_read),
            thousands(s.tokens.total()),
            money(s),
            bar,
        ]
    };
    for row in &r.rows {
        let label = match r.kind {
            Kind::Session => {
                let agents: Vec<&str> = row.sum.agents.iter().map(|a| a.name()).collect();
                format!("{} ({})", row.key, agents.join(", "))
            }
            _ => row.key.clone(),
        };
        lines.push(cells(label, &row.sum, bar(measure(&row.sum), max)));
        if r.breakdown && r.kind != Kind::Model {
            for (m, s) in &row.by_model {
                lines.push(cells(format!("  {m}"), s, String::new()));
            }
        }
    }
    let head = [
        r.heading().to_string(),
        "INPUT".into(),
        "OUTPUT".into(),
        "CACHE WRITE".into(),
        "CACHE READ".into(),
        "TOTAL".into(),
        "COST (USD)".into(),
        if by_cost {
            "COST".into()
        } else {
            "TOKENS".into()
        },
    ];
    let total = cells("Total".into(), &r.total, String::new());
    let mut widths = [0usize; 8];
    for l in std::iter::once(&head)
        .chain(&lines)
        .chain(std::iter::once(&total))
    {
        for (i, c) in l.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let fmt = |l: &[String; 8]| {
        let mut s = String::new();
        for (i, c) in l.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i == 0 || i == 7 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
            s.push_str("  ");
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = fmt(&head);
    for l in &lines {
        out.push_str(&fmt(l));
    }
    let rule: usize = widths[..7].iter().sum::<usize>() + 12;
    out.push_str(&"─".repeat(rule));
    out.push('\n');
    out.push_str(&fmt(&total));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_bars() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(bar(1.0, 1.0).chars().count(), BAR);
        assert_eq!(bar(0.5, 1.0).chars().count(), BAR / 2);
        assert_eq!(bar(0.0, 1.0), "");
        assert_eq!(bar(1e-9, 1.0), "▏");
    }
}
