//! Calling the hook server: one HTTP/1.1 request per hook on its unix
//! socket, bounded by a timeout, with a failure policy per stage.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use kolo_api::runtime_hook::{FailurePolicy, HOOK_PATH, HookRequest, HookResponse, Stage};

/// The largest hook answer read (a response carries a few maps).
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Where the hooks are and which stages call them.
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    /// The hook server's unix socket.
    pub socket: PathBuf,
    /// The longest a hook may take, connection included.
    pub timeout: Duration,
    /// The stages that call the server, each with its failure policy.
    pub stages: BTreeMap<Stage, FailurePolicy>,
}

/// Why a hook call failed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// No connection to the socket.
    #[error("hook server {socket}: connect: {source}")]
    Connect {
        /// The socket.
        socket: String,
        /// The error.
        source: std::io::Error,
    },
    /// The HTTP exchange failed.
    #[error("hook server {socket}: {message}")]
    Http {
        /// The socket.
        socket: String,
        /// What failed.
        message: String,
    },
    /// No answer within the timeout.
    #[error("hook server {socket}: no answer within {timeout:?}")]
    Timeout {
        /// The socket.
        socket: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The server answered with an error status.
    #[error("hook server {socket}: HTTP {status}: {body}")]
    Status {
        /// The socket.
        socket: String,
        /// The status.
        status: u16,
        /// The answer's text.
        body: String,
    },
    /// The answer is not a hook response.
    #[error("hook server {socket}: bad response: {message}")]
    Decode {
        /// The socket.
        socket: String,
        /// serde's message.
        message: String,
    },
}

/// A client of one hook server.
#[derive(Debug, Clone)]
pub struct HookClient {
    config: HookConfig,
}

impl HookClient {
    /// A client for `config`.
    pub fn new(config: HookConfig) -> HookClient {
        HookClient { config }
    }

    /// The failure policy of `stage`, or `None` when the stage calls no
    /// hook.
    pub fn policy(&self, stage: Stage) -> Option<FailurePolicy> {
        self.config.stages.get(&stage).copied()
    }

    /// Calls the hook for `request` (whose stage must be set).
    pub async fn call(&self, request: &HookRequest) -> Result<HookResponse, HookError> {
        let timeout = self.config.timeout;
        match tokio::time::timeout(timeout, self.exchange(request)).await {
            Ok(result) => result,
            Err(_) => Err(HookError::Timeout { socket: self.socket(), timeout }),
        }
    }

    fn socket(&self) -> String {
        self.config.socket.display().to_string()
    }

    async fn exchange(&self, request: &HookRequest) -> Result<HookResponse, HookError> {
        let http = |message: String| HookError::Http { socket: self.socket(), message };
        let stream = tokio::net::UnixStream::connect(&self.config.socket)
            .await
            .map_err(|source| HookError::Connect { socket: self.socket(), source })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| http(format!("handshake: {e}")))?;
        tokio::spawn(async move {
            // The connection ends with the exchange; its error is the
            // exchange's, reported there.
            let _ = connection.await;
        });
        let body = serde_json::to_vec(request).map_err(|e| http(format!("encode: {e}")))?;
        let req = http::Request::post(HOOK_PATH)
            .header(http::header::HOST, "localhost")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| http(e.to_string()))?;
        let resp = sender.send_request(req).await.map_err(|e| http(e.to_string()))?;
        let status = resp.status();
        let bytes = Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| http(format!("reading the answer: {e}")))?
            .to_bytes();
        if status == http::StatusCode::NOT_FOUND {
            // A server without hooks for this path changes nothing.
            return Ok(HookResponse::default());
        }
        if !status.is_success() {
            let body = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned();
            return Err(HookError::Status { socket: self.socket(), status: status.as_u16(), body });
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| HookError::Decode { socket: self.socket(), message: e.to_string() })
    }
}
