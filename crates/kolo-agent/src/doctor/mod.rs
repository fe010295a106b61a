//! `kolo doctor`: will kolo's agent work on this node, and which of its QoS
//! features will be on? The kernel and its fair scheduler (CFS / EEVDF),
//! the cgroup version and driver, the controllers and files kolo needs,
//! `cpu.idle`, CFS burst, memory QoS and PSI support, resctrl, and whether
//! the kubelet's own cgroup writes conflict with kolo's isolation (the
//! kernel refuses a CPU weight on an idle group). [`facts::probe`] looks
//! (creating and removing a cgroup of its own where no kubepods cgroup
//! shows the kernel's files); [`report::Report`] judges.

pub mod facts;
pub mod report;

pub use facts::{NodeFacts, Roots, probe};
pub use report::{Check, Feature, Report, Status};
