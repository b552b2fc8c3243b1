-- Issues 41 and 43: a change row's keys are stored as one-character codes. Each key an
-- `agent_changes` row's deltas are written with (a delta's own, and the fields of the heroes,
-- missions, tool uses and permission requests it sets) has a code: `"entity":` is stored as
-- `"A":`, `"openedEventId":` as `"Z":`, and so on (`KEYS` in src/projection/changes/stored.rs;
-- a key without a code is stored as it is). `GET /changes` sends the keys; with migration
-- 0019's markers, a created tool use's row is less than half its size in full. The rows
-- stored before this migration are rewritten so by hooklog once the pending migrations have
-- run, in the same transaction.
--
-- Never edited after it lands.

-- The change rows as `GET /changes` sends them, markers and codes replaced, for the sqlite3
-- CLI. Inside a JSON string a `"` is always escaped, so a marker's or a code's text occurs
-- only where a marker or a coded key stands. The 54 replacements are spread over three
-- nested selects: the sqlite3 CLI's parser overflows its stack at about 30 nested calls.
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
      FROM (SELECT c.sequence, e.event_id, e.type, e.event_time, e.session_id, c.hero_id, c.mission_id,
                   replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(c.changes,
                     '{"e":""}', json_quote(e.event_id)),
                     '{"e":"tool-"}', json_quote('tool-' || e.event_id)),
                     '{"e":"mission-"}', json_quote('mission-' || e.event_id)),
                     '{"t":0}', json_quote(e.event_time)),
                     '{"c":0}', json_quote(e.session_id)),
                     '{"h":0}', json_quote(c.hero_id)),
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
            FROM agent_changes c JOIN events e ON e.sequence = c.sequence));
