//! Scenarios: the cluster, the workload's shape, the model's constants and
//! the policies to compare, as one YAML file (`examples/scenarios/`).
//!
//! Every field has a default, so a scenario states only what it changes; an
//! unknown field is an error (a typo must not silently fall back to a
//! default). Errors name the file and the field's path.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::policy::PolicySpec;

/// The scenario `kolo sim` runs without `--scenario`.
pub const BUILTIN: &str = include_str!("../../../examples/scenarios/builtin.yaml");
/// The name the built-in scenario is reported under in errors.
pub const BUILTIN_NAME: &str = "<built-in scenario>";

/// A whole simulation setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// A short name for reports.
    #[serde(default)]
    pub name: String,
    /// What the scenario is about.
    #[serde(default)]
    pub description: String,
    /// Seed of every random draw (the workload and the usage noise).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time, hours.
    #[serde(default = "default_hours")]
    pub duration_hours: f64,
    /// Length of one step, seconds.
    #[serde(default = "default_step")]
    pub step_seconds: u64,
    /// The nodes.
    pub cluster: Cluster,
    /// Latency-sensitive services.
    #[serde(default)]
    pub ls: LsWorkload,
    /// Batch jobs.
    #[serde(default)]
    pub batch: BatchWorkload,
    /// Constants of the node model and the components' cadences.
    #[serde(default)]
    pub model: Model,
    /// Policies defined (or redefined) by the scenario, by name; `baseline`
    /// and `colocation` exist without being listed.
    #[serde(default)]
    pub policies: BTreeMap<String, PolicySpec>,
}

fn default_seed() -> u64 {
    1
}
fn default_hours() -> f64 {
    24.0
}
fn default_step() -> u64 {
    10
}

/// The nodes: groups of identical nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cluster {
    /// Node groups, in order (node names are `<group>-<index>`).
    pub node_groups: Vec<NodeGroup>,
}

/// Identical nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeGroup {
    /// Group name, the prefix of its nodes' names.
    pub name: String,
    /// How many nodes.
    pub count: usize,
    /// Logical CPUs per node.
    pub cpu: u32,
    /// Memory per node, GiB.
    pub memory_gib: f64,
    /// CPU sockets (the CPUs are split evenly; used by the cpuset policy of
    /// suppression to place BE CPUs).
    #[serde(default = "default_sockets")]
    pub sockets: u32,
    /// Hyper-threads per physical core.
    #[serde(default = "default_threads")]
    pub threads_per_core: u32,
    /// Kubelet-reserved CPUs (capacity − allocatable).
    #[serde(default = "default_reserved_cpu")]
    pub reserved_cpu: f64,
    /// Kubelet-reserved memory, GiB.
    #[serde(default = "default_reserved_memory")]
    pub reserved_memory_gib: f64,
    /// Node labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

fn default_sockets() -> u32 {
    2
}
fn default_threads() -> u32 {
    2
}
fn default_reserved_cpu() -> f64 {
    1.0
}
fn default_reserved_memory() -> f64 {
    4.0
}

/// A discrete choice with a weight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Weighted {
    /// The value.
    pub value: f64,
    /// Its relative weight.
    pub weight: f64,
}

/// Long-running latency-sensitive services (Alibaba 2018's online
/// containers): requests sized for the peak, usage well below them,
/// following a daily curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LsWorkload {
    /// Sum of LS CPU requests as a fraction of cluster allocatable CPU.
    pub requested_fraction: f64,
    /// Replicas per service: uniform in `[1, maxReplicas]`.
    pub max_replicas: u32,
    /// CPU request per pod, cores, by weight.
    pub cpu_cores: Vec<Weighted>,
    /// Memory request per requested core, GiB.
    pub memory_gib_per_core: f64,
    /// Mean CPU usage as a fraction of the request, over the day.
    pub mean_usage_of_request: f64,
    /// Spread of a service's mean around `meanUsageOfRequest` (log-normal
    /// sigma).
    pub usage_spread: f64,
    /// Daily swing: usage = mean × (1 + amplitude × sin(...)).
    pub diurnal_amplitude: f64,
    /// Hour of day (UTC) of the peak.
    pub peak_hour: f64,
    /// Services' peaks are spread uniformly ± this many hours.
    pub peak_jitter_hours: f64,
    /// Relative noise of each pod's usage (standard deviation, smoothed over
    /// `noiseMinutes`).
    pub noise: f64,
    /// Time scale of the noise, minutes.
    pub noise_minutes: f64,
    /// Memory usage as a fraction of the request at the mean load.
    pub memory_usage_of_request: f64,
    /// Memory follows the CPU curve with this relative amplitude.
    pub memory_diurnal_amplitude: f64,
    /// Fraction of the generated services that run hot: their mean CPU use
    /// is `hotUsageOfRequest` of their request rather than drawn (the
    /// services that make hot spots where their replicas meet; chosen by a
    /// hash of the seed and the service, so the other draws stay as they
    /// were). Default 0.
    pub hot_services: f64,
    /// Mean CPU use of a hot service, as a fraction of its request (the
    /// daily swing comes on top).
    pub hot_usage_of_request: f64,
    /// Fixed LS pods, e.g. a cluster snapshot's (`kolo sim --snapshot`).
    /// When non-empty they are the whole LS workload: no services are drawn
    /// and `requestedFraction`, `maxReplicas`, `cpuCores` and
    /// `memoryGibPerCore` are unused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<FixedLsPod>,
}

/// One LS pod given as it is rather than drawn. Its usage follows the same
/// daily curve and noise as a generated pod's; only its mean (and memory)
/// may be pinned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FixedLsPod {
    /// A name for errors and reports (`namespace/name` for a snapshot's pod).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// CPU request, cores.
    pub cpu: f64,
    /// Memory request, GiB.
    pub memory_gib: f64,
    /// Mean CPU usage, cores (e.g. measured). Takes precedence over
    /// `meanUsageOfRequest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_cpu_cores: Option<f64>,
    /// Mean CPU usage as a fraction of the request. Without it and without
    /// `meanCpuCores` the workload's `meanUsageOfRequest` × a log-normal
    /// factor (`usageSpread`) is used, as for a generated service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_usage_of_request: Option<f64>,
    /// Memory usage at the mean load, GiB (e.g. measured); default: the
    /// workload's `memoryUsageOfRequest` × the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_usage_gib: Option<f64>,
}

impl Default for LsWorkload {
    fn default() -> Self {
        let w = |value, weight| Weighted { value, weight };
        LsWorkload {
            requested_fraction: 0.75,
            max_replicas: 8,
            cpu_cores: vec![w(1.0, 2.0), w(2.0, 4.0), w(4.0, 3.0), w(8.0, 1.0)],
            memory_gib_per_core: 4.0,
            mean_usage_of_request: 0.28,
            usage_spread: 0.3,
            diurnal_amplitude: 0.45,
            peak_hour: 14.0,
            peak_jitter_hours: 2.0,
            noise: 0.08,
            noise_minutes: 5.0,
            memory_usage_of_request: 0.45,
            memory_diurnal_amplitude: 0.1,
            hot_services: 0.0,
            hot_usage_of_request: 0.9,
            pods: Vec::new(),
        }
    }
}

/// Batch jobs (Alibaba 2018's batch tasks): Poisson arrivals, heavy-tailed
/// numbers of instances and durations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct BatchWorkload {
    /// Offered load: batch CPU demand (at full speed) as a fraction of
    /// cluster CPU capacity. The job arrival rate is derived from it.
    pub offered_load: f64,
    /// Pods (instances) per job: Pareto with this shape, at least 1.
    pub tasks_alpha: f64,
    /// Most pods per job.
    pub max_tasks: u32,
    /// CPU request per pod, cores, by weight.
    pub cpu_cores: Vec<Weighted>,
    /// Memory request per requested core, GiB.
    pub memory_gib_per_core: f64,
    /// Duration at full speed: log-normal with this median, minutes.
    pub duration_median_minutes: f64,
    /// Log-normal sigma of the duration.
    pub duration_sigma: f64,
    /// Longest duration, minutes.
    pub max_duration_minutes: f64,
    /// CPU demand as a fraction of the request: uniform in `[min, max]`.
    pub usage_of_request_min: f64,
    /// Upper bound of that fraction.
    pub usage_of_request_max: f64,
    /// Memory usage as a fraction of the request.
    pub memory_usage_of_request: f64,
    /// At most this many pods per node (rounded up, at least 1) wait in the
    /// scheduler; the rest wait in the job controller's queue (as batch
    /// frameworks limit their pending pods). Retrying unschedulable pods is
    /// what a run spends most of its time on.
    pub pending_pods_per_node: f64,
    /// Re-submit evicted or OOM-killed pods (from the start).
    pub retry_evicted: bool,
    /// Tenants the jobs belong to, each with an ElasticQuota of its own
    /// (none: no quotas, every job is the cluster's).
    pub tenants: Vec<Tenant>,
    /// Schedule each job's pods as a gang: all of them or none (a job's
    /// pods reach the scheduler together).
    pub gangs: bool,
}

/// A tenant: a share of the batch jobs and an ElasticQuota (min, max and
/// shared weight, in cores of the batch resource pods request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tenant {
    /// The quota's name (a DNS label).
    pub name: String,
    /// Relative weight of the jobs it submits.
    #[serde(default = "default_job_weight")]
    pub job_weight: f64,
    /// Guaranteed cores (`min`).
    #[serde(default)]
    pub min_cores: f64,
    /// Most cores (`max`).
    pub max_cores: f64,
    /// Weight when sharing what is left above the mins (`shared-weight`;
    /// the reference's default, `max`, when absent).
    #[serde(default)]
    pub shared_weight_cores: Option<f64>,
}

fn default_job_weight() -> f64 {
    1.0
}

impl Default for BatchWorkload {
    fn default() -> Self {
        let w = |value, weight| Weighted { value, weight };
        BatchWorkload {
            offered_load: 0.5,
            tasks_alpha: 1.5,
            max_tasks: 32,
            cpu_cores: vec![w(1.0, 3.0), w(2.0, 4.0), w(4.0, 2.0), w(8.0, 1.0)],
            memory_gib_per_core: 2.0,
            duration_median_minutes: 20.0,
            duration_sigma: 1.0,
            max_duration_minutes: 360.0,
            usage_of_request_min: 0.85,
            usage_of_request_max: 1.0,
            memory_usage_of_request: 0.8,
            pending_pods_per_node: 0.05,
            retry_evicted: true,
            tenants: Vec::new(),
            gangs: false,
        }
    }
}

/// Constants of the node model and the components' cadences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Model {
    /// CPU the system (kubelet, runtime, daemons) uses per node, cores.
    pub system_cpu: f64,
    /// Memory the system uses per node, GiB.
    pub system_memory_gib: f64,
    /// Latency proxy: an LS pod's slowdown grows by this factor × the
    /// node's BE CPU share (cache / SMT interference that CPU priority does
    /// not remove).
    pub interference: f64,
    /// Seconds between two NodeMetric reports of a node (the agent's
    /// `metricReportIntervalSeconds`).
    pub report_interval_seconds: u64,
    /// Seconds between two rounds of the agent's QoS strategies.
    pub agent_interval_seconds: u64,
    /// Width of a heat-map cell, minutes.
    pub heatmap_bucket_minutes: u64,
    /// A node is hot in a step when its CPU use (system + LS + BE) is over
    /// this percent of its allocatable CPU (hot-node time, measured in
    /// every run; see [`crate::descheduler`]).
    pub hot_cpu_percent: f64,
    /// ... or its memory use over this percent of its allocatable memory.
    pub hot_memory_percent: f64,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            system_cpu: 0.5,
            system_memory_gib: 2.0,
            interference: 0.1,
            report_interval_seconds: 60,
            agent_interval_seconds: 10,
            heatmap_bucket_minutes: 15,
            hot_cpu_percent: 80.0,
            hot_memory_percent: 90.0,
        }
    }
}

/// A scenario that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Not YAML.
    #[error("{source_name}: {message}")]
    Syntax {
        /// The file.
        source_name: String,
        /// What the parser said.
        message: String,
    },
    /// A field has the wrong type or is unknown.
    #[error("{source_name}: {field}: {message}")]
    Field {
        /// The file.
        source_name: String,
        /// The field's path.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl Scenario {
    /// Parses a scenario; `source_name` (the file) is named in errors.
    pub fn from_yaml(text: &str, source_name: &str) -> Result<Scenario, ScenarioError> {
        let value: serde_json::Value =
            serde_saphyr::from_str(text).map_err(|e| ScenarioError::Syntax {
                source_name: source_name.to_string(),
                message: kolo_core::yaml_error::describe(&e),
            })?;
        let scenario: Scenario =
            serde_path_to_error::deserialize(value).map_err(|e| ScenarioError::Field {
                source_name: source_name.to_string(),
                field: e.path().to_string(),
                message: e.into_inner().to_string(),
            })?;
        scenario.validate().map_err(|(field, message)| ScenarioError::Field {
            source_name: source_name.to_string(),
            field: field.to_string(),
            message,
        })?;
        Ok(scenario)
    }

    /// The built-in scenario.
    pub fn builtin() -> Scenario {
        // The file is part of the binary and covered by a test.
        Scenario::from_yaml(BUILTIN, BUILTIN_NAME).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Checks the ranges the model needs; returns the field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let positive = |field: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 { Ok(()) } else { Err((field, format!("{v} is not > 0"))) }
        };
        let fraction = |field: &'static str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err((field, format!("{v} is not within [0, 1]")))
            }
        };
        positive("durationHours", self.duration_hours)?;
        if self.step_seconds == 0 {
            return Err(("stepSeconds", "must be > 0".into()));
        }
        if self.cluster.node_groups.iter().all(|g| g.count == 0) {
            return Err(("cluster.nodeGroups", "the cluster has no node".into()));
        }
        for g in &self.cluster.node_groups {
            if g.cpu == 0 || g.sockets == 0 || g.threads_per_core == 0 {
                return Err((
                    "cluster.nodeGroups.cpu",
                    format!("group {}: cpu, sockets and threadsPerCore must be > 0", g.name),
                ));
            }
            positive("cluster.nodeGroups.memoryGib", g.memory_gib)?;
        }
        fraction("ls.requestedFraction", self.ls.requested_fraction)?;
        positive("ls.meanUsageOfRequest", self.ls.mean_usage_of_request)?;
        fraction("ls.diurnalAmplitude", self.ls.diurnal_amplitude)?;
        fraction("ls.hotServices", self.ls.hot_services)?;
        if !(self.ls.hot_usage_of_request.is_finite() && self.ls.hot_usage_of_request >= 0.0) {
            return Err((
                "ls.hotUsageOfRequest",
                format!("{} is not >= 0", self.ls.hot_usage_of_request),
            ));
        }
        positive("ls.noiseMinutes", self.ls.noise_minutes)?;
        if self.ls.max_replicas == 0 {
            return Err(("ls.maxReplicas", "must be > 0".into()));
        }
        check_choices("ls.cpuCores", &self.ls.cpu_cores)?;
        for (i, p) in self.ls.pods.iter().enumerate() {
            check_fixed_pod(i, p)?;
        }
        check_choices("batch.cpuCores", &self.batch.cpu_cores)?;
        if !(self.batch.offered_load >= 0.0 && self.batch.offered_load.is_finite()) {
            return Err(("batch.offeredLoad", format!("{} is not >= 0", self.batch.offered_load)));
        }
        positive("batch.tasksAlpha", self.batch.tasks_alpha)?;
        positive("batch.durationMedianMinutes", self.batch.duration_median_minutes)?;
        positive("batch.maxDurationMinutes", self.batch.max_duration_minutes)?;
        positive("batch.usageOfRequestMin", self.batch.usage_of_request_min)?;
        if self.batch.usage_of_request_max < self.batch.usage_of_request_min {
            return Err(("batch.usageOfRequestMax", "is below usageOfRequestMin".into()));
        }
        if !(self.batch.pending_pods_per_node > 0.0 && self.batch.pending_pods_per_node.is_finite())
        {
            return Err(("batch.pendingPodsPerNode", "must be > 0".into()));
        }
        if self.batch.max_tasks == 0 {
            return Err(("batch.maxTasks", "must be > 0".into()));
        }
        check_tenants(&self.batch.tenants)?;
        if self.model.report_interval_seconds == 0 || self.model.agent_interval_seconds == 0 {
            return Err(("model.reportIntervalSeconds", "intervals must be > 0".into()));
        }
        for (field, v) in [
            ("model.hotCpuPercent", self.model.hot_cpu_percent),
            ("model.hotMemoryPercent", self.model.hot_memory_percent),
        ] {
            if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
                return Err((field, format!("{v} is not within [0, 100]")));
            }
        }
        if self.model.heatmap_bucket_minutes == 0 {
            return Err(("model.heatmapBucketMinutes", "must be > 0".into()));
        }
        crate::bounds::check(self)
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.cluster.node_groups.iter().map(|g| g.count).sum()
    }

    /// Most batch pods waiting in the scheduler at a time.
    pub fn max_pending_pods(&self) -> usize {
        ((self.batch.pending_pods_per_node * self.node_count() as f64).ceil() as usize).max(1)
    }

    /// Number of steps.
    pub fn steps(&self) -> u64 {
        ((self.duration_hours * 3600.0) / self.step_seconds as f64).round().max(1.0) as u64
    }

    /// Scales the cluster to `nodes` nodes, keeping the groups' proportions
    /// (the first group takes the rounding).
    pub fn scale_nodes(&mut self, nodes: usize) {
        let total = self.node_count().max(1);
        let mut assigned = 0;
        for g in self.cluster.node_groups.iter_mut().skip(1) {
            g.count = g.count * nodes / total;
            assigned += g.count;
        }
        if let Some(first) = self.cluster.node_groups.first_mut() {
            first.count = nodes.saturating_sub(assigned);
        }
    }
}

/// Changes to a scenario's size, length and seed (`kolo sim --nodes
/// --hours --step --seed`), applied after it is read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overrides {
    /// The number of nodes; the node groups keep their proportions.
    pub nodes: Option<usize>,
    /// The simulated duration, hours.
    pub hours: Option<f64>,
    /// The step length, seconds.
    pub step_seconds: Option<u64>,
    /// The seed of the workload and the usage noise.
    pub seed: Option<u64>,
}

impl Scenario {
    /// Applies `overrides` and checks the result as a scenario file is
    /// checked; on error (the field and why) the scenario is left unchecked
    /// and must not be run.
    pub fn apply(&mut self, overrides: &Overrides) -> Result<(), (&'static str, String)> {
        if let Some(n) = overrides.nodes {
            if n == 0 {
                return Err(("nodes", "0 is not > 0".into()));
            }
            self.scale_nodes(n);
        }
        if let Some(h) = overrides.hours {
            self.duration_hours = h;
        }
        if let Some(s) = overrides.step_seconds {
            self.step_seconds = s;
        }
        if let Some(seed) = overrides.seed {
            self.seed = seed;
        }
        self.validate()
    }
}

/// A fixed LS pod's amounts: a request > 0, the rest >= 0 and finite.
fn check_fixed_pod(index: usize, p: &FixedLsPod) -> Result<(), (&'static str, String)> {
    let name = if p.name.is_empty() { String::new() } else { format!(" ({})", p.name) };
    let bad = |field: &'static str, v: f64, want: &str| {
        Err((field, format!("pod {index}{name}: {v} is not {want}")))
    };
    if !(p.cpu.is_finite() && p.cpu > 0.0) {
        return bad("ls.pods.cpu", p.cpu, "> 0");
    }
    let optional = [
        ("ls.pods.memoryGib", Some(p.memory_gib)),
        ("ls.pods.meanCpuCores", p.mean_cpu_cores),
        ("ls.pods.meanUsageOfRequest", p.mean_usage_of_request),
        ("ls.pods.memoryUsageGib", p.memory_usage_gib),
    ];
    for (field, value) in optional {
        if let Some(v) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return bad(field, v, ">= 0");
        }
    }
    Ok(())
}

/// Tenants' names are distinct DNS labels, their numbers finite, min <=
/// max, and some tenant submits jobs.
fn check_tenants(tenants: &[Tenant]) -> Result<(), (&'static str, String)> {
    if tenants.is_empty() {
        return Ok(());
    }
    let mut names = std::collections::BTreeSet::new();
    for t in tenants {
        let label = !t.name.is_empty()
            && t.name.len() <= 63
            && t.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !t.name.starts_with('-')
            && !t.name.ends_with('-');
        if !label {
            return Err(("batch.tenants.name", format!("{:?} is not a DNS label", t.name)));
        }
        if !names.insert(t.name.as_str()) {
            return Err(("batch.tenants.name", format!("{:?} is listed twice", t.name)));
        }
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        if !ok(t.job_weight) || !ok(t.min_cores) || !ok(t.max_cores) {
            return Err((
                "batch.tenants",
                format!("tenant {}: jobWeight, minCores and maxCores must be >= 0", t.name),
            ));
        }
        if t.min_cores > t.max_cores {
            return Err(("batch.tenants.minCores", format!("tenant {}: above maxCores", t.name)));
        }
        if t.shared_weight_cores.is_some_and(|w| !ok(w)) {
            return Err((
                "batch.tenants.sharedWeightCores",
                format!("tenant {}: not >= 0", t.name),
            ));
        }
    }
    if tenants.iter().all(|t| t.job_weight == 0.0) {
        return Err(("batch.tenants.jobWeight", "no tenant submits jobs (all weights 0)".into()));
    }
    Ok(())
}

fn check_choices(field: &'static str, choices: &[Weighted]) -> Result<(), (&'static str, String)> {
    if choices.is_empty() {
        return Err((field, "needs at least one choice".into()));
    }
    if choices.iter().any(|c| !(c.value > 0.0 && c.weight >= 0.0))
        || choices.iter().all(|c| c.weight <= 0.0)
    {
        return Err((field, "values must be > 0, weights >= 0 and not all 0".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses() {
        let s = Scenario::builtin();
        assert!(s.node_count() >= 200);
        assert!((s.duration_hours - 24.0).abs() < 1e-9);
    }

    #[test]
    fn errors_name_file_and_field() {
        let cases = [
            (
                "cluster: {nodeGroups: [{name: a, count: 1, cpu: 8, memoryGib: 32}]}\nls: {meanUsageOfRequest: x}",
                "ls.meanUsageOfRequest",
            ),
            (
                "cluster: {nodeGroups: [{name: a, count: 1, cpu: 8, memoryGib: 32, colour: red}]}",
                "cluster.nodeGroups[0]",
            ),
            (
                "cluster: {nodeGroups: [{name: a, count: 1, cpu: 8, memoryGib: 32}]}\nls: {requestedFraction: 2}",
                "ls.requestedFraction",
            ),
            ("cluster: {nodeGroups: []}", "cluster.nodeGroups"),
            (
                "cluster: {nodeGroups: [{name: a, count: 1, cpu: 8, memoryGib: 32}]}\nls: {pods: [{cpu: 0, memoryGib: 1}]}",
                "ls.pods.cpu",
            ),
            (
                "cluster: {nodeGroups: [{name: a, count: 1, cpu: 8, memoryGib: 32}]}\nls: {pods: [{name: x, cpu: 1, memoryGib: 1, meanCpuCores: -1}]}",
                "ls.pods.meanCpuCores",
            ),
            (
                "cluster: {nodeGroups: [{name: a, count: 1, cpu: 8, memoryGib: 32}]}\nls: {pods: [{cpu: 1, memoryGib: 1, cores: 2}]}",
                "ls.pods[0]",
            ),
        ];
        for (text, field) in cases {
            let e = Scenario::from_yaml(text, "s.yaml").unwrap_err().to_string();
            assert!(e.starts_with("s.yaml: "), "{e}");
            assert!(e.contains(field), "{field} in {e}");
        }
    }

    #[test]
    fn overrides_apply_and_are_checked() {
        let mut s = Scenario::builtin();
        let o =
            Overrides { nodes: Some(10), hours: Some(2.5), step_seconds: Some(30), seed: Some(7) };
        s.apply(&o).unwrap();
        assert_eq!((s.node_count(), s.duration_hours, s.step_seconds, s.seed), (10, 2.5, 30, 7));
        let untouched = Scenario::builtin();
        let mut same = Scenario::builtin();
        same.apply(&Overrides::default()).unwrap();
        assert_eq!(
            (same.node_count(), same.duration_hours, same.seed),
            (untouched.node_count(), untouched.duration_hours, untouched.seed)
        );
        let refused = [
            (Overrides { nodes: Some(0), ..Overrides::default() }, "nodes"),
            (Overrides { hours: Some(-1.0), ..Overrides::default() }, "durationHours"),
            (Overrides { hours: Some(f64::NAN), ..Overrides::default() }, "durationHours"),
            (Overrides { step_seconds: Some(0), ..Overrides::default() }, "stepSeconds"),
        ];
        for (o, field) in refused {
            let err = Scenario::builtin().apply(&o).unwrap_err();
            assert_eq!(err.0, field, "{o:?}: {err:?}");
        }
    }

    #[test]
    fn scaling_keeps_total() {
        let mut s = Scenario::builtin();
        for n in [1, 10, 333, 1000] {
            s.scale_nodes(n);
            assert_eq!(s.node_count(), n);
        }
    }
}
