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
