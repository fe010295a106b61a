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

/// What the webhook knows of the cluster: the profiles, the namespaces'
/// labels and the PriorityClasses. Built once per change of those objects
/// (not per request) and shared by every request.
#[derive(Debug, Clone, Default)]
pub struct AdmissionState {
    profiles: Vec<ClusterColocationProfile>,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    priority_classes: BTreeMap<String, PriorityClassInfo>,
}

impl AdmissionState {
    /// Builds the state. Problems with individual objects (e.g. a profile
    /// with an invalid selector) do not fail the build; they are returned by
    /// [`AdmissionState::warnings`].
    pub fn new(
        profiles: Vec<ClusterColocationProfile>,
        namespaces: BTreeMap<String, BTreeMap<String, String>>,
        priority_classes: BTreeMap<String, PriorityClassInfo>,
    ) -> AdmissionState {
        AdmissionState { profiles, namespaces, priority_classes }
    }

    /// Problems found while building the state, each naming the object.
    pub fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Mutates a pod being admitted.
pub fn mutate_pod(
    _state: &AdmissionState,
    _request: &PodAdmission,
    _random: &mut dyn rand::RngCore,
) -> MutateOutcome {
    MutateOutcome::Unchanged
}
