-- The append-only log, the stream generation, and alerts.
-- Applied once, in a transaction, when PRAGMA user_version < 1. Never edited after it lands.

CREATE TABLE events (
    sequence         INTEGER PRIMARY KEY,            -- global order, gapless from 1
    event_id         TEXT    NOT NULL UNIQUE,        -- stable id (UUIDv7 unless the client gave one)
    session_id       TEXT,                           -- NULL for events outside any session
    session_sequence INTEGER,                        -- gapless from 1 within a session, NULL without one
    type             TEXT    NOT NULL,
    source           TEXT    NOT NULL,               -- which contract or producer it came through
    event_time       TEXT    NOT NULL,               -- RFC 3339 UTC, when it happened (client's word)
    received_at      TEXT    NOT NULL,               -- RFC 3339 UTC, when hooklog stored it
    payload          TEXT    NOT NULL CHECK (json_valid(payload)),
    UNIQUE (session_id, session_sequence),
    CHECK ((session_id IS NULL) = (session_sequence IS NULL))
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- A random id made when the database is created: a stream cursor is only valid within one generation.
INSERT INTO meta (key, value) VALUES
    ('stream_generation_id', lower(hex(randomblob(16)))),
    ('created_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

-- A projection: every row is derived from the event that raised it (rebuild reproduces it).
CREATE TABLE alerts (
    id              INTEGER PRIMARY KEY,
    kind            TEXT    NOT NULL,                -- e.g. unknownEventType
    event_sequence  INTEGER NOT NULL,                -- the event that raised it
    event_id        TEXT    NOT NULL,
    session_id      TEXT,
    message         TEXT    NOT NULL,
    details         TEXT    CHECK (details IS NULL OR json_valid(details)),
    raised_at       TEXT    NOT NULL,                -- the raising event's received_at
    acknowledged_at TEXT
);
CREATE INDEX alerts_by_kind ON alerts (kind, id);
