-- Issue 41: fewer pages an acknowledged hook event, as 0031 did for tool uses. A mission is
-- opened by an event of its own session and keyed by that event's sequence (`opened_sequence`,
-- `missions_by_order`), so a session's missions are found by walking the session's events and
-- looking each one up: `missions_by_session`, whose entry for a new mission landed on a page of
-- its session's, goes. Missions whose opening event retention pruned are marked
-- (`opening_pruned` = 1, set when the event goes) and found through `missions_pruned`.
--
-- `missions_by_parent` holds only the missions that have a parent (subagents'): a prompt
-- mission's entry was a `NULL` no read looks for.
--
-- Never edited after it lands.

DROP INDEX missions_by_session;
ALTER TABLE missions ADD COLUMN opening_pruned INTEGER;
UPDATE missions SET opening_pruned = 1
 WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.sequence = missions.opened_sequence);
CREATE INDEX missions_pruned ON missions (session_id, opened_sequence) WHERE opening_pruned = 1;
DROP INDEX missions_by_parent;
CREATE INDEX missions_by_parent ON missions (parent_mission_id)
    WHERE parent_mission_id IS NOT NULL;
