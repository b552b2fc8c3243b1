-- Issue 43: a smaller file. A tool use's and a mission's hero is always its session's (every
-- hero is named `hero-` and a UUIDv5 of its session id, and the hook projection opens a tool
-- use or a mission only in its event's session, for that session's hero), so `hero_id`, 41
-- bytes of every row of the two largest projection tables, is not stored any more: hooklog
-- names it from `session_id` when it reads a row (as 0024 did for change rows); in sqlite3,
-- join `heroes` on `session_id`. Dropping the columns rewrites both tables once.
--
-- Never edited after it lands.

ALTER TABLE tool_uses DROP COLUMN hero_id;
ALTER TABLE missions DROP COLUMN hero_id;
