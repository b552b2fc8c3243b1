//! The `Origin` check, against cross-site writes. CORS only decides whether a page may *read*
//! an answer: a page on any site can still make the browser *send* a "simple" request (a
//! `POST` with `Content-Type: text/plain`, no preflight) to `127.0.0.1:2468`, and hooklog parses
//! any body as JSON, so without this the page could append events. Browsers put `Origin` on
//! such requests; hooks, `curl` and hooklog's own clients do not. So a request whose `Origin`
//! is neither this server's own (the web view's pages post their login form and
//! acknowledgements with it) nor one of the `--cors-origin`s is refused with
//! `403 origin_not_allowed`, whatever its method, before anything else looks at it.
//!
//! A page can also make the browser send a *read* that carries no `Origin` at all (an `<img>`,
//! a `no-cors` fetch): it cannot see the answer, but the request runs (an expensive search,
//! say). Browsers mark where every request comes from (`Sec-Fetch-Site`), so a request marked
//! `cross-site`, or `same-site` (another port of the same host), without an allowed `Origin`
//! is refused with the same `403`, on every route but `/health`. A top-level navigation (a
//! link followed: `Sec-Fetch-Mode: navigate`, `Sec-Fetch-Dest: document`, `GET`) still passes:
//! the page that made it cannot read it, and it is how a notice's link opens the board.
//!
//! "This server's own" is `http://` and the request's `Host`: on a loopback bind the `Host`
//! check has already refused a name that is not this server's, so a DNS-rebinding page (whose
//! origin names its own host) is refused there; on a non-loopback bind the token is required,
//! and the session cookie belongs to the name the user logged in on.

use super::error::ApiError;
use super::guard::Check;
use axum::extract::Request;
use axum::http::header;
use std::sync::Arc;

pub struct OriginCheck {
    allowed: Vec<String>,
}

impl OriginCheck {
    pub fn new(allowed: &[String]) -> Arc<OriginCheck> {
        Arc::new(OriginCheck {
            allowed: allowed
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        })
    }

    fn accepts(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        self.allowed.contains(&origin)
    }
}

/// Whether the request comes from this server's own pages: no `Origin` header (not a
/// cross-origin browser request), or one that is `http://` and the `Host` it was sent to.
pub fn own_origin(request: &Request) -> bool {
    match request.headers().get(header::ORIGIN) {
        None => true,
        Some(origin) => origin
            .to_str()
            .is_ok_and(|origin| same_origin(origin, request)),
    }
}

fn same_origin(origin: &str, request: &Request) -> bool {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    let origin = origin.trim_end_matches('/');
    match (host, origin.get(..7)) {
        (Some(host), Some(scheme)) if scheme.eq_ignore_ascii_case("http://") => {
            origin[7..].eq_ignore_ascii_case(host.trim())
        }
        _ => false,
    }
}

/// Whether a browser says another site's page (or another port's) sent this request, with no
/// `Origin` the check above let through, and it is not a link followed nor `/health`.
fn from_another_site(request: &Request) -> bool {
    let fetch = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
    };
    let site = fetch("sec-fetch-site");
    if !matches!(site.as_deref(), Some("cross-site" | "same-site")) {
        return false;
    }
    if request.headers().contains_key(header::ORIGIN) || request.uri().path() == "/health" {
        return false;
    }
    let followed_link = request.method() == axum::http::Method::GET
        && fetch("sec-fetch-mode").as_deref() == Some("navigate")
        && fetch("sec-fetch-dest").as_deref() == Some("document");
    !followed_link
}

impl Check for OriginCheck {
    fn check(&self, request: &mut Request) -> Result<(), ApiError> {
        let allowed = |origin: &str| self.accepts(origin) || same_origin(origin, request);
        if super::header_refused(request, header::ORIGIN, allowed) {
            tracing::debug!("origin not allowed");
            return Err(ApiError::OriginNotAllowed);
        }
        if from_another_site(request) {
            tracing::debug!("a read another site's page made");
            return Err(ApiError::OriginNotAllowed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_configured_origins_pass() {
        let check = OriginCheck::new(&["http://localhost:5173".into()]);
        assert!(check.accepts("http://localhost:5173"));
        assert!(check.accepts("HTTP://LOCALHOST:5173/"));
        assert!(!check.accepts("http://localhost:5174"));
        assert!(!check.accepts("null"));
        assert!(!OriginCheck::new(&[]).accepts("http://localhost:5173"));
    }

    #[test]
    fn reads_another_sites_page_makes_are_refused_but_links_and_health() {
        let request = |path: &str, headers: &[(&str, &str)]| {
            let mut builder = Request::builder()
                .uri(path)
                .header(header::HOST, "127.0.0.1:2468");
            for (name, value) in headers {
                builder = builder.header(*name, *value);
            }
            builder.body(axum::body::Body::empty()).unwrap()
        };
        let check = OriginCheck::new(&["http://localhost:5173".into()]);
        let img = [
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "no-cors"),
            ("sec-fetch-dest", "image"),
        ];
        assert!(check.check(&mut request("/search?q=a*", &img)).is_err());
        let other_port = [
            ("sec-fetch-site", "same-site"),
            ("sec-fetch-mode", "no-cors"),
        ];
        assert!(check.check(&mut request("/events", &other_port)).is_err());
        assert!(check.check(&mut request("/health", &img)).is_ok());
        let link = [
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-dest", "document"),
        ];
        assert!(check.check(&mut request("/sessions/s1", &link)).is_ok());
        let framed = [
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-dest", "iframe"),
        ];
        assert!(check.check(&mut request("/", &framed)).is_err());
        let allowed = [
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "cors"),
            ("origin", "http://localhost:5173"),
        ];
        assert!(check.check(&mut request("/events", &allowed)).is_ok());
        for own in ["same-origin", "none"] {
            let mine = [("sec-fetch-site", own)];
            assert!(check.check(&mut request("/events", &mine)).is_ok(), "{own}");
        }
        assert!(check.check(&mut request("/events", &[])).is_ok(), "curl");
    }

    #[test]
    fn the_servers_own_origin_passes() {
        let request = |origin: &str| {
            Request::builder()
                .uri("/alerts/1/ack")
                .header(header::HOST, "127.0.0.1:2468")
                .header(header::ORIGIN, origin)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        let check = OriginCheck::new(&[]);
        for own in ["http://127.0.0.1:2468", "HTTP://127.0.0.1:2468/"] {
            assert!(check.check(&mut request(own)).is_ok(), "{own}");
            assert!(own_origin(&request(own)));
        }
        for other in [
            "http://127.0.0.1:2469",
            "https://127.0.0.1:2468",
            "null",
            "http://evil.example",
        ] {
            assert!(check.check(&mut request(other)).is_err(), "{other}");
            assert!(!own_origin(&request(other)));
        }
    }
}
