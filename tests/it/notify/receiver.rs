//! A notice receiver for the tests: a small HTTP server on 127.0.0.1:0 that records every
//! request and answers `500` to the first `failures` of them, then `200`, or holds every
//! request unanswered (`hang`); over TLS with `fixtures/tls/server.pem` (`Receiver::tls`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use std::sync::{Arc, Mutex};

/// A request the receiver got, and what it answered (`None`: held, never answered).
#[derive(Debug, Clone)]
pub struct Got {
    pub path: String,
    pub headers: HeaderMap,
    pub body: String,
    pub answered: Option<u16>,
}

impl Got {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct Script {
    failures: usize,
    hang: bool,
    got: Vec<Got>,
    failed_handshakes: usize,
}

pub struct Receiver {
    pub url: String,
    script: Arc<Mutex<Script>>,
    server: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Answers `500` to the first `failures` requests, then `200`.
    pub async fn failing(failures: usize) -> Receiver {
        Receiver::start(Script {
            failures,
            ..Script::default()
        })
        .await
    }

    /// Takes every request and never answers it.
    pub async fn hanging() -> Receiver {
        Receiver::start(Script {
            hang: true,
            ..Script::default()
        })
        .await
    }

    /// [`Receiver::failing`] over TLS, at `https://127.0.0.1:PORT`, with a certificate for
    /// `127.0.0.1` and `localhost` that `fixtures/tls/ca.pem` signed.
    pub async fn tls(failures: usize) -> Receiver {
        let script = Arc::new(Mutex::new(Script {
            failures,
            ..Script::default()
        }));
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", tcp.local_addr().unwrap());
        let listener = TlsListener {
            tcp,
            acceptor: acceptor(),
            script: script.clone(),
        };
        Receiver::serve(listener, url, script)
    }

    async fn start(script: Script) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        Receiver::serve(listener, url, Arc::new(Mutex::new(script)))
    }

    /// Answers every request on `listener` as `script` says.
    fn serve<L: axum::serve::Listener>(
        listener: L,
        url: String,
        script: Arc<Mutex<Script>>,
    ) -> Receiver
    where
        L::Addr: std::fmt::Debug,
    {
        let app = axum::Router::new()
            .fallback(take)
            .with_state(script.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            url,
            script,
            server,
        }
    }

    /// TLS handshakes that failed (the client refused the certificate, most likely).
    pub fn failed_handshakes(&self) -> usize {
        self.script.lock().unwrap().failed_handshakes
    }

    /// Answers `500` to the next `failures` requests (then `200` again).
    pub fn fail_next(&self, failures: usize) {
        self.script.lock().unwrap().failures = failures;
    }

    pub fn got(&self) -> Vec<Got> {
        self.script.lock().unwrap().got.clone()
    }

    /// The requests answered with a 2xx.
    pub fn delivered(&self) -> Vec<Got> {
        self.got()
            .into_iter()
            .filter(|g| g.answered.is_some_and(|s| (200..300).contains(&s)))
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn take(
    State(script): State<Arc<Mutex<Script>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let (status, hang) = {
        let mut script = script.lock().unwrap();
        let status = match script.failures {
            0 => StatusCode::OK,
            _ => {
                script.failures -= 1;
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        let hang = script.hang;
        script.got.push(Got {
            path: uri.path().to_string(),
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
            answered: (!hang).then_some(status.as_u16()),
        });
        (status, hang)
    };
    if hang {
        std::future::pending::<()>().await;
    }
    status
}

/// The fixture's certificate and key, for the test receiver's TLS (the ring provider, as
/// hooklog's notices use; nothing process-wide is set).
fn acceptor() -> tokio_rustls::TlsAcceptor {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio_rustls::rustls::{ServerConfig, crypto};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls");
    let chain = CertificateDer::pem_file_iter(dir.join("server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let config = ServerConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// Accepts TCP connections and completes their TLS handshake, one at a time (enough for the
/// notices' few connections), counting those that fail.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    script: Arc<Mutex<Script>>,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            match self.acceptor.accept(tcp).await {
                Ok(tls) => return (tls, addr),
                Err(_) => self.script.lock().unwrap().failed_handshakes += 1,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
