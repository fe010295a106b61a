//! `kolo bench runtime-proxy`: what the proxy adds to a CRI call, measured
//! against a real runtime. One sandbox gets `containers` containers, each
//! created and started either straight at the runtime or through the proxy
//! (alternating, so both see the same machine and the same number of
//! containers); then ListContainers is timed the same way over them all.
//! The proxy is a separate process (`kolo runtime-proxy`, started by the
//! caller) calling a hook server in this process that answers every hook
//! with a change, so the figures include the hook round trip.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kolo_api::runtime_hook::{HookResponse, ResourcesPatch};
use serde::Serialize;
use tonic::transport::Channel;

use crate::cri::{self, v1alpha2 as api};
use crate::testing::{self, Behaviour, hook_server};
use api::runtime_service_client::RuntimeServiceClient;

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The runtime's CRI socket.
    pub runtime: PathBuf,
    /// The cgroup under which the bench's pod is made (e.g. the test
    /// containerd's `/kolo-<id>`).
    pub cgroup_root: String,
    /// Containers to create (half each way).
    pub containers: usize,
    /// ListContainers calls (half each way).
    pub lists: usize,
    /// The socket of the proxy to measure, serving `runtime` and calling
    /// hooks at `hook_socket` (see [`PROXY_HOOK_STAGES`]).
    pub proxy: PathBuf,
    /// Where the bench serves the hooks.
    pub hook_socket: PathBuf,
}

/// The stages the measured proxy should call (`--hook-stages`): the ones
/// kolo's agent serves, and a post stage.
pub const PROXY_HOOK_STAGES: &str =
    "PreRunPodSandbox,PreCreateContainer,PreUpdateContainerResources,PostStartContainer";

/// p50 and p99 of one way of calling, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Quantiles {
    /// Calls measured.
    pub samples: usize,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile (nearest rank).
    pub p99_us: f64,
}

/// One call's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallFigures {
    /// The CRI call.
    pub call: &'static str,
    /// Straight to the runtime.
    pub direct: Quantiles,
    /// Through the proxy.
    pub proxied: Quantiles,
}

impl CallFigures {
    /// What the proxy adds at p50 and p99, µs.
    pub fn added_us(&self) -> (f64, f64) {
        (self.proxied.p50_us - self.direct.p50_us, self.proxied.p99_us - self.direct.p99_us)
    }
}

/// Why the bench stopped.
#[derive(Debug, thiserror::Error)]
#[error("runtime proxy bench: {0}")]
pub struct BenchError(String);

/// The nearest-rank quantiles of `samples`.
pub fn quantiles(mut samples: Vec<Duration>) -> Quantiles {
    samples.sort();
    let at = |q: f64| {
        if samples.is_empty() {
            return 0.0;
        }
        let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        samples[rank - 1].as_secs_f64() * 1e6
    };
    Quantiles { samples: samples.len(), p50_us: at(0.5), p99_us: at(0.99) }
}

/// Runs the bench (on the current tokio runtime); `dir` holds the
/// containers' logs.
pub async fn run(config: &BenchConfig, dir: &Path) -> Result<Vec<CallFigures>, BenchError> {
    let err = |what: &str, e: &dyn std::fmt::Display| BenchError(format!("{what}: {e}"));
    let answer = HookResponse {
        container_resources: ResourcesPatch { cpu_shares: Some(2), ..Default::default() },
        ..Default::default()
    };
    let _server = hook_server(&config.hook_socket, Behaviour::Answer(Box::new(answer)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !config.proxy.exists() {
        if Instant::now() > deadline {
            return Err(BenchError(format!("no proxy at {} after 10 s", config.proxy.display())));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let client = |path: PathBuf| async move {
        cri::connect(&path).await.map(RuntimeServiceClient::new).map_err(|e| err("connect", &e))
    };
    let mut clients = [client(config.runtime.clone()).await?, client(config.proxy.clone()).await?];
    let uid = format!("kolo-bench-{}", std::process::id());
    let parent = format!("{}/pod{uid}", config.cgroup_root);
    let sandbox =
        testing::v1alpha2::sandbox_config("bench", &uid, &parent, dir, Default::default());
    let id = testing::v1alpha2::run_sandbox(&mut clients[0], &sandbox)
        .await
        .map_err(|e| err("RunPodSandbox", &e))?;
    let figures = measure(config, &mut clients, &id, &sandbox).await;
    let removed = testing::v1alpha2::remove_sandbox(&mut clients[0], &id).await;
    testing::remove_cgroup(&parent);
    removed.map_err(|e| err("removing the bench's sandbox", &e))?;
    figures
}

async fn measure(
    config: &BenchConfig,
    clients: &mut [RuntimeServiceClient<Channel>; 2],
    sandbox_id: &str,
    sandbox: &api::PodSandboxConfig,
) -> Result<Vec<CallFigures>, BenchError> {
    let err = |what: &str, e: &dyn std::fmt::Display| BenchError(format!("{what}: {e}"));
    let mut create = [Vec::new(), Vec::new()];
    let mut start = [Vec::new(), Vec::new()];
    for i in 0..config.containers {
        let way = i % 2;
        let name = format!("c{i}");
        let container = testing::v1alpha2::container_config(&name, "exec sleep 3600");
        let t = Instant::now();
        let cid = testing::v1alpha2::create(&mut clients[way], sandbox_id, sandbox, container)
            .await
            .map_err(|e| err("CreateContainer", &e))?;
        create[way].push(t.elapsed());
        let t = Instant::now();
        clients[way]
            .start_container(api::StartContainerRequest { container_id: cid })
            .await
            .map_err(|e| err("StartContainer", &e))?;
        start[way].push(t.elapsed());
    }
    let mut list = [Vec::new(), Vec::new()];
    for i in 0..config.lists {
        let way = i % 2;
        let t = Instant::now();
        let listed = clients[way]
            .list_containers(api::ListContainersRequest::default())
            .await
            .map_err(|e| err("ListContainers", &e))?;
        list[way].push(t.elapsed());
        if listed.into_inner().containers.len() < config.containers {
            return Err(BenchError("ListContainers: fewer containers than created".into()));
        }
    }
    let figures = |call, [direct, proxied]: [Vec<Duration>; 2]| CallFigures {
        call,
        direct: quantiles(direct),
        proxied: quantiles(proxied),
    };
    Ok(vec![
        figures("CreateContainer", create),
        figures("StartContainer", start),
        figures("ListContainers", list),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let ms = |v: &[u64]| v.iter().map(|m| Duration::from_millis(*m)).collect::<Vec<_>>();
        let q = quantiles(ms(&[5, 1, 4, 2, 3]));
        assert_eq!((q.samples, q.p50_us, q.p99_us), (5, 3000.0, 5000.0));
        let hundred: Vec<u64> = (1..=100).collect();
        let q = quantiles(ms(&hundred));
        assert_eq!((q.p50_us, q.p99_us), (50_000.0, 99_000.0));
        assert_eq!(quantiles(Vec::new()).samples, 0);
    }
}
