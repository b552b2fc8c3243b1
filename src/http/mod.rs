//! The HTTP surface: the whole route table in [`router`], one file per resource family.

pub mod alerts;
pub mod auth;
pub mod body_guard;
pub mod changes;
pub mod claims;
pub mod decide;
pub mod depth;
pub mod error;
pub mod events;
pub mod extract;
pub mod factory;
pub mod gaps;
pub mod guard;
pub mod handshake;
pub mod health;
pub mod heroes;
pub mod hooks;
pub mod host;
pub mod live;
pub mod login;
pub mod login_throttle;
pub mod metrics;
pub mod missions;
pub mod openapi;
pub mod origin;
pub mod owners;
pub mod pages;
pub mod permissions;
pub mod projections;
pub mod pulse;
pub mod rate;
pub mod recordings;
pub mod responses;
pub mod search;
pub mod server;
pub mod sessions;
pub mod streams;
pub mod unserved;
pub mod usage;
pub mod web_session;

use crate::config::Config;
use crate::store::Store;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath};
use axum::http::{HeaderName, Method, Request, Uri, header};
use axum::routing::MethodRouter;
use error::ApiError;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{Semaphore, watch};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use utoipa::openapi::RefOr;
use utoipa::openapi::path::Paths;
use utoipa::openapi::schema::Schema;

/// Handles every handler needs, behind one shared pointer: a request clones the state for
/// each middleware and for its handler, and one reference count per clone costs less than
/// one per field (the clones and drops showed in the request path's profile).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

pub struct Shared {
    pub store: Arc<Store>,
    /// Where the writer publishes committed events, for live streams.
    pub hub: crate::stream::Hub,
    pub config: Arc<Config>,
    pub started: Instant,
    /// Turns true when the server starts shutting down; open streams end on it.
    pub shutdown: watch::Receiver<bool>,
    /// One permit per event stream that may be open (`Security::max_streams`).
    pub stream_slots: Arc<Semaphore>,
    /// One permit per KiB of history that event streams may hold at once, all together
    /// (`Connections::history_budget`).
    pub history_bytes: Arc<Semaphore>,
    /// What happened to connections (`/stats`).
    pub connections: Arc<server::Counters>,
    /// What the HTTP layer counts for `GET /metrics`.
    pub metrics: metrics::HttpMetrics,
    /// How publishing to and consuming from JetStream are doing (`serve --publish`,
    /// `--subscribe`).
    pub replication: Arc<crate::jetstream::status::Replication>,
    /// The web view's login sessions (the cookies `POST /login` hands out).
    pub web_sessions: Arc<web_session::WebSessions>,
    /// Wrong tokens at `POST /login`, per client address.
    pub login_throttle: login_throttle::LoginThrottle,
}

impl AppState {
    pub fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// One route: a method, a path template, its handler, its OpenAPI description and the shape of
/// its refusals. Built only by [`route!`] from the handler's `#[utoipa::path]` annotation, so the
/// method and path served are the ones described.
pub struct Route {
    pub method: Method,
    pub path: String,
    handler: MethodRouter<AppState>,
    /// The operation as the description lists it, and the schemas it names.
    pub(crate) described: Paths,
    pub(crate) schemas: Vec<(String, RefOr<Schema>)>,
    pub refusals: Refusals,
}

/// The body a route's refusals have, whoever answers them (a guard, the method fallback, the
/// handler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusals {
    /// The shared envelope (docs/api.md, "Errors").
    Api,
    /// Seed 000's hook ingest: the envelope with `accepted: false` ([`hooks::reshape`]).
    Hook,
}

impl Route {
    /// The route `utoipa_axum::routes!` made of one annotated handler.
    fn new(
        (schemas, described, handler): utoipa_axum::router::UtoipaMethodRouter<AppState>,
    ) -> Route {
        let mut operations = described.paths.iter().flat_map(|(path, item)| {
            let methods = [
                (Method::GET, item.get.is_some()),
                (Method::POST, item.post.is_some()),
                (Method::PUT, item.put.is_some()),
                (Method::DELETE, item.delete.is_some()),
                (Method::PATCH, item.patch.is_some()),
            ];
            methods
                .into_iter()
                .filter(|(_, has)| *has)
                .map(move |(method, _)| (method, path.clone()))
        });
        let (method, path) = operations.next().expect("the handler is annotated");
        assert!(operations.next().is_none(), "one operation per handler");
        Route {
            method,
            path,
            handler,
            described,
            schemas,
            refusals: Refusals::Api,
        }
    }

    fn refusing(self, refusals: Refusals) -> Route {
        Route { refusals, ..self }
    }
}

/// The [`Route`] of a handler, from its `#[utoipa::path]` annotation.
macro_rules! route {
    ($handler:path) => {
        Route::new(utoipa_axum::routes!($handler))
    };
}

/// Every route hooklog serves, in one table, each written once: its method, path and
/// description come from the handler's annotation. The router and the OpenAPI description are
/// built from it, and the tests walk it (every route but `/health` must want the token), so a
/// route cannot be served without being listed and described here. Every `GET` also answers
/// `HEAD`.
pub fn routes() -> Vec<Route> {
    vec![
        route!(live::root),
        route!(pages::session),
        route!(pages::coordination),
        route!(pages::cost),
        route!(pages::asset),
        route!(login::login),
        route!(login::logout),
        route!(pulse::pulse),
        route!(health::health),
        route!(health::stats),
        route!(metrics::metrics),
        route!(openapi::openapi),
        route!(events::list),
        route!(events::ingest),
        route!(events::one),
        route!(search::search),
        route!(changes::changes),
        route!(hooks::event).refusing(Refusals::Hook),
        route!(hooks::normalized),
        route!(sessions::list),
        route!(sessions::one),
        route!(usage::usage),
        route!(streams::session),
        route!(recordings::export),
        route!(recordings::replay),
        route!(projections::until),
        route!(factory::one),
        route!(factory::stream),
        route!(factory::ingest),
        route!(responses::stream),
        route!(responses::ingest),
        route!(factory::work),
        route!(factory::dispatches),
        route!(heroes::list),
        route!(heroes::one),
        route!(missions::list),
        route!(missions::one),
        route!(missions::list_tool_uses),
        route!(owners::list),
        route!(owners::acquire),
        route!(owners::one),
        route!(owners::heartbeat),
        route!(owners::release),
        route!(owners::verify_token),
        route!(claims::list),
        route!(claims::claim),
        route!(claims::one),
        route!(claims::release),
        route!(claims::actions),
        route!(gaps::list),
        route!(gaps::open),
        route!(gaps::one),
        route!(gaps::close),
        route!(gaps::refuse),
        route!(gaps::resume),
        route!(gaps::behind),
        route!(alerts::list),
        route!(alerts::acknowledge),
        route!(permissions::list),
        route!(permissions::one),
        route!(permissions::expire),
        route!(permissions::respond),
        route!(permissions::approve_plan),
    ]
}

/// Every route, behind the guards. Outermost first: trace, `Host` check (on a loopback
/// `bound` address), `Origin` check, CORS (answers preflights itself), rate limit, token, then
/// the body limit, idle timeout and JSON depth, which apply as the body is read. The checks are
/// one [`guard::Checks`] layer, two when CORS sits between them. `bound` is the address the
/// listener has.
pub fn router(state: AppState, bound: SocketAddr) -> Router {
    let security = &state.config.security;
    let outer: Vec<Arc<dyn guard::Check>> = vec![
        Arc::new(guard::Stamp),
        host::HostCheck::new(bound, &security.extra_hosts),
        origin::OriginCheck::new(&security.cors_origins),
    ];
    let mut inner: Vec<Arc<dyn guard::Check>> = Vec::new();
    if let Some(limit) = security.rate_limit {
        inner.push(rate::RateLimiter::new(limit));
    }
    inner.push(auth::Auth::new(
        security.token.as_ref(),
        state.web_sessions.clone(),
    ));
    inner.push(Arc::new(body_guard::BodyLimits {
        idle_timeout: state.config.body_timeout,
        deadline: state.config.body_deadline,
        max_json_depth: security.max_json_depth,
    }));
    // The guards wrap each route; a route whose refusals have their own shape gets them
    // reshaped outside the guards, so what a guard refuses is reshaped too.
    let guarded = |router: Router<AppState>| {
        let router = router
            .method_not_allowed_fallback(method_not_allowed)
            .layer(DefaultBodyLimit::max(state.config.body_limit));
        if security.cors_origins.is_empty() {
            router.layer(guard::Checks::new([outer.clone(), inner.clone()].concat()))
        } else {
            router
                .layer(guard::Checks::new(inner.clone()))
                .layer(cors(&security.cors_origins))
                .layer(guard::Checks::new(outer.clone()))
        }
    };
    let (hooks, rest): (Vec<Route>, Vec<Route>) = routes()
        .into_iter()
        .partition(|route| route.refusals == Refusals::Hook);
    let table = |routes: Vec<Route>| {
        routes.into_iter().fold(Router::new(), |router, route| {
            router.route(&route.path, route.handler)
        })
    };
    let hooks = guarded(table(hooks)).layer(axum::middleware::map_response(hooks::reshape));
    let router = guarded(table(rest).fallback(not_found)).merge(hooks);
    router
        // Outside every guard, so their refusals are counted too.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::count_refusals,
        ))
        .layer(
            // Spans carry the method and the route's template only (`/sessions/{id}/events`):
            // paths hold ids and whatever a client typed, query strings may hold tokens,
            // bodies hold prompts and commands; none of it belongs in logs.
            // A 5xx is logged at `warn`: most are refusals by design (`503` when overloaded,
            // with `Retry-After`); a real failure (storage, a panic) is logged at `error`
            // where it happens, with its cause.
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<_>| {
                    let route = request
                        .extensions()
                        .get::<MatchedPath>()
                        .map_or("(no route)", MatchedPath::as_str);
                    tracing::debug_span!("request", method = %request.method(), route)
                })
                .on_failure(DefaultOnFailure::new().level(tracing::Level::WARN)),
        )
        .with_state(state)
}

/// Browsers at `origins` may call hooklog and read its answers (no cookies: the token is a
/// header, or `access_token` for an `EventSource`).
fn cors(origins: &[String]) -> CorsLayer {
    let origins = origins.iter().filter_map(|o| o.parse().ok());
    // A page compares the seed's identity headers with the ones it saw, and may send them.
    let identity = handshake::IDENTITY_HEADERS.map(HeaderName::from_static);
    let allow = [
        header::AUTHORIZATION,
        header::CONTENT_TYPE,
        header::ACCEPT,
        HeaderName::from_static("last-event-id"),
        HeaderName::from_static(hooks::EVENT_ID_HEADER),
    ];
    let expose = [
        header::RETRY_AFTER,
        HeaderName::from_static(streams::GENERATION_HEADER),
        HeaderName::from_static(hooks::EVENT_ID_HEADER),
        HeaderName::from_static(hooks::SEQUENCE_HEADER),
    ];
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::HEAD, Method::POST])
        .allow_headers(
            allow
                .into_iter()
                .chain(identity.clone())
                .collect::<Vec<_>>(),
        )
        .expose_headers(expose.into_iter().chain(identity).collect::<Vec<_>>())
        .max_age(std::time::Duration::from_secs(600))
}

/// No route matched: seed 000's `501` for a family of its routes hooklog does not serve, else
/// `404`.
async fn not_found(method: Method, uri: Uri) -> axum::response::Response {
    unserved::answer(&method, &uri)
}

async fn method_not_allowed() -> axum::response::Response {
    axum::response::IntoResponse::into_response(ApiError::MethodNotAllowed)
}

/// Whether the request's `name` header makes a guard refuse it: an absent header passes (the
/// guard is for browsers, which always send it), a value that is not text is refused, and any
/// other passes only if `accepts` it. The `Host` and `Origin` checks share this.
pub(crate) fn header_refused(
    request: &axum::extract::Request,
    name: axum::http::HeaderName,
    accepts: impl Fn(&str) -> bool,
) -> bool {
    match request.headers().get(name) {
        None => false,
        Some(value) => value.to_str().map_or(true, |text| !accepts(text)),
    }
}
