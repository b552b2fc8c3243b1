//! Unit tests of the spool: who may own it, capture order, limits, malformed files, the lock.

#[cfg(unix)]
use super::dir::euid;
use super::*;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn header(id: &str) -> Header {
    Header {
        id: id.into(),
        route: Route::Event,
        cli: None,
        captured_at: "2026-11-30T00:00:00.000Z".into(),
    }
}

#[cfg(unix)]
#[test]
fn a_world_writable_spool_is_refused_and_a_private_one_taken() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let refused = Spool::open(dir.path(), Limits::default()).err().unwrap();
    assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied);
    assert!(refused.to_string().contains("writable by other users"));
    // A group may hold other users (macOS's `staff`): group write is refused too.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o770)).unwrap();
    assert!(Spool::open(dir.path(), Limits::default()).is_err());
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o750)).unwrap();
    assert!(Spool::open(dir.path(), Limits::default()).is_ok());
    // A new directory is made owner-only, and so are the parents made for it.
    let made = dir.path().join("parent").join("made");
    Spool::open(&made, Limits::default()).unwrap();
    for path in [&made, &dir.path().join("parent")] {
        assert_eq!(
            fs::metadata(path).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }
    // A link of this user's to a private directory is followed.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&made, &link).unwrap();
    assert!(Spool::open(&link, Limits::default()).is_ok());
}

#[cfg(unix)]
#[test]
fn a_spool_owned_by_another_user_is_refused() {
    // A directory this user does not own: as root, one given away to `nobody`; otherwise
    // `/`, which is root's.
    let dir = tempfile::tempdir().unwrap();
    let foreign = if euid() == 0 {
        std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
        dir.path().to_path_buf()
    } else {
        PathBuf::from("/")
    };
    let refused = Spool::open(&foreign, Limits::default()).err().unwrap();
    assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied);
    assert!(refused.to_string().contains("belongs to uid"), "{refused}");
    // As root, a link made by another user (to a directory of root's) is not followed.
    if euid() == 0 {
        let mine = dir.path().join("mine");
        fs::create_dir(&mine).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let planted = outside.path().join("planted");
        std::os::unix::fs::symlink(&mine, &planted).unwrap();
        std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
        // Named as it is, and with a trailing slash (which makes lstat follow a link).
        let slashed = PathBuf::from(format!("{}/", planted.display()));
        for path in [&planted, &slashed] {
            let refused = Spool::open(path, Limits::default()).err().unwrap();
            assert!(
                refused
                    .to_string()
                    .contains("symbolic link made by uid 65534"),
                "{refused}"
            );
        }
    }
}

#[test]
fn lists_in_capture_order_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(dir.path(), Limits::default()).unwrap();
    let now = now_nanos();
    spool.put(now + 2, &header("c"), b"{\"n\":3}").unwrap();
    spool.put(now, &header("a"), b"{\"n\":1}").unwrap();
    spool.put(now + 1, &header("b"), b"{\"n\":2}").unwrap();
    let listed = spool.list().unwrap();
    let ids: Vec<_> = listed
        .iter()
        .map(|l| spool.read(l).unwrap().unwrap().header.id)
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    let entry = spool.read(&listed[1]).unwrap().unwrap();
    assert_eq!(entry.body, b"{\"n\":2}");
    assert_eq!(entry.header, header("b"));
}

#[test]
fn drops_oldest_past_the_count_and_logs_it() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_events: 2,
        ..Limits::default()
    };
    let spool = Spool::open(dir.path(), limits).unwrap();
    let now = now_nanos();
    for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
        spool.put(now + i as u128, &header(id), b"{}").unwrap();
    }
    assert_eq!(spool.enforce_limits().unwrap(), 2);
    let left: Vec<_> = spool
        .list()
        .unwrap()
        .iter()
        .map(|l| spool.read(l).unwrap().unwrap().header.id)
        .collect();
    assert_eq!(left, ["c", "d"]);
    let dropped = spool.dropped().unwrap();
    let ids: Vec<_> = dropped.iter().map(|d| d.id.as_deref().unwrap()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert!(dropped[0].reason.contains("spool full"));
}

#[test]
fn drops_events_older_than_the_maximum_age() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_age: Duration::from_secs(60),
        ..Limits::default()
    };
    let spool = Spool::open(dir.path(), limits).unwrap();
    let now = now_nanos();
    spool
        .put(now - 120_000_000_000, &header("old"), b"{}")
        .unwrap();
    spool.put(now, &header("new"), b"{}").unwrap();
    assert_eq!(spool.enforce_limits().unwrap(), 1);
    assert_eq!(spool.list().unwrap().len(), 1);
    assert_eq!(spool.dropped().unwrap()[0].id.as_deref(), Some("old"));
}

#[test]
fn a_malformed_file_is_dropped_not_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(dir.path(), Limits::default()).unwrap();
    fs::write(
        dir.path().join(format!("{:039}-x{SUFFIX}", now_nanos())),
        b"junk",
    )
    .unwrap();
    let listed = spool.list().unwrap();
    assert!(spool.read(&listed[0]).unwrap().is_none());
    assert!(spool.list().unwrap().is_empty());
    let dropped = spool.dropped().unwrap();
    assert_eq!(dropped[0].reason, "malformed spool file");
    assert_eq!(dropped[0].id.as_deref(), Some("x"));
}

#[test]
fn one_drainer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(dir.path(), Limits::default()).unwrap();
    let held = spool.lock(Instant::now()).expect("free lock");
    assert!(spool.lock(Instant::now()).is_none());
    drop(held);
    assert!(spool.lock(Instant::now()).is_some());
}
