//! The `Origin` check, against cross-site writes. CORS only decides whether a page may *read*
//! an answer: a page on any site can still make the browser *send* a "simple" request (a
//! `POST` with `Content-Type: text/plain`, no preflight) to `127.0.0.1:2468`, and hooklog parses
//! any body as JSON, so without this the page could append events. Browsers put `Origin` on
//! such requests; hooks, `curl` and hooklog's own clients do not. So a request whose `Origin`
//! is not one of the `--cors-origin`s is refused with `403 origin_not_allowed`, whatever its
//! method, before anything else looks at it.

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

impl Check for OriginCheck {
    fn check(&self, request: &mut Request) -> Result<(), ApiError> {
        if super::header_refused(request, header::ORIGIN, |origin| self.accepts(origin)) {
            tracing::debug!("origin not allowed");
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
}
