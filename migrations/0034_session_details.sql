-- Issue 41: fewer pages an acknowledged hook event. Every event rewrites its session's row
-- (`last_sequence`, `event_count`, `last_event_time`), and a commit of thirty hook events
-- rewrote nearly every page of `sessions` that holds a live session: the row also carried
-- the session's paths and names (a transcript path alone is about 100 bytes), which an event
-- almost never changes. They move to `session_details`, one row a session, written when one
-- of them changes; `sessions` keeps what events change and what its indexes and filters read.
--
-- Never edited after it lands.

CREATE TABLE session_details (
    session_id       TEXT PRIMARY KEY,
    first_event_time TEXT    NOT NULL,   -- the event time of its first event
    cli              TEXT,               -- claude-code, codex-cli, ... (hook sessions)
    cwd              TEXT,
    pane_id          TEXT,               -- tmux pane (normalized events)
    tty              TEXT,
    transcript_path  TEXT,
    model            TEXT,
    permission_mode  TEXT
) WITHOUT ROWID;

INSERT INTO session_details (session_id, first_event_time, cli, cwd, pane_id, tty,
                             transcript_path, model, permission_mode)
SELECT id, first_event_time, cli, cwd, pane_id, tty, transcript_path, model, permission_mode
  FROM sessions;

ALTER TABLE sessions DROP COLUMN first_event_time;
ALTER TABLE sessions DROP COLUMN cli;
ALTER TABLE sessions DROP COLUMN cwd;
ALTER TABLE sessions DROP COLUMN pane_id;
ALTER TABLE sessions DROP COLUMN tty;
ALTER TABLE sessions DROP COLUMN transcript_path;
ALTER TABLE sessions DROP COLUMN model;
ALTER TABLE sessions DROP COLUMN permission_mode;
