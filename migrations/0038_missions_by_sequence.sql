-- Issue 41: fewer pages an acknowledged hook event, as 0033 did for tool uses. A mission is
-- opened by one event and is that event's (`id` is `mission-` and the event's id;
-- `opened_sequence` its sequence), so the table is keyed by `opened_sequence` (INTEGER
-- PRIMARY KEY: the row's own key, in the order missions open) and neither its unique index
-- on `id` nor `missions_by_order` is needed: a new mission wrote an entry in each (about 2.5
-- of the 80 WAL frames 30 hook events wrote). A mission is found by id through the events'
-- own index on `event_id`, and, once retention has pruned its opening event, through
-- `missions_pruned_ids`. What named a mission by its key already (change rows since 0028, a
-- hero's mission in progress since 0037) reads it by the table's own key now.
--
-- The table is made again (SQLite cannot change a table's key in place). The views that read
-- it (`agents_now`, `recent_failures`, `changes_sent`) name it by name: with
-- `legacy_alter_table`, renaming the new table does not check them against the moment the old
-- one is gone. `recent_failures` found a tool use's mission by id; it now finds it as the
-- hooklog does.
--
-- Never edited after it lands.

CREATE TABLE missions_0038 (
    id                TEXT    NOT NULL,   -- 'mission-' || the id of the event that opened it
    session_id        TEXT    NOT NULL,
    kind              TEXT    NOT NULL CHECK (kind IN ('prompt', 'subagent')),
    state             TEXT    NOT NULL
                      CHECK (state = 'active' OR state = 'completed' OR state = 'failed'
                             OR state = 'interrupted'),
    prompt            TEXT,               -- bounded to 8,000 characters
    title             TEXT,
    summary           TEXT,
    parent_mission_id TEXT,               -- subagent missions: the prompt mission that spawned it
    subagent_id       TEXT,
    subagent_type     TEXT,
    degraded_reason   TEXT,               -- why lineage could not be resolved, when it could not
    opened_event_id   TEXT    NOT NULL,
    closed_event_id   TEXT,
    started_at        TEXT    NOT NULL,
    completed_at      TEXT,
    opened_sequence   INTEGER PRIMARY KEY, -- the sequence of the event that opened it
    opening_pruned    INTEGER              -- 1 once retention pruned that event (0032)
);
INSERT INTO missions_0038 (id, session_id, kind, state, prompt, title, summary,
    parent_mission_id, subagent_id, subagent_type, degraded_reason, opened_event_id,
    closed_event_id, started_at, completed_at, opened_sequence, opening_pruned)
SELECT id, session_id, kind, state, prompt, title, summary, parent_mission_id, subagent_id,
    subagent_type, degraded_reason, opened_event_id, closed_event_id, started_at, completed_at,
    opened_sequence, opening_pruned
FROM missions ORDER BY opened_sequence;
PRAGMA legacy_alter_table = ON;
DROP TABLE missions;
ALTER TABLE missions_0038 RENAME TO missions;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX missions_by_state ON missions (state, opened_sequence);
CREATE INDEX missions_active ON missions (session_id, opened_sequence) WHERE state = 'active';
CREATE INDEX missions_active_subagents ON missions (session_id, subagent_id, opened_sequence)
    WHERE state = 'active' AND subagent_id IS NOT NULL;
CREATE INDEX missions_pruned ON missions (session_id, opened_sequence) WHERE opening_pruned = 1;
CREATE INDEX missions_pruned_ids ON missions (id) WHERE opening_pruned = 1;
CREATE INDEX missions_by_parent ON missions (parent_mission_id)
    WHERE parent_mission_id IS NOT NULL;

DROP VIEW recent_failures;
CREATE VIEW recent_failures AS
SELECT t.finished_at, t.session_id, t.tool, t.preview, t.error, t.duration_ms,
       coalesce(m.title, (SELECT title FROM missions INDEXED BY missions_pruned_ids
                          WHERE opening_pruned = 1 AND id = t.mission_id)) AS mission
FROM tool_uses t
LEFT JOIN missions m
    ON m.opened_sequence = (SELECT sequence FROM events WHERE event_id = substr(t.mission_id, 9))
WHERE t.status = 'failed'
ORDER BY t.opened_sequence DESC;
