//! The node agent on a real node: every act-side loop, for its own node
//! only. The decisions are [`kolo_agent::qos::QosLoop`]'s.
//!
//! * [`run`]: the whole agent from an [`AgentRun`] (what `kolo agent` and
//!   `kolo agent cluster` call);
//! * [`ticks`]: the tick loop, the QoS rounds and the fast-probe timer;
//! * [`driver`]: one round as a step over where the node state comes from
//!   and where the plan goes ([`PlanSink`]);
//! * [`source`]: the pod source (a file or the kubelet) and the agent;
//! * [`nodemetric`]: watches the node's NodeMetric spec, writes its status;
//! * [`report`]: writes the status on the spec's report interval;
//! * [`nodeslo`]: watches the node's NodeSLO;
//! * [`topology`]: the node's CPU topology annotation, for cpusets;
//! * [`watch`]: the watch of one object named after the node;
//! * [`eviction`]: evicts pods through the Eviction API;
//! * [`actions`]: `/actions`, the bounded history of the QoS actions;
//! * [`hook_server`]: the runtime hook server `kolo runtime-proxy` asks,
//!   answering from the [`hook_view`] the rounds publish.

pub mod actions;
pub mod demo;
pub mod driver;
pub mod eviction;
pub mod hook_server;
pub mod hook_view;
pub mod nodemetric;
pub mod nodeslo;
pub mod report;
pub mod run;
pub mod source;
pub mod ticks;
pub mod topology;
pub mod watch;

pub use driver::{CgroupSink, DryRunSink, PlanSink, round_step};
pub use eviction::{ApiEvictor, EvictionVersion, evict};
pub use nodemetric::{NodeMetricWriter, watch_node_metric};
pub use nodeslo::watch_node_slo;
pub use run::{AgentRun, AgentRunError, ClusterSide, run};
pub use source::{Source, SourceConfig, SourceError, build_agent};
pub use ticks::{QosDriver, run_ticks};
