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

/// Idle connections kept for the next hook (the kubelet starts a few
/// containers at a time).
const MAX_IDLE: usize = 4;

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// A client of one hook server. Connections are kept open between hooks
/// (up to [`MAX_IDLE`]): connecting is a good part of a hook's cost.
#[derive(Debug, Clone)]
pub struct HookClient {
    config: HookConfig,
    idle: std::sync::Arc<std::sync::Mutex<Vec<Sender>>>,
}

impl HookClient {
    /// A client for `config`.
    pub fn new(config: HookConfig) -> HookClient {
        HookClient { config, idle: Default::default() }
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

    /// An idle connection that is still open, else a new one.
    async fn sender(&self) -> Result<(Sender, bool), HookError> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        if let Some(sender) = idle.filter(|s| !s.is_closed()) {
            return Ok((sender, true));
        }
        let stream = tokio::net::UnixStream::connect(&self.config.socket)
            .await
            .map_err(|source| HookError::Connect { socket: self.socket(), source })?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| {
                HookError::Http { socket: self.socket(), message: format!("handshake: {e}") }
            })?;
        tokio::spawn(async move {
            // The connection's error is the exchange's, reported there.
            let _ = connection.await;
        });
        Ok((sender, false))
    }

    async fn exchange(&self, request: &HookRequest) -> Result<HookResponse, HookError> {
        let http = |message: String| HookError::Http { socket: self.socket(), message };
        let body =
            Bytes::from(serde_json::to_vec(request).map_err(|e| http(format!("encode: {e}")))?);
        let req = |body: Bytes| {
            http::Request::post(HOOK_PATH)
                .header(http::header::HOST, "localhost")
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(body))
                .map_err(|e| http(e.to_string()))
        };
        let (mut sender, reused) = self.sender().await?;
        let resp = match sender.send_request(req(body.clone())?).await {
            Ok(resp) => resp,
            // The server may have closed an idle connection as it was
            // taken: once more on a new one (a hook may run twice; every
            // kolo hook sets values, so twice is as once).
            Err(_) if reused => {
                let (fresh, _) = self.sender().await?;
                sender = fresh;
                sender.send_request(req(body)?).await.map_err(|e| http(e.to_string()))?
            }
            Err(e) => return Err(http(e.to_string())),
        };
        let status = resp.status();
        let bytes = Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| http(format!("reading the answer: {e}")))?
            .to_bytes();
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE && !sender.is_closed() {
            idle.push(sender);
        }
        drop(idle);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use kolo_api::runtime_hook::{ResourcesPatch, Stage};

    use super::*;

    /// A hook server answering a cpuset; `keep_alive` false closes every
    /// connection after its answer. Counts the connections it accepted.
    fn server(socket: &std::path::Path, keep_alive: bool) -> Arc<AtomicUsize> {
        let listener = tokio::net::UnixListener::bind(socket).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let service = hyper::service::service_fn(|_req| async {
                    let answer = HookResponse {
                        container_resources: ResourcesPatch {
                            cpuset_cpus: Some("1".into()),
                            ..Default::default()
                        },
                        ..Default::default()
                    };
                    let json = serde_json::to_vec(&answer).unwrap();
                    Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(json))))
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .keep_alive(keep_alive)
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        accepted
    }

    fn client(socket: &std::path::Path) -> HookClient {
        HookClient::new(HookConfig {
            socket: socket.to_path_buf(),
            timeout: Duration::from_secs(5),
            stages: [(Stage::PreCreateContainer, FailurePolicy::Ignore)].into(),
        })
    }

    fn request() -> HookRequest {
        HookRequest { stage: Some(Stage::PreCreateContainer), ..Default::default() }
    }

    #[tokio::test]
    async fn connections_are_reused_and_a_closed_one_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (kept, closed) = (dir.path().join("kept.sock"), dir.path().join("closed.sock"));
        let kept_count = server(&kept, true);
        let closed_count = server(&closed, false);
        for (socket, count, want) in [(&kept, &kept_count, 1), (&closed, &closed_count, 5)] {
            let client = client(socket);
            for _ in 0..5 {
                let answer = client.call(&request()).await.unwrap();
                assert_eq!(answer.container_resources.cpuset_cpus.as_deref(), Some("1"));
            }
            assert_eq!(count.load(Ordering::SeqCst), want, "{}", socket.display());
        }
    }

    #[tokio::test]
    async fn no_server_is_a_connect_error_naming_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let err = client(&dir.path().join("none.sock")).call(&request()).await.unwrap_err();
        assert!(matches!(err, HookError::Connect { .. }), "{err}");
        assert!(err.to_string().contains("none.sock"), "{err}");
    }
}
