-- Issue 41: fewer pages an acknowledged hook event. A tool use is opened by one event and is
-- that event's (`id` is `tool-` and the event's id; `opened_sequence` its sequence), so the
-- table is keyed by `opened_sequence` (INTEGER PRIMARY KEY: the row's own key, in the order
-- tool uses open) and neither its unique index on `id` nor `tool_uses_by_order` is needed: a
-- new tool use wrote an entry in each (about 3 of the 64 WAL pages of 8 KiB a commit of 30 hook
-- events wrote). A tool use is found by id through the events' own index on `event_id`, and,
-- once retention has pruned its opening event, through `tool_uses_pruned_ids`.
--
-- The table is made again (SQLite cannot change a table's key in place). The views that read it
-- (`agents_now`, `recent_failures`) name it by name: with `legacy_alter_table`, renaming the new
-- table does not check them against the moment the old one is gone.
--
-- Never edited after it lands.

CREATE TABLE tool_uses_0033 (
    id              TEXT    NOT NULL,     -- 'tool-' || the id of the event that opened it
    session_id      TEXT    NOT NULL,
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
    opened_sequence INTEGER PRIMARY KEY,  -- the sequence of the event that opened it
    opening_pruned  INTEGER               -- 1 once retention pruned that event (0031)
);
INSERT INTO tool_uses_0033 (id, session_id, mission_id, tool_use_id, request_id, tool, kind,
    preview, status, error, opened_event_id, closed_event_id, started_at, finished_at,
    duration_ms, opened_sequence, opening_pruned)
SELECT id, session_id, mission_id, tool_use_id, request_id, tool, kind, preview, status, error,
    opened_event_id, closed_event_id, started_at, finished_at, duration_ms, opened_sequence,
    opening_pruned
FROM tool_uses ORDER BY opened_sequence;
PRAGMA legacy_alter_table = ON;
DROP TABLE tool_uses;
ALTER TABLE tool_uses_0033 RENAME TO tool_uses;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX tool_uses_running ON tool_uses (session_id, opened_sequence) WHERE status = 'running';
CREATE INDEX tool_uses_running_spawners ON tool_uses (session_id, opened_sequence)
    WHERE status = 'running' AND kind = 'subagent';
CREATE INDEX tool_uses_running_by_order ON tool_uses (opened_sequence) WHERE status = 'running';
CREATE INDEX tool_uses_pruned ON tool_uses (session_id, opened_sequence) WHERE opening_pruned = 1;
CREATE INDEX tool_uses_pruned_ids ON tool_uses (id) WHERE opening_pruned = 1;
