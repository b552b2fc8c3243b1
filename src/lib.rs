//! hooklog: the black box recorder for coding agents.
//!
//! Producers (agent hooks, adapters, orchestrators, coordination tools) post events over HTTP.
//! Every event becomes one row of an append-only SQLite log with a global `sequence` and a
//! per-session `session_sequence`, written by a single writer thread that commits in groups
//! and answers only after the commit. Projections are updated in the same transaction, and
//! committed events are published to a hub for live readers.
//!
//! Layout, from the bottom up (a module names only the ones before it; docs/architecture.md
//! draws the graph, `tests/it/layers.rs` checks it): [`event`] (the envelope), [`states`]
//! (the state enums: `states!`), [`migrations`] (the tables), [`web`] (the embedded web view's files), [`response`] (seed 003's response
//! events), [`ingest`] (wire contracts, pure), [`projection`] (derived tables),
//! [`coordination`] (seed 002's verbs), [`config`], [`store`] (SQLite: open, migrate, the
//! writer, reads, rebuild), [`stream`] (the hub and the event streams), [`follow`]
//! (transcripts), [`jetstream`] (many machines) and [`notify`] (notices of waiting agents),
//! [`http`] (routes), [`forward`] (the hook forwarder), [`bench`] (the load generators of
//! `hooklog bench`, beside the service), [`cli`] (subcommands). [`App`] ties them together
//! for `main` and tests.

pub mod bench;
pub mod cli;
pub mod config;
pub mod coordination;
pub mod event;
pub mod follow;
pub mod forward;
pub mod http;
pub mod ingest;
pub mod jetstream;
pub mod migrations;
pub mod notify;
pub mod projection;
pub mod response;
pub mod states;
pub mod store;
pub mod stream;
pub mod web;

use config::Config;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use store::{Store, StoreError};
use stream::Hub;
use tokio::net::TcpListener;

/// A hooklog with its database open and its writer running, ready to serve.
pub struct App {
    state: http::AppState,
    shutdown: tokio::sync::watch::Sender<bool>,
}

impl App {
    /// Opens (creating if needed) the database and starts the writer. Blocking file work runs
    /// on the blocking pool.
    pub async fn build(config: Config) -> Result<App, StoreError> {
        let hub = Hub::new(config.hub_capacity, config.hub_bytes);
        let store = {
            let (config, hub) = (config.clone(), hub.clone());
            tokio::task::spawn_blocking(move || Store::open(&config, hub))
                .await
                .expect("opening the store panicked")?
        };
        let (shutdown, stopping) = tokio::sync::watch::channel(false);
        let stream_slots = Arc::new(tokio::sync::Semaphore::new(config.security.max_streams));
        let history_bytes = Arc::new(tokio::sync::Semaphore::new(
            config.connections.history_budget_kib(),
        ));
        let replication = Arc::new(jetstream::status::Replication::for_config(&config));
        Ok(App {
            state: http::AppState::new(http::Shared {
                store: Arc::new(store),
                hub,
                config: Arc::new(config),
                started: Instant::now(),
                shutdown: stopping,
                stream_slots,
                history_bytes,
                connections: Default::default(),
                metrics: Default::default(),
                replication,
                web_sessions: Default::default(),
                login_throttle: Default::default(),
            }),
            shutdown,
        })
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.state.store
    }

    /// Serves until `shutdown` resolves: then stops accepting, lets in-flight requests finish,
    /// lets the writer commit what it was given, and closes the database.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let store = self.state.store.clone();
        let hub = &self.state.hub;
        let replicating =
            jetstream::start(&store, hub, &self.state.config, &self.state.replication);
        let following = self.state.config.follow_transcripts.map(|keep| {
            let roots = self.state.config.transcript_roots.clone();
            follow::start(&store, hub, keep, roots)
        });
        let config = &self.state.config;
        let public_url = match &config.notify.public_url {
            Some(url) => url.clone(),
            None => format!("http://{}", listener.local_addr()?),
        };
        let notifying = notify::start(&store, hub, &config.notify, &config.clock, &public_url);
        let drain_timeout = self.state.config.drain_timeout;
        let limits = http::server::Limits::from(&self.state.config.connections);
        let counters = self.state.connections.clone();
        let router = http::router(self.state, listener.local_addr()?);
        let stopping = self.shutdown;
        let mut begun = stopping.subscribe();
        let graceful = http::server::serve(listener, router, limits, counters, async move {
            shutdown.await;
            // Open event streams end on this, so they do not hold the shutdown open.
            let _ = stopping.send(true);
        });
        // A client that never finishes its request must not keep hooklog up forever: after
        // the drain timeout the remaining connections are dropped and the store still closes.
        let overdue = async move {
            let _ = begun.wait_for(|stopping| *stopping).await;
            tokio::time::sleep(drain_timeout).await;
        };
        tokio::select! {
            () = graceful => {}
            () = overdue => {
                tracing::warn!(?drain_timeout, "connections still open after the drain timeout; closing them");
            }
        }
        // What they were doing is safe to drop: an event published but not recorded is
        // published again (a duplicate), a message appended but not acknowledged is delivered
        // again (a duplicate too), a notice whose `notice_sent` is not recorded is sent again
        // after the next start.
        for task in replicating.into_iter().chain(following).chain(notifying) {
            task.abort();
        }
        store.close().await;
        Ok(())
    }
}
