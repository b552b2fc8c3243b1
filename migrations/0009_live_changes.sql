-- The rest of seeds 000 and 002 (issue 24): what each hook event changed in the agent
-- projections, for the change streams (`GET /changes`, the WebSocket at `/`); the accounts
-- that have events, and the positions each watcher owner records with its heartbeat, from
-- which a takeover or a first owner opens a catch-up gap by itself.
-- Applied once, in a transaction, when PRAGMA user_version < 9. Never edited after it lands.
-- Every projection table gets its snapshot_ twin (migration 0006) with the same columns.

-- One row per hook event that changed a hero, mission or tool use, keyed by its sequence.
-- Pruned with its event (the twin stays empty: a change belongs to its event's history).
CREATE TABLE agent_changes (
    sequence   INTEGER PRIMARY KEY,       -- the event's sequence
    hero_id    TEXT    NOT NULL,
    mission_id TEXT,                      -- the mission the event opened, closed or worked in,
                                          -- else its hero's mission in progress
    changes    TEXT    NOT NULL           -- JSON array of deltas: {entity, op, id, set, ...}
);
CREATE TABLE snapshot_agent_changes (
    sequence   INTEGER PRIMARY KEY,
    hero_id    TEXT    NOT NULL,
    mission_id TEXT,
    changes    TEXT    NOT NULL
);

-- Platform accounts with events: an event of another source than the four contracts (hook,
-- normalized, coordination, factory) whose payload names `platform` and `account`.
CREATE TABLE accounts (
    platform        TEXT    NOT NULL,
    account         TEXT    NOT NULL,
    event_count     INTEGER NOT NULL,
    first_sequence  INTEGER NOT NULL,
    last_sequence   INTEGER NOT NULL,
    last_event_id   TEXT    NOT NULL,     -- the newest event of the account
    last_event_time TEXT    NOT NULL,
    last_position   TEXT,                 -- its `position` (the platform's own), as text
    PRIMARY KEY (platform, account)
) WITHOUT ROWID;
CREATE TABLE snapshot_accounts (
    platform        TEXT    NOT NULL,
    account         TEXT    NOT NULL,
    event_count     INTEGER NOT NULL,
    first_sequence  INTEGER NOT NULL,
    last_sequence   INTEGER NOT NULL,
    last_event_id   TEXT    NOT NULL,
    last_event_time TEXT    NOT NULL,
    last_position   TEXT,
    PRIMARY KEY (platform, account)
) WITHOUT ROWID;

-- The platform's own last positions the owner reported with its latest heartbeat that gave
-- any (a JSON object: X's sequence id, each Discord DM's last message id, each Slack chat's
-- last ts), NULL until then; a new owner starts without.
ALTER TABLE watcher_owners ADD COLUMN positions TEXT;
ALTER TABLE snapshot_watcher_owners ADD COLUMN positions TEXT;

-- Why a gap opened: a request (`POST /gaps`), a takeover from a stopped or hung owner (from
-- its last heartbeat's positions), or a first owner on an account with events (from the
-- newest of them).
ALTER TABLE gaps ADD COLUMN cause TEXT NOT NULL DEFAULT 'request'
    CHECK (cause IN ('request', 'takeover', 'first_owner'));
ALTER TABLE gaps ADD COLUMN from_positions TEXT;     -- takeover: the JSON object of positions
ALTER TABLE gaps ADD COLUMN from_heartbeat_at TEXT;  -- takeover: the last heartbeat's time
ALTER TABLE gaps ADD COLUMN from_event_id TEXT;      -- first owner: the account's newest event
ALTER TABLE snapshot_gaps ADD COLUMN cause TEXT NOT NULL DEFAULT 'request'
    CHECK (cause IN ('request', 'takeover', 'first_owner'));
ALTER TABLE snapshot_gaps ADD COLUMN from_positions TEXT;
ALTER TABLE snapshot_gaps ADD COLUMN from_heartbeat_at TEXT;
ALTER TABLE snapshot_gaps ADD COLUMN from_event_id TEXT;
