-- Issue 43: a smaller file. A change row's mission (the one its event opened, closed or worked
-- in, else its hero's mission in progress) was its id, `mission-` and the id of the event that
-- opened it: 44 bytes of every row, more than the rest of a shaped row but its values. Every
-- mission is opened by one event and keeps its row in `missions` for good (a rebuild makes it
-- again, retention does not prune it), so the row now names it by the sequence of that event,
-- `missions.opened_sequence` (`missions_by_order` finds it): `agent_changes.mission` in place of
-- `mission_id`. `GET /changes` and the view below name the mission from `missions`.
--
-- Never edited after it lands.

DROP VIEW changes_sent;
ALTER TABLE agent_changes ADD COLUMN mission INTEGER;  -- missions.opened_sequence, NULL: none
UPDATE agent_changes SET mission = (SELECT opened_sequence FROM missions
                                    WHERE missions.id = agent_changes.mission_id)
WHERE mission_id IS NOT NULL;
ALTER TABLE agent_changes DROP COLUMN mission_id;

-- The change rows as `GET /changes` sends them: 0027's view, with the mission named from
-- `missions`.
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
            FROM (SELECT c.sequence, m.id AS mission_id,
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
                  FROM agent_changes c LEFT JOIN change_shapes s ON s.id = c.shape
                  LEFT JOIN missions m ON m.opened_sequence = c.mission) c
            JOIN events e ON e.sequence = c.sequence
            LEFT JOIN heroes h ON h.session_id = e.session_id));
