//! The `claims` and `claim_actions` projections: who holds each chat (seed 002, REQ-HOOKS-15),
//! and every claim event of a chat in order (the seed's action log, as a view of the log).
//! Whether a held claim is still active (not expired, its session not ended) is computed when
//! read.

use super::sessions::SessionState;
use super::view::View;
use crate::event::{StoredEvent, time};
use crate::states::states;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

states! {
    /// A claim's `state` as stored (whether it still counts is [`Claim::active`]).
    pub enum ClaimState {
        Held = "held",
        Released = "released",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub chat: String,
    pub generation: i64,
    pub session_id: String,
    /// As stored; see `active` for whether it still counts.
    pub state: ClaimState,
    pub ttl_seconds: i64,
    pub granted_at: String,
    pub renewed_at: Option<String>,
    pub expires_at: String,
    pub released_at: Option<String>,
    pub outcome: Option<String>,
    /// Held, not expired, and its session has not ended (at the time of the read).
    pub active: bool,
    /// The holder's session has ended (normalized `ended` or a `SessionEnd` hook).
    pub session_ended: bool,
}

impl Claim {
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        time::parse(&self.expires_at).is_none_or(|t| t <= now)
    }
}

const COLUMNS: &str = "c.chat, c.generation, c.session_id, c.state, c.ttl_seconds, c.granted_at,
     c.renewed_at, c.expires_at, c.released_at, c.outcome, s.state";

/// Reads a claim; `active` is judged at `now`.
fn row(now: DateTime<Utc>) -> impl Fn(&Row<'_>) -> rusqlite::Result<Claim> {
    move |r| {
        let mut claim = Claim {
            chat: r.get(0)?,
            generation: r.get(1)?,
            session_id: r.get(2)?,
            state: r.get(3)?,
            ttl_seconds: r.get(4)?,
            granted_at: r.get(5)?,
            renewed_at: r.get(6)?,
            expires_at: r.get(7)?,
            released_at: r.get(8)?,
            outcome: r.get(9)?,
            active: false,
            session_ended: r.get::<_, Option<SessionState>>(10)? == Some(SessionState::Ended),
        };
        claim.active =
            claim.state == ClaimState::Held && !claim.session_ended && !claim.is_expired(now);
        Ok(claim)
    }
}

pub fn get(conn: &Connection, chat: &str, now: DateTime<Utc>) -> rusqlite::Result<Option<Claim>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM claims c LEFT JOIN sessions s ON s.id = c.session_id
         WHERE c.chat = ?1"
    ))?
    .query_row([chat], row(now))
    .optional()
}

/// Claims by chat; only the active ones unless `all`.
pub fn list(
    conn: &Connection,
    all: bool,
    now: DateTime<Utc>,
    limit: u32,
) -> rusqlite::Result<Vec<Claim>> {
    let claims: Vec<Claim> = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM claims c LEFT JOIN sessions s ON s.id = c.session_id
             WHERE (?1 OR c.state = ?2) ORDER BY c.chat"
        ))?
        .query_map(params![all, ClaimState::Held], row(now))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(claims
        .into_iter()
        .filter(|c| all || c.active)
        .take(limit as usize)
        .collect())
}

/// The sequences of a chat's claim events, in order (the action log).
pub fn actions(
    conn: &Connection,
    chat: &str,
    after: i64,
    limit: u32,
) -> rusqlite::Result<Vec<i64>> {
    conn.prepare_cached(
        "SELECT sequence FROM claim_actions WHERE chat = ?1 AND sequence > ?2
         ORDER BY sequence LIMIT ?3",
    )?
    .query_map(params![chat, after, limit], |r| r.get(0))?
    .collect()
}

/// Applies a claim event (`claim_granted`, `claim_renewed`, `claim_refused`, `claim_released`).
pub fn apply(conn: &Connection, event: &StoredEvent, view: &View) -> rusqlite::Result<()> {
    let Some(chat) = view.text("chat") else {
        return Ok(());
    };
    let session = view.text("sessionId");
    let at = &event.received_at;
    match event.event_type.as_str() {
        "claim_granted" => {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO claims (chat, generation, session_id, state, ttl_seconds,
                     granted_at, renewed_at, expires_at, released_at, outcome, last_event_id)
                 VALUES (?1, ?2, ?3, ?8, ?4, ?5, NULL, ?6, NULL, NULL, ?7)",
            )?
            .execute(params![
                chat,
                view.int("generation").unwrap_or(0),
                session.unwrap_or(""),
                view.int("ttlSeconds").unwrap_or(0),
                at,
                view.text("expiresAt").unwrap_or(at),
                event.event_id,
                ClaimState::Held,
            ])?;
        }
        "claim_renewed" => {
            conn.prepare_cached(
                "UPDATE claims SET generation = ?2, ttl_seconds = ?3, renewed_at = ?4,
                     expires_at = ?5, last_event_id = ?6
                 WHERE chat = ?1 AND session_id = ?7",
            )?
            .execute(params![
                chat,
                view.int("generation").unwrap_or(0),
                view.int("ttlSeconds").unwrap_or(0),
                at,
                view.text("expiresAt").unwrap_or(at),
                event.event_id,
                session.unwrap_or(""),
            ])?;
        }
        "claim_released" => {
            conn.prepare_cached(
                "UPDATE claims SET state = ?6, released_at = ?2, outcome = ?3,
                     last_event_id = ?4
                 WHERE chat = ?1 AND session_id = ?5 AND state = ?7",
            )?
            .execute(params![
                chat,
                at,
                view.text("outcome"),
                event.event_id,
                session.unwrap_or(""),
                ClaimState::Released,
                ClaimState::Held,
            ])?;
        }
        "claim_refused" => {}
        _ => return Ok(()),
    }
    conn.prepare_cached(
        "INSERT INTO claim_actions (sequence, chat, type, session_id) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![event.sequence, chat, event.event_type, session])?;
    Ok(())
}
