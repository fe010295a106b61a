//! Leaving the node as it was: the benchmark's namespace (and with it its
//! pods) is deleted and the agent it started is stopped when the benchmark
//! ends, fails, or is interrupted (SIGINT, SIGTERM).

use std::process::Child;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::signal::unix::{SignalKind, signal};

use super::pods::{self, Cluster};
use crate::BoxError;

/// What is still to undo.
#[derive(Debug, Default)]
struct Pending {
    agent: Option<Child>,
    /// The agent's NodeSLO file and log, removed when dropped.
    files: Option<tempfile::TempDir>,
    namespace: Option<String>,
}

/// The cluster connection with what the benchmark made on it; dropping
/// it undoes that.
pub(crate) struct Session {
    /// The connection.
    pub cluster: Cluster,
    pending: Arc<Mutex<Pending>>,
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Session {
    /// Creates namespace `namespace` on `cluster` and, until the session
    /// is dropped, deletes it and stops the agent on SIGINT or SIGTERM
    /// (then exits with 130 or 143).
    pub fn start(cluster: Cluster, namespace: &str) -> Result<Session, BoxError> {
        let pending = Arc::new(Mutex::new(Pending::default()));
        let (mut int, mut term) = {
            let _context = cluster.runtime.enter();
            (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?)
        };
        let (client, on_signal) = (cluster.client.clone(), Arc::clone(&pending));
        cluster.runtime.spawn(async move {
            let code = tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
            };
            let (agent, files, namespace) = {
                let mut p = lock(&on_signal);
                (p.agent.take(), p.files.take(), p.namespace.take())
            };
            stop_agent(agent);
            drop(files);
            if let Some(ns) = namespace {
                eprintln!("kolo bench interference: interrupted; deleting namespace {ns}");
                if let Err(e) = pods::delete_namespace(client, &ns, false).await {
                    eprintln!("kolo bench interference: deleting namespace {ns}: {e}");
                }
            }
            std::process::exit(code);
        });
        // Registered before the namespace exists, so that no moment is
        // left in which an interrupt would leave it behind.
        lock(&pending).namespace = Some(namespace.to_string());
        cluster.create_namespace(namespace)?;
        Ok(Session { cluster, pending })
    }

    /// Hands the agent `child` and its `files` over, to be stopped and
    /// removed with the session.
    pub fn set_agent(&self, child: Child, files: tempfile::TempDir) {
        let mut p = lock(&self.pending);
        (p.agent, p.files) = (Some(child), Some(files));
    }

    /// An error if the agent handed over has exited.
    pub fn agent_alive(&self) -> Result<(), BoxError> {
        match lock(&self.pending).agent.as_mut().map(Child::try_wait).transpose()? {
            Some(Some(status)) => Err(format!("the agent exited ({status})").into()),
            _ => Ok(()),
        }
    }

    /// Stops the agent now, if one runs.
    pub fn stop_agent(&self) {
        stop_agent(lock(&self.pending).agent.take());
    }

    /// Stops the agent and deletes the namespace, waiting until it is gone.
    pub fn finish(self) -> Result<(), BoxError> {
        self.undo()
    }

    fn undo(&self) -> Result<(), BoxError> {
        let (agent, namespace) = {
            let mut p = lock(&self.pending);
            (p.agent.take(), p.namespace.take())
        };
        stop_agent(agent);
        match namespace {
            Some(ns) => self.cluster.delete_namespace(&ns),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.undo() {
            eprintln!("kolo bench interference: cleaning up: {e}");
        }
    }
}

fn stop_agent(agent: Option<Child>) {
    if let Some(mut agent) = agent {
        let _ = agent.kill();
        let _ = agent.wait();
    }
}
