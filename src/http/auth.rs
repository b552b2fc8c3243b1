//! Bearer-token authentication. With a token configured, every route but the open ones
//! ([`is_open`]) wants `Authorization: Bearer <token>`; a client that cannot set headers may
//! send it as `?access_token=` on a `GET` instead. The parameter is taken out of the URI before
//! the route sees it (routes refuse unknown parameters, and nothing downstream should ever see
//! or log it), whether or not a token is configured.
//!
//! A browser logs in once (`POST /login`, `http/login.rs`) and then sends the session cookie
//! that sets, [`COOKIE`]: the id of a login session (`http/web_session.rs`), random and
//! expiring, never the token or anything derived from it. The cookie counts only on requests
//! of the page's own origin (no `Origin` header, or one naming this server): a page of another
//! origin, even one `--cors-origin` allows, cannot ride on it.

use super::error::ApiError;
use super::guard::Check;
use super::web_session::WebSessions;
use crate::config::Secret;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, Uri, header};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;
use subtle::ConstantTimeEq;

/// The liveness probe answers without a token: it shows no data.
pub const OPEN_PATH: &str = "/health";
/// The login form posts here, without a token: the token is what it carries.
pub const LOGIN_PATH: &str = "/login";
/// The web view's embedded files: the same bytes in every hooklog binary, no data.
pub const ASSETS_PREFIX: &str = "/assets/";
/// The browser's session cookie, set by `POST /login`.
pub const COOKIE: &str = "hooklog_session";
const QUERY_PARAMETER: &str = "access_token";

/// Whether a request is answered without a token: `/health`, the login form's `POST`, and
/// the embedded files.
pub fn is_open(method: &Method, path: &str) -> bool {
    let read = matches!(*method, Method::GET | Method::HEAD);
    path == OPEN_PATH
        || (*method == Method::POST && path == LOGIN_PATH)
        || (read && path.starts_with(ASSETS_PREFIX))
}

/// Whether `given` is the configured token (any token when none is configured).
pub fn token_matches(expected: Option<&Secret>, given: &str) -> bool {
    match expected {
        None => true,
        Some(token) => bool::from(digest(&token.0).ct_eq(&digest(given))),
    }
}

/// Who a request was let in as: what a decision records as its decider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// No token is configured: anyone on the loopback port.
    Anyone,
    /// The bearer token (or `access_token`): a client of the API.
    Token,
    /// The web view's session cookie: someone logged in at the board.
    Login,
}

/// The expected token, kept as a SHA-256 digest (comparing digests in constant time takes the
/// same time whatever the given value's length or content), and the login sessions.
pub struct Auth {
    digest: Option<[u8; 32]>,
    sessions: Arc<WebSessions>,
}

impl Auth {
    pub fn new(token: Option<&Secret>, sessions: Arc<WebSessions>) -> Arc<Auth> {
        Arc::new(Auth {
            digest: token.map(|t| digest(&t.0)),
            sessions,
        })
    }

    fn accepts(&self, given: Option<&str>) -> bool {
        match (self.digest, given) {
            (None, _) => true,
            (Some(expected), Some(given)) => bool::from(expected.ct_eq(&digest(given))),
            (Some(_), None) => false,
        }
    }

    fn accepts_cookie(&self, given: Option<&str>) -> bool {
        given.is_some_and(|id| self.sessions.holds(id, Instant::now()))
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The guard: strips `access_token`, then lets the request through or answers `401`.
impl Check for Auth {
    fn check(&self, request: &mut Request) -> Result<(), ApiError> {
        let from_query = match *request.method() {
            Method::GET | Method::HEAD => take_query_token(request.uri_mut()),
            _ => None,
        };
        let open = is_open(request.method(), request.uri().path());
        let given = bearer(request.headers()).or(from_query);
        let cookie = match super::origin::own_origin(request) {
            true => session_cookie(request.headers()),
            false => None,
        };
        let caller = match (self.digest, given.as_deref(), cookie.as_deref()) {
            (None, _, _) => Some(Caller::Anyone),
            (Some(_), given, _) if self.accepts(given) => Some(Caller::Token),
            (Some(_), _, cookie) if self.accepts_cookie(cookie) => Some(Caller::Login),
            _ => None,
        };
        if let Some(caller) = caller {
            request.extensions_mut().insert(caller);
            Ok(())
        } else if open {
            Ok(())
        } else {
            tracing::debug!(had_token = given.is_some(), "unauthorized");
            Err(ApiError::Unauthorized)
        }
    }
}

/// `Authorization: Bearer <token>` (the scheme in any letter case).
fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

/// The session cookie's value, from any `Cookie` header.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_string())
}

/// Removes every `access_token` parameter from the URI's query, returning the last one.
fn take_query_token(uri: &mut Uri) -> Option<String> {
    let query = uri.query()?;
    let mut token = None;
    let mut kept = form_urlencoded::Serializer::new(String::new());
    let mut found = false;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == QUERY_PARAMETER {
            token = Some(value.into_owned());
            found = true;
        } else {
            kept.append_pair(&key, &value);
        }
    }
    if !found {
        return None;
    }
    let kept = kept.finish();
    let path_and_query = match kept.is_empty() {
        true => uri.path().to_string(),
        false => format!("{}?{kept}", uri.path()),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = path_and_query.parse().ok();
    if let Ok(stripped) = Uri::from_parts(parts) {
        *uri = stripped;
    }
    token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_token_is_taken_out_and_the_rest_kept() {
        let mut uri: Uri = "/events?after_sequence=3&access_token=a%2Bb&type=Stop"
            .parse()
            .unwrap();
        assert_eq!(take_query_token(&mut uri).as_deref(), Some("a+b"));
        assert_eq!(uri, "/events?after_sequence=3&type=Stop");
        let mut only: Uri = "/events?access_token=t".parse().unwrap();
        assert_eq!(take_query_token(&mut only).as_deref(), Some("t"));
        assert_eq!(only, "/events");
        let mut none: Uri = "/events?type=Stop".parse().unwrap();
        assert_eq!(take_query_token(&mut none), None);
        assert_eq!(none, "/events?type=Stop");
    }

    #[test]
    fn tokens_are_compared_whole() {
        let auth = Auth::new(Some(&Secret("s3cret".into())), Default::default());
        assert!(auth.accepts(Some("s3cret")));
        assert!(!auth.accepts(Some("s3cre")));
        assert!(!auth.accepts(Some("s3cret ")));
        assert!(!auth.accepts(None));
        assert!(Auth::new(None, Default::default()).accepts(None));
        assert!(token_matches(Some(&Secret("s3cret".into())), "s3cret"));
        assert!(!token_matches(Some(&Secret("s3cret".into())), "s3cret!"));
    }

    #[test]
    fn the_cookie_is_an_open_session_not_the_token() {
        let token = Secret("s3cret".into());
        let sessions: Arc<WebSessions> = Default::default();
        let auth = Auth::new(Some(&token), sessions.clone());
        let value = sessions.open(Instant::now());
        assert!(auth.accepts_cookie(Some(&value)));
        assert!(!auth.accepts_cookie(Some("s3cret")));
        assert!(
            !auth.accepts(Some(&value)),
            "the cookie is not a bearer token"
        );
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!("a=1; {COOKIE}={value}").parse().unwrap(),
        );
        assert_eq!(session_cookie(&headers), Some(value.clone()));
        sessions.close(&value);
        assert!(!auth.accepts_cookie(Some(&value)));
    }
}
