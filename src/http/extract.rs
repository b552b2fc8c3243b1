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
