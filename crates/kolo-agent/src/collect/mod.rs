//! Collectors: what the agent measures on its node.
//!
//! * [`node`]: node CPU and memory from `/proc/stat` and `/proc/meminfo`
//!   (and per-NUMA figures from sysfs), as Koordinator computes them;
//! * [`pod`]: pod and container CPU, memory and PSI from their cgroups;
//! * [`psi`]: the PSI file parser (node and cgroups share it) and the node
//!   PSI reader for `/proc/pressure`;
//! * [`topology`]: CPU topology (cores, sockets, NUMA nodes, siblings) from
//!   sysfs, and the cpulist format.
//!
//! Every reader takes its root (`/proc`, `/sys`, or the DaemonSet's
//! `/host-sys`; a directory tree in tests) instead of assuming one. The
//! default collection interval is 1 s.

pub mod node;
pub mod pod;
pub mod psi;
pub mod topology;
