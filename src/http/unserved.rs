//! Seed 000's deterministic `501` for the route families of FactionOS's local API that hooklog
//! does not serve: its notices, scrolls, task queue, command center and LLM routes (state
//! hooklog does not keep), and the historical families the seed itself answers `501` for (file,
//! git, terminal, container, remote and hosted operations, War Room and Worker surfaces). A
//! FactionOS client pointed at hooklog is told which family it reached, instead of a `404` that
//! looks like a typo. Any other unknown path stays a `404`.
//!
//! The answer names the method, the path cut to its family's prefix, the family and its status,
//! and the docs: never the rest of the path, the query string or the body (which may hold
//! prompts, commands or tokens).

use super::error::ApiError;
use axum::Json;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;

/// Where docs/api.md describes these answers.
pub const DOCS: &str = "docs/api.md#routes-hooklog-does-not-serve";

/// Why a family is not served here, in the seed's status vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// FactionOS keeps this state or runs these actions; hooklog, a log of agent events, does
    /// not.
    Unsupported,
    /// The seed puts it on another runtime surface (the War Room Worker).
    SeparateSurface,
}

/// A route family: its name, status and the first path segments that belong to it.
struct Family {
    name: &'static str,
    status: Status,
    prefixes: &'static [&'static str],
}

const fn family(name: &'static str, status: Status, prefixes: &'static [&'static str]) -> Family {
    Family {
        name,
        status,
        prefixes,
    }
}

use Status::{SeparateSurface, Unsupported};

/// Each prefix is one or more whole path segments; the longest that matches wins.
const FAMILIES: &[Family] = &[
    family("notices", Unsupported, &["/notices", "/notice"]),
    family("scrolls", Unsupported, &["/scrolls"]),
    family("achievements", Unsupported, &["/achievements", "/quests"]),
    family("export", Unsupported, &["/export"]),
    family("task-queue", Unsupported, &["/task-queue", "/suggestions"]),
    family("agent-templates", Unsupported, &["/agent-templates"]),
    family("guarded-actions", Unsupported, &["/guarded-actions"]),
    family("command-center", Unsupported, &["/command-center"]),
    family("diagnostics", Unsupported, &["/diagnostics", "/api"]),
    family("llm", Unsupported, &["/llm", "/memory"]),
    family(
        "file-operations",
        Unsupported,
        &["/file-diff", "/file-operations", "/open-file"],
    ),
    family("git-operations", Unsupported, &["/codex", "/worktrees"]),
    family(
        "terminal",
        Unsupported,
        &["/internal-heroes", "/prompt", "/response"],
    ),
    family(
        "remote-access",
        Unsupported,
        &["/remote-access", "/detect-ides"],
    ),
    family("container", Unsupported, &["/container", "/docker"]),
    family(
        "hosted",
        Unsupported,
        &[
            "/hosted",
            "/analytics",
            "/replay/share",
            "/settings",
            "/config",
        ],
    ),
    family(
        "collaboration",
        Unsupported,
        &["/collaboration", "/channels", "/pair"],
    ),
    family("push-webhooks", Unsupported, &["/push", "/webhooks"]),
    family(
        "worker-execution",
        SeparateSurface,
        &["/worker", "/workers"],
    ),
    family("warroom-worker", SeparateSurface, &["/warroom", "/rooms"]),
];

/// The family a path belongs to and the prefix that matched, if any.
fn classify(path: &str) -> Option<(&'static Family, &'static str)> {
    FAMILIES
        .iter()
        .flat_map(|f| f.prefixes.iter().map(move |p| (f, *p)))
        .filter(|(_, prefix)| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
        .max_by_key(|(_, prefix)| prefix.len())
}

/// The answer for a path no route matched: `501 not_implemented` inside a family, else `404`.
pub fn answer(method: &Method, uri: &Uri) -> Response {
    let path = uri.path();
    let Some((family, prefix)) = classify(path) else {
        return ApiError::NotFound {
            path: Some(path.to_string()),
        }
        .into_response();
    };
    let shown = match path.len() > prefix.len() + 1 {
        true => format!("{prefix}/..."),
        false => prefix.to_string(),
    };
    let body = json!({
        "error": "not_implemented",
        "method": method.as_str(),
        "path": shown,
        "family": family.name,
        "status": family.status,
        "docs": DOCS,
        "message": format!(
            "hooklog records agent events; it does not serve FactionOS's {} routes",
            family.name
        ),
    });
    (StatusCode::NOT_IMPLEMENTED, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family_of(path: &str) -> Option<&'static str> {
        classify(path).map(|(f, _)| f.name)
    }

    #[test]
    fn whole_segments_and_the_longest_prefix_decide() {
        assert_eq!(family_of("/docker/ps/1"), Some("container"));
        assert_eq!(family_of("/replay/share"), Some("hosted"));
        assert_eq!(family_of("/replay/other"), None);
        assert_eq!(family_of("/warroom"), Some("warroom-worker"));
        assert_eq!(family_of("/noticeboard"), None);
        assert_eq!(family_of("/nowhere"), None);
        assert_eq!(family_of("/"), None);
    }

    #[test]
    fn every_prefix_is_a_whole_path_of_segments() {
        for family in FAMILIES {
            for prefix in family.prefixes {
                assert!(
                    prefix.starts_with('/') && !prefix.ends_with('/'),
                    "{prefix}"
                );
                // No hooklog route lives under a family (those are matched before the fallback,
                // but a family there would turn their unknown sub-paths into 501s).
                for route in super::super::routes() {
                    assert!(
                        !route.path.starts_with(prefix),
                        "{prefix} covers {}",
                        route.path
                    );
                }
            }
        }
    }
}
