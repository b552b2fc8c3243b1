-- Issue 42: named views for the questions docs/schema.md answers most, so a sqlite3 user types
-- `SELECT * FROM agents_now;` instead of pasting a join. They read the tables as they are (no
-- rows of their own), so they cost nothing until queried. Documented in docs/schema.md, "Views".
--
-- Never edited after it lands.

-- Every agent not ended: its session, what it is doing (its mission, its running tool) and
-- when it was last heard from; the most recently active first.
CREATE VIEW agents_now AS
SELECT h.session_id, h.cli, h.state, s.state AS session_state, h.cwd,
       m.title AS mission, t.tool, t.preview AS tool_input, t.started_at AS tool_since,
       s.last_event_time
FROM heroes h
JOIN sessions s ON s.id = h.session_id
LEFT JOIN missions m ON m.id = h.active_mission_id
LEFT JOIN tool_uses t ON t.session_id = h.session_id AND t.status = 'running'
WHERE h.state <> 'ended'
ORDER BY s.last_sequence DESC;

-- Every event of a session, in order, with what it was about in one line (the tool, and the
-- prompt, command, file or message). Ask for one session:
--   SELECT * FROM timeline WHERE session_id = 'alpha' ORDER BY session_sequence;
-- which reads that session's rows through the (session_id, session_sequence) index.
CREATE VIEW timeline AS
SELECT session_id, session_sequence, sequence, event_time, type, source,
       coalesce(json_extract(payload, '$.tool'), json_extract(payload, '$.tool_name')) AS tool,
       substr(replace(coalesce(
           json_extract(payload, '$.prompt'),
           json_extract(payload, '$.toolInput.command'),
           json_extract(payload, '$.tool_input.command'),
           json_extract(payload, '$.toolInput.file_path'),
           json_extract(payload, '$.tool_input.file_path'),
           json_extract(payload, '$.message'),
           json_extract(payload, '$.response'),
           json_extract(payload, '$.error')), char(10), ' '), 1, 120) AS summary
FROM events
WHERE session_id IS NOT NULL;

-- Tool calls that failed, newest first, with their error and the mission they were part of.
CREATE VIEW recent_failures AS
SELECT t.finished_at, t.session_id, t.tool, t.preview, t.error, t.duration_ms,
       m.title AS mission
FROM tool_uses t
LEFT JOIN missions m ON m.id = t.mission_id
WHERE t.status = 'failed'
ORDER BY t.opened_sequence DESC;

-- Tokens read from transcripts, per UTC day and model (today's: WHERE day = date('now')).
-- Costs need the price table: `hooklog usage` or GET /usage.
CREATE VIEW usage_by_day AS
SELECT date(event_time) AS day, model, COUNT(*) AS calls,
       SUM(input_tokens) AS input, SUM(output_tokens) AS output,
       SUM(cache_write_5m_tokens + cache_write_1h_tokens) AS cache_writes,
       SUM(cache_read_tokens) AS cache_reads, SUM(reasoning_tokens) AS reasoning
FROM usage
GROUP BY day, model
ORDER BY day DESC, output DESC;

-- Alerts nobody has acknowledged, newest first.
CREATE VIEW open_alerts AS
SELECT id, kind, session_id, message, raised_at, event_sequence
FROM alerts
WHERE acknowledged_at IS NULL
ORDER BY id DESC;

-- Permission requests waiting for an answer, oldest first.
CREATE VIEW pending_permissions AS
SELECT request_id, session_id, tool, preview, opened_at
FROM permission_requests
WHERE state = 'pending'
ORDER BY sequence;

-- Who owns each inbox account, and whether it is heard from (`hung`: no heartbeat for 60 s).
CREATE VIEW owners AS
SELECT platform, account, generation, pid, hostname, last_heartbeat_at,
       CASE WHEN released_at IS NOT NULL THEN 'released'
            WHEN last_heartbeat_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-60 seconds')
            THEN 'hung'
            ELSE 'live' END AS status
FROM watcher_owners
ORDER BY platform, account;

-- Chats claimed right now, by which session, until when.
CREATE VIEW held_claims AS
SELECT c.chat, c.session_id, c.generation, c.expires_at
FROM claims c
LEFT JOIN sessions s ON s.id = c.session_id
WHERE c.state = 'held'
  AND c.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  AND coalesce(s.state, '') <> 'ended'
ORDER BY c.chat;
