//! The `heroes` projection: one hero per agent session (seed 000's model). A hero's id is a
//! UUIDv5 of its session id, so the same session gets the same hero in every database and
//! after every rebuild, whichever of its events arrives first.
//!
//! A hero's row says what it is (its cli, cwd, tty, model, faction) and where it came from;
//! what changes as its session goes on, its [`Progress`], is kept in its session's row
//! (`sessions.hero_state`, `hero_mission`, `hero_mission_count`: migration 37), which is
//! written for every event of the session anyway, so a hook event that moves its hero along
//! writes no page of `heroes`.

use crate::states::states;
use rusqlite::{CachedStatement, Connection, OptionalExtension, Row, params};
use serde::Serialize;
use std::sync::LazyLock;
use uuid::Uuid;

/// The namespace hero ids are made in (fixed forever: changing it renames every hero).
const HERO_NAMESPACE: Uuid = Uuid::from_u128(0x48599b69_ff2d_4400_b748_96f4107cd8c9);

/// The hero id of a session.
pub fn hero_id(session_id: &str) -> String {
    format!(
        "hero-{}",
        Uuid::new_v5(&HERO_NAMESPACE, session_id.as_bytes())
    )
}

states! {
    /// A hero's `state`: its session's, as hook events set it (a hook never says `stuck`).
    pub enum HeroState {
        Idle = "idle",
        Active = "active",
        AwaitingInput = "awaiting_input",
        Ended = "ended",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hero {
    pub id: String,
    pub session_id: String,
    pub cli: String,
    pub cwd: String,
    pub tty: Option<String>,
    pub model: Option<String>,
    pub faction: Option<String>,
    pub state: HeroState,
    pub active_mission_id: Option<String>,
    /// The sequence that opened `active_mission_id` (its key, as its session's row keeps it).
    #[serde(skip)]
    pub active_mission_sequence: Option<i64>,
    pub mission_count: i64,
    pub spawned_event_id: String,
    pub spawned_at: String,
}

/// What of a hero changes as its session goes on: kept in its session's row, not in `heroes`.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub state: HeroState,
    pub active_mission_id: Option<String>,
    /// The sequence that opened `active_mission_id`: what the session's row stores.
    pub active_mission_sequence: Option<i64>,
    pub mission_count: i64,
}

impl Hero {
    pub fn progress(&self) -> Progress {
        Progress {
            state: self.state,
            active_mission_id: self.active_mission_id.clone(),
            active_mission_sequence: self.active_mission_sequence,
            mission_count: self.mission_count,
        }
    }

    /// The hero with `progress` (its session row's, which is newer than what SQL has while
    /// the writer holds that row).
    pub fn with_progress(mut self, progress: &Progress) -> Hero {
        self.state = progress.state;
        self.active_mission_id = progress.active_mission_id.clone();
        self.active_mission_sequence = progress.active_mission_sequence;
        self.mission_count = progress.mission_count;
        self
    }

    /// Whether `other` says the same of the hero as its `heroes` row does.
    pub fn said_as(&self, other: &Hero) -> bool {
        self.id == other.id
            && self.session_id == other.session_id
            && self.cli == other.cli
            && self.cwd == other.cwd
            && self.tty == other.tty
            && self.model == other.model
            && self.faction == other.faction
            && self.spawned_event_id == other.spawned_event_id
            && self.spawned_at == other.spawned_at
    }
}

/// A hero as the routes show it: its row, and its session's latest event (every event of a
/// session is its hero's activity, so the hero's row is not rewritten for each).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeroView {
    #[serde(flatten)]
    pub hero: Hero,
    /// The event time of its session's latest event.
    pub updated_at: String,
    /// The sequence of its session's latest event.
    pub last_sequence: i64,
}

/// The columns of `heroes`.
const COLUMNS: &str = "id, session_id, cli, cwd, tty, model, faction, spawned_event_id,
     spawned_at";

/// A [`Hero`] from `heroes h JOIN sessions s`: its row and its progress (the mission in
/// progress is kept by its key, the sequence that opened it).
const HERO: &str = "SELECT h.id, h.session_id, h.cli, h.cwd, h.tty, h.model, h.faction,
     s.hero_state, (SELECT id FROM missions WHERE opened_sequence = s.hero_mission),
     s.hero_mission_count, h.spawned_event_id, h.spawned_at, s.hero_mission
     FROM heroes h JOIN sessions s ON s.id = h.session_id";

/// [`HERO`], then its session's latest event.
const VIEW: &str = "SELECT h.id, h.session_id, h.cli, h.cwd, h.tty, h.model, h.faction,
     s.hero_state, (SELECT id FROM missions WHERE opened_sequence = s.hero_mission),
     s.hero_mission_count, h.spawned_event_id, h.spawned_at, s.hero_mission,
     s.last_event_time, s.last_sequence
     FROM heroes h JOIN sessions s ON s.id = h.session_id";

/// [`VIEW`] walking the sessions by activity, newest first, each joined to its hero: a page
/// stops once it is full. (Left to itself, with a filter on the hero's state, the planner
/// read every hero and sorted them.)
const VIEW_BY_ACTIVITY: &str = "SELECT h.id, h.session_id, h.cli, h.cwd, h.tty, h.model,
     h.faction, s.hero_state, (SELECT id FROM missions WHERE opened_sequence = s.hero_mission),
     s.hero_mission_count, h.spawned_event_id, h.spawned_at, s.hero_mission,
     s.last_event_time, s.last_sequence
     FROM sessions s INDEXED BY sessions_by_activity CROSS JOIN heroes h ON h.session_id = s.id";

/// [`VIEW`] from the sessions whose hero is in one live state (`state`: a parameter or a
/// literal), newest first, through `sessions_heroes_live`: the agents live now, and any killed
/// without a `SessionEnd` (those stay live for good), keyed by the hero's state (kept in its
/// session's row, `sessions.hero_state`) and its session's activity, so a page reads as many
/// as it shows.
fn view_live(state: &str) -> String {
    format!(
        "SELECT h.id, h.session_id, h.cli, h.cwd, h.tty, h.model, h.faction,
         s.hero_state, (SELECT id FROM missions WHERE opened_sequence = s.hero_mission),
         s.hero_mission_count, h.spawned_event_id, h.spawned_at, s.hero_mission,
         s.last_event_time, s.last_sequence
         FROM sessions s INDEXED BY sessions_heroes_live CROSS JOIN heroes h ON h.session_id = s.id
         WHERE s.hero_state = {state} AND s.hero_state <> 'ended'"
    )
}

fn row(r: &Row<'_>) -> rusqlite::Result<Hero> {
    let progress = Progress {
        state: r.get(7)?,
        active_mission_id: r.get(8)?,
        active_mission_sequence: r.get(12)?,
        mission_count: r.get(9)?,
    };
    said(r, progress)
}

/// A hero from what its row says (columns 0-6, 10 and 11 of [`HERO`]'s) and `progress`.
fn said(r: &Row<'_>, progress: Progress) -> rusqlite::Result<Hero> {
    Ok(Hero {
        id: r.get(0)?,
        session_id: r.get(1)?,
        cli: r.get(2)?,
        cwd: r.get(3)?,
        tty: r.get(4)?,
        model: r.get(5)?,
        faction: r.get(6)?,
        state: progress.state,
        active_mission_id: progress.active_mission_id,
        active_mission_sequence: progress.active_mission_sequence,
        mission_count: progress.mission_count,
        spawned_event_id: r.get(10)?,
        spawned_at: r.get(11)?,
    })
}

fn view(r: &Row<'_>) -> rusqlite::Result<HeroView> {
    Ok(HeroView {
        hero: row(r)?,
        updated_at: r.get(13)?,
        last_sequence: r.get(14)?,
    })
}

/// The hero of a session, as the projection reads it (its progress as SQL has it).
pub fn by_session(conn: &Connection, session_id: &str) -> rusqlite::Result<Option<Hero>> {
    conn.prepare_cached(&format!("{HERO} WHERE h.id = ?1"))?
        .query_row([hero_id(session_id)], row)
        .optional()
}

/// The hero of a session with `progress` (its session row's), reading its row in `heroes`
/// alone: for the writer, which holds session rows it has not written yet.
pub fn with_progress_of(
    conn: &Connection,
    session_id: &str,
    progress: &Progress,
) -> rusqlite::Result<Option<Hero>> {
    conn.prepare_cached(
        "SELECT id, session_id, cli, cwd, tty, model, faction, NULL, NULL, NULL,
             spawned_event_id, spawned_at
         FROM heroes WHERE id = ?1",
    )?
    .query_row([hero_id(session_id)], |r| said(r, progress.clone()))
    .optional()
}

pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<HeroView>> {
    conn.prepare_cached(&format!("{VIEW} WHERE h.id = ?1"))?
        .query_row([id], view)
        .optional()
}

/// Heroes by most recent activity, optionally in one state: a live one's from
/// `sessions_heroes_live`, the ended ones by walking the sessions by activity (most heroes have
/// ended).
pub fn list(
    conn: &Connection,
    state: Option<HeroState>,
    limit: u32,
) -> rusqlite::Result<Vec<HeroView>> {
    conn.prepare_cached(&list_sql(state))?
        .query_map(params![state, limit], view)?
        .collect()
}

/// The statement [`list`] runs for `state`.
fn list_sql(state: Option<HeroState>) -> String {
    match state {
        None => {
            format!("{VIEW_BY_ACTIVITY} WHERE ?1 IS NULL ORDER BY s.last_sequence DESC LIMIT ?2")
        }
        Some(HeroState::Ended) => {
            format!(
                "{VIEW_BY_ACTIVITY} WHERE s.hero_state = ?1 ORDER BY s.last_sequence DESC LIMIT ?2"
            )
        }
        Some(_) => format!("{} ORDER BY s.last_sequence DESC LIMIT ?2", view_live("?1")),
    }
}

/// The heroes not ended, by most recent activity: the newest `limit` of each live state,
/// merged, so it reads a page's worth a state however many agents were killed.
pub fn live(conn: &Connection, limit: u32) -> rusqlite::Result<Vec<HeroView>> {
    conn.prepare_cached(&LIVE_SQL)?
        .query_map(params![limit], view)?
        .collect()
}

/// The statement [`live`] runs.
static LIVE_SQL: LazyLock<String> = LazyLock::new(|| {
    let each: Vec<String> = HeroState::ALL
        .iter()
        .filter(|state| **state != HeroState::Ended)
        .map(|state| {
            format!(
                "SELECT * FROM ({} ORDER BY s.last_sequence DESC LIMIT ?1)",
                view_live(&format!("'{}'", state.as_str()))
            )
        })
        .collect();
    format!(
        "SELECT * FROM ({}) ORDER BY last_sequence DESC LIMIT ?1",
        each.join(" UNION ALL ")
    )
});

/// The statement [`save_said`] runs, prepared once by [`saving`] to write many rows: a new
/// hero's row, or what changed in a stored one (nothing is written when nothing did).
static SAVE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO heroes ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (id) DO UPDATE SET cli = ?3, cwd = ?4, tty = ?5, model = ?6, faction = ?7
         WHERE cli IS NOT ?3 OR cwd IS NOT ?4 OR tty IS NOT ?5 OR model IS NOT ?6
            OR faction IS NOT ?7"
    )
});

/// The prepared statement [`save_said_with`] runs.
pub fn saving(conn: &Connection) -> rusqlite::Result<CachedStatement<'_>> {
    conn.prepare_cached(&SAVE)
}

/// Writes the hero: its row in `heroes`, and its progress in its session's row, which must
/// be stored (a hero is made by an event of its session, whose row comes first).
pub fn save(conn: &Connection, hero: &Hero) -> rusqlite::Result<()> {
    save_said_with(&mut saving(conn)?, hero)?;
    save_progress(conn, &hero.session_id, &hero.progress())
}

/// Writes the hero's row in `heroes` alone, with a statement from [`saving`].
pub fn save_said_with(statement: &mut CachedStatement<'_>, hero: &Hero) -> rusqlite::Result<()> {
    statement.execute(params![
        hero.id,
        hero.session_id,
        hero.cli,
        hero.cwd,
        hero.tty,
        hero.model,
        hero.faction,
        hero.spawned_event_id,
        hero.spawned_at,
    ])?;
    Ok(())
}

/// Writes a hero's progress in its session's stored row.
pub fn save_progress(
    conn: &Connection,
    session: &str,
    progress: &Progress,
) -> rusqlite::Result<()> {
    let changed = conn
        .prepare_cached(
            "UPDATE sessions SET hero_state = ?2, hero_mission = ?3, hero_mission_count = ?4
             WHERE id = ?1",
        )?
        .execute(params![
            session,
            progress.state,
            progress.active_mission_sequence,
            progress.mission_count
        ])?;
    match changed {
        1 => Ok(()),
        // No session row: a hero is only made after its session's, so a bug, never data.
        n => Err(rusqlite::Error::StatementChangedRows(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hero_ids_are_stable_and_distinct_per_session() {
        assert_eq!(hero_id("s1"), hero_id("s1"));
        assert_ne!(hero_id("s1"), hero_id("s2"));
        // Fixed forever: the same session must name the same hero in every release (this is
        // RFC 4122's UUIDv5 of "s1" in the namespace, as Python's uuid.uuid5 computes it).
        assert_eq!(hero_id("s1"), "hero-2447791c-2a1b-5a88-8ee3-2ad24ec089f4");
    }

    /// A hero's progress is kept in its session's row, written with the hero; the hero
    /// reads back whole; the live heroes come newest first across states.
    #[test]
    fn a_heros_progress_is_its_sessions_and_live_heroes_merge_by_activity() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let session = |id: &str, last: i64| {
            conn.execute(
                "INSERT INTO sessions (id, source, state, first_sequence, last_sequence,
                     event_count, last_event_time)
                 VALUES (?1, 'hook', 'active', 1, ?2, 1, 't')",
                params![id, last],
            )
            .unwrap();
        };
        // Mission n of session s opened at sequence 10 n.
        let mission = |session: &str, n: i64| {
            conn.execute(
                "INSERT INTO missions (id, session_id, kind, state, opened_event_id, started_at,
                                       opened_sequence)
                 VALUES (?1, ?2, 'prompt', 'active', 'e', 't', ?3)",
                params![format!("mission-{session}{n}"), session, 10 * n],
            )
            .unwrap();
        };
        let hero = |session: &str, state: HeroState, count: i64| {
            let hero = Hero {
                id: hero_id(session),
                session_id: session.into(),
                cli: "claude-code".into(),
                cwd: "/".into(),
                tty: None,
                model: None,
                faction: None,
                state,
                active_mission_id: (count > 0).then(|| format!("mission-{session}{count}")),
                active_mission_sequence: (count > 0).then_some(10 * count),
                mission_count: count,
                spawned_event_id: format!("e-{session}"),
                spawned_at: "t".into(),
            };
            save(&conn, &hero).unwrap();
            hero
        };
        let carried = |session: &str| -> (Option<String>, Option<i64>, Option<i64>) {
            conn.query_row(
                "SELECT hero_state, hero_mission, hero_mission_count FROM sessions
                 WHERE id = ?1",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
        };
        session("a", 3);
        let a = hero("a", HeroState::Idle, 0);
        session("b", 5);
        mission("b", 1);
        let b = hero("b", HeroState::Active, 1);
        assert_eq!(carried("a"), (Some("idle".into()), None, Some(0)));
        assert_eq!(carried("b"), (Some("active".into()), Some(10), Some(1)));
        assert_eq!(by_session(&conn, "a").unwrap(), Some(a));
        // The mission in progress is kept by its key and read back by its id.
        assert_eq!(by_session(&conn, "b").unwrap(), Some(b));
        // No hero, no progress.
        session("c", 7);
        assert_eq!(carried("c"), (None, None, None));
        assert_eq!(by_session(&conn, "c").unwrap(), None);
        // A save of the same hero moves its progress and leaves its row alone when it says
        // nothing new.
        mission("a", 2);
        let before = conn.total_changes();
        let a = hero("a", HeroState::AwaitingInput, 2);
        assert_eq!(conn.total_changes() - before, 1, "the session's row alone");
        assert_eq!(get(&conn, &a.id).unwrap().unwrap().hero, a);
        // A hero is made after its session's row: without one, saving it is an error.
        let orphan = Hero {
            session_id: "nowhere".into(),
            id: hero_id("nowhere"),
            ..a.clone()
        };
        assert!(save(&conn, &orphan).is_err());
        session("d", 9);
        hero("d", HeroState::Ended, 0);
        // Live: newest first over the states, the ended one left out; a limit cuts the merge.
        let ids = |views: Vec<HeroView>| -> Vec<String> {
            views.into_iter().map(|v| v.hero.session_id).collect()
        };
        assert_eq!(ids(live(&conn, 10).unwrap()), ["b", "a"]);
        assert_eq!(ids(live(&conn, 1).unwrap()), ["b"]);
        assert_eq!(
            ids(list(&conn, Some(HeroState::AwaitingInput), 10).unwrap()),
            ["a"]
        );
    }

    /// The statement `list` runs for `state`, and its plan, one step a line.
    fn plan(conn: &Connection, state: Option<HeroState>) -> String {
        super::super::filter::plan_of(conn, &list_sql(state), params![state, 10])
    }

    /// A live state reads that state's newest heroes alone; no state and `ended` walk the
    /// sessions by activity without sorting them, so a page stops once it is full.
    #[test]
    fn each_list_reads_an_index_in_its_order_or_the_live_rows() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        for state in [None, Some(HeroState::Ended)] {
            let plan = plan(&conn, state);
            assert!(plan.contains("sessions_by_activity"), "{state:?}: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{state:?}: {plan}");
        }
        for state in [HeroState::Idle, HeroState::Active, HeroState::AwaitingInput] {
            let plan = plan(&conn, Some(state));
            assert!(
                plan.contains("sessions_heroes_live (hero_state=?)"),
                "{state:?}: {plan}"
            );
            assert!(!plan.contains("TEMP B-TREE"), "{state:?}: {plan}");
        }
        // Every live hero: each state's newest, merged (only the merge sorts).
        let plan = super::super::filter::plan_of(&conn, &LIVE_SQL, params![10]);
        assert_eq!(
            plan.matches("sessions_heroes_live (hero_state=?)").count(),
            3,
            "{plan}"
        );
        assert!(list(&conn, Some(HeroState::Active), 10).unwrap().is_empty());
        assert!(live(&conn, 10).unwrap().is_empty());
    }
}
