//! Koordinator priority classes: which resource tier a pod lives on.
//!
//! A pod's class comes from the `koordinator.sh/priority-class` label, else
//! from the band its `spec.priority` falls in, else (the "with default" form
//! used almost everywhere) from its QoS class: SYSTEM, LSE, LSR and LS give
//! Prod, BE gives Batch. Katalyst has no priority classes; a Katalyst pod gets
//! its class through the QoS its `qos_level` maps to, so `reclaimed_cores`
//! pods are Batch.

use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

use k8s_openapi::api::core::v1::Pod;

use crate::names::{label, priority as names, resource};
use crate::qos::{QoSClass, resolve_qos};

/// A Koordinator priority class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PriorityClass {
    /// No class.
    None,
    /// `koord-free` (3000–3999): runs on whatever is left; no extended resource.
    Free,
    /// `koord-batch` (5000–5999): requests `kubernetes.io/batch-*`.
    Batch,
    /// `koord-mid` (7000–7999): requests `kubernetes.io/mid-*`.
    Mid,
    /// `koord-prod` (9000–9999): requests plain `cpu` / `memory`.
    Prod,
}

impl PriorityClass {
    /// The four named classes, highest first.
    pub const NAMED: [PriorityClass; 4] =
        [PriorityClass::Prod, PriorityClass::Mid, PriorityClass::Batch, PriorityClass::Free];

    /// The class name (`""` for [`PriorityClass::None`]).
    pub fn as_str(self) -> &'static str {
        match self {
            PriorityClass::Prod => names::PROD,
            PriorityClass::Mid => names::MID,
            PriorityClass::Batch => names::BATCH,
            PriorityClass::Free => names::FREE,
            PriorityClass::None => "",
        }
    }

    /// The `spec.priority` band of the class (inclusive); `None` has none.
    pub fn band(self) -> Option<RangeInclusive<i32>> {
        match self {
            PriorityClass::Prod => Some(9000..=9999),
            PriorityClass::Mid => Some(7000..=7999),
            PriorityClass::Batch => Some(5000..=5999),
            PriorityClass::Free => Some(3000..=3999),
            PriorityClass::None => None,
        }
    }

    /// The priority value a pod of this class gets when it has none.
    pub fn default_priority(self) -> i32 {
        match self {
            PriorityClass::Prod => 9500,
            PriorityClass::Mid => 7500,
            PriorityClass::Batch => 5500,
            PriorityClass::Free => 3500,
            PriorityClass::None => 0,
        }
    }

    /// The value of the PriorityClass object kolo installs for this class
    /// (`kolo install`, `deploy/priorityclasses.yaml`): the floor of its
    /// band, as Koordinator installs them; 0 for [`PriorityClass::None`].
    /// The offline webhook (`kolo webhook mutate`) assumes the same.
    pub fn installed_value(self) -> i32 {
        self.band().map_or(0, |band| *band.start())
    }

    /// The `preemptionPolicy` of the PriorityClass object kolo installs:
    /// batch and free pods never preempt (they run on reclaimed capacity;
    /// evicting a pod to make room would defeat it), prod and mid do.
    pub fn installed_preemption_policy(self) -> &'static str {
        match self {
            PriorityClass::Prod | PriorityClass::Mid => "PreemptLowerPriority",
            PriorityClass::Batch | PriorityClass::Free | PriorityClass::None => "Never",
        }
    }

    /// The class whose band holds `priority`, or [`PriorityClass::None`].
    pub fn from_priority(priority: i32) -> PriorityClass {
        PriorityClass::NAMED
            .into_iter()
            .find(|c| c.band().is_some_and(|band| band.contains(&priority)))
            .unwrap_or(PriorityClass::None)
    }

    /// Parses a class name; unknown names give [`PriorityClass::None`], as in
    /// Koordinator.
    pub fn from_name(name: &str) -> PriorityClass {
        name.parse().unwrap_or(PriorityClass::None)
    }

    /// The class Koordinator derives from a QoS class "with default".
    pub fn from_qos(qos: QoSClass) -> PriorityClass {
        match qos {
            QoSClass::System | QoSClass::LSE | QoSClass::LSR | QoSClass::LS => PriorityClass::Prod,
            QoSClass::BE => PriorityClass::Batch,
            QoSClass::None => PriorityClass::None,
        }
    }

    /// The extended resources that replace `cpu` and `memory` for this class
    /// (`TranslateResourceNameByPriorityClass`): Batch → `batch-*`, Mid →
    /// `mid-*`, Prod and None keep `cpu` / `memory`, Free has no mapping.
    pub fn cpu_memory_resource_names(self) -> Option<(&'static str, &'static str)> {
        match self {
            PriorityClass::Prod | PriorityClass::None => Some(("cpu", "memory")),
            PriorityClass::Batch => Some((resource::BATCH_CPU, resource::BATCH_MEMORY)),
            PriorityClass::Mid => Some((resource::MID_CPU, resource::MID_MEMORY)),
            PriorityClass::Free => None,
        }
    }
}

impl fmt::Display for PriorityClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if *self == PriorityClass::None { "None" } else { self.as_str() })
    }
}

/// A string that is not a priority class name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown priority class {0:?} (expected koord-prod, koord-mid, koord-batch or koord-free)")]
pub struct UnknownPriorityClass(pub String);

impl FromStr for PriorityClass {
    type Err = UnknownPriorityClass;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PriorityClass::NAMED
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownPriorityClass(s.to_string()))
    }
}

/// The raw priority class: the label if present (unknown names give None),
/// else the band of `spec.priority` (nil or out of every band gives None).
/// The admission rules of spec §4.4 judge this raw value.
pub fn raw_priority_class(pod: &Pod) -> PriorityClass {
    if let Some(name) = pod.metadata.labels.as_ref().and_then(|l| l.get(label::PRIORITY_CLASS)) {
        return PriorityClass::from_name(name);
    }
    pod.spec
        .as_ref()
        .and_then(|s| s.priority)
        .map_or(PriorityClass::None, PriorityClass::from_priority)
}

/// The pod's priority class "with default": the raw class, or when that is
/// None, the class derived from the pod's QoS class "with default".
pub fn resolve_priority(pod: &Pod) -> PriorityClass {
    resolve_priority_with_qos(pod, resolve_qos)
}

/// [`resolve_priority`] for a caller that may already know the pod's QoS
/// class: `qos` is only called when the raw class is None.
pub fn resolve_priority_with_qos(pod: &Pod, qos: impl FnOnce(&Pod) -> QoSClass) -> PriorityClass {
    match raw_priority_class(pod) {
        PriorityClass::None => PriorityClass::from_qos(qos(pod)),
        class => class,
    }
}

/// The pod's priority value "with default": `spec.priority` when set and not
/// zero, else the default value of its priority class "with default".
pub fn priority_value(pod: &Pod) -> i32 {
    priority_value_for_class(pod, resolve_priority(pod))
}

/// [`priority_value`] for a caller that already resolved the pod's priority
/// class "with default".
pub fn priority_value_for_class(pod: &Pod, class: PriorityClass) -> i32 {
    match pod.spec.as_ref().and_then(|s| s.priority) {
        Some(p) if p != 0 => p,
        _ => class.default_priority(),
    }
}

/// The pod's sub-priority (`koordinator.sh/priority` label) if it is a valid
/// `int32`; `None` when absent or malformed.
pub fn sub_priority(pod: &Pod) -> Option<i32> {
    pod.metadata.labels.as_ref()?.get(label::SUB_PRIORITY)?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::annotation;
    use crate::test_pods::{container, pod_with, with_meta};

    #[test]
    fn bands_edges_and_names() {
        let cases = [
            (9999, PriorityClass::Prod),
            (9000, PriorityClass::Prod),
            (8999, PriorityClass::None),
            (7999, PriorityClass::Mid),
            (7000, PriorityClass::Mid),
            (6000, PriorityClass::None),
            (5999, PriorityClass::Batch),
            (5000, PriorityClass::Batch),
            (4999, PriorityClass::None),
            (3999, PriorityClass::Free),
            (3000, PriorityClass::Free),
            (2999, PriorityClass::None),
            (0, PriorityClass::None),
            (-1, PriorityClass::None),
            (10000, PriorityClass::None),
            (2_000_000_000, PriorityClass::None),
        ];
        for (value, class) in cases {
            assert_eq!(PriorityClass::from_priority(value), class, "{value}");
        }
        for class in PriorityClass::NAMED {
            assert_eq!(PriorityClass::from_name(class.as_str()), class);
            assert!(class.band().unwrap().contains(&class.default_priority()));
        }
        assert_eq!(PriorityClass::from_name("koord-gold"), PriorityClass::None);
        assert_eq!(PriorityClass::from_name("Koord-Prod"), PriorityClass::None);
    }

    #[test]
    fn resource_translation_by_class() {
        assert_eq!(PriorityClass::Prod.cpu_memory_resource_names(), Some(("cpu", "memory")));
        assert_eq!(PriorityClass::None.cpu_memory_resource_names(), Some(("cpu", "memory")));
        assert_eq!(
            PriorityClass::Batch.cpu_memory_resource_names(),
            Some(("kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"))
        );
        assert_eq!(
            PriorityClass::Mid.cpu_memory_resource_names(),
            Some(("kubernetes.io/mid-cpu", "kubernetes.io/mid-memory"))
        );
        assert_eq!(PriorityClass::Free.cpu_memory_resource_names(), None);
    }

    /// Spec §0.2 and §5, every rule: (case, priority-class label, spec.priority,
    /// qos label, katalyst level, containers' kube QoS, raw, with default, value).
    #[test]
    fn resolution_table() {
        use PriorityClass as P;
        let guaranteed = container(&[], &[("cpu", "1"), ("memory", "1Gi")]);
        let burstable = container(&[("memory", "1Gi")], &[]);
        let best_effort = container(&[], &[]);
        let cases = [
            (
                "label wins over spec.priority",
                Some("koord-batch"),
                Some(9100),
                None,
                None,
                &burstable,
                P::Batch,
                P::Batch,
                9100,
            ),
            (
                "label prod",
                Some("koord-prod"),
                None,
                None,
                None,
                &best_effort,
                P::Prod,
                P::Prod,
                9500,
            ),
            ("label mid", Some("koord-mid"), None, None, None, &best_effort, P::Mid, P::Mid, 7500),
            (
                "label free",
                Some("koord-free"),
                None,
                None,
                None,
                &burstable,
                P::Free,
                P::Free,
                3500,
            ),
            // An unknown label name is None, and spec.priority is then not consulted.
            (
                "unknown label is None, defaults from QoS",
                Some("gold"),
                Some(5500),
                None,
                None,
                &burstable,
                P::None,
                P::Prod,
                5500,
            ),
            ("band prod", None, Some(9000), None, None, &best_effort, P::Prod, P::Prod, 9000),
            ("band mid", None, Some(7999), None, None, &best_effort, P::Mid, P::Mid, 7999),
            ("band batch", None, Some(5100), None, None, &guaranteed, P::Batch, P::Batch, 5100),
            ("band free", None, Some(3001), None, None, &guaranteed, P::Free, P::Free, 3001),
            (
                "out of band, burstable",
                None,
                Some(100),
                None,
                None,
                &burstable,
                P::None,
                P::Prod,
                100,
            ),
            (
                "out of band, best effort",
                None,
                Some(8000),
                None,
                None,
                &best_effort,
                P::None,
                P::Batch,
                8000,
            ),
            (
                "priority 0 uses class default",
                None,
                Some(0),
                None,
                None,
                &best_effort,
                P::None,
                P::Batch,
                5500,
            ),
            (
                "nothing, best effort is batch",
                None,
                None,
                None,
                None,
                &best_effort,
                P::None,
                P::Batch,
                5500,
            ),
            (
                "nothing, guaranteed is prod",
                None,
                None,
                None,
                None,
                &guaranteed,
                P::None,
                P::Prod,
                9500,
            ),
            (
                "nothing, burstable is prod",
                None,
                None,
                None,
                None,
                &burstable,
                P::None,
                P::Prod,
                9500,
            ),
            (
                "qos label BE is batch",
                None,
                None,
                Some("BE"),
                None,
                &burstable,
                P::None,
                P::Batch,
                5500,
            ),
            (
                "qos label SYSTEM is prod",
                None,
                None,
                Some("SYSTEM"),
                None,
                &best_effort,
                P::None,
                P::Prod,
                9500,
            ),
            (
                "qos label LSE is prod",
                None,
                None,
                Some("LSE"),
                None,
                &best_effort,
                P::None,
                P::Prod,
                9500,
            ),
            (
                "katalyst reclaimed is batch",
                None,
                None,
                None,
                Some("reclaimed_cores"),
                &burstable,
                P::None,
                P::Batch,
                5500,
            ),
            (
                "katalyst shared is prod",
                None,
                None,
                None,
                Some("shared_cores"),
                &best_effort,
                P::None,
                P::Prod,
                9500,
            ),
            (
                "katalyst dedicated is prod",
                None,
                None,
                None,
                Some("dedicated_cores"),
                &guaranteed,
                P::None,
                P::Prod,
                9500,
            ),
            (
                "katalyst system is prod",
                None,
                None,
                None,
                Some("system_cores"),
                &best_effort,
                P::None,
                P::Prod,
                9500,
            ),
            (
                "explicit class beats katalyst",
                Some("koord-mid"),
                None,
                None,
                Some("reclaimed_cores"),
                &best_effort,
                P::Mid,
                P::Mid,
                7500,
            ),
        ];
        for (case, class_label, priority, qos_label, level, c, raw, with_default, value) in cases {
            let mut labels = vec![];
            if let Some(v) = class_label {
                labels.push((label::PRIORITY_CLASS, v));
            }
            if let Some(v) = qos_label {
                labels.push((label::QOS_CLASS, v));
            }
            let annotations: Vec<_> =
                level.map(|v| (annotation::KATALYST_QOS_LEVEL, v)).into_iter().collect();
            let pod = with_meta(pod_with(vec![c.clone()], vec![]), &labels, &annotations, priority);
            assert_eq!(raw_priority_class(&pod), raw, "{case}: raw");
            assert_eq!(resolve_priority(&pod), with_default, "{case}: with default");
            assert_eq!(priority_value(&pod), value, "{case}: value");
        }
    }

    #[test]
    fn sub_priority_label() {
        let base = pod_with(vec![container(&[], &[])], vec![]);
        assert_eq!(sub_priority(&base), Option::None);
        let pod = with_meta(base.clone(), &[(label::SUB_PRIORITY, "1200")], &[], Option::None);
        assert_eq!(sub_priority(&pod), Some(1200));
        let pod = with_meta(base, &[(label::SUB_PRIORITY, "high")], &[], Option::None);
        assert_eq!(sub_priority(&pod), Option::None);
    }
}
