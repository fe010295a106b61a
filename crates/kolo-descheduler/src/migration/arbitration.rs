//! Arbitration of Pending jobs (spec §10.3): which may start now.
//!
//! Pending jobs of this controller (not paused) are ordered by four
//! successive stable sorts, so the last is the primary key:
//!
//! 1. creation time (whole seconds), newest first;
//! 2. by pod, with the §9.3 pod order without the usage score (jobs
//!    whose pod is missing first);
//! 3. jobs whose pods belong to the same batch `Job` made adjacent, at the
//!    position of the first;
//! 4. jobs whose `Job` owner already has more migrating pods first.
//!
//! Then, in that order, each job: a pod the evictor filter forbids, a
//! workload the expected-replicas check refuses, or (ReservationFirst) a
//! pod no reservation-aware scheduler places makes the job `Failed`
//! (`ForbiddenMigratePod`); a pod that already has another migrating job
//! or a reached limit ([`Load::check`]) leaves it Pending; otherwise it
//! passes, counts as migrating for the jobs after it, and the state
//! machine starts it in the same pass. A job whose pod is missing passes
//! (the state machine fails it with `MissingPod`). With
//! `arbitrationArgs.enabled: false` the same checks run in the store's
//! order.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use kolo_api::crd::PodMigrationJob;
use kolo_api::crd::pod_migration_job::{PMJ_PHASE_FAILED, PMJ_PHASE_RUNNING};
use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_scheduler::framework::PodInfo;

use super::MigrationController;
use super::job::{self, REASON_FORBIDDEN};
use super::limits::{Load, check_expected_replicas};
use super::reconcile::{created_by_other, job_event};
use crate::cluster::Cluster;
use crate::plan::Action;

/// What one arbitration decided.
#[derive(Debug, Default)]
pub struct Arbitrated {
    /// Status writes (Failed jobs) and their Events.
    pub actions: Vec<Action>,
    /// Jobs that may start.
    pub passed: HashSet<String>,
    /// Jobs failed here.
    pub failed: HashSet<String>,
}

/// The pod of `job`, when the cluster has it with the UID the job names.
pub fn pod_of<'c>(cluster: &'c Cluster, job: &PodMigrationJob) -> Option<&'c PodInfo> {
    let (ns, name, uid) = job::pod_ref(job)?;
    cluster.pod(&format!("{ns}/{name}")).filter(|p| uid.is_empty() || p.view().uid() == uid)
}

/// The controlling `Job` owner UID of a pod.
fn batch_job_of(pod: Option<&PodInfo>) -> Option<&str> {
    pod?.view().owner().filter(|o| o.controller && &*o.kind == "Job").map(|o| &*o.uid)
}

/// Orders `jobs` by the four stable sorts. `migrating` counts, per pod
/// key, the pods that are migrating (for sort 4).
pub fn sort_jobs<'j>(
    mut jobs: Vec<&'j PodMigrationJob>,
    cluster: &Cluster,
    migrating: &Load<'_>,
) -> Vec<&'j PodMigrationJob> {
    // 1. Newest first (seconds, as Koordinator compares Unix()).
    jobs.sort_by_key(|j| std::cmp::Reverse(job::created(j).map(|t| t.as_second())));
    // 2. By pod; missing pods first.
    let mut keyed: Vec<_> = jobs
        .into_iter()
        .map(|j| (pod_of(cluster, j).map(crate::pod_sort::PodSortKey::of), j))
        .collect();
    keyed.sort_by(|(a, _), (b, _)| match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp_head(y).then_with(|| x.cmp_age(y)),
    });
    let jobs: Vec<&PodMigrationJob> = keyed.into_iter().map(|(_, j)| j).collect();
    // 3. Same batch Job adjacent, at the first one's position.
    let mut first: HashMap<&str, usize> = HashMap::new();
    let ranks: Vec<usize> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| match batch_job_of(pod_of(cluster, j)) {
            Some(uid) => *first.entry(uid).or_insert(i),
            None => i,
        })
        .collect();
    let mut ranked: Vec<(usize, &PodMigrationJob)> = ranks.into_iter().zip(jobs).collect();
    ranked.sort_by_key(|(r, _)| *r);
    // 4. Job owners with more migrating pods first.
    let count = |j: &PodMigrationJob| {
        batch_job_of(pod_of(cluster, j)).map_or(0, |uid| migrating.in_workload(uid))
    };
    ranked.sort_by_key(|(_, j)| std::cmp::Reverse(count(j)));
    ranked.into_iter().map(|(_, j)| j).collect()
}

/// Arbitrates the Pending jobs of `ctl` (skipping `skip`, which the
/// scavenger deletes).
pub fn arbitrate(
    ctl: &mut MigrationController,
    cluster: &Cluster,
    now: Timestamp,
    skip: &HashSet<String>,
) -> Arbitrated {
    let mut load = Load::new(cluster);
    let mut pending = Vec::new();
    for j in cluster.jobs() {
        let name = job::name(j);
        let phase = job::phase(j);
        if phase == PMJ_PHASE_RUNNING || (phase == "Pending" && ctl.memory.passed.contains(&name)) {
            if let Some((ns, pod, _)) = job::pod_ref(j) {
                load.add(cluster, ns, pod);
            }
        } else if phase == "Pending"
            && !skip.contains(&name)
            && j.spec.paused != Some(true)
            && !created_by_other(j, &ctl.identity)
        {
            pending.push(&**j);
        }
    }
    if ctl.args.arbitration_args.enabled {
        pending = sort_jobs(pending, cluster, &load);
    }
    let mut out = Arbitrated::default();
    for j in pending {
        let name = job::name(j);
        let Some(pod) = pod_of(cluster, j) else {
            out.passed.insert(name);
            continue;
        };
        if let Err(rule) = non_retryable(ctl, cluster, j, pod) {
            let mut status = j.status.clone().unwrap_or_default();
            status.phase = Some(PMJ_PHASE_FAILED.into());
            status.reason = Some(REASON_FORBIDDEN.into());
            status.message = Some(format!("Pod {:?} is forbidden to migrate: {rule}", pod.key()));
            out.actions.push(job_event(
                j,
                true,
                REASON_FORBIDDEN,
                status.message.clone().unwrap_or_default(),
            ));
            out.actions.insert(
                out.actions.len() - 1,
                Action::SetJobStatus { job: name.clone(), status: Box::new(status) },
            );
            out.failed.insert(name);
            continue;
        }
        if load.contains(pod.key()) || load.check(cluster, &ctl.args, pod).is_err() {
            continue;
        }
        load.add(cluster, pod.view().namespace(), pod.view().name());
        ctl.memory.passed.insert(name.clone());
        out.passed.insert(name);
    }
    let _ = now;
    out
}

/// The checks waiting cannot fix.
fn non_retryable(
    ctl: &MigrationController,
    cluster: &Cluster,
    j: &PodMigrationJob,
    pod: &PodInfo,
) -> Result<(), String> {
    ctl.filter.check(pod)?;
    check_expected_replicas(cluster, &ctl.args, pod)?;
    if !job::evicts_directly(j)
        && let Some(scheduler) = pod.view().scheduler_name()
        && !ctl.args.scheduler_names.iter().any(|s| s == scheduler)
    {
        return Err(format!(
            "scheduler {scheduler:?} cannot place a reservation (schedulerNames: {:?})",
            ctl.args.scheduler_names
        ));
    }
    Ok(())
}
