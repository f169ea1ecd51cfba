//! Which time zone a day is in: `--timezone ZONE`, else `$TZ`, else the system's
//! (`/etc/localtime`). IANA names are built in (a machine without tzdata still counts
//! days in its zone); a POSIX `TZ` rule (`CET-1CEST`) goes to the C library's rules
//! through chrono's local time.

use chrono::{DateTime, NaiveDate, Offset, TimeZone, Utc};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Zone {
    Named(chrono_tz::Tz),
    Local,
}

impl Zone {
    /// `--timezone ZONE`: an IANA name (`Europe/Berlin`), `UTC`, or `local`.
    pub fn parse(name: &str) -> Result<Zone, String> {
        if name.eq_ignore_ascii_case("local") {
            return Ok(Zone::Local);
        }
        name.parse::<chrono_tz::Tz>().map(Zone::Named).map_err(|_| {
            format!(
                "{name:?} is not a time zone (an IANA name such as Europe/Berlin, UTC, or local)"
            )
        })
    }

    /// `$TZ` when it names a zone, else the system's.
    pub fn from_env() -> Zone {
        std::env::var("TZ")
            .ok()
            .map(|tz| tz.trim_start_matches(':').to_string())
            .filter(|tz| !tz.is_empty())
            .and_then(|tz| tz.parse::<chrono_tz::Tz>().ok())
            .map_or(Zone::Local, Zone::Named)
    }

    /// The calendar day of `ms` (milliseconds since the epoch) in this zone.
    pub fn date_of(&self, ms: i64) -> NaiveDate {
        let utc = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
        match self {
            Zone::Named(tz) => utc.with_timezone(tz).date_naive(),
            Zone::Local => utc.with_timezone(&chrono::Local).date_naive(),
        }
    }

    /// Today in this zone.
    pub fn today(&self) -> NaiveDate {
        self.date_of(Utc::now().timestamp_millis())
    }

    /// The zone's name, for people.
    pub fn name(&self) -> String {
        match self {
            Zone::Named(tz) => tz.name().to_string(),
            Zone::Local => {
                let off = chrono::Local::now().offset().fix();
                format!("local time (UTC{off})")
            }
        }
    }

    /// Midnight starting `day`, in milliseconds since the epoch.
    pub fn start_of(&self, day: NaiveDate) -> i64 {
        let midnight = day.and_hms_opt(0, 0, 0).expect("midnight exists");
        let t = match self {
            Zone::Named(tz) => tz
                .from_local_datetime(&midnight)
                .earliest()
                .map(|t| t.timestamp_millis()),
            Zone::Local => chrono::Local
                .from_local_datetime(&midnight)
                .earliest()
                .map(|t| t.timestamp_millis()),
        };
        t.unwrap_or_else(|| midnight.and_utc().timestamp_millis())
    }
}
