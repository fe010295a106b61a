//! Pod mutation (spec §4.2–§4.3): ClusterColocationProfiles, resource
//! translation and the ExtendedResourceSpec annotation, as one pure
//! function of the request, the cluster state and a random source.
//!
//! # What runs when
//!
//! | request | what runs |
//! | --- | --- |
//! | sub-resource (`status`, `binding`, ...) | nothing |
//! | `CREATE` | profiles, translation, ExtendedResourceSpec |
//! | `UPDATE` with label `pod.koordinator.sh/mutating-update: "true"` | profiles (selectors match new *or* old labels), translation, ExtendedResourceSpec |
//! | other `UPDATE` | ExtendedResourceSpec (the reference runs it on updates too) |
//! | `DELETE`, `CONNECT` | nothing |
//!
//! # The create pipeline
//!
//! 1. Profiles whose selectors match ([`profile`]) are taken in
//!    lexicographic name order; each is applied with its probability
//!    ([`probability`]). A profile naming a PriorityClass that does not exist
//!    denies the pod.
//! 2. Resources are translated ([`translate`]) if at least one profile
//!    matched (even if every match was skipped by probability) or the pod
//!    declares Katalyst `reclaimed_cores` ([`katalyst`]), unless a matched
//!    profile carries `config.koordinator.sh/skip-update-resources`.
//! 3. The ExtendedResourceSpec annotation is brought up to date
//!    ([`extended_resource_spec`]).
//! 4. If the pod changed, the JSON patch from the request's pod is built
//!    ([`patch`]).
//!
//! Namespace labels come from [`AdmissionState`]. A namespace the state
//! does not know is treated as having only the label Kubernetes puts on
//! every namespace, `kubernetes.io/metadata.name: <name>` (also added to
//! known namespaces that lack it); the reference treats a failed namespace
//! lookup as a match of every namespace selector.
//!
//! Mutation is idempotent: mutating its own output again (given the same
//! random outcomes) changes nothing, so the API server may reinvoke the
//! webhook safely. The exception is a profile that selects on, or copies
//! (key mappings), a label or annotation that a profile changes: the second
//! pass then sees different input.

pub mod extended_resource_spec;
pub mod katalyst;
pub mod patch;
pub mod probability;
pub mod profile;
pub mod strategic_merge;
pub mod translate;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kolo_api::crd::ClusterColocationProfile;
use kolo_api::names::label;

use self::profile::CompiledProfile;
use self::strategic_merge::StrategicPatchError;
use super::{MutateOutcome, Operation, PodAdmission};

pub use self::probability::seeded_rng;

/// The label Kubernetes sets on every namespace to its name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A PriorityClass as the webhook needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityClassInfo {
    /// `value`.
    pub value: i32,
    /// `preemptionPolicy`, if set.
    pub preemption_policy: Option<String>,
}

/// Why a pod is denied by the mutating webhook.
#[derive(Debug, thiserror::Error)]
pub enum MutationError {
    /// A profile names a PriorityClass the cluster does not have.
    #[error(
        "ClusterColocationProfile {profile} sets priorityClassName {name}, but PriorityClass {name} does not exist: create it (for example `kubectl create priorityclass {name} --value={example}`) or fix the profile's spec.priorityClassName",
        example = MutationError::example_value(.name)
    )]
    UnknownPriorityClass {
        /// The profile.
        profile: String,
        /// The missing PriorityClass.
        name: String,
    },
    /// A profile's patch made an invalid pod.
    #[error("ClusterColocationProfile {profile}: {source}")]
    Patch {
        /// The profile.
        profile: String,
        /// What went wrong.
        source: StrategicPatchError,
    },
    /// The JSON patch could not be built.
    #[error(transparent)]
    JsonPatch(#[from] patch::PatchError),
}

impl MutationError {
    /// A plausible value for the PriorityClass a message suggests creating:
    /// the default of its Koordinator band, or the batch default.
    fn example_value(name: &str) -> i32 {
        match kolo_api::PriorityClass::from_name(name) {
            kolo_api::PriorityClass::None => kolo_api::PriorityClass::Batch.default_priority(),
            class => class.default_priority(),
        }
    }
}

/// What the webhook knows of the cluster: the profiles, the namespaces'
/// labels and the PriorityClasses. Built once per change of those objects
/// (not per request) and shared by every request.
#[derive(Debug, Clone, Default)]
pub struct AdmissionState {
    /// Usable profiles, sorted by name.
    profiles: Vec<CompiledProfile>,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    priority_classes: BTreeMap<String, PriorityClassInfo>,
    warnings: Vec<String>,
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
        let mut warnings = Vec::new();
        let mut by_name: BTreeMap<String, CompiledProfile> = BTreeMap::new();
        for profile in &profiles {
            match CompiledProfile::compile(profile, &mut warnings) {
                Ok(compiled) => {
                    if let Some(pc) = compiled.priority_class_name()
                        && !priority_classes.contains_key(pc)
                    {
                        warnings.push(format!(
                            "ClusterColocationProfile {}: spec.priorityClassName: PriorityClass {pc} does not exist; pods the profile applies to are denied until it is created",
                            compiled.name()
                        ));
                    }
                    let name = compiled.name().to_string();
                    if by_name.insert(name.clone(), compiled).is_some() {
                        warnings.push(format!(
                            "ClusterColocationProfile {name} is defined more than once; the last definition is used"
                        ));
                    }
                }
                Err(e) => warnings.push(e.to_string()),
            }
        }
        let mut namespaces = namespaces;
        for (name, labels) in &mut namespaces {
            labels.entry(NAMESPACE_NAME_LABEL.to_string()).or_insert_with(|| name.clone());
        }
        AdmissionState {
            profiles: by_name.into_values().collect(),
            namespaces,
            priority_classes,
            warnings,
        }
    }

    /// Problems found while building the state, each naming the object.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The names of the usable profiles, in the order they apply.
    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(CompiledProfile::name)
    }

    /// The labels the webhook uses for namespace `name` (see the module
    /// docs for unknown namespaces).
    fn namespace_labels(&self, name: &str) -> std::borrow::Cow<'_, BTreeMap<String, String>> {
        match self.namespaces.get(name) {
            Some(labels) => std::borrow::Cow::Borrowed(labels),
            None => std::borrow::Cow::Owned(BTreeMap::from([(
                NAMESPACE_NAME_LABEL.to_string(),
                name.to_string(),
            )])),
        }
    }
}

/// Mutates a pod being admitted.
pub fn mutate_pod(
    state: &AdmissionState,
    request: &PodAdmission,
    random: &mut dyn rand::RngCore,
) -> MutateOutcome {
    if request.sub_resource.as_deref().is_some_and(|s| !s.is_empty()) {
        return MutateOutcome::Unchanged;
    }
    let full = match request.operation {
        Operation::Create => true,
        Operation::Update => request
            .pod
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get(label::MUTATING_UPDATE).is_some_and(|v| v == "true")),
        Operation::Delete | Operation::Connect => return MutateOutcome::Unchanged,
    };
    let mut pod = request.pod.clone();
    let applied_profiles = if full {
        match apply_profiles(state, request, &mut pod, random) {
            Ok(applied) => applied,
            Err(e) => return MutateOutcome::Denied(e.to_string()),
        }
    } else {
        Vec::new()
    };
    extended_resource_spec::update_annotation(&mut pod);
    if pod == request.pod {
        return MutateOutcome::Unchanged;
    }
    match patch::json_patch(&request.pod, &pod) {
        Ok(patch) => MutateOutcome::Patched { pod: Box::new(pod), patch, applied_profiles },
        Err(e) => MutateOutcome::Denied(MutationError::from(e).to_string()),
    }
}

/// Steps 1 and 2 of the create pipeline; returns the applied profiles.
fn apply_profiles(
    state: &AdmissionState,
    request: &PodAdmission,
    pod: &mut Pod,
    random: &mut dyn rand::RngCore,
) -> Result<Vec<String>, MutationError> {
    let namespace = match pod.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => ns,
        _ => request.namespace.as_str(),
    };
    let namespace_labels = state.namespace_labels(namespace);
    let old_pod = match request.operation {
        Operation::Update => request.old_pod.as_ref(),
        _ => None,
    };
    let mut applied = Vec::new();
    let mut matched_any = false;
    let mut skip_resources = false;
    for profile in &state.profiles {
        if !profile.matches(&namespace_labels, &request.pod, old_pod) {
            continue;
        }
        matched_any = true;
        skip_resources |= profile.skip_update_resources();
        if profile.probability().draw(random) {
            profile.apply(pod, &state.priority_classes)?;
            applied.push(profile.name().to_string());
        }
    }
    if (matched_any || katalyst::declares_reclaimed(pod)) && !skip_resources {
        translate::translate_resources(pod);
    }
    Ok(applied)
}
