//! The agent's runtime hook server: `kolo runtime-proxy` asks it, before
//! the CRI calls that create a pod or a container, what to change
//! (`POST /v1/hook` on a unix socket, [`kolo_api::runtime_hook`]).
//!
//! The decisions are [`kolo_agent::qos::hook`]'s (the reconcile loop's own
//! strategies); this module finds the pod, answers, and writes the pod
//! cgroup values the CRI cannot carry:
//!
//! * `PreCreateContainer`, `PreUpdateContainerResources`: the container's
//!   patch;
//! * `PreRunPodSandbox`: the pod-level writes are made here (the kubelet
//!   created the pod cgroup already), and the answer is empty;
//! * every other stage: an empty answer.
//!
//! The pod is looked up by UID in the last round's [`HookViews`]; a pod
//! not there yet (the agent's source shows new pods at its next sync) makes
//! the server ask the pod source once, on a blocking thread. A pod still
//! unknown gets an empty answer: the proxy goes on as the kubelet asked and
//! the reconcile loop sets the values within a round.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use kolo_agent::agent::Agent;
use kolo_agent::cgroup::{CgroupWrite, Cgroups};
use kolo_agent::pods::PodSource;
use kolo_agent::qos::hook::{HookDecision, container_decision, pod_decision};
use kolo_agent::qos::{NodeState, PodState};
use kolo_api::crd::NodeSLOSpec;
use kolo_api::runtime_hook::{HOOK_PATH, HookRequest, HookResponse, Stage};
use kolo_core::clock::Timestamp;

use super::hook_view::HookViews;
use super::ticks::lock;

/// The largest request body accepted (a pod's annotations fit many times).
pub const MAX_BODY: usize = 1 << 20;

/// What became of one request (the `outcome` label of the request counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A container patch was answered.
    Patched,
    /// The pod cgroup was written (or would have been, in a dry run).
    PodWritten,
    /// The pod is known and nothing is to change for it.
    NoChange,
    /// The stage is one the agent does nothing at.
    Ignored,
    /// The request names no pod, or a pod the agent does not know.
    UnknownPod,
    /// The decision or the pod cgroup writes failed (logged).
    Failed,
}

impl Outcome {
    /// Every outcome, in label order.
    pub const ALL: [Outcome; 6] = [
        Outcome::Patched,
        Outcome::PodWritten,
        Outcome::NoChange,
        Outcome::Ignored,
        Outcome::UnknownPod,
        Outcome::Failed,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Patched => "patched",
            Outcome::PodWritten => "pod_written",
            Outcome::NoChange => "no_change",
            Outcome::Ignored => "ignored",
            Outcome::UnknownPod => "unknown_pod",
            Outcome::Failed => "failed",
        }
    }
}

/// Requests counted by stage and outcome, and bad requests.
#[derive(Debug, Default)]
pub struct HookMetrics {
    counts: [[AtomicU64; Outcome::ALL.len()]; Stage::ALL.len()],
    bad: AtomicU64,
}

impl HookMetrics {
    fn slot(&self, stage: Stage, outcome: Outcome) -> &AtomicU64 {
        let s = Stage::ALL.iter().position(|x| *x == stage).unwrap_or(0);
        let o = Outcome::ALL.iter().position(|x| *x == outcome).unwrap_or(0);
        &self.counts[s][o]
    }

    fn count(&self, stage: Stage, outcome: Outcome) {
        self.slot(stage, outcome).fetch_add(1, Ordering::Relaxed);
    }

    /// The count of `stage` requests that ended in `outcome`.
    pub fn get(&self, stage: Stage, outcome: Outcome) -> u64 {
        self.slot(stage, outcome).load(Ordering::Relaxed)
    }

    /// Appends the counters in the OpenMetrics text format (no `# EOF`),
    /// for [`crate::health::Health::add_metrics`]. Only non-zero series.
    pub fn encode(&self, text: &mut String) {
        use std::fmt::Write;
        let name = "kolo_agent_hook_requests";
        let _ = writeln!(text, "# HELP {name} Runtime hook requests by stage and outcome.");
        let _ = writeln!(text, "# TYPE {name} counter");
        for stage in Stage::ALL {
            for outcome in Outcome::ALL {
                let n = self.get(stage, outcome);
                if n > 0 {
                    let outcome = outcome.as_str();
                    let _ = writeln!(
                        text,
                        "{name}_total{{stage=\"{stage}\",outcome=\"{outcome}\"}} {n}"
                    );
                }
            }
        }
        let bad = "kolo_agent_hook_bad_requests";
        let _ = writeln!(text, "# HELP {bad} Runtime hook requests refused as malformed.");
        let _ = writeln!(text, "# TYPE {bad} counter");
        let _ = writeln!(text, "{bad}_total {}", self.bad.load(Ordering::Relaxed));
    }
}

/// The hook server's state: the published views, the agent (asked only
/// for pods the views do not hold yet) and the node's cgroups.
pub struct HookServer<S> {
    agent: Arc<Mutex<Agent<S>>>,
    views: Arc<HookViews>,
    cgroups: Arc<Cgroups>,
    dry_run: bool,
    /// The request counters.
    pub metrics: HookMetrics,
}

/// A pod found, with the node and NodeSLO to decide for it.
struct Resolved {
    node: Arc<NodeState>,
    slo: Arc<NodeSLOSpec>,
    pod: Arc<PodState>,
}

impl<S: PodSource + 'static> HookServer<S> {
    /// A server over `agent`, answering from `views`; with `dry_run` the
    /// pod cgroup writes are logged, not made.
    pub fn new(agent: Arc<Mutex<Agent<S>>>, views: Arc<HookViews>, dry_run: bool) -> HookServer<S> {
        let cgroups = Arc::clone(lock(&agent).cgroups());
        HookServer { agent, views, cgroups, dry_run, metrics: HookMetrics::default() }
    }

    /// Answers one request of `stage`.
    pub async fn answer(&self, stage: Stage, request: &HookRequest) -> (HookResponse, Outcome) {
        let empty = HookResponse::default();
        let wants_pod = matches!(
            stage,
            Stage::PreRunPodSandbox
                | Stage::PreCreateContainer
                | Stage::PreUpdateContainerResources
        );
        if !wants_pod {
            return (empty, Outcome::Ignored);
        }
        let key = PodKey::of(request);
        let Some(found) = self.resolve(&key).await else {
            tracing::debug!(%stage, ?key, "runtime hook for a pod the agent does not know: no change");
            return (empty, Outcome::UnknownPod);
        };
        let decided = match stage {
            Stage::PreRunPodSandbox => pod_decision(&found.node, &found.slo, &found.pod),
            _ => {
                let name = container_name(request, &found.pod);
                container_decision(&found.node, &found.slo, &found.pod, &name)
            }
        };
        let decision = match decided {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(%stage, error = %e, "runtime hook: no decision");
                return (empty, Outcome::Failed);
            }
        };
        log_decision(stage, &found.pod, &decision);
        if stage == Stage::PreRunPodSandbox {
            return (empty, self.write_pod(&decision.pod_writes));
        }
        let outcome = if decision.patch.is_empty() { Outcome::NoChange } else { Outcome::Patched };
        (HookResponse { container_resources: decision.patch, ..empty }, outcome)
    }

    /// The pod `key` names from the views, else from the pod source asked
    /// once (on a blocking thread: the tick may hold the agent, and a
    /// kubelet answers within its timeout).
    async fn resolve(&self, key: &PodKey) -> Option<Resolved> {
        let view = self.views.current();
        let known = match key {
            PodKey::None => return None,
            PodKey::Uid(uid) => view.pods.get(uid),
            PodKey::Container(id) => {
                view.pods.values().find(|p| p.pod.containers.iter().any(|c| c.has_id(id)))
            }
        };
        if let (Some(node), Some(pod)) = (&view.node, known) {
            let (node, pod) = (Arc::clone(node), Arc::clone(pod));
            return Some(Resolved { node, slo: Arc::clone(&view.slo), pod });
        }
        let agent = Arc::clone(&self.agent);
        let (key, need_node) = (key.clone(), view.node.is_none());
        let fresh = tokio::task::spawn_blocking(move || {
            let mut agent = lock(&agent);
            let now = Timestamp::now();
            for e in agent.sync_pods_now(now) {
                tracing::debug!(error = %e, "pod source, asked for a runtime hook");
            }
            let pod = match &key {
                PodKey::Uid(uid) => agent.pod_state(uid),
                PodKey::Container(id) => agent.pod_state_with_container(id),
                PodKey::None => None,
            }?
            .clone();
            // Before the first round only: the node's fields from the agent.
            let node = need_node.then(|| agent.node_state(now).without_pods());
            Some((pod, node))
        })
        .await
        .ok()??;
        let (pod, node) = fresh;
        let node = match (node, &view.node) {
            (Some(n), _) => Arc::new(n),
            (None, Some(n)) => Arc::clone(n),
            (None, None) => return None,
        };
        Some(Resolved { node, slo: Arc::clone(&view.slo), pod: Arc::new(pod) })
    }

    /// Makes the pod cgroup writes of a `PreRunPodSandbox` (a few small
    /// files: done inline, the hook runtime has nothing else to do).
    fn write_pod(&self, writes: &[CgroupWrite]) -> Outcome {
        if writes.is_empty() {
            return Outcome::NoChange;
        }
        let report = self.cgroups.executor().dry_run(self.dry_run).apply(writes);
        for w in report.changed() {
            tracing::info!(path = %w.path.display(), old = %w.old, new = %w.new, "cgroup written (runtime hook)");
        }
        for e in &report.errors {
            tracing::warn!(error = %e, "cgroup write failed (runtime hook)");
        }
        if report.errors.is_empty() { Outcome::PodWritten } else { Outcome::Failed }
    }
}

/// How a request names its pod: by UID (the stages that carry the sandbox
/// config), else by the runtime id of its container (the proxy keeps no
/// state, so `UpdateContainerResources` carries only that id).
#[derive(Debug, Clone, PartialEq, Eq)]
enum PodKey {
    Uid(String),
    Container(String),
    None,
}

impl PodKey {
    fn of(request: &HookRequest) -> PodKey {
        let uid = request.pod.as_ref().map(|p| p.uid.as_str()).unwrap_or_default();
        let id = request.container.as_ref().map(|c| c.id.as_str()).unwrap_or_default();
        match (uid, id) {
            ("", "") => PodKey::None,
            ("", id) => PodKey::Container(id.to_string()),
            (uid, _) => PodKey::Uid(uid.to_string()),
        }
    }
}

/// The container a request is about: its name, or the name of the pod's
/// container with the request's runtime id (a stage that only knows the
/// id).
fn container_name(request: &HookRequest, pod: &PodState) -> String {
    let Some(c) = &request.container else { return String::new() };
    if !c.name.is_empty() || c.id.is_empty() {
        return c.name.clone();
    }
    pod.pod.containers.iter().find(|r| r.has_id(&c.id)).map(|r| r.name.clone()).unwrap_or_default()
}

fn log_decision(stage: Stage, pod: &PodState, decision: &HookDecision) {
    if decision.reasons.is_empty() {
        return;
    }
    tracing::debug!(%stage, pod = %pod.pod.id, reasons = ?decision.reasons, "runtime hook decided");
}

/// A request body that is not a hook request; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hook request: {field}: {message}")]
pub struct BadRequest {
    /// The JSON path of the field (`.` for the whole body).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// Parses a request body; the stage is required.
pub fn parse_request(body: &[u8]) -> Result<(Stage, HookRequest), BadRequest> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    let request: HookRequest = serde_path_to_error::deserialize(de)
        .map_err(|e| BadRequest { field: e.path().to_string(), message: e.inner().to_string() })?;
    let stage = request
        .stage
        .ok_or_else(|| BadRequest { field: "stage".into(), message: "missing".into() })?;
    Ok((stage, request))
}

/// The hook server's routes: `POST /v1/hook`, bodies up to [`MAX_BODY`]
/// (larger: 413).
pub fn router<S: PodSource + 'static>(server: Arc<HookServer<S>>) -> Router {
    Router::new()
        .route(HOOK_PATH, post(handle::<S>))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(server)
}

async fn handle<S: PodSource + 'static>(
    State(server): State<Arc<HookServer<S>>>,
    body: Bytes,
) -> Response {
    let (stage, request) = match parse_request(&body) {
        Ok(parsed) => parsed,
        Err(e) => {
            server.metrics.bad.fetch_add(1, Ordering::Relaxed);
            return (StatusCode::BAD_REQUEST, e.to_string()).into_response();
        }
    };
    let (response, outcome) = server.answer(stage, &request).await;
    server.metrics.count(stage, outcome);
    axum::Json(response).into_response()
}

/// The hook socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HookSocketError {
    /// Something other than a socket is at the path.
    #[error("--hook-socket {path}: exists and is not a socket (not removed)")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// Removing, creating, binding or restricting failed.
    #[error("--hook-socket {path}: {action}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// Binds `path`: a stale socket there is removed, the parent directory
/// created, and the socket made `0600` (only root talks to the agent).
pub fn bind_socket(path: &Path) -> Result<std::os::unix::net::UnixListener, HookSocketError> {
    let io =
        |action| move |source| HookSocketError::Io { path: path.to_path_buf(), action, source };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(io("removing the stale socket"))?;
        }
        Ok(_) => return Err(HookSocketError::NotASocket { path: path.to_path_buf() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("reading")(e)),
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io("creating the parent directory"))?;
    }
    let listener = std::os::unix::net::UnixListener::bind(path).map_err(io("binding"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io("restricting to 0600"))?;
    listener.set_nonblocking(true).map_err(io("setting non-blocking"))?;
    Ok(listener)
}

/// Serves `server` on `path` from a thread of its own (a hook never waits
/// for the tick loop, and a failing server never stops it). On SIGINT or
/// SIGTERM the socket is removed and the process exits (status 0): the
/// agent keeps no state that needs more of a shutdown.
pub fn serve_on_thread<S: PodSource + 'static>(
    path: &Path,
    server: Arc<HookServer<S>>,
) -> Result<(), HookSocketError> {
    let listener = bind_socket(path)?;
    let io =
        |action| move |source| HookSocketError::Io { path: path.to_path_buf(), action, source };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("starting the runtime"))?;
    let owned = path.to_path_buf();
    std::thread::Builder::new()
        .name("hooks".into())
        .spawn(move || runtime.block_on(serve_until_signal(listener, server, owned)))
        .map_err(io("starting the thread"))?;
    Ok(())
}

async fn serve_until_signal<S: PodSource + 'static>(
    listener: std::os::unix::net::UnixListener,
    server: Arc<HookServer<S>>,
    path: PathBuf,
) {
    let listener = match tokio::net::UnixListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, path = %path.display(), "hook server stopped");
            return;
        }
    };
    tracing::info!(path = %path.display(), "serving runtime hooks");
    let serve = axum::serve(listener, router(server)).into_future();
    tokio::select! {
        result = serve => {
            if let Err(e) = result {
                tracing::error!(error = %e, "hook server stopped");
            }
        }
        () = crate::component::shutdown_signal() => {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(error = %e, path = %path.display(), "removing the hook socket");
            }
            std::process::exit(0);
        }
    }
}

#[cfg(test)]
#[path = "hook_server_tests.rs"]
mod tests;
