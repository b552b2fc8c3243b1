-- What pruning removed, so positions never restart: the log's head and each session's last
-- session_sequence survive the deletion of the rows they were derived from.
-- Applied once, in a transaction, when PRAGMA user_version < 2. Never edited after it lands.

CREATE TABLE pruned_sessions (
    session_id            TEXT PRIMARY KEY,
    last_session_sequence INTEGER NOT NULL      -- the highest session_sequence pruned
) WITHOUT ROWID;

-- The highest sequence pruned (0: nothing pruned yet).
INSERT INTO meta (key, value) VALUES ('pruned_through_sequence', '0');
