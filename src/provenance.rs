//! What produced a result: the commit framebench was built from (in full, `-dirty` when tracked
//! files had changed) and the UTC window the measurement ran in. The quick compare's screen file
//! prints both on lines of their own, so a published screen names its run.

use std::fmt;
use std::time::SystemTime;

/// framebench's `git rev-parse HEAD` at build time, in full, with `-dirty` when tracked files
/// had changed (`unknown` outside a checkout).
pub(crate) fn commit() -> &'static str {
    crate::env::GIT_REVISION
}

/// The UTC window a measurement ran in, to the minute.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    start: SystemTime,
    end: SystemTime,
}

impl Window {
    /// From `start` until now.
    pub(crate) fn since(start: SystemTime) -> Self {
        Self {
            start,
            end: SystemTime::now(),
        }
    }
}

/// `26 Nov 2026 09:03–09:10 UTC`; across midnight, each end with its date.
impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start_date, start_time) = date_and_minute(self.start);
        let (end_date, end_time) = date_and_minute(self.end);
        if start_date == end_date {
            write!(f, "{start_date} {start_time}–{end_time} UTC")
        } else {
            write!(f, "{start_date} {start_time} – {end_date} {end_time} UTC")
        }
    }
}

/// (`26 Nov 2026`, `09:03`) for `at`, from its HTTP date (`Thu, 26 Nov 2026 09:03:45 GMT`):
/// httpdate is already a dependency and prints UTC; no calendar code of our own.
fn date_and_minute(at: SystemTime) -> (String, String) {
    let text = httpdate::fmt_http_date(at);
    let words: Vec<&str> = text.split(' ').collect();
    match words.as_slice() {
        [_, day, month, year, time, _] => (
            format!("{day} {month} {year}"),
            time.get(..5).unwrap_or(time).to_owned(),
        ),
        _ => (text.clone(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn a_window_prints_its_date_once_and_both_minutes() {
        // 2026-11-26 09:03:45 UTC and 7 minutes later.
        let start = UNIX_EPOCH + Duration::from_secs(1_795_683_825);
        let w = Window {
            start,
            end: start + Duration::from_secs(7 * 60),
        };
        assert_eq!(w.to_string(), "26 Nov 2026 09:03–09:10 UTC");
    }

    #[test]
    fn a_window_across_midnight_dates_both_ends() {
        // 2026-11-26 23:58:00 UTC and 5 minutes later.
        let start = UNIX_EPOCH + Duration::from_secs(1_795_737_480);
        let w = Window {
            start,
            end: start + Duration::from_secs(5 * 60),
        };
        assert_eq!(w.to_string(), "26 Nov 2026 23:58 – 27 Nov 2026 00:03 UTC");
    }
}
