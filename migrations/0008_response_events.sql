-- Seed 003's ephemeral response events (FactoryResponseEvent): what an agent was seen doing
-- while a factory session ran (messages, tool calls, usage, ...). Not part of the canonical
-- log: no projection reads them, `rebuild` leaves them alone, and they have their own,
-- short, retention. One numbering per factory session, from 1; 0 is the STREAM_GAP marker.
CREATE TABLE response_events (
    session_id   TEXT NOT NULL,
    sequence     INTEGER NOT NULL CHECK (sequence > 0),
    event_id     TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    phase        TEXT NOT NULL,
    recorded_at  TEXT NOT NULL,
    -- When hooklog stored it (the writer's batch time): what retention goes by.
    received_at  TEXT NOT NULL,
    -- The FactoryResponseEvent as the stream sends it, sequence and factorySessionId included.
    envelope     TEXT NOT NULL CHECK (json_valid(envelope)),
    PRIMARY KEY (session_id, sequence),
    UNIQUE (session_id, event_id)
) WITHOUT ROWID;

CREATE INDEX response_events_by_age ON response_events (received_at);

-- Per session: the last sequence given and the highest pruned, so numbering never restarts
-- and a cursor before the retained ones is told what was lost.
CREATE TABLE response_event_heads (
    session_id     TEXT PRIMARY KEY,
    last_sequence  INTEGER NOT NULL,
    pruned_through INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
