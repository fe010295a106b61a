//! The workload generator: LS services and a batch job trace, shaped like
//! Alibaba's cluster-trace-v2018 (see `docs/sim.md` for the shapes and
//! their parameters), seeded and deterministic.
//!
//! * LS services: requests sized for the peak, so that their sum is
//!   `requestedFraction` of the cluster's allocatable CPU; each service's
//!   mean usage is `meanUsageOfRequest` × a log-normal factor; usage follows
//!   a daily curve peaking around `peakHour`, with smooth noise
//!   ([`crate::usage`]). When the scenario lists fixed LS pods (`ls.pods`,
//!   e.g. from a cluster snapshot) those are the LS workload instead, each
//!   a service of its own with the same curve and noise.
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

use crate::scenario::{BatchWorkload, LsWorkload, Scenario, Weighted};
use crate::usage::{Curve, mix};

/// Bytes in a GiB (scenarios state memory in GiB).
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
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
    /// Its job's tenant (index into `batch.tenants`; 0 without tenants).
    pub tenant: u32,
    /// Pods of its job (a gang's `min-available`).
    pub tasks: u32,
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
    calibrate(seed, b).0
}

/// The mean work of a job (milli-core-seconds) and its mean number of
/// pods, from [`CALIBRATION_DRAWS`] draws of the generator.
fn calibrate(seed: u64, b: &BatchWorkload) -> (f64, f64) {
    let mut rng = StdRng::seed_from_u64(mix(seed ^ 0xCA11_B8A7E));
    let mut total = 0.0;
    let mut tasks = 0u64;
    for _ in 0..CALIBRATION_DRAWS {
        let shape = job_shape(&mut rng, b);
        tasks += u64::from(shape.tasks);
        for _ in 0..shape.tasks {
            total += shape.cores * 1000.0 * shape.usage * duration_seconds(&mut rng, b);
        }
    }
    let draws = CALIBRATION_DRAWS as f64;
    (total / draws, tasks as f64 / draws)
}

/// How many batch pods [`generate`] is expected to make for `scenario` on
/// a cluster of `cpu_capacity` milli-cores: the job rate × the duration ×
/// the mean pods of a job. Infinite when a job does no work (every pod
/// requests 0 CPU) yet load is offered.
pub fn expected_batch_pods(scenario: &Scenario, cpu_capacity: f64) -> f64 {
    let b = &scenario.batch;
    if b.offered_load <= 0.0 || cpu_capacity <= 0.0 {
        return 0.0;
    }
    let (work, tasks) = calibrate(scenario.seed, b);
    if work <= 0.0 {
        return f64::INFINITY;
    }
    b.offered_load * cpu_capacity / work * scenario.duration_hours * 3600.0 * tasks
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
    // Tenants are drawn from a stream of their own, so that adding tenants
    // to a scenario leaves its jobs as they were.
    let mut tenant_rng = StdRng::seed_from_u64(mix(scenario.seed ^ 0x7E4A_4175));
    let tenant_weights: Vec<Weighted> = (0u32..)
        .zip(&b.tenants)
        .map(|(i, t)| Weighted { value: f64::from(i), weight: t.job_weight })
        .collect();
    while rate > 0.0 && t < horizon {
        let u: f64 = rng.random();
        t += -(1.0 - u).max(f64::MIN_POSITIVE).ln() / rate;
        if t >= horizon {
            break;
        }
        let shape = job_shape(&mut rng, b);
        let cpu_request = (shape.cores * 1000.0).round() as i64;
        let memory_request = (shape.cores * b.memory_gib_per_core * GIB).round() as i64;
        let tenant = if tenant_weights.is_empty() {
            0
        } else {
            pick(&mut tenant_rng, &tenant_weights) as u32
        };
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
                tenant,
                tasks: shape.tasks,
            });
        }
        jobs += 1;
    }
    Workload { ls, batch, jobs_per_hour: rate * 3600.0, jobs }
}

/// A service's log-normal factor on `meanUsageOfRequest` (mean 1).
fn usage_factor(rng: &mut StdRng, l: &LsWorkload) -> f64 {
    let sigma = l.usage_spread;
    (sigma * normal(rng) - sigma * sigma / 2.0).exp()
}

/// Whether generated service `service` runs hot (`ls.hotServices`): a hash
/// of the seed and the service, not a draw, so that hot services leave the
/// workload's other draws as they were.
pub fn is_hot_service(scenario: &Scenario, service: u32) -> bool {
    let fraction = scenario.ls.hot_services;
    if fraction <= 0.0 {
        return false;
    }
    let u = mix(scenario.seed ^ mix(0x4077_5E41_0000_0000 | u64::from(service))) as f64;
    u / u64::MAX as f64 <= fraction
}

/// A service's peak, second of the day: `peakHour` ± the jitter.
fn peak_second(rng: &mut StdRng, l: &LsWorkload) -> f64 {
    let jitter = (rng.random::<f64>() * 2.0 - 1.0) * l.peak_jitter_hours;
    (l.peak_hour + jitter) * 3600.0
}

/// The usage curve of replica `replica` of `service` with mean `mean`
/// (milli): the daily swing and noise are the workload's, the noise key a
/// function of the seed, the service and the replica.
fn ls_curve(scenario: &Scenario, service: u32, replica: u32, mean: f64, peak: f64) -> Curve {
    let l = &scenario.ls;
    Curve {
        mean,
        amplitude: l.diurnal_amplitude,
        peak_second: peak,
        noise: l.noise,
        noise_period: l.noise_minutes * 60.0,
        key: mix(scenario.seed ^ mix(u64::from(service) << 20 | u64::from(replica))),
    }
}

fn generate_ls(scenario: &Scenario, size: ClusterSize, rng: &mut StdRng) -> Vec<LsPod> {
    if !scenario.ls.pods.is_empty() {
        return fixed_ls(scenario, rng);
    }
    let l = &scenario.ls;
    let target = l.requested_fraction * size.cpu_allocatable;
    let mut pods = Vec::new();
    let mut requested = 0.0;
    let mut service = 0u32;
    while requested < target {
        // The draws' order is part of a seed's meaning: keep it.
        let cores = pick(rng, &l.cpu_cores);
        let replicas = rng.random_range(1..=l.max_replicas);
        let mut mean_fraction = (l.mean_usage_of_request * usage_factor(rng, l)).min(1.0);
        let peak = peak_second(rng, l);
        if is_hot_service(scenario, service) {
            mean_fraction = l.hot_usage_of_request;
        }
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
                curve: ls_curve(
                    scenario,
                    service,
                    replica,
                    cpu_request as f64 * mean_fraction,
                    peak,
                ),
                memory_usage: memory_request as f64 * l.memory_usage_of_request,
                memory_amplitude: l.memory_diurnal_amplitude,
            });
        }
        service += 1;
    }
    pods
}

/// The scenario's fixed LS pods, in order, each a service of one replica.
/// Every pod draws a usage factor and a peak like a generated service, even
/// when its mean is pinned, so that pinning one pod's mean does not change
/// the draws of the others.
fn fixed_ls(scenario: &Scenario, rng: &mut StdRng) -> Vec<LsPod> {
    let l = &scenario.ls;
    (0u32..)
        .zip(&l.pods)
        .map(|(service, p)| {
            let factor = usage_factor(rng, l);
            let peak = peak_second(rng, l);
            let cpu_request = (p.cpu * 1000.0).round() as i64;
            let memory_request = (p.memory_gib * GIB).round() as i64;
            let mean = match (p.mean_cpu_cores, p.mean_usage_of_request) {
                (Some(cores), _) => cores * 1000.0,
                (None, Some(fraction)) => cpu_request as f64 * fraction,
                (None, None) => cpu_request as f64 * (l.mean_usage_of_request * factor).min(1.0),
            };
            LsPod {
                service,
                cpu_request,
                memory_request,
                curve: ls_curve(scenario, service, 0, mean, peak),
                memory_usage: p
                    .memory_usage_gib
                    .map_or(memory_request as f64 * l.memory_usage_of_request, |gib| gib * GIB),
                memory_amplitude: l.memory_diurnal_amplitude,
            }
        })
        .collect()
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
    fn fixed_ls_pods_replace_the_drawn_services() {
        use crate::scenario::FixedLsPod;
        let fixed = |cpu, mean_cpu_cores, mean_usage_of_request, memory_usage_gib| FixedLsPod {
            name: String::new(),
            cpu,
            memory_gib: 2.0,
            mean_cpu_cores,
            mean_usage_of_request,
            memory_usage_gib,
        };
        let mut s = small();
        s.ls.pods = vec![
            fixed(2.0, Some(0.5), None, Some(1.0)),
            fixed(1.5, None, Some(0.4), None),
            fixed(4.0, Some(1.0), Some(0.9), None),
            fixed(0.1, None, None, None),
        ];
        let w = generate(&s, size(&s));
        // (cpu request, memory request, mean, memory usage)
        let gib = GIB as i64;
        let cases = [
            (2000, 2 * gib, Some(500.0), GIB),
            (1500, 2 * gib, Some(600.0), 2.0 * GIB * s.ls.memory_usage_of_request),
            (4000, 2 * gib, Some(1000.0), 2.0 * GIB * s.ls.memory_usage_of_request),
            // Unpinned: meanUsageOfRequest × a log-normal factor, at most
            // the request.
            (100, 2 * gib, None, 2.0 * GIB * s.ls.memory_usage_of_request),
        ];
        assert_eq!(w.ls.len(), cases.len());
        for (i, (p, (cpu, memory, mean, memory_usage))) in w.ls.iter().zip(cases).enumerate() {
            assert_eq!((p.service, p.cpu_request, p.memory_request), (i as u32, cpu, memory));
            assert!((p.memory_usage - memory_usage).abs() < 1.0, "{i}: {p:?}");
            match mean {
                Some(m) => assert!((p.curve.mean - m).abs() < 1e-9, "{i}: {p:?}"),
                None => assert!(p.curve.mean > 0.0 && p.curve.mean <= 100.0, "{i}: {p:?}"),
            }
            assert_eq!(p.curve.amplitude, s.ls.diurnal_amplitude);
        }
        assert_eq!(w, generate(&s, size(&s)), "deterministic");
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
