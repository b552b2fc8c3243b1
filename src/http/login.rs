//! The browser's way in when a token is configured: `POST /login` takes the login form
//! (`token`, and `next`, the page to go back to), checks the token, and sets the session
//! cookie (`HttpOnly; SameSite=Strict`, a digest of the token, see `auth.rs`), so the token
//! never appears in a URL, the history or a log. `POST /logout` clears it.
//!
//! Cross-site forgery: a page of another site gets no cookie sent (`SameSite=Strict`), and
//! a browser request from another origin is refused by the `Origin` check before the cookie is
//! looked at; the cookie itself counts only on requests of this server's own origin.

use super::AppState;
use super::auth::{self, COOKIE};
use super::error::ApiError;
use super::openapi::schemas;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::json;

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
        (status = 401, description = "A wrong token: the login form again.", content_type = "text/html", body = String)
    )
)]
/// `POST /login`: `303` to `next` with the session cookie, or the form again (`401`) when the
/// token is wrong. With no token configured there is nothing to log in to: `303` to `next`.
pub async fn login(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    let form = LoginForm::parse(&body)?;
    let expected = state.config.security.token.as_ref();
    if !auth::token_matches(expected, &form.token) {
        tracing::debug!("login refused");
        return Ok(crate::web::login_page(Some(&form.next)));
    }
    let cookie = expected.map(|token| {
        format!(
            "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
            auth::cookie_value(token)
        )
    });
    Ok(see_other(&form.next, cookie))
}

#[utoipa::path(
    post,
    path = "/logout",
    tag = "web",
    responses(
        (status = 303, description = "On to `/`, with the session cookie cleared.", headers(
            ("Location" = String, description = "`/`."),
            ("Set-Cookie" = String, description = "The cleared session cookie.")
        ))
    )
)]
/// `POST /logout`: `303` to `/` with the cookie cleared.
pub async fn logout() -> Response {
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
