//! # kolo-manager
//!
//! The decisions of kolo's manager, as pure functions of (cluster state,
//! configuration, time):
//!
//! * [`config`]: the `slo-controller-config` ConfigMap, parsed key by key,
//!   layered per node, and kept at its last good value;
//! * [`noderesource`]: batch and mid allocatable of a node, with every term
//!   of the formula, update throttling and degradation;
//! * [`nodemetric`]: the NodeMetric spec (collect policy) of each node;
//! * [`nodeslo`]: the NodeSLO spec of each node;
//! * [`pass`]: one round of the SLO controllers over the whole cluster
//!   (or one node), holding what it remembers between rounds: the object
//!   kolo-kube's controller and kolo-sim's engine both drive;
//! * [`webhook`]: pod mutation (ClusterColocationProfile, resource
//!   translation) and validation, and the AdmissionReviews they read and
//!   answer.
//!
//! Nothing here does I/O: the HTTPS server that serves the webhooks, and
//! the controllers that write what the passes decide, are `kolo-kube`'s.

pub mod config;
pub mod nodemetric;
pub mod noderesource;
pub mod nodeslo;
pub mod pass;
pub mod webhook;
pub mod whatif;
