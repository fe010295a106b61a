//! On update, the fields that decide a pod's tier cannot change.
//!
//! As in the reference: the raw QoS label (compared as a class, so one
//! unknown value replacing another is no change), the raw priority class
//! (the label `koordinator.sh/priority-class` or the band of
//! `spec.priority`, reported as `spec.priority`) and the
//! `koordinator.sh/priority` label. kolo adds the Katalyst `qos_level`
//! annotation, which declares the QoS just as the label does. Removing a
//! value counts as changing it.

use k8s_openapi::api::core::v1::Pod;
use kolo_api::names::{annotation, label};
use kolo_api::priority::raw_priority_class;
use kolo_api::qos::raw_qos_label;

use super::{ValidationError, quote};

/// The immutable fields `new` changed, in the order above.
pub fn check(old: &Pod, new: &Pod) -> Vec<ValidationError> {
    let mut errors = Vec::new();
    let mut compare = |field: &'static str, old: &str, new: &str| {
        if old != new {
            errors.push(ValidationError::Immutable { field, old: quote(old), new: quote(new) });
        }
    };
    compare(
        "labels.koordinator.sh/qosClass",
        raw_qos_label(old).as_str(),
        raw_qos_label(new).as_str(),
    );
    compare("spec.priority", raw_priority_class(old).as_str(), raw_priority_class(new).as_str());
    let label_of = |pod: &Pod, key: &str| {
        pod.metadata.labels.as_ref().and_then(|l| l.get(key)).cloned().unwrap_or_default()
    };
    compare(
        "labels.koordinator.sh/priority",
        &label_of(old, label::SUB_PRIORITY),
        &label_of(new, label::SUB_PRIORITY),
    );
    let annotation_of = |pod: &Pod| {
        pod.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotation::KATALYST_QOS_LEVEL))
            .cloned()
            .unwrap_or_default()
    };
    compare(
        "annotations.katalyst.kubewharf.io/qos_level",
        &annotation_of(old),
        &annotation_of(new),
    );
    errors
}
