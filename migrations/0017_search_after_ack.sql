-- Issue 41: the search rows of an event are written after the commit that acknowledged it,
-- by the same writer, in batches of their own. `search_through` is how far they have got:
-- every event at or below it is indexed, none above it; on start the writer indexes the
-- events above it from the log. Until now every event was indexed in its own transaction, so
-- an existing database is indexed through its head.
--
-- Never edited after it lands.

INSERT OR IGNORE INTO meta (key, value)
SELECT 'search_through',
       CAST(MAX(COALESCE((SELECT MAX(sequence) FROM events), 0),
                COALESCE((SELECT CAST(value AS INTEGER) FROM meta
                          WHERE key = 'pruned_through_sequence'), 0)) AS TEXT);
