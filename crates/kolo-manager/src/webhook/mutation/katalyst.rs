//! Katalyst's `katalyst.kubewharf.io/qos_level` annotation at admission.
//!
//! kolo honours the annotation the way it honours Koordinator's
//! `koordinator.sh/qosClass` label (see `kolo_api::katalyst` for the
//! mapping). At admission that means:
//!
//! * **Translation.** A `reclaimed_cores` pod is BE, hence Batch: its `cpu`
//!   / `memory` become `kubernetes.io/batch-*`. Such a pod opts in by
//!   itself, so it is translated even when no profile matches it (a pod
//!   with only the Koordinator label is translated only when some profile
//!   matches, as in the reference). The other levels map to Prod classes
//!   and are not translated unless their priority says otherwise.
//! * **Explicit annotation wins** (katalyst spec §9). A profile that sets a
//!   `qosClass` the pod's own `qos_level` contradicts does not match that
//!   pod: an admin's namespace-wide BE profile does not turn a pod that
//!   asked for `dedicated_cores` into a batch pod. A profile that sets the
//!   `qos_level` annotation itself overrides the pod's, as profile labels
//!   and annotations always do.
//! * **Validation** (`webhook::validation`) denies unknown levels, malformed
//!   enhancements and annotations that contradict the label.

use k8s_openapi::api::core::v1::Pod;
use kolo_api::QoSClass;
use kolo_api::katalyst::{KatalystQoSLevel, qos_level};

/// The pod's Katalyst level, if the annotation holds a known one.
pub fn pod_level(pod: &Pod) -> Option<KatalystQoSLevel> {
    qos_level(pod.metadata.annotations.as_ref()).ok().flatten()
}

/// Whether a Katalyst level and a Koordinator QoS class say the same thing:
/// `reclaimed_cores` is BE, `shared_cores` LS, `dedicated_cores` LSR or LSE
/// (the enhancements decide which; either agrees), `system_cores` SYSTEM.
/// [`QoSClass::None`] (no label) agrees with everything.
pub fn agrees(level: KatalystQoSLevel, class: QoSClass) -> bool {
    match class {
        QoSClass::None => true,
        QoSClass::BE => level == KatalystQoSLevel::ReclaimedCores,
        QoSClass::LS => level == KatalystQoSLevel::SharedCores,
        QoSClass::LSR | QoSClass::LSE => level == KatalystQoSLevel::DedicatedCores,
        QoSClass::System => level == KatalystQoSLevel::SystemCores,
    }
}

/// The level a Koordinator class corresponds to (for messages).
pub fn level_for(class: QoSClass) -> Option<KatalystQoSLevel> {
    match class {
        QoSClass::BE => Some(KatalystQoSLevel::ReclaimedCores),
        QoSClass::LS => Some(KatalystQoSLevel::SharedCores),
        QoSClass::LSR | QoSClass::LSE => Some(KatalystQoSLevel::DedicatedCores),
        QoSClass::System => Some(KatalystQoSLevel::SystemCores),
        QoSClass::None => None,
    }
}

/// Whether the pod declares itself `reclaimed_cores`, which opts it into
/// resource translation without a profile.
pub fn declares_reclaimed(pod: &Pod) -> bool {
    pod_level(pod) == Some(KatalystQoSLevel::ReclaimedCores)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_table() {
        use KatalystQoSLevel::*;
        let levels = [ReclaimedCores, SharedCores, DedicatedCores, SystemCores];
        // For each class, the one level that agrees with it.
        let cases = [
            (QoSClass::BE, ReclaimedCores),
            (QoSClass::LS, SharedCores),
            (QoSClass::LSR, DedicatedCores),
            (QoSClass::LSE, DedicatedCores),
            (QoSClass::System, SystemCores),
        ];
        for (class, agreeing) in cases {
            for level in levels {
                assert_eq!(agrees(level, class), level == agreeing, "{level:?} vs {class}");
            }
            assert_eq!(level_for(class), Some(agreeing));
        }
        assert!(levels.iter().all(|l| agrees(*l, QoSClass::None)));
        assert_eq!(level_for(QoSClass::None), None);
    }
}
