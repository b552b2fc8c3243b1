-- Agent Factory sessions (seed 003): the lifecycle of a factory session on its sessions row,
-- and its work items and dispatches in their own tables. Derived from factory events (source
-- 'factory') alone; times are the events' context.eventTime.
-- Applied once, in a transaction, when PRAGMA user_version < 5. Never edited after it lands.

ALTER TABLE sessions ADD COLUMN factory_status TEXT;    -- QUEUED | RUNNING | PAUSED | SUCCEEDED | FAILED | ...
ALTER TABLE sessions ADD COLUMN result_status TEXT;     -- NOT_READY | PARTIAL | FINAL | FAILED_WITH_PARTIAL | UNAVAILABLE
ALTER TABLE sessions ADD COLUMN run_requested_at TEXT;
ALTER TABLE sessions ADD COLUMN started_at TEXT;
ALTER TABLE sessions ADD COLUMN paused_at TEXT;
ALTER TABLE sessions ADD COLUMN resumed_at TEXT;
ALTER TABLE sessions ADD COLUMN completed_at TEXT;
ALTER TABLE sessions ADD COLUMN run_responded_at TEXT;

-- Work items of a factory session: where each one is now, and how often it moved.
CREATE TABLE factory_work (
    session_id       TEXT    NOT NULL,
    work_id          TEXT    NOT NULL,
    name             TEXT,
    work_type        TEXT,
    state            TEXT,                -- the authored state name it is in
    place_id         TEXT,                -- its marking place (Petri factories)
    request_id       TEXT,
    moves            INTEGER NOT NULL,    -- WORK_STATE_CHANGE events seen for it
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    created_event_id TEXT    NOT NULL,
    PRIMARY KEY (session_id, work_id)
) WITHOUT ROWID;

-- Dispatches of a factory session: a workstation handing work to a worker, and the outcome.
CREATE TABLE factory_dispatches (
    session_id        TEXT    NOT NULL,
    dispatch_id       TEXT    NOT NULL,
    transition_id     TEXT,
    kind              TEXT,               -- PETRI_TRANSITION | JAVASCRIPT_AGENT | ...
    label             TEXT,
    model             TEXT,
    state             TEXT    NOT NULL,   -- REQUESTED | QUEUED | RUNNING | COMPLETED | FAILED | INTERRUPTED
    worker_session_id TEXT,
    outcome           TEXT,               -- ACCEPTED | CONTINUE | REJECTED | FAILED
    reason            TEXT,               -- the interruption's reason
    work_ids          TEXT,               -- JSON array, from the request's context
    duration_ms       INTEGER,
    events            INTEGER NOT NULL,   -- events naming this dispatch
    requested_at      TEXT,
    updated_at        TEXT    NOT NULL,
    completed_at      TEXT,
    PRIMARY KEY (session_id, dispatch_id)
) WITHOUT ROWID;
