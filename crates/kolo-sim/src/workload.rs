//! The workload generator: LS services and a batch job trace, shaped like
//! Alibaba's cluster-trace-v2018 (see `docs/sim.md` for the shapes and
//! their parameters), seeded and deterministic.
//!
//! * LS services: requests sized for the peak, so that their sum is
//!   `requestedFraction` of the cluster's allocatable CPU; each service's
//!   mean usage is `meanUsageOfRequest` × a log-normal factor; usage follows
//!   a daily curve peaking around `peakHour`, with smooth noise
//!   ([`crate::usage`]).
//! * Batch: jobs arrive as a Poisson process; a job has a Pareto number of
//!   pods (instances) of one shape, each with a log-normal duration (heavy
//!   tailed, capped) and a CPU demand that is a fraction of its request. The
//!   arrival rate is derived so that the offered CPU load (demand × duration
//!   per second) is `offeredLoad` × the cluster's CPU capacity.
//!
//! The same workload is given to every policy of a run, so they are
//! compared on identical traces.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::scenario::{BatchWorkload, Scenario, Weighted};
use crate::usage::{Curve, mix};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Draws used to estimate the mean work of a job.
const CALIBRATION_DRAWS: usize = 8192;

/// One LS pod.
#[derive(Debug, Clone, PartialEq)]
pub struct LsPod {
    /// Its service.
    pub service: u32,
    /// CPU request, milli.
    pub cpu_request: i64,
    /// Memory request, bytes.
    pub memory_request: i64,
    /// CPU usage curve.
    pub curve: Curve,
    /// Memory usage at the mean load, bytes.
    pub memory_usage: f64,
    /// Relative swing of memory with the daily curve.
    pub memory_amplitude: f64,
}

/// One batch pod (an instance of a job's task).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchPod {
    /// Its job.
    pub job: u32,
    /// Arrival, seconds from the start.
    pub arrival: f64,
    /// CPU request, milli.
    pub cpu_request: i64,
    /// Memory request, bytes.
    pub memory_request: i64,
    /// CPU demand while running, milli.
    pub demand: f64,
    /// Work to do, milli-core-seconds (demand × duration at full speed).
    pub work: f64,
    /// Memory usage, bytes.
    pub memory_usage: f64,
}

/// A generated workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// LS pods, by service.
    pub ls: Vec<LsPod>,
    /// Batch pods, by arrival.
    pub batch: Vec<BatchPod>,
    /// Job arrival rate, per hour.
    pub jobs_per_hour: f64,
    /// Jobs generated.
    pub jobs: u32,
}

fn pick(rng: &mut StdRng, choices: &[Weighted]) -> f64 {
    let total: f64 = choices.iter().map(|c| c.weight.max(0.0)).sum();
    let mut x = rng.random::<f64>() * total;
    for c in choices {
        x -= c.weight.max(0.0);
        if x < 0.0 {
            return c.value;
        }
    }
    choices.last().map_or(1.0, |c| c.value)
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Pareto draw with minimum 1 and shape `alpha`.
fn pareto(rng: &mut StdRng, alpha: f64) -> f64 {
    let u: f64 = rng.random();
    (1.0 - u).max(f64::MIN_POSITIVE).powf(-1.0 / alpha)
}

/// One job's shape: pods, cores per pod, demand fraction, and a duration
/// sampler.
struct JobShape {
    tasks: u32,
    cores: f64,
    usage: f64,
}

fn job_shape(rng: &mut StdRng, b: &BatchWorkload) -> JobShape {
    let tasks = (pareto(rng, b.tasks_alpha).floor() as u32).clamp(1, b.max_tasks);
    let cores = pick(rng, &b.cpu_cores);
    let usage = b.usage_of_request_min
        + rng.random::<f64>() * (b.usage_of_request_max - b.usage_of_request_min);
    JobShape { tasks, cores, usage }
}

fn duration_seconds(rng: &mut StdRng, b: &BatchWorkload) -> f64 {
    let minutes = b.duration_median_minutes * (b.duration_sigma * normal(rng)).exp();
    minutes.min(b.max_duration_minutes) * 60.0
}

/// Mean work of a job, milli-core-seconds, estimated from the generator
/// itself (so the caps and the discrete shapes are accounted for).
fn mean_job_work(seed: u64, b: &BatchWorkload) -> f64 {
    let mut rng = StdRng::seed_from_u64(mix(seed ^ 0xCA11_B8A7E));
    let mut total = 0.0;
    for _ in 0..CALIBRATION_DRAWS {
        let shape = job_shape(&mut rng, b);
        for _ in 0..shape.tasks {
            total += shape.cores * 1000.0 * shape.usage * duration_seconds(&mut rng, b);
        }
    }
    total / CALIBRATION_DRAWS as f64
}

/// Cluster totals the generator sizes the workload against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterSize {
    /// Σ CPU capacity, milli.
    pub cpu_capacity: f64,
    /// Σ allocatable CPU, milli.
    pub cpu_allocatable: f64,
}

/// Generates the workload of `scenario` for a cluster of `size`.
pub fn generate(scenario: &Scenario, size: ClusterSize) -> Workload {
    let mut rng = StdRng::seed_from_u64(scenario.seed);
    let ls = generate_ls(scenario, size, &mut rng);
    let b = &scenario.batch;
    let horizon = scenario.duration_hours * 3600.0;
    let work = mean_job_work(scenario.seed, b);
    let rate = if work > 0.0 { b.offered_load * size.cpu_capacity / work } else { 0.0 };
    let mut batch = Vec::new();
    let mut t = 0.0;
    let mut jobs = 0u32;
    while rate > 0.0 && t < horizon {
        let u: f64 = rng.random();
        t += -(1.0 - u).max(f64::MIN_POSITIVE).ln() / rate;
        if t >= horizon {
            break;
        }
        let shape = job_shape(&mut rng, b);
        let cpu_request = (shape.cores * 1000.0).round() as i64;
        let memory_request = (shape.cores * b.memory_gib_per_core * GIB).round() as i64;
        for _ in 0..shape.tasks {
            let demand = cpu_request as f64 * shape.usage;
            batch.push(BatchPod {
                job: jobs,
                arrival: t,
                cpu_request,
                memory_request,
                demand,
                work: demand * duration_seconds(&mut rng, b),
                memory_usage: memory_request as f64 * b.memory_usage_of_request,
            });
        }
        jobs += 1;
    }
    Workload { ls, batch, jobs_per_hour: rate * 3600.0, jobs }
}

fn generate_ls(scenario: &Scenario, size: ClusterSize, rng: &mut StdRng) -> Vec<LsPod> {
    let l = &scenario.ls;
    let target = l.requested_fraction * size.cpu_allocatable;
    let mut pods = Vec::new();
    let mut requested = 0.0;
    let mut service = 0u32;
    let sigma = l.usage_spread;
    while requested < target {
        let cores = pick(rng, &l.cpu_cores);
        let replicas = rng.random_range(1..=l.max_replicas);
        let factor = (sigma * normal(rng) - sigma * sigma / 2.0).exp();
        let mean_fraction = (l.mean_usage_of_request * factor).min(1.0);
        let jitter = (rng.random::<f64>() * 2.0 - 1.0) * l.peak_jitter_hours;
        let peak_second = (l.peak_hour + jitter) * 3600.0;
        let cpu_request = (cores * 1000.0).round() as i64;
        let memory_request = (cores * l.memory_gib_per_core * GIB).round() as i64;
        for replica in 0..replicas {
            if requested >= target {
                break;
            }
            requested += cpu_request as f64;
            pods.push(LsPod {
                service,
                cpu_request,
                memory_request,
                curve: Curve {
                    mean: cpu_request as f64 * mean_fraction,
                    amplitude: l.diurnal_amplitude,
                    peak_second,
                    noise: l.noise,
                    noise_period: l.noise_minutes * 60.0,
                    key: mix(scenario.seed ^ mix(u64::from(service) << 20 | u64::from(replica))),
                },
                memory_usage: memory_request as f64 * l.memory_usage_of_request,
                memory_amplitude: l.memory_diurnal_amplitude,
            });
        }
        service += 1;
    }
    pods
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Scenario {
        let mut s = Scenario::builtin();
        s.scale_nodes(20);
        s.duration_hours = 6.0;
        s
    }

    fn size(s: &Scenario) -> ClusterSize {
        let cpu: f64 =
            s.cluster.node_groups.iter().map(|g| g.count as f64 * g.cpu as f64 * 1000.0).sum();
        ClusterSize { cpu_capacity: cpu, cpu_allocatable: cpu * 0.95 }
    }

    #[test]
    fn deterministic_per_seed() {
        let s = small();
        assert_eq!(generate(&s, size(&s)), generate(&s, size(&s)));
        let mut other = s.clone();
        other.seed += 1;
        assert_ne!(generate(&s, size(&s)).batch, generate(&other, size(&s)).batch);
    }

    #[test]
    fn ls_requests_reach_the_target() {
        let s = small();
        let w = generate(&s, size(&s));
        let req: f64 = w.ls.iter().map(|p| p.cpu_request as f64).sum();
        let target = s.ls.requested_fraction * size(&s).cpu_allocatable;
        assert!(req >= target && req < target + 8000.0, "{req} vs {target}");
    }

    #[test]
    fn offered_load_is_close_to_the_target() {
        let mut s = small();
        s.duration_hours = 48.0;
        let w = generate(&s, size(&s));
        let offered: f64 = w.batch.iter().map(|p| p.work).sum::<f64>() / (48.0 * 3600.0);
        let want = s.batch.offered_load * size(&s).cpu_capacity;
        // Heavy tails: within 25% over two days on 20 nodes.
        assert!((offered / want - 1.0).abs() < 0.25, "{offered} vs {want}");
        assert!(w.batch.windows(2).all(|p| p[0].arrival <= p[1].arrival));
    }
}
