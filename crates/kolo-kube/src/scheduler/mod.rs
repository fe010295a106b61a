//! The scheduler driver: kolo's [`Scheduler`](kolo_scheduler::scheduler::Scheduler)
//! against a real API server.
//!
//! * [`watch`]: watchers for nodes, pods and NodeMetrics, turned into
//!   applies and deletes ([`crate::mirror`]) and sent to the scheduling
//!   thread;
//! * [`driver`]: the scheduling thread, which owns the scheduler, applies
//!   the changes and runs cycles;
//! * [`binder`]: binds through the `pods/binding` subresource on the async
//!   runtime, concurrently with the next cycles;
//! * [`report`]: Events (`Scheduled`, `FailedScheduling`, `Preempted`,
//!   `Preempting`) and the pod's `PodScheduled` condition;
//! * [`reservations`]: Reservations fed to the scheduler with their
//!   reserve pods, and their status (owners, unschedulable, expiry); the
//!   binder writes a reservation's bind as its status;
//! * [`metrics`]: attempts, latencies, queues, binds and the equivalence
//!   cache on `/metrics`;
//! * [`preempt`]: carries out a preemption the scheduler decided — evicts
//!   the victims through the Eviction API, sets the preemptor's
//!   `status.nominatedNodeName`.

pub mod binder;
pub mod driver;
pub mod metrics;
pub mod preempt;
pub mod report;
pub mod reservations;
pub mod watch;

pub use driver::{SchedulerDriver, Update};
