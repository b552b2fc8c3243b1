-- Issue 26: the retention snapshot moves out of the log into a database file of its own
-- beside it (`<db>.snapshot`, src/store/snapshot/), made by these same migrations, so each
-- projection table is defined once (here, for the log and for the snapshot alike) instead of
-- once more as a `snapshot_<table>` twin in every migration that changes it.
--
-- Before this runs, hooklog has moved the twins' rows and `snapshot_through_sequence` into
-- the snapshot file and committed it (`store::snapshot::move_twins_out`, in the migrating
-- transaction); a crash before this transaction commits leaves the twins here, and the next
-- start makes the file again from them. In the snapshot file itself the twins it got from
-- migration 0006 were always empty.
-- Applied once, in a transaction, when PRAGMA user_version < 15. Never edited after it lands.

DROP TABLE snapshot_sessions;
DROP TABLE snapshot_heroes;
DROP TABLE snapshot_missions;
DROP TABLE snapshot_tool_uses;
DROP TABLE snapshot_hook_effects;
DROP TABLE snapshot_watcher_owners;
DROP TABLE snapshot_claims;
DROP TABLE snapshot_claim_actions;
DROP TABLE snapshot_gaps;
DROP TABLE snapshot_factory_work;
DROP TABLE snapshot_factory_dispatches;
DROP TABLE snapshot_alerts;
DROP TABLE snapshot_agent_changes;
DROP TABLE snapshot_accounts;
DROP TABLE snapshot_usage;
DROP TABLE snapshot_transcript_files;
