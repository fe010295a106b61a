//! The descheduler driver: kolo's [`Descheduler`](kolo_descheduler::Descheduler)
//! against a real API server.
//!
//! * [`watch`]: watchers for nodes, pods, NodeMetrics, PodMigrationJobs,
//!   Reservations (optional CRD) and workloads (ReplicaSets, StatefulSets,
//!   Jobs), sent to the driver as applies and deletes;
//! * [`stores`]: the driver's view, and a round's [`Cluster`](kolo_descheduler::Cluster);
//! * [`driver`]: the loop — `balance` every `deschedulingInterval`,
//!   `migrate` every 500 ms and on changes;
//! * [`apply`]: carries out each [`Action`] (jobs, their status and spec,
//!   Reservations, evictions, Events), putting what it wrote in the stores;
//! * [`evict`]: evictions through the Eviction API, a PodDisruptionBudget's
//!   429 told apart;
//! * [`events`]: Events on pods, jobs, nodes and Reservations;
//! * [`metrics`]: `/metrics` (migrations by phase and reason, evictions,
//!   Balance rounds, nodes by class per pool).

pub mod apply;
pub mod driver;
pub mod events;
pub mod evict;
pub mod metrics;
pub mod stores;
pub mod watch;

use std::path::Path;

pub use driver::{DeschedulerDriver, DeschedulerOptions};
pub use kolo_descheduler::config::{ConfigError, DeschedulerConfig};
pub use kolo_descheduler::{Action, Descheduler, Event, ObjectKey};
pub use watch::WatchScope;

use crate::client::{ConnectionLimits, MIN_CONNECTIONS, bounded_client, config};
use crate::error::KubeError;

/// A client for evictions: as [`crate::client::connect_with`], but
/// without kube's retry of 429 and 5xx answers, so a PodDisruptionBudget's
/// refusal comes back at once instead of after minutes of retries.
pub async fn eviction_client(kubeconfig: Option<&Path>) -> Result<kube::Client, KubeError> {
    let mut config = config(kubeconfig).await?;
    config.default_retry = false;
    let limits = ConnectionLimits { max_connections: MIN_CONNECTIONS };
    bounded_client(config, limits).map(|(client, _)| client).map_err(|e| KubeError::Kubeconfig {
        path: kubeconfig.map_or_else(|| "<inferred>".into(), |p| p.display().to_string()),
        message: e.to_string(),
    })
}
