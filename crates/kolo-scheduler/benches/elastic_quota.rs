//! ElasticQuota at scale (issue 21's target: ≤ 50 µs): a tree of 1,000
//! quotas, 10,000 pods charged to the leaves, and per iteration one pod
//! change (a pending pod appears in one leaf, or goes) followed by the
//! quota check of a pod of *another* leaf — which recomputes the runtimes
//! the change made stale on that pod's path (the root level, its parent's
//! level). Two shapes:
//!
//! * `tree_10x99`: the root over 10 parents over 99 leaves each (1,000
//!   quotas);
//! * `flat_1000`: 1,000 quotas directly under the root (one level of 1,000
//!   children recomputed per change: the worst case).
//!
//! Run: `cargo bench -p kolo-scheduler --bench elastic_quota`

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::Criterion;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kolo_api::crd::{ElasticQuota, ElasticQuotaSpec};
use kolo_core::resources::ResourceVector;
use kolo_scheduler::plugins::elastic_quota::check::check_pod;
use kolo_scheduler::plugins::elastic_quota::{
    ElasticQuotaArgs, PodFacts, QuotaSpec, QuotaTree, names,
};

fn spec(name: &str, parent: Option<&str>, is_parent: bool, min: i64, max: i64) -> QuotaSpec {
    let list = |cores: i64| {
        Some(BTreeMap::from([
            ("cpu".to_string(), Quantity(cores.to_string())),
            ("memory".to_string(), Quantity(format!("{cores}Gi"))),
        ]))
    };
    let mut q = ElasticQuota::new(name, ElasticQuotaSpec { min: list(min), max: list(max) });
    let mut labels = BTreeMap::new();
    if let Some(parent) = parent {
        labels.insert(names::PARENT.to_string(), parent.to_string());
    }
    if is_parent {
        labels.insert(names::IS_PARENT.to_string(), "true".to_string());
    }
    q.metadata.labels = Some(labels);
    QuotaSpec::from_object(&q).unwrap()
}

fn pod(key: &str, quota: &str, cores: i64) -> PodFacts {
    PodFacts {
        key: key.into(),
        namespace: "ns".into(),
        quota_label: Some(quota.into()),
        request: ResourceVector::cpu_memory(cores * 1000, cores << 30),
        non_preemptible: false,
        priority: 9500,
        protected: true,
    }
}

/// The tree with `parents` parents (0: leaves under the root) and
/// `leaves` leaves in all (max 20 cores each), 10 pods of 1 core per leaf
/// (half assigned).
fn build(parents: usize, leaves: usize) -> (QuotaTree, Vec<String>) {
    let huge = ResourceVector::cpu_memory(i64::MAX, i64::MAX);
    let mut tree = QuotaTree::new(huge, huge);
    tree.set_cluster_total(ResourceVector::cpu_memory(8_000_000, 8_000 << 30));
    for p in 0..parents {
        tree.apply(spec(&format!("parent-{p:02}"), None, true, 500, 2_000)).unwrap();
    }
    let mut names = Vec::new();
    for l in 0..leaves {
        let name = format!("leaf-{l:04}");
        let parent = (parents > 0).then(|| format!("parent-{:02}", l % parents));
        tree.apply(spec(&name, parent.as_deref(), false, 5, 20)).unwrap();
        for i in 0..10u32 {
            let facts = pod(&format!("ns/{name}-{i}"), &name, 1);
            if i.is_multiple_of(2) {
                tree.pod_assigned(facts);
            } else {
                tree.pod_pending(facts);
            }
        }
        names.push(name);
    }
    tree.ensure_current();
    (tree, names)
}

fn bench_shape(c: &mut Criterion, label: &str, parents: usize, leaves: usize) {
    let (mut tree, names) = build(parents, leaves);
    let args = ElasticQuotaArgs::default();
    let checked = pod("ns/checked", &names[leaves / 2 + 1], 1);
    let mut n = 0usize;
    c.bench_function(&format!("elastic_quota/{label}/pod_change_then_check"), |b| {
        b.iter(|| {
            // A pending pod of 15 cores comes to (or leaves) one leaf: its
            // request (10 → 25) crosses its max (20), so the limited request changes up
            // the tree and the levels above go stale.
            // Added in one iteration, removed in the next.
            let leaf = &names[(n / 2) % leaves];
            let key = format!("ns/extra-{leaf}");
            if n.is_multiple_of(2) {
                tree.pod_pending(pod(&key, leaf, 15));
            } else {
                tree.pod_not_pending(&key);
            }
            n += 1;
            black_box(check_pod(&mut tree, &args, black_box(&checked)))
        })
    });
}

fn benches(c: &mut Criterion) {
    bench_shape(c, "tree_10x99", 10, 990);
    bench_shape(c, "flat_1000", 0, 1000);
}

/// `criterion_group!` generates an undocumented `pub fn`.
mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::benches);
}

criterion::criterion_main!(group::benches);
