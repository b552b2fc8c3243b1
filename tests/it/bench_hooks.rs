//! `hooklog bench ingest --scenario hooks` end to end, small: the floor and the hook path on
//! servers of their own, in alternating rounds, each storing every event it was sent once.

use crate::common::hooklog_stdout;

#[test]
fn bench_hooks_alternates_the_floor_and_the_hook_path_and_stores_each_event_once() {
    let stdout = hooklog_stdout([
        "bench",
        "ingest",
        "--scenario",
        "hooks",
        "--events",
        "900",
        "--rounds",
        "3",
        "--connections",
        "8",
        "--sessions",
        "10",
        "--serial-events",
        "0",
        "--no-pre-only",
        "--no-open-subagents",
    ]);
    assert!(
        stdout.contains("same run (3 alternating rounds)"),
        "{stdout}"
    );
    // Each server's own counters: all 900 of its events, none twice, across its three steps.
    for path in ["log-only floor:", "hooks: raw hook bodies"] {
        let printed = stdout.split(path).nth(1).expect(path);
        let header = printed.lines().next().unwrap_or_default();
        assert!(header.contains("900 events in 3 steps"), "{path} {header}");
        let commits = printed
            .lines()
            .find(|l| l.contains("commits:"))
            .expect("a commits line");
        assert!(
            commits.contains(" for 900 events stored"),
            "{path} {commits}"
        );
    }
    // Bytes and thread CPU are "unknown" where /proc cannot be read; the rate always is.
    for ratio in [
        "events/s:",
        "bytes written per event:",
        "writer CPU per event:",
    ] {
        let line = stdout
            .lines()
            .skip_while(|l| !l.contains("same run"))
            .find(|l| l.contains(ratio))
            .expect(ratio);
        let known = line.trim_end().ends_with('x');
        assert!(
            known || (ratio != "events/s:" && line.contains("unknown")),
            "{line}"
        );
    }
}
