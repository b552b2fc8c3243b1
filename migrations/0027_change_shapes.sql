-- Issue 43: a smaller file. A change row's deltas, once its event's values are markers and its
-- keys codes (0019, 0022), are mostly the same text from row to row: a `PostToolUse` row is a
-- tool use completed and its hero active, every time, with only the tool use's id and its
-- duration its own. The writer now stores that text once, in `change_shapes`, with each of the
-- row's own values (a string or number a field holds, other than an entity, an op, a state, a
-- status or a kind) written as a placeholder `{"_":N}`, and the row's values, in order, as a
-- JSON array in `agent_changes.changes`; `agent_changes.shape` names the shape (NULL: the row
-- holds its deltas whole, as an empty row `[]`, a row with more than eight values of its own and
-- a row with a string or number in an array do). A value the row holds twice is stored once.
-- `GET /changes` and the view below put the values back (src/projection/changes/shape.rs).
--
-- `change_shapes` is a dictionary, not a projection: a rebuild leaves it as it is (a shape
-- keeps its id, so a rebuilt row equals the live one) and retention does not prune it. It holds
-- a few dozen rows: the forms hooklog's projections write (the names kept in a shape are set
-- by hooklog, but for a permission decision's `kind`, copied from its event).
--
-- The rows stored before this migration are rewritten so by hooklog once the pending
-- migrations have run, in the same transaction (as after 0019 and 0022), so that a rebuild
-- finds the rows it would write.
--
-- Never edited after it lands.

CREATE TABLE change_shapes (
    id    INTEGER PRIMARY KEY,
    shape TEXT    NOT NULL UNIQUE         -- a change row's stored deltas, its values `{"_":N}`
);

ALTER TABLE agent_changes ADD COLUMN shape INTEGER;  -- change_shapes.id; NULL: `changes` is whole

-- The change rows as `GET /changes` sends them: 0024's view, with each shaped row's values put
-- back into its shape first. `->` (SQLite 3.38 and newer) gives a value's JSON text as stored,
-- escapes and all (`json_extract` would decode it, and before 3.45 cut a string at a NUL).
DROP VIEW changes_sent;
CREATE VIEW changes_sent AS
SELECT sequence, event_id, type, event_time, session_id, hero_id, mission_id,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(changes,
         '"2":', '"completedAt":'),
         '"3":', '"openedSequence":'),
         '"4":', '"toolUseId":'),
         '"5":', '"requestId":'),
         '"6":', '"tool":'),
         '"7":', '"preview":'),
         '"8":', '"status":'),
         '"9":', '"error":'),
         '"a":', '"finishedAt":'),
         '"b":', '"durationMs":'),
         '"d":', '"sequence":'),
         '"f":', '"openedAt":'),
         '"g":', '"waitsUntil":'),
         '"i":', '"closedAt":'),
         '"j":', '"closedBy":'),
         '"k":', '"decidedBy":'),
         '"l":', '"message":'),
         '"n":', '"origin":') AS changes
FROM (SELECT sequence, event_id, type, event_time, session_id, hero_id, mission_id,
             replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(changes,
               '"K":', '"model":'),
               '"L":', '"faction":'),
               '"M":', '"state":'),
               '"N":', '"activeMissionId":'),
               '"O":', '"missionCount":'),
               '"P":', '"spawnedEventId":'),
               '"Q":', '"spawnedAt":'),
               '"R":', '"kind":'),
               '"S":', '"prompt":'),
               '"T":', '"title":'),
               '"U":', '"summary":'),
               '"V":', '"parentMissionId":'),
               '"W":', '"subagentId":'),
               '"X":', '"subagentType":'),
               '"Y":', '"degradedReason":'),
               '"Z":', '"openedEventId":'),
               '"0":', '"closedEventId":'),
               '"1":', '"startedAt":') AS changes
      FROM (SELECT c.sequence, e.event_id, e.type, e.event_time, e.session_id, h.id AS hero_id, c.mission_id,
                   replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(c.changes,
                     '{"e":""}', json_quote(e.event_id)),
                     '{"e":"tool-"}', json_quote('tool-' || e.event_id)),
                     '{"e":"mission-"}', json_quote('mission-' || e.event_id)),
                     '{"t":0}', json_quote(e.event_time)),
                     '{"c":0}', json_quote(e.session_id)),
                     '{"h":0}', json_quote(h.id)),
                     '{"m":0}', json_quote(c.mission_id)),
                     '{"s":0}', c.sequence),
                     '"A":', '"entity":'),
                     '"B":', '"op":'),
                     '"C":', '"id":'),
                     '"D":', '"heroId":'),
                     '"E":', '"missionId":'),
                     '"F":', '"set":'),
                     '"G":', '"sessionId":'),
                     '"H":', '"cli":'),
                     '"I":', '"cwd":'),
                     '"J":', '"tty":') AS changes
            FROM (SELECT c.sequence, c.mission_id,
                         CASE WHEN c.shape IS NULL THEN c.changes ELSE
                         replace(replace(replace(replace(replace(replace(replace(replace(s.shape,
                             '{"_":0}', IFNULL(c.changes -> '$[0]', 'null')),
                             '{"_":1}', IFNULL(c.changes -> '$[1]', 'null')),
                             '{"_":2}', IFNULL(c.changes -> '$[2]', 'null')),
                             '{"_":3}', IFNULL(c.changes -> '$[3]', 'null')),
                             '{"_":4}', IFNULL(c.changes -> '$[4]', 'null')),
                             '{"_":5}', IFNULL(c.changes -> '$[5]', 'null')),
                             '{"_":6}', IFNULL(c.changes -> '$[6]', 'null')),
                             '{"_":7}', IFNULL(c.changes -> '$[7]', 'null'))
                         END AS changes
                  FROM agent_changes c LEFT JOIN change_shapes s ON s.id = c.shape) c
            JOIN events e ON e.sequence = c.sequence
            LEFT JOIN heroes h ON h.session_id = e.session_id));
