//! Wall-clock Unix time in milliseconds and its UTC calendar date: the one clock reading of
//! records, open games, PGN headers and the sandbox's timestamps (the engine and the players
//! never read it).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A UTC calendar date and time of day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcDateTime {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
}

impl UtcDateTime {
    /// The date and time of a Unix time in ms (civil-from-days, Howard Hinnant's algorithm).
    pub fn of_unix_ms(ms: i64) -> UtcDateTime {
        let secs = ms.div_euclid(1000);
        let of_day = secs.rem_euclid(86_400);
        let z = secs.div_euclid(86_400) + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        UtcDateTime {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day: doy - (153 * mp + 2) / 5 + 1,
            hour: of_day / 3600,
            minute: of_day / 60 % 60,
            second: of_day % 60,
        }
    }

    /// Now.
    pub fn now() -> UtcDateTime {
        UtcDateTime::of_unix_ms(unix_ms())
    }

    /// The date with `sep` between its fields: `2026.11.25` for PGN, `2026-11-25` for ISO.
    pub fn date(&self, sep: char) -> String {
        format!("{:04}{sep}{:02}{sep}{:02}", self.year, self.month, self.day)
    }

    /// `HH:MM:SS`.
    pub fn time(&self) -> String {
        format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_dates_of_known_instants() {
        let epoch = UtcDateTime::of_unix_ms(0);
        assert_eq!(
            (epoch.date('.'), epoch.time()),
            ("1970.01.01".into(), "00:00:00".into())
        );
        // 2024-02-29T23:59:59Z, a leap day.
        let leap = UtcDateTime::of_unix_ms(1_709_251_199_000);
        assert_eq!(
            (leap.date('-'), leap.time()),
            ("2024-02-29".into(), "23:59:59".into())
        );
        // One ms before the epoch is the last second of 1969.
        let before = UtcDateTime::of_unix_ms(-1);
        assert_eq!(
            (before.date('.'), before.time()),
            ("1969.12.31".into(), "23:59:59".into())
        );
    }
}
