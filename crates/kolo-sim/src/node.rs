//! One simulated node: its pods' demands in a step, the CPU they get under
//! contention ([`crate::contention`]), BE progress, LS starvation and
//! latency, memory and the OOM killer, and the usage windows its NodeMetric
//! reports.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use kolo_api::crd::{NodeMetricSpec, NodeSLOSpec};
use kolo_core::CpuMem;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_manager::noderesource::ExtendedResources;

use crate::agent::AgentSide;
use crate::contention::{Class, Isolation, NodeCpu, Scratch, share};
use crate::metrics::Histogram;
use crate::usage::{Curve, diurnal};

/// What a pod does with CPU and memory.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// An LS replica: demand follows its curve forever.
    Ls {
        /// CPU curve.
        curve: Curve,
        /// Memory at the mean load, bytes.
        memory: f64,
        /// Memory's daily swing.
        memory_amplitude: f64,
    },
    /// A BE pod: a fixed demand until its work is done.
    Be {
        /// CPU demand, milli.
        demand: f64,
        /// Work left, milli-core-seconds.
        left: f64,
        /// Memory, bytes.
        memory: f64,
    },
}

/// How a pod left its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Its work is done.
    Completed,
    /// The kernel's OOM killer took it.
    OomKilled,
}

/// A pod running on a node.
#[derive(Debug, Clone)]
pub struct NodePod {
    /// The engine's pod id.
    pub id: u32,
    /// The bound pod as the components read it (boxed: the node model's
    /// per-step loops touch every pod's other fields, and a view inline
    /// would triple the memory they walk).
    pub view: Box<PodView>,
    /// Its CPU request (its `cpu.shares` weight), milli.
    pub cpu_request: f64,
    /// What it does.
    pub work: Work,
    /// CPU it got in the last step, milli.
    pub cpu: f64,
    /// Memory it used in the last step, bytes.
    pub memory: f64,
    /// CPU × seconds since the last report (milli-s).
    pub window_cpu: f64,
    /// Memory × seconds since the last report.
    pub window_memory: f64,
    /// Seconds it has been in the current window.
    pub window_time: f64,
}

impl NodePod {
    /// A pod that has not run yet (no usage, an empty report window).
    pub fn new(id: u32, view: Box<PodView>, cpu_request: f64, work: Work) -> NodePod {
        NodePod {
            id,
            view,
            cpu_request,
            work,
            cpu: 0.0,
            memory: 0.0,
            window_cpu: 0.0,
            window_memory: 0.0,
            window_time: 0.0,
        }
    }

    /// Whether this is a BE pod.
    pub fn is_be(&self) -> bool {
        matches!(self.work, Work::Be { .. })
    }
}

/// A node's totals over one step (milli-cores, bytes).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NodeStep {
    /// System CPU.
    pub system: f64,
    /// CPU LS pods got.
    pub ls: f64,
    /// CPU LS pods wanted.
    pub ls_demand: f64,
    /// CPU BE pods got.
    pub be: f64,
    /// Memory used.
    pub memory: f64,
    /// Σ CPU requests of running BE pods.
    pub be_requested: f64,
    /// Running BE pods.
    pub be_running: u64,
}

/// One simulated node.
#[derive(Debug)]
pub struct SimNode {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Capacity: CPU milli, memory bytes.
    pub capacity: CpuMem,
    /// Allocatable (without co-location resources).
    pub allocatable: CpuMem,
    /// CPU topology: cpu → (socket, core).
    pub cores: BTreeMap<u32, (u32, u32)>,
    /// The node as the components read it.
    pub view: NodeView,
    /// Running pods.
    pub pods: Vec<NodePod>,
    /// The agent (co-location policies only); its pod list is kept in the
    /// same order as `pods`.
    pub agent: Option<AgentSide>,
    /// The BE group's CPU cap (suppression), milli.
    pub be_cap: Option<f64>,
    /// Co-location resources in the node's status, as the manager wrote
    /// them.
    pub extended: ExtendedResources,
    /// The spec of the node's NodeMetric, as the manager wrote it (`None`:
    /// no manager created one, as under a baseline policy). The agent
    /// reports by it.
    pub metric_spec: Option<Arc<NodeMetricSpec>>,
    /// The spec of the node's NodeSLO, as the manager wrote it (`None`: no
    /// manager created one). The agent's copy is `AgentSide::slo`.
    pub slo: Option<Arc<NodeSLOSpec>>,
    /// The manager's side of the node (co-location policies only).
    pub manager: Option<crate::manager::NodeManager>,
    /// System CPU, milli.
    pub system_cpu: f64,
    /// System memory, bytes.
    pub system_memory: f64,
    /// Node CPU × seconds since the last report.
    pub window_cpu: f64,
    /// Node memory × seconds since the last report.
    pub window_memory: f64,
    /// Seconds since the last report.
    pub window_time: f64,
    /// The last step.
    pub last: NodeStep,
    /// Pods that left in the last step.
    pub exits: Vec<(u32, Exit)>,
    /// Utilization × seconds per heat-map bucket.
    pub heat: Vec<f32>,
    /// LS latency proxy per pod-step.
    pub latency: Histogram,
    /// LS CPU-seconds wanted but not got (cumulative, milli-s).
    pub starved: f64,
    /// Usage per step for the NodeMetric's aggregated windows, when the
    /// policy reads them.
    pub usage_history: Option<crate::usage_history::UsageHistory>,
    /// The node's last usage reports, to fill the next one into.
    pub reports: crate::report_recycler::ReportRecycler,
    ls: Class,
    be: Class,
    scratch: Scratch,
}

/// Constants of a step.
#[derive(Debug, Clone, Copy)]
pub struct StepInputs {
    /// End of the step, seconds.
    pub t: f64,
    /// Step length, seconds.
    pub dt: f64,
    /// CPU isolation.
    pub isolation: Isolation,
    /// Latency proxy's interference factor.
    pub interference: f64,
    /// Heat-map bucket width, seconds.
    pub bucket: f64,
}

impl SimNode {
    /// A node without pods, without a manager or an agent.
    pub fn new(
        name: String,
        labels: BTreeMap<String, String>,
        capacity: CpuMem,
        allocatable: CpuMem,
        cores: BTreeMap<u32, (u32, u32)>,
        view: NodeView,
        system: (f64, f64),
    ) -> SimNode {
        SimNode {
            name,
            labels,
            capacity,
            allocatable,
            cores,
            view,
            pods: Vec::new(),
            agent: None,
            be_cap: None,
            extended: ExtendedResources::NONE,
            metric_spec: None,
            slo: None,
            manager: None,
            system_cpu: system.0,
            system_memory: system.1,
            window_cpu: 0.0,
            window_memory: 0.0,
            window_time: 0.0,
            last: NodeStep::default(),
            exits: Vec::new(),
            heat: Vec::new(),
            latency: Histogram::default(),
            starved: 0.0,
            usage_history: None,
            reports: Default::default(),
            ls: Class::default(),
            be: Class::default(),
            scratch: Scratch::default(),
        }
    }

    /// Starts a pod the scheduler bound; on a node with an agent, `object`
    /// (the bound Pod) is read into the agent's state at the node's next
    /// step ([`crate::agent::read_started`]).
    pub fn start(&mut self, pod: NodePod, object: Option<Arc<Pod>>) {
        if let (Some(agent), Some(object)) = (self.agent.as_mut(), object) {
            agent.started.push(object);
        }
        self.pods.push(pod);
    }

    /// Removes a pod (and its agent state); returns it.
    pub fn remove(&mut self, id: u32) -> Option<NodePod> {
        let i = self.pods.iter().position(|p| p.id == id)?;
        if let Some(agent) = self.agent.as_mut() {
            agent.state.pods.swap_remove(i);
        }
        Some(self.pods.swap_remove(i))
    }

    /// Advances the node by one step.
    pub fn step(&mut self, s: &StepInputs) -> NodeStep {
        self.exits.clear();
        self.ls.clear();
        self.be.clear();
        for p in &self.pods {
            match &p.work {
                Work::Ls { curve, .. } => self.ls.push(curve.cpu(s.t), p.cpu_request),
                Work::Be { demand, left, .. } => {
                    self.be.push(demand.min(left / s.dt), p.cpu_request)
                }
            }
        }
        let cpu = NodeCpu {
            capacity: self.capacity.cpu as f64,
            system: self.system_cpu,
            be_cap: self.be_cap,
            isolation: s.isolation,
        };
        let got = share(&cpu, &mut self.ls, &mut self.be, &mut self.scratch);
        let interference = 1.0 + s.interference * got.be / cpu.capacity;
        let mut out =
            NodeStep { system: got.system, ls: got.ls, be: got.be, ..NodeStep::default() };
        let mut memory = self.system_memory;
        let (mut li, mut bi) = (0, 0);
        for p in &mut self.pods {
            match &mut p.work {
                Work::Ls { curve, memory: m, memory_amplitude } => {
                    let (d, a) = (self.ls.demand[li], self.ls.alloc[li]);
                    li += 1;
                    p.cpu = a;
                    out.ls_demand += d;
                    self.starved += (d - a).max(0.0) * s.dt;
                    if d > 0.0 {
                        self.latency.add(d / a.max(1e-9) * interference);
                    }
                    p.memory = *m * diurnal(s.t, curve.peak_second, *memory_amplitude);
                }
                Work::Be { left, memory: m, .. } => {
                    let a = self.be.alloc[bi];
                    bi += 1;
                    p.cpu = a;
                    *left -= a * s.dt;
                    if *left <= 1e-6 {
                        self.exits.push((p.id, Exit::Completed));
                    }
                    p.memory = *m;
                    out.be_requested += p.cpu_request;
                    out.be_running += 1;
                }
            }
            memory += p.memory;
            // An OOM kill below ends the pod's report window with it, so
            // this step may count before the kill is known.
            p.window_cpu += p.cpu * s.dt;
            p.window_memory += p.memory * s.dt;
            p.window_time += s.dt;
        }
        memory = self.oom_kill(memory);
        out.memory = memory;
        let used = got.system + got.ls + got.be;
        self.window_cpu += used * s.dt;
        self.window_memory += memory * s.dt;
        self.window_time += s.dt;
        if let Some(history) = &mut self.usage_history {
            history.push(used / 1000.0, memory);
        }
        let bucket = ((s.t - s.dt * 0.5) / s.bucket).floor().max(0.0) as usize;
        if self.heat.len() <= bucket {
            self.heat.resize(bucket + 1, 0.0);
        }
        self.heat[bucket] += (used / cpu.capacity * s.dt) as f32;
        self.last = out;
        out
    }

    /// Memory over capacity: the kernel kills BE pods, largest first (BE
    /// pods have the highest `oom_score_adj`), until the rest fits. Returns
    /// the memory left in use.
    fn oom_kill(&mut self, mut memory: f64) -> f64 {
        let capacity = self.capacity.memory as f64;
        while memory > capacity {
            let victim = self
                .pods
                .iter()
                .filter(|p| {
                    p.is_be()
                        && !self.exits.iter().any(|(id, e)| *id == p.id && *e == Exit::OomKilled)
                })
                .max_by(|a, b| a.memory.total_cmp(&b.memory).then(b.id.cmp(&a.id)));
            let Some(victim) = victim else { break };
            memory -= victim.memory;
            let id = victim.id;
            self.exits.retain(|(i, _)| *i != id);
            self.exits.push((id, Exit::OomKilled));
        }
        memory
    }

    /// Resets the report window; returns (node CPU cores, memory bytes)
    /// averaged over it.
    pub fn take_window(&mut self) -> (f64, f64) {
        let t = self.window_time.max(1e-9);
        let avg = (self.window_cpu / t / 1000.0, self.window_memory / t);
        self.window_cpu = 0.0;
        self.window_memory = 0.0;
        self.window_time = 0.0;
        avg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpu: i64, memory: i64) -> SimNode {
        SimNode::new(
            "n".into(),
            BTreeMap::new(),
            CpuMem::new(cpu, memory),
            CpuMem::new(cpu, memory),
            BTreeMap::new(),
            NodeView::new("n"),
            (0.0, 0.0),
        )
    }

    fn be(id: u32, demand: f64, left: f64, memory: f64) -> NodePod {
        NodePod {
            id,
            view: Box::new(PodView::new("b", &id.to_string())),
            cpu_request: demand,
            work: Work::Be { demand, left, memory },
            cpu: 0.0,
            memory: 0.0,
            window_cpu: 0.0,
            window_memory: 0.0,
            window_time: 0.0,
        }
    }

    fn inputs() -> StepInputs {
        StepInputs {
            t: 10.0,
            dt: 10.0,
            isolation: Isolation::Idle,
            interference: 0.0,
            bucket: 900.0,
        }
    }

    #[test]
    fn be_work_completes_and_oom_kills_largest() {
        let mut n = node(4000, 100);
        n.pods.push(be(1, 1000.0, 5000.0, 30.0));
        n.pods.push(be(2, 1000.0, 1e9, 60.0));
        n.pods.push(be(3, 1000.0, 1e9, 20.0));
        let s = n.step(&inputs());
        // 1 finishes (5000 milli-s of work at 500 milli for 10 s), 110 > 100 kills 2.
        assert_eq!(n.exits, vec![(1, Exit::Completed), (2, Exit::OomKilled)]);
        assert_eq!(s.memory, 50.0);
        assert_eq!(s.be, 2500.0);
    }

    #[test]
    fn window_averages() {
        let mut n = node(4000, 1000);
        n.pods.push(be(1, 1000.0, 1e9, 10.0));
        n.step(&inputs());
        n.step(&StepInputs { t: 20.0, ..inputs() });
        assert_eq!(n.take_window(), (1.0, 10.0));
        assert_eq!(n.window_time, 0.0);
    }
}
