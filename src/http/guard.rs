//! The guards in front of every route, as one tower layer: a list of synchronous [`Check`]s
//! run in order on each request, the first refusal answered at once, the request passed on
//! otherwise.
//!
//! Each guard (`host.rs`, `origin.rs`, `rate.rs`, `auth.rs`, `body_guard.rs`) is a `Check`
//! rather than an axum `from_fn` middleware: a `from_fn` layer boxes its future, boxes and
//! clones the service behind it, and moves a large future state on every request, which under
//! single-event load cost more CPU than the checks themselves (docs/performance.md, "Guards in
//! one layer"). None of the checks waits for anything, so none needs a future of its own.

use super::error::ApiError;
use axum::extract::Request;
use axum::response::Response;
use futures_util::future::Either;
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tower::{Layer, Service};

/// When a request met the first guard: the `receive` stage of its events starts here
/// (`store::stages`).
#[derive(Debug, Clone, Copy)]
pub struct Arrived(pub Instant);

/// The first check: stamps the request with its [`Arrived`] time.
pub struct Stamp;

impl Check for Stamp {
    fn check(&self, request: &mut Request) -> Result<(), ApiError> {
        request.extensions_mut().insert(Arrived(Instant::now()));
        Ok(())
    }
}

/// When a request arrived, if the guards stamped it.
pub fn arrived(stamp: Option<axum::Extension<Arrived>>) -> Option<Instant> {
    stamp.map(|axum::Extension(Arrived(at))| at)
}

/// One guard: lets `request` through (possibly changed) or refuses it with an error answer.
pub trait Check: Send + Sync + 'static {
    fn check(&self, request: &mut Request) -> Result<(), ApiError>;
}

/// The layer: `checks`, in order, in front of the routes.
#[derive(Clone)]
pub struct Checks(Arc<[Arc<dyn Check>]>);

impl Checks {
    pub fn new(checks: Vec<Arc<dyn Check>>) -> Checks {
        Checks(checks.into())
    }
}

impl<S> Layer<S> for Checks {
    type Service = Checked<S>;

    fn layer(&self, inner: S) -> Checked<S> {
        Checked {
            inner,
            checks: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Checked<S> {
    inner: S,
    checks: Arc<[Arc<dyn Check>]>,
}

impl<S> Service<Request> for Checked<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        for check in self.checks.iter() {
            if let Err(refusal) = check.check(&mut request) {
                let answer = match refusal {
                    // A browser opening a page without the token gets the login form.
                    ApiError::Unauthorized
                        if crate::web::wants_page(request.method(), request.headers()) =>
                    {
                        crate::web::login_page(None)
                    }
                    refusal => axum::response::IntoResponse::into_response(refusal),
                };
                return Either::Left(ready(Ok(answer)));
            }
        }
        Either::Right(self.inner.call(request))
    }
}
