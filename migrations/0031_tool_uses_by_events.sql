-- Issue 41: fewer pages an acknowledged hook event. A tool use is opened by an event of its
-- own session and keyed by that event's sequence (`opened_sequence`, `tool_uses_by_order`),
-- so a session's tool uses are found by walking the session's events (the events' own index
-- on `session_id, session_sequence`) and looking each one up: `tool_uses_by_session`, whose
-- entry for a new tool use landed on a page of its session's (with a hundred sessions posting
-- at once, 7.5 of the 74 pages a commit of 30 hook events wrote), goes.
--
-- A tool use outlives its opening event when retention prunes the event: `opening_pruned` is
-- 1 for those (NULL otherwise), set when the event goes, and the partial index
-- `tool_uses_pruned` finds a session's among them. None of them is newer than an event still
-- in the log, so a session's tool uses are the pruned ones, then those its events open.
-- In the retention snapshot's file (made by these migrations too), whose `events` is empty,
-- every tool use has its opening event pruned.
--
-- Never edited after it lands.

DROP INDEX tool_uses_by_session;
ALTER TABLE tool_uses ADD COLUMN opening_pruned INTEGER;
UPDATE tool_uses SET opening_pruned = 1
 WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.sequence = tool_uses.opened_sequence);
CREATE INDEX tool_uses_pruned ON tool_uses (session_id, opened_sequence) WHERE opening_pruned = 1;
