//! Tenants and gangs in the simulation: the ElasticQuota each tenant gets,
//! the labels and annotations that put a batch pod in its tenant's quota
//! and its job's gang, and the bookkeeping the report draws from (each
//! tenant's use against its min, each gang's wait, gangs left half-placed).
//!
//! The scheduler's own ElasticQuota and Coscheduling plugins make the
//! decisions; this module only dresses the workload in their vocabulary
//! and watches the outcome.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kolo_api::crd::{ElasticQuota, ElasticQuotaSpec};
use kolo_api::names;
use serde::Serialize;

use kolo_scheduler::plugins::elastic_quota::runtime::{self, Share};

use crate::objects::{BATCH_NAMESPACE, PodClass};
use crate::scenario::{BatchWorkload, Tenant};
use crate::workload::BatchPod;

/// The annotation carrying a quota's shared weight (a JSON ResourceList).
const SHARED_WEIGHT: &str = "quota.scheduling.koordinator.sh/shared-weight";

/// The CPU resource batch pods of `class` request, and `cores` of it as a
/// quantity of that resource (`batch-cpu` counts milli-cores as its unit).
fn cpu_quantity(class: PodClass, cores: f64) -> (&'static str, Quantity) {
    let milli = (cores * 1000.0).round() as i64;
    match class {
        PodClass::Batch => (names::resource::BATCH_CPU, Quantity(milli.to_string())),
        PodClass::Ls | PodClass::Native => ("cpu", Quantity(format!("{milli}m"))),
    }
}

/// One ElasticQuota per tenant, in the batch namespace, bounding the CPU
/// resource the batch pods of `class` request.
pub fn quota_objects(tenants: &[Tenant], class: PodClass) -> Vec<ElasticQuota> {
    tenants
        .iter()
        .map(|t| {
            let list = |cores| {
                BTreeMap::from([cpu_quantity(class, cores)])
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
            };
            let annotations = t.shared_weight_cores.map(|w| {
                let (name, q) = cpu_quantity(class, w);
                let json = serde_json::json!({ name: q.0 }).to_string();
                BTreeMap::from([(SHARED_WEIGHT.to_string(), json)])
            });
            ElasticQuota {
                metadata: ObjectMeta {
                    name: Some(t.name.clone()),
                    namespace: Some(BATCH_NAMESPACE.to_string()),
                    annotations,
                    ..Default::default()
                },
                spec: ElasticQuotaSpec {
                    min: Some(list(t.min_cores)),
                    max: Some(list(t.max_cores)),
                },
                status: None,
            }
        })
        .collect()
}

/// Puts a batch pod in its tenant's quota (label) and, with gangs, in its
/// job's gang of all the job's pods (annotations).
pub fn dress_batch_pod(pod: &mut Pod, p: &BatchPod, batch: &BatchWorkload) {
    let meta = &mut pod.metadata;
    if let Some(tenant) = batch.tenants.get(p.tenant as usize) {
        meta.labels
            .get_or_insert_with(Default::default)
            .insert(names::label::QUOTA_NAME.to_string(), tenant.name.clone());
    }
    if batch.gangs {
        let annotations = meta.annotations.get_or_insert_with(Default::default);
        annotations.insert(names::annotation::GANG_NAME.to_string(), gang_name(p.job));
        annotations.insert(names::annotation::GANG_MIN_AVAILABLE.to_string(), p.tasks.to_string());
    }
}

/// The gang of job `job`.
fn gang_name(job: u32) -> String {
    format!("job-{job}")
}

/// What the run tracks of tenants and gangs.
#[derive(Debug, Clone, Default)]
pub struct JobBook {
    tenants: Vec<TenantBook>,
    gangs: BTreeMap<u32, GangBook>,
    track_gangs: bool,
}

#[derive(Debug, Clone, Default)]
struct TenantBook {
    /// CPU requests of its running pods, milli.
    used: i64,
    /// Its pods handed to the scheduler and not bound yet.
    pending: i64,
    /// Their CPU requests, milli.
    pending_cpu: i64,
    /// Σ fair share × seconds.
    fair_seconds: f64,
    /// Σ used × seconds.
    used_seconds: f64,
    /// The most `used` ever was, milli.
    peak: i64,
    /// Seconds it had pending pods.
    waiting_seconds: f64,
    /// Seconds it had pending pods while using less than its min.
    below_min_seconds: f64,
}

#[derive(Debug, Clone, Default)]
struct GangBook {
    tasks: u32,
    submitted_at: f64,
    bound: u32,
    placed_at: Option<f64>,
}

impl JobBook {
    /// A book for `batch`'s tenants (and gangs, if it has them).
    pub fn new(batch: &BatchWorkload) -> JobBook {
        JobBook {
            tenants: vec![TenantBook::default(); batch.tenants.len()],
            gangs: BTreeMap::new(),
            track_gangs: batch.gangs,
        }
    }

    /// A batch pod was handed to the scheduler at `t` seconds.
    pub fn submitted(&mut self, p: &BatchPod, t: f64) {
        if let Some(book) = self.tenants.get_mut(p.tenant as usize) {
            book.pending += 1;
            book.pending_cpu += p.cpu_request;
        }
        if self.track_gangs {
            self.gangs.entry(p.job).or_insert(GangBook {
                tasks: p.tasks,
                submitted_at: t,
                bound: 0,
                placed_at: None,
            });
        }
    }

    /// A batch pod was bound at `t` seconds.
    pub fn bound(&mut self, p: &BatchPod, t: f64) {
        if let Some(book) = self.tenants.get_mut(p.tenant as usize) {
            book.pending -= 1;
            book.pending_cpu -= p.cpu_request;
            book.used += p.cpu_request;
            book.peak = book.peak.max(book.used);
        }
        if let Some(gang) = self.gangs.get_mut(&p.job) {
            gang.bound += 1;
            if gang.bound >= gang.tasks && gang.placed_at.is_none() {
                gang.placed_at = Some(t);
            }
        }
    }

    /// A running batch pod left its node.
    pub fn left(&mut self, p: &BatchPod) {
        if let Some(book) = self.tenants.get_mut(p.tenant as usize) {
            book.used -= p.cpu_request;
        }
    }

    /// Accounts a step of `dt` seconds as the tenants stand now, with
    /// `total` (milli) the CPU the quotas share: what the tenants' pods may
    /// request in all (the root quota's runtime).
    pub fn step(&mut self, dt: f64, tenants: &[Tenant], total: i64) {
        let fair = fair_shares(&self.tenants, tenants, total);
        for ((book, tenant), fair) in self.tenants.iter_mut().zip(tenants).zip(fair) {
            book.used_seconds += book.used as f64 * dt;
            book.fair_seconds += fair as f64 * dt;
            if book.pending > 0 {
                book.waiting_seconds += dt;
                if (book.used as f64) < tenant.min_cores * 1000.0 {
                    book.below_min_seconds += dt;
                }
            }
        }
    }

    /// The summary of a run of `seconds`; `waiting_at_end` is how many pods
    /// the scheduler still held at Permit.
    pub fn summary(&self, tenants: &[Tenant], seconds: f64, waiting_at_end: usize) -> JobsSummary {
        let total_used: f64 = self.tenants.iter().map(|b| b.used_seconds).sum();
        let tenants = self
            .tenants
            .iter()
            .zip(tenants)
            .map(|(b, t)| TenantSummary {
                name: t.name.clone(),
                min_cores: t.min_cores,
                max_cores: t.max_cores,
                used_cores_avg: b.used_seconds / seconds.max(1e-9) / 1000.0,
                used_cores_peak: b.peak as f64 / 1000.0,
                fair_share_cores_avg: b.fair_seconds / seconds.max(1e-9) / 1000.0,
                share_of_batch_used: if total_used > 0.0 {
                    b.used_seconds / total_used
                } else {
                    0.0
                },
                hours_waiting: b.waiting_seconds / 3600.0,
                hours_below_min_while_waiting: b.below_min_seconds / 3600.0,
            })
            .collect();
        let gangs = self.track_gangs.then(|| {
            let mut waits: Vec<f64> = self
                .gangs
                .values()
                .filter_map(|g| g.placed_at.map(|at| at - g.submitted_at))
                .collect();
            waits.sort_by(f64::total_cmp);
            GangSummary {
                submitted: self.gangs.len() as u64,
                placed: waits.len() as u64,
                wait_seconds_p50: crate::metrics::quantile(&waits, 0.5),
                wait_seconds_p95: crate::metrics::quantile(&waits, 0.95),
                wait_seconds_max: waits.last().copied().unwrap_or(0.0),
                half_placed_at_end: self
                    .gangs
                    .values()
                    .filter(|g| g.placed_at.is_none() && g.bound > 0)
                    .count() as u64,
                pods_held_at_permit_at_end: waiting_at_end as u64,
            }
        });
        JobsSummary { tenants, gangs }
    }
}

/// Each tenant's runtime (milli) for `total`: the scheduler's ElasticQuota
/// runtime computation (§7.4: mins scaled when they exceed the total, the
/// rest shared by weight, never above a tenant's demand) over the tenants'
/// demands now.
fn fair_shares(books: &[TenantBook], tenants: &[Tenant], total: i64) -> Vec<i128> {
    let milli = |cores: f64| (cores * 1000.0).round() as i128;
    let mins: Vec<i128> = tenants.iter().map(|t| milli(t.min_cores)).collect();
    let mins = runtime::scale_mins(i128::from(total), &mins, &vec![true; mins.len()]);
    let shares: Vec<Share<'_>> = books
        .iter()
        .zip(tenants)
        .zip(&mins)
        .map(|((b, t), &min)| Share {
            name: &t.name,
            request: i128::from(b.used + b.pending_cpu).min(milli(t.max_cores)),
            min,
            guaranteed: 0,
            weight: milli(t.shared_weight_cores.unwrap_or(t.max_cores)),
            lend: true,
        })
        .collect();
    runtime::redistribute(i128::from(total), &shares)
}

/// Tenants and gangs over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobsSummary {
    /// Per tenant, in scenario order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantSummary>,
    /// Gangs, when jobs ran as gangs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gangs: Option<GangSummary>,
}

/// One tenant over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantSummary {
    /// The tenant (its quota's name).
    pub name: String,
    /// Its quota's min, cores.
    pub min_cores: f64,
    /// Its quota's max, cores.
    pub max_cores: f64,
    /// CPU requested by its running pods, cores, averaged over the run.
    pub used_cores_avg: f64,
    /// The most CPU its running pods requested at once, cores (its quota's
    /// max bounds it).
    pub used_cores_peak: f64,
    /// Its quota's runtime — its fair share of what the tenants' pods may
    /// use, by the ElasticQuota plugin's own arithmetic from each tenant's
    /// demand (running and waiting pods' requests, up to max), min and
    /// weight — averaged over the run, cores.
    pub fair_share_cores_avg: f64,
    /// Its part of all tenants' batch use (request × time).
    pub share_of_batch_used: f64,
    /// Hours it had pods waiting in the scheduler.
    pub hours_waiting: f64,
    /// Of those, hours it used less than its min: the quota's guarantee
    /// not met while it asked (capacity the cluster did not have, or
    /// others holding it).
    pub hours_below_min_while_waiting: f64,
}

/// Gangs over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GangSummary {
    /// Gangs (jobs) submitted.
    pub submitted: u64,
    /// Of those, with every pod bound at some point.
    pub placed: u64,
    /// Median wait from submission to the last pod bound, seconds.
    pub wait_seconds_p50: f64,
    /// 95th percentile of that wait.
    pub wait_seconds_p95: f64,
    /// Longest wait.
    pub wait_seconds_max: f64,
    /// Gangs with some but not all pods ever bound at the end: must be 0.
    pub half_placed_at_end: u64,
    /// Pods held at Permit (reserved, not bound) at the end.
    pub pods_held_at_permit_at_end: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str, min: f64, max: f64) -> Tenant {
        Tenant {
            name: name.into(),
            job_weight: 1.0,
            min_cores: min,
            max_cores: max,
            shared_weight_cores: None,
        }
    }

    fn pod(job: u32, tenant: u32, tasks: u32, cpu: i64) -> BatchPod {
        BatchPod {
            job,
            arrival: 0.0,
            cpu_request: cpu,
            memory_request: 1 << 30,
            demand: cpu as f64,
            work: 1.0,
            memory_usage: 0.0,
            tenant,
            tasks,
        }
    }

    #[test]
    fn quotas_bound_the_resource_the_pods_request() {
        let mut t = tenant("team-a", 4.0, 10.5);
        t.shared_weight_cores = Some(2.0);
        let batch = quota_objects(std::slice::from_ref(&t), PodClass::Batch);
        let spec = &batch[0].spec;
        assert_eq!(spec.min.as_ref().unwrap()["kubernetes.io/batch-cpu"].0, "4000");
        assert_eq!(spec.max.as_ref().unwrap()["kubernetes.io/batch-cpu"].0, "10500");
        let weight = &batch[0].metadata.annotations.as_ref().unwrap()[SHARED_WEIGHT];
        assert_eq!(weight, r#"{"kubernetes.io/batch-cpu":"2000"}"#);
        let native = quota_objects(&[t], PodClass::Native);
        assert_eq!(native[0].spec.max.as_ref().unwrap()["cpu"].0, "10500m");
        assert_eq!(native[0].metadata.namespace.as_deref(), Some(BATCH_NAMESPACE));
    }

    #[test]
    fn pods_get_their_quota_and_gang() {
        let mut batch = BatchWorkload {
            tenants: vec![tenant("a", 0.0, 1.0), tenant("b", 0.0, 1.0)],
            ..Default::default()
        };
        let mut object = Pod::default();
        dress_batch_pod(&mut object, &pod(7, 1, 3, 1000), &batch);
        assert_eq!(object.metadata.labels.as_ref().unwrap()[names::label::QUOTA_NAME], "b");
        assert!(object.metadata.annotations.is_none(), "no gangs asked for");
        batch.gangs = true;
        dress_batch_pod(&mut object, &pod(7, 1, 3, 1000), &batch);
        let annotations = object.metadata.annotations.unwrap();
        assert_eq!(annotations[names::annotation::GANG_NAME], "job-7");
        assert_eq!(annotations[names::annotation::GANG_MIN_AVAILABLE], "3");
    }

    #[test]
    fn the_book_counts_use_below_min_and_gang_waits() {
        let tenants = [tenant("a", 2.0, 8.0)];
        let batch = BatchWorkload { tenants: tenants.to_vec(), gangs: true, ..Default::default() };
        let mut book = JobBook::new(&batch);
        let (p, q) = (pod(1, 0, 2, 1000), pod(1, 0, 2, 1000));
        book.submitted(&p, 0.0);
        book.submitted(&q, 0.0);
        book.step(10.0, &tenants, 10_000); // waiting, 0 < 2 cores
        book.bound(&p, 10.0);
        book.step(10.0, &tenants, 10_000); // still waiting, 1 < 2 cores
        book.bound(&q, 30.0);
        book.step(10.0, &tenants, 10_000); // nothing waiting
        book.left(&p);
        book.step(10.0, &tenants, 10_000);
        book.submitted(&pod(2, 0, 3, 1000), 40.0);
        book.bound(&pod(2, 0, 3, 1000), 40.0);
        let s = book.summary(&tenants, 40.0, 1);
        let a = &s.tenants[0];
        // (0 + 1000 + 2000 + 1000) milli × 10 s over 40 s = 1 core.
        assert_eq!(a.used_cores_avg, 1.0);
        assert_eq!(a.used_cores_peak, 2.0, "both pods of job 1; later 1 of job 1 and 1 of job 2");
        assert_eq!(a.hours_waiting * 3600.0, 20.0);
        assert_eq!(a.hours_below_min_while_waiting * 3600.0, 20.0);
        // The only tenant's runtime is its demand, up to the 10-core total:
        // 2, 2, 2 (bound), then 1 core over the four steps → 1.75 cores.
        assert_eq!(a.fair_share_cores_avg, 1.75);
        let g = s.gangs.unwrap();
        assert_eq!((g.submitted, g.placed, g.wait_seconds_max), (2, 1, 30.0));
        assert_eq!(g.half_placed_at_end, 1, "job 2 bound 1 of 3");
        assert_eq!(g.pods_held_at_permit_at_end, 1);
    }
}
