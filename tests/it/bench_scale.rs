//! `hooklog bench scale` end to end on a small log: it grows the log through a real server,
//! answers every route it times (a route it cannot read fails the run, as a renamed or broken
//! route would), and measures backup and `rebuild --check` on the file.

use crate::common::hooklog_stdout;
use std::ffi::OsStr;

#[test]
fn bench_scale_grows_a_log_in_steps_and_times_every_route() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("scale.db");
    let stdout = hooklog_stdout(
        [
            "bench",
            "scale",
            "--steps",
            "1500,3000",
            "--warm",
            "1",
            "--db",
        ]
        .map(OsStr::new)
        .into_iter()
        .chain([db.as_os_str()]),
    );
    for step in ["at 1500 events", "at 3000 events"] {
        assert!(stdout.contains(step), "{stdout}");
    }
    // Each step times the same routes (a route that did not answer 200 would have failed the
    // run): more than 40 of them.
    let (first, second) = stdout.split_at(stdout.find("at 3000 events").unwrap());
    let timed = |text: &str| text.lines().filter(|l| l.contains("  /")).count();
    assert_eq!(timed(first), timed(second), "{stdout}");
    assert!(timed(first) > 40, "{stdout}");
    assert_eq!(stdout.matches("rebuild --check:").count(), 2, "{stdout}");
    assert_eq!(stdout.matches("backup:").count(), 2, "{stdout}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let head: i64 = conn
        .query_row("SELECT MAX(sequence) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(head, 3000);
    // The backups it made are gone; the grown log stays.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.contains("backup"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
