-- Issue 41: fewer pages a hook event. A hero's state, its mission in progress and its mission
-- count change with its session's prompts, tools and stops, and each change rewrote the
-- hero's row: a page of `heroes` written for most hook events that change their hero (4.8 of
-- about 84 WAL frames per 30 hook events), and a trigger's update of the session's
-- `hero_state` besides. The session's row is written for every one of its events anyway (once
-- a batch, by the writer), so these three columns move to it, beside `hero_state`, which is
-- now the hero's state itself rather than a copy kept by triggers:
-- - `sessions.hero_state`: the hero's state (`NULL` for a session without a hero);
-- - `sessions.hero_mission`: the prompt mission in progress (was `heroes.active_mission_id`),
--   by its key, the sequence of the event that opened it (`missions.opened_sequence`: 8 bytes
--   at most where the id took 44);
-- - `sessions.hero_mission_count`: how many missions it opened, prompts' and subagents' (was
--   `heroes.mission_count`; `NULL` without a hero).
-- `heroes` keeps what a hero is said to be (its cli, cwd, tty, model, faction) and where it
-- came from; in sqlite3, join `sessions` on `heroes.session_id` for the rest (`agents_now`
-- does). The triggers that kept `hero_state` a copy go; so does the CHECK on the hero's
-- state, which hooklog's own type keeps (it writes nothing else there).
--
-- Never edited after it lands.

ALTER TABLE sessions ADD COLUMN hero_mission INTEGER;
ALTER TABLE sessions ADD COLUMN hero_mission_count INTEGER;
UPDATE sessions SET (hero_state, hero_mission, hero_mission_count) =
    (SELECT h.state, m.opened_sequence, h.mission_count
     FROM heroes h LEFT JOIN missions m ON m.id = h.active_mission_id
     WHERE h.session_id = sessions.id)
WHERE id IN (SELECT session_id FROM heroes);

DROP TRIGGER heroes_state_on_insert;
DROP TRIGGER heroes_state_on_update;
DROP TRIGGER heroes_state_on_delete;
DROP TRIGGER sessions_hero_state_on_insert;

DROP VIEW agents_now;
ALTER TABLE heroes DROP COLUMN state;
ALTER TABLE heroes DROP COLUMN active_mission_id;
ALTER TABLE heroes DROP COLUMN mission_count;

-- 0018's view, reading the hero's progress from its session.
CREATE VIEW agents_now AS
SELECT h.session_id, h.cli, s.hero_state AS state, s.state AS session_state, h.cwd,
       m.title AS mission, t.tool, t.preview AS tool_input, t.started_at AS tool_since,
       s.last_event_time
FROM heroes h
JOIN sessions s ON s.id = h.session_id
LEFT JOIN missions m ON m.opened_sequence = s.hero_mission
LEFT JOIN tool_uses t ON t.session_id = h.session_id AND t.status = 'running'
WHERE s.hero_state <> 'ended'
ORDER BY s.last_sequence DESC;
