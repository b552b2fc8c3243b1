-- Issues 41 and 43: an `agent_changes` row keeps only what its event does not already say.
-- A value in its deltas that equals the event's id (alone, or after `tool-` or `mission-`),
-- its time, its session id or its sequence, or the row's hero or mission id, is stored as a
-- marker (`{"e":"tool-"}`, `{"t":0}`, `{"c":0}`, `{"s":0}`, `{"h":0}`, `{"m":0}`) that
-- `GET /changes` replaces with the value (src/projection/changes/stored.rs). The rows stored
-- before this migration are rewritten so by hooklog right after it, in the same transaction.
--
-- Never edited after it lands.

-- The change rows as `GET /changes` sends them, markers replaced, for the sqlite3 CLI. Inside a
-- JSON string a `"` is always escaped, so a marker's text occurs only where a marker stands.
CREATE VIEW changes_sent AS
SELECT c.sequence, e.event_id, e.type, e.event_time, e.session_id, c.hero_id, c.mission_id,
       replace(replace(replace(replace(replace(replace(replace(replace(c.changes,
           '{"e":""}', json_quote(e.event_id)),
           '{"e":"tool-"}', json_quote('tool-' || e.event_id)),
           '{"e":"mission-"}', json_quote('mission-' || e.event_id)),
           '{"t":0}', json_quote(e.event_time)),
           '{"c":0}', json_quote(e.session_id)),
           '{"h":0}', json_quote(c.hero_id)),
           '{"m":0}', json_quote(c.mission_id)),
           '{"s":0}', c.sequence) AS changes
FROM agent_changes c JOIN events e ON e.sequence = c.sequence;
