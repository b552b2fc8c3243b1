//! The database's tables: the embedded `migrations/*.sql`, in order. `store::migrate` applies
//! the ones a database has not seen yet (and replays the log into the projections they add);
//! a fresh database gets them all.

/// Every migration, in order, and whether it adds a projection that the events already stored
/// must be replayed into. A landed migration is never edited: add a new file instead.
pub const MIGRATIONS: &[(&str, &str, bool)] = &[
    (
        "0001_events.sql",
        include_str!("../migrations/0001_events.sql"),
        false,
    ),
    (
        "0002_retention.sql",
        include_str!("../migrations/0002_retention.sql"),
        false,
    ),
    (
        "0003_agents.sql",
        include_str!("../migrations/0003_agents.sql"),
        true,
    ),
    (
        "0004_coordination.sql",
        include_str!("../migrations/0004_coordination.sql"),
        true,
    ),
    (
        "0005_factory.sql",
        include_str!("../migrations/0005_factory.sql"),
        true,
    ),
    (
        "0006_snapshot.sql",
        include_str!("../migrations/0006_snapshot.sql"),
        false,
    ),
    (
        "0007_catalogue.sql",
        include_str!("../migrations/0007_catalogue.sql"),
        false,
    ),
    (
        "0008_response_events.sql",
        include_str!("../migrations/0008_response_events.sql"),
        false,
    ),
    (
        "0009_live_changes.sql",
        include_str!("../migrations/0009_live_changes.sql"),
        true,
    ),
    (
        "0010_hot_rows.sql",
        include_str!("../migrations/0010_hot_rows.sql"),
        false,
    ),
    (
        "0011_quiet_rows.sql",
        include_str!("../migrations/0011_quiet_rows.sql"),
        false,
    ),
    (
        "0012_origin.sql",
        include_str!("../migrations/0012_origin.sql"),
        false,
    ),
    (
        "0013_search.sql",
        include_str!("../migrations/0013_search.sql"),
        false,
    ),
    (
        "0014_usage.sql",
        include_str!("../migrations/0014_usage.sql"),
        true,
    ),
    (
        "0015_snapshot_file.sql",
        include_str!("../migrations/0015_snapshot_file.sql"),
        false,
    ),
    (
        "0016_permissions.sql",
        include_str!("../migrations/0016_permissions.sql"),
        true,
    ),
    (
        "0017_search_after_ack.sql",
        include_str!("../migrations/0017_search_after_ack.sql"),
        false,
    ),
    (
        "0018_views.sql",
        include_str!("../migrations/0018_views.sql"),
        false,
    ),
    (
        "0019_slim_changes.sql",
        include_str!("../migrations/0019_slim_changes.sql"),
        false,
    ),
    (
        "0020_newest_first.sql",
        include_str!("../migrations/0020_newest_first.sql"),
        false,
    ),
    (
        "0021_live_rows.sql",
        include_str!("../migrations/0021_live_rows.sql"),
        false,
    ),
    (
        "0022_coded_keys.sql",
        include_str!("../migrations/0022_coded_keys.sql"),
        false,
    ),
    (
        "0023_open_rows.sql",
        include_str!("../migrations/0023_open_rows.sql"),
        false,
    ),
    (
        "0024_change_rows_said.sql",
        include_str!("../migrations/0024_change_rows_said.sql"),
        false,
    ),
];

/// Creates every table on an empty database, as `store::migrate` would (for tests of the
/// modules below `store`, which open a bare connection).
#[cfg(test)]
pub fn create(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    for (_name, sql, _) in MIGRATIONS {
        conn.execute_batch(sql)?;
    }
    conn.pragma_update(None, "user_version", MIGRATIONS.len() as i64)
}
