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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::*;
    use super::*;

    fn names(jobs: &[&PodMigrationJob]) -> Vec<String> {
        jobs.iter().map(|j| job::name(j)).collect()
    }

    #[test]
    fn the_four_sorts_order_pending_jobs() {
        // Pods: a free (evicted first), b prod, c and d of batch Job "bj"
        // (c prod, d free), e of batch Job "bk" which already has a
        // migrating pod (m).
        let owned = |kind: &'static str, uid: &'static str, class: &'static str| {
            move |v: &mut serde_json::Value| {
                v["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": kind, "name": uid, "uid": uid, "controller": true}]);
                v["metadata"]["labels"] = json!({"koordinator.sh/priority-class": class});
            }
        };
        let pods = vec![
            pod_with("app", "a", Some("n1"), owned("ReplicaSet", "rs", "koord-free")),
            pod_with("app", "b", Some("n1"), owned("ReplicaSet", "rs", "koord-prod")),
            pod_with("app", "c", Some("n1"), owned("Job", "bj", "koord-prod")),
            pod_with("app", "d", Some("n1"), owned("Job", "bj", "koord-free")),
            pod_with("app", "e", Some("n1"), owned("Job", "bk", "koord-prod")),
            pod_with("app", "m", Some("n1"), owned("Job", "bk", "koord-prod")),
        ];
        let jobs = vec![
            job_with("ja", "app", "a", "Pending", 10, |_| {}),
            job_with("jb", "app", "b", "Pending", 20, |_| {}),
            job_with("jc", "app", "c", "Pending", 30, |_| {}),
            job_with("jd", "app", "d", "Pending", 40, |_| {}),
            job_with("je", "app", "e", "Pending", 50, |_| {}),
            job_with("jx", "app", "gone", "Pending", 5, |_| {}),
        ];
        let c = cluster(pods, jobs.clone(), vec![]);
        let refs: Vec<&PodMigrationJob> = jobs.iter().map(|j| &**j).collect();
        let mut load = Load::new(&c);
        // Without migrating pods: missing pod first, then by pod — free d
        // and a, prod e, c and b, each tie newest first (sort 1) — then c
        // pulled next to d (same Job bj).
        let sorted = sort_jobs(refs.clone(), &c, &load);
        assert_eq!(names(&sorted), ["jx", "jd", "jc", "ja", "je", "jb"]);
        // Job bk has a migrating pod: its jobs go first.
        load.add(&c, "app", "m");
        let sorted = sort_jobs(refs, &c, &load);
        assert_eq!(names(&sorted), ["je", "jx", "jd", "jc", "ja", "jb"]);
    }

    #[test]
    fn newest_first_breaks_ties_between_equal_pods() {
        let c = cluster(
            vec![pod("app", "a", "n1"), pod("app", "b", "n1")],
            vec![
                job_with("old", "app", "a", "Pending", 10, |_| {}),
                job_with("new", "app", "b", "Pending", 20, |_| {}),
            ],
            vec![],
        );
        let refs: Vec<&PodMigrationJob> = c.jobs().iter().map(|j| &**j).collect();
        assert_eq!(names(&sort_jobs(refs, &c, &Load::new(&c))), ["new", "old"]);
    }

    /// (pending job names passed, failed) for `jobs` under `args`.
    fn run(
        edit: impl FnOnce(&mut super::super::MigrationControllerArgs),
        pods: Vec<PodInfo>,
        jobs: Vec<std::sync::Arc<PodMigrationJob>>,
        replicas: Option<i32>,
    ) -> (Vec<String>, Vec<String>) {
        let mut ctl = controller(edit);
        let c = cluster(pods, jobs, vec![]).with_workloads(replicas.map(workload));
        let out = arbitrate(&mut ctl, &c, t(0), &HashSet::new());
        let mut passed: Vec<String> = out.passed.into_iter().collect();
        let mut failed: Vec<String> = out.failed.into_iter().collect();
        passed.sort();
        failed.sort();
        (passed, failed)
    }

    #[test]
    fn each_limit_holds_jobs_back() {
        let p = |name: &str, node: &str| pod("app", name, node);
        let pending =
            |name: &str, pod: &str, at: i64| job_with(name, "app", pod, "Pending", at, |_| {});
        // Per node (default 2): one Running on n1, so one of two pending passes.
        let (passed, _) = run(
            |_| {},
            vec![p("r", "n1"), p("a", "n1"), p("b", "n1"), p("c", "n2")],
            vec![
                job_with("jr", "app", "r", "Running", 0, |_| {}),
                pending("ja", "a", 1),
                pending("jb", "b", 2),
                pending("jc", "c", 3),
            ],
            None,
        );
        assert_eq!(passed, ["jb", "jc"], "newest first on n1, n2 free");
        // Per namespace.
        let (passed, _) = run(
            |a| a.max_migrating_per_namespace = Some(1),
            vec![p("a", "n1"), p("b", "n2")],
            vec![pending("ja", "a", 1), pending("jb", "b", 2)],
            None,
        );
        assert_eq!(passed, ["jb"]);
        // Globally (kolo).
        let (passed, _) = run(
            |a| a.max_migrating_globally = Some(1),
            vec![p("a", "n1"), p("b", "n2")],
            vec![
                job_with("jr", "other", "x", "Running", 0, |_| {}),
                pending("ja", "a", 1),
                pending("jb", "b", 2),
            ],
            None,
        );
        assert!(passed.is_empty());
        // Per workload: 10 replicas → maxMigrating 2 by default; two others migrating.
        let (passed, _) = run(
            |_| {},
            vec![p("r1", "n1"), p("r2", "n2"), p("a", "n3")],
            vec![
                job_with("j1", "app", "r1", "Running", 0, |_| {}),
                job_with("j2", "app", "r2", "Running", 0, |_| {}),
                pending("ja", "a", 1),
            ],
            Some(10),
        );
        assert!(passed.is_empty(), "maxMigratingPerWorkload");
        // Per workload unavailable: 10 replicas, two unready pods → maxUnavailable 2 reached.
        let unready = |name: &str| {
            pod_with("app", name, Some("n1"), |v| {
                v["status"]["conditions"][0]["status"] = json!("False")
            })
        };
        let (passed, _) = run(
            |_| {},
            vec![unready("u1"), unready("u2"), p("a", "n3")],
            vec![pending("ja", "a", 1)],
            Some(10),
        );
        assert!(passed.is_empty(), "maxUnavailablePerWorkload");
        let (passed, _) =
            run(|_| {}, vec![unready("u1"), p("a", "n3")], vec![pending("ja", "a", 1)], Some(10));
        assert_eq!(passed, ["ja"]);
        // A pod with two pending jobs: only one runs.
        let (passed, _) = run(
            |_| {},
            vec![p("a", "n1")],
            vec![pending("j1", "a", 1), pending("j2", "a", 2)],
            None,
        );
        assert_eq!(passed.len(), 1);
    }

    #[test]
    fn non_retryable_failures_fail_the_job() {
        let pending = |pod: &str| job_with("ja", "app", pod, "Pending", 1, |_| {});
        let bare =
            pod_with("app", "a", Some("n1"), |v| v["metadata"]["ownerReferences"] = json!([]));
        assert_eq!(run(|_| {}, vec![bare], vec![pending("a")], None), (vec![], vec!["ja".into()]));
        // One replica: expected-replicas check, unless skipped.
        let one = || vec![pod("app", "a", "n1")];
        assert_eq!(run(|_| {}, one(), vec![pending("a")], Some(1)).1, ["ja"]);
        assert_eq!(
            run(
                |a| a.skip_check_expected_replicas = Some(true),
                one(),
                vec![pending("a")],
                Some(1)
            )
            .0,
            ["ja"]
        );
        // ReservationFirst needs a reservation-aware scheduler; EvictDirectly does not.
        let default_sched = || {
            vec![pod_with("app", "a", Some("n1"), |v| {
                v["spec"]["schedulerName"] = json!("default-scheduler")
            })]
        };
        assert_eq!(run(|_| {}, default_sched(), vec![pending("a")], None).1, ["ja"]);
        let direct = job_with("ja", "app", "a", "Pending", 1, |v| {
            v["spec"]["mode"] = json!("EvictDirectly")
        });
        assert_eq!(run(|_| {}, default_sched(), vec![direct], None).0, ["ja"]);
        // A missing pod passes (the state machine reports MissingPod).
        assert_eq!(run(|_| {}, vec![], vec![pending("a")], None).0, ["ja"]);
    }
}
