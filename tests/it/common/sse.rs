//! A minimal Server-Sent Events reader for tests: it keeps comments (keepalives) and `retry:`
//! lines that client libraries hide, because the tests assert on them.

use futures_util::StreamExt;
use reqwest::Response;
use serde_json::Value;
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Option<String>,
    pub retry: Option<u64>,
    pub comment: Option<String>,
}

impl Frame {
    pub fn envelope(&self) -> Value {
        serde_json::from_str(self.data.as_deref().expect("a data frame")).expect("data is JSON")
    }
    pub fn position(&self) -> i64 {
        self.id
            .as_deref()
            .expect("an id")
            .parse()
            .expect("a numeric id")
    }
}

pub struct SseReader {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<hyper::body::Bytes>>,
    buffer: String,
}

impl SseReader {
    pub fn new(response: Response) -> SseReader {
        SseReader {
            body: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    /// The next frame (comments included), or `None` when the stream ended. Panics after `deadline`.
    pub async fn next(&mut self, deadline: Duration) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                return Some(parse(&block));
            }
            let chunk = tokio::time::timeout(deadline, self.body.next())
                .await
                .expect("timed out waiting for an SSE frame");
            match chunk {
                Some(Ok(bytes)) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// The next frame that carries an event (skipping retry hints and keepalives).
    pub async fn next_event(&mut self, deadline: Duration) -> Option<Frame> {
        loop {
            let frame = self.next(deadline).await?;
            if frame.data.is_some() {
                return Some(frame);
            }
        }
    }

    /// The next `n` event frames.
    pub async fn events(&mut self, n: usize, deadline: Duration) -> Vec<Frame> {
        let mut frames = Vec::with_capacity(n);
        while frames.len() < n {
            frames.push(self.next_event(deadline).await.expect("stream ended early"));
        }
        frames
    }
}

fn parse(block: &str) -> Frame {
    let mut frame = Frame::default();
    for line in block.lines() {
        if let Some(comment) = line.strip_prefix(':') {
            frame.comment = Some(comment.trim().to_string());
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_string();
        match field {
            "id" => frame.id = Some(value),
            "event" => frame.event = Some(value),
            "data" => {
                frame.data = Some(match frame.data.take() {
                    Some(previous) => format!("{previous}\n{value}"),
                    None => value,
                })
            }
            "retry" => frame.retry = value.parse().ok(),
            _ => {}
        }
    }
    frame
}
