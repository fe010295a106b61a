//! A [`kube::Client`] from a kubeconfig file, or inferred (`$KUBECONFIG`,
//! `~/.kube/config`, or the pod's service account in a cluster), with a
//! bounded number of TCP connections and of requests in flight.
//!
//! kube's default client speaks HTTP/1.1 over rustls and hyper's pool is
//! unbounded: every request in flight opens a TLS connection of its own. A
//! scheduler binding 10,000 pods opened 10,367 connections, and for its
//! first 15 s the API server mostly did TLS handshakes. Here every request
//! that is not a watch waits for one of `max_connections` permits, held
//! until its response body has been read (a permit released when the
//! headers arrive would let the next request open a connection while the
//! body still holds the previous one), and the connector itself opens at
//! most `max_connections` connections, watches included (a watch holds its
//! connection for as long as it runs). Idle connections are kept (up to the
//! same number) and reused.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Request, Response, Uri};
use hyper::body::{Body, Frame, SizeHint};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioExecutor;
use kube::Client;
use kube::client::{ConfigExt, retry::RetryPolicy};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{BoxError, Service, ServiceBuilder};

use crate::error::KubeError;

mod sockets;

pub use sockets::established_connections;

/// kube-scheduler's default client budget is QPS 50 / burst 100 over one
/// HTTP/2 connection; 16 HTTP/1.1 connections keep the API server busy
/// (binds take ~10–20 ms each there) without making it do handshakes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// The fewest connections a client may be limited to: the manager with
/// its admission webhooks runs 8 watches (nodes, pods, NodeMetrics,
/// NodeSLOs, its ConfigMap; the webhooks' profiles, namespaces, ConfigMap),
/// each holding a connection for good, and requests need some more.
pub const MIN_CONNECTIONS: usize = 12;

/// How a client talks to the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// TCP connections open at once (watches included), and requests other
    /// than watches in flight at once; at least [`MIN_CONNECTIONS`].
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits { max_connections: DEFAULT_MAX_CONNECTIONS }
    }
}

/// Connects with `kubeconfig` if given, else as `kube::Client::try_default`
/// does, with the default [`ConnectionLimits`].
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, KubeError> {
    connect_with(kubeconfig, ConnectionLimits::default()).await
}

/// Connects with `kubeconfig` if given, else as `kube::Client::try_default`
/// does, within `limits`.
pub async fn connect_with(
    kubeconfig: Option<&Path>,
    limits: ConnectionLimits,
) -> Result<Client, KubeError> {
    let config = config(kubeconfig).await?;
    bounded_client(config, limits).map(|(client, _)| client).map_err(|e| KubeError::Kubeconfig {
        path: kubeconfig.map_or_else(|| "<inferred>".into(), |p| p.display().to_string()),
        message: e.to_string(),
    })
}

/// The client configuration from `kubeconfig` if given, else inferred as
/// `kube::Client::try_default` does.
pub async fn config(kubeconfig: Option<&Path>) -> Result<kube::Config, KubeError> {
    Ok(match kubeconfig {
        Some(path) => {
            let err = |message: String| KubeError::Kubeconfig {
                path: path.display().to_string(),
                message,
            };
            let file = Kubeconfig::read_from(path).map_err(|e| err(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                .await
                .map_err(|e| err(e.to_string()))?
        }
        None => kube::Config::infer().await.map_err(|e| KubeError::Kubeconfig {
            path: "<in-cluster / $KUBECONFIG>".into(),
            message: e.to_string(),
        })?,
    })
}

/// How many TCP connections a client has opened so far and held at once
/// (tests and benches read it; the sockets themselves are counted from
/// `/proc/net/tcp`).
#[derive(Debug, Clone, Default)]
pub struct ConnectionCounter(Arc<ConnectionCounts>);

#[derive(Debug, Default)]
struct ConnectionCounts {
    opened: AtomicU64,
    open: AtomicU64,
    peak: AtomicU64,
}

impl ConnectionCounter {
    /// Connections opened since the client was built.
    pub fn opened(&self) -> u64 {
        self.0.opened.load(Ordering::Relaxed)
    }

    /// The most connections open at once since the client was built (a
    /// connection the server closed and the client opened again counts
    /// once in this, twice in [`opened`](Self::opened)).
    pub fn peak(&self) -> u64 {
        self.0.peak.load(Ordering::Relaxed)
    }

    /// Counts a connection opened, until the returned guard is dropped.
    fn open(&self) -> OpenConnection {
        self.0.opened.fetch_add(1, Ordering::Relaxed);
        let open = self.0.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.peak.fetch_max(open, Ordering::SeqCst);
        OpenConnection(self.clone())
    }
}

/// One open connection in a [`ConnectionCounter`], until dropped.
struct OpenConnection(ConnectionCounter);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// kube's default stack (base URI, retries of 429/5xx, authentication,
/// extra headers) over a hyper client whose connector and requests are
/// bounded by `limits`; also returns its connection counter.
pub fn bounded_client(
    config: kube::Config,
    limits: ConnectionLimits,
) -> Result<(Client, ConnectionCounter), kube::Error> {
    let max = limits.max_connections.max(MIN_CONNECTIONS);
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let tls = config.rustls_https_connector_with_connector(http)?;
    let mut timeouts = hyper_timeout::TimeoutConnector::new(tls);
    timeouts.set_connect_timeout(config.connect_timeout);
    timeouts.set_read_timeout(config.read_timeout);
    timeouts.set_write_timeout(config.write_timeout);
    let counter = ConnectionCounter::default();
    let connector = CappedConnector {
        inner: timeouts,
        permits: Arc::new(Semaphore::new(max)),
        opened: counter.clone(),
    };
    let hyper_client = hyper_util::client::legacy::Builder::new(TokioExecutor::new())
        .pool_max_idle_per_host(max)
        .build(connector);
    let stack = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| tower::retry::RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(hyper_client);
    let limited = RequestLimit { inner: stack, permits: Arc::new(Semaphore::new(max)) };
    let client = kube::client::ClientBuilder::new(limited, config.default_namespace).build();
    Ok((client, counter))
}

/// Whether a request is a watch (`?watch=true`, as kube sends it, or `1`):
/// its response body lasts minutes, so it takes no request permit.
fn is_watch(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"))
}

/// At most as many requests (watches aside) in flight as permits; each
/// holds its permit until its response body ends or is dropped.
struct RequestLimit<S> {
    inner: S,
    permits: Arc<Semaphore>,
}

impl<S, B> Service<Request<kube::client::Body>> for RequestLimit<S>
where
    S: Service<Request<kube::client::Body>, Response = Response<B>, Error = BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<PermitBody<B>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        let watch = is_watch(request.uri());
        // The stack's futures do nothing until polled, so the request only
        // reaches the pool once a permit is held.
        let response = self.inner.call(request);
        let permits = self.permits.clone();
        Box::pin(async move {
            let permit = match watch {
                true => None,
                false => Some(permits.acquire_owned().await.map_err(BoxError::from)?),
            };
            let response = response.await?;
            Ok(response.map(|inner| PermitBody { inner, permit }))
        })
    }
}

/// A response body that holds its request's permit until it ends.
pub struct PermitBody<B> {
    inner: B,
    permit: Option<OwnedSemaphorePermit>,
}

impl<B: Body + Unpin> Body for PermitBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let poll = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(poll, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.permit = None;
        }
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connector that opens at most as many connections at once as it has
/// permits; each connection holds one until hyper drops it.
#[derive(Clone)]
struct CappedConnector<C> {
    inner: C,
    permits: Arc<Semaphore>,
    opened: ConnectionCounter,
}

impl<C> Service<Uri> for CappedConnector<C>
where
    C: Service<Uri> + Clone + Send + 'static,
    C::Response: Read + Write + Connection + Unpin + Send,
    C::Future: Send,
    C::Error: Into<BoxError>,
{
    type Response = CappedConnection<C::Response>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        // The clone left behind is ready if the original was (the TLS and
        // timeout connectors always are).
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let permits = self.permits.clone();
        let opened = self.opened.clone();
        Box::pin(async move {
            let permit = permits.acquire_owned().await.map_err(BoxError::from)?;
            let io = inner.call(uri).await.map_err(Into::into)?;
            Ok(CappedConnection { io, _permit: permit, _counted: opened.open() })
        })
    }
}

/// A connection holding its connector permit, counted while open.
struct CappedConnection<T> {
    io: T,
    _permit: OwnedSemaphorePermit,
    _counted: OpenConnection,
}

impl<T: Connection> Connection for CappedConnection<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl<T: Read + Unpin> Read for CappedConnection<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for CappedConnection<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_are_told_from_other_requests() {
        let cases = [
            ("/api/v1/pods?watch=true&resourceVersion=5", true),
            ("/api/v1/pods?resourceVersion=5&watch=1", true),
            ("/api/v1/pods?watch=false", false),
            ("/api/v1/pods?limit=500", false),
            ("/api/v1/namespaces/a/pods/b/binding", false),
            ("/api/v1/pods?allowWatchBookmarks=true", false),
        ];
        for (uri, watch) in cases {
            assert_eq!(is_watch(&uri.parse().unwrap()), watch, "{uri}");
        }
    }

    #[test]
    fn a_body_keeps_its_permit_until_it_ends() {
        let permits = Arc::new(Semaphore::new(1));
        let permit = permits.clone().try_acquire_owned().unwrap();
        let mut body = PermitBody {
            inner: http_body_util::Full::new("done".as_bytes()),
            permit: Some(permit),
        };
        assert_eq!(permits.available_permits(), 0);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        // The data frame: still held (the connection is still busy).
        assert!(matches!(Pin::new(&mut body).poll_frame(&mut cx), Poll::Ready(Some(Ok(_)))));
        assert_eq!(permits.available_permits(), 0);
        // End of stream: released.
        assert!(matches!(Pin::new(&mut body).poll_frame(&mut cx), Poll::Ready(None)));
        assert_eq!(permits.available_permits(), 1);
    }

    #[test]
    fn connections_are_counted_opened_and_at_most_open_at_once() {
        let counter = ConnectionCounter::default();
        let (a, b) = (counter.open(), counter.open());
        drop(a);
        let c = counter.open();
        assert_eq!((counter.opened(), counter.peak()), (3, 2));
        drop((b, c));
        let _d = counter.open();
        assert_eq!((counter.opened(), counter.peak()), (4, 2));
    }

    #[test]
    fn a_dropped_body_releases_its_permit() {
        let permits = Arc::new(Semaphore::new(1));
        let body = PermitBody {
            inner: http_body_util::Full::new("x".as_bytes()),
            permit: Some(permits.clone().try_acquire_owned().unwrap()),
        };
        drop(body);
        assert_eq!(permits.available_permits(), 1);
    }
}
