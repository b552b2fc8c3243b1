//! What a tool call is shown as: its tool's name and a one-line preview of what it does.

use super::{PREVIEW_CHARS, View};
use crate::ingest::bounds::clip;
use crate::projection::tool_uses;

/// The tool an event is about: its `tool`, else what its hook-specific type implies.
pub(super) fn tool_name(view: &View, event_type: &str) -> String {
    if let Some(tool) = view.tool() {
        return tool.to_string();
    }
    let implied = match view.hook_type().unwrap_or(event_type) {
        "bash_command" => "Bash",
        "file_access" => match view.text("operation") {
            Some("read") => "Read",
            Some("write") => "Write",
            Some("edit") => "Edit",
            _ => "file_access",
        },
        "awaiting_input" | "input_received" => "AskUserQuestion",
        "subagent_spawn" => "Task",
        _ => "unknown",
    };
    implied.to_string()
}

/// One line of at most 200 characters saying what a tool call does. Patch bodies and MCP
/// arguments are never shown: an apply_patch shows the files it touches, an MCP call only an
/// explicit preview.
pub(crate) fn preview(view: &View, tool: &str) -> Option<String> {
    let kind = tool_uses::kind_of(tool);
    if tool == "apply_patch" {
        let bodies = [
            view.text("command"),
            view.input_text("command"),
            view.input_text("input"),
            view.input_text("patch"),
        ];
        return bodies.into_iter().flatten().find_map(patch_paths);
    }
    let explicit = ["inputPreview", "preview", "toolSummary"];
    let explicit_raw = ["command", "path", "filePath", "description"];
    let given = explicit.iter().find_map(|f| view.text(f));
    if kind == "mcp" {
        return given.map(one_line);
    }
    let from_input = match kind {
        "bash" => view
            .input_text("command")
            .or_else(|| view.input_text("cmd")),
        "file" => ["file_path", "path", "notebook_path"]
            .iter()
            .find_map(|k| view.input_text(k)),
        "search" => view
            .input_text("pattern")
            .or_else(|| view.input_text("path")),
        "web" => view.input_text("url").or_else(|| view.input_text("query")),
        "subagent" => view.input_text("description"),
        _ => None,
    };
    given
        .or_else(|| explicit_raw.iter().find_map(|f| view.text(f)))
        .or(from_input)
        .map(one_line)
}

/// The files an apply_patch body touches (`*** Update File: src/a.rs`), comma-separated.
fn patch_paths(body: &str) -> Option<String> {
    let paths: Vec<&str> = body
        .lines()
        .filter_map(|line| {
            ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                .iter()
                .find_map(|prefix| line.strip_prefix(prefix))
        })
        .map(str::trim)
        .collect();
    (!paths.is_empty()).then(|| one_line(&paths.join(", ")))
}

pub(super) fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    clip(&flat, PREVIEW_CHARS)
}
