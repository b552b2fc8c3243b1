-- Issue 40: permission requests, answered from one place. A `PermissionRequest` hook event
-- (Claude Code, Codex; or seed 000's `permission_request` type) opens a request; a decision
-- (`permission_response`, decided in the writer: the first wins) or its expiry
-- (`permission_expired`) settles it; the session's later hook events close a request still
-- pending as answered elsewhere (the user answered in the agent's terminal). One row per
-- request, keyed by the sequence of the event that opened it; `request_id` is that event's id,
-- so it survives export and import.
--
-- Applied once, in a transaction; the events already stored are replayed into it. Never
-- edited after it lands.

CREATE TABLE permission_requests (
    sequence          INTEGER PRIMARY KEY,  -- of the event that opened it
    request_id        TEXT    NOT NULL UNIQUE,
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
    message           TEXT                  -- a deny's message, as the agent is given it
);

-- The session's requests still pending, looked up by each of its hook events (to close them):
-- empty most of the time, so the lookup costs one probe and writes nothing.
CREATE INDEX permission_requests_pending ON permission_requests (session_id)
    WHERE state = 'pending';
CREATE INDEX permission_requests_session ON permission_requests (session_id, sequence);
