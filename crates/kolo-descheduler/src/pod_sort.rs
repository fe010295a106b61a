//! The order in which pods are evicted (spec §9.3): a multi-key sort,
//! ascending, so the first pod is the first to go.
//!
//! Keys, most significant first: Koordinator priority class (free < batch
//! < mid < prod < none), `spec.priority`, Kubernetes QoS (BestEffort <
//! Burstable < Guaranteed), Koordinator QoS (BE < LS < LSR < LSE = SYSTEM <
//! none), the pod deletion cost annotation, the eviction cost annotation,
//! then — LowNodeLoad only — the usage score (descending), then newer pods
//! first. The migration arbitration uses the same keys without the usage
//! score. A [`PodSortKey`] is computed once per pod, so sorting thousands
//! of candidates compares integers.

use std::cmp::{Ordering, Reverse};

use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::names::annotation::EVICTION_COST;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_scheduler::framework::PodInfo;

/// Kubernetes' ReplicaSet pod deletion cost annotation.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// A pod's sort keys before the usage score (which the plugin adds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodSortKey {
    class: u8,
    priority: i32,
    kube_qos: u8,
    qos: u8,
    deletion_cost: i32,
    eviction_cost: i32,
    /// Newer first: the reversed creation time (a pod without one sorts as
    /// the oldest).
    newest_first: Reverse<Option<Timestamp>>,
}

impl PodSortKey {
    /// The keys of `pod`. A cost annotation that is not an int32 counts
    /// as 0, as in Kubernetes' and Koordinator's sorters.
    pub fn of(pod: &PodInfo) -> PodSortKey {
        let view = pod.view();
        let cost = |name: &str| {
            view.annotations().get(name).and_then(|v| v.trim().parse::<i32>().ok()).unwrap_or(0)
        };
        PodSortKey {
            class: class_rank(view.priority_class()),
            priority: view.priority(),
            kube_qos: kube_qos_rank(view.kube_qos()),
            qos: qos_rank(view.qos()),
            deletion_cost: cost(POD_DELETION_COST),
            eviction_cost: cost(EVICTION_COST),
            newest_first: Reverse(view.creation_timestamp()),
        }
    }

    /// Compares the keys that come before the usage score.
    pub fn cmp_head(&self, other: &PodSortKey) -> Ordering {
        (self.class, self.priority, self.kube_qos, self.qos, self.deletion_cost, self.eviction_cost)
            .cmp(&(
                other.class,
                other.priority,
                other.kube_qos,
                other.qos,
                other.deletion_cost,
                other.eviction_cost,
            ))
    }

    /// Compares the last key: newer pods first.
    pub fn cmp_age(&self, other: &PodSortKey) -> Ordering {
        self.newest_first.cmp(&other.newest_first)
    }
}

fn class_rank(class: PriorityClass) -> u8 {
    match class {
        PriorityClass::Free => 0,
        PriorityClass::Batch => 1,
        PriorityClass::Mid => 2,
        PriorityClass::Prod => 3,
        PriorityClass::None => 4,
    }
}

fn kube_qos_rank(qos: KubeQoSClass) -> u8 {
    match qos {
        KubeQoSClass::BestEffort => 0,
        KubeQoSClass::Burstable => 1,
        KubeQoSClass::Guaranteed => 2,
    }
}

fn qos_rank(qos: QoSClass) -> u8 {
    match qos {
        QoSClass::BE => 0,
        QoSClass::LS => 1,
        QoSClass::LSR => 2,
        QoSClass::LSE | QoSClass::System => 3,
        QoSClass::None => 4,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kolo_core::pod::PodView;
    use kolo_core::pod::StringMap;

    use super::*;

    fn pod(name: &str, f: impl FnOnce(PodView) -> PodView) -> PodInfo {
        PodInfo::from_parts(Arc::new(Default::default()), f(PodView::new("ns", name)))
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn annotated(key: &str, value: &str) -> StringMap {
        [(key.to_owned(), value.to_owned())].into_iter().collect()
    }

    #[test]
    fn each_key_orders_pods_that_tie_on_the_keys_before_it() {
        let base = |v: PodView| v.with_priority(PriorityClass::Batch, 5500);
        // Listed in the expected eviction order; each pair of neighbours
        // differs in exactly the key named beside the later one.
        let ordered = [
            pod("free", |v| v.with_priority(PriorityClass::Free, 9999)),
            pod("batch-low", |v| v.with_priority(PriorityClass::Batch, 5000)),
            pod("batch-besteffort", base),
            pod("batch-burstable", |v| base(v).with_kube_qos(KubeQoSClass::Burstable)),
            pod("burstable-ls", |v| {
                base(v).with_kube_qos(KubeQoSClass::Burstable).with_qos(QoSClass::LS)
            }),
            pod("deletion-cost", |v| {
                base(v)
                    .with_kube_qos(KubeQoSClass::Burstable)
                    .with_qos(QoSClass::LS)
                    .with_annotations(annotated(POD_DELETION_COST, "10"))
            }),
            pod("mid", |v| v.with_priority(PriorityClass::Mid, 7000)),
            pod("prod", |v| v.with_priority(PriorityClass::Prod, 9000)),
            pod("none", |v| v.with_priority(PriorityClass::None, 0)),
        ];
        let keys: Vec<PodSortKey> = ordered.iter().map(PodSortKey::of).collect();
        for (i, pair) in keys.windows(2).enumerate() {
            assert_eq!(
                pair[0].cmp_head(&pair[1]),
                Ordering::Less,
                "{} before {}",
                ordered[i].key(),
                ordered[i + 1].key()
            );
        }
    }

    #[test]
    fn eviction_cost_then_age_break_ties() {
        let cheap =
            PodSortKey::of(&pod("cheap", |v| v.with_annotations(annotated(EVICTION_COST, "1"))));
        let dear =
            PodSortKey::of(&pod("dear", |v| v.with_annotations(annotated(EVICTION_COST, "2"))));
        let garbage =
            PodSortKey::of(&pod("garbage", |v| v.with_annotations(annotated(EVICTION_COST, "x"))));
        assert_eq!(cheap.cmp_head(&dear), Ordering::Less);
        assert_eq!(garbage.cmp_head(&cheap), Ordering::Less, "unreadable cost counts as 0");
        let old = PodSortKey::of(&pod("old", |v| v.with_creation_timestamp(at(100))));
        let new = PodSortKey::of(&pod("new", |v| v.with_creation_timestamp(at(200))));
        assert_eq!(old.cmp_head(&new), Ordering::Equal);
        assert_eq!(new.cmp_age(&old), Ordering::Less, "newer pods go first");
    }
}
