//! The proxy: serves the CRI on a unix socket, forwards every call to the
//! runtime, and around the hooked ones calls the hook server.
//!
//! It works on HTTP/2 requests, not on generated services: a call it does
//! not hook (ImageService, Exec / Attach / PortForward, the list and status
//! calls, any method a newer CRI adds) goes to the runtime and back byte
//! for byte, headers and trailers included, and a hooked call's answer is
//! the runtime's own. It keeps no state, so a restart loses nothing.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use kolo_api::names::label::RUNTIME_PROXY_SKIP_HOOKSERVER as SKIP_HOOKSERVER;
use kolo_api::runtime_hook::{FailurePolicy, HookRequest, HookResponse, Stage};

use crate::frame;
use crate::hook_client::HookClient;
use crate::method::{self, HookedCall};
use crate::stats::{HookOutcome, ProxyStats, Throttle};
use crate::translate;
use crate::upstream::{BoxError, ProxyBody, Upstream};

/// The largest request a hooked call may carry (the kubelet's own gRPC
/// limit is 16 MiB).
pub const MAX_HOOKED_REQUEST_BYTES: usize = 16 << 20;

/// The proxy between one kubelet and one runtime.
#[derive(Debug)]
pub struct Proxy {
    upstream: Upstream,
    hooks: Option<HookClient>,
    stats: ProxyStats,
    ignored_log: Throttle,
}

type Response = http::Response<ProxyBody>;

impl Proxy {
    /// A proxy to `upstream`, calling `hooks` (none: a plain pass-through).
    pub fn new(upstream: Upstream, hooks: Option<HookClient>) -> Proxy {
        let ignored_log = Throttle::new(Duration::from_secs(10));
        Proxy { upstream, hooks, stats: ProxyStats::default(), ignored_log }
    }

    /// What the proxy has done so far.
    pub fn stats(&self) -> &ProxyStats {
        &self.stats
    }

    /// Answers one CRI call.
    pub async fn handle(
        self: Arc<Self>,
        request: http::Request<Incoming>,
    ) -> Result<Response, Infallible> {
        let hooked =
            method::hooked(request.uri().path()).filter(|(_, call)| self.hooks_call(*call));
        let response = match hooked {
            Some((_, call)) => self.hooked(call, request).await,
            None => self.forward(request.map(box_body)).await,
        };
        Ok(response)
    }

    fn hooks_call(&self, call: HookedCall) -> bool {
        let Some(hooks) = &self.hooks else { return false };
        [call.pre(), call.post()].into_iter().flatten().any(|s| hooks.policy(s).is_some())
    }

    async fn forward(&self, request: http::Request<ProxyBody>) -> Response {
        self.stats.forwarded.inc();
        match self.upstream.send(request).await {
            Ok(response) => response.map(box_body),
            Err(e) => {
                tracing::warn!(error = %e, "CRI call not forwarded");
                self.stats.upstream_errors.inc();
                status_response(tonic::Status::unavailable(e.to_string()))
            }
        }
    }

    async fn hooked(&self, call: HookedCall, request: http::Request<Incoming>) -> Response {
        let (mut parts, body) = request.into_parts();
        let body = match Limited::new(body, MAX_HOOKED_REQUEST_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                let status = tonic::Status::invalid_argument(format!(
                    "kolo runtime-proxy: reading the {call:?} request: {e}"
                ));
                return status_response(status);
            }
        };
        let message = frame::decode(&body);
        let mut forwarded = body.clone();
        if let (Some(stage), Ok(message)) = (call.pre(), &message) {
            match self.pre_hook(call, stage, message).await {
                Ok(Some(appended)) => forwarded = frame::encode(message, &appended),
                Ok(None) => {}
                Err(status) => return status_response(status),
            }
        }
        if let Err(e) = &message {
            tracing::warn!(?call, error = %e, "hooks skipped: the request is not one plain message");
        }
        // The body may have grown; the kubelet sends no length, but a
        // client that did would now be wrong.
        parts.headers.remove(http::header::CONTENT_LENGTH);
        let request = http::Request::from_parts(parts, box_body(Full::new(forwarded)));
        let response = self.forward(request).await;
        match (call.post(), message) {
            (Some(stage), Ok(message)) if self.policy(stage).is_some() => {
                self.after(call, stage, message, response).await
            }
            _ => response,
        }
    }

    fn policy(&self, stage: Stage) -> Option<FailurePolicy> {
        self.hooks.as_ref().and_then(|h| h.policy(stage))
    }

    /// Runs the pre hook: `Ok(Some(bytes))` to append to the request,
    /// `Ok(None)` to send it as it is, `Err` to fail the call (policy
    /// `Fail`).
    async fn pre_hook(
        &self,
        call: HookedCall,
        stage: Stage,
        message: &Bytes,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        let Some(policy) = self.policy(stage) else { return Ok(None) };
        let started = Instant::now();
        let answer = self.call_hook(call, stage, message).await;
        self.stats.hook_seconds.observe(started.elapsed().as_secs_f64());
        let response = match answer {
            Ok(Some(response)) => response,
            Ok(None) => {
                self.stats.hook(HookOutcome::Skipped);
                return Ok(None);
            }
            Err(e) if policy == FailurePolicy::Fail => {
                self.stats.hook(HookOutcome::Failed);
                return Err(tonic::Status::unavailable(format!(
                    "kolo runtime-proxy: {stage} hook (failure policy Fail): {e}"
                )));
            }
            Err(e) => {
                self.stats.hook(HookOutcome::Ignored);
                if let Some(held_back) = self.ignored_log.allow(Instant::now()) {
                    tracing::warn!(%stage, error = %e, held_back, "hook failed; the call goes on as the kubelet asked (failure policy Ignore; one such warning per 10 s)");
                }
                return Ok(None);
            }
        };
        let appended = translate::patch(call, &response);
        self.stats.hook(if appended.is_some() {
            HookOutcome::Changed
        } else {
            HookOutcome::Unchanged
        });
        Ok(appended)
    }

    async fn call_hook(
        &self,
        call: HookedCall,
        stage: Stage,
        message: &[u8],
    ) -> Result<Option<HookResponse>, String> {
        let hooks = self.hooks.as_ref().ok_or("no hook server")?;
        let request: HookRequest =
            translate::hook_request(call, stage, message).map_err(|e| e.to_string())?;
        if request.pod_labels.get(SKIP_HOOKSERVER).is_some_and(|v| v == "true") {
            return Ok(None);
        }
        hooks.call(&request).await.map(Some).map_err(|e| e.to_string())
    }

    /// Reads the runtime's answer to see whether the call succeeded, runs
    /// the post hook in the background if it did (its answer changes
    /// nothing), and returns the answer unchanged.
    async fn after(
        &self,
        call: HookedCall,
        stage: Stage,
        message: Bytes,
        response: Response,
    ) -> Response {
        let (parts, body) = response.into_parts();
        let collected = match body.collect().await {
            Ok(c) => c,
            Err(e) => {
                return status_response(tonic::Status::unavailable(format!(
                    "container runtime: {e}"
                )));
            }
        };
        let trailers = collected.trailers().cloned();
        let ok = match trailers.as_ref().and_then(tonic::Status::from_header_map) {
            Some(status) => status.code() == tonic::Code::Ok,
            // A trailers-only answer (an error) carries its status in the headers.
            None => tonic::Status::from_header_map(&parts.headers)
                .is_none_or(|s| s.code() == tonic::Code::Ok),
        };
        if ok && let Some(hooks) = self.hooks.clone() {
            match translate::hook_request(call, stage, &message) {
                Ok(request) => {
                    tokio::spawn(async move {
                        if let Err(e) = hooks.call(&request).await {
                            tracing::debug!(%stage, error = %e, "post hook failed");
                        }
                    });
                }
                Err(e) => tracing::warn!(%stage, error = %e, "post hook skipped"),
            }
        }
        let data = collected.to_bytes();
        let body = Full::new(data).map_err(|never: Infallible| -> BoxError { match never {} });
        let body = match trailers {
            Some(t) => body.with_trailers(async move { Some(Ok(t)) }).boxed_unsync(),
            None => body.boxed_unsync(),
        };
        http::Response::from_parts(parts, body)
    }
}

fn box_body<B>(body: B) -> ProxyBody
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    body.map_err(Into::into).boxed_unsync()
}

fn status_response(status: tonic::Status) -> Response {
    status.into_http::<()>().map(|()| box_body(Full::new(Bytes::new())))
}
