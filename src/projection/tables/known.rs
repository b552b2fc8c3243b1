//! [`Known`]: rows SQL has that the writer reads for nearly every hook event, held as SQL has
//! them.

use super::Result;
use crate::projection::changes;
use crate::projection::heroes::{self, Hero};
use foldhash::HashMap;
use rusqlite::Connection;

/// Rows SQL has that the writer reads for nearly every hook event, held so that the next event
/// does not read them again: each session's hero, as it was last read or saved, and the keys
/// change rows are saved with ([`changes::Keys`]). Written through: every save goes to SQL at
/// once, so what is held is what SQL has. Kept on the same terms as the writer's
/// [`Calls`](super::Calls): let go of when a request is undone, a batch fails, or another
/// connection commits.
#[derive(Default)]
pub struct Known {
    /// By session id.
    heroes: HashMap<String, Hero>,
    keys: changes::Keys,
}

impl Known {
    /// The session's hero, read from `conn` the first time.
    pub(super) fn hero(&mut self, conn: &Connection, session: &str) -> Result<Option<Hero>> {
        if let Some(hero) = self.heroes.get(session) {
            return Ok(Some(hero.clone()));
        }
        let hero = heroes::by_session(conn, session)?;
        if let Some(hero) = &hero {
            self.heroes.insert(session.to_string(), hero.clone());
        }
        Ok(hero)
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
