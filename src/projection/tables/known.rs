//! [`Known`]: rows SQL has that the writer reads for nearly every hook event, held as SQL has
//! them.

use super::Result;
use crate::projection::changes;
use crate::projection::heroes::{self, Hero, Progress};
use foldhash::HashMap;
use rusqlite::Connection;

/// Rows SQL has that the writer reads for nearly every hook event, held so that the next event
/// does not read them again: each session's hero, as it was last read or saved, and the keys
/// change rows are saved with ([`changes::Keys`]). Written through: every save goes to SQL at
/// once, so what is held is what SQL has (a hero's progress is its session row's, which the
/// writer holds in its [`SessionRows`](super::SessionRows): a hero is read with it). Kept on
/// the same terms as the writer's
/// [`Calls`](super::Calls): let go of when a request is undone, a batch fails, or another
/// connection commits.
#[derive(Default)]
pub struct Known {
    /// By session id.
    heroes: HashMap<String, Hero>,
    keys: changes::Keys,
}

impl Known {
    /// The session's hero with `progress` (its session row's), its row read from `conn` the
    /// first time.
    pub(super) fn hero(
        &mut self,
        conn: &Connection,
        session: &str,
        progress: &Progress,
    ) -> Result<Option<Hero>> {
        if let Some(hero) = self.heroes.get(session) {
            return Ok(Some(hero.clone().with_progress(progress)));
        }
        let hero = heroes::with_progress_of(conn, session, progress)?;
        if let Some(hero) = &hero {
            self.heroes.insert(session.to_string(), hero.clone());
        }
        Ok(hero)
    }

    /// Whether the hero held for `hero`'s session says what `hero` says (its row in SQL is
    /// then as it should be).
    pub(super) fn holds_said(&self, hero: &Hero) -> bool {
        self.heroes
            .get(&hero.session_id)
            .is_some_and(|held| held.said_as(hero))
    }

    /// `hero` was saved.
    pub(super) fn saved_hero(&mut self, hero: Hero) {
        self.heroes.insert(hero.session_id.clone(), hero);
    }

    pub(super) fn keys(&mut self) -> &mut changes::Keys {
        &mut self.keys
    }

    /// The hero held for a session.
    #[cfg(test)]
    pub fn held_hero(&self, session: &str) -> Option<&Hero> {
        self.heroes.get(session)
    }

    /// The change shapes held, with their ids.
    #[cfg(test)]
    pub fn held_shapes(&self) -> Vec<(String, i64)> {
        self.keys.held_shapes()
    }

    /// How many heroes are held.
    pub fn held(&self) -> usize {
        self.heroes.len()
    }

    pub fn clear(&mut self) {
        self.heroes.clear();
        self.keys.clear();
    }
}
