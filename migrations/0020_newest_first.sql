-- Issue 43: the lists that open with the newest rows read them in that order from an index,
-- whatever the log's size, instead of sorting every row on each call.
--
-- - `GET /tool-uses`, newest first. A tool use's `opened_sequence` never changes once it is
--   opened, so the index grows by one entry a tool use and a row's update leaves it alone.
-- - `GET /sessions` and `GET /heroes`, most recent activity first. A session's `last_sequence`
--   moves with each of its events; the writer writes a session's row once a batch, so its
--   entry moves once a batch, to the index's last page.
--
-- Never edited after it lands.

CREATE INDEX tool_uses_by_order ON tool_uses (opened_sequence);
CREATE INDEX sessions_by_activity ON sessions (last_sequence);
