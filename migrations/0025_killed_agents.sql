-- Issue 43: the live-state pages stay flat however many agents were killed. An agent killed
-- without `SessionEnd` (its terminal closed, its process killed) leaves its session and hero
-- in a live state and its calls running for good, so a year's log holds thousands of them. A
-- page of the sessions or heroes in one live state, of the running tool uses or of the pending
-- permission requests read every one of those rows and sorted them, to show the 100 most
-- recent.
--
-- Each index now holds its rows in the order the page shows them:
-- - `sessions_live` by state, then `last_sequence`: a page of one state reads its own rows.
--   The key moves with each event of a live session (its entry goes to the end of its state),
--   where the old key moved only when the state changed;
-- - `sessions_heroes_live`, in place of `heroes_live`, the same for the heroes: a hero's
--   activity is its session's (its row is not rewritten for each event), so the session
--   carries its hero's state, `hero_state` (NULL for a session without a hero), kept equal to
--   `heroes.state` by the four triggers below whichever row is written first, and cleared
--   when its hero goes (an upgrade that replays into new tables deletes and restores heroes);
-- - `tool_uses_running_by_order`: the running tool uses, newest first, for a page of running
--   tool uses of every session (`tool_uses_running` stays: it is keyed by session, for the
--   writer and the pages of one session);
-- - `permission_requests_pending_by_order`: the same for the pending permission requests (an
--   agent killed at its prompt leaves its request pending: no hook waits to expire it).
--
-- Never edited after it lands.

DROP INDEX sessions_live;
CREATE INDEX sessions_live ON sessions (state, last_sequence) WHERE state <> 'ended';

ALTER TABLE sessions ADD COLUMN hero_state TEXT;
UPDATE sessions SET hero_state = (SELECT state FROM heroes WHERE heroes.session_id = sessions.id);
CREATE TRIGGER heroes_state_on_insert AFTER INSERT ON heroes BEGIN
    UPDATE sessions SET hero_state = NEW.state WHERE id = NEW.session_id;
END;
CREATE TRIGGER heroes_state_on_update AFTER UPDATE OF state ON heroes
    WHEN NEW.state IS NOT OLD.state BEGIN
    UPDATE sessions SET hero_state = NEW.state WHERE id = NEW.session_id;
END;
CREATE TRIGGER heroes_state_on_delete AFTER DELETE ON heroes BEGIN
    UPDATE sessions SET hero_state = NULL WHERE id = OLD.session_id;
END;
CREATE TRIGGER sessions_hero_state_on_insert AFTER INSERT ON sessions
    WHEN EXISTS (SELECT 1 FROM heroes WHERE session_id = NEW.id) BEGIN
    UPDATE sessions SET hero_state = (SELECT state FROM heroes WHERE session_id = NEW.id)
    WHERE id = NEW.id;
END;
DROP INDEX heroes_live;
CREATE INDEX sessions_heroes_live ON sessions (hero_state, last_sequence)
    WHERE hero_state <> 'ended';

CREATE INDEX tool_uses_running_by_order ON tool_uses (opened_sequence) WHERE status = 'running';
CREATE INDEX permission_requests_pending_by_order ON permission_requests (sequence)
    WHERE state = 'pending';
