//! Pod mutation. (Skeleton: filled in by the mutation work.)

use std::collections::BTreeMap;

use kolo_api::crd::ClusterColocationProfile;

use super::{MutateOutcome, PodAdmission};

/// A PriorityClass as the webhook needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityClassInfo {
    /// `value`.
    pub value: i32,
    /// `preemptionPolicy`, if set.
    pub preemption_policy: Option<String>,
}

/// What the webhook knows of the cluster.
#[derive(Debug, Clone, Default)]
pub struct AdmissionState {
    /// Every ClusterColocationProfile.
    pub profiles: Vec<ClusterColocationProfile>,
    /// Namespace name → its labels.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// PriorityClass name → value and preemption policy.
    pub priority_classes: BTreeMap<String, PriorityClassInfo>,
}

/// Mutates a pod being admitted.
pub fn mutate_pod(
    _state: &AdmissionState,
    _request: &PodAdmission,
    _random: &mut dyn rand::RngCore,
) -> MutateOutcome {
    MutateOutcome::Unchanged
}
