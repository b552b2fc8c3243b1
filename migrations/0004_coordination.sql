-- Coordination (seed 002): watcher owners, chat claims and catch-up gaps. Each is decided by
-- the writer against these tables and recorded as events (source 'coordination'); the tables
-- are derived from those events alone, so a rebuild reproduces them.
-- Applied once, in a transaction, when PRAGMA user_version < 4. Never edited after it lands.

-- The watcher owning each platform account (the latest one; earlier owners are in the log).
-- Whether a held owner is live or hung is computed when read, from last_heartbeat_at.
CREATE TABLE watcher_owners (
    platform           TEXT    NOT NULL,
    account            TEXT    NOT NULL,
    generation         INTEGER NOT NULL,  -- 1 for the first owner, +1 at every acquire
    pid                INTEGER NOT NULL,
    hostname           TEXT    NOT NULL,
    relay_port         INTEGER,
    relay_token_sha256 TEXT,              -- never the token itself
    attached           INTEGER NOT NULL,  -- subscribers attached to its relay (last heartbeat)
    started_at         TEXT    NOT NULL,
    last_heartbeat_at  TEXT    NOT NULL,  -- the acquire, then each heartbeat (received_at)
    released_at        TEXT,              -- set when it released the account
    acquired_event_id  TEXT    NOT NULL,
    PRIMARY KEY (platform, account)
) WITHOUT ROWID;

-- Who holds each chat. A claim is held until released, expired (expires_at) or its session
-- has ended; whether it is still active is computed when read.
CREATE TABLE claims (
    chat          TEXT PRIMARY KEY,
    generation    INTEGER NOT NULL,       -- +1 at every grant and renewal
    session_id    TEXT    NOT NULL,       -- the holder, or the last holder
    state         TEXT    NOT NULL CHECK (state IN ('held', 'released')),
    ttl_seconds   INTEGER NOT NULL,
    granted_at    TEXT    NOT NULL,
    renewed_at    TEXT,
    expires_at    TEXT    NOT NULL,
    released_at   TEXT,
    outcome       TEXT,                   -- sent | interrupted | failed | released
    last_event_id TEXT    NOT NULL
) WITHOUT ROWID;

-- The action log: every claim event of a chat, pointing at the event that holds it.
CREATE TABLE claim_actions (
    sequence   INTEGER PRIMARY KEY,       -- the event's sequence
    chat       TEXT    NOT NULL,
    type       TEXT    NOT NULL,          -- claim_granted | claim_renewed | claim_refused | claim_released
    session_id TEXT
);
CREATE INDEX claim_actions_by_chat ON claim_actions (chat, sequence);

-- Catch-up gaps: at most one open or refused gap per account.
CREATE TABLE gaps (
    id              TEXT PRIMARY KEY,     -- 'gap-' || the opening event's id
    platform        TEXT    NOT NULL,
    account         TEXT    NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('open', 'closed', 'refused')),
    reason          TEXT    NOT NULL,
    from_position   TEXT,
    to_position     TEXT,
    refused_detail  TEXT,                 -- the latest refusal's detail
    resumed_by      TEXT,                 -- who resumed it last
    detail          TEXT,                 -- JSON history of refusals and resumes
    opened_at       TEXT    NOT NULL,
    closed_at       TEXT,
    refused_at      TEXT,
    resumed_at      TEXT,
    opened_event_id TEXT    NOT NULL,
    opened_sequence INTEGER NOT NULL
);
CREATE INDEX gaps_by_account ON gaps (platform, account, status);
CREATE INDEX gaps_unresolved ON gaps (platform, account, opened_sequence) WHERE status <> 'closed';
CREATE INDEX gaps_by_order ON gaps (opened_sequence);
