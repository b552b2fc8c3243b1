//! The web view's login sessions: `POST /login` opens one and its id is the cookie's value;
//! `POST /logout` closes it. An id is 32 random bytes from the operating system, shown as 64
//! hex digits; it lasts [`LIFETIME`] from the login, and the table keeps at most [`MOST`]
//! (the oldest is dropped for a new one). Sessions live in memory only: a restart (with the
//! same token or another) logs every browser out, and the file never holds one.
//!
//! The table is keyed by the id's SHA-256, so how long a lookup takes says nothing about the
//! ids it holds.

use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a login lasts (the cookie's `Max-Age` says the same to the browser).
pub const LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);
/// The most sessions held at once; a login past it ends the oldest.
pub const MOST: usize = 1_000;

type Key = [u8; 32];

#[derive(Default)]
pub struct WebSessions {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    expiry: HashMap<Key, Instant>,
    /// Keys in the order they were opened: the oldest first.
    opened: VecDeque<Key>,
}

impl WebSessions {
    /// Opens a session at `now`: its id, for the cookie.
    pub fn open(&self, now: Instant) -> String {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random source");
        let id = crate::event::id::hex(&bytes);
        let mut table = self.lock();
        table.forget_expired(now);
        while table.opened.len() >= MOST {
            if let Some(oldest) = table.opened.pop_front() {
                table.expiry.remove(&oldest);
            }
        }
        let key = key(&id);
        table.expiry.insert(key, now + LIFETIME);
        table.opened.push_back(key);
        id
    }

    /// Whether `id` names a session open at `now`.
    pub fn holds(&self, id: &str, now: Instant) -> bool {
        self.lock()
            .expiry
            .get(&key(id))
            .is_some_and(|expiry| now < *expiry)
    }

    /// Ends the session `id` names, if it is open.
    pub fn close(&self, id: &str) {
        let key = key(id);
        let mut table = self.lock();
        if table.expiry.remove(&key).is_some() {
            table.opened.retain(|k| *k != key);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Table {
    /// Sessions expire in the order they were opened (one lifetime for all).
    fn forget_expired(&mut self, now: Instant) {
        while let Some(oldest) = self.opened.front() {
            if self.expiry.get(oldest).is_some_and(|expiry| now < *expiry) {
                break;
            }
            self.expiry.remove(oldest);
            self.opened.pop_front();
        }
    }
}

fn key(id: &str) -> Key {
    Sha256::digest(id.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_random_lasts_its_lifetime_and_ends_at_logout() {
        let sessions = WebSessions::default();
        let t0 = Instant::now();
        let (a, b) = (sessions.open(t0), sessions.open(t0));
        assert_eq!(a.len(), 64);
        assert_ne!(a, b, "each login its own id");
        assert!(sessions.holds(&a, t0 + LIFETIME - Duration::from_secs(1)));
        assert!(!sessions.holds(&a, t0 + LIFETIME), "expired");
        assert!(!sessions.holds("0".repeat(64).as_str(), t0));
        sessions.close(&a);
        assert!(!sessions.holds(&a, t0), "logged out");
        assert!(sessions.holds(&b, t0), "another login stays");
    }

    #[test]
    fn the_table_is_bounded_and_drops_the_oldest() {
        let sessions = WebSessions::default();
        let t0 = Instant::now();
        let first = sessions.open(t0);
        let ids: Vec<String> = (0..MOST).map(|_| sessions.open(t0)).collect();
        assert!(!sessions.holds(&first, t0), "the oldest made room");
        assert!(ids.iter().all(|id| sessions.holds(id, t0)));
        assert_eq!(sessions.lock().opened.len(), MOST);
        // Expired ones are forgotten at the next login.
        sessions.open(t0 + LIFETIME);
        assert_eq!(sessions.lock().expiry.len(), 1);
    }
}
