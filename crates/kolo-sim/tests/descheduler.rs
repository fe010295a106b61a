//! kolo's descheduler in the simulator, on examples/scenarios/hot-spots.yaml:
//! `colocation` (no descheduler) and `colocation-descheduler` side by side.

use kolo_sim::engine::{self, RunResult};
use kolo_sim::policy::Policy;
use kolo_sim::scenario::Scenario;
use kolo_sim::workload;

fn hot_spots() -> Scenario {
    let text = include_str!("../../../examples/scenarios/hot-spots.yaml");
    Scenario::from_yaml(text, "hot-spots.yaml").unwrap()
}

fn run(s: &Scenario, policy: &str) -> RunResult {
    let w = workload::generate(s, engine::cluster_size(s));
    let p = Policy::resolve(policy, s).unwrap();
    engine::run(s, &w, &p, &|_| {}).unwrap()
}

#[test]
fn the_descheduler_runs_every_interval_and_hot_spots_are_measured_for_both() {
    let s = hot_spots();
    let off = run(&s, "colocation");
    let on = run(&s, "colocation-descheduler");
    // The scenario has hot spots: nodes over 80% CPU for a while.
    let hot_off = off.summary.descheduler.hot_node_minutes;
    assert!(hot_off > 60.0, "{hot_off} hot node-minutes without a descheduler");
    // Hot-node minutes are the per-step counts × the step.
    let from_steps: u64 = off.steps.iter().map(|st| st.hot_nodes).sum();
    assert!((from_steps as f64 * s.step_seconds as f64 / 60.0 - hot_off).abs() < 1e-9);
    // One Balance round per deschedulingInterval (60 s) of simulated time.
    let d = &on.summary.descheduler;
    assert_eq!(d.descheduler_rounds, (s.duration_hours * 60.0).round() as u64);
    assert_eq!(off.summary.descheduler.descheduler_rounds, 0);
    // Every pod a migration evicted is accounted for: LS pods among them
    // were disrupted, and none is lost (the workloads recreated them).
    assert!(d.ls_pods_disrupted <= d.migration_evictions);
    assert_eq!(d.reservations_not_simulated, 0, "the policy asks for EvictDirectly");

    // The descheduler found the hot spots, moved LS pods off them (the
    // prod pass: only LS pods are candidates), and every moved pod was
    // placed again by the end.
    assert!(d.descheduler_sources > 0, "{d:?}");
    assert!(d.migration_jobs > 0 && d.migrations_succeeded > 0, "{d:?}");
    assert_eq!(d.ls_pods_disrupted, d.migration_evictions, "{d:?}");
    assert_eq!(on.summary.ls_pods_pending, 0);
    // And the nodes ran hot for less time than without it.
    let hot_on = d.hot_node_minutes;
    assert!(
        hot_on < hot_off / 2.0,
        "{hot_on} hot node-minutes with the descheduler, {hot_off} without"
    );
}
