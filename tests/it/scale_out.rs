//! Many machines (issue 28): hooklogs publish their logs to a real NATS JetStream stream and an
//! aggregator consumes it. Whatever is killed, and whenever, the aggregator ends up holding
//! each event exactly once, each session's events in the order its origin stored them, with
//! projections a rebuild reproduces.
//!
//! Skipped, with a message, where `nats-server` is missing; under `CI=true` that is a failure.

use crate::common;
use crate::nats;

use common::{ServerProcess, assert_gapless, assert_rebuilds_to_live, free_port, open_read_only};
use hooklog::jetstream::{Subscription, Target};
use nats::{Nats, nats_server};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the aggregator may take to catch up, NATS restarts and backoffs included.
const CATCH_UP: Duration = Duration::from_secs(120);

/// `n` events of each of `sessions` sessions of `origin`, numbered from `from` within each
/// session, interleaved across the sessions.
fn events(origin: &str, sessions: usize, from: usize, n: usize) -> Vec<Value> {
    (from..from + n)
        .flat_map(|k| {
            (0..sessions).map(move |s| {
                json!({"id": format!("{origin}-s{s}-e{k}"), "type": "Stop",
                       "sessionId": format!("{origin}-s{s}"), "payload": {"n": k}})
            })
        })
        .collect()
}

async fn post(client: &reqwest::Client, url: &str, lines: &[Value]) {
    let body: Vec<String> = lines.iter().map(Value::to_string).collect();
    let response = client
        .post(format!("{url}/events"))
        .header("content-type", "application/x-ndjson")
        .body(body.join("\n"))
        .send()
        .await
        .expect("post events");
    assert_eq!(response.status(), 200, "ingest never waits for NATS");
}

async fn get(client: &reqwest::Client, url: &str) -> Value {
    client
        .get(url)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("JSON")
}

/// Each session's event ids in session order, for the events of `origin` (all when `None`).
fn ids_by_session(db: &Path, origin: Option<&str>) -> BTreeMap<String, Vec<String>> {
    let conn = open_read_only(db);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut statement = conn
        .prepare(
            "SELECT session_id, event_id FROM events WHERE ?1 IS NULL OR origin = ?1
             ORDER BY session_id, session_sequence",
        )
        .unwrap();
    let rows = statement
        .query_map([origin], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })
        .unwrap();
    for row in rows {
        let (session, id) = row.unwrap();
        out.entry(session).or_default().push(id);
    }
    out
}

fn count(db: &Path, sql: &str) -> i64 {
    open_read_only(db).query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Waits until the aggregator's file holds `n` events, or fails after [`CATCH_UP`].
async fn wait_for_events(db: &Path, n: i64) {
    let start = Instant::now();
    loop {
        let held = count(db, "SELECT COUNT(*) FROM events");
        assert!(
            held <= n,
            "the aggregator holds {held} events, more than the {n} sent"
        );
        if held == n {
            return;
        }
        assert!(
            start.elapsed() < CATCH_UP,
            "the aggregator holds {held} of {n} events after {CATCH_UP:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The exactly-once check: the aggregator holds every event of every publisher once (a
/// `UNIQUE` event id, and the counts agree), with its origin, and each session's events in the
/// order its origin stored them; its own log (with `own` events of its own) is gapless.
fn assert_exactly_once(aggregator: &Path, publishers: &[(&str, &Path)], own: i64) {
    let mut total = own;
    for (origin, db) in publishers {
        let theirs = ids_by_session(db, None);
        let ours = ids_by_session(aggregator, Some(origin));
        assert_eq!(
            ours, theirs,
            "the aggregator holds {origin}'s sessions, in {origin}'s order"
        );
        total += count(db, "SELECT COUNT(*) FROM events");
        let sessions = count(
            aggregator,
            &format!("SELECT COUNT(*) FROM sessions WHERE origin = '{origin}'"),
        );
        assert_eq!(
            sessions as usize,
            theirs.len(),
            "{origin}'s sessions keep their origin"
        );
    }
    let conn = open_read_only(aggregator);
    assert_eq!(assert_gapless(&conn), total, "each event exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_publishers_and_an_aggregator_hold_each_event_exactly_once_in_origin_order() {
    let Some(binary) = nats_server() else { return };
    let store = tempfile::tempdir().unwrap();
    let nats = Nats::start(&binary, free_port(), store.path());
    let target = Target {
        url: nats.url(),
        stream: "HOOKLOG".into(),
        replicas: 1,
    };
    // The aggregator publishes too, to the server it consumes: only its own events go out.
    let aggregator = common::spawn_app_with(|c| {
        c.origin = "central".into();
        c.publish = Some(target.clone());
        c.subscribe = Some(Subscription {
            target: target.clone(),
            durable: "central".into(),
        });
    })
    .await;
    let mut publishers = Vec::new();
    for origin in ["a", "b", "c"] {
        let target = target.clone();
        publishers.push(
            common::spawn_app_with(|c| {
                c.origin = origin.into();
                c.publish = Some(target);
            })
            .await,
        );
    }
    // 3,000 events over 30 sessions: 10 rounds of 10 events for each of 10 sessions, each.
    for round in 0..10 {
        for (app, origin) in publishers.iter().zip(["a", "b", "c"]) {
            post(&app.client, &app.url, &events(origin, 10, round * 10, 10)).await;
        }
    }
    post(
        &aggregator.client,
        &aggregator.url,
        &events("central", 1, 0, 10),
    )
    .await;
    wait_for_events(&aggregator.db_path, 3_010).await;

    let paths: Vec<_> = publishers.iter().map(|p| p.db_path.clone()).collect();
    let origins = [("a", &*paths[0]), ("b", &*paths[1]), ("c", &*paths[2])];
    assert_exactly_once(&aggregator.db_path, &origins, 10);

    // Filters by origin.
    let page = get(
        &aggregator.client,
        &format!("{}/events?origin=b&limit=1000", aggregator.url),
    )
    .await;
    let page = page["events"].as_array().unwrap();
    assert_eq!(page.len(), 1000);
    assert!(page.iter().all(|e| e["context"]["origin"] == "b"));
    let sessions = get(
        &aggregator.client,
        &format!("{}/sessions?origin=c", aggregator.url),
    )
    .await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 10);

    // Every publisher catches up: no lag, and the aggregator published only its own 10.
    let start = Instant::now();
    for app in publishers.iter().chain([&aggregator]) {
        loop {
            let health = get(&app.client, &format!("{}/health", app.url)).await;
            if health["publish"]["lagEvents"] == 0 {
                assert_eq!(health["publish"]["lagSeconds"], 0.0);
                break;
            }
            assert!(start.elapsed() < CATCH_UP, "publish lag stays at {health}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let stats = get(&aggregator.client, &format!("{}/stats", aggregator.url)).await;
    assert_eq!(stats["publishing"]["ownEventsOnly"], true);
    assert_eq!(
        stats["publishing"]["published"], 10,
        "no event went back round: {stats}"
    );
    assert_eq!(stats["aggregating"]["refused"], 0);

    for app in publishers {
        app.stop().await;
    }
    let dir = aggregator.stop().await;
    assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_and_the_aggregator_killed_and_a_publisher_started_while_nats_is_down_lose_nothing() {
    let Some(binary) = nats_server() else { return };
    let store = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut nats = Nats::start(&binary, free_port(), store.path());
    let url = nats.url();
    let client = reqwest::Client::new();
    let serve = |name: &str, extra: Vec<String>| {
        let db = dir.path().join(format!("{name}.db"));
        let bind = format!("127.0.0.1:{}", free_port());
        let mut args = vec!["--origin".to_string(), name.to_string()];
        args.extend(extra);
        ServerProcess::start_with(&db, &bind, move |c| {
            c.args(&args);
        })
    };
    let publish = || vec!["--publish".to_string(), url.clone()];
    let subscribe = || vec!["--subscribe".to_string(), url.clone()];
    let a = serve("a", publish());
    let mut aggregator = serve("central", subscribe());

    post(&client, &a.url, &events("a", 10, 0, 30)).await;
    // NATS dies under the publisher (some of those may still be in flight).
    nats.kill();
    post(&client, &a.url, &events("a", 10, 30, 30)).await;
    // A publisher that starts while NATS is down takes events all the same.
    let b = serve("b", publish());
    post(&client, &b.url, &events("b", 10, 0, 30)).await;
    // Its lag shows, with the reason.
    let start = Instant::now();
    loop {
        let health = get(&client, &format!("{}/health", b.url)).await;
        if health["publish"]["lagEvents"] == 300 && health["publish"]["lastError"].is_string() {
            assert_eq!(
                health["ok"], true,
                "a publish lag does not make the server unhealthy"
            );
            assert_eq!(health["publish"]["link"], "failing");
            break;
        }
        assert!(start.elapsed() < CATCH_UP, "no lag shown: {health}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    nats.restart();
    post(&client, &a.url, &events("a", 10, 60, 20)).await;
    post(&client, &b.url, &events("b", 10, 30, 20)).await;
    // The aggregator dies mid-run and comes back on the same file.
    let start = Instant::now();
    while count(
        &dir.path().join("central.db"),
        "SELECT COUNT(*) FROM events",
    ) == 0
    {
        assert!(
            start.elapsed() < CATCH_UP,
            "the aggregator never started appending"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    aggregator.kill();
    post(&client, &a.url, &events("a", 10, 80, 20)).await;
    aggregator = serve("central", subscribe());
    post(&client, &b.url, &events("b", 10, 50, 20)).await;

    let central = dir.path().join("central.db");
    wait_for_events(&central, 1_700).await;
    let (a_db, b_db) = (dir.path().join("a.db"), dir.path().join("b.db"));
    assert_exactly_once(&central, &[("a", &a_db), ("b", &b_db)], 0);
    common::wait_for_search(&central).await;
    aggregator.kill();
    assert_rebuilds_to_live(&central);
}

/// Retention never prunes an event its publisher has not sent: with NATS down, a publisher
/// keeps every event past `--retain-max-events` (and `/stats` says how many wait for
/// JetStream); once NATS is up, the aggregator gets every one and the publisher prunes down to
/// its limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_keeps_every_event_until_it_is_published() {
    let Some(binary) = nats_server() else { return };
    let store = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("nats://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let serve = |name: &str, extra: &[&str]| {
        let db = dir.path().join(format!("{name}.db"));
        let bind = format!("127.0.0.1:{}", free_port());
        let mut args = vec!["--origin".to_string(), name.to_string()];
        args.extend(extra.iter().map(|a| a.to_string()));
        ServerProcess::start_with(&db, &bind, move |c| {
            c.args(&args);
        })
    };
    let a = serve("a", &["--publish", &url, "--retain-max-events", "50"]);
    let a_db = dir.path().join("a.db");
    post(&client, &a.url, &events("a", 10, 0, 30)).await;

    // 250 of the 300 are past the policy's limit; none is published, so all 300 stay.
    let start = Instant::now();
    loop {
        let stats = get(&client, &format!("{}/stats", a.url)).await;
        if stats["retention"]["unpublished"] == 250 {
            break;
        }
        assert!(
            start.elapsed() < CATCH_UP,
            "no unpublished events shown: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(&a_db, "SELECT COUNT(*) FROM events"), 300);

    // NATS comes up: the aggregator gets every event, then the publisher prunes to 50.
    let _nats = Nats::start(&binary, port, store.path());
    let _central = serve("central", &["--subscribe", &url]);
    let central = dir.path().join("central.db");
    wait_for_events(&central, 300).await;
    let sent: BTreeMap<String, Vec<String>> = (0..10)
        .map(|s| {
            let ids = (0..30).map(|k| format!("a-s{s}-e{k}")).collect();
            (format!("a-s{s}"), ids)
        })
        .collect();
    assert_eq!(ids_by_session(&central, Some("a")), sent);
    let start = Instant::now();
    while count(&a_db, "SELECT COUNT(*) FROM events") > 50 {
        assert!(start.elapsed() < CATCH_UP, "the publisher never pruned");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(&a_db, "SELECT MIN(sequence) FROM events"), 251);
    let stats = get(&client, &format!("{}/stats", a.url)).await;
    assert_eq!(stats["retention"].get("unpublished"), None, "{stats}");
}

/// The servers' view of the JetStream meta group, from each node's monitoring port (`/jsz`):
/// the meta leader's name once all three agree on one, in a cluster of 3.
async fn meta_leader(client: &reqwest::Client, monitors: &[u16]) -> Option<String> {
    let mut leaders = Vec::new();
    for port in monitors {
        let jsz: Value = client
            .get(format!("http://127.0.0.1:{port}/jsz"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        let meta = &jsz["meta_cluster"];
        if meta["cluster_size"] != 3 {
            return None;
        }
        leaders.push(
            meta["leader"]
                .as_str()
                .filter(|l| !l.is_empty())?
                .to_string(),
        );
    }
    leaders.dedup();
    (leaders.len() == 1).then(|| leaders.remove(0))
}

/// The stream's replication as JetStream reports it: its configured replicas, and the name of
/// the node leading it (`None` while there is no leader).
async fn stream_leader(urls: &[String]) -> Option<(usize, String)> {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(2))
        .max_reconnects(urls.len())
        .connect(urls.iter().map(String::as_str).collect::<Vec<_>>())
        .await
        .ok()?;
    let js = async_nats::jetstream::new(client);
    let mut stream = js.get_stream("HOOKLOG").await.ok()?;
    let info = stream.info().await.ok()?;
    let leader = info.cluster.as_ref()?.leader.clone()?;
    Some((info.config.num_replicas, leader))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_node_cluster_with_its_r3_stream_leader_killed_mid_run_loses_nothing() {
    let Some(binary) = nats_server() else { return };
    let stores = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    // Three nodes on loopback, each with its name, store, client, cluster and monitoring ports,
    // routes to all three (its own is ignored), in a config file of its own.
    let names = ["n1", "n2", "n3"];
    let ports: Vec<(u16, u16, u16)> = names
        .iter()
        .map(|_| (free_port(), free_port(), free_port()))
        .collect();
    let routes: Vec<String> = ports
        .iter()
        .map(|(_, route, _)| format!("nats-route://127.0.0.1:{route}"))
        .collect();
    let mut nodes: Vec<Nats> = names
        .iter()
        .zip(&ports)
        .map(|(name, (port, route, monitor))| {
            let store = stores.path().join(name);
            let config = stores.path().join(format!("{name}.conf"));
            std::fs::write(
                &config,
                format!(
                    "server_name: {name}\nlisten: 127.0.0.1:{port}\nhttp: 127.0.0.1:{monitor}\n\
                     jetstream {{\n  store_dir: \"{}\"\n}}\n\
                     cluster {{\n  name: hooklog\n  listen: 127.0.0.1:{route}\n  routes: [\n    {}\n  ]\n}}\n",
                    store.display(),
                    routes.join("\n    ")
                ),
            )
            .unwrap();
            Nats::start_config(&binary, *port, &config)
        })
        .collect();
    let monitors: Vec<u16> = ports.iter().map(|(_, _, m)| *m).collect();
    let start = Instant::now();
    while meta_leader(&client, &monitors).await.is_none() {
        assert!(
            start.elapsed() < CATCH_UP,
            "the cluster elected no JetStream meta leader"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let urls: Vec<String> = nodes.iter().map(Nats::url).collect();
    let all = urls.join(",");

    // Two publishers and an aggregator, each given all three nodes; the stream is R3.
    let serve = |name: &str, flag: &str| {
        let db = dir.path().join(format!("{name}.db"));
        let bind = format!("127.0.0.1:{}", free_port());
        let args = ["--origin", name, flag, &all, "--publish-replicas", "3"].map(String::from);
        ServerProcess::start_with(&db, &bind, move |c| {
            c.args(&args);
        })
    };
    let mut aggregator = serve("central", "--subscribe");
    let a = serve("a", "--publish");
    let b = serve("b", "--publish");

    // 10 sessions of each publisher, 100 events each before the kill, 50 between the kill and
    // the restart, 50 after: 4,000 events.
    for round in 0..10 {
        post(&client, &a.url, &events("a", 10, round * 10, 10)).await;
        post(&client, &b.url, &events("b", 10, round * 10, 10)).await;
    }
    let central = dir.path().join("central.db");
    let start = Instant::now();
    while count(&central, "SELECT COUNT(*) FROM events") < 200 {
        assert!(
            start.elapsed() < CATCH_UP,
            "the aggregator never started appending"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (replicas, leader) = stream_leader(&urls).await.expect("the stream has a leader");
    assert_eq!(
        replicas, 3,
        "the stream was created with --publish-replicas 3"
    );
    let killed = names.iter().position(|n| *n == leader).unwrap();
    let held = count(&central, "SELECT COUNT(*) FROM events");
    nodes[killed].kill();
    eprintln!("killed the stream leader {leader} with {held} of 2000 events on the aggregator");

    for round in 10..15 {
        post(&client, &a.url, &events("a", 10, round * 10, 10)).await;
        post(&client, &b.url, &events("b", 10, round * 10, 10)).await;
    }
    // The two left elect a new leader and take the events.
    let start = Instant::now();
    loop {
        match stream_leader(&urls).await {
            Some((_, now)) if now != leader => break,
            _ => {}
        }
        assert!(start.elapsed() < CATCH_UP, "no new stream leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_for_events(&central, 3_000).await;
    nodes[killed].restart();
    for round in 15..20 {
        post(&client, &a.url, &events("a", 10, round * 10, 10)).await;
        post(&client, &b.url, &events("b", 10, round * 10, 10)).await;
    }

    wait_for_events(&central, 4_000).await;
    let (a_db, b_db) = (dir.path().join("a.db"), dir.path().join("b.db"));
    assert_exactly_once(&central, &[("a", &a_db), ("b", &b_db)], 0);
    common::wait_for_search(&central).await;
    aggregator.kill();
    assert_rebuilds_to_live(&central);
}
