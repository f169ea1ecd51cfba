//! Dates and durations as people type them on a command line or in a tool's
//! arguments: `--since 2026-11-01`, `--since 7d`, `--older-than 30d`.

use std::time::Duration;

/// `30d`, `12h`, `90m`, `45s`, `2w`, or several at once (`1d12h`).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration like 30d, 12h, 90m, 45s or 2w");
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in s.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        digits.clear();
    }
    if !digits.is_empty() || s.trim().is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// `--since DATE`: `2026-11-01` (local midnight), an RFC 3339 time, or a duration
/// back from now (`7d`, `12h`, `2w`, `1d12h`). Milliseconds since the epoch.
pub fn parse_since(s: &str) -> std::result::Result<i64, String> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let midnight = d.and_hms_opt(0, 0, 0).expect("midnight exists");
        use chrono::TimeZone;
        let t = chrono::Local
            .from_local_datetime(&midnight)
            .earliest()
            .map(|t| t.timestamp_millis())
            .unwrap_or_else(|| midnight.and_utc().timestamp_millis());
        return Ok(t);
    }
    match parse_duration(s) {
        Ok(d) => {
            let now = chrono::Utc::now().timestamp_millis();
            Ok(now.saturating_sub(d.as_millis().min(i64::MAX as u128) as i64))
        }
        Err(_) => Err(format!(
            "{s:?} is not a date (2026-11-01, 2026-11-01T09:00:00Z) or a duration back from now (7d, 12h, 2w)"
        )),
    }
}

/// A day as `fen-fs usage --since/--until` and the MCP `usage` tool take it: a date,
/// or so many days counting today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayArg {
    Date(chrono::NaiveDate),
    DaysBack(i64),
}

impl DayArg {
    /// The day meant, `today` being today in the report's time zone.
    pub fn day(self, today: chrono::NaiveDate) -> chrono::NaiveDate {
        match self {
            DayArg::Date(d) => d,
            DayArg::DaysBack(n) => today - chrono::Duration::days(n - 1),
        }
    }
}

/// `2026-11-01` or `20261101` (a day in the report's time zone), or for a first day a
/// number of days back counting today (`7d`, `2w`).
pub fn parse_day(s: &str) -> std::result::Result<DayArg, String> {
    let s = s.trim();
    for fmt in ["%Y-%m-%d", "%Y%m%d"] {
        if let Ok(d) = chrono::NaiveDate::parse_from_str(s, fmt) {
            return Ok(DayArg::Date(d));
        }
    }
    match parse_duration(s) {
        Ok(d) if d.as_secs() % 86_400 == 0 && d.as_secs() > 0 => {
            Ok(DayArg::DaysBack((d.as_secs() / 86_400) as i64))
        }
        _ => Err(format!(
            "{s:?} is not a date (2026-11-01 or 20261101) or a number of days back (7d, 2w)"
        )),
    }
}
