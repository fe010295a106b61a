//! `kolo runtime-proxy`: the CRI proxy between the kubelet and the
//! container runtime that calls the node agent's hooks
//! (`docs/runtime-proxy.md`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kolo_api::runtime_hook::{DEFAULT_HOOK_SOCKET, FailurePolicy, Stage};
use kolo_kube::health::Health;
use kolo_runtime_proxy::hook_client::{HookClient, HookConfig};
use kolo_runtime_proxy::listen;
use kolo_runtime_proxy::server::Proxy;
use kolo_runtime_proxy::upstream::Upstream;

use crate::logging::LogFormat;

/// `kolo runtime-proxy` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The socket the kubelet talks to (its
    /// `--container-runtime-endpoint=unix://…`).
    #[arg(long, value_name = "PATH", default_value = "/var/run/kolo/runtime-proxy.sock")]
    listen: String,
    /// The container runtime's socket.
    #[arg(long, value_name = "PATH", default_value = "/run/containerd/containerd.sock")]
    runtime_endpoint: String,
    /// The node agent's hook server (`kolo agent --hook-socket`).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_HOOK_SOCKET)]
    hook_socket: String,
    /// The stages that call the hook server (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "PreRunPodSandbox,PreCreateContainer,PreUpdateContainerResources"
    )]
    hook_stages: Vec<Stage>,
    /// Stages whose hook must succeed: when it fails, so does the CRI call
    /// (and the kubelet retries). Every other stage's failure is ignored:
    /// the container starts as the kubelet asked and the agent's reconcile
    /// loop fixes it.
    #[arg(long, value_delimiter = ',')]
    hook_fail_stages: Vec<Stage>,
    /// The longest one hook call may take, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    hook_timeout_ms: u64,
    /// Forward every call without calling hooks.
    #[arg(long)]
    no_hooks: bool,
    /// Serve /metrics, /healthz and /readyz here.
    #[arg(long, value_name = "ADDR")]
    health_listen: Option<SocketAddr>,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeProxyError {
    /// A flag is wrong.
    #[error("--{flag}: {message}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The socket could not be bound.
    #[error(transparent)]
    Bind(#[from] listen::BindError),
    /// The health endpoint or the runtime could not start.
    #[error("{0}")]
    Start(String),
}

/// `unix:///run/x.sock` or `/run/x.sock` → the path.
fn socket_path(flag: &'static str, endpoint: &str) -> Result<PathBuf, RuntimeProxyError> {
    let path = endpoint.strip_prefix("unix://").unwrap_or(endpoint);
    if !Path::new(path).is_absolute() {
        let message = format!("{endpoint:?} is not an absolute unix socket path");
        return Err(RuntimeProxyError::Flag { flag, message });
    }
    Ok(PathBuf::from(path))
}

fn hook_config(args: &Args) -> Result<Option<HookConfig>, RuntimeProxyError> {
    if args.no_hooks {
        return Ok(None);
    }
    if let Some(s) = args.hook_fail_stages.iter().find(|s| !args.hook_stages.contains(s)) {
        let message = format!("{s} is not in --hook-stages");
        return Err(RuntimeProxyError::Flag { flag: "hook-fail-stages", message });
    }
    if args.hook_timeout_ms == 0 || args.hook_timeout_ms > 60_000 {
        let message = format!("{} is not in 1..=60000", args.hook_timeout_ms);
        return Err(RuntimeProxyError::Flag { flag: "hook-timeout-ms", message });
    }
    let stages: BTreeMap<Stage, FailurePolicy> = args
        .hook_stages
        .iter()
        .map(|s| {
            let fail = args.hook_fail_stages.contains(s);
            (*s, if fail { FailurePolicy::Fail } else { FailurePolicy::Ignore })
        })
        .collect();
    Ok(Some(HookConfig {
        socket: socket_path("hook-socket", &args.hook_socket)?,
        timeout: Duration::from_millis(args.hook_timeout_ms),
        stages,
    }))
}

/// Runs the proxy until SIGINT / SIGTERM; removes its socket on the way out.
pub fn run(args: Args) -> Result<(), RuntimeProxyError> {
    crate::logging::init(args.log_format);
    let listen_path = socket_path("listen", &args.listen)?;
    let runtime_path = socket_path("runtime-endpoint", &args.runtime_endpoint)?;
    if listen_path == runtime_path {
        let message = "the proxy cannot listen on the runtime's own socket".to_string();
        return Err(RuntimeProxyError::Flag { flag: "listen", message });
    }
    let hooks = hook_config(&args)?;
    // One thread: every call crosses two connections (the kubelet's, the
    // runtime's), and on one thread handing a call between them wakes no
    // other thread; the proxy does little else than move bytes.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RuntimeProxyError::Start(format!("tokio runtime: {e}")))?;
    runtime.block_on(async move {
        let proxy = Arc::new(Proxy::new(
            Upstream::new(runtime_path.clone()),
            hooks.clone().map(HookClient::new),
        ));
        if let Some(addr) = args.health_listen {
            let health = Health::new("runtime-proxy");
            let mut registry = prometheus_client::registry::Registry::default();
            proxy.stats().register(&mut registry);
            health.add_registry(registry);
            health.set_ready(true);
            kolo_kube::health::serve(addr, health)
                .await
                .map_err(|e| RuntimeProxyError::Start(e.to_string()))?;
        }
        let socket = listen::bind(&listen_path)?;
        tracing::info!(
            listen = %listen_path.display(),
            runtime = %runtime_path.display(),
            hooks = ?hooks.as_ref().map(|h| (&h.socket, &h.stages)),
            "runtime proxy serving"
        );
        listen::serve(proxy, &socket, kolo_kube::component::shutdown_signal()).await;
        tracing::info!("runtime proxy stopped");
        Ok(())
    })
}
