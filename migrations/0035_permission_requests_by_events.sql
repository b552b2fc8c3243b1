-- Issue 41: fewer pages an acknowledged hook event, as 0031 to 0033 did for tool uses and
-- missions. A permission request is opened by an event of its own session, keyed by that
-- event's sequence, and its id is that event's id. So:
--
-- - a session's requests are found by walking the session's events and looking each one up by
--   its key: `permission_requests_session`, whose entry for a new request landed on a page of
--   its session's, goes;
-- - a request is found by its id through the events' own index of ids: the unique index on
--   `request_id` goes (the key is unique, and so is an event's id);
-- - requests whose opening event retention pruned (they outlive it) are marked
--   (`opening_pruned` = 1, set when the event goes) and found through
--   `permission_requests_pruned` (by session) and `permission_requests_pruned_ids` (by id).
--
-- The table is made again (SQLite cannot drop a column's UNIQUE in place). The view that reads
-- it (`pending_permissions`) names it by name: with `legacy_alter_table`, renaming the new table
-- does not check it against the moment the old one is gone.
--
-- Never edited after it lands.

CREATE TABLE permission_requests_0035 (
    sequence          INTEGER PRIMARY KEY,  -- of the event that opened it
    request_id        TEXT    NOT NULL,     -- that event's id
    session_id        TEXT    NOT NULL,
    kind              TEXT    NOT NULL,     -- permission, plan (ExitPlanMode)
    tool              TEXT    NOT NULL,
    input_key         TEXT,                 -- the tool input's JSON text, to match the call's later events
    preview           TEXT,                 -- one line, at most 500 characters
    opened_at         TEXT    NOT NULL,
    waits_until       TEXT,                 -- when the waiting hook gives up; NULL: no hook waits (a record only)
    state             TEXT    NOT NULL,     -- pending, allowed, denied, expired, answered_elsewhere
    closed_at         TEXT,
    closed_by         INTEGER,              -- the sequence of the event that settled it
    decided_by        TEXT,                 -- who decided: web, api, websocket
    message           TEXT,                 -- a deny's message, as the agent is given it
    opening_pruned    INTEGER               -- 1 once retention pruned the event that opened it
);
INSERT INTO permission_requests_0035 (sequence, request_id, session_id, kind, tool, input_key,
    preview, opened_at, waits_until, state, closed_at, closed_by, decided_by, message,
    opening_pruned)
SELECT sequence, request_id, session_id, kind, tool, input_key, preview, opened_at, waits_until,
    state, closed_at, closed_by, decided_by, message,
    CASE WHEN EXISTS (SELECT 1 FROM events WHERE events.sequence = permission_requests.sequence)
         THEN NULL ELSE 1 END
FROM permission_requests ORDER BY sequence;
PRAGMA legacy_alter_table = ON;
DROP TABLE permission_requests;
ALTER TABLE permission_requests_0035 RENAME TO permission_requests;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX permission_requests_pending ON permission_requests (session_id)
    WHERE state = 'pending';
CREATE INDEX permission_requests_pending_by_order ON permission_requests (sequence)
    WHERE state = 'pending';
CREATE INDEX permission_requests_pruned ON permission_requests (session_id, sequence)
    WHERE opening_pruned = 1;
CREATE INDEX permission_requests_pruned_ids ON permission_requests (request_id)
    WHERE opening_pruned = 1;
