//! [`JobEvictor`]: the evictor a Balance plugin evicts through; each
//! eviction becomes a Pending PodMigrationJob (spec §10.2).
//!
//! `filter` is the evictor filter plus "the pod already has a Pending or
//! Running job". `evict` checks the filter again, then the migration
//! limits (counting every Pending and Running job and the jobs created
//! earlier in the round, so a round never creates more jobs than may
//! run), then the workload object limiter; it creates the job (name from
//! [`job_name`]; annotations `evict-reason`,
//! `evict-trigger`, `job-created-by`; `podRef` with UID; mode, TTL and
//! delete options from the args; phase Pending) with an Event on the pod.
//! In a dry run (`dryRun`) it records the Event only.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kolo_api::crd::PodMigrationJob;
use kolo_api::crd::pod_migration_job::{
    PMJ_PHASE_PENDING, PodMigrationJobSpec, PodMigrationJobStatus,
};
use kolo_api::names::annotation::{EVICT_REASON, EVICT_TRIGGER, JOB_CREATED_BY};
use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_scheduler::framework::PodInfo;

use super::args::{max_per_workload, scaled};
use super::job::{self, job_name};
use super::limits::{Load, controller_uid};
use super::{CreatedJob, MigrationController};
use crate::cluster::Cluster;
use crate::evictor::{EvictionRequest, Evictor};
use crate::plan::{Action, Event, ObjectKey};

/// The migration controller's evictor for one round.
pub struct JobEvictor<'a> {
    ctl: &'a mut MigrationController,
    cluster: &'a Cluster,
    now: Timestamp,
    trigger: &'a str,
    load: Load<'a>,
    actions: Vec<Action>,
}

impl<'a> JobEvictor<'a> {
    pub(super) fn new(
        ctl: &'a mut MigrationController,
        cluster: &'a Cluster,
        now: Timestamp,
        trigger: &'a str,
    ) -> JobEvictor<'a> {
        let mut load = Load::new(cluster);
        for j in cluster.jobs() {
            if job::is_active(j)
                && let Some((ns, name, _)) = job::pod_ref(j)
            {
                load.add(cluster, ns, name);
            }
        }
        for key in ctl.memory.created.keys() {
            if let Some((ns, name)) = key.split_once('/') {
                load.add(cluster, ns, name);
            }
        }
        JobEvictor { ctl, cluster, now, trigger, load, actions: Vec::new() }
    }

    /// The actions of the round's evictions (CreateJob and Events).
    pub fn into_actions(self) -> Vec<Action> {
        self.actions
    }

    /// The workload object limiter's verdict on one more migration of
    /// `pod`'s workload.
    fn check_object_limiter(&mut self, pod: &PodInfo) -> Result<Option<String>, String> {
        let Some(limiter) = self.ctl.args.workload_limiter() else { return Ok(None) };
        let Some(uid) = controller_uid(pod) else { return Ok(None) };
        let Some(replicas) = self.cluster.workload(uid).and_then(|w| w.replicas) else {
            return Ok(None);
        };
        let configured = limiter.max_migrating.as_ref().and_then(|v| scaled(replicas, v).ok());
        let max = match configured {
            Some(n) if n > 0 => n.min(replicas),
            _ => max_per_workload(replicas, self.ctl.args.max_migrating_per_workload.as_ref()),
        }
        .max(0) as usize;
        let window = limiter.duration.0;
        if !self.ctl.limiter.allows(uid, max, self.now) {
            return Err(format!(
                "workload {uid} reached objectLimiters.workload: {max} migrations in {}s",
                window.as_secs()
            ));
        }
        Ok(Some(uid.to_string()))
    }

    fn job_for(&self, pod: &PodInfo, request: &EvictionRequest, name: &str) -> PodMigrationJob {
        let args = &self.ctl.args;
        let trigger = if request.plugin.is_empty() { self.trigger } else { request.plugin };
        let annotations: BTreeMap<String, String> = [
            (EVICT_REASON.to_string(), request.reason.clone()),
            (EVICT_TRIGGER.to_string(), trigger.to_string()),
            (JOB_CREATED_BY.to_string(), self.ctl.identity.clone()),
        ]
        .into();
        let view = pod.view();
        PodMigrationJob {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                annotations: Some(annotations),
                creation_timestamp: Some(Time(self.now)),
                ..Default::default()
            },
            spec: PodMigrationJobSpec {
                paused: None,
                ttl: args.job_ttl_text(),
                mode: Some(args.default_job_mode.clone()),
                pod_ref: Some(ObjectReference {
                    namespace: Some(view.namespace().to_string()),
                    name: Some(view.name().to_string()),
                    uid: Some(view.uid().to_string()),
                    ..Default::default()
                }),
                reservation_options: None,
                delete_options: args.default_delete_options.clone(),
            },
            status: Some(PodMigrationJobStatus {
                phase: Some(PMJ_PHASE_PENDING.into()),
                ..Default::default()
            }),
        }
    }

    fn pod_event(&mut self, pod: &PodInfo, reason: &str, message: String) {
        let view = pod.view();
        self.actions.push(Action::Event(Event {
            regarding: ObjectKey {
                kind: "Pod",
                namespace: view.namespace().to_string(),
                name: view.name().to_string(),
                uid: view.uid().to_string(),
            },
            warning: false,
            reason: reason.into(),
            message,
        }));
    }
}

impl Evictor for JobEvictor<'_> {
    fn filter(&self, pod: &PodInfo) -> Result<(), String> {
        self.ctl.filter.check(pod)?;
        if self.ctl.has_active_job(self.cluster, pod) {
            return Err("pod already has an active PodMigrationJob".into());
        }
        Ok(())
    }

    fn evict(&mut self, pod: &PodInfo, request: EvictionRequest) -> Result<(), String> {
        self.filter(pod)?;
        self.load.check(self.cluster, &self.ctl.args, pod)?;
        if self.ctl.args.dry_run {
            let message = format!("would migrate (dry run): {}", request.reason);
            self.pod_event(pod, "MigrationDryRun", message);
            return Ok(());
        }
        let workload = self.check_object_limiter(pod)?;
        if let Some(uid) = workload {
            self.ctl.limiter.record(&uid, self.now);
        }
        let name = job_name(pod, self.now);
        let job = self.job_for(pod, &request, &name);
        self.actions.push(Action::CreateJob(Box::new(job)));
        let message =
            format!("{} migrates the pod (job {name}): {}", request.plugin, request.reason);
        self.pod_event(pod, "MigrationCreated", message);
        self.ctl.memory.created.insert(
            pod.key().to_string(),
            CreatedJob { job: name, pod_uid: pod.view().uid().to_string(), at: self.now },
        );
        self.load.add(self.cluster, pod.view().namespace(), pod.view().name());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use kube::ResourceExt;
    use serde_json::json;

    use super::super::testing::*;
    use super::*;

    fn request(pod: &PodInfo) -> EvictionRequest {
        EvictionRequest {
            pod: kolo_core::PodRef::new(
                pod.view().namespace(),
                pod.view().name(),
                pod.view().uid(),
            ),
            node: pod.view().node_name().unwrap_or_default().into(),
            plugin: "LowNodeLoad",
            reason: "node is overutilized".into(),
        }
    }

    fn created(actions: &[Action]) -> Vec<&PodMigrationJob> {
        actions
            .iter()
            .filter_map(|a| if let Action::CreateJob(j) = a { Some(&**j) } else { None })
            .collect()
    }

    #[test]
    fn evict_creates_a_pending_job_with_koordinators_annotations() {
        let mut ctl = controller(|_| {}).with_identity("me");
        let p = pod("app", "p", "n1");
        let c = cluster(vec![p.clone()], vec![], vec![]);
        let mut ev = ctl.evictor(&c, t(5), "Balance");
        ev.evict(&p, request(&p)).unwrap();
        assert_eq!(ev.filter(&p).unwrap_err(), "pod already has an active PodMigrationJob");
        let actions = ev.into_actions();
        let jobs = created(&actions);
        assert_eq!(jobs.len(), 1);
        let j = jobs[0];
        assert_eq!(j.name_any(), format!("pmj-p-uid-{}", t(5).as_millisecond()));
        let a = j.metadata.annotations.clone().unwrap();
        assert_eq!(a[EVICT_REASON], "node is overutilized");
        assert_eq!(a[EVICT_TRIGGER], "LowNodeLoad");
        assert_eq!(a[JOB_CREATED_BY], "me");
        let r = j.spec.pod_ref.clone().unwrap();
        assert_eq!(
            (r.namespace.as_deref(), r.name.as_deref(), r.uid.as_deref()),
            (Some("app"), Some("p"), Some("p-uid"))
        );
        assert_eq!(
            (j.spec.mode.as_deref(), j.spec.ttl.as_deref()),
            (Some("ReservationFirst"), Some("5m0s"))
        );
        assert_eq!(j.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));
        assert!(
            actions.iter().any(|a| matches!(a, Action::Event(e) if e.reason == "MigrationCreated"))
        );
        // Remembered until the store shows the job.
        let c2 = cluster(vec![p.clone()], vec![], vec![]);
        assert!(ctl.evictor(&c2, t(6), "Balance").filter(&p).is_err());
    }

    #[test]
    fn evict_respects_limits_the_object_limiter_and_dry_run() {
        // Node limit 2, counting a Pending job already in the store.
        let mut ctl = controller(|_| {});
        let pods: Vec<PodInfo> = ["a", "b", "c"].iter().map(|n| pod("app", n, "n1")).collect();
        let c =
            cluster(pods.clone(), vec![job_with("j0", "app", "x", "Pending", 0, |_| {})], vec![]);
        let c = cluster(
            [pods.clone(), vec![pod("app", "x", "n1")]].concat(),
            c.jobs().to_vec(),
            vec![],
        );
        let mut ev = ctl.evictor(&c, t(1), "");
        assert!(ev.evict(&pods[0], request(&pods[0])).is_ok());
        let err = ev.evict(&pods[1], request(&pods[1])).unwrap_err();
        assert!(err.contains("maxMigratingPerNode 2 reached on node n1"), "{err}");
        // Object limiter: 20 replicas, objectLimiters.workload.maxMigrating 1 per 5 min.
        let mut ctl = controller(|a| {
            a.max_migrating_per_node = Some(0);
            a.object_limiters.get_mut("workload").unwrap().max_migrating =
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1));
        });
        let spread: Vec<PodInfo> = ["a", "b"].iter().map(|n| pod("app", n, n)).collect();
        let c = cluster(spread.clone(), vec![], vec![]).with_workloads([workload(20)]);
        let mut ev = ctl.evictor(&c, t(1), "");
        assert!(ev.evict(&spread[0], request(&spread[0])).is_ok());
        let err = ev.evict(&spread[1], request(&spread[1])).unwrap_err();
        assert!(err.contains("objectLimiters.workload"), "{err}");
        drop(ev);
        let later = cluster(spread.clone(), vec![], vec![]).with_workloads([workload(20)]);
        assert!(
            ctl.evictor(&later, t(301), "").evict(&spread[1], request(&spread[1])).is_ok(),
            "window passed"
        );
        // Dry run: an Event, no job.
        let mut ctl = controller(|a| a.dry_run = true);
        let c = cluster(vec![pods[0].clone()], vec![], vec![]);
        let mut ev = ctl.evictor(&c, t(1), "");
        ev.evict(&pods[0], request(&pods[0])).unwrap();
        let actions = ev.into_actions();
        assert!(created(&actions).is_empty() && actions.len() == 1);
        // The filter's rule is the error.
        let ds = pod_with("app", "d", Some("n1"), |v| {
            v["metadata"]["ownerReferences"][0]["kind"] = json!("DaemonSet")
        });
        let mut ctl = controller(|_| {});
        let c = cluster(vec![ds.clone()], vec![], vec![]);
        assert_eq!(
            ctl.evictor(&c, t(1), "").evict(&ds, request(&ds)).unwrap_err(),
            "pod is owned by a DaemonSet"
        );
    }
}
