//! Times in the log are RFC 3339 UTC strings with milliseconds (`2026-11-30T12:00:00.000Z`):
//! readable in sqlite3, sortable as text, the format the seeds use.

use chrono::{DateTime, SecondsFormat, Utc};

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
