-- Issue 28: many machines. Every event records the hooklog instance that first stored it
-- (`origin`), and so does every session (its first event's); a publisher keeps how far
-- JetStream has acknowledged this log, an aggregator how far it has consumed a stream.
--
-- Events stored before this migration were stored here: the server fills their origin (and
-- their sessions') with its own name the first time it opens the database after this
-- migration, and removes the `origin_backfill` mark in the same transaction.
--
-- Applied once, in a transaction, after 0010. Never edited after it lands.
-- Every projection table keeps its snapshot_ twin (migration 0006) with the same columns.

ALTER TABLE events ADD COLUMN origin TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshot_sessions ADD COLUMN origin TEXT NOT NULL DEFAULT '';

-- Not projections (rebuild leaves them): this log's positions with JetStream streams, one row
-- per stream name. The log is the outbox; `published` is its read position.
CREATE TABLE published (
    stream      TEXT PRIMARY KEY,
    sequence    INTEGER NOT NULL,     -- every event of this log at or below it is in the stream
    recorded_at TEXT    NOT NULL      -- RFC 3339 UTC, when that was recorded
) WITHOUT ROWID;
CREATE TABLE consumed (
    stream      TEXT PRIMARY KEY,
    sequence    INTEGER NOT NULL,     -- every message of the stream at or below this stream
                                      -- sequence is in this log
    recorded_at TEXT    NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('origin_backfill', 'pending');
