//! The container runtime's socket: one HTTP/2 connection, shared by every
//! forwarded call, made again when the runtime restarts.

use std::path::PathBuf;
use std::sync::Mutex;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// The body of a forwarded request.
pub type ProxyBody = UnsyncBoxBody<Bytes, BoxError>;

/// Any body error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a call could not reach the runtime (the kubelet sees it as
/// `Unavailable`, as if the runtime were down).
#[derive(Debug, thiserror::Error)]
#[error("container runtime {socket}: {message}")]
pub struct UpstreamError {
    /// The runtime's socket.
    pub socket: String,
    /// What failed.
    pub message: String,
}

/// The runtime's socket and the connection to it.
#[derive(Debug)]
pub struct Upstream {
    socket: PathBuf,
    sender: Mutex<Option<SendRequest<ProxyBody>>>,
}

impl Upstream {
    /// The runtime at `socket` (connected on first use).
    pub fn new(socket: PathBuf) -> Upstream {
        Upstream { socket, sender: Mutex::new(None) }
    }

    /// Sends `request` to the runtime. A request the connection did not
    /// take (it had closed: the runtime restarted) is sent once more on a
    /// new connection; a request that may have reached the runtime is
    /// never sent twice.
    pub async fn send(
        &self,
        request: http::Request<ProxyBody>,
    ) -> Result<http::Response<Incoming>, UpstreamError> {
        let mut sender = self.sender().await?;
        match sender.try_send_request(request).await {
            Ok(response) => Ok(response),
            Err(mut e) => match e.take_message() {
                Some(request) => {
                    self.forget();
                    let mut sender = self.sender().await?;
                    sender.send_request(request).await.map_err(|e| self.error(e.to_string()))
                }
                None => Err(self.error(e.into_error().to_string())),
            },
        }
    }

    fn error(&self, message: String) -> UpstreamError {
        UpstreamError { socket: self.socket.display().to_string(), message }
    }

    fn forget(&self) {
        *self.sender.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    async fn sender(&self) -> Result<SendRequest<ProxyBody>, UpstreamError> {
        let cached = self.sender.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(mut s) = cached
            && !s.is_closed()
            && s.ready().await.is_ok()
        {
            return Ok(s);
        }
        let stream = tokio::net::UnixStream::connect(&self.socket)
            .await
            .map_err(|e| self.error(format!("connect: {e}")))?;
        let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(crate::listen::STREAM_WINDOW)
            .initial_connection_window_size(crate::listen::CONNECTION_WINDOW)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| self.error(format!("HTTP/2 handshake: {e}")))?;
        let socket = self.socket.display().to_string();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%socket, error = %e, "runtime connection closed");
            }
        });
        *self.sender.lock().unwrap_or_else(|p| p.into_inner()) = Some(sender.clone());
        Ok(sender)
    }
}
