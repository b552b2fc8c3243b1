//! The web view's files and the answers that carry them: HTML, CSS and JavaScript modules
//! embedded in the binary at build time ([`assets`]), served with a strict
//! Content-Security-Policy. The pages read the same public routes curl does; nothing here
//! touches the store. The routes that serve these answers are in `http/pages.rs` and
//! `http/login.rs`.

pub mod assets;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;

/// Scripts, styles, connections, forms: this origin only; no plugins, no framing, no
/// `<base>`. Inline scripts and `style` attributes are refused, so the pages have none.
pub const CSP: &str = "default-src 'self'; base-uri 'none'; form-action 'self'; \
                       frame-ancestors 'none'; object-src 'none'";

/// The page of every view (`/`, `/s/{id}`, `/coordination`, `/cost`): one HTML shell whose script
/// reads the URL and draws the view.
pub fn page() -> Response {
    answer(StatusCode::OK, assets::INDEX)
}

/// The login form, `401`: what a browser gets instead of a page when a token is configured
/// and it has not logged in. `again`: why the last attempt failed (a wrong token, `401`; too
/// many of them, `429` with `Retry-After`); the form is shown again, to go on to that
/// attempt's page (a path of this server) once the token is right.
pub fn login_page(again: Option<Again<'_>>) -> Response {
    let mut html = std::str::from_utf8(assets::LOGIN.bytes)
        .expect("login.html is UTF-8")
        .to_string();
    let mut status = StatusCode::UNAUTHORIZED;
    let mut retry_after = None;
    if let Some(again) = again {
        let (next, message) = match again {
            Again::WrongToken { next } => (next, "That is not this hooklog's token.".to_string()),
            Again::Wait { next, seconds } => {
                status = StatusCode::TOO_MANY_REQUESTS;
                retry_after = Some(seconds);
                let message = format!(
                    "Too many wrong tokens from this address: wait {seconds} s, then try again."
                );
                (next, message)
            }
        };
        let message = format!(r#"<p class="error" role="alert">{message}</p>"#);
        html = html.replace("<!--message-->", &message).replace(
            r#"id="next" value="/""#,
            &format!(r#"id="next" value="{}""#, escape(next)),
        );
    }
    let mut response = answer(status, assets::LOGIN);
    *response.body_mut() = Body::from(html);
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, seconds.into());
    }
    response
}

/// Why the login form is shown again, and the page the form goes on to.
pub enum Again<'a> {
    /// The token sent was not this hooklog's.
    WrongToken { next: &'a str },
    /// This address sent too many wrong tokens and must wait `seconds`.
    Wait { next: &'a str, seconds: u64 },
}

/// Text made safe inside an HTML attribute value.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An embedded file by name (`app.js`), or `None`.
pub fn asset(name: &str) -> Option<Response> {
    assets::find(name).map(|asset| answer(StatusCode::OK, asset))
}

/// Whether a request is a browser navigating to a page (`GET` or `HEAD`, HTML accepted, not
/// a WebSocket handshake): it is answered with the login form rather than JSON when it lacks
/// the token.
pub fn wants_page(method: &Method, headers: &HeaderMap) -> bool {
    let accepts_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"));
    matches!(*method, Method::GET | Method::HEAD)
        && accepts_html
        && !headers.contains_key(header::UPGRADE)
}

fn answer(status: StatusCode, asset: &'static assets::Asset) -> Response {
    let mut response = Response::new(Body::from(asset.bytes));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null` on
    // the page's own POSTs (the login form, an acknowledgement), which the Origin check
    // refuses. Nothing is sent to other origins either way.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    // The files change with the binary: ask the server each time (they are small).
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
