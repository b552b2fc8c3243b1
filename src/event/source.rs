//! Where an event came from: the `source` column. Each wire contract (and the coordination
//! verbs) stamps its own; readers branch on it.

/// The producers hooklog knows. An event's `source` is one of these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `POST /events`: an envelope the producer built.
    Api,
    /// A raw agent hook body (`POST /event`, `POST /hooks/...`).
    Hook,
    /// An inbox watcher's normalized event (`registered`, `stuck`, `unstuck`, `ended`).
    Normalized,
    /// seed 003's factory events.
    Factory,
    /// seed 002's coordination verbs (owners, claims, gaps).
    Coordination,
    /// A line of an agent's transcript file.
    Transcript,
    /// What the JetStream aggregator refused or renamed (`jetstream::check`).
    Replication,
}

impl Source {
    pub const ALL: [Source; 7] = [
        Source::Api,
        Source::Hook,
        Source::Normalized,
        Source::Factory,
        Source::Coordination,
        Source::Transcript,
        Source::Replication,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Source::Api => "api",
            Source::Hook => "hook",
            Source::Normalized => "normalized",
            Source::Factory => "factory",
            Source::Coordination => "coordination",
            Source::Transcript => "transcript",
            Source::Replication => "replication",
        }
    }

    pub fn parse(source: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|s| s.as_str() == source)
    }
}

#[cfg(test)]
mod tests {
    use super::Source;

    #[test]
    fn every_source_parses_back_from_its_name() {
        for source in Source::ALL {
            assert_eq!(Source::parse(source.as_str()), Some(source));
        }
        assert_eq!(Source::parse("nope"), None);
    }
}
