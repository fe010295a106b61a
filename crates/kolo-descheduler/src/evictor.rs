//! [`Evictor`]: how a Balance plugin evicts, without knowing whether the
//! eviction becomes a PodMigrationJob, a direct eviction or a dry-run
//! record.
//!
//! As in Koordinator's descheduler framework, a plugin asks the evictor
//! first whether a pod may be evicted at all ([`Evictor::filter`]: the
//! evictor filter, never retried) and then to evict it
//! ([`Evictor::evict`]: refused when a limit is reached, which a later
//! round may find lifted).

use kolo_core::PodRef;
use kolo_scheduler::framework::PodInfo;

/// One eviction a plugin asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionRequest {
    /// The pod.
    pub pod: PodRef,
    /// The node it runs on.
    pub node: String,
    /// The plugin asking (`LowNodeLoad`), recorded as the trigger.
    pub plugin: &'static str,
    /// Why, in words an operator reads (`node is overutilized, ...`).
    pub reason: String,
}

/// Where a Balance plugin's evictions go.
pub trait Evictor {
    /// Whether `pod` may be evicted at all; `Err` names the rule that
    /// forbids it (a mirror pod, a DaemonSet pod, LSE QoS, ...).
    fn filter(&self, pod: &PodInfo) -> Result<(), String>;

    /// Evicts `pod` (creates its migration, or records it in a dry run);
    /// `Err` names the limit that refused it (`maxMigratingPerNode 2 reached
    /// on node n1`, ...).
    fn evict(&mut self, pod: &PodInfo, request: EvictionRequest) -> Result<(), String>;
}
