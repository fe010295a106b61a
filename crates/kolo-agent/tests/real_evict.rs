//! The standalone evictor on real cgroups: it kills a BE pod's processes
//! and refuses any other pod. Skips loudly without root or cgroup v1.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{TestCgroups, Workload, process_state, skip, test_container_id, test_uid};
use kolo_agent::cgroup::{Cgroups, ContainerId};
use kolo_agent::evict::{Evictor, KillEvictor};
use kolo_agent::qos::{ContainerState, PodState};
use kolo_api::QoSClass;
use kolo_api::kube_qos::KubeQoSClass;

fn alive(pid: u32) -> bool {
    // A killed child stays a zombie until reaped: count that as gone.
    process_state(pid).is_some_and(|s| s != 'Z')
}

#[test]
fn kills_a_be_pods_processes_and_refuses_other_pods() {
    let mut sandbox = match TestCgroups::new() {
        Ok(s) => s,
        Err(reason) => return skip("kills_a_be_pods_processes_and_refuses_other_pods", &reason),
    };
    let cgroups = Arc::new(Cgroups::detect(&sandbox.layout_config()).unwrap());
    let mut pods = Vec::new();
    for (n, qos, kube_qos) in
        [(1, QoSClass::BE, KubeQoSClass::BestEffort), (2, QoSClass::LS, KubeQoSClass::Burstable)]
    {
        let (pod, rel) = sandbox.add_single_container_pod(n, "pod", qos, kube_qos);
        let pid = sandbox.spawn(&rel, Workload::Sleep).unwrap();
        let (uid, id) = (test_uid(n), test_container_id(n));
        let dir = cgroups.pod_dir(kube_qos, &uid).unwrap();
        let cdir = cgroups
            .pod_paths()
            .container_dir(&dir, &ContainerId::parse(&format!("containerd://{id}")).unwrap())
            .unwrap();
        let state = PodState {
            pod,
            priority: None,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            dir,
            containers: vec![ContainerState {
                name: "main".into(),
                dir: Some(cdir),
                requests: Default::default(),
                limits: Default::default(),
                usage: None,
            }],
            usage: None,
        };
        pods.push((state, pid));
    }
    let mut evictor = KillEvictor::new(Arc::clone(&cgroups));
    let (be, be_pid) = &pods[0];
    let (ls, ls_pid) = &pods[1];
    assert!(alive(*be_pid) && alive(*ls_pid));

    let err = evictor.evict(ls, "test").unwrap_err();
    assert!(err.to_string().contains("refusing to kill"), "{err}");
    evictor.evict(be, "memory over 70%").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(*be_pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(*be_pid), "the BE pod's process was killed");
    assert!(alive(*ls_pid), "the LS pod's process lives");
}
