//! `kolo bench scheduler` at a tiny size against the real API server: every
//! run (kolo's scheduler, kube-scheduler adaptive and 100 %, bind-only)
//! binds every pending pod, and the table has its columns.
//!
//! Runs when `KOLO_TEST_KUBECONFIG` names a kubeconfig (`scripts/test`
//! starts an API server); otherwise it says loudly that it skipped. The
//! kube-scheduler runs need `/var/cache/kolo-cluster/bin/kube-scheduler`
//! (`scripts/cluster build`); without it they are skipped, loudly.

use std::io::Write;

mod common;

use common::{kolo, run};

const KUBE_SCHEDULER: &str = "/var/cache/kolo-cluster/bin/kube-scheduler";

#[test]
fn every_run_binds_every_pod_and_the_table_has_its_columns() {
    let Some(config) = common::kubeconfig("bench_scheduler") else { return };
    let mut runs = vec!["kolo", "kube-scheduler", "kube-scheduler-100", "bind-only"];
    if !std::path::Path::new(KUBE_SCHEDULER).exists() {
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED the kube-scheduler runs of bench_scheduler: {KUBE_SCHEDULER} is \
             missing (sudo scripts/cluster build). ***"
        );
        runs.retain(|r| !r.starts_with("kube-scheduler"));
    }
    let output = run(
        kolo()
            .args(["bench", "scheduler", "--kubeconfig"])
            .arg(&config)
            .args(["--nodes", "20", "--bound-pods", "10", "--pending-pods", "50"])
            .args(["--timeout-seconds", "120", "--runs", &runs.join(",")]),
        None,
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let header = text.lines().find(|l| l.starts_with("run ")).unwrap_or_else(|| panic!("{text}"));
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        ["run", "bound", "first>last", "start>last", "1st", "bind", "s", "after", "sync"]
            .into_iter()
            .chain(["req/pod", "max", "conns", "CPU", "s", "API", "CPU", "s"])
            .collect::<Vec<_>>(),
        "{text}"
    );
    for name in &runs {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{text}"));
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields[1], "50/50", "{name} bound every pod:\n{text}");
        let rate: f64 = fields[2].parse().unwrap();
        assert!(rate > 0.0, "{name} has a bind rate:\n{text}");
        let connections: usize = fields[7].parse().unwrap();
        assert!((1..=16).contains(&connections), "{name}: {connections} connections:\n{text}");
    }
    assert!(text.contains("kolo / bind-only (first>last): "), "{text}");
}
