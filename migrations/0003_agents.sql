-- What each agent is doing and did: sessions (every source), and the hook projections of
-- seed 000 (heroes, missions, tool uses). All four are derived from the log alone: times come
-- from the events, ids from the events' stable ids, so a rebuild reproduces every row.
-- Applied once, in a transaction, when PRAGMA user_version < 3. Never edited after it lands.

-- Every session id seen in the log, from any source.
CREATE TABLE sessions (
    id               TEXT PRIMARY KEY,
    source           TEXT    NOT NULL,   -- the contract of its first event: hook, normalized, api, ...
    cli              TEXT,               -- claude-code, codex-cli, ... (hook sessions)
    cwd              TEXT,
    pane_id          TEXT,               -- tmux pane (normalized events)
    tty              TEXT,
    transcript_path  TEXT,
    model            TEXT,
    permission_mode  TEXT,
    state            TEXT    NOT NULL
                     CHECK (state IN ('active', 'idle', 'awaiting_input', 'stuck', 'ended')),
    stuck_reason     TEXT,               -- stopped | permission, while state = 'stuck'
    stuck_message    TEXT,
    stuck_since      TEXT,
    first_sequence   INTEGER NOT NULL,
    last_sequence    INTEGER NOT NULL,
    event_count      INTEGER NOT NULL,
    first_event_time TEXT    NOT NULL,
    last_event_time  TEXT    NOT NULL,
    ended_at         TEXT
) WITHOUT ROWID;
-- No index on last_sequence: every event of a session moves it, and the list of sessions is
-- small enough to sort when read.

-- One hero per agent session (seed 000). Its id is derived from the session id.
CREATE TABLE heroes (
    id                TEXT PRIMARY KEY,
    session_id        TEXT    NOT NULL UNIQUE,
    cli               TEXT    NOT NULL,   -- claude-code | codex-cli | cursor | opencode | openclaw | web
    cwd               TEXT    NOT NULL,   -- '/' when never given
    tty               TEXT,
    model             TEXT,
    faction           TEXT,
    state             TEXT    NOT NULL CHECK (state IN ('idle', 'active', 'awaiting_input', 'ended')),
    active_mission_id TEXT,               -- the prompt mission in progress
    mission_count     INTEGER NOT NULL,
    spawned_event_id  TEXT    NOT NULL,   -- the event that materialised it
    spawned_at        TEXT    NOT NULL,
    updated_at        TEXT    NOT NULL,
    last_sequence     INTEGER NOT NULL
);

-- A prompt's work (kind 'prompt') or a subagent's (kind 'subagent', child of a prompt mission).
-- Its id is 'mission-' || the id of the event that opened it.
CREATE TABLE missions (
    id                TEXT PRIMARY KEY,
    hero_id           TEXT    NOT NULL,
    session_id        TEXT    NOT NULL,
    kind              TEXT    NOT NULL CHECK (kind IN ('prompt', 'subagent')),
    state             TEXT    NOT NULL
                      CHECK (state IN ('active', 'completed', 'failed', 'interrupted')),
    prompt            TEXT,               -- bounded to 8,000 characters
    title             TEXT,
    summary           TEXT,
    parent_mission_id TEXT,               -- subagent missions: the prompt mission that spawned it
    subagent_id       TEXT,
    subagent_type     TEXT,
    degraded_reason   TEXT,               -- why lineage could not be resolved, when it could not
    opened_event_id   TEXT    NOT NULL,
    closed_event_id   TEXT,
    started_at        TEXT    NOT NULL,
    completed_at      TEXT,
    opened_sequence   INTEGER NOT NULL
);
CREATE INDEX missions_by_order ON missions (opened_sequence);
CREATE INDEX missions_by_hero ON missions (hero_id, opened_sequence);
CREATE INDEX missions_by_session ON missions (session_id, opened_sequence);
CREATE INDEX missions_by_state ON missions (state, opened_sequence);
CREATE INDEX missions_by_parent ON missions (parent_mission_id);
CREATE INDEX missions_by_subagent ON missions (session_id, subagent_id, state, opened_sequence);

-- One tool call (PreToolUse to PostToolUse), or one permission request (kind 'permission').
-- Its id is 'tool-' || the id of the event that opened it.
CREATE TABLE tool_uses (
    id              TEXT PRIMARY KEY,
    session_id      TEXT    NOT NULL,
    hero_id         TEXT,
    mission_id      TEXT,
    tool_use_id     TEXT,                 -- the agent's own id (tool_use_id), when it gave one
    request_id      TEXT,
    tool            TEXT    NOT NULL,
    kind            TEXT    NOT NULL,     -- bash | file | search | web | subagent | mcp | input | permission | other
    preview         TEXT,                 -- one line, at most 200 characters
    status          TEXT    NOT NULL
                    CHECK (status IN ('running', 'completed', 'failed', 'interrupted', 'requested', 'reported')),
    error           TEXT,
    opened_event_id TEXT,                 -- NULL when only its PostToolUse was seen
    closed_event_id TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    duration_ms     INTEGER,
    opened_sequence INTEGER NOT NULL
);
CREATE INDEX tool_uses_by_mission ON tool_uses (mission_id, opened_sequence);
CREATE INDEX tool_uses_by_session ON tool_uses (session_id, opened_sequence);
CREATE INDEX tool_uses_by_call ON tool_uses (session_id, tool_use_id, opened_sequence);
-- What is running now, per session (Stop and SubagentStart look here).
CREATE INDEX tool_uses_running ON tool_uses (session_id, opened_sequence) WHERE status = 'running';

-- What each hook event did (its hero and mission), so a re-posted event is answered exactly
-- as the first time.
CREATE TABLE hook_effects (
    event_id   TEXT PRIMARY KEY,
    hero_id    TEXT,
    mission_id TEXT
) WITHOUT ROWID;
