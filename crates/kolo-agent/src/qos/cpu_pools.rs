//! The CPUs the cpuset policy of suppression gives BE pods, by pool (spec
//! §5.2 `adjustByCPUSet`):
//!
//! * CPUs bound to **LSE** pods are never given to BE: an LSE pod owns its
//!   CPUs exclusively;
//! * CPUs bound to **LSR** pods form the `lsr` pool, every other BE CPU the
//!   `ls` pool. BE gets CPUs from both in proportion to the pools' sizes
//!   (⌊n × |lsr| / (|lsr| + |ls|)⌋ from `lsr`, the rest from `ls`), so that
//!   shrinking BE relieves both kinds of LS pods, not only the shared pool.
//!
//! A pod's bound CPUs are the `cpuset` of its
//! `scheduling.koordinator.sh/resource-status` annotation, which the
//! scheduler writes at bind time. An annotation that does not parse counts
//! as no binding (the pod's CPUs stay in the `ls` pool): BE then shares
//! them, which the pod would also do without the annotation.

use std::collections::BTreeMap;

use kolo_api::QoSClass;
use kolo_api::names::annotation;
use kolo_core::cpuset::CpuSet;
use serde::Deserialize;

use super::cpu_suppress::place;
use super::{NodeState, PodState};

/// The BE CPU pools of a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuPools {
    /// Every CPU BE may use: the node's BE CPUs minus LSE pods' CPUs.
    pub usable: CpuSet,
    /// The usable CPUs bound to LSR pods.
    pub lsr: CpuSet,
    /// The other usable CPUs.
    pub ls: CpuSet,
}

/// Only the field kolo reads of the resource-status annotation (the
/// scheduler's `ResourceStatus` has the whole format).
#[derive(Deserialize)]
struct BoundCpus {
    #[serde(default)]
    cpuset: CpuSet,
}

/// The CPUs a pod is bound to (`None`: none, or the annotation does not
/// parse).
pub fn bound_cpus(pod: &PodState) -> Option<CpuSet> {
    let raw = pod.annotations.get(annotation::RESOURCE_STATUS)?;
    let bound: BoundCpus = serde_json::from_str(raw).ok()?;
    (!bound.cpuset.is_empty()).then_some(bound.cpuset)
}

/// The CPUs BE may use on `node` ([`CpuPools::usable`]) without the split
/// into pools: all a suppression round needs unless it moves the BE
/// cpuset, so the LSR bindings are only read when it does.
pub fn usable_cpus(node: &NodeState) -> CpuSet {
    node.be_cpus.difference(&bound_union(node, QoSClass::LSE))
}

/// The CPUs the running pods of class `qos` are bound to. The class is
/// checked before the annotation is parsed: only LSE and LSR bindings
/// shape the pools, and a JSON parse per pod and round (every 10 s on
/// every node) for LS and BE pods was most of the pools' time.
fn bound_union(node: &NodeState, qos: QoSClass) -> CpuSet {
    let mut set = CpuSet::default();
    for p in node.pods.iter().filter(|p| !p.pod.terminated && p.pod.qos == qos) {
        if let Some(cpus) = bound_cpus(p) {
            set.union_with(&cpus);
        }
    }
    set
}

/// The pools of `node` from its running pods' bindings.
pub fn pools(node: &NodeState) -> CpuPools {
    let usable = usable_cpus(node);
    let lsr = bound_union(node, QoSClass::LSR).intersection(&usable);
    let ls = usable.difference(&lsr);
    CpuPools { usable, lsr, ls }
}

impl CpuPools {
    /// `n` BE CPUs: ⌊n × |lsr| / |usable|⌋ from the `lsr` pool, the rest
    /// from the `ls` pool, each placed by [`place`] (whole cores first,
    /// round-robin over sockets). At most every usable CPU.
    pub fn place(&self, n: usize, cores: &BTreeMap<u32, (u32, u32)>) -> CpuSet {
        let total = self.usable.len();
        if total == 0 {
            return CpuSet::default();
        }
        let from_lsr = n.saturating_mul(self.lsr.len()) / total;
        let from_ls = n.saturating_sub(from_lsr).min(self.ls.len());
        let from_lsr = n.saturating_sub(from_ls).min(self.lsr.len());
        place(from_lsr, &self.lsr, cores).union(&place(from_ls, &self.ls, cores))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::testing_b::{be_pod, ls_pod, node};

    fn bound(mut p: PodState, qos: QoSClass, status: &str) -> PodState {
        p.pod.qos = qos;
        p.annotations.insert(annotation::RESOURCE_STATUS.to_string(), status.to_string());
        p
    }

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    #[test]
    fn pools_table() {
        // (pods: (qos, resource-status)), usable, lsr, ls — on a 16-CPU node.
        // (bound pods, usable, lsr, ls)
        type Row<'a> = (&'a [(QoSClass, &'a str)], &'a str, &'a str, &'a str);
        let table: [Row; 7] = [
            (&[], "0-15", "", "0-15"),
            (&[(QoSClass::LSE, r#"{"cpuset":"0-3"}"#)], "4-15", "", "4-15"),
            (&[(QoSClass::LSR, r#"{"cpuset":"4-7"}"#)], "0-15", "4-7", "0-3,8-15"),
            (
                &[
                    (QoSClass::LSE, r#"{"cpuset":"0-1"}"#),
                    (QoSClass::LSR, r#"{"cpuset":"2-5"}"#),
                    (QoSClass::LSR, r#"{"cpuset":"10"}"#),
                ],
                "2-15",
                "2-5,10",
                "6-9,11-15",
            ),
            // An LS pod's binding (or a BE pod's) changes nothing.
            (&[(QoSClass::LS, r#"{"cpuset":"0-3"}"#)], "0-15", "", "0-15"),
            // Malformed or empty: no binding.
            (&[(QoSClass::LSE, r#"{"cpuset":"x-y"}"#)], "0-15", "", "0-15"),
            (&[(QoSClass::LSE, r#"{"numaNodeResources":[]}"#)], "0-15", "", "0-15"),
        ];
        for (pods, usable, lsr, ls) in table {
            let mut n = node(16_000, 64 << 30);
            n.pods = pods
                .iter()
                .enumerate()
                .map(|(i, (qos, status))| bound(ls_pod(&format!("p{i}"), 1_000, 0), *qos, status))
                .collect();
            n.pods.push(be_pod("be", 1_000, 0));
            let want = CpuPools { usable: set(usable), lsr: set(lsr), ls: set(ls) };
            assert_eq!(pools(&n), want, "{pods:?}");
            assert_eq!(usable_cpus(&n), want.usable, "{pods:?}");
        }
    }

    #[test]
    fn terminated_pods_release_their_cpus() {
        let mut n = node(16_000, 64 << 30);
        let mut lse = bound(ls_pod("lse", 1_000, 0), QoSClass::LSE, r#"{"cpuset":"0-3"}"#);
        lse.pod.terminated = true;
        n.pods.push(lse);
        assert_eq!(pools(&n).usable, set("0-15"));
        assert_eq!(usable_cpus(&n), set("0-15"));
    }

    #[test]
    fn placement_splits_by_pool_size() {
        let none = BTreeMap::new();
        let pools = |lsr: &str, ls: &str| CpuPools {
            usable: set(lsr).union(&set(ls)),
            lsr: set(lsr),
            ls: set(ls),
        };
        // (pools, n) → CPUs (without topology: the lowest ids of each pool)
        let table = [
            (pools("", "0-15"), 4, "0-3"),
            (pools("0-3", "4-15"), 4, "0,4-6"), // ⌊4 × 4/16⌋ = 1 from lsr
            (pools("0-7", "8-15"), 4, "0-1,8-9"), // half and half
            (pools("0-7", "8-15"), 5, "0-1,8-10"), // ⌊2.5⌋ from lsr
            (pools("0-13", "14-15"), 4, "0-2,14"), // ⌊3.5⌋ from lsr
            (pools("0-3", "4-5"), 10, "0-5"),   // more than usable: all
            (pools("", ""), 2, ""),
        ];
        for (p, n, want) in table {
            assert_eq!(p.place(n, &none), set(want), "{p:?} n={n}");
        }
    }
}
