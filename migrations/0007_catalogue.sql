-- The hook catalogue as Claude Code and Codex send it today (docs/hooks.md, "What each event
-- does"): a denied permission closes its tool call as `denied`; a task (`TaskCreated` /
-- `TaskCompleted`) is a `tool_uses` row of kind `task`, `open` until it completes; sessions
-- count their compactions and keep the `source_app` a hook server's envelope named.
-- Applied once, in a transaction, when PRAGMA user_version < 7. Never edited after it lands.
--
-- Events of these types stored before this migration keep what they did then (nothing):
-- `hooklog rebuild` projects them with their new meaning.

ALTER TABLE sessions ADD COLUMN source_app TEXT;
ALTER TABLE sessions ADD COLUMN compactions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_compact_at TEXT;
ALTER TABLE snapshot_sessions ADD COLUMN source_app TEXT;
ALTER TABLE snapshot_sessions ADD COLUMN compactions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshot_sessions ADD COLUMN last_compact_at TEXT;

-- A CHECK cannot be altered in place: each table is made again with the two new statuses,
-- its rows copied in order, and its indexes made again under their old names.
CREATE TABLE tool_uses_0007 (
    id              TEXT PRIMARY KEY,
    session_id      TEXT    NOT NULL,
    hero_id         TEXT,
    mission_id      TEXT,
    tool_use_id     TEXT,                 -- the agent's own id (tool_use_id, or a task's task_id)
    request_id      TEXT,
    tool            TEXT    NOT NULL,
    kind            TEXT    NOT NULL,     -- bash | file | search | web | subagent | mcp | input | permission | task | other
    preview         TEXT,                 -- one line, at most 200 characters
    status          TEXT    NOT NULL
                    CHECK (status IN ('running', 'completed', 'failed', 'interrupted', 'requested',
                                      'reported', 'denied', 'open')),
    error           TEXT,
    opened_event_id TEXT,                 -- NULL when only its end was seen
    closed_event_id TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    duration_ms     INTEGER,
    opened_sequence INTEGER NOT NULL
);
INSERT INTO tool_uses_0007 SELECT * FROM tool_uses ORDER BY rowid;
DROP TABLE tool_uses;
ALTER TABLE tool_uses_0007 RENAME TO tool_uses;
CREATE INDEX tool_uses_by_mission ON tool_uses (mission_id, opened_sequence);
CREATE INDEX tool_uses_by_session ON tool_uses (session_id, opened_sequence);
CREATE INDEX tool_uses_by_call ON tool_uses (session_id, tool_use_id, opened_sequence);
-- What is running now, per session (Stop and SubagentStart look here).
CREATE INDEX tool_uses_running ON tool_uses (session_id, opened_sequence) WHERE status = 'running';

CREATE TABLE snapshot_tool_uses_0007 (
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
                    CHECK (status IN ('running', 'completed', 'failed', 'interrupted', 'requested',
                                      'reported', 'denied', 'open')),
    error           TEXT,
    opened_event_id TEXT,
    closed_event_id TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    duration_ms     INTEGER,
    opened_sequence INTEGER NOT NULL
);
INSERT INTO snapshot_tool_uses_0007 SELECT * FROM snapshot_tool_uses ORDER BY rowid;
DROP TABLE snapshot_tool_uses;
ALTER TABLE snapshot_tool_uses_0007 RENAME TO snapshot_tool_uses;
CREATE INDEX snapshot_tool_uses_by_mission ON snapshot_tool_uses (mission_id, opened_sequence);
CREATE INDEX snapshot_tool_uses_by_session ON snapshot_tool_uses (session_id, opened_sequence);
CREATE INDEX snapshot_tool_uses_by_call ON snapshot_tool_uses (session_id, tool_use_id, opened_sequence);
CREATE INDEX snapshot_tool_uses_running ON snapshot_tool_uses (session_id, opened_sequence) WHERE status = 'running';
