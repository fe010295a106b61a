//! Rules 1–3: batch resources need BE, forbidden QoS / priority
//! combinations, whole CPUs for LSR and LSE.

use k8s_openapi::api::core::v1::Pod;
use kolo_api::katalyst::{self, KatalystQoSLevel};
use kolo_api::names::{annotation, label, resource};
use kolo_api::priority::raw_priority_class;
use kolo_api::qos::raw_qos_label;
use kolo_api::{PriorityClass, QoSClass};

use super::ValidationError;
use super::requests::{as_quantity, pod_request_nanos};

const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// The pod's Katalyst level (if known) and the class it maps to; a
/// malformed memory enhancement maps as if absent (rule 4 reports it).
pub fn katalyst_class(pod: &Pod) -> Option<(KatalystQoSLevel, QoSClass)> {
    let annotations = pod.metadata.annotations.as_ref();
    let level = katalyst::qos_level(annotations).ok().flatten()?;
    let memory = katalyst::memory_enhancement(annotations).unwrap_or_default();
    Some((level, katalyst::to_kolo_qos(level, memory)))
}

/// The declared QoS: the Katalyst level's class if the annotation holds a
/// known level, else the raw Koordinator label.
pub fn declared_qos(pod: &Pod) -> QoSClass {
    katalyst_class(pod).map_or_else(|| raw_qos_label(pod), |(_, class)| class)
}

/// Appends the errors of rules 1–3.
pub fn check(pod: &Pod, errors: &mut Vec<ValidationError>) {
    let declared = declared_qos(pod);

    // Rule 1.
    let batch_cpu = pod_request_nanos(pod, &resource::BATCH_CPU_ALIASES);
    let batch_memory = pod_request_nanos(pod, &resource::BATCH_MEMORY_ALIASES);
    if (batch_cpu != 0 || batch_memory != 0) && declared != QoSClass::BE {
        errors.push(ValidationError::BatchResourcesNeedBE);
    }

    // Rule 2: the label as the reference judges it; a class declared only
    // by Katalyst without its None cases.
    let priority = raw_priority_class(pod);
    let label_qos = raw_qos_label(pod);
    if label_qos != QoSClass::None {
        if let Some(fix) = forbidden(label_qos, priority, true) {
            errors.push(ValidationError::ForbiddenCombination {
                key: label::QOS_CLASS,
                qos: label_qos.as_str().to_string(),
                priority: priority.as_str(),
                fix,
            });
        }
    } else if let Some((level, class)) = katalyst_class(pod)
        && let Some(fix) = forbidden(class, priority, false)
    {
        errors.push(ValidationError::ForbiddenCombination {
            key: annotation::KATALYST_QOS_LEVEL,
            qos: level.as_str().to_string(),
            priority: priority.as_str(),
            fix,
        });
    }

    // Rule 3.
    if let class @ (QoSClass::LSR | QoSClass::LSE) = declared {
        let cpu = pod_request_nanos(pod, &["cpu"]);
        if cpu == 0 {
            errors.push(ValidationError::CpuRequestRequired { class: class.as_str() });
        } else if cpu % NANOS_PER_UNIT != 0 {
            errors.push(ValidationError::CpuRequestNotInteger {
                class: class.as_str(),
                value: as_quantity(cpu).to_string(),
                rounded: as_quantity(cpu).value(),
            });
        }
    }
}

/// What to change when `qos` may not go with `priority`, `None` when it
/// may. `with_none` also forbids priority class None.
fn forbidden(qos: QoSClass, priority: PriorityClass, with_none: bool) -> Option<&'static str> {
    use PriorityClass as P;
    match (qos, priority) {
        (QoSClass::BE, P::None) if with_none => Some(
            "give the pod a batch priority: priorityClassName of a PriorityClass valued 5000-5999 (e.g. koord-batch), or the label koordinator.sh/priority-class=koord-batch; or drop the BE QoS",
        ),
        (QoSClass::BE, P::Prod) => Some(
            "BE pods run on reclaimed resources and cannot have a koord-prod priority (9000-9999): use a PriorityClass valued 5000-5999 (e.g. koord-batch), or another QoS class",
        ),
        (QoSClass::LSR, P::None) if with_none => Some(
            "LSR pods need a prod priority: priorityClassName of a PriorityClass valued 9000-9999 (e.g. koord-prod), or the label koordinator.sh/priority-class=koord-prod; or use QoS LS",
        ),
        (QoSClass::LSR, P::Mid | P::Batch | P::Free) => Some(
            "LSR pods need a prod priority: use a PriorityClass valued 9000-9999 (e.g. koord-prod), or QoS LS / BE for a lower priority",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_combinations_match_the_reference() {
        use PriorityClass as P;
        let all = [P::None, P::Free, P::Batch, P::Mid, P::Prod];
        for qos in [QoSClass::LSE, QoSClass::LSR, QoSClass::LS, QoSClass::BE, QoSClass::System] {
            for priority in all {
                let reference = matches!(
                    (qos, priority),
                    (QoSClass::BE, P::None | P::Prod)
                        | (QoSClass::LSR, P::None | P::Mid | P::Batch | P::Free)
                );
                assert_eq!(forbidden(qos, priority, true).is_some(), reference, "{qos} {priority}");
                let katalyst = reference && priority != P::None;
                assert_eq!(forbidden(qos, priority, false).is_some(), katalyst, "{qos} {priority}");
            }
        }
    }
}
