//! `kolo doctor`'s verdicts on [`NodeFacts`]: one row per check (ok, warn,
//! fail, info) and which QoS features the agent will use on this node and
//! why. Pure; the facts come from [`super::facts::probe`].

use serde::Serialize;

use super::facts::{CgroupFacts, NodeFacts};
use crate::cgroup::{CgroupVersion, Resource};
use crate::kernel::FairScheduler;

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// What kolo needs is there.
    Ok,
    /// Something to know: kolo runs, with a feature off or a risk.
    Warn,
    /// kolo's agent cannot run here.
    Fail,
    /// A fact.
    Info,
}

/// One row of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Its outcome.
    pub status: Status,
    /// What was found, and what it means.
    pub detail: String,
}

/// A QoS feature of the agent on this node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Feature {
    /// The feature (the strategy's name where it is one).
    pub name: String,
    /// Whether the agent will use it here.
    pub on: bool,
    /// How, or why not.
    pub why: String,
}

/// The whole verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The checks, in order.
    pub checks: Vec<Check>,
    /// The QoS features.
    pub features: Vec<Feature>,
}

impl Report {
    /// The verdicts on `facts`.
    pub fn from_facts(facts: &NodeFacts) -> Report {
        let mut checks = vec![kernel_check(facts)];
        let mut features = Vec::new();
        match &facts.cgroup {
            Err(e) => checks.push(check("cgroup mount", Status::Fail, e.clone())),
            Ok(cg) => {
                checks.extend(cgroup_checks(cg));
                checks.push(trap_check(cg, facts.scheduler));
                features = feature_rows(cg, facts.scheduler);
            }
        }
        checks.push(if facts.system_psi {
            check("PSI", Status::Ok, "/proc/pressure/cpu is readable".into())
        } else {
            check("PSI", Status::Warn, "no /proc/pressure (kernel without PSI, or psi=0)".into())
        });
        checks.push(check(
            "resctrl",
            Status::Info,
            format!(
                "kernel support: {}, mounted: {}; kolo does not use resctrl (LLC / memory bandwidth QoS not implemented)",
                yes(facts.resctrl_supported),
                yes(facts.resctrl_mounted)
            ),
        ));
        Report { checks, features }
    }

    /// 1 when a check failed (the agent cannot run here), else 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.checks.iter().any(|c| c.status == Status::Fail))
    }
}

fn check(name: &str, status: Status, detail: String) -> Check {
    Check { name: name.to_string(), status, detail }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn scheduler_name(s: Option<FairScheduler>) -> &'static str {
    match s {
        Some(FairScheduler::Cfs) => "CFS",
        Some(FairScheduler::Eevdf) => "EEVDF",
        None => "unknown",
    }
}

fn kernel_check(facts: &NodeFacts) -> Check {
    match &facts.kernel_release {
        Some(release) => check(
            "kernel",
            Status::Info,
            format!("{release}, fair scheduler {}", scheduler_name(facts.scheduler)),
        ),
        None => check("kernel", Status::Warn, "no /proc/sys/kernel/osrelease".into()),
    }
}

/// Controllers kolo cannot work without (the rest are optional).
const REQUIRED: [&str; 4] = ["cpu", "cpuacct", "cpuset", "memory"];
/// Files without which the agent's writes fail.
const REQUIRED_FILES: [Resource; 4] =
    [Resource::CpuShares, Resource::CpuCfsQuota, Resource::CpusetCpus, Resource::MemoryLimit];

fn cgroup_checks(cg: &CgroupFacts) -> Vec<Check> {
    let mut out = vec![check("cgroup version", Status::Info, cg.version.to_string())];
    for (name, present) in &cg.controllers {
        let status = match (present, REQUIRED.contains(&name.as_str())) {
            (true, _) => Status::Ok,
            (false, true) => Status::Fail,
            (false, false) => Status::Warn,
        };
        let detail = if *present { "present".to_string() } else { "missing".to_string() };
        out.push(check(&format!("controller {name}"), status, detail));
    }
    out.push(match cg.driver {
        Some(d) => check("cgroup driver", Status::Info, format!("{d} (from the kubepods cgroup)")),
        None => check(
            "cgroup driver",
            Status::Warn,
            "no kubepods cgroup yet: the agent assumes systemd unless --cgroup-driver says otherwise"
                .into(),
        ),
    });
    out.push(check("files probed in", Status::Info, cg.probed_in.clone()));
    for (resource, present) in &cg.files {
        let name = resource.file(cg.version).unwrap_or(resource.name());
        let (status, detail) = match present {
            None => (Status::Info, "not probed".to_string()),
            Some(true) => (Status::Ok, "present".to_string()),
            Some(false) if REQUIRED_FILES.contains(resource) => {
                (Status::Fail, "missing: the agent's writes of it fail".to_string())
            }
            Some(false) => (Status::Info, "missing: the features using it are off".to_string()),
        };
        out.push(check(&format!("file {name}"), status, detail));
    }
    out
}

fn has(cg: &CgroupFacts, resource: Resource) -> bool {
    cg.files.iter().any(|(r, present)| *r == resource && *present == Some(true))
}

fn weight_file(version: CgroupVersion) -> &'static str {
    match version {
        CgroupVersion::V1 => "cpu.shares",
        CgroupVersion::V2 => "cpu.weight",
    }
}

fn trap_check(cg: &CgroupFacts, scheduler: Option<FairScheduler>) -> Check {
    let weight = weight_file(cg.version);
    let uses_idle = has(cg, Resource::CpuIdle) && scheduler == Some(FairScheduler::Cfs);
    match cg.idle_refuses_weight {
        Some(true) => check(
            "kubelet vs cpu.idle",
            if uses_idle { Status::Warn } else { Status::Info },
            format!(
                "the kernel refuses {weight} on a group with cpu.idle=1 (what a starting kubelet writes on its QoS cgroups, and it exits on the error); {}",
                if uses_idle {
                    "kolo sets cpu.idle=1 on the BE QoS cgroup on this kernel and lifts it while the kubelet is away, so do not restart the kubelet while kolo's agent is stopped (or set beClass cpuQOS schedIdle: 0)"
                } else {
                    "kolo does not set cpu.idle here unless beClass cpuQOS schedIdle is 1"
                }
            ),
        ),
        Some(false) => check(
            "kubelet vs cpu.idle",
            Status::Ok,
            format!("the kernel takes {weight} on an idle group"),
        ),
        None if has(cg, Resource::CpuIdle) => check(
            "kubelet vs cpu.idle",
            if uses_idle { Status::Warn } else { Status::Info },
            format!(
                "not tried (it would change the kubelet's cgroups); kernels seen refuse {weight} on an idle group{}",
                if uses_idle {
                    ", and kolo sets cpu.idle=1 on the BE QoS cgroup here: kolo lifts it while the kubelet is away"
                } else {
                    ""
                }
            ),
        ),
        None => check("kubelet vs cpu.idle", Status::Ok, "no cpu.idle: no conflict".into()),
    }
}

fn feature(name: &str, on: bool, why: String) -> Feature {
    Feature { name: name.to_string(), on, why }
}

fn feature_rows(cg: &CgroupFacts, scheduler: Option<FairScheduler>) -> Vec<Feature> {
    let idle = has(cg, Resource::CpuIdle);
    let isolation = match (scheduler, idle) {
        (Some(FairScheduler::Cfs), true) => {
            "cpu.idle=1 on the BE QoS cgroup (CFS kernel)".to_string()
        }
        (Some(FairScheduler::Eevdf), _) => format!(
            "the minimal weight ({} {}) on the BE QoS cgroup: cpu.idle costs LS a scheduler tick on EEVDF",
            weight_file(cg.version),
            if cg.version == CgroupVersion::V1 { 2 } else { 1 }
        ),
        _ => format!("the minimal weight ({}): no cpu.idle", weight_file(cg.version)),
    };
    let quota = has(cg, Resource::CpuCfsQuota);
    vec![
        feature("beIsolation", true, isolation),
        feature(
            "batchResource",
            quota && has(cg, Resource::MemoryLimit),
            "BE pods' CPU quota and memory limit from their batch resources".into(),
        ),
        feature("cpuSuppress (cfsQuota)", quota, "the BE QoS cgroup's CFS quota".into()),
        feature(
            "cpuSuppress (cpuset)",
            has(cg, Resource::CpusetCpus),
            "the BE QoS cgroup's cpuset".into(),
        ),
        feature(
            "cpuBurst",
            has(cg, Resource::CpuCfsBurst),
            if has(cg, Resource::CpuCfsBurst) {
                "the kernel's CFS burst file".into()
            } else {
                "the kernel has no CFS burst (5.14+)".into()
            },
        ),
        feature(
            "memoryQOS",
            has(cg, Resource::MemoryMin),
            if has(cg, Resource::MemoryMin) {
                "memory.min / low / high".into()
            } else {
                "no memory.min (cgroup v2, or an Alibaba Cloud Linux v1 kernel)".into()
            },
        ),
        feature(
            "per-cgroup PSI",
            has(cg, Resource::CpuPressure),
            if has(cg, Resource::CpuPressure) {
                "pods' cpu / memory / io pressure in the NodeMetric".into()
            } else {
                "no per-cgroup pressure files (cgroup v2 has them)".into()
            },
        ),
        feature("cpuEvict, memoryEvict", true, "need only usage, which every layout has".into()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(version: CgroupVersion, scheduler: FairScheduler, files: &[Resource]) -> NodeFacts {
        let controllers = ["cpu", "cpuacct", "cpuset", "memory", "blkio"];
        NodeFacts {
            kernel_release: Some("6.1.0-56-amd64".into()),
            scheduler: Some(scheduler),
            cgroup: Ok(CgroupFacts {
                version,
                driver: None,
                controllers: controllers.iter().map(|c| (c.to_string(), true)).collect(),
                files: super::super::facts::PROBED
                    .iter()
                    .map(|r| (*r, Some(files.contains(r))))
                    .collect(),
                idle_refuses_weight: Some(true),
                probed_in: "a temporary cgroup".into(),
            }),
            system_psi: true,
            resctrl_supported: false,
            resctrl_mounted: false,
        }
    }

    const BASE: [Resource; 4] =
        [Resource::CpuShares, Resource::CpuCfsQuota, Resource::CpusetCpus, Resource::MemoryLimit];

    fn on(report: &Report, name: &str) -> bool {
        report.features.iter().find(|f| f.name == name).expect(name).on
    }

    #[test]
    fn features_follow_the_kernel_and_its_files() {
        let mut all = BASE.to_vec();
        all.extend([
            Resource::CpuIdle,
            Resource::CpuCfsBurst,
            Resource::MemoryMin,
            Resource::CpuPressure,
        ]);
        // (version, scheduler, files) → (idle isolation, burst, memory QoS, PSI)
        let table = [
            (CgroupVersion::V2, FairScheduler::Cfs, all.clone(), (true, true, true, true)),
            (CgroupVersion::V2, FairScheduler::Eevdf, all.clone(), (false, true, true, true)),
            (CgroupVersion::V1, FairScheduler::Cfs, BASE.to_vec(), (false, false, false, false)),
        ];
        for (version, scheduler, files, (idle, burst, memory, psi)) in table {
            let report = Report::from_facts(&facts(version, scheduler, &files));
            let isolation = &report.features[0].why;
            assert_eq!(
                isolation.starts_with("cpu.idle=1"),
                idle,
                "{version} {scheduler:?}: {isolation}"
            );
            assert_eq!(
                (on(&report, "cpuBurst"), on(&report, "memoryQOS"), on(&report, "per-cgroup PSI")),
                (burst, memory, psi),
                "{version} {scheduler:?}"
            );
            assert_eq!(report.exit_code(), 0);
        }
    }

    #[test]
    fn the_trap_warns_only_where_kolo_sets_cpu_idle() {
        let mut files = BASE.to_vec();
        files.push(Resource::CpuIdle);
        let status = |s| {
            let r = Report::from_facts(&facts(CgroupVersion::V2, s, &files));
            r.checks.iter().find(|c| c.name == "kubelet vs cpu.idle").unwrap().status
        };
        assert_eq!(status(FairScheduler::Cfs), Status::Warn);
        assert_eq!(status(FairScheduler::Eevdf), Status::Info);
    }

    #[test]
    fn a_missing_required_controller_or_file_fails() {
        let mut f = facts(CgroupVersion::V1, FairScheduler::Eevdf, &BASE);
        let Ok(cg) = &mut f.cgroup else { unreachable!() };
        cg.controllers.retain(|(c, _)| c != "blkio");
        cg.controllers.push(("blkio".into(), false));
        assert_eq!(Report::from_facts(&f).exit_code(), 0, "blkio is optional");
        let Ok(cg) = &mut f.cgroup else { unreachable!() };
        cg.controllers[3].1 = false; // memory
        assert_eq!(Report::from_facts(&f).exit_code(), 1);

        let f = facts(CgroupVersion::V2, FairScheduler::Cfs, &BASE[..3]);
        let report = Report::from_facts(&f);
        assert_eq!(report.exit_code(), 1, "no memory.max: {:?}", report.checks);

        let mut f = facts(CgroupVersion::V2, FairScheduler::Cfs, &BASE);
        f.cgroup = Err("no cgroup mount".into());
        assert_eq!(Report::from_facts(&f).exit_code(), 1);
    }
}
