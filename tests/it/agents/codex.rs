//! Codex (the real CLI) against hooklog, with the hooks `hooklog hooks install --cli codex`
//! writes, run by `codex exec` (which needs `--dangerously-bypass-hook-trust` to run hooks
//! nobody has reviewed in Codex's `/hooks` screen).

use super::model::{CODEX_CACHED, CODEX_INPUT, CODEX_OUTPUT, CODEX_REASONING};
use super::{DEADLINE, Rig, cli, drift, page, usage_matches};
use std::path::Path;

/// The model the scripted provider is configured with.
const MODEL: &str = "gpt-5-codex";

/// Codex's home in the rig, with the scripted model as its provider. Written before `hooklog
/// hooks install`, as a user's own config.toml would be.
fn configure(rig: &Rig) {
    let home = rig.home.join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        "model = \"{MODEL}\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\n\
         sandbox_mode = \"danger-full-access\"\n\n[model_providers.scripted]\n\
         name = \"scripted\"\nbase_url = \"{}/v1\"\nenv_key = \"SCRIPTED_KEY\"\n\
         wire_api = \"responses\"\n",
        rig.model.url
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

/// What one `codex exec` printed on stderr (its log, hook runs included) and stdout.
struct Run {
    stderr: String,
    session: String,
}

/// `codex exec [ARGS] PROMPT`, offline, hooks run without review.
async fn exec(rig: &Rig, bin: &Path, args: &[&str]) -> Run {
    let mut command = rig.command(bin);
    command
        .env("CODEX_HOME", rig.home.join(".codex"))
        .env("SCRIPTED_KEY", "scripted")
        .args([
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
        ])
        .args(args)
        .stdin(std::process::Stdio::null());
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let out = tokio::time::timeout(DEADLINE, command.output())
        .await
        .expect("codex exec took too long")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "codex exec failed: {stderr}");
    let session = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session id: "))
        .expect("codex prints its session id")
        .trim()
        .to_string();
    Run { stderr, session }
}

/// Every hook Codex started (`hook: NAME`) it reported completed (`hook: NAME Completed`).
fn assert_hooks_completed(run: &Run) {
    let started: Vec<&str> = run
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("hook: "))
        .filter(|l| !l.contains(' '))
        .collect();
    assert!(!started.is_empty(), "no hook ran: {}", run.stderr);
    for hook in started {
        let done = format!("hook: {hook} Completed");
        assert!(
            run.stderr.contains(&done),
            "{hook} did not complete: {}",
            run.stderr
        );
    }
}

const PER_CALL: [u64; 4] = [CODEX_INPUT - CODEX_CACHED, CODEX_OUTPUT, 0, CODEX_CACHED];

#[tokio::test(flavor = "multi_thread")]
async fn codex_with_the_installed_hooks_is_recorded_ended_with_usage_and_tool_outcomes() {
    let Some(bin) = cli("codex") else { return };
    let rig = Rig::start().await;
    configure(&rig);
    let installed = rig.hooklog(&["hooks", "install", "--cli", "codex"]);
    assert!(
        installed.contains("run /hooks and trust") && installed.contains("bypass-hook-trust"),
        "install says how Codex's review of new hooks works: {installed}"
    );

    let first = exec(&rig, &bin, &["look\nrun: echo one\nrun: false"]).await;
    // First, so that a run against a new release reports what it sent before any assertion.
    drift::check(&rig, &bin).await;
    assert_hooks_completed(&first);
    assert!(
        !first.stderr.contains("deprecated"),
        "Codex warned about hooklog's config: {}",
        first.stderr
    );
    let id = first.session.clone();
    let session = rig
        .wait_until(
            &format!("/sessions/{id}"),
            "the session's end and usage",
            |s| s["state"] == "ended" && usage_matches(&s["usage"], 3, PER_CALL),
        )
        .await;
    assert_eq!(session["usage"]["reasoningTokens"], 3 * CODEX_REASONING);
    assert_eq!(session["cli"], "codex-cli");
    let uses = rig.tool_uses(&id).await;
    assert_eq!(uses.len(), 2, "{uses:?}");
    assert_eq!(
        (uses[0].0.as_str(), uses[0].1.as_str()),
        ("echo one", "completed")
    );
    assert_eq!(
        (uses[1].0.as_str(), uses[1].1.as_str()),
        ("false", "failed")
    );
    assert!(
        uses[1].2.as_deref().unwrap_or("").contains("exit code 1"),
        "{uses:?}"
    );

    // Resumed: the same session goes on, and ends again.
    let resumed = exec(&rig, &bin, &["resume", &id, "again\nrun: echo again"]).await;
    assert_hooks_completed(&resumed);
    assert_eq!(resumed.session, id);
    rig.wait_until(
        &format!("/sessions/{id}"),
        "the resumed turn's usage",
        |s| s["state"] == "ended" && usage_matches(&s["usage"], 5, PER_CALL),
    )
    .await;
    let previews: Vec<String> = rig.tool_uses(&id).await.into_iter().map(|t| t.0).collect();
    assert_eq!(previews, ["echo one", "false", "echo again"]);

    let heroes = rig.get("/heroes").await;
    assert_eq!(heroes["heroes"][0]["model"], MODEL);
    // Every read of the rollout that was stored brought records with it.
    let empty: i64 = rig
        .db()
        .query_row(
            "SELECT COUNT(*) FROM events r WHERE r.type = 'TranscriptRead' AND NOT EXISTS
               (SELECT 1 FROM events e WHERE e.sequence = r.sequence - 1
                  AND e.source = 'transcript' AND e.type != 'TranscriptRead')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(empty, 0, "TranscriptRead events with no records");
    rig.assert_no_alert().await;
    rig.assert_rebuilds();
}

/// The session page on what the real Codex made (issue 45): two turns (the second a resume),
/// told by its hooks and its rollout, read as one story in Chromium.
#[tokio::test(flavor = "multi_thread")]
async fn codexs_session_reads_as_one_story_in_chromium() {
    let Some(bin) = cli("codex") else { return };
    let rig = Rig::start().await;
    configure(&rig);
    rig.hooklog(&["hooks", "install", "--cli", "codex"]);
    let first = exec(&rig, &bin, &["look\nrun: echo one\nrun: false"]).await;
    let id = first.session;
    rig.wait_until(&format!("/sessions/{id}"), "the first turn's usage", |s| {
        s["state"] == "ended" && usage_matches(&s["usage"], 3, PER_CALL)
    })
    .await;
    exec(&rig, &bin, &["resume", &id, "again\nrun: echo again"]).await;
    rig.wait_until(&format!("/sessions/{id}"), "the second turn's usage", |s| {
        s["state"] == "ended" && usage_matches(&s["usage"], 5, PER_CALL)
    })
    .await;
    assert_eq!(rig.tool_uses(&id).await.len(), 3);
    page::assert_reads_as_one_story(&rig, &id, 2, PER_CALL, "codex-session").await;
}
