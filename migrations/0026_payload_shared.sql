-- Issue 43: a smaller file. Every hook body repeats what its session already said (its session
-- id, its transcript's path, its working directory, its permission mode, and in some bodies its
-- model and `cli`): about 210 of a hook body's 420 bytes, and the largest part of the log left
-- to save.
--
-- The writer now stores those fields, when they hold strings, once for each combination a
-- session uses (a new one when its user changes the permission mode, say), in
-- `payload_shared`, and the rest of the body in `events.payload`;
-- `events.shared` names the row (NULL: the payload is whole, as every row written before this
-- migration). Every reader gets the payload whole again (`src/event/shared.rs`); in sqlite3,
-- the `events_whole` view does (its payload puts the shared fields back with `json_patch`, so
-- they come last in its text, where hooklog's own readers keep the stored key order).
--
-- A session's rows go when retention has pruned every event of the session.
--
-- Rows written before this migration are left whole (rewriting the log for the saving would
-- cost an upgrade the time of a rebuild); the file shrinks as new events arrive.
--
-- Never edited after it lands.

CREATE TABLE payload_shared (
    id         INTEGER PRIMARY KEY,
    session_id TEXT    NOT NULL,             -- the session whose events share these fields
    fields     TEXT    NOT NULL CHECK (json_valid(fields)),  -- a JSON object, keys sorted
    UNIQUE (session_id, fields)
);

ALTER TABLE events ADD COLUMN shared INTEGER;  -- payload_shared.id, NULL when the payload is whole

CREATE VIEW events_whole AS
SELECT sequence, event_id, session_id, session_sequence, type, source, event_time, received_at,
       CASE WHEN shared IS NULL THEN payload
            ELSE json_patch(payload, (SELECT fields FROM payload_shared p WHERE p.id = shared))
       END AS payload,
       origin
FROM events;
