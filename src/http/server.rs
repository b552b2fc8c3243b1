//! Accepting connections and serving HTTP/1.1 on them, under limits a client cannot argue
//! with (docs/security.md, "Connections"):
//!
//! - **A request's head** must arrive within `header_timeout`: counted from the connection's
//!   start, and on a kept-alive connection from the end of the previous answer (hyper's header
//!   read timeout), so a socket that sends nothing, half a request line, or idles after an
//!   answer is closed.
//! - **An answer must be taken**: a connection whose peer accepts no byte of it for
//!   `stall_timeout` (its receive window stays full) is closed ([`Guarded`]). This is what ends
//!   an event stream whose client stopped reading, and frees what was waiting to be sent.
//! - **At most `max_connections`** are open at once. One more is accepted, answered `503`
//!   with `Retry-After`, and closed: a clear refusal rather than `accept` failing on the
//!   open-file limit. A connection upgraded to a WebSocket keeps its place for the socket's
//!   life ([`Place`]), and WebSockets may take all places but the last [`reserve`]: those are
//!   kept for plain requests, so `/health` still answers when WebSockets are refused.
//!
//! Each connection runs on its own task; on shutdown, each finishes the request in hand and
//! closes (hyper's graceful shutdown), and [`serve`] returns when all have.

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Sleep;
use tower::Service;

/// The limits [`serve`] keeps.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_timeout: Duration,
    pub stall_timeout: Duration,
    pub max_connections: usize,
}

/// The async runtime that answers HTTP, on `workers` threads (`serve --workers`).
pub fn runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
}

impl From<&crate::config::Connections> for Limits {
    fn from(c: &crate::config::Connections) -> Limits {
        Limits {
            header_timeout: c.header_timeout,
            stall_timeout: c.stall_timeout,
            max_connections: c.max_connections,
        }
    }
}

/// What happened to connections, for `/stats`.
#[derive(Debug, Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub open: AtomicU64,
    /// Refused with a `503` because `max_connections` were open.
    pub refused: AtomicU64,
    /// Closed because the peer accepted no byte for `stall_timeout`.
    pub stalled: AtomicU64,
}

#[derive(Debug, Clone, Copy, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CountersSnapshot {
    pub accepted: u64,
    pub open: u64,
    pub refused: u64,
    pub closed_for_stalling: u64,
}

impl Counters {
    pub fn snapshot(&self) -> CountersSnapshot {
        CountersSnapshot {
            accepted: self.accepted.load(Ordering::Relaxed),
            open: self.open.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            closed_for_stalling: self.stalled.load(Ordering::Relaxed),
        }
    }
}

/// The answer to a connection past `max_connections`: sent whole, then the socket is closed.
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 94\r\n\r\n{\"error\":\"too_many_connections\",\"message\":\"hooklog has as many connections open as it allows\"}";
/// How long a refused connection gets to take its `503`.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);
/// The pause after `accept` fails (out of file descriptors, say) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `router` on `listener` until `shutdown` resolves and every connection has closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    counters: Arc<Counters>,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let max_websockets = limits.max_connections - reserve(limits.max_connections);
    let websockets = Arc::new(Semaphore::new(max_websockets));
    // Connections watch `stopping` for the signal, and hold `closed` until they end: when every
    // clone of it is dropped, all are gone.
    let (stop, stopping) = watch::channel(false);
    let (closed, all_closed) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; trying again");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        // TCP_NODELAY: a response or an SSE chunk goes out when written, not held back by
        // Nagle's algorithm until the previous segment is acknowledged (with delayed ACKs, up
        // to 40 ms on a stream's last partial segment).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a connection");
        }
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(refuse(stream));
            continue;
        };
        counters.open.fetch_add(1, Ordering::Relaxed);
        let place = Place {
            held: Arc::new(Held {
                _slot: slot,
                _closed: closed.clone(),
                counters: counters.clone(),
            }),
            websockets: websockets.clone(),
            max_websockets,
        };
        let connection = Connection {
            stream,
            peer,
            place,
            router: router.clone(),
            limits,
            stopping: stopping.clone(),
        };
        tokio::spawn(connection.run());
    }
    drop(listener);
    let _ = stop.send(true);
    drop(closed);
    let mut all_closed = all_closed;
    // Resolves (with an error) once every connection dropped its `closed`.
    while all_closed.changed().await.is_ok() {}
}

/// How many of `max_connections` places WebSockets may not take: an eighth, at least one
/// (none when there is one place), so plain requests (`/health`) are answered while WebSockets
/// are refused.
pub fn reserve(max_connections: usize) -> usize {
    (max_connections / 8)
        .max(1)
        .min(max_connections.saturating_sub(1))
}

/// A connection's place under `max_connections`, given to each of its requests (an
/// extension). It is freed when the connection ends, or, for a connection upgraded to a
/// WebSocket, when the socket ends: the route keeps it for the socket's task
/// ([`Place::for_websocket`]). While it is held, the connection counts as open and shutdown
/// waits for it.
#[derive(Clone)]
pub struct Place {
    held: Arc<Held>,
    websockets: Arc<Semaphore>,
    max_websockets: usize,
}

/// What a place holds: freed on drop.
struct Held {
    _slot: OwnedSemaphorePermit,
    _closed: watch::Sender<()>,
    counters: Arc<Counters>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.counters.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A WebSocket's hold on its connection's place, for the socket's life.
pub struct WebSocketPlace {
    _held: Arc<Held>,
    _websocket: OwnedSemaphorePermit,
}

impl Place {
    /// The connection's place kept for a WebSocket, or `Err(max)` when `max` WebSockets are
    /// open already (all places but the [`reserve`]).
    pub fn for_websocket(&self) -> Result<WebSocketPlace, usize> {
        let websocket = self
            .websockets
            .clone()
            .try_acquire_owned()
            .map_err(|_| self.max_websockets)?;
        Ok(WebSocketPlace {
            _held: self.held.clone(),
            _websocket: websocket,
        })
    }
}

/// Answers a connection past the limit with its `503`, then closes it.
async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(REFUSAL_TIMEOUT, async {
        stream.write_all(REFUSAL).await?;
        stream.shutdown().await
    })
    .await;
}

struct Connection {
    stream: TcpStream,
    peer: SocketAddr,
    place: Place,
    router: Router,
    limits: Limits,
    stopping: watch::Receiver<bool>,
}

impl Connection {
    async fn run(self) {
        let (peer, place) = (self.peer, self.place);
        let counters = place.held.counters.clone();
        let router = self.router;
        // The peer address keys the rate limit (`ConnectInfo`, as axum's own server gives it).
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            request.extensions_mut().insert(place.clone());
            router.clone().call(request.map(Body::new))
        });
        let io = TokioIo::new(Guarded {
            io: self.stream,
            stall_timeout: self.limits.stall_timeout,
            waiting: None,
            counters,
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout);
        let mut connection = pin!(builder.serve_connection(io, service).with_upgrades());
        let mut stopping = self.stopping;
        let stopping = async move {
            let _ = stopping.wait_for(|stopping| *stopping).await;
        };
        tokio::select! {
            result = connection.as_mut() => log_end(result),
            () = stopping => {
                connection.as_mut().graceful_shutdown();
                log_end(connection.await);
            }
        }
    }
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// A connection's socket that fails a write the peer has not taken any of for
/// `stall_timeout`: hyper then closes the connection, and what it held is freed.
struct Guarded {
    io: TcpStream,
    stall_timeout: Duration,
    /// Running while writes are waiting for the peer; cleared by any progress.
    waiting: Option<Pin<Box<Sleep>>>,
    counters: Arc<Counters>,
}

impl Guarded {
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.waiting = None;
            return polled;
        }
        let stall_timeout = self.stall_timeout;
        let waiting = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall_timeout)));
        if waiting.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.counters.stalled.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            ?stall_timeout,
            "closing a connection whose peer stopped reading"
        );
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the peer accepted no byte within the stall timeout",
        )))
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_is_a_whole_http_answer() {
        let text = std::str::from_utf8(REFUSAL).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), length);
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"], "too_many_connections");
    }
}
