//! The session page in Chromium on a session a real CLI made (issue 45): its hooks and its
//! transcript read as one story.

use super::{DEADLINE, Rig, usage_matches};
use crate::browser::{Browser, ONE_BROWSER, chromium};
use serde_json::Value;

/// Opens session `id`'s page and checks what a reader sees: no bookkeeping row, every row
/// with a summary, each tool call `GET /tool-uses` knows on exactly one row with its outcome,
/// `turns` turns numbered 1.. in order, one bar per call in the main lane coloured by its
/// outcome, and the per-turn chart the numbers `GET /usage?by=turn` gives (each of its
/// model calls `per_call` tokens). Saves a screenshot named `screenshot`. Skipped, saying so,
/// without Chromium.
pub async fn assert_reads_as_one_story(
    rig: &Rig,
    id: &str,
    turns: usize,
    per_call: [u64; 4],
    screenshot: &str,
) {
    let Some(found) = chromium() else { return };
    let _one = ONE_BROWSER.lock().await;
    // What the hooks and the transcript stored: the tool calls (by the agent's id, with their
    // outcome in the page's words), and how many events there are.
    let uses = rig.get(&format!("/tool-uses?sessionId={id}")).await;
    let mut calls: Vec<(String, String)> = uses["toolUses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let status = match u["status"].as_str().unwrap() {
                "completed" => "ok",
                other => other,
            };
            (
                u["toolUseId"].as_str().unwrap().to_string(),
                status.to_string(),
            )
        })
        .collect();
    calls.sort();
    assert!(!calls.is_empty(), "no tool call to show: {uses:#}");
    let events: i64 = rig
        .db()
        .query_row(
            "SELECT count(*) FROM events WHERE session_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap();

    let browser = Browser::start(found).await;
    browser.goto(&format!("{}/s/{id}", rig.url)).await;
    browser
        .wait_until(
            DEADLINE,
            "every event of the session",
            &format!("Number(document.getElementById('timeline')?.dataset.count) >= {events}"),
        )
        .await;
    let shown = browser.eval("window.hooklog.shown()").await;
    let shown = shown.as_array().unwrap();
    for row in shown {
        assert_ne!(row[1], "TranscriptRead", "{row}");
        assert!(
            !row[2].as_str().unwrap().trim().is_empty(),
            "a row without a summary: {row}"
        );
    }
    // Each call on one row, with its outcome.
    let mut on_rows: Vec<(String, String)> = shown
        .iter()
        .flat_map(|row| {
            row[8].as_array().unwrap().iter().map(move |call| {
                (
                    call.as_str().unwrap().to_string(),
                    row[3].as_str().unwrap_or("").to_string(),
                )
            })
        })
        .collect();
    on_rows.sort();
    assert_eq!(on_rows, calls, "{shown:#?}");
    // The turns, in order, each prompt shown once.
    let numbers: Vec<u64> = shown
        .iter()
        .filter(|r| (r[1] == "UserPromptSubmit" || r[1] == "TranscriptPrompt") && r[6].is_null())
        .map(|r| r[7].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (1..=turns as u64).collect();
    assert_eq!(numbers, expected, "{shown:#?}");
    // One bar per call, in the main lane, coloured by its outcome.
    let (bars, _) = browser
        .wait_until(
            DEADLINE,
            "a bar for each tool call",
            &format!(
                "(b => b.length === {} && b)([...document.querySelectorAll('#lanes rect.bar')].map(r => [r.dataset.call, r.dataset.lane, r.getAttribute('class')]))",
                calls.len()
            ),
        )
        .await;
    let mut bars: Vec<(String, String, String)> = serde_json::from_value(bars).unwrap();
    bars.sort();
    let expected: Vec<(String, String, String)> = calls
        .iter()
        .map(|(call, status)| (call.clone(), "main".to_string(), format!("bar s-{status}")))
        .collect();
    assert_eq!(bars, expected);
    // The per-turn chart: the numbers /usage gives for each turn.
    let usage = rig.get(&format!("/usage?by=turn&session={id}")).await;
    let groups: Vec<&Value> = usage["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["key"] != "")
        .collect();
    assert_eq!(groups.len(), turns, "{usage:#}");
    let (chart, _) = browser
        .wait_until(
            DEADLINE,
            "the per-turn chart",
            &format!(
                "(b => b.length === {turns} && b)([...document.querySelectorAll('#turn-chart rect.bar')].map(r => [r.dataset.key, Number(r.dataset.cost), Number(r.dataset.tokens), r.nextElementSibling.textContent]))"
            ),
        )
        .await;
    // Numbered 1.. in the order of the prompts, each column its prompt's turn.
    let prompts: Vec<String> = rig
        .db()
        .prepare(
            "SELECT event_id FROM events WHERE session_id = ?1 AND type = 'TranscriptPrompt'
             AND payload ->> '$.agentId' IS NULL ORDER BY event_time, sequence",
        )
        .unwrap()
        .query_map([id], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let columns: Vec<(String, String)> = chart
        .as_array()
        .unwrap()
        .iter()
        .map(|bar| {
            (
                bar[0].as_str().unwrap().to_string(),
                bar[3].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = prompts
        .iter()
        .enumerate()
        .map(|(i, key)| (key.clone(), (i + 1).to_string()))
        .collect();
    assert_eq!(columns, expected, "{chart}");
    for bar in chart.as_array().unwrap() {
        let group = groups
            .iter()
            .find(|g| g["key"] == bar[0])
            .unwrap_or_else(|| panic!("no turn {bar} in {usage:#}"));
        assert_eq!(bar[1].as_f64(), group["costUsd"].as_f64(), "{bar}");
        let calls = group["calls"].as_u64().unwrap();
        assert!(usage_matches(group, calls, per_call), "{group}");
        assert_eq!(bar[2], calls * per_call.iter().sum::<u64>(), "{bar}");
    }
    browser.screenshot(screenshot).await;
    browser.close().await;
}
