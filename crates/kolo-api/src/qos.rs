//! kolo's QoS classes and how a pod's class is resolved from either
//! vocabulary.
//!
//! # Resolution order (deterministic)
//!
//! 1. A valid Katalyst `katalyst.kubewharf.io/qos_level` annotation, mapped
//!    as [`crate::katalyst`] documents. It wins over the Koordinator label when
//!    both are present and disagree: the annotation is the more specific of
//!    the two (it carries NUMA enhancements the label cannot express), and it
//!    is what Katalyst's own components would obey on that pod.
//! 2. A valid Koordinator `koordinator.sh/qosClass` label.
//! 3. The default from the Kubernetes QoS class: Guaranteed → LSR,
//!    Burstable → LS, BestEffort → BE (Koordinator's rule; Katalyst's own
//!    default, `shared_cores`, is not applied — a pod with no kolo-relevant
//!    metadata behaves exactly as under Koordinator).
//!
//! An unknown Katalyst level or malformed enhancement annotation is not fatal:
//! it is skipped (reported in [`QoSResolution::ignored`]) and resolution goes
//! on with step 2. Katalyst itself refuses such a pod; kolo cannot refuse a pod
//! that is already running, so it falls back and says why.

use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::core::v1::Pod;

use crate::katalyst::{self, KatalystAnnotationError};
use crate::kube_qos::{KubeQoSClass, kube_qos};
use crate::names::label;

/// A kolo (Koordinator) QoS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QoSClass {
    /// No class (only possible for a raw label lookup).
    None,
    /// Best effort: runs on reclaimed `batch-*` resources; first to be
    /// suppressed and evicted.
    BE,
    /// Latency-sensitive on the shared CPU pool.
    LS,
    /// Latency-sensitive, reserved cpuset (shared with BE only).
    LSR,
    /// Latency-sensitive, exclusive cpuset (shared with nobody).
    LSE,
    /// System daemons.
    System,
}

impl QoSClass {
    /// Every class that a label can name, in the label's spelling order.
    pub const ALL: [QoSClass; 5] =
        [QoSClass::LSE, QoSClass::LSR, QoSClass::LS, QoSClass::BE, QoSClass::System];

    /// The `koordinator.sh/qosClass` label value (`""` for [`QoSClass::None`]).
    pub fn as_str(self) -> &'static str {
        match self {
            QoSClass::LSE => "LSE",
            QoSClass::LSR => "LSR",
            QoSClass::LS => "LS",
            QoSClass::BE => "BE",
            QoSClass::System => "SYSTEM",
            QoSClass::None => "",
        }
    }

    /// Parses a label value; unknown values give [`QoSClass::None`], as in
    /// Koordinator.
    pub fn from_label_value(value: &str) -> QoSClass {
        value.parse().unwrap_or(QoSClass::None)
    }

    /// The class Koordinator derives from a Kubernetes QoS class.
    pub fn from_kube_qos(kube: KubeQoSClass) -> QoSClass {
        match kube {
            KubeQoSClass::Guaranteed => QoSClass::LSR,
            KubeQoSClass::Burstable => QoSClass::LS,
            KubeQoSClass::BestEffort => QoSClass::BE,
        }
    }
}

impl fmt::Display for QoSClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if *self == QoSClass::None { "None" } else { self.as_str() })
    }
}

/// A string that is not a QoS class name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown QoS class {0:?} (expected one of LSE, LSR, LS, BE, SYSTEM)")]
pub struct UnknownQoSClass(pub String);

impl FromStr for QoSClass {
    type Err = UnknownQoSClass;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        QoSClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownQoSClass(s.to_string()))
    }
}

/// Where a resolved QoS class came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QoSSource {
    /// The Katalyst `qos_level` annotation.
    KatalystAnnotation,
    /// The Koordinator `koordinator.sh/qosClass` label.
    KoordinatorLabel,
    /// The default from the Kubernetes QoS class.
    KubernetesDefault,
}

/// A resolved QoS class with the reason for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QoSResolution {
    /// The class.
    pub class: QoSClass,
    /// Which rule decided it.
    pub source: QoSSource,
    /// A Katalyst annotation that was present but unusable, and so skipped.
    pub ignored: Option<KatalystAnnotationError>,
}

/// The raw Koordinator QoS label of a pod ([`QoSClass::None`] if absent or
/// unknown). The admission rules of spec §4.4 judge this raw value.
pub fn raw_qos_label(pod: &Pod) -> QoSClass {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(label::QOS_CLASS))
        .map_or(QoSClass::None, |v| QoSClass::from_label_value(v))
}

/// Resolves the pod's QoS class "with default", reporting the rule used.
pub fn resolve_qos_explained(pod: &Pod) -> QoSResolution {
    let annotations = pod.metadata.annotations.as_ref();
    let katalyst = katalyst::qos_level(annotations).and_then(|level| {
        level.map(|level| katalyst::memory_enhancement(annotations).map(|m| (level, m))).transpose()
    });
    let ignored = match katalyst {
        Ok(Some((level, memory))) => {
            return QoSResolution {
                class: katalyst::to_kolo_qos(level, memory),
                source: QoSSource::KatalystAnnotation,
                ignored: None,
            };
        }
        Ok(None) => None,
        Err(e) => Some(e),
    };
    let (class, source) = match raw_qos_label(pod) {
        QoSClass::None => (QoSClass::from_kube_qos(kube_qos(pod)), QoSSource::KubernetesDefault),
        class => (class, QoSSource::KoordinatorLabel),
    };
    QoSResolution { class, source, ignored }
}

/// The pod's QoS class "with default" (see the module docs for the order).
/// Never [`QoSClass::None`].
pub fn resolve_qos(pod: &Pod) -> QoSClass {
    resolve_qos_explained(pod).class
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::annotation;
    use crate::test_pods::{container, pod_with, with_meta};

    #[test]
    fn label_values_round_trip_and_unknown_is_none() {
        for class in QoSClass::ALL {
            assert_eq!(QoSClass::from_label_value(class.as_str()), class);
        }
        for bad in ["", "be", "Ls", "LSX", " BE"] {
            assert_eq!(QoSClass::from_label_value(bad), QoSClass::None, "{bad:?}");
        }
        assert_eq!(
            "gold".parse::<QoSClass>().unwrap_err().to_string(),
            "unknown QoS class \"gold\" (expected one of LSE, LSR, LS, BE, SYSTEM)"
        );
    }

    /// Spec §0.2 and katalyst §9, every rule: (case, qos label, katalyst
    /// level, memory enhancement, kube QoS of the containers, expected, source).
    #[test]
    fn resolution_table() {
        use QoSSource::*;
        let guaranteed = container(&[], &[("cpu", "2"), ("memory", "1Gi")]);
        let burstable = container(&[("cpu", "100m")], &[]);
        let best_effort = container(&[], &[]);
        let cases = [
            (
                "guaranteed defaults to LSR",
                None,
                None,
                None,
                &guaranteed,
                QoSClass::LSR,
                KubernetesDefault,
            ),
            (
                "burstable defaults to LS",
                None,
                None,
                None,
                &burstable,
                QoSClass::LS,
                KubernetesDefault,
            ),
            (
                "best effort defaults to BE",
                None,
                None,
                None,
                &best_effort,
                QoSClass::BE,
                KubernetesDefault,
            ),
            ("label LSE", Some("LSE"), None, None, &guaranteed, QoSClass::LSE, KoordinatorLabel),
            ("label LSR", Some("LSR"), None, None, &guaranteed, QoSClass::LSR, KoordinatorLabel),
            (
                "label LS on guaranteed",
                Some("LS"),
                None,
                None,
                &guaranteed,
                QoSClass::LS,
                KoordinatorLabel,
            ),
            (
                "label BE on burstable",
                Some("BE"),
                None,
                None,
                &burstable,
                QoSClass::BE,
                KoordinatorLabel,
            ),
            (
                "label SYSTEM",
                Some("SYSTEM"),
                None,
                None,
                &burstable,
                QoSClass::System,
                KoordinatorLabel,
            ),
            (
                "unknown label falls back",
                Some("GOLD"),
                None,
                None,
                &burstable,
                QoSClass::LS,
                KubernetesDefault,
            ),
            (
                "lower-case label is unknown",
                Some("be"),
                None,
                None,
                &guaranteed,
                QoSClass::LSR,
                KubernetesDefault,
            ),
            (
                "katalyst shared",
                None,
                Some("shared_cores"),
                None,
                &guaranteed,
                QoSClass::LS,
                KatalystAnnotation,
            ),
            (
                "katalyst reclaimed",
                None,
                Some("reclaimed_cores"),
                None,
                &best_effort,
                QoSClass::BE,
                KatalystAnnotation,
            ),
            (
                "katalyst system",
                None,
                Some("system_cores"),
                None,
                &burstable,
                QoSClass::System,
                KatalystAnnotation,
            ),
            (
                "katalyst dedicated",
                None,
                Some("dedicated_cores"),
                None,
                &guaranteed,
                QoSClass::LSR,
                KatalystAnnotation,
            ),
            (
                "katalyst dedicated numa-exclusive",
                None,
                Some("dedicated_cores"),
                Some(r#"{"numa_binding":"true","numa_exclusive":"true"}"#),
                &guaranteed,
                QoSClass::LSE,
                KatalystAnnotation,
            ),
            (
                "katalyst wins over label",
                Some("BE"),
                Some("shared_cores"),
                None,
                &burstable,
                QoSClass::LS,
                KatalystAnnotation,
            ),
            (
                "katalyst wins over label (2)",
                Some("LS"),
                Some("reclaimed_cores"),
                None,
                &burstable,
                QoSClass::BE,
                KatalystAnnotation,
            ),
            (
                "agreeing vocabularies",
                Some("BE"),
                Some("reclaimed_cores"),
                None,
                &best_effort,
                QoSClass::BE,
                KatalystAnnotation,
            ),
            (
                "unknown katalyst level falls back to label",
                Some("LSR"),
                Some("gold_cores"),
                None,
                &guaranteed,
                QoSClass::LSR,
                KoordinatorLabel,
            ),
            (
                "unknown katalyst level falls back to default",
                None,
                Some("gold_cores"),
                None,
                &burstable,
                QoSClass::LS,
                KubernetesDefault,
            ),
            (
                "malformed enhancement falls back",
                Some("LS"),
                Some("dedicated_cores"),
                Some("not json"),
                &guaranteed,
                QoSClass::LS,
                KoordinatorLabel,
            ),
        ];
        for (case, qos_label, level, memory, c, expected, source) in cases {
            let mut labels = vec![];
            if let Some(v) = qos_label {
                labels.push((label::QOS_CLASS, v));
            }
            let mut annotations = vec![];
            if let Some(v) = level {
                annotations.push((annotation::KATALYST_QOS_LEVEL, v));
            }
            if let Some(v) = memory {
                annotations.push((annotation::KATALYST_MEMORY_ENHANCEMENT, v));
            }
            let pod = with_meta(pod_with(vec![c.clone()], vec![]), &labels, &annotations, None);
            let got = resolve_qos_explained(&pod);
            assert_eq!((got.class, got.source), (expected, source), "{case}");
            let should_report =
                case.starts_with("unknown katalyst") || case.starts_with("malformed");
            assert_eq!(got.ignored.is_some(), should_report, "{case}: {:?}", got.ignored);
            assert_eq!(resolve_qos(&pod), expected, "{case}");
        }
    }

    #[test]
    fn raw_label_is_not_defaulted() {
        let pod = pod_with(vec![container(&[], &[])], vec![]);
        assert_eq!(raw_qos_label(&pod), QoSClass::None);
        assert_eq!(resolve_qos(&pod), QoSClass::BE);
    }
}
