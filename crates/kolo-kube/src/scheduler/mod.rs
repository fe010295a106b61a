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
//! * [`report`]: Events (`Scheduled`, `FailedScheduling`) and the pod's
//!   `PodScheduled` condition.

pub mod binder;
pub mod driver;
pub mod report;
pub mod watch;

pub use driver::{SchedulerDriver, Update};
