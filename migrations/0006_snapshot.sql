-- The retention snapshot: every projection table as it stood after the last pruned event
-- (meta snapshot_through_sequence), so a rebuild after pruning starts from here and replays
-- only the retained events. Same columns, keys and indexes as the live tables (the projection
-- code's upserts run against them while pruning advances the snapshot, see retention.rs).
-- Applied once, in a transaction, when PRAGMA user_version < 6. Never edited after it lands.

CREATE TABLE snapshot_sessions (
    id               TEXT PRIMARY KEY,
    source           TEXT    NOT NULL,
    cli              TEXT,
    cwd              TEXT,
    pane_id          TEXT,
    tty              TEXT,
    transcript_path  TEXT,
    model            TEXT,
    permission_mode  TEXT,
    state            TEXT    NOT NULL
                     CHECK (state IN ('active', 'idle', 'awaiting_input', 'stuck', 'ended')),
    stuck_reason     TEXT,
    stuck_message    TEXT,
    stuck_since      TEXT,
    first_sequence   INTEGER NOT NULL,
    last_sequence    INTEGER NOT NULL,
    event_count      INTEGER NOT NULL,
    first_event_time TEXT    NOT NULL,
    last_event_time  TEXT    NOT NULL,
    ended_at         TEXT,
    factory_status   TEXT,
    result_status    TEXT,
    run_requested_at TEXT,
    started_at       TEXT,
    paused_at        TEXT,
    resumed_at       TEXT,
    completed_at     TEXT,
    run_responded_at TEXT
) WITHOUT ROWID;

CREATE TABLE snapshot_heroes (
    id                TEXT PRIMARY KEY,
    session_id        TEXT    NOT NULL UNIQUE,
    cli               TEXT    NOT NULL,
    cwd               TEXT    NOT NULL,
    tty               TEXT,
    model             TEXT,
    faction           TEXT,
    state             TEXT    NOT NULL CHECK (state IN ('idle', 'active', 'awaiting_input', 'ended')),
    active_mission_id TEXT,
    mission_count     INTEGER NOT NULL,
    spawned_event_id  TEXT    NOT NULL,
    spawned_at        TEXT    NOT NULL,
    updated_at        TEXT    NOT NULL,
    last_sequence     INTEGER NOT NULL
);

CREATE TABLE snapshot_missions (
    id                TEXT PRIMARY KEY,
    hero_id           TEXT    NOT NULL,
    session_id        TEXT    NOT NULL,
    kind              TEXT    NOT NULL CHECK (kind IN ('prompt', 'subagent')),
    state             TEXT    NOT NULL
                      CHECK (state IN ('active', 'completed', 'failed', 'interrupted')),
    prompt            TEXT,
    title             TEXT,
    summary           TEXT,
    parent_mission_id TEXT,
    subagent_id       TEXT,
    subagent_type     TEXT,
    degraded_reason   TEXT,
    opened_event_id   TEXT    NOT NULL,
    closed_event_id   TEXT,
    started_at        TEXT    NOT NULL,
    completed_at      TEXT,
    opened_sequence   INTEGER NOT NULL
);
CREATE INDEX snapshot_missions_by_order ON snapshot_missions (opened_sequence);
CREATE INDEX snapshot_missions_by_hero ON snapshot_missions (hero_id, opened_sequence);
CREATE INDEX snapshot_missions_by_session ON snapshot_missions (session_id, opened_sequence);
CREATE INDEX snapshot_missions_by_state ON snapshot_missions (state, opened_sequence);
CREATE INDEX snapshot_missions_by_parent ON snapshot_missions (parent_mission_id);
CREATE INDEX snapshot_missions_by_subagent ON snapshot_missions (session_id, subagent_id, state, opened_sequence);

CREATE TABLE snapshot_tool_uses (
    id              TEXT PRIMARY KEY,
    session_id      TEXT    NOT NULL,
    hero_id         TEXT,
    mission_id      TEXT,
    tool_use_id     TEXT,
    request_id      TEXT,
    tool            TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    preview         TEXT,
    status          TEXT    NOT NULL
                    CHECK (status IN ('running', 'completed', 'failed', 'interrupted', 'requested', 'reported')),
    error           TEXT,
    opened_event_id TEXT,
    closed_event_id TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    duration_ms     INTEGER,
    opened_sequence INTEGER NOT NULL
);
CREATE INDEX snapshot_tool_uses_by_mission ON snapshot_tool_uses (mission_id, opened_sequence);
CREATE INDEX snapshot_tool_uses_by_session ON snapshot_tool_uses (session_id, opened_sequence);
CREATE INDEX snapshot_tool_uses_by_call ON snapshot_tool_uses (session_id, tool_use_id, opened_sequence);
CREATE INDEX snapshot_tool_uses_running ON snapshot_tool_uses (session_id, opened_sequence) WHERE status = 'running';

CREATE TABLE snapshot_hook_effects (
    event_id   TEXT PRIMARY KEY,
    hero_id    TEXT,
    mission_id TEXT
) WITHOUT ROWID;

CREATE TABLE snapshot_watcher_owners (
    platform           TEXT    NOT NULL,
    account            TEXT    NOT NULL,
    generation         INTEGER NOT NULL,
    pid                INTEGER NOT NULL,
    hostname           TEXT    NOT NULL,
    relay_port         INTEGER,
    relay_token_sha256 TEXT,
    attached           INTEGER NOT NULL,
    started_at         TEXT    NOT NULL,
    last_heartbeat_at  TEXT    NOT NULL,
    released_at        TEXT,
    acquired_event_id  TEXT    NOT NULL,
    PRIMARY KEY (platform, account)
) WITHOUT ROWID;

CREATE TABLE snapshot_claims (
    chat          TEXT PRIMARY KEY,
    generation    INTEGER NOT NULL,
    session_id    TEXT    NOT NULL,
    state         TEXT    NOT NULL CHECK (state IN ('held', 'released')),
    ttl_seconds   INTEGER NOT NULL,
    granted_at    TEXT    NOT NULL,
    renewed_at    TEXT,
    expires_at    TEXT    NOT NULL,
    released_at   TEXT,
    outcome       TEXT,
    last_event_id TEXT    NOT NULL
) WITHOUT ROWID;

CREATE TABLE snapshot_claim_actions (
    sequence   INTEGER PRIMARY KEY,
    chat       TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    session_id TEXT
);
CREATE INDEX snapshot_claim_actions_by_chat ON snapshot_claim_actions (chat, sequence);

CREATE TABLE snapshot_gaps (
    id              TEXT PRIMARY KEY,
    platform        TEXT    NOT NULL,
    account         TEXT    NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('open', 'closed', 'refused')),
    reason          TEXT    NOT NULL,
    from_position   TEXT,
    to_position     TEXT,
    refused_detail  TEXT,
    resumed_by      TEXT,
    detail          TEXT,
    opened_at       TEXT    NOT NULL,
    closed_at       TEXT,
    refused_at      TEXT,
    resumed_at      TEXT,
    opened_event_id TEXT    NOT NULL,
    opened_sequence INTEGER NOT NULL
);
CREATE INDEX snapshot_gaps_by_account ON snapshot_gaps (platform, account, status);
CREATE INDEX snapshot_gaps_unresolved ON snapshot_gaps (platform, account, opened_sequence) WHERE status <> 'closed';
CREATE INDEX snapshot_gaps_by_order ON snapshot_gaps (opened_sequence);

CREATE TABLE snapshot_factory_work (
    session_id       TEXT    NOT NULL,
    work_id          TEXT    NOT NULL,
    name             TEXT,
    work_type        TEXT,
    state            TEXT,
    place_id         TEXT,
    request_id       TEXT,
    moves            INTEGER NOT NULL,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    created_event_id TEXT    NOT NULL,
    PRIMARY KEY (session_id, work_id)
) WITHOUT ROWID;

CREATE TABLE snapshot_factory_dispatches (
    session_id        TEXT    NOT NULL,
    dispatch_id       TEXT    NOT NULL,
    transition_id     TEXT,
    kind              TEXT,
    label             TEXT,
    model             TEXT,
    state             TEXT    NOT NULL,
    worker_session_id TEXT,
    outcome           TEXT,
    reason            TEXT,
    work_ids          TEXT,
    duration_ms       INTEGER,
    events            INTEGER NOT NULL,
    requested_at      TEXT,
    updated_at        TEXT    NOT NULL,
    completed_at      TEXT,
    PRIMARY KEY (session_id, dispatch_id)
) WITHOUT ROWID;

CREATE TABLE snapshot_alerts (
    id              INTEGER PRIMARY KEY,
    kind            TEXT    NOT NULL,
    event_sequence  INTEGER NOT NULL,
    event_id        TEXT    NOT NULL,
    session_id      TEXT,
    message         TEXT    NOT NULL,
    details         TEXT    CHECK (details IS NULL OR json_valid(details)),
    raised_at       TEXT    NOT NULL,
    acknowledged_at TEXT
);
CREATE INDEX snapshot_alerts_by_kind ON snapshot_alerts (kind, id);

-- Where the snapshot stands. A database that never pruned starts with the empty snapshot at 0.
-- One that pruned before this migration has no snapshot of what it pruned, unless no event is
-- left (then the live tables are exactly the state at the boundary); otherwise the key stays
-- absent: `hooklog rebuild --check` says so instead of reporting a difference.
INSERT INTO meta (key, value)
SELECT 'snapshot_through_sequence', value FROM meta
WHERE key = 'pruned_through_sequence'
  AND (value = '0' OR NOT EXISTS (SELECT 1 FROM events));

INSERT INTO snapshot_sessions SELECT * FROM sessions
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_heroes SELECT * FROM heroes
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_missions SELECT * FROM missions
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_tool_uses SELECT * FROM tool_uses
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_hook_effects SELECT * FROM hook_effects
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_watcher_owners SELECT * FROM watcher_owners
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_claims SELECT * FROM claims
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_claim_actions SELECT * FROM claim_actions
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_gaps SELECT * FROM gaps
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_factory_work SELECT * FROM factory_work
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_factory_dispatches SELECT * FROM factory_dispatches
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
INSERT INTO snapshot_alerts SELECT * FROM alerts
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'snapshot_through_sequence' AND value <> '0');
