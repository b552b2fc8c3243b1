//! The browser's way in when a token is configured: `POST /login` takes the login form
//! (`token`, and `next`, the page to go back to), checks the token, and sets the session
//! cookie (`HttpOnly; SameSite=Strict`, the id of a new login session that lasts a day, see
//! `web_session.rs`), so the token never appears in a URL, the history, a log or the browser.
//! `POST /logout` ends the session and clears the cookie. Wrong tokens are throttled per
//! client address (`login_throttle.rs`).
//!
//! Cross-site forgery: a page of another site gets no cookie sent (`SameSite=Strict`), and
//! a browser request from another origin is refused by the `Origin` check before the cookie is
//! looked at; the cookie itself counts only on requests of this server's own origin.

use super::AppState;
use super::auth::{self, COOKIE};
use super::error::ApiError;
use super::openapi::schemas;
use super::web_session;
use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Instant;

/// The login form's fields.
struct LoginForm {
    token: String,
    next: String,
}

/// The login form as the description gives it (`application/x-www-form-urlencoded`);
/// [`LoginForm::parse`] reads it.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct LoginFields {
    /// The token hooklog was started with.
    #[schema(min_length = 1)]
    token: String,
    /// The page to go on to (a path of this server; anything else goes to `/`).
    next: Option<String>,
}

impl LoginForm {
    fn parse(body: &[u8]) -> Result<LoginForm, ApiError> {
        let (mut token, mut next) = (None, None);
        for (key, value) in form_urlencoded::parse(body) {
            match &*key {
                "token" => token = Some(value.into_owned()),
                "next" => next = Some(value.into_owned()),
                other => {
                    return Err(ApiError::Invalid(crate::ingest::InvalidRequest::new(
                        "the login form takes token and next",
                        json!({"unknownFields": [other], "allowedFields": ["token", "next"]}),
                    )));
                }
            }
        }
        let token = token
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::invalid("the login form wants a token"))?;
        Ok(LoginForm {
            token,
            next: local_path(next.as_deref()),
        })
    }
}

/// `next` if it is a path of this server (`/s/abc`), else `/`: a login must not send the
/// browser to another site.
fn local_path(next: Option<&str>) -> String {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.contains('\\')
                && !path.chars().any(char::is_control) =>
        {
            path.to_string()
        }
        _ => "/".to_string(),
    }
}

#[utoipa::path(
    post,
    path = "/login",
    tag = "web",
    security(()),
    request_body(content = LoginFields, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "The token is right (or none is configured): on to `next`, with the session cookie.", headers(
            ("Location" = String, description = "`next`, or `/`."),
            ("Set-Cookie" = String, description = "The session cookie (when a token is configured).")
        )),
        (status = 400, description = "No token, or a field other than token and next.", body = schemas::ErrorBody),
        (status = 401, description = "A wrong token: the login form again.", content_type = "text/html", body = String),
        (status = 429, description = "Five wrong tokens in a row from this address: the login form again, saying how long to wait; the token is not looked at.", content_type = "text/html", body = String, headers(
            ("Retry-After" = u64, description = "Seconds until this address may try again.")
        ))
    )
)]
/// `POST /login`: `303` to `next` with a new session's cookie, or the form again when the
/// token is wrong (`401`) or this address must wait after wrong ones (`429`). With no token
/// configured there is nothing to log in to: `303` to `next`.
pub async fn login(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    let form = LoginForm::parse(&body)?;
    let Some(expected) = state.config.security.token.as_ref() else {
        return Ok(see_other(&form.next, None));
    };
    let client = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.0.ip());
    let now = Instant::now();
    if let Err(wait) = state.login_throttle.check(client, now) {
        tracing::debug!(%client, "login throttled");
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        return Ok(crate::web::login_page(Some(crate::web::Again::Wait {
            next: &form.next,
            seconds,
        })));
    }
    if !auth::token_matches(Some(expected), &form.token) {
        tracing::debug!(%client, "login refused");
        state.login_throttle.failed(client, now);
        return Ok(crate::web::login_page(Some(
            crate::web::Again::WrongToken { next: &form.next },
        )));
    }
    state.login_throttle.succeeded(client);
    let id = state.web_sessions.open(now);
    let cookie = format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        web_session::LIFETIME.as_secs()
    );
    Ok(see_other(&form.next, Some(cookie)))
}

#[utoipa::path(
    post,
    path = "/logout",
    tag = "web",
    responses(
        (status = 303, description = "On to `/`, with the session ended and its cookie cleared.", headers(
            ("Location" = String, description = "`/`."),
            ("Set-Cookie" = String, description = "The cleared session cookie.")
        ))
    )
)]
/// `POST /logout`: ends the session the cookie names (it no longer lets anyone in), and
/// answers `303` to `/` with the cookie cleared.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(id) = auth::session_cookie(&headers) {
        state.web_sessions.close(&id);
    }
    let cleared = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    see_other("/", Some(cleared))
}

fn see_other(location: &str, cookie: Option<String>) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, location);
    }
    if let Some(cookie) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_this_server() {
        assert_eq!(local_path(Some("/s/abc#e3")), "/s/abc#e3");
        for away in [
            "//evil.example/",
            "https://evil.example/",
            "/\\evil",
            "",
            "s/abc",
        ] {
            assert_eq!(local_path(Some(away)), "/", "{away}");
        }
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn the_form_wants_a_token_and_nothing_else() {
        let form = LoginForm::parse(b"token=a%2Bb&next=%2Fs%2Fx").unwrap();
        assert_eq!((form.token.as_str(), form.next.as_str()), ("a+b", "/s/x"));
        assert!(LoginForm::parse(b"{}").is_err());
        assert!(LoginForm::parse(b"token=").is_err());
        assert!(LoginForm::parse(b"token=a&admin=1").is_err());
    }
}
