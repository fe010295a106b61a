//! Driving a pod through a CRI endpoint as the kubelet does, for the
//! tests and the benchmark (`v1alpha2` and `v1` alike: the same code is
//! generated for both message sets).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kolo_api::runtime_hook::{HookRequest, HookResponse};

use crate::hook_client::{HookClient, HookConfig};
use crate::listen;
use crate::server::Proxy;
use crate::upstream::Upstream;

/// What one container printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The exit code.
    pub exit_code: i32,
    /// Its stdout and stderr lines, in order, without the CRI log prefix.
    pub lines: Vec<String>,
}

/// The busybox image the test clusters import (`scripts/cluster`).
pub const BUSYBOX_IMAGE: &str = "docker.io/local/busybox:1";

/// Reads a CRI log file (`<time> <stream> <F|P> <text>`) into lines.
pub fn read_cri_log(path: &Path) -> std::io::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().filter_map(|l| l.splitn(4, ' ').nth(3)).map(str::to_string).collect())
}

/// Removes the cgroup directory `relative` (e.g. `/kolo-ab12/pod-x`) and
/// its children from every v1 hierarchy under `/sys/fs/cgroup` (the pod
/// directories runc creates and leaves behind). Errors are ignored: the
/// directory may not exist in every hierarchy.
pub fn remove_cgroup(relative: &str) {
    let Ok(entries) = std::fs::read_dir("/sys/fs/cgroup") else { return };
    for e in entries.flatten() {
        let dir = e.path().join(relative.trim_start_matches('/'));
        remove_tree(&dir);
    }
}

fn remove_tree(dir: &Path) {
    if let Ok(children) = std::fs::read_dir(dir) {
        for c in children.flatten() {
            if c.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&c.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

macro_rules! pod_flow {
    ($version:ident) => {
        /// The pod flow over this CRI version's messages.
        pub mod $version {
            use std::collections::HashMap;
            use std::path::Path;

            use tonic::transport::Channel;

            use super::{BUSYBOX_IMAGE, Finished, read_cri_log};
            use crate::cri::$version as api;
            use api::runtime_service_client::RuntimeServiceClient;

            /// A host-network sandbox config (no CNI needed; host-network
            /// sandboxes need an empty hostname) under `cgroup_parent`.
            pub fn sandbox_config(
                name: &str,
                uid: &str,
                cgroup_parent: &str,
                log_dir: &Path,
                annotations: HashMap<String, String>,
            ) -> api::PodSandboxConfig {
                let namespaces = api::NamespaceOption {
                    network: api::NamespaceMode::Node as i32,
                    ..Default::default()
                };
                api::PodSandboxConfig {
                    metadata: Some(api::PodSandboxMetadata {
                        name: name.into(),
                        uid: uid.into(),
                        namespace: "kolo-test".into(),
                        attempt: 0,
                    }),
                    log_directory: log_dir.display().to_string(),
                    labels: [("io.kubernetes.pod.uid".to_string(), uid.to_string())].into(),
                    annotations,
                    linux: Some(api::LinuxPodSandboxConfig {
                        cgroup_parent: cgroup_parent.into(),
                        security_context: Some(api::LinuxSandboxSecurityContext {
                            namespace_options: Some(namespaces),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }
            }

            /// A busybox container running `script` with the resources
            /// the kubelet gives a BestEffort container (shares 2).
            pub fn container_config(name: &str, script: &str) -> api::ContainerConfig {
                api::ContainerConfig {
                    metadata: Some(api::ContainerMetadata { name: name.into(), attempt: 0 }),
                    image: Some(api::ImageSpec {
                        image: BUSYBOX_IMAGE.into(),
                        ..Default::default()
                    }),
                    command: vec!["/bin/sh".into(), "-c".into(), script.into()],
                    log_path: format!("{name}.log"),
                    linux: Some(api::LinuxContainerConfig {
                        resources: Some(api::LinuxContainerResources {
                            cpu_shares: 2,
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }
            }

            /// Creates the sandbox; its id.
            pub async fn run_sandbox(
                client: &mut RuntimeServiceClient<Channel>,
                config: &api::PodSandboxConfig,
            ) -> Result<String, tonic::Status> {
                let req = api::RunPodSandboxRequest {
                    config: Some(config.clone()),
                    ..Default::default()
                };
                Ok(client.run_pod_sandbox(req).await?.into_inner().pod_sandbox_id)
            }

            /// Creates a container in the sandbox; its id.
            pub async fn create(
                client: &mut RuntimeServiceClient<Channel>,
                sandbox_id: &str,
                sandbox: &api::PodSandboxConfig,
                config: api::ContainerConfig,
            ) -> Result<String, tonic::Status> {
                let req = api::CreateContainerRequest {
                    pod_sandbox_id: sandbox_id.into(),
                    config: Some(config),
                    sandbox_config: Some(sandbox.clone()),
                };
                Ok(client.create_container(req).await?.into_inner().container_id)
            }

            /// Starts the container and waits (up to `wait`) until it
            /// exits; what it printed.
            pub async fn start_to_exit(
                client: &mut RuntimeServiceClient<Channel>,
                container_id: &str,
                log_file: &Path,
                wait: std::time::Duration,
            ) -> Result<Finished, tonic::Status> {
                let req = api::StartContainerRequest { container_id: container_id.into() };
                client.start_container(req).await?;
                let deadline = tokio::time::Instant::now() + wait;
                loop {
                    let req = api::ContainerStatusRequest {
                        container_id: container_id.into(),
                        verbose: false,
                    };
                    let status =
                        client.container_status(req).await?.into_inner().status.unwrap_or_default();
                    if status.state == api::ContainerState::ContainerExited as i32 {
                        let lines = read_cri_log(log_file).map_err(|e| {
                            tonic::Status::internal(format!("{}: {e}", log_file.display()))
                        })?;
                        return Ok(Finished { exit_code: status.exit_code, lines });
                    }
                    if tokio::time::Instant::now() > deadline {
                        return Err(tonic::Status::deadline_exceeded(format!(
                            "container {container_id} still running after {wait:?}"
                        )));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }

            /// Stops and removes the sandbox and its containers.
            pub async fn remove_sandbox(
                client: &mut RuntimeServiceClient<Channel>,
                sandbox_id: &str,
            ) -> Result<(), tonic::Status> {
                client
                    .stop_pod_sandbox(api::StopPodSandboxRequest {
                        pod_sandbox_id: sandbox_id.into(),
                    })
                    .await?;
                client
                    .remove_pod_sandbox(api::RemovePodSandboxRequest {
                        pod_sandbox_id: sandbox_id.into(),
                    })
                    .await?;
                Ok(())
            }
        }
    };
}

pod_flow!(v1alpha2);
pod_flow!(v1);

/// The test containerd (`scripts/cluster start --runtime-only`, exported by
/// scripts/test): its CRI socket and the cgroup root its pods go under.
/// `None` after saying loudly that `test` skips; in CI (`CI=true`) a
/// missing containerd fails instead.
pub fn test_runtime(test: &str) -> Option<(PathBuf, String)> {
    let (sock, root) =
        (std::env::var("KOLO_TEST_CRI_SOCKET"), std::env::var("KOLO_TEST_CRI_CGROUP_ROOT"));
    if let (Ok(sock), Ok(root)) = (sock, root)
        && Path::new(&sock).exists()
    {
        return Some((sock.into(), root));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: KOLO_TEST_CRI_SOCKET / KOLO_TEST_CRI_CGROUP_ROOT unset: CI must run the containerd tests"
    );
    // Past the harness's capture, so the skip shows.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED {test}: no containerd (run scripts/test, or scripts/cluster start \
         --runtime-only DIR and export DIR/runtime.env) ***"
    );
    None
}

/// How long a test waits for a container that prints a line and exits.
pub const EXIT_WAIT: Duration = Duration::from_secs(60);

/// What a [`hook_server`] does.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Answers every request with this.
    Answer(Box<HookResponse>),
    /// Waits this long, then answers with no change.
    Sleep(Duration),
}

/// A hook server on a unix socket that records what it is asked (a
/// stand-in for the agent's, to test the proxy alone).
#[derive(Debug)]
pub struct HookServer {
    /// Its socket.
    pub socket: PathBuf,
    /// The requests it got, in order.
    pub seen: Arc<Mutex<Vec<HookRequest>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HookServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Starts a [`HookServer`] at `socket` (on the current tokio runtime).
pub fn hook_server(socket: &Path, behaviour: Behaviour) -> HookServer {
    let socket = socket.to_path_buf();
    let listener = tokio::net::UnixListener::bind(&socket).expect("binding the test hook server");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let (record, behaviour) = (record.clone(), behaviour.clone());
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let (record, behaviour) = (record.clone(), behaviour.clone());
                    async move {
                        let body = req.into_body().collect().await?.to_bytes();
                        let request: HookRequest =
                            serde_json::from_slice(&body).unwrap_or_default();
                        record.lock().unwrap().push(request);
                        let answer = match behaviour {
                            Behaviour::Answer(a) => *a,
                            Behaviour::Sleep(d) => {
                                tokio::time::sleep(d).await;
                                HookResponse::default()
                            }
                        };
                        let json = serde_json::to_vec(&answer).unwrap_or_default();
                        Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(json))))
                    }
                });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    HookServer { socket, seen, task }
}

/// A proxy served from this process.
#[derive(Debug)]
pub struct RunningProxy {
    /// Its socket.
    pub socket: PathBuf,
    /// The proxy (its stats).
    pub proxy: Arc<Proxy>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningProxy {
    /// Stops serving and waits until it has.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = (&mut self.task).await;
    }
}

/// Serves a proxy to `runtime` at `dir/proxy.sock` (on the current tokio
/// runtime).
pub fn start_proxy(dir: &Path, runtime: &Path, hooks: Option<HookConfig>) -> RunningProxy {
    let socket = dir.join("proxy.sock");
    let proxy =
        Arc::new(Proxy::new(Upstream::new(runtime.to_path_buf()), hooks.map(HookClient::new)));
    let bound = listen::bind(&socket).expect("binding the proxy's socket");
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let serving = proxy.clone();
    let task = tokio::spawn(async move {
        listen::serve(serving, &bound, async move {
            let _ = stopped.await;
        })
        .await;
    });
    RunningProxy { socket, proxy, stop: Some(stop), task }
}
