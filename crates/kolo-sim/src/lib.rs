//! `kolo-sim`: the whole of kolo on a simulated cluster.
//!
//! A [`scenario::Scenario`] describes nodes, a workload shaped like public
//! co-location traces ([`workload`]) and the policies to compare
//! ([`policy`]). The [`engine`] advances simulated time and runs the same
//! round objects the real components run — the scheduler
//! (`kolo_scheduler::Scheduler`), the manager's pass per node
//! (`kolo_manager::pass::Pass::decide_node`, throttling included), the
//! agent's QoS round (`kolo_agent::qos::QosLoop`, rate limit and cool-downs
//! included) — around a simulated world: usage curves
//! ([`usage`]), CPU contention ([`contention`]), pod start and finish
//! ([`node`]); tenants' quotas and jobs as gangs ([`jobs`]); kolo's
//! descheduler and hot-node time ([`descheduler`]). [`metrics`] and [`report`] turn a run into a summary, CSV
//! and a self-contained HTML report with plots. A scenario may start from
//! a snapshot of a real cluster ([`snapshot`]).
//!
//! Deciding is pure here too: a run is a function of (scenario, seed,
//! policy); the CLI (`kolo sim`) draws the progress bar and writes files.

pub mod agent;
pub mod bounds;
pub mod contention;
pub mod descheduler;
pub mod engine;
pub mod jobs;
pub mod manager;
pub mod metrics;
pub mod node;
pub mod objects;
pub mod policy;
pub mod report;
pub mod report_recycler;
pub mod scenario;
pub mod snapshot;
pub mod usage;
pub mod usage_history;
pub mod workload;
