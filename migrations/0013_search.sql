-- Issue 31: full-text search over the log. Each event with text a person would search (its
-- prompt, tool name, input and output, error, message, ...; `projection::search` says which
-- fields) has one row in `search_text`, keyed by the event's sequence, and the FTS5 index
-- `search` is built over those rows (an external-content table: the text is stored once, in
-- `search_text`, and the index holds only the terms). Both are a projection of the log: the
-- writer fills them in the event's transaction, `hooklog rebuild` makes them again, retention
-- deletes an event's row with the event. The session, type, source and time to filter on are
-- the event's own: join `events` on `sequence = search.rowid`.
--
-- Applied once, in a transaction, when PRAGMA user_version < 11; the events already stored
-- are indexed in the same transaction. Never edited after it lands.

CREATE TABLE search_text (
    sequence INTEGER PRIMARY KEY,   -- the event's
    text     TEXT NOT NULL          -- its searchable fields, one per line, bounded
);

-- unicode61: words are runs of letters and digits (`totals.rs` is the two terms `totals`
-- and `rs`, found together by the phrase "totals.rs"), case and diacritics folded.
CREATE VIRTUAL TABLE search USING fts5(
    text,
    content = 'search_text',
    content_rowid = 'sequence',
    tokenize = 'unicode61 remove_diacritics 2'
);
