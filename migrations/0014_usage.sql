-- Issue 30: token usage read from Claude Code and Codex transcripts (`ingest::transcript`).
-- `usage` has one row per model call, keyed by its message key (Claude Code: `message.id` and
-- `requestId`, or the record's uuid when it has no request id; Codex: the session and its
-- running token total), so the several lines of one streamed message, and a repeated Codex
-- token count, count once: each count is the largest any of them gave (the final one, as
-- the counts only grow while a message streams). Tokens only: cost is computed when read,
-- from the dated price table (`projection::prices`), so a corrected price needs no rebuild.
--
-- `transcript_files` is how far the server has read each transcript a hook named (`serve`
-- follows them after `Stop`, `SubagentStop`, `PreCompact` and `SessionEnd`): the projection of
-- the `TranscriptRead` event appended with the records each read found, in the same
-- transaction, so a restart resumes where the last committed read ended.
--
-- Applied once, in a transaction; the events already stored are replayed into it. Never
-- edited after it lands.

CREATE TABLE usage (
    message_key           TEXT PRIMARY KEY,
    session_id            TEXT    NOT NULL,
    cli                   TEXT    NOT NULL,   -- claude-code, codex
    model                 TEXT    NOT NULL,   -- '' when the record named none
    project               TEXT,               -- the record's working directory
    origin                TEXT    NOT NULL,   -- the hooklog that first stored the event
    agent_id              TEXT,               -- the subagent's, NULL on the main thread
    turn                  TEXT,               -- the event id of the prompt that opened its turn
    event_time            TEXT    NOT NULL,   -- of the first record counted under the key
    input_tokens          INTEGER NOT NULL,   -- not read from the cache
    output_tokens         INTEGER NOT NULL,   -- reasoning included
    cache_write_5m_tokens INTEGER NOT NULL,
    cache_write_1h_tokens INTEGER NOT NULL,
    cache_read_tokens     INTEGER NOT NULL,
    reasoning_tokens      INTEGER NOT NULL,   -- the part of the output spent reasoning
    records               INTEGER NOT NULL    -- transcript lines counted under this key
) WITHOUT ROWID;
CREATE INDEX usage_by_session ON usage (session_id, event_time);
CREATE INDEX usage_by_time ON usage (event_time);

CREATE TABLE snapshot_usage (
    message_key           TEXT PRIMARY KEY,
    session_id            TEXT    NOT NULL,
    cli                   TEXT    NOT NULL,
    model                 TEXT    NOT NULL,
    project               TEXT,
    origin                TEXT    NOT NULL,
    agent_id              TEXT,
    turn                  TEXT,
    event_time            TEXT    NOT NULL,
    input_tokens          INTEGER NOT NULL,
    output_tokens         INTEGER NOT NULL,
    cache_write_5m_tokens INTEGER NOT NULL,
    cache_write_1h_tokens INTEGER NOT NULL,
    cache_read_tokens     INTEGER NOT NULL,
    reasoning_tokens      INTEGER NOT NULL,
    records               INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX snapshot_usage_by_session ON snapshot_usage (session_id, event_time);
CREATE INDEX snapshot_usage_by_time ON snapshot_usage (event_time);

CREATE TABLE transcript_files (
    path           TEXT PRIMARY KEY,
    session_id     TEXT    NOT NULL,   -- the session whose hook named it
    read_to        INTEGER NOT NULL,   -- bytes read: the offset the next read starts at
    turn           TEXT,               -- the last main-thread prompt read, for the next read
    last_sequence  INTEGER NOT NULL,   -- the TranscriptRead event that moved it last
    last_read_at   TEXT    NOT NULL    -- its time
) WITHOUT ROWID;

CREATE TABLE snapshot_transcript_files (
    path           TEXT PRIMARY KEY,
    session_id     TEXT    NOT NULL,
    read_to        INTEGER NOT NULL,
    turn           TEXT,
    last_sequence  INTEGER NOT NULL,
    last_read_at   TEXT    NOT NULL
) WITHOUT ROWID;
