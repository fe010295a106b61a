//! # kolo-agent
//!
//! kolo's node agent, as composable pieces:
//!
//! * [`cgroup`]: one interface over cgroup v1 and v2 and both kubelet cgroup
//!   drivers — paths, the v1 ↔ v2 file registry with value conversions,
//!   per-file feature detection, typed readers, and an executor that applies
//!   a batch of writes in a safe order;
//! * [`collect`]: collectors for the node (`/proc`), pods and containers
//!   (cgroups), pressure (PSI) and CPU topology (sysfs);
//! * [`store`]: a bounded in-memory metric store answering avg / last /
//!   percentiles over a window;
//! * [`predictor`]: decaying-histogram peak predictor (prodReclaimable,
//!   prodPeak) with checkpoints;
//! * [`nodemetric`]: the NodeMetric status built from the store and predictor;
//! * [`pods`]: where the pod list comes from (the kubelet, or a file);
//! * [`kernel`]: which fair scheduler the kernel runs (CFS or EEVDF);
//! * [`history`]: the bounded history of the QoS actions (`/actions`).
//!
//! The shared vocabulary is [`AgentPod`] (what the agent needs to know of a
//! pod) and the samples in [`sample`].

pub mod agent;
pub mod agent_pod;
pub mod cgroup;
pub mod collect;
pub mod doctor;
pub mod evict;
pub mod fast_probe;
pub mod history;
pub mod katalyst;
pub mod kernel;
pub mod metrics;
pub mod nodemetric;
pub mod pods;
pub mod predictor;
pub mod qos;
pub mod sample;
pub mod sandbox;
pub mod store;

pub use agent_pod::{AgentPod, ContainerRef};
