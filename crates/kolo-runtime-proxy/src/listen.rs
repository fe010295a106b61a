//! The proxy's socket: bound safely, served until shutdown, removed after.

use std::future::Future;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::UnixListener;

use crate::authority::AuthorityFix;
use crate::server::Proxy;

/// How long calls in flight may finish after shutdown is asked.
pub const DRAIN: Duration = Duration::from_secs(5);

/// HTTP/2 flow-control windows of both connections (the kubelet's and
/// the runtime's). With HTTP/2's default 64 KiB, a ListContainers answer
/// of a node with 150 containers (~60 KiB and growing) waits for window
/// updates on each hop; a unix socket has no bandwidth-delay product to
/// protect.
pub const STREAM_WINDOW: u32 = 4 << 20;
/// See [`STREAM_WINDOW`].
pub const CONNECTION_WINDOW: u32 = 16 << 20;

/// Why the socket could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("runtime proxy socket {path}: {message}")]
pub struct BindError {
    /// The socket path.
    pub path: String,
    /// What failed.
    pub message: String,
}

/// A bound socket; its file is removed when this is dropped.
#[derive(Debug)]
pub struct BoundSocket {
    /// The listener.
    pub listener: UnixListener,
    path: PathBuf,
}

impl Drop for BoundSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `path`, replacing a stale socket file (never any other kind of
/// file), creating its directory, readable and writable by its owner only
/// (the kubelet runs as root).
pub fn bind(path: &Path) -> Result<BoundSocket, BindError> {
    let bad = |message: String| BindError { path: path.display().to_string(), message };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path)
                .map_err(|e| bad(format!("removing the stale socket: {e}")))?;
        }
        Ok(_) => return Err(bad("exists and is not a socket; not replacing it".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(bad(e.to_string())),
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| bad(format!("creating {}: {e}", dir.display())))?;
    }
    let listener = UnixListener::bind(path).map_err(|e| bad(format!("bind: {e}")))?;
    let bound = BoundSocket { listener, path: path.to_path_buf() };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| bad(format!("chmod 0600: {e}")))?;
    Ok(bound)
}

/// Serves CRI calls on `socket` with `proxy` until `shutdown` completes,
/// then lets calls in flight finish for up to [`DRAIN`].
pub async fn serve(proxy: Arc<Proxy>, socket: &BoundSocket, shutdown: impl Future<Output = ()>) {
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = socket.listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let proxy = proxy.clone();
        let service = service_fn(move |req| proxy.clone().handle(req));
        let connection = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .serve_connection(TokioIo::new(AuthorityFix::new(stream)), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "kubelet connection closed");
            }
        });
    }
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("calls still in flight after {DRAIN:?}; stopping anyway");
    }
}
