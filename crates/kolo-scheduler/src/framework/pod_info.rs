//! A pod as the scheduler holds it: the object, kolo's view of it, and the
//! few numbers every cycle needs, computed once.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};
use kolo_api::quantity::{parse_milli, parse_value};
use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_core::pod::{PodView, PodViewError};

/// kube-scheduler's stand-in CPU request for a container without one, used
/// only for spreading scores (`NonZeroRequested`), never for fit.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// kube-scheduler's stand-in memory request (200 MB) for a container
/// without one, used only for spreading scores.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A pod and what the scheduler derives from it once.
#[derive(Debug, Clone)]
pub struct PodInfo {
    key: Box<str>,
    pod: Arc<Pod>,
    view: PodView,
    non_zero: (i64, i64),
    tie_hash: u64,
}

impl PodInfo {
    /// Reads a pod; fails on a malformed quantity, naming the field.
    pub fn new(pod: Pod) -> Result<PodInfo, PodViewError> {
        let view = PodView::from_pod(&pod)?;
        Ok(PodInfo::from_parts(Arc::new(pod), view))
    }

    /// Builds from an already-made view (snapshots carry one).
    pub fn from_parts(pod: Arc<Pod>, view: PodView) -> PodInfo {
        let key: Box<str> = view.key().into();
        let non_zero = non_zero_requests(&pod);
        let tie_hash = fnv1a(view.uid().as_bytes()) ^ fnv1a(key.as_bytes()).rotate_left(17);
        PodInfo { key, pod, view, non_zero, tie_hash }
    }

    /// `namespace/name`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The pod object.
    pub fn pod(&self) -> &Pod {
        &self.pod
    }

    /// The pod object, shared.
    pub fn pod_arc(&self) -> &Arc<Pod> {
        &self.pod
    }

    /// kolo's view (effective requests, QoS, priority, labels...).
    pub fn view(&self) -> &PodView {
        &self.view
    }

    /// CPU (milli) and memory (bytes) requests with kube-scheduler's
    /// stand-ins for containers that request none: what spreading scores
    /// count, so that request-less pods still spread.
    pub fn non_zero_requests(&self) -> (i64, i64) {
        self.non_zero
    }

    /// A per-pod hash that breaks ties between equally scored nodes the same
    /// way on every run (kube-scheduler picks at random).
    pub fn tie_hash(&self) -> u64 {
        self.tie_hash
    }

    /// When the `PodScheduled` condition became `True`, if it has.
    pub fn pod_scheduled_time(&self) -> Option<Timestamp> {
        self.condition_time("PodScheduled")
    }

    /// When the `Initialized` condition became `True`, if it has.
    pub fn initialized_time(&self) -> Option<Timestamp> {
        self.condition_time("Initialized")
    }

    fn condition_time(&self, kind: &str) -> Option<Timestamp> {
        self.pod
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == kind && c.status == "True")?
            .last_transition_time
            .as_ref()
            .map(|t| t.0)
    }
}

/// kube-scheduler's `NonZeroRequested` for a pod: each container's CPU and
/// memory request, or the stand-in when it has none; the larger of that sum
/// and each init container; plus the pod overhead.
fn non_zero_requests(pod: &Pod) -> (i64, i64) {
    let Some(spec) = pod.spec.as_ref() else {
        return (0, 0);
    };
    let of = |c: &Container| {
        let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
        let cpu = requests
            .and_then(|r| r.get("cpu"))
            .and_then(|q| parse_milli(q).ok())
            .unwrap_or(DEFAULT_MILLI_CPU_REQUEST);
        let memory = requests
            .and_then(|r| r.get("memory"))
            .and_then(|q| parse_value(q).ok())
            .unwrap_or(DEFAULT_MEMORY_REQUEST);
        (cpu, memory)
    };
    let (mut cpu, mut memory) = spec
        .containers
        .iter()
        .map(of)
        .fold((0i64, 0i64), |(a, b), (c, d)| (a.saturating_add(c), b.saturating_add(d)));
    for init in spec.init_containers.iter().flatten() {
        let (c, m) = of(init);
        cpu = cpu.max(c);
        memory = memory.max(m);
    }
    if let Some(overhead) = spec.overhead.as_ref() {
        cpu =
            cpu.saturating_add(overhead.get("cpu").and_then(|q| parse_milli(q).ok()).unwrap_or(0));
        memory = memory
            .saturating_add(overhead.get("memory").and_then(|q| parse_value(q).ok()).unwrap_or(0));
    }
    (cpu, memory)
}

/// FNV-1a: a tiny, stable hash (std's hasher is randomly keyed per process,
/// which would make tie-breaking differ from run to run).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    #[test]
    fn non_zero_requests_fill_in_missing_container_requests() {
        let c = |requests: &str| {
            format!("  - name: c\n    resources:\n      requests: {{{requests}}}\n")
        };
        let cases = [
            (c("cpu: 1, memory: 1Gi"), String::new(), (1000, 1 << 30)),
            (c(""), String::new(), (100, 200 << 20)),
            (c("cpu: 250m") + &c("memory: 1Gi"), String::new(), (350, (200 << 20) + (1 << 30))),
            // An init container larger than the sum wins.
            (c("cpu: 100m"), format!("  initContainers:\n{}", c("cpu: 2")), (2000, 200 << 20)),
        ];
        for (containers, init, want) in cases {
            let yaml = format!("metadata: {{name: p}}\nspec:\n  containers:\n{containers}{init}");
            let pod = PodInfo::new(pod_from_yaml(&yaml)).unwrap();
            assert_eq!(pod.non_zero_requests(), want, "{yaml}");
        }
    }
}
