//! A tool call's outcome read from the agent's own transcript (a `TranscriptToolResult`
//! event), for the calls whose hooks did not tell it:
//!
//! - Claude Code refuses a call its permission mode does not allow (print mode's default
//!   mode, a command that writes) without running a hook: the `PreToolUse` opened the call,
//!   no `PostToolUse` or `PermissionDenied` follows, and only the transcript's error result
//!   says why. Claude Code runs `PostToolUse` or `PostToolUseFailure` (with `is_interrupt`
//!   when the user stopped it) for every call that ran, so a call no hook ended, whose result
//!   is an error, never ran: it is `denied`, with the transcript's text as its reason. The
//!   transcript and the hooks race (either may be read first), so the error is kept on a call
//!   still `running`, and whichever comes last decides: `Stop` makes such a call `denied`
//!   instead of `interrupted` (`prompt.rs`), and a `PostToolUse` without an error makes it
//!   `failed` (`tool.rs`).
//! - Codex's `PostToolUse` carries the output but no exit code, so every call it reports is
//!   `completed`; its rollout has the exit code, and writes it only for a command that ran. A
//!   Codex call whose result is an error is `failed`, whatever its hooks said or did not say.
//!
//! A call the hooks ended as `failed` or `denied` keeps what they said; a result for a call no
//! hook opened makes no row (the transcript alone does not make tool uses).

use super::ERROR_CHARS;
use crate::ingest::bounds::clip;
use crate::projection::tables::Tables;
use crate::projection::tool_uses::ToolStatus;
use crate::projection::view::View;
use serde_json::Value;

/// Applies a `TranscriptToolResult` event's error results to the calls they name; returns
/// whether it changed any.
pub fn apply(tables: &impl Tables, session: &str, view: &View) -> rusqlite::Result<bool> {
    let codex = view.text("cli") == Some(crate::ingest::transcript::CODEX);
    let mut changed = false;
    let results = view.get("toolResults").and_then(Value::as_array);
    for result in results.into_iter().flatten() {
        if result.get("isError") != Some(&Value::Bool(true)) {
            continue;
        }
        let Some(call) = result.get("toolUseId").and_then(Value::as_str) else {
            continue;
        };
        let Some(mut row) = tables.tool_by_call(session, call)? else {
            continue;
        };
        row.status = match (row.status, codex) {
            (ToolStatus::Running | ToolStatus::Interrupted | ToolStatus::Completed, true) => {
                ToolStatus::Failed
            }
            (ToolStatus::Running, false) => ToolStatus::Running,
            (ToolStatus::Interrupted, false) => ToolStatus::Denied,
            (ToolStatus::Completed, false) => ToolStatus::Failed,
            _ => continue,
        };
        let error = result.get("error").and_then(Value::as_str);
        row.error = Some(clip(error.unwrap_or("error"), ERROR_CHARS));
        tables.save_tool(row)?;
        changed = true;
    }
    Ok(changed)
}
