//! Micro-benchmarks of the resource-vector operations that sit in kolo's hot
//! loops (a scheduling cycle compares against every node; the batch formula
//! sums every pod) and of the conversion from Kubernetes resource lists.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_main};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_core::resources::{ResourceName, ResourceSet, ResourceVector};

fn sample(scale: i64) -> ResourceVector {
    ResourceVector::cpu_memory(1500 * scale, (2 << 30) * scale)
        .with(ResourceName::Pods, scale)
        .with(ResourceName::BatchCpu, 3000 * scale)
        .with(ResourceName::BatchMemory, (1 << 30) * scale)
}

fn ops(c: &mut Criterion) {
    let pods: Vec<ResourceVector> = (1..=1000).map(sample).collect();
    let limit = sample(400);

    c.bench_function("sum 1000 vectors", |b| {
        b.iter(|| black_box(&pods).iter().fold(ResourceVector::EMPTY, |acc, v| acc + *v))
    });
    c.bench_function("less_than_or_equal x1000", |b| {
        b.iter(|| {
            black_box(&pods).iter().filter(|v| v.less_than_or_equal(black_box(&limit))).count()
        })
    });
    c.bench_function("fits_allocatable x1000", |b| {
        b.iter(|| black_box(&pods).iter().filter(|v| v.fits_allocatable(black_box(&limit))).count())
    });
    c.bench_function("max + mask x1000", |b| {
        b.iter(|| {
            black_box(&pods)
                .iter()
                .fold(ResourceVector::EMPTY, |acc, v| acc.max(&v.mask(ResourceSet::CPU_MEMORY)))
        })
    });
}

fn conversion(c: &mut Criterion) {
    let list: BTreeMap<String, KubeQuantity> = [
        ("cpu", "1500m"),
        ("memory", "2Gi"),
        ("kubernetes.io/batch-cpu", "3000"),
        ("kubernetes.io/batch-memory", "1Gi"),
        ("nvidia.com/gpu", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), KubeQuantity(v.to_owned())))
    .collect();
    c.bench_function("from_resource_list (5 entries)", |b| {
        b.iter(|| ResourceVector::from_resource_list(black_box(&list)))
    });
}

/// `criterion_group!` generates an undocumented `pub fn`.
mod group {
    #![allow(missing_docs)]
    use super::{conversion, ops};
    criterion::criterion_group!(benches, ops, conversion);
}
criterion_main!(group::benches);
