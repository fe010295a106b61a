//! Tenants with ElasticQuotas and jobs as gangs, on the example scenario
//! `examples/scenarios/tenants.yaml`: the scheduler's quota and gang
//! plugins hold in the simulated cluster.

use kolo_sim::engine::{self, RunResult};
use kolo_sim::policy::Policy;
use kolo_sim::scenario::Scenario;
use kolo_sim::workload;

fn tenants() -> Scenario {
    let text = include_str!("../../../examples/scenarios/tenants.yaml");
    let mut s = Scenario::from_yaml(text, "tenants.yaml").unwrap();
    s.duration_hours = 1.5;
    s
}

fn run(s: &Scenario, policy: &str) -> RunResult {
    let w = workload::generate(s, engine::cluster_size(s));
    let p = Policy::resolve(policy, s).unwrap();
    engine::run(s, &w, &p, &|_| {}).unwrap()
}

#[test]
fn quotas_bound_each_tenant_and_no_gang_is_left_half_placed() {
    let s = tenants();
    for policy in ["baseline", "colocation"] {
        let r = run(&s, policy);
        let jobs = &r.summary.jobs;
        assert_eq!(jobs.tenants.len(), 3, "{policy}");
        for (t, spec) in jobs.tenants.iter().zip(&s.batch.tenants) {
            assert!(t.used_cores_avg > 0.0, "{policy}: {} ran nothing: {t:?}", t.name);
            assert!(
                t.used_cores_peak <= spec.max_cores + 1e-9,
                "{policy}: {} used {} cores, above its max {}",
                t.name,
                t.used_cores_peak,
                spec.max_cores
            );
        }
        let gangs = jobs.gangs.as_ref().expect("the scenario runs gangs");
        assert!(gangs.submitted > 10 && gangs.placed > 0, "{policy}: {gangs:?}");
        assert_eq!(gangs.half_placed_at_end, 0, "{policy}: {gangs:?}");
    }
}

/// A tenant whose max is below what it asks for is held at its max: the
/// precondition (it did wait) shows the bound was binding.
#[test]
fn a_tight_max_holds_the_tenant_back() {
    let mut s = tenants();
    s.batch.tenants[0].max_cores = 6.0;
    s.batch.tenants[0].min_cores = 6.0;
    let r = run(&s, "colocation");
    let a = &r.summary.jobs.tenants[0];
    assert!(a.hours_waiting > 0.1, "precondition: team-a must ask for more than 6 cores: {a:?}");
    assert!(a.used_cores_peak <= 6.0, "{a:?}");
    assert!(a.used_cores_peak >= 4.0, "team-a still runs up to its max: {a:?}");
}
