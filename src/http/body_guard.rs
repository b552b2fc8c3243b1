//! The guards that look at a request body as it arrives, in one wrapper around it:
//!
//! - the idle timeout: a body that goes `idle_timeout` without a frame fails (`408` on the
//!   routes), and so does one still arriving `deadline` after it began, however steadily it
//!   trickles in;
//! - the JSON depth limit ([`super::depth`]): once `[` and `{` outside strings are nested
//!   deeper than the limit, reading the body fails (`400`).
//!
//! The timer runs only while the body is waiting for bytes. A body that is already there when
//! the handler reads it (every small request) arms no timer at all: arming one registers it
//! with the runtime's timer wheel, which wakes the runtime's I/O driver each time (a write to
//! its eventfd and an extra turn of its loop), twice per request for the frame and the end of
//! the body. See docs/performance.md, "Body guards".

use super::depth::{DepthScanner, TooDeep};
use super::error::ApiError;
use super::guard::Check;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::{Body as _, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::time::Sleep;

/// Why reading a body failed: no bytes arrived for the idle timeout, or the body was not whole
/// by its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyTimedOut;

/// The limits applied to every request body: the guard wraps the body in them.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimits {
    pub idle_timeout: Duration,
    pub deadline: Duration,
    pub max_json_depth: usize,
}

impl Check for BodyLimits {
    fn check(&self, request: &mut Request) -> Result<(), ApiError> {
        let body = std::mem::take(request.body_mut());
        *request.body_mut() = Body::new(GuardedBody {
            inner: body,
            limits: *self,
            began: Instant::now(),
            scanner: DepthScanner::default(),
            idle: None,
            failed: false,
        });
        Ok(())
    }
}

struct GuardedBody {
    inner: Body,
    limits: BodyLimits,
    /// When the request reached the guards: the deadline counts from here.
    began: Instant,
    scanner: DepthScanner,
    /// Armed while the body waits for its next frame; dropped when one arrives.
    idle: Option<Pin<Box<Sleep>>>,
    /// A guard has failed the body: it yields nothing more.
    failed: bool,
}

impl hyper::body::Body for GuardedBody {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        let polled = this.poll_guarded(cx);
        if let Poll::Ready(Some(Err(_))) = &polled {
            this.failed = true;
            this.idle = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl GuardedBody {
    fn poll_guarded(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<axum::body::Bytes>, axum::BoxError>>> {
        let this = self;
        // The inner body is axum's, which is `Unpin`.
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.idle = None;
                let Some(frame) = frame else {
                    return Poll::Ready(None);
                };
                let frame = frame.map_err(axum::BoxError::from)?;
                if let Some(data) = frame.data_ref() {
                    this.scanner
                        .feed(data, this.limits.max_json_depth)
                        .map_err(|e: TooDeep| Box::new(e) as axum::BoxError)?;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                // Whichever comes first: the idle timeout, or what is left to the deadline.
                let left = this.limits.deadline.saturating_sub(this.began.elapsed());
                let timeout = this.limits.idle_timeout.min(left);
                let idle = this
                    .idle
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                ready!(idle.as_mut().poll(cx));
                Poll::Ready(Some(Err(Box::new(BodyTimedOut))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_body_yields_nothing_more_once_a_guard_fails_it() {
        let chunks =
            [&b"[[["[..], b"]]]"].map(|chunk| Ok::<_, std::io::Error>(Bytes::from_static(chunk)));
        let mut body = GuardedBody {
            inner: Body::from_stream(futures_util::stream::iter(chunks)),
            limits: BodyLimits {
                idle_timeout: Duration::from_secs(30),
                deadline: Duration::from_secs(60),
                max_json_depth: 2,
            },
            began: Instant::now(),
            scanner: DepthScanner::default(),
            idle: None,
            failed: false,
        };
        let refused = body.frame().await.expect("a frame").expect_err("too deep");
        assert!(refused.downcast_ref::<TooDeep>().is_some(), "{refused}");
        assert!(body.frame().await.is_none(), "the rest is not handed out");
        assert!(hyper::body::Body::is_end_stream(&body));
    }
}
