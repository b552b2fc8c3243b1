-- Issue 21, continued: a hook event rewrites only the rows it really changes.
--
-- - `heroes` no longer stores `updated_at` and `last_sequence`. They were its session's latest
--   event, so every hook event rewrote its hero's row (and put a hero delta in `agent_changes`)
--   for them alone; the routes now read them from the hero's `sessions` row.
-- - `hook_effects` is keyed by the event's sequence instead of its random id, so each commit
--   appends to its last page instead of dirtying one page per event, and it holds only the
--   mission an event answered with (its hero is its session's, `hero-` and a UUIDv5 of the
--   session id). Like `agent_changes`, a row belongs to its event: retention prunes it with
--   the event, and its snapshot twin stays empty.
--
-- Applied once, in a transaction. Never edited after it lands.

ALTER TABLE heroes DROP COLUMN updated_at;
ALTER TABLE heroes DROP COLUMN last_sequence;
ALTER TABLE snapshot_heroes DROP COLUMN updated_at;
ALTER TABLE snapshot_heroes DROP COLUMN last_sequence;

CREATE TABLE hook_effects_0011 (
    sequence   INTEGER PRIMARY KEY,       -- the hook event's sequence
    mission_id TEXT    NOT NULL           -- the mission it opened, closed or worked in
);
INSERT INTO hook_effects_0011 (sequence, mission_id)
    SELECT e.sequence, h.mission_id FROM hook_effects h JOIN events e ON e.event_id = h.event_id
    WHERE h.mission_id IS NOT NULL ORDER BY e.sequence;
DROP TABLE hook_effects;
ALTER TABLE hook_effects_0011 RENAME TO hook_effects;

DROP TABLE snapshot_hook_effects;
CREATE TABLE snapshot_hook_effects (
    sequence   INTEGER PRIMARY KEY,
    mission_id TEXT    NOT NULL
);
