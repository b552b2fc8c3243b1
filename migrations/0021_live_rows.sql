-- Issue 43: the sessions and heroes in a live state (every state but `ended`) are found
-- through an index of their own, whatever the log's size: a board asks for them on every
-- open, and a year's log holds tens of thousands of ended sessions they were sorted among.
--
-- Keyed by the state alone, which changes a few times a turn: a session's `last_sequence`,
-- which moves with every batch, is not in them. An ended row leaves the index; a session no
-- event ends (an agent killed without `SessionEnd`) stays in it.
--
-- Never edited after it lands.

CREATE INDEX sessions_live ON sessions (state) WHERE state <> 'ended';
CREATE INDEX heroes_live ON heroes (state) WHERE state <> 'ended';
