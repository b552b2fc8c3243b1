//! The `watcher_owners` projection: which watcher process owns each platform account (seed
//! 002, REQ-HOOKS-13/14). Rows change only through the writer's owner events; whether a held
//! owner is `live` or `hung` depends on how long ago its last heartbeat was, so it is computed
//! when read, against the reader's clock.

use super::alerts;
use super::view::View;
use crate::event::{StoredEvent, time};
use crate::states::states;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::json;

pub const WATCHER_ALREADY_RUNNING: &str = "watcherAlreadyRunning";
pub const HUNG_OWNER: &str = "hungOwner";

states! {
    /// An owner's `status` at the time of a read (computed, never stored).
    pub enum OwnerStatus {
        Live = "live",
        /// No heartbeat for longer than the hung limit.
        Hung = "hung",
        Released = "released",
    }
}

/// An owner as stored. The relay token's hash stays in the table: it is never sent.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerRow {
    pub platform: String,
    pub account: String,
    pub generation: i64,
    pub pid: i64,
    pub hostname: String,
    pub relay_port: Option<i64>,
    pub relay_token_sha256: Option<String>,
    pub attached: i64,
    pub started_at: String,
    pub last_heartbeat_at: String,
    pub released_at: Option<String>,
    /// The platform's own last positions its latest heartbeat gave (a JSON object).
    pub positions: Option<String>,
}

/// An owner as the API shows it, with its status at `now`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub platform: String,
    pub account: String,
    pub generation: i64,
    pub status: OwnerStatus,
    pub pid: i64,
    pub hostname: String,
    pub relay_port: Option<i64>,
    pub has_relay_token: bool,
    pub attached: i64,
    pub started_at: String,
    pub last_heartbeat_at: String,
    pub released_at: Option<String>,
    /// The platform's own last positions (`{"dm:42": "1234", ...}`), as its latest heartbeat
    /// that gave any said; `null` until then.
    pub positions: Option<serde_json::Value>,
}

impl OwnerRow {
    /// Whether it still holds the account at `now`: not released and heard from recently.
    pub fn is_live(&self, now: DateTime<Utc>, hung_after: std::time::Duration) -> bool {
        self.released_at.is_none() && !self.is_silent(now, hung_after)
    }

    fn is_silent(&self, now: DateTime<Utc>, hung_after: std::time::Duration) -> bool {
        let limit = chrono::Duration::from_std(hung_after).unwrap_or(chrono::Duration::MAX);
        time::parse(&self.last_heartbeat_at).is_none_or(|last| now - last > limit)
    }

    pub fn view(&self, now: DateTime<Utc>, hung_after: std::time::Duration) -> Owner {
        let status = match (&self.released_at, self.is_silent(now, hung_after)) {
            (Some(_), _) => OwnerStatus::Released,
            (None, true) => OwnerStatus::Hung,
            (None, false) => OwnerStatus::Live,
        };
        Owner {
            platform: self.platform.clone(),
            account: self.account.clone(),
            generation: self.generation,
            status,
            pid: self.pid,
            hostname: self.hostname.clone(),
            relay_port: self.relay_port,
            has_relay_token: self.relay_token_sha256.is_some(),
            attached: self.attached,
            started_at: self.started_at.clone(),
            last_heartbeat_at: self.last_heartbeat_at.clone(),
            released_at: self.released_at.clone(),
            positions: self
                .positions
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok()),
        }
    }
}

const COLUMNS: &str = "platform, account, generation, pid, hostname, relay_port,
     relay_token_sha256, attached, started_at, last_heartbeat_at, released_at, positions";

fn row(r: &Row<'_>) -> rusqlite::Result<OwnerRow> {
    Ok(OwnerRow {
        platform: r.get(0)?,
        account: r.get(1)?,
        generation: r.get(2)?,
        pid: r.get(3)?,
        hostname: r.get(4)?,
        relay_port: r.get(5)?,
        relay_token_sha256: r.get(6)?,
        attached: r.get(7)?,
        started_at: r.get(8)?,
        last_heartbeat_at: r.get(9)?,
        released_at: r.get(10)?,
        positions: r.get(11)?,
    })
}

pub fn get(conn: &Connection, platform: &str, account: &str) -> rusqlite::Result<Option<OwnerRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM watcher_owners WHERE platform = ?1 AND account = ?2"
    ))?
    .query_row([platform, account], row)
    .optional()
}

pub fn list(conn: &Connection, platform: Option<&str>) -> rusqlite::Result<Vec<OwnerRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM watcher_owners WHERE (?1 IS NULL OR platform = ?1)
         ORDER BY platform, account"
    ))?
    .query_map(params![platform], row)?
    .collect()
}

/// Applies an owner event (`owner_acquired`, `owner_heartbeat`, `owner_released`,
/// `owner_hung`, `owner_refused`).
pub fn apply(conn: &Connection, event: &StoredEvent, view: &View) -> rusqlite::Result<()> {
    let (Some(platform), Some(account)) = (view.text("platform"), view.text("account")) else {
        return Ok(());
    };
    let generation = view.int("generation").unwrap_or(0);
    let at = &event.received_at;
    match event.event_type.as_str() {
        "owner_acquired" => {
            conn.prepare_cached(&format!(
                "INSERT OR REPLACE INTO watcher_owners ({COLUMNS}, acquired_event_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?8, NULL, NULL, ?9)"
            ))?
            .execute(params![
                platform,
                account,
                generation,
                view.int("pid").unwrap_or(0),
                view.text("hostname").unwrap_or(""),
                view.int("relayPort"),
                view.text("relayTokenSha256"),
                at,
                event.event_id,
            ])?;
        }
        "owner_heartbeat" => {
            conn.prepare_cached("UPDATE watcher_owners SET last_heartbeat_at = ?4, attached = COALESCE(?5, attached),
                     positions = COALESCE(?6, positions)
                 WHERE platform = ?1 AND account = ?2 AND generation = ?3",
            )?
            .execute(params![
                platform,
                account,
                generation,
                at,
                view.int("attached"),
                view.get("positions")
                    .filter(|p| p.is_object())
                    .map(|p| p.to_string()),
            ])?;
        }
        "owner_released" => {
            conn.prepare_cached(
                "UPDATE watcher_owners SET released_at = ?4
                 WHERE platform = ?1 AND account = ?2 AND generation = ?3",
            )?
            .execute(params![platform, account, generation, at])?;
        }
        "owner_hung" => {
            let message = format!(
                "the watcher of {platform}/{account} (generation {generation}) was silent since {}; it is taken over",
                view.text("lastHeartbeatAt").unwrap_or("?")
            );
            let details = json!({"platform": platform, "account": account, "generation": generation,
                                 "lastHeartbeatAt": view.text("lastHeartbeatAt")});
            alerts::raise(conn, HUNG_OWNER, event, &message, &details)?;
        }
        "owner_refused" => {
            let message = format!(
                ">>> ONE PROCESS PER ACCOUNT, NEVER TWO: a second watcher (pid {}) for {platform}/{account} was refused; generation {} is live",
                view.int("pid").unwrap_or(0),
                view.int("ownerGeneration").unwrap_or(0)
            );
            let details = json!({"platform": platform, "account": account,
                                 "pid": view.int("pid"), "hostname": view.text("hostname"),
                                 "ownerGeneration": view.int("ownerGeneration")});
            alerts::raise(conn, WATCHER_ALREADY_RUNNING, event, &message, &details)?;
        }
        _ => {}
    }
    Ok(())
}
