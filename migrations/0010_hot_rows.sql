-- Issue 21: the hook path writes few pages. With a hundred sessions writing at once, every
-- index keyed by session first dirties a page of its own for each event, and `INSERT OR
-- REPLACE` moved a row and rewrote every index it is in each time a tool use or mission
-- changed. After this migration:
--
-- - `sessions` is a rowid table (its rows in the order sessions first appeared), so the rows of
--   the sessions active now sit together at its end instead of spread by their random ids;
-- - tool uses and missions are changed in place (an upsert setting only the columns that
--   change), so a row keeps its place and the indexes of columns it does not change;
-- - `tool_uses_by_call` and `tool_uses_by_mission` are gone: the writer finds a call through the
--   calls it holds in memory (loaded per session through `tool_uses_by_session`), and a
--   mission's tool uses are its session's from the mission's opening on
--   (`tool_uses_by_session`);
-- - `missions_by_hero` and `missions_by_subagent` are gone: a hero is its session's, and an
--   active subagent is found through `missions_active`, which holds only the active missions.
--
-- Applied once, in a transaction, when PRAGMA user_version < 10. Never edited after it lands.
-- Every projection table keeps its snapshot_ twin (migration 0006) with the same columns.

CREATE TABLE sessions_0010 (
    id               TEXT PRIMARY KEY,
    source           TEXT    NOT NULL,   -- the contract of its first event: hook, normalized, api, ...
    cli              TEXT,               -- claude-code, codex-cli, ... (hook sessions)
    cwd              TEXT,
    pane_id          TEXT,               -- tmux pane (normalized events)
    tty              TEXT,
    transcript_path  TEXT,
    model            TEXT,
    permission_mode  TEXT,
    state            TEXT    NOT NULL
                     CHECK (state IN ('active', 'idle', 'awaiting_input', 'stuck', 'ended')),
    stuck_reason     TEXT,               -- stopped | permission, while state = 'stuck'
    stuck_message    TEXT,
    stuck_since      TEXT,
    first_sequence   INTEGER NOT NULL,
    last_sequence    INTEGER NOT NULL,
    event_count      INTEGER NOT NULL,
    first_event_time TEXT    NOT NULL,
    last_event_time  TEXT    NOT NULL,
    ended_at         TEXT,
    factory_status   TEXT,               -- factory sessions (seed 003)
    result_status    TEXT,
    run_requested_at TEXT,
    started_at       TEXT,
    paused_at        TEXT,
    resumed_at       TEXT,
    completed_at     TEXT,
    run_responded_at TEXT,
    source_app       TEXT,               -- the app a hook server's envelope named
    compactions      INTEGER NOT NULL DEFAULT 0,
    last_compact_at  TEXT
);
INSERT INTO sessions_0010 SELECT * FROM sessions ORDER BY first_sequence;
DROP TABLE sessions;
ALTER TABLE sessions_0010 RENAME TO sessions;

CREATE TABLE snapshot_sessions_0010 (
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
    run_responded_at TEXT,
    source_app       TEXT,
    compactions      INTEGER NOT NULL DEFAULT 0,
    last_compact_at  TEXT
);
INSERT INTO snapshot_sessions_0010 SELECT * FROM snapshot_sessions ORDER BY first_sequence;
DROP TABLE snapshot_sessions;
ALTER TABLE snapshot_sessions_0010 RENAME TO snapshot_sessions;

DROP INDEX tool_uses_by_call;
DROP INDEX tool_uses_by_mission;
DROP INDEX snapshot_tool_uses_by_call;
DROP INDEX snapshot_tool_uses_by_mission;

DROP INDEX missions_by_hero;
DROP INDEX missions_by_subagent;
DROP INDEX snapshot_missions_by_hero;
DROP INDEX snapshot_missions_by_subagent;
-- The active missions of a session (a session has a few at a time).
CREATE INDEX missions_active ON missions (session_id, opened_sequence) WHERE state = 'active';
CREATE INDEX snapshot_missions_active ON snapshot_missions (session_id, opened_sequence)
    WHERE state = 'active';
