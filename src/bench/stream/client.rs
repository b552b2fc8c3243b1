//! The subscribers' side of `hooklog bench stream`: SSE connections on bare hyper, read frame
//! by frame, and the counter that samples each frame's delivery lag.

use anyhow::bail;
use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use memchr::memmem::Finder;
use std::pin::Pin;
use std::sync::LazyLock;

/// One SSE connection on its own bare hyper HTTP/1.1 connection, read frame by frame. The
/// reader finds frame ends with `memchr` and hands out frames in place: the load generator
/// shares the server's two cores, so what it spends per event is taken from the server.
/// The connection is driven by the task that reads it (not spawned), so a chunk costs one task
/// wake-up, not two.
pub(super) struct SseConnection {
    connection: Pin<Box<Http1Connection>>,
    body: hyper::body::Incoming,
    /// A frame cut across chunks, and how far it has been searched for its end.
    buffer: Vec<u8>,
    searched: usize,
}

type Http1Connection = hyper::client::conn::http1::Connection<
    hyper_util::rt::TokioIo<tokio::net::TcpStream>,
    Empty<Bytes>,
>;

/// Bytes each SSE connection of the load generator reads at a time.
const READ_BUFFER: usize = 64 * 1024;

pub(super) async fn open(url: &str, path: &str) -> anyhow::Result<SseConnection> {
    let authority = url.trim_start_matches("http://").to_string();
    let stream = tokio::net::TcpStream::connect(&authority).await?;
    // A fixed read buffer: hyper's adaptive one grows each connection's buffer from 8 KiB up to
    // ~400 KiB under a burst, and with 1,000 connections doing that at once the first second
    // of a run went mostly to zeroing fresh memory in this process (perf: over half of its
    // samples in the kernel's clear_page), so subscribers fell behind for reasons of the
    // load generator's own, not the server's.
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .read_buf_exact_size(Some(READ_BUFFER))
        .handshake(hyper_util::rt::TokioIo::new(stream))
        .await?;
    let mut connection = Box::pin(connection);
    let request = hyper::Request::get(path)
        .header("host", &authority)
        .header("accept", "text/event-stream")
        .body(Empty::<Bytes>::new())?;
    let response = tokio::select! {
        response = sender.send_request(request) => response?,
        ended = &mut connection => bail!("the connection ended before an answer: {ended:?}"),
    };
    if !response.status().is_success() {
        bail!("opening {path}: {}", response.status());
    }
    Ok(SseConnection {
        connection,
        body: response.into_body(),
        buffer: Vec::new(),
        searched: 0,
    })
}

impl SseConnection {
    /// Reads the next chunk and hands every frame it completes (with its blank-line
    /// terminator) to `each`; `false` when the stream has ended. A chunk of whole frames is
    /// read where it lies; only a frame cut across chunks is copied.
    pub(super) async fn read(&mut self, mut each: impl FnMut(&[u8])) -> bool {
        let chunk = tokio::select! {
            chunk = self.body.frame() => match chunk {
                Some(Ok(chunk)) => chunk,
                _ => return false,
            },
            _ = &mut self.connection => return false,
        };
        let Ok(chunk) = chunk.into_data() else {
            return true;
        };
        let in_place = self.buffer.is_empty();
        let (data, mut from): (&[u8], usize) = if in_place {
            (&chunk, 0)
        } else {
            self.buffer.extend_from_slice(&chunk);
            (&self.buffer, self.searched)
        };
        let mut start = 0;
        while let Some(at) = frame_end(&data[from..]) {
            let end = from + at + 2;
            each(&data[start..end]);
            start = end;
            from = end;
        }
        if in_place {
            self.buffer.extend_from_slice(&chunk[start..]);
        } else {
            self.buffer.drain(..start);
        }
        // A terminator may straddle the next chunk: search again from the last byte.
        self.searched = self.buffer.len().saturating_sub(1);
        true
    }
}

/// Where the first blank line (`\n\n`) starts. Line breaks are a few per frame, so stepping
/// from one to the next with `memchr` is cheaper than a two-byte substring search.
fn frame_end(data: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'\n', data).find(|&i| data.get(i + 1) == Some(&b'\n'))
}

static DATA_LINE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\ndata:"));
static RECEIVED_AT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"receivedAt\":\""));

/// Counts event frames; on every `sample_every`-th one, measures the delivery lag (and keeps
/// the event's `receivedAt`, in µs, beside it).
#[derive(Default)]
pub(super) struct FrameCounter {
    pub(super) events: usize,
    pub(super) sample_every: usize,
    pub(super) sample_offset: usize,
    pub(super) lags: Vec<(i64, f64)>,
}

impl FrameCounter {
    pub(super) fn count(&mut self, frame: &[u8]) {
        let Some(at) = (if frame.starts_with(b"data:") {
            Some(0)
        } else {
            DATA_LINE.find(frame).map(|i| i + 1)
        }) else {
            return;
        };
        self.events += 1;
        if self.sample_every == 0 || self.events % self.sample_every != self.sample_offset {
            return;
        }
        let now = Utc::now();
        let data = &frame[at..];
        let data = &data[..memchr::memchr(b'\n', data).unwrap_or(data.len())];
        let Some(at) = RECEIVED_AT
            .find(data)
            .map(|i| i + RECEIVED_AT.needle().len())
        else {
            return;
        };
        if let Some(received) = data
            .get(at..at + 24)
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.parse::<DateTime<Utc>>().ok())
        {
            let lag = (now - received).num_microseconds().unwrap_or(0) as f64 / 1000.0;
            self.lags.push((received.timestamp_micros(), lag));
        }
    }
}
