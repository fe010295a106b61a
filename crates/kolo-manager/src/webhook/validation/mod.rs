//! Pod validation (spec §4.4), with Katalyst's `qos_level` honoured like
//! Koordinator's QoS label.
//!
//! # Rules
//!
//! On `UPDATE` ([`immutable`]): the raw QoS label, the raw priority class
//! (reported as `spec.priority`), the `koordinator.sh/priority` label and
//! the Katalyst `qos_level` annotation cannot change; removing one counts
//! as a change.
//!
//! On `CREATE` and `UPDATE` ([`qos`], [`katalyst`], [`annotations`]):
//!
//! 1. batch resources (`kubernetes.io/batch-*` or an alias) need the
//!    *declared* QoS BE;
//! 2. QoS BE cannot go with priority class None or Prod, nor LSR with None,
//!    Mid, Batch or Free (judged on the raw label and raw priority class; a
//!    class declared only through Katalyst is not held to the None cases,
//!    Katalyst having no priority bands);
//! 3. LSR and LSE pods must request a non-zero, whole number of CPUs;
//! 4. the Katalyst annotation must name a known level, its memory
//!    enhancement must be JSON, and it must agree with the Koordinator label
//!    when both are present;
//! 5. `scheduling.koordinator.sh/reserve-pod` is forbidden on user pods.
//!
//! The *declared* QoS is the Katalyst level's class when the annotation
//! holds a known level (the explicit annotation wins), else the raw label.
//!
//! Each message starts with the reference's wording (so a search for it
//! finds Koordinator's documentation) and ends with `; fix: ...`.
//!
//! On `UPDATE`, a create-time rule reports only what the old pod did not
//! already break: a pod admitted before the webhook (or before a rule
//! existed) can still be updated (finalizers removed, labels changed)
//! instead of being stuck. The reference re-checks every rule on update.
//! Sub-resource requests, `DELETE` and `CONNECT` are always allowed.

pub mod annotations;
pub mod immutable;
pub mod katalyst;
pub mod qos;
pub mod requests;

use k8s_openapi::api::core::v1::Pod;

use super::{Operation, PodAdmission, ValidateOutcome};

/// One broken rule. The message names the field and says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The pod requests batch resources without declaring QoS BE.
    #[error(
        "labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE with koordinator colocation resources; fix: label the pod koordinator.sh/qosClass=BE (or annotate it katalyst.kubewharf.io/qos_level=reclaimed_cores), or request cpu/memory instead of kubernetes.io/batch-cpu/batch-memory"
    )]
    BatchResourcesNeedBE,
    /// A QoS class and a priority class that cannot go together.
    #[error(
        "Pod: Forbidden: {key}={qos} and priorityClass={priority} cannot be used in combination; fix: {fix}"
    )]
    ForbiddenCombination {
        /// Where the QoS was declared: `koordinator.sh/qosClass` or
        /// `katalyst.kubewharf.io/qos_level`.
        key: &'static str,
        /// The declared value.
        qos: String,
        /// The raw priority class name (empty for None, as in the reference).
        priority: &'static str,
        /// What to change.
        fix: &'static str,
    },
    /// An LSR / LSE pod without a CPU request.
    #[error(
        "pod.spec.containers[*].resources.requests: Required value: LSR Pod must declare the requested CPUs; fix: request whole CPUs (e.g. cpu: \"2\") in the containers of this {class} pod, or use QoS LS"
    )]
    CpuRequestRequired {
        /// `LSR` or `LSE`.
        class: &'static str,
    },
    /// An LSR / LSE pod whose CPU request is not whole cores.
    #[error(
        "pod.spec.containers[*].resources.requests: Invalid value: {value:?}: the requested CPUs of LSR Pod must be integer; fix: {class} pods get whole cores, so make the pod's total cpu request a whole number (e.g. {rounded}), or use QoS LS"
    )]
    CpuRequestNotInteger {
        /// `LSR` or `LSE`.
        class: &'static str,
        /// The total request, canonical.
        value: String,
        /// The total rounded up to whole cores.
        rounded: i64,
    },
    /// A field that cannot change on update.
    #[error(
        "{field}: Invalid value: {new:?}: field is immutable; fix: keep {old:?}, the value the pod was created with, or delete the pod and create it again"
    )]
    Immutable {
        /// The field.
        field: &'static str,
        /// The value the pod was created with (`""` when absent).
        old: String,
        /// The new value (`""` when removed).
        new: String,
    },
    /// An unknown Katalyst QoS level.
    #[error(
        "annotations.katalyst.kubewharf.io/qos_level: Unsupported value: {value:?}: supported values: \"dedicated_cores\", \"reclaimed_cores\", \"shared_cores\", \"system_cores\"; fix: use one of them or remove the annotation"
    )]
    UnknownKatalystLevel {
        /// The value (shortened when long).
        value: String,
    },
    /// A Katalyst enhancement annotation that is not a JSON object of strings.
    #[error(
        "annotations.{key}: Invalid value: {value:?}: must be a JSON object of strings ({reason}); fix: write it as JSON, e.g. {{\"numa_binding\":\"true\"}}"
    )]
    MalformedKatalystEnhancement {
        /// The annotation.
        key: &'static str,
        /// The value (shortened when long).
        value: String,
        /// The JSON error.
        reason: String,
    },
    /// The Katalyst annotation and the Koordinator label disagree.
    #[error(
        "Pod: Forbidden: koordinator.sh/qosClass={label} and katalyst.kubewharf.io/qos_level={level} declare different QoS classes ({level} is {means}); fix: remove one of them, or make them agree (qosClass={label} goes with qos_level={agreeing})"
    )]
    KatalystConflict {
        /// The label value.
        label: &'static str,
        /// The annotation value.
        level: &'static str,
        /// The class the annotation means.
        means: &'static str,
        /// The level that would agree with the label.
        agreeing: &'static str,
    },
    /// The reserve-pod annotation on a user pod.
    #[error(
        "annotations.scheduling.koordinator.sh/reserve-pod: Forbidden: cannot set in annotations; fix: remove the annotation (only kolo's scheduler marks reserve pods)"
    )]
    ReservePodAnnotation,
}

/// At most this many characters of a user's value are quoted.
const MAX_QUOTED_CHARS: usize = 64;

/// `text`, cut after [`MAX_QUOTED_CHARS`] characters.
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}...", &text[..end]),
    }
}

/// Validates a pod being admitted.
pub fn validate_pod(request: &PodAdmission) -> ValidateOutcome {
    if request.sub_resource.as_deref().is_some_and(|s| !s.is_empty()) {
        return ValidateOutcome::Allowed;
    }
    let errors = match request.operation {
        Operation::Create => create_errors(&request.pod),
        Operation::Update => match &request.old_pod {
            Some(old) => update_errors(old, &request.pod),
            None => create_errors(&request.pod),
        },
        Operation::Delete | Operation::Connect => Vec::new(),
    };
    if errors.is_empty() {
        ValidateOutcome::Allowed
    } else {
        ValidateOutcome::Denied(errors.iter().map(ToString::to_string).collect())
    }
}

/// Every rule a new pod breaks (rules 1–5 of the module docs), in rule order.
pub fn create_errors(pod: &Pod) -> Vec<ValidationError> {
    let mut errors = Vec::new();
    qos::check(pod, &mut errors);
    katalyst::check(pod, &mut errors);
    annotations::check(pod, &mut errors);
    errors
}

/// Every rule an update breaks: the immutable fields, then the create-time
/// rules the old pod did not already break.
pub fn update_errors(old: &Pod, new: &Pod) -> Vec<ValidationError> {
    let mut errors = immutable::check(old, new);
    let grandfathered = create_errors(old);
    errors.extend(create_errors(new).into_iter().filter(|e| !grandfathered.contains(e)));
    errors
}

#[cfg(test)]
mod tests;
