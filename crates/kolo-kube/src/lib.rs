//! # kolo-kube
//!
//! kolo's act side for a real Kubernetes cluster (kube-rs): watchers and
//! reflectors gather state, the component crates decide, and the writers
//! here apply the decisions (bind, patch node status, create NodeMetric and
//! NodeSLO objects, evict, record Events). Nothing here decides anything a
//! simulator would need to decide too.
//!
//! * [`client`]: a [`kube::Client`] from a kubeconfig file or the pod's
//!   service account;
//! * [`leader`]: leader election with a `coordination.k8s.io/v1` Lease;
//! * [`health`]: the one `/healthz`, `/readyz` and `/metrics` endpoint of a
//!   process, which every component registers its readiness and metrics
//!   with (on the process's runtime or on a thread of its own);
//! * [`mirror`]: a watcher's events as applies and deletes, relists included;
//! * [`reflect`]: reflector stores with a change signal;
//! * [`optional_crd`]: watches of CRDs that may not be installed;
//! * [`manager`]: the SLO controllers (batch / mid allocatable, NodeMetric
//!   spec, NodeSLO);
//! * [`scheduler`]: the scheduler driver (watch → cache, bind, Events);
//! * [`webhook`]: the admission webhooks' HTTPS server (TLS, certificates,
//!   limits, fail-safe answers, metrics) around kolo-manager's pure
//!   decisions, fed from watches or from files, with the webhook
//!   configurations that register it;
//! * [`descheduler`]: the descheduler driver (watch → Cluster, balance and
//!   migrate rounds, PodMigrationJob / Reservation writes, evictions, Events);
//! * [`agent`]: the node agent's cluster side (NodeMetric status, Eviction).

pub mod agent;
pub mod client;
pub mod component;
pub mod descheduler;
pub mod error;
pub mod health;
pub mod leader;
pub mod manager;
pub mod mirror;
pub mod optional_crd;
pub mod reflect;
pub mod scheduler;
pub mod webhook;

pub use error::KubeError;
