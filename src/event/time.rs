//! Times in the log are RFC 3339 UTC strings with milliseconds (`2026-11-30T12:00:00.000Z`):
//! readable in sqlite3, sortable as text, the format the seeds use.

use chrono::{DateTime, SecondsFormat, Utc};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The clock the writer stamps `received_at` with, and coordination decisions compare against
/// ("has this owner been silent for 60 s?"). It is the system clock, plus an offset that only
/// tests move ([`Clock::advance`]), so "a minute later" needs no sleeping. Projections never
/// read it: they take times from events.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::milliseconds(self.offset_ms.load(Ordering::Acquire))
    }

    /// Moves this clock (and every clone of it) forward.
    pub fn advance(&self, by: std::time::Duration) {
        self.offset_ms
            .fetch_add(by.as_millis() as i64, Ordering::AcqRel);
    }
}

/// Parses a time in the log's format (any RFC 3339) to a UTC time.
pub fn parse(input: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(input)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Now, in the log's format.
pub fn now() -> String {
    format(Utc::now())
}

pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses any RFC 3339 time and returns it in the log's format (UTC, milliseconds).
pub fn normalize(input: &str) -> Option<String> {
    DateTime::parse_from_rfc3339(input)
        .ok()
        .map(|t| format(t.with_timezone(&Utc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_advanced_clock_is_ahead_in_every_clone() {
        let clock = Clock::default();
        let other = clock.clone();
        clock.advance(std::time::Duration::from_secs(3600));
        let ahead = other.now() - Utc::now();
        assert!(ahead >= chrono::Duration::seconds(3599), "{ahead}");
    }

    #[test]
    fn normalize_converts_offsets_to_utc_milliseconds() {
        assert_eq!(
            normalize("2026-11-30T14:00:00+02:00").as_deref(),
            Some("2026-11-30T12:00:00.000Z")
        );
        assert_eq!(
            normalize("2026-11-30T12:00:00.123456Z").as_deref(),
            Some("2026-11-30T12:00:00.123Z")
        );
        assert_eq!(normalize("yesterday"), None);
        assert_eq!(normalize("2026-11-30"), None);
    }
}
