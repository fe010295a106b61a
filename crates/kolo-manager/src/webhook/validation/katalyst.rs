//! Rule 4: the Katalyst annotations must be readable and agree with the
//! Koordinator label.
//!
//! Katalyst itself refuses a pod with an unknown `qos_level` or a
//! malformed enhancement (memory, cpu or network) (katalyst spec §1.1); at admission kolo refuses it
//! too, with the fix, rather than letting the components fall back to
//! another class later. A `qos_level` that contradicts the
//! `koordinator.sh/qosClass` label is refused: the two vocabularies would
//! send the pod to different tiers.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kolo_api::katalyst::{self, KatalystAnnotationError};
use kolo_api::names::annotation;
use kolo_api::qos::raw_qos_label;
use kolo_api::{QoSClass, QoSClass as Q};

use super::{ValidationError, quote};
use crate::webhook::mutation::katalyst::{agrees, level_for};

/// The enhancement annotations, each a JSON object of strings.
const ENHANCEMENTS: [&str; 3] = [
    annotation::KATALYST_MEMORY_ENHANCEMENT,
    annotation::KATALYST_CPU_ENHANCEMENT,
    annotation::KATALYST_NETWORK_ENHANCEMENT,
];

/// Appends the errors of rule 4.
pub fn check(pod: &Pod, errors: &mut Vec<ValidationError>) {
    let annotations = pod.metadata.annotations.as_ref();
    let level = match katalyst::qos_level(annotations) {
        Ok(level) => level,
        Err(KatalystAnnotationError::UnknownLevel { value, .. }) => {
            errors.push(ValidationError::UnknownKatalystLevel { value: quote(&value) });
            None
        }
        Err(KatalystAnnotationError::MalformedEnhancement { .. }) => None,
    };
    for key in ENHANCEMENTS {
        let Some(value) = annotations.and_then(|a| a.get(key)) else { continue };
        if let Err(e) = serde_json::from_str::<BTreeMap<String, String>>(value) {
            errors.push(ValidationError::MalformedKatalystEnhancement {
                key,
                value: quote(value),
                reason: e.to_string(),
            });
        }
    }
    let label = raw_qos_label(pod);
    if let Some(level) = level
        && !agrees(level, label)
    {
        let means = katalyst::to_kolo_qos(
            level,
            katalyst::memory_enhancement(annotations).unwrap_or_default(),
        );
        errors.push(ValidationError::KatalystConflict {
            label: label.as_str(),
            level: level.as_str(),
            means: means_name(means),
            agreeing: level_for(label).map_or("", |l| l.as_str()),
        });
    }
}

fn means_name(class: QoSClass) -> &'static str {
    match class {
        Q::LSR | Q::LSE => "LSR/LSE",
        other => other.as_str(),
    }
}
