//! The integration tests: each module drives the real server (on `127.0.0.1:0`, with a
//! temporary database file) over HTTP and SSE, and reads the file back. One test crate, so
//! the harness in `common` and the crate itself are built and linked once.

mod agents;
mod browser;
mod common;
mod nats;

mod approvals;
mod bench_scale;
mod changes;
mod clients;
mod concurrency;
mod coordination;
mod crash;
mod factory;
mod factory_stream;
mod follow;
mod forwarder;
mod fuzz;
mod history_budget;
mod hook_edges;
mod hooks;
mod hostile;
mod import_limits;
mod ingest;
mod install_codex;
mod layers;
mod lifecycle;
mod live;
mod logs;
mod metrics;
mod notify;
mod openapi;
mod overload;
mod reads;
mod recordings;
mod refusals;
mod response_events;
mod retention;
mod scale_out;
mod search;
mod security;
mod snapshot;
mod storage;
mod stream_stress;
mod stream_trust;
mod streams;
mod tail;
mod takeover_gaps;
mod tool_outcomes;
mod transcripts;
mod usage;
mod views;
mod web;
mod web_approvals;
mod web_routes;
