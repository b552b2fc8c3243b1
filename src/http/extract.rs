//! Extractors whose rejections use our JSON envelope instead of axum's plain-text defaults.

use super::error::ApiError;
use axum::extract::FromRequestParts;

/// `Query<T>`, refusing a bad query string with `400 invalid_request`.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// `Path<T>`, refusing a bad path parameter with `400 invalid_request`.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

/// For a query parameter that must parse (a time, an age, a cursor, an offset): given with an
/// empty value (`?since=`), it counts as absent, as a form left blank would mean
/// (docs/api.md, "Query parameters"). Other parameters are taken as given.
pub fn blank_is_absent<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value: Option<String> = serde::Deserialize::deserialize(deserializer)?;
    Ok(value.filter(|v| !v.is_empty()))
}
