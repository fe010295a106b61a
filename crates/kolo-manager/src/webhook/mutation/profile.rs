//! A `ClusterColocationProfile`, checked and compiled once, and how it
//! matches and changes a pod (spec §4.1–§4.2).
//!
//! # Applying a profile, in order
//!
//! 1. `labels` merged into the pod labels, then `annotations` into the
//!    annotations;
//! 2. `labelKeysMapping` (`old: new` sets `labels[new] = labels[old]`, the
//!    empty string when `old` is missing), then `annotationKeysMapping`;
//! 3. `labelSuffixes` (`key: suffix` appends the suffix to an existing
//!    label);
//! 4. `schedulerName`;
//! 5. `qosClass` → label `koordinator.sh/qosClass`;
//! 6. `priorityClassName` → `spec.priorityClassName`, `spec.priority` and
//!    `spec.preemptionPolicy` from the PriorityClass;
//! 7. `koordinatorPriority` → label `koordinator.sh/priority`;
//! 8. `patch` (see [`super::strategic_merge`]).
//!
//! # Differences from the reference
//!
//! * A profile that cannot be used as written (bad selector, probability,
//!   `qosClass` or patch) is ignored, with a warning naming the profile and
//!   the field. The reference treats a selector it cannot evaluate as a
//!   match, so a typo applied the profile to every pod in the cluster.
//! * Key mappings read every source before writing any target, so chains
//!   (`a: b`, `b: c`) do not depend on map iteration order (the reference's
//!   Go map order is random).
//! * A suffix is not appended to a value that already ends with it: the
//!   API server may call a mutating webhook twice for one request
//!   (`reinvocationPolicy: IfNeeded`), and mutation must be idempotent. The
//!   reference would append it twice.
//! * A PriorityClass without `preemptionPolicy` (possible only in
//!   hand-written input; the API server defaults it) gives the pod
//!   `PreemptLowerPriority`, the Kubernetes default, rather than erasing the
//!   pod's policy.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kolo_api::QoSClass;
use kolo_api::crd::ClusterColocationProfile;
use kolo_api::names::{annotation, label};
use kolo_core::selector::{LabelSelector, SelectorError};

use super::katalyst;
use super::probability::{Probability, ProbabilityError};
use super::strategic_merge::{StrategicPatch, StrategicPatchError};
use super::{MutationError, PriorityClassInfo};

/// The preemption policy Kubernetes defaults a PriorityClass to.
const DEFAULT_PREEMPTION_POLICY: &str = "PreemptLowerPriority";

/// Why a profile is ignored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// A selector does not compile.
    #[error(
        "ClusterColocationProfile {profile}: {field}.{source}; the profile is ignored until it is fixed"
    )]
    Selector {
        /// The profile name.
        profile: String,
        /// `spec.namespaceSelector` or `spec.selector`.
        field: &'static str,
        /// What is wrong.
        source: SelectorError,
    },
    /// The probability is not a percentage.
    #[error(
        "ClusterColocationProfile {profile}: {source}; the profile is ignored until it is fixed"
    )]
    Probability {
        /// The profile name.
        profile: String,
        /// What is wrong.
        source: ProbabilityError,
    },
    /// `qosClass` is not a QoS class.
    #[error(
        "ClusterColocationProfile {profile}: spec.qosClass: {value:?} is not one of LSE, LSR, LS, BE, SYSTEM; the profile is ignored until it is fixed"
    )]
    QoSClass {
        /// The profile name.
        profile: String,
        /// The value given.
        value: String,
    },
    /// The patch cannot be used.
    #[error(
        "ClusterColocationProfile {profile}: {source}; the profile is ignored until it is fixed"
    )]
    Patch {
        /// The profile name.
        profile: String,
        /// What is wrong.
        source: StrategicPatchError,
    },
    /// The profile has no name.
    #[error("a ClusterColocationProfile without metadata.name is ignored")]
    NoName,
}

/// A profile ready to match and apply.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledProfile {
    name: String,
    namespace_selector: LabelSelector,
    selector: LabelSelector,
    probability: Probability,
    skip_update_resources: bool,
    qos_class: Option<QoSClass>,
    priority_class_name: Option<String>,
    koordinator_priority: Option<String>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    label_keys_mapping: BTreeMap<String, String>,
    annotation_keys_mapping: BTreeMap<String, String>,
    label_suffixes: BTreeMap<String, String>,
    scheduler_name: Option<String>,
    patch: Option<StrategicPatch>,
}

/// Non-fatal remarks made while compiling a profile.
pub type Remarks = Vec<String>;

impl CompiledProfile {
    /// Checks and compiles a profile. Remarks about usable but odd values
    /// (a clamped probability) are pushed to `remarks`.
    pub fn compile(
        profile: &ClusterColocationProfile,
        remarks: &mut Remarks,
    ) -> Result<CompiledProfile, ProfileError> {
        let name =
            profile.metadata.name.clone().filter(|n| !n.is_empty()).ok_or(ProfileError::NoName)?;
        let spec = &profile.spec;
        let selector = |field: &'static str, value: Option<&_>| match value {
            None => Ok(LabelSelector::everything()),
            Some(s) => LabelSelector::compile(s).map_err(|source| ProfileError::Selector {
                profile: name.clone(),
                field,
                source,
            }),
        };
        let namespace_selector =
            selector("spec.namespaceSelector", spec.namespace_selector.as_ref())?;
        let pod_selector = selector("spec.selector", spec.selector.as_ref())?;
        let parsed = Probability::parse(spec.probability.as_ref())
            .map_err(|source| ProfileError::Probability { profile: name.clone(), source })?;
        if let Some(from) = parsed.clamped_from {
            remarks.push(format!(
                "ClusterColocationProfile {name}: spec.probability {from} is outside 0-100; using {}%",
                parsed.probability.percent()
            ));
        }
        let qos_class = match spec.qos_class.as_deref() {
            None | Some("") => None,
            Some(value) => Some(value.parse::<QoSClass>().map_err(|_| ProfileError::QoSClass {
                profile: name.clone(),
                value: value.to_string(),
            })?),
        };
        let patch = match &spec.patch {
            None => None,
            Some(raw) => StrategicPatch::compile(raw)
                .map_err(|source| ProfileError::Patch { profile: name.clone(), source })?,
        };
        let skip_update_resources = profile
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(annotation::SKIP_UPDATE_RESOURCES));
        Ok(CompiledProfile {
            namespace_selector,
            selector: pod_selector,
            probability: parsed.probability,
            skip_update_resources,
            qos_class,
            priority_class_name: spec.priority_class_name.clone().filter(|n| !n.is_empty()),
            koordinator_priority: spec.koordinator_priority.map(|p| p.to_string()),
            labels: spec.labels.clone().unwrap_or_default(),
            annotations: spec.annotations.clone().unwrap_or_default(),
            label_keys_mapping: spec.label_keys_mapping.clone().unwrap_or_default(),
            annotation_keys_mapping: spec.annotation_keys_mapping.clone().unwrap_or_default(),
            label_suffixes: spec.label_suffixes.clone().unwrap_or_default(),
            scheduler_name: spec.scheduler_name.clone().filter(|n| !n.is_empty()),
            patch,
            name,
        })
    }

    /// The profile name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The probability of applying it.
    pub fn probability(&self) -> Probability {
        self.probability
    }

    /// Whether it carries `config.koordinator.sh/skip-update-resources`.
    pub fn skip_update_resources(&self) -> bool {
        self.skip_update_resources
    }

    /// The PriorityClass it names, if any.
    pub fn priority_class_name(&self) -> Option<&str> {
        self.priority_class_name.as_deref()
    }

    /// Whether the profile matches a pod whose namespace has
    /// `namespace_labels` and whose labels are `pod_labels` (or, on an
    /// update, `old_labels`), and whose own Katalyst `qos_level` does not
    /// contradict the profile's `qosClass` (see [`super::katalyst`]).
    pub fn matches(
        &self,
        namespace_labels: &BTreeMap<String, String>,
        pod: &Pod,
        old_pod: Option<&Pod>,
    ) -> bool {
        if !self.namespace_selector.matches(namespace_labels) {
            return false;
        }
        let labels_match = |p: &Pod| match p.metadata.labels.as_ref() {
            Some(labels) => self.selector.matches(labels),
            None => self.selector.matches(&BTreeMap::new()),
        };
        if !(labels_match(pod) || old_pod.is_some_and(labels_match)) {
            return false;
        }
        self.agrees_with_katalyst(pod)
    }

    fn agrees_with_katalyst(&self, pod: &Pod) -> bool {
        let Some(class) = self.qos_class else { return true };
        if self.annotations.contains_key(annotation::KATALYST_QOS_LEVEL) {
            return true;
        }
        katalyst::pod_level(pod).is_none_or(|level| katalyst::agrees(level, class))
    }

    /// Applies the profile to `pod` (see the module docs for the order).
    pub fn apply(
        &self,
        pod: &mut Pod,
        priority_classes: &BTreeMap<String, PriorityClassInfo>,
    ) -> Result<(), MutationError> {
        // Resolve the PriorityClass first so a denial leaves nothing half done.
        let priority = match &self.priority_class_name {
            None => None,
            Some(name) => Some((
                name,
                priority_classes.get(name).ok_or_else(|| MutationError::UnknownPriorityClass {
                    profile: self.name.clone(),
                    name: name.clone(),
                })?,
            )),
        };

        let meta = &mut pod.metadata;
        if !self.labels.is_empty() {
            let labels = meta.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(self.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if !self.annotations.is_empty() {
            let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
            annotations.extend(self.annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        copy_keys(&mut meta.labels, &self.label_keys_mapping);
        copy_keys(&mut meta.annotations, &self.annotation_keys_mapping);
        if let Some(labels) = meta.labels.as_mut() {
            for (key, suffix) in &self.label_suffixes {
                if let Some(value) = labels.get_mut(key)
                    && !value.ends_with(suffix.as_str())
                {
                    value.push_str(suffix);
                }
            }
        }
        if let Some(scheduler) = &self.scheduler_name {
            pod.spec.get_or_insert_default().scheduler_name = Some(scheduler.clone());
        }
        if let Some(class) = self.qos_class {
            set_label(pod, label::QOS_CLASS, class.as_str());
        }
        if let Some((name, info)) = priority {
            let spec = pod.spec.get_or_insert_default();
            spec.priority_class_name = Some(name.clone());
            spec.priority = Some(info.value);
            spec.preemption_policy = Some(
                info.preemption_policy
                    .clone()
                    .unwrap_or_else(|| DEFAULT_PREEMPTION_POLICY.to_string()),
            );
        }
        if let Some(priority) = &self.koordinator_priority {
            set_label(pod, label::SUB_PRIORITY, priority);
        }
        if let Some(patch) = &self.patch {
            *pod = patch
                .apply(pod)
                .map_err(|source| MutationError::Patch { profile: self.name.clone(), source })?;
        }
        Ok(())
    }
}

fn set_label(pod: &mut Pod, key: &str, value: &str) {
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), value.to_string());
}

/// `map[new] = map[old]` for every `old: new`, reading every `old` first.
fn copy_keys(map: &mut Option<BTreeMap<String, String>>, mapping: &BTreeMap<String, String>) {
    if mapping.is_empty() {
        return;
    }
    let map = map.get_or_insert_with(BTreeMap::new);
    let values: Vec<(String, String)> = mapping
        .iter()
        .map(|(old, new)| (new.clone(), map.get(old).cloned().unwrap_or_default()))
        .collect();
    map.extend(values);
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn profile(spec: Value) -> ClusterColocationProfile {
        serde_json::from_value(json!({
            "apiVersion": "config.koordinator.sh/v1alpha1",
            "kind": "ClusterColocationProfile",
            "metadata": {"name": "prof"},
            "spec": spec
        }))
        .unwrap()
    }

    fn compile(spec: Value) -> Result<CompiledProfile, ProfileError> {
        CompiledProfile::compile(&profile(spec), &mut Vec::new())
    }

    fn pod(meta: Value) -> Pod {
        let mut meta = meta;
        meta["name"] = json!("p");
        serde_json::from_value(json!({"metadata": meta, "spec": {"containers": [{"name": "c"}]}}))
            .unwrap()
    }

    fn classes() -> BTreeMap<String, PriorityClassInfo> {
        BTreeMap::from([
            (
                "koord-batch".to_string(),
                PriorityClassInfo { value: 5500, preemption_policy: Some("Never".into()) },
            ),
            ("bare".to_string(), PriorityClassInfo { value: 100, preemption_policy: None }),
        ])
    }

    fn applied(spec: Value, meta: Value) -> Value {
        let mut p = pod(meta);
        compile(spec).unwrap().apply(&mut p, &classes()).unwrap();
        serde_json::to_value(&p).unwrap()
    }

    /// Each mutation step: (case, profile spec, pod metadata, JSON pointer, expected).
    #[test]
    fn apply_table() {
        let cases = [
            (
                "labels merged",
                json!({"labels": {"a": "x"}}),
                json!({"labels": {"a": "1", "b": "2"}}),
                "/metadata/labels",
                json!({"a": "x", "b": "2"}),
            ),
            (
                "labels created",
                json!({"labels": {"a": "x"}}),
                json!({}),
                "/metadata/labels",
                json!({"a": "x"}),
            ),
            (
                "annotations merged",
                json!({"annotations": {"n": "v"}}),
                json!({"annotations": {"o": "1"}}),
                "/metadata/annotations",
                json!({"n": "v", "o": "1"}),
            ),
            (
                "label key copied",
                json!({"labelKeysMapping": {"app": "koord-app"}}),
                json!({"labels": {"app": "web"}}),
                "/metadata/labels/koord-app",
                json!("web"),
            ),
            (
                "missing label copied as empty",
                json!({"labelKeysMapping": {"nope": "t"}}),
                json!({}),
                "/metadata/labels/t",
                json!(""),
            ),
            (
                "mappings read sources before writing",
                json!({"labelKeysMapping": {"a": "b", "b": "c"}}),
                json!({"labels": {"a": "1", "b": "2"}}),
                "/metadata/labels",
                json!({"a": "1", "b": "1", "c": "2"}),
            ),
            (
                "annotation key copied",
                json!({"annotationKeysMapping": {"x": "y"}}),
                json!({"annotations": {"x": "1"}}),
                "/metadata/annotations/y",
                json!("1"),
            ),
            (
                "mapping sees labels set by the same profile",
                json!({"labels": {"a": "new"}, "labelKeysMapping": {"a": "b"}}),
                json!({}),
                "/metadata/labels/b",
                json!("new"),
            ),
            (
                "suffix appended",
                json!({"labelSuffixes": {"app": "-be"}}),
                json!({"labels": {"app": "web"}}),
                "/metadata/labels/app",
                json!("web-be"),
            ),
            (
                "suffix not appended twice",
                json!({"labelSuffixes": {"app": "-be"}}),
                json!({"labels": {"app": "web-be"}}),
                "/metadata/labels/app",
                json!("web-be"),
            ),
            (
                "suffix needs the label",
                json!({"labelSuffixes": {"app": "-be"}}),
                json!({"labels": {"x": "1"}}),
                "/metadata/labels",
                json!({"x": "1"}),
            ),
            (
                "scheduler name",
                json!({"schedulerName": "kolo-scheduler"}),
                json!({}),
                "/spec/schedulerName",
                json!("kolo-scheduler"),
            ),
            (
                "qos label",
                json!({"qosClass": "BE"}),
                json!({"labels": {"koordinator.sh/qosClass": "LS"}}),
                "/metadata/labels/koordinator.sh~1qosClass",
                json!("BE"),
            ),
            (
                "priority class name",
                json!({"priorityClassName": "koord-batch"}),
                json!({}),
                "/spec/priorityClassName",
                json!("koord-batch"),
            ),
            (
                "priority value",
                json!({"priorityClassName": "koord-batch"}),
                json!({}),
                "/spec/priority",
                json!(5500),
            ),
            (
                "preemption policy",
                json!({"priorityClassName": "koord-batch"}),
                json!({}),
                "/spec/preemptionPolicy",
                json!("Never"),
            ),
            (
                "preemption policy defaulted",
                json!({"priorityClassName": "bare"}),
                json!({}),
                "/spec/preemptionPolicy",
                json!("PreemptLowerPriority"),
            ),
            (
                "koordinator priority",
                json!({"koordinatorPriority": 1111}),
                json!({}),
                "/metadata/labels/koordinator.sh~1priority",
                json!("1111"),
            ),
            (
                "patch",
                json!({"patch": {"spec": {"nodeSelector": {"pool": "batch"}}}}),
                json!({}),
                "/spec/nodeSelector",
                json!({"pool": "batch"}),
            ),
            (
                "patch runs last and sees the qos label",
                json!({"qosClass": "BE", "patch": {"metadata": {"labels": {"koordinator.sh/qosClass": null}}}}),
                json!({}),
                "/metadata/labels",
                json!({}),
            ),
            (
                "empty strings set nothing",
                json!({"schedulerName": "", "qosClass": "", "priorityClassName": ""}),
                json!({}),
                "/spec/schedulerName",
                Value::Null,
            ),
        ];
        for (case, spec, meta, pointer, expected) in cases {
            let got = applied(spec, meta);
            assert_eq!(got.pointer(pointer).unwrap_or(&Value::Null), &expected, "{case}: {got:#}");
        }
    }

    #[test]
    fn unknown_priority_class_fails_without_changing_the_pod() {
        let mut p = pod(json!({}));
        let before = p.clone();
        let err = compile(json!({"labels": {"a": "b"}, "priorityClassName": "gold"}))
            .unwrap()
            .apply(&mut p, &classes())
            .unwrap_err();
        assert_eq!(p, before);
        assert!(err.to_string().starts_with(
            "ClusterColocationProfile prof sets priorityClassName gold, but PriorityClass gold does not exist"
        ), "{err}");
    }

    #[test]
    fn matching_table() {
        let ns_colocation =
            BTreeMap::from([("koordinator.sh/enable-colocation".to_string(), "true".to_string())]);
        let ns_plain = BTreeMap::new();
        let sel = json!({"matchLabels": {"koordinator.sh/enable-colocation": "true"}});
        // (case, profile spec, namespace labels, pod metadata, old pod metadata, matches)
        let cases = [
            ("no selectors match everything", json!({}), &ns_plain, json!({}), None, true),
            (
                "empty selectors match everything",
                json!({"namespaceSelector": {}, "selector": {}}),
                &ns_plain,
                json!({}),
                None,
                true,
            ),
            (
                "namespace selector matches",
                json!({"namespaceSelector": sel.clone()}),
                &ns_colocation,
                json!({}),
                None,
                true,
            ),
            (
                "namespace selector rejects",
                json!({"namespaceSelector": sel.clone()}),
                &ns_plain,
                json!({}),
                None,
                false,
            ),
            (
                "pod selector matches",
                json!({"selector": {"matchLabels": {"app": "spark"}}}),
                &ns_plain,
                json!({"labels": {"app": "spark"}}),
                None,
                true,
            ),
            (
                "pod selector rejects",
                json!({"selector": {"matchLabels": {"app": "spark"}}}),
                &ns_plain,
                json!({"labels": {"app": "web"}}),
                None,
                false,
            ),
            (
                "pod without labels",
                json!({"selector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}}),
                &ns_plain,
                json!({}),
                None,
                true,
            ),
            (
                "old labels match on update",
                json!({"selector": {"matchLabels": {"app": "spark"}}}),
                &ns_plain,
                json!({"labels": {"app": "web"}}),
                Some(json!({"labels": {"app": "spark"}})),
                true,
            ),
            (
                "katalyst level contradicting qosClass wins",
                json!({"qosClass": "BE"}),
                &ns_plain,
                json!({"annotations": {"katalyst.kubewharf.io/qos_level": "dedicated_cores"}}),
                None,
                false,
            ),
            (
                "agreeing katalyst level",
                json!({"qosClass": "BE"}),
                &ns_plain,
                json!({"annotations": {"katalyst.kubewharf.io/qos_level": "reclaimed_cores"}}),
                None,
                true,
            ),
            (
                "profile that sets qos_level itself overrides",
                json!({"qosClass": "BE", "annotations": {"katalyst.kubewharf.io/qos_level": "reclaimed_cores"}}),
                &ns_plain,
                json!({"annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}}),
                None,
                true,
            ),
            (
                "unknown katalyst level does not block (validation denies it)",
                json!({"qosClass": "BE"}),
                &ns_plain,
                json!({"annotations": {"katalyst.kubewharf.io/qos_level": "gold"}}),
                None,
                true,
            ),
        ];
        for (case, spec, ns, meta, old, expected) in cases {
            let old = old.map(pod);
            let got = compile(spec).unwrap().matches(ns, &pod(meta), old.as_ref());
            assert_eq!(got, expected, "{case}");
        }
    }

    #[test]
    fn compile_errors_name_profile_and_field() {
        let cases = [
            (
                json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Equals"}]}}),
                "ClusterColocationProfile prof: spec.selector.matchExpressions[0].operator: \"Equals\" is not one of In, NotIn, Exists, DoesNotExist; the profile is ignored until it is fixed",
            ),
            (
                json!({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
                "ClusterColocationProfile prof: spec.namespaceSelector.matchExpressions[0].values: operator In needs at least one value; the profile is ignored until it is fixed",
            ),
            (
                json!({"probability": "half"}),
                "ClusterColocationProfile prof: spec.probability: \"half\" is not a percentage (write an integer from 0 to 100, or a string such as \"50%\"); the profile is ignored until it is fixed",
            ),
            (
                json!({"qosClass": "be"}),
                "ClusterColocationProfile prof: spec.qosClass: \"be\" is not one of LSE, LSR, LS, BE, SYSTEM; the profile is ignored until it is fixed",
            ),
            (
                json!({"patch": "x"}),
                "ClusterColocationProfile prof: spec.patch: must be a JSON object (a partial Pod), found a string; the profile is ignored until it is fixed",
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(compile(spec.clone()).unwrap_err().to_string(), expected, "{spec}");
        }
        let nameless: ClusterColocationProfile =
            serde_json::from_value(json!({"metadata": {}, "spec": {}})).unwrap();
        assert_eq!(CompiledProfile::compile(&nameless, &mut Vec::new()), Err(ProfileError::NoName));
    }

    #[test]
    fn remarks_and_skip_annotation() {
        let mut remarks = Vec::new();
        let mut p = profile(json!({"probability": 250}));
        p.metadata.annotations =
            Some(BTreeMap::from([(annotation::SKIP_UPDATE_RESOURCES.to_string(), String::new())]));
        let compiled = CompiledProfile::compile(&p, &mut remarks).unwrap();
        assert!(compiled.skip_update_resources());
        assert_eq!(compiled.probability().percent(), 100);
        assert_eq!(
            remarks,
            ["ClusterColocationProfile prof: spec.probability 250 is outside 0-100; using 100%"]
        );
    }
}
