//! The notices' HTTP client: one POST per attempt to an `http://` or `https://` target, through
//! hyper-util's client over hyper-rustls, with the TLS configuration of [`super::tls`]. The
//! crate's `reqwest`, built without TLS, is left as it is. No redirect is followed, no proxy is
//! used, no connection is kept from one attempt to the next. Errors never name the URL: it is a
//! secret.

use super::body::Request;
use super::tls;
use base64::Engine;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::{self, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use percent_encoding::percent_decode_str;
use reqwest::Url;
use std::error::Error;
use std::path::Path;
use std::time::Duration;

/// Posts notices: `timeout` bounds each attempt, connecting and TLS included.
pub struct Client {
    http: legacy::Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl Client {
    /// A client for targets that include an `https` one when `https`, trusting the system's
    /// roots and `ca`'s certificates; without, no root is loaded and TLS trusts nothing.
    pub fn new(https: bool, ca: Option<&Path>, timeout: Duration) -> Result<Client, String> {
        let config = if https {
            let (config, roots) = tls::config(ca)?;
            let (system, notify_ca) = (roots.system, roots.extra);
            tracing::info!(system, notify_ca, "root certificates for https notices");
            config
        } else {
            tls::trusting(rustls::RootCertStore::empty())?
        };
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let http = legacy::Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector);
        Ok(Client { http, timeout })
    }

    /// POSTs `request` to `url`: the answer's status, or why there is none.
    pub async fn post(&self, url: &str, request: &Request) -> Result<u16, String> {
        let request = http_request(url, request)?;
        match tokio::time::timeout(self.timeout, self.http.request(request)).await {
            Ok(Ok(answer)) => Ok(answer.status().as_u16()),
            Ok(Err(error)) => Err(describe(&error)),
            Err(_) => Err("timed out".to_string()),
        }
    }
}

/// The request to `url` without its user: that (and its password) goes as Basic authorization,
/// as most HTTP clients do (ntfy's access control: `https://user:pass@ntfy.lan/topic`).
fn http_request(url: &str, request: &Request) -> Result<hyper::Request<Full<Bytes>>, String> {
    let mut url = Url::parse(url).map_err(|_| "the target is not a URL".to_string())?;
    let mut builder = hyper::Request::post("/").header(CONTENT_TYPE, request.content_type);
    if !url.username().is_empty() || url.password().is_some() {
        let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        let password = url.password().map(decode).unwrap_or_default();
        let pair = format!("{}:{password}", decode(url.username()));
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        let mut value = HeaderValue::try_from(format!("Basic {encoded}"))
            .map_err(|_| "the target's user is not a header value".to_string())?;
        value.set_sensitive(true);
        builder = builder.header(AUTHORIZATION, value);
        let _ = (url.set_username(""), url.set_password(None));
    }
    url.set_fragment(None);
    for (name, value) in &request.headers {
        builder = builder.header(*name, value);
    }
    builder
        .uri(url.as_str())
        .body(Full::new(Bytes::from(request.body.clone())))
        .map_err(|e| format!("making the request: {e}"))
}

/// Why an attempt got no answer, in at most 300 characters (it is stored in `notice_failed`).
fn describe(error: &legacy::Error) -> String {
    cause(error).chars().take(300).collect()
}

/// A refused certificate as `TLS: …`, else the causes hyper and the connector give
/// (`tcp connect error: Connection refused …`), none of which names the URL.
fn cause(error: &legacy::Error) -> String {
    let causes: Vec<_> = std::iter::successors(error.source(), wrapped).collect();
    if let Some(tls) = causes.iter().find_map(|e| e.downcast_ref()) {
        return format!("TLS: {}", tls as &rustls::Error);
    }
    let mut text: Vec<_> = causes.iter().map(ToString::to_string).collect();
    text.dedup();
    match text.is_empty() {
        true => error.to_string(),
        false => text.join(": "),
    }
}

/// The error `error` wraps: an io::Error's source() skips it, get_ref() is it.
fn wrapped<'a>(&error: &&'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    match error.downcast_ref::<std::io::Error>() {
        Some(io) => io.get_ref().map(|e| e as _),
        None => error.source(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn an_attempt_gives_the_status_unfollowed_or_why_there_is_none_without_the_url() {
        let client = Client::new(false, None, Duration::from_millis(500)).unwrap();
        let request = Request {
            content_type: "text/plain",
            headers: vec![],
            body: "b".into(),
        };
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/sekrit", tcp.local_addr().unwrap());
        let receiver = tokio::spawn(async move {
            let (mut first, _) = tcp.accept().await.unwrap();
            let _ = first.read(&mut [0; 4096]).await.unwrap();
            let redirect = "HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n";
            first.write_all(redirect.as_bytes()).await.unwrap();
            let _held = tcp.accept().await.unwrap();
            std::future::pending::<()>().await
        });
        assert_eq!(client.post(&url, &request).await, Ok(302));
        assert_eq!(client.post(&url, &request).await, Err("timed out".into()));
        receiver.abort();
        let _ = receiver.await; // the listener is closed
        let refused = client.post(&url, &request).await.unwrap_err();
        assert!(
            refused.starts_with("tcp connect error: Connection refused"),
            "{refused}"
        );
    }
}
