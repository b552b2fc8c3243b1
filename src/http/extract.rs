//! Extractors whose rejections use our JSON envelope instead of axum's plain-text defaults.

use super::error::ApiError;
use axum::extract::{FromRequestParts, Query};
use axum::http::{Uri, request::Parts};
use serde::de::DeserializeOwned;

/// `Query<T>`, refusing a bad query string with `400 invalid_request`. A parameter given with
/// an empty value (`?cursor=`) counts as absent, as a form left blank would mean: optional
/// ones take their default, a required one is missing (docs/api.md, "Query parameters").
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        if !query.split('&').any(blank) {
            return Ok(ApiQuery(Query::try_from_uri(&parts.uri)?.0));
        }
        let given: Vec<&str> = query.split('&').filter(|p| !blank(p)).collect();
        let uri: Uri = format!("/?{}", given.join("&"))
            .parse()
            .expect("a path and the pairs of a query that parsed");
        Ok(ApiQuery(Query::try_from_uri(&uri)?.0))
    }
}

/// `name=` with nothing after the `=`.
fn blank(pair: &str) -> bool {
    pair.split_once('=')
        .is_some_and(|(_, value)| value.is_empty())
}

/// `Path<T>`, refusing a bad path parameter with `400 invalid_request`.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);
