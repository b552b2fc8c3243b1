-- Issue 43: `GET /tool-uses` opens with the newest tool uses, and reads them newest first
-- through this index, whatever the log's size (it sorted every tool use before). A tool use's
-- `opened_sequence` never changes once it is opened, so a row's update leaves its entry alone:
-- the index grows by one entry a tool use.
--
-- Never edited after it lands.

CREATE INDEX tool_uses_by_order ON tool_uses (opened_sequence);
