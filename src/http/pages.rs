//! The web view's pages and files: `/s/{id}` (a session), `/coordination` and `/cost` answer the same
//! HTML shell as `GET /` (the board); its script draws the view the URL names.
//! `/assets/{file}` answers the embedded files. Pages take no query string: a view's state
//! (filters, the event shown) lives in the URL's fragment, which never reaches the server.

use super::error::ApiError;
use super::extract::ApiPath;
use super::openapi::schemas;
use axum::http::Uri;
use axum::response::Response;

#[utoipa::path(
    get,
    path = "/s/{id}",
    tag = "web",
    params(("id" = String, Path, description = "The session id.")),
    responses(
        (status = 200, description = "The web view's page (its script draws the session).", content_type = "text/html", body = String),
        (status = 400, description = "A query string: a page takes none.", body = schemas::ErrorBody)
    )
)]
/// `GET /s/{id}`: a session's timeline and replay.
pub async fn session(ApiPath(_id): ApiPath<String>, uri: Uri) -> Result<Response, ApiError> {
    no_query(&uri)?;
    Ok(crate::web::page())
}

#[utoipa::path(
    get,
    path = "/coordination",
    tag = "web",
    responses(
        (status = 200, description = "The web view's page (its script draws the coordination view).", content_type = "text/html", body = String),
        (status = 400, description = "A query string: a page takes none.", body = schemas::ErrorBody)
    )
)]
/// `GET /coordination`: alerts, watcher owners, claims and gaps.
pub async fn coordination(uri: Uri) -> Result<Response, ApiError> {
    no_query(&uri)?;
    Ok(crate::web::page())
}

#[utoipa::path(
    get,
    path = "/cost",
    tag = "web",
    responses(
        (status = 200, description = "The web view's page (its script draws cost and tokens by day and by model).", content_type = "text/html", body = String),
        (status = 400, description = "A query string: a page takes none.", body = schemas::ErrorBody)
    )
)]
/// `GET /cost`: cost and tokens by day and by model, from `GET /usage`.
pub async fn cost(uri: Uri) -> Result<Response, ApiError> {
    no_query(&uri)?;
    Ok(crate::web::page())
}

#[utoipa::path(
    get,
    path = "/assets/{file}",
    tag = "web",
    security(()),
    params(("file" = String, Path, description = "An embedded file's name (`app.js`).")),
    responses(
        (status = 200, description = "The file, with its content type.", content(
            (String = "text/css"),
            (String = "text/javascript"),
            (String = "image/svg+xml")
        )),
        (status = 404, description = "No such file.", body = schemas::ErrorBody)
    )
)]
/// `GET /assets/{file}`: the web view's embedded files, open without the token.
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
