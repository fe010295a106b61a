//! The round object end to end in memory: a DeschedulerConfiguration read,
//! a Balance round turning a hot node's pods into PodMigrationJobs, the
//! migration passes evicting them (a refused eviction failing its job),
//! dry runs writing nothing but Events, and configurations refused with
//! the field named.

use std::sync::Arc;

use kolo_api::PriorityClass;
use kolo_api::crd::PodMigrationJob;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::{OwnerRef, PodView};
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_core::usage_report::{NodeUsageReport, PodUsage};
use kolo_descheduler::config::DeschedulerConfig;
use kolo_descheduler::low_node_load::NodeClass;
use kolo_descheduler::{Action, Cluster, Descheduler};
use kolo_scheduler::framework::PodInfo;
use kube::ResourceExt;

const GI: i64 = 1 << 30;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn node(name: &str) -> NodeView {
    let alloc = ResourceVector::cpu_memory(4000, 8 * GI).with(ResourceName::Pods, 110);
    NodeView::new(name).with_resources(alloc, alloc)
}

fn pod(name: &str, node: &str) -> PodInfo {
    let owner = OwnerRef {
        kind: "ReplicaSet".into(),
        name: "rs".into(),
        uid: "rs-uid".into(),
        controller: true,
    };
    let view = PodView::new("ns", name)
        .with_uid(&format!("uid-{name}"))
        .with_node_name(node)
        .with_priority(PriorityClass::Batch, 5500)
        .with_owner(owner)
        .with_requests(ResourceVector::cpu_memory(100, 0));
    PodInfo::from_parts(Arc::new(Default::default()), view)
}

fn report(
    node: &str,
    now: Timestamp,
    system_cpu: i64,
    pods: &[(&str, i64)],
) -> Arc<NodeUsageReport> {
    Arc::new(NodeUsageReport {
        node: node.into(),
        update_time: Some(now),
        node_usage: Some(ResourceVector::EMPTY),
        system_usage: ResourceVector::cpu_memory(system_cpu, 0),
        pods: pods
            .iter()
            .map(|(p, cpu)| PodUsage {
                key: format!("ns/{p}").into(),
                priority: None,
                usage: ResourceVector::cpu_memory(*cpu, 0).into(),
            })
            .collect(),
        ..Default::default()
    })
}

/// `hot` at 3,200m of 4,000m (high threshold 50 %: 2,000m), `cold` at
/// 400m (low threshold 20 %: 800m); the jobs given.
fn cluster(now: Timestamp, jobs: &[PodMigrationJob]) -> Cluster {
    let hot = [("p1", 1000), ("p2", 800), ("p3", 600), ("p4", 400)];
    Cluster::new(
        vec![node("hot"), node("cold")],
        hot.iter().map(|(p, _)| pod(p, "hot")).collect(),
        [report("hot", now, 400, &hot), report("cold", now, 400, &[])],
    )
    .with_jobs(jobs.iter().cloned().map(Arc::new))
}

fn config(extra: &str, low_node_load: &str, migration: &str) -> DeschedulerConfig {
    DeschedulerConfig::from_yaml(&format!(
        "{extra}\nprofiles:\n- name: test\n  plugins:\n    balance:\n      enabled: [{{name: LowNodeLoad}}]\n  \
         pluginConfig:\n  - name: LowNodeLoad\n    args: {{lowThresholds: {{cpu: 20}}, highThresholds: {{cpu: 50}}, \
         anomalyCondition: {{consecutiveAbnormalities: 1}}{low_node_load}}}\n  \
         - name: MigrationController\n    args: {{defaultJobMode: EvictDirectly{migration}}}\n"
    ))
    .unwrap()
}

/// Applies the job writes of `actions` to `jobs`, as the API server would.
fn apply(jobs: &mut Vec<PodMigrationJob>, actions: &[Action]) {
    for action in actions {
        match action {
            Action::CreateJob(job) => jobs.push((**job).clone()),
            Action::SetJobStatus { job, status } => {
                let j = jobs.iter_mut().find(|j| j.name_any() == *job).unwrap();
                j.status = Some((**status).clone());
            }
            Action::SetJobSpec { job, spec } => {
                let j = jobs.iter_mut().find(|j| j.name_any() == *job).unwrap();
                j.spec = (**spec).clone();
            }
            _ => {}
        }
    }
}

fn phase(jobs: &[PodMigrationJob], name: &str) -> (String, String) {
    let job = jobs.iter().find(|j| j.name_any() == name).unwrap();
    let status = job.status.clone().unwrap_or_default();
    (status.phase.unwrap_or_default(), status.reason.unwrap_or_default())
}

#[test]
fn a_hot_nodes_pods_are_migrated_and_a_refused_eviction_fails_its_job() {
    let mut d = Descheduler::new(&config("", "", "")).unwrap();
    let round = d.balance(&cluster(at(0), &[]), at(0));
    let pool = &round.pools[0];
    let class = |n: &str| pool.nodes.iter().find(|r| r.node == n).map(|r| r.class);
    // No prod thresholds: they count as 100 %, so cold is low on both.
    assert_eq!((class("hot"), class("cold")), (Some(NodeClass::Source), Some(NodeClass::BothLow)));
    let evicted: Vec<&str> = pool.evicted().map(|c| c.pod.as_str()).collect();
    let mut jobs = Vec::new();
    apply(&mut jobs, &round.actions);
    let job_pods: Vec<String> = jobs
        .iter()
        .map(|j| {
            let r = j.spec.pod_ref.as_ref().unwrap();
            format!("{}/{}", r.namespace.as_deref().unwrap(), r.name.as_deref().unwrap())
        })
        .collect();
    // 3,200m over a 2,000m threshold: pods go until the node is under it,
    // each as one job, each with an Event on the pod.
    assert!(!evicted.is_empty() && evicted.len() < 4, "{evicted:?}");
    assert_eq!(job_pods, evicted);
    let events = round.actions.iter().filter(|a| matches!(a, Action::Event(_))).count();
    assert_eq!(events, jobs.len());

    // The next balance round does not migrate them again.
    let again = d.balance(&cluster(at(1), &jobs), at(1));
    assert!(
        !again.actions.iter().any(|a| matches!(a, Action::CreateJob(_))),
        "{:?}",
        again.actions
    );

    // Migration passes: each job is evicted directly (one eviction per
    // pass at most: evictBurst 1, evictQPS 10).
    let first = jobs[0].name_any();
    let mut evictions = Vec::new();
    for step in 0..(4 * jobs.len() as i64) {
        let now = at(2) + std::time::Duration::from_millis(500 * step as u64);
        let actions = d.migrate(&cluster(now, &jobs), now);
        for a in &actions {
            if let Action::Evict { job: Some(job), .. } = a {
                evictions.push(job.clone());
                let result = if *job == first {
                    Err("429: would violate the budget".into())
                } else {
                    Ok(())
                };
                d.eviction_result(job, result, now);
            }
        }
        apply(&mut jobs, &actions);
    }
    evictions.sort();
    let mut names: Vec<String> = jobs.iter().map(|j| j.name_any()).collect();
    names.sort();
    assert_eq!(evictions, names, "each job's pod evicted exactly once");
    let (phase_first, reason_first) = phase(&jobs, &first);
    assert_eq!((phase_first.as_str(), reason_first.as_str()), ("Failed", "FailedEvict"));
}

#[test]
fn a_dry_run_writes_nothing_but_events() {
    for (extra, low_node_load, reason) in
        [("dryRun: true", "", "MigrationDryRun"), ("", ", dryRun: true", "MigrationDryRun")]
    {
        let mut d = Descheduler::new(&config(extra, low_node_load, "")).unwrap();
        let round = d.balance(&cluster(at(0), &[]), at(0));
        assert!(round.pools[0].evicted().count() > 0, "{extra}{low_node_load}: a pod is chosen");
        assert!(!round.actions.is_empty());
        for action in &round.actions {
            match action {
                Action::Event(e) => assert_eq!(e.reason, reason, "{e:?}"),
                other => panic!("{extra}{low_node_load}: a dry run wrote {other:?}"),
            }
        }
    }
    // A job already in the cluster is left alone in a global dry run.
    let mut live = Descheduler::new(&config("", "", "")).unwrap();
    let mut jobs = Vec::new();
    apply(&mut jobs, &live.balance(&cluster(at(0), &[]), at(0)).actions);
    let mut dry = Descheduler::new(&config("dryRun: true", "", "")).unwrap();
    assert!(dry.is_dry_run());
    assert_eq!(dry.migrate(&cluster(at(1), &jobs), at(1)), Vec::new());
    assert!(!live.migrate(&cluster(at(1), &jobs), at(1)).is_empty());
}

#[test]
fn configurations_are_refused_naming_the_field() {
    let bad = [
        (
            "profiles: [{name: a, plugins: {balance: {enabled: [{name: HighNodeLoad}]}}}]",
            "profiles[0].plugins.balance.enabled[0]",
        ),
        (
            "profiles: [{name: a, plugins: {evict: {disabled: [{name: '*'}]}}}]",
            "profiles[0].plugins.evict",
        ),
        (
            "profiles: [{name: a, pluginConfig: [{name: Nope, args: {}}]}]",
            "profiles[0].pluginConfig[0].name",
        ),
        (
            "profiles: [{name: a, plugins: {balance: {enabled: [{name: LowNodeLoad}]}}, pluginConfig: [{name: LowNodeLoad, args: {highThresholds: {cpu: x}}}]}]",
            "highThresholds.cpu",
        ),
        (
            "profiles: [{name: a, pluginConfig: [{name: MigrationController, args: {maxMigratingPerNode: -1}}]}]",
            "maxMigratingPerNode",
        ),
        (
            "profiles: [{name: a, pluginConfig: [{name: MigrationController, args: {evictBurst: 1}}]}, {name: b, pluginConfig: [{name: MigrationController, args: {evictBurst: 2}}]}]",
            "profiles[1].pluginConfig[MigrationController]",
        ),
    ];
    for (yaml, field) in bad {
        let err = DeschedulerConfig::from_yaml(yaml).and_then(|c| Descheduler::new(&c).map(drop));
        let err = err.expect_err(yaml).to_string();
        assert!(err.contains(field), "{yaml}: {err}");
    }
    // The empty file is valid and balances nothing, as Koordinator's
    // default (LowNodeLoad is opt-in).
    let d = Descheduler::new(&DeschedulerConfig::from_yaml("{}").unwrap()).unwrap();
    assert!(!d.balances() && !d.is_dry_run());
}
