//! Bearer-token authentication. With a token configured, every route but `/health` wants
//! `Authorization: Bearer <token>`; a browser's `EventSource`, which cannot set headers, may
//! send it as `?access_token=` on a `GET` instead. The parameter is taken out of the URI before
//! the route sees it (routes refuse unknown parameters, and nothing downstream should ever see
//! or log it), whether or not a token is configured.

use super::error::ApiError;
use super::guard::Check;
use crate::config::Secret;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, Uri, header};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The one route that answers without a token: a liveness probe shows no data.
pub const OPEN_PATH: &str = "/health";
const QUERY_PARAMETER: &str = "access_token";

/// The expected token, kept as its SHA-256 digest: comparing digests in constant time takes
/// the same time whatever the given token's length or content.
pub struct Auth {
    digest: Option<[u8; 32]>,
}

impl Auth {
    pub fn new(token: Option<&Secret>) -> Arc<Auth> {
        Arc::new(Auth {
            digest: token.map(|t| digest(&t.0)),
        })
    }

    fn accepts(&self, given: Option<&str>) -> bool {
        match (self.digest, given) {
            (None, _) => true,
            (Some(expected), Some(given)) => bool::from(expected.ct_eq(&digest(given))),
            (Some(_), None) => false,
        }
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
        let open = request.uri().path() == OPEN_PATH;
        let given = bearer(request.headers()).or(from_query);
        if open || self.accepts(given.as_deref()) {
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
        let auth = Auth::new(Some(&Secret("s3cret".into())));
        assert!(auth.accepts(Some("s3cret")));
        assert!(!auth.accepts(Some("s3cre")));
        assert!(!auth.accepts(Some("s3cret ")));
        assert!(!auth.accepts(None));
        assert!(Auth::new(None).accepts(None));
    }
}
