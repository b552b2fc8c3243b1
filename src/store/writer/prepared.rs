//! An event as the writer's queue holds it: with what the writer needs of it that does not
//! depend on the log, made on the caller's thread before the event is queued. The payload
//! parsed for the projections ([`Parsed`]), split into the event's own fields and those it
//! shares with its session ([`shared::split`]), and its searchable text
//! ([`search::text_of`]) are pure functions of the event, so the many request threads make
//! them and the one writer thread, which every event waits for, does not.
//! A queued event holds its parsed payload beside its text until its batch takes it (the
//! queue's bound, `Config::writer_queue`, counts requests either way).

use crate::event::{NewEvent, shared};
use crate::projection::{Parsed, search};

pub struct Prepared {
    pub event: NewEvent,
    pub parsed: Parsed,
    /// `None` when nothing moves ([`shared::split`]) or the event has no session.
    pub split: Option<shared::Split>,
    /// What the search index takes of it, `None` when nothing.
    pub text: Option<String>,
}

impl Prepared {
    pub fn of(event: NewEvent) -> Prepared {
        let parsed = Parsed::of_payload(&event.source, &event.payload);
        let split = event
            .session_id
            .as_ref()
            .and_then(|_| shared::split(&event.payload, &event.event_type));
        let text = search::text_of_payload(&event.source, &event.payload, &parsed);
        Prepared {
            event,
            parsed,
            split,
            text,
        }
    }

    pub fn all(events: Vec<NewEvent>) -> Vec<Prepared> {
        events.into_iter().map(Prepared::of).collect()
    }
}
