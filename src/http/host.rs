//! The `Host` check, a defence against DNS rebinding: a web page whose own host name has been
//! pointed at 127.0.0.1 can make the browser send requests to hooklog, but they carry the
//! page's host name. On a loopback bind, only loopback names are accepted (`localhost`,
//! `127.0.0.1`, `[::1]`, the bound address, and any `--allow-host`), with any port (a port
//! forward names its own). A request target in absolute form (`GET http://name/ HTTP/1.1`)
//! names its authority there, and that name is checked the same way.
//! On a non-loopback bind the names a client may use are unknown, so there is no name check
//! there: the token (required there) is the defence.
//!
//! On every bind, `Host` itself must be well-formed as HTTP/1.1 requires (RFC 9112, 3.2): an
//! HTTP/1.1 request without one, or with more than one, is a `400`. (HTTP/1.0 has no `Host`.)

use super::error::ApiError;
use super::guard::Check;
use axum::extract::Request;
use axum::http::{Version, header};
use std::net::SocketAddr;
use std::sync::Arc;

pub struct HostCheck {
    /// Lower-case host names without port; `None`: no check.
    names: Option<Vec<String>>,
}

impl HostCheck {
    pub fn new(bound: SocketAddr, extra: &[String]) -> Arc<HostCheck> {
        let names = bound.ip().is_loopback().then(|| {
            let ip = match bound {
                SocketAddr::V4(a) => a.ip().to_string(),
                SocketAddr::V6(a) => format!("[{}]", a.ip()),
            };
            let mut names: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
                .into_iter()
                .map(str::to_string)
                .chain([ip])
                .chain(extra.iter().map(|h| h.to_ascii_lowercase()))
                .collect();
            names.dedup();
            names
        });
        Arc::new(HostCheck { names })
    }

    /// Whether a `Host` header value names this server.
    pub fn accepts(&self, host: &str) -> bool {
        let Some(names) = &self.names else {
            return true;
        };
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = split_port(&host);
        // Any port: the name is what a rebinding page cannot fake, and a port forward (`ssh -L
        // 9000:localhost:2468`, a local proxy) legitimately names its own port.
        let port_ok = port.is_none_or(|port| port.parse::<u16>().is_ok());
        port_ok && names.iter().any(|n| n == name)
    }
}

/// `name:port` -> (`name`, `port`); an IPv6 literal keeps its brackets.
fn split_port(host: &str) -> (&str, Option<&str>) {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => {
                let (name, rest) = host.split_at(end + 1);
                (name, rest.strip_prefix(':'))
            }
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    }
}

impl Check for HostCheck {
    fn check(&self, request: &mut Request) -> Result<(), ApiError> {
        match request.headers().get_all(header::HOST).iter().count() {
            0 if request.version() == Version::HTTP_11 => {
                return Err(ApiError::invalid(
                    "an HTTP/1.1 request must have a Host header",
                ));
            }
            0 | 1 => {}
            _ => {
                return Err(ApiError::invalid(
                    "a request must have one Host header, not several",
                ));
            }
        }
        if let Some(authority) = request.uri().authority()
            && !self.accepts(authority.as_str())
        {
            tracing::debug!("request target names a host that is not allowed");
            return Err(ApiError::HostNotAllowed);
        }
        if super::header_refused(request, header::HOST, |host| self.accepts(host)) {
            tracing::debug!("host not allowed");
            return Err(ApiError::HostNotAllowed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_with_any_port_or_none_pass() {
        let check = HostCheck::new("127.0.0.1:2468".parse().unwrap(), &["box.local".into()]);
        for ok in [
            "127.0.0.1:2468",
            "localhost:2468",
            "LOCALHOST",
            "[::1]:2468",
            "[::1]",
            "box.local:2468",
            "127.0.0.1:80",
            "[::1]:1",
        ] {
            assert!(check.accepts(ok), "{ok}");
        }
        for refused in [
            "evil.example:2468",
            "localhost:x",
            "localhost:99999",
            "127.0.0.1.evil.example",
            "",
        ] {
            assert!(!check.accepts(refused), "{refused}");
        }
    }

    #[test]
    fn a_non_loopback_bind_has_no_check() {
        let check = HostCheck::new("0.0.0.0:2468".parse().unwrap(), &[]);
        assert!(check.accepts("anything:1"));
    }
}
