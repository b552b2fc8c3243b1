-- Issue 41: less work a written row. A CHECK of the form `x IN ('a', 'b', 'c', ...)` (more
-- than two values) costs SQLite a temporary b-tree of the values for every row it checks: in a
-- CHECK, as in a trigger, SQLite does not keep the values of an IN list from one row to the
-- next (`EXPLAIN` of a tool use's upsert showed two `OpenEphemeral`s, one a side, each filled
-- with the eight statuses), about 5% of the writer's time on the hook path. The same check
-- written as comparisons joined by OR accepts and refuses exactly the same values and costs a
-- few comparisons. So the CHECKs of more than two values on the tables hook events write
-- (`tool_uses`, `heroes`, `missions`, `sessions`) and on `gaps` are written so.
--
-- SQLite cannot change a CHECK in place, and making these tables again would copy every row
-- of the largest ones. A change that keeps every stored row valid and does not change how
-- rows are stored may be made by editing the table's text in `sqlite_schema` (SQLite's own
-- procedure for changing CHECK constraints, "Making Other Kinds Of Table Schema Changes" in
-- its ALTER TABLE documentation): with `writable_schema` on, in this migration's transaction;
-- `writable_schema = RESET` then makes this connection read the schema again (a text that
-- no longer parses fails the migration there, and it is rolled back). The schema version
-- that tells other connections to read it again moves with the table made and dropped at the
-- end (SQL cannot write `PRAGMA schema_version` from a value it reads).
--
-- Never edited after it lands.

PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (status IN (''running'', ''completed'', ''failed'', ''interrupted'', ''requested'',
                                      ''reported'', ''denied'', ''open''))',
    'CHECK (status = ''running'' OR status = ''completed'' OR status = ''failed''
                           OR status = ''interrupted'' OR status = ''requested''
                           OR status = ''reported'' OR status = ''denied'' OR status = ''open'')')
WHERE type = 'table' AND name = 'tool_uses';
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (state IN (''idle'', ''active'', ''awaiting_input'', ''ended''))',
    'CHECK (state = ''idle'' OR state = ''active'' OR state = ''awaiting_input''
                                   OR state = ''ended'')')
WHERE type = 'table' AND name = 'heroes';
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (state IN (''active'', ''completed'', ''failed'', ''interrupted''))',
    'CHECK (state = ''active'' OR state = ''completed'' OR state = ''failed''
                             OR state = ''interrupted'')')
WHERE type = 'table' AND name = 'missions';
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (state IN (''active'', ''idle'', ''awaiting_input'', ''stuck'', ''ended''))',
    'CHECK (state = ''active'' OR state = ''idle'' OR state = ''awaiting_input''
                            OR state = ''stuck'' OR state = ''ended'')')
WHERE type = 'table' AND name = 'sessions';
UPDATE sqlite_schema SET sql = replace(replace(sql,
    'CHECK (status IN (''open'', ''closed'', ''refused''))',
    'CHECK (status = ''open'' OR status = ''closed'' OR status = ''refused'')'),
    'CHECK (cause IN (''request'', ''takeover'', ''first_owner''))',
    'CHECK (cause = ''request'' OR cause = ''takeover'' OR cause = ''first_owner'')')
WHERE type = 'table' AND name = 'gaps';
PRAGMA writable_schema = RESET;
CREATE TABLE checks_rewritten_0036 (done INTEGER);
DROP TABLE checks_rewritten_0036;
