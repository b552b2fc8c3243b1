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
use axum::handler::Handler;
use axum::http::{HeaderName, Method, Request, Uri, header};
use axum::routing::{MethodFilter, MethodRouter, on};
use error::ApiError;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{Semaphore, watch};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::TraceLayer;

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

/// One route: a method, a path template, its handler and the shape of its refusals. Built only
/// through [`at`], so the method listed is the one the handler is routed for.
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    handler: MethodRouter<AppState>,
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
    fn refusing(self, refusals: Refusals) -> Route {
        Route { refusals, ..self }
    }
}

fn at<H, T>(method: Method, path: &'static str, handler: H) -> Route
where
    H: Handler<T, AppState>,
    T: 'static,
{
    let filter = MethodFilter::try_from(method.clone()).expect("a routable method");
    Route {
        method,
        path,
        handler: on(filter, handler),
        refusals: Refusals::Api,
    }
}

/// Every route hooklog serves, in one table. The router is built from it, and the tests walk
/// it (every route but `/health` must want the token), so a route cannot be served without
/// being listed here. Every `GET` also answers `HEAD`.
pub fn routes() -> Vec<Route> {
    use Method as M;
    vec![
        at(M::GET, "/", live::root),
        at(M::GET, "/s/{id}", pages::session),
        at(M::GET, "/coordination", pages::coordination),
        at(M::GET, "/assets/{file}", pages::asset),
        at(M::POST, auth::LOGIN_PATH, login::login),
        at(M::POST, "/logout", login::logout),
        at(M::GET, "/pulse", pulse::pulse),
        at(M::GET, "/health", health::health),
        at(M::GET, "/stats", health::stats),
        at(M::GET, "/metrics", metrics::metrics),
        at(M::GET, "/openapi.json", openapi::openapi),
        at(M::GET, "/events", events::list),
        at(M::POST, "/events", events::ingest),
        at(M::GET, "/events/{id}", events::one),
        at(M::GET, "/search", search::search),
        at(M::GET, "/changes", changes::changes),
        at(M::POST, "/event", hooks::event).refusing(Refusals::Hook),
        at(M::POST, "/event/normalized", hooks::normalized),
        at(M::GET, "/sessions", sessions::list),
        at(M::GET, "/sessions/{id}", sessions::one),
        at(M::GET, "/usage", usage::usage),
        at(M::GET, "/sessions/{id}/events", streams::session),
        at(M::GET, "/sessions/{id}/export", recordings::export),
        at(M::GET, "/sessions/{id}/replay", recordings::replay),
        at(M::GET, "/sessions/{id}/projections", projections::until),
        at(M::GET, "/factory-sessions/{id}", factory::one),
        at(M::GET, "/factory-sessions/{id}/events", factory::stream),
        at(M::POST, "/factory-sessions/{id}/events", factory::ingest),
        at(
            M::GET,
            "/factory-sessions/{id}/response-events",
            responses::stream,
        ),
        at(
            M::POST,
            "/factory-sessions/{id}/response-events",
            responses::ingest,
        ),
        at(M::GET, "/factory-sessions/{id}/work", factory::work),
        at(
            M::GET,
            "/factory-sessions/{id}/dispatches",
            factory::dispatches,
        ),
        at(M::GET, "/heroes", heroes::list),
        at(M::GET, "/heroes/{id}", heroes::one),
        at(M::GET, "/missions", missions::list),
        at(M::GET, "/missions/{id}", missions::one),
        at(M::GET, "/tool-uses", missions::list_tool_uses),
        at(M::GET, "/owners", owners::list),
        at(M::POST, "/owners/acquire", owners::acquire),
        at(M::GET, "/owners/{platform}/{account}", owners::one),
        at(
            M::POST,
            "/owners/{platform}/{account}/heartbeat",
            owners::heartbeat,
        ),
        at(
            M::POST,
            "/owners/{platform}/{account}/release",
            owners::release,
        ),
        at(
            M::POST,
            "/owners/{platform}/{account}/verify-token",
            owners::verify_token,
        ),
        at(M::GET, "/claims", claims::list),
        at(M::POST, "/claims", claims::claim),
        at(M::GET, "/claims/{chat}", claims::one),
        at(M::POST, "/claims/{chat}/release", claims::release),
        at(M::GET, "/actions", claims::actions),
        at(M::GET, "/gaps", gaps::list),
        at(M::POST, "/gaps", gaps::open),
        at(M::GET, "/gaps/{id}", gaps::one),
        at(M::POST, "/gaps/{id}/close", gaps::close),
        at(M::POST, "/gaps/{id}/refuse", gaps::refuse),
        at(M::POST, "/gaps/{id}/resume", gaps::resume),
        at(
            M::GET,
            "/accounts/{platform}/{account}/behind",
            gaps::behind,
        ),
        at(M::GET, "/alerts", alerts::list),
        at(M::POST, "/alerts/{id}/ack", alerts::acknowledge),
        at(M::GET, "/permission-requests", permissions::list),
        at(M::GET, "/permission-requests/{id}", permissions::one),
        at(
            M::POST,
            "/permission-requests/{id}/expire",
            permissions::expire,
        ),
        at(M::POST, "/permission-response", permissions::respond),
        at(M::POST, "/plan/approve", permissions::approve_plan),
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
            router.route(route.path, route.handler)
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
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let route = request
                    .extensions()
                    .get::<MatchedPath>()
                    .map_or("(no route)", MatchedPath::as_str);
                tracing::debug_span!("request", method = %request.method(), route)
            }),
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
