//! The web view's pages and files: `/s/{id}` (a session) and `/coordination` answer the same
//! HTML shell as `GET /` (the board); its script draws the view the URL names.
//! `/assets/{file}` answers the embedded files. Pages take no query string: a view's state
//! (filters, the event shown) lives in the URL's fragment, which never reaches the server.

use super::error::ApiError;
use super::extract::ApiPath;
use axum::http::Uri;
use axum::response::Response;

/// `GET /s/{id}`: a session's timeline and replay.
pub async fn session(ApiPath(_id): ApiPath<String>, uri: Uri) -> Result<Response, ApiError> {
    no_query(&uri)?;
    Ok(crate::web::page())
}

/// `GET /coordination`: alerts, watcher owners, claims and gaps.
pub async fn coordination(uri: Uri) -> Result<Response, ApiError> {
    no_query(&uri)?;
    Ok(crate::web::page())
}

/// `GET /assets/{file}`.
pub async fn asset(ApiPath(name): ApiPath<String>, uri: Uri) -> Result<Response, ApiError> {
    crate::web::asset(&name).ok_or(ApiError::NotFound {
        path: Some(uri.path().to_string()),
    })
}

fn no_query(uri: &Uri) -> Result<(), ApiError> {
    match uri.query() {
        Some(query) if !query.is_empty() => Err(ApiError::invalid(
            "a page takes no query parameters (its state is in the URL's #fragment)",
        )),
        _ => Ok(()),
    }
}
