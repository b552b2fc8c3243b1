//! The `gaps` projection: catch-up gaps per platform account (seed 002, REQ-HOOKS-17/18).
//! A gap is `open` until closed; a refused catch-up stays `refused` until someone resumes it.

use super::alerts;
use super::view::View;
use crate::event::StoredEvent;
use crate::states::states;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::{Value, json};

pub const CATCH_UP_REFUSED: &str = "catchUpRefused";
pub const GAP_RESUMED: &str = "gapResumed";

states! {
    /// A gap's `status`: `open` until closed; a refused catch-up stays `refused` until someone
    /// resumes it.
    pub enum GapStatus {
        Open = "open",
        Closed = "closed",
        Refused = "refused",
    }
}

states! {
    /// Why a gap opened (`gaps.cause`).
    pub enum GapCause {
        /// `POST /gaps`.
        Request = "request",
        /// An owner took over from a stopped or hung one: from its last heartbeat's positions.
        Takeover = "takeover",
        /// A first owner on an account with events: from the newest of them.
        FirstOwner = "first_owner",
    }
}

/// The gap id an opening event gives.
pub fn gap_id(event_id: &str) -> String {
    format!("gap-{event_id}")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    pub id: String,
    pub platform: String,
    pub account: String,
    pub status: GapStatus,
    pub reason: String,
    pub cause: GapCause,
    pub from_position: Option<String>,
    /// A takeover's: the positions the previous owner's last heartbeat gave (a JSON object).
    pub from_positions: Option<Value>,
    /// A takeover's: when the previous owner was last heard from.
    pub from_heartbeat_at: Option<String>,
    /// A first owner's: the account's newest event when it started.
    pub from_event_id: Option<String>,
    pub to_position: Option<String>,
    pub refused_detail: Option<String>,
    pub resumed_by: Option<String>,
    /// Every refusal and resume, in order: `[{"refused": detail, "at"}, {"resumedBy", "at"}]`.
    pub history: Value,
    pub opened_at: String,
    pub closed_at: Option<String>,
    pub refused_at: Option<String>,
    pub resumed_at: Option<String>,
    pub opened_event_id: String,
}

const COLUMNS: &str = "id, platform, account, status, reason, from_position, to_position,
     refused_detail, resumed_by, detail, opened_at, closed_at, refused_at, resumed_at,
     opened_event_id, cause, from_positions, from_heartbeat_at, from_event_id";

fn row(r: &Row<'_>) -> rusqlite::Result<Gap> {
    let detail: Option<String> = r.get(9)?;
    Ok(Gap {
        id: r.get(0)?,
        platform: r.get(1)?,
        account: r.get(2)?,
        status: r.get(3)?,
        reason: r.get(4)?,
        from_position: r.get(5)?,
        to_position: r.get(6)?,
        refused_detail: r.get(7)?,
        resumed_by: r.get(8)?,
        history: detail
            .and_then(|d| serde_json::from_str(&d).ok())
            .unwrap_or_else(|| json!([])),
        opened_at: r.get(10)?,
        closed_at: r.get(11)?,
        refused_at: r.get(12)?,
        resumed_at: r.get(13)?,
        opened_event_id: r.get(14)?,
        cause: r.get(15)?,
        from_positions: r
            .get::<_, Option<String>>(16)?
            .and_then(|p| serde_json::from_str(&p).ok()),
        from_heartbeat_at: r.get(17)?,
        from_event_id: r.get(18)?,
    })
}

pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Gap>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM gaps WHERE id = ?1"))?
        .query_row([id], row)
        .optional()
}

/// The account's gap that is not closed (open or refused), if any. The state is written in the
/// statement, not bound: only then can SQLite use `gaps_unresolved`, a partial index on this
/// very condition.
pub fn unresolved(
    conn: &Connection,
    platform: &str,
    account: &str,
) -> rusqlite::Result<Option<Gap>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM gaps WHERE platform = ?1 AND account = ?2 AND status <> 'closed'
         ORDER BY opened_sequence DESC LIMIT 1"
    ))?
    .query_row([platform, account], row)
    .optional()
}

#[derive(Debug, Default, Clone)]
pub struct GapFilter {
    pub status: Option<GapStatus>,
    pub platform: Option<String>,
    pub account: Option<String>,
}

/// Gaps, newest first.
pub fn list(conn: &Connection, filter: &GapFilter, limit: u32) -> rusqlite::Result<Vec<Gap>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM gaps
         WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR platform = ?2)
           AND (?3 IS NULL OR account = ?3)
         ORDER BY opened_sequence DESC LIMIT ?4"
    ))?
    .query_map(
        params![filter.status, filter.platform, filter.account, limit],
        row,
    )?
    .collect()
}

/// Applies a gap event (`gap_opened`, `gap_closed`, `gap_refused`, `gap_resumed`).
pub fn apply(conn: &Connection, event: &StoredEvent, view: &View) -> rusqlite::Result<()> {
    let at = &event.received_at;
    if event.event_type == "gap_opened" {
        conn.prepare_cached(&format!(
            "INSERT OR REPLACE INTO gaps ({COLUMNS}, opened_sequence)
             VALUES (?1, ?2, ?3, ?13, ?4, ?5, NULL, NULL, NULL, '[]', ?6, NULL, NULL, NULL, ?7,
                     ?9, ?10, ?11, ?12, ?8)"
        ))?
        .execute(params![
            gap_id(&event.event_id),
            view.text("platform").unwrap_or(""),
            view.text("account").unwrap_or(""),
            view.text("reason").unwrap_or(""),
            view.text("fromPosition"),
            at,
            event.event_id,
            event.sequence,
            view.text("cause")
                .and_then(GapCause::parse)
                .unwrap_or(GapCause::Request),
            view.get("fromPositions")
                .filter(|p| p.is_object())
                .map(|p| p.to_string()),
            view.text("fromHeartbeatAt"),
            view.text("fromEventId"),
            GapStatus::Open,
        ])?;
        return Ok(());
    }
    let Some(mut gap) = view
        .text("gapId")
        .map(|id| get(conn, id))
        .transpose()?
        .flatten()
    else {
        return Ok(());
    };
    let mut history = gap.history.as_array().cloned().unwrap_or_default();
    match event.event_type.as_str() {
        "gap_closed" => {
            gap.status = GapStatus::Closed;
            gap.to_position = view.text("toPosition").map(str::to_string);
            gap.closed_at = Some(at.clone());
        }
        "gap_refused" => {
            let detail = view.text("detail").unwrap_or("").to_string();
            history.push(json!({"refused": detail, "at": at}));
            gap.status = GapStatus::Refused;
            gap.refused_detail = Some(detail.clone());
            gap.refused_at = Some(at.clone());
            let message = format!(
                "catch-up of {}/{} was refused: {detail}; the account stays behind until someone resumes it",
                gap.platform, gap.account
            );
            let details = json!({"gapId": gap.id, "platform": gap.platform, "account": gap.account, "detail": detail});
            alerts::raise(conn, CATCH_UP_REFUSED, event, &message, &details)?;
        }
        "gap_resumed" => {
            let by = view.text("by").unwrap_or("").to_string();
            history.push(json!({"resumedBy": by, "at": at}));
            gap.status = GapStatus::Open;
            gap.resumed_by = Some(by.clone());
            gap.resumed_at = Some(at.clone());
            let message = format!(
                "catch-up of {}/{} was resumed by {by} (refused before: {})",
                gap.platform,
                gap.account,
                gap.refused_detail.as_deref().unwrap_or("")
            );
            let details = json!({"gapId": gap.id, "by": by, "refusedDetail": gap.refused_detail});
            alerts::raise(conn, GAP_RESUMED, event, &message, &details)?;
        }
        _ => return Ok(()),
    }
    conn.prepare_cached(
        "UPDATE gaps SET status = ?2, to_position = ?3, refused_detail = ?4, resumed_by = ?5,
             detail = ?6, closed_at = ?7, refused_at = ?8, resumed_at = ?9
         WHERE id = ?1",
    )?
    .execute(params![
        gap.id,
        gap.status,
        gap.to_position,
        gap.refused_detail,
        gap.resumed_by,
        Value::Array(history).to_string(),
        gap.closed_at,
        gap.refused_at,
        gap.resumed_at,
    ])?;
    Ok(())
}
