//! Every cgroup and `/proc` file parser of the agent, on arbitrary text. The
//! first byte picks the parser (and the cgroup version), the rest is the
//! file. Nothing may panic; what parses satisfies the parser's contract
//! (finite, non-negative pressures; sorted NUMA nodes; a cpu line count
//! that matches the per-CPU entries).
#![no_main]

use std::path::Path;

use kolo_agent::cgroup::reader::{
    parse_cpu_throttle, parse_cpu_usage, parse_memory_stat, parse_numa_stat, parse_psi,
};
use kolo_agent::cgroup::{CgroupDir, CgroupDriver, CgroupVersion, ContainerId, Resource};
use kolo_agent::collect::node::{Ticks, parse_meminfo, parse_stat};
use kolo_agent::collect::{psi, topology};
use kolo_agent::kernel::{from_release, from_sched_features};
use libfuzzer_sys::fuzz_target;

/// The parsers, in the order the first byte selects them.
const PARSERS: u8 = 14;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let version = if selector & 0x80 == 0 { CgroupVersion::V1 } else { CgroupVersion::V2 };
    let path = Path::new("/fuzz/file");
    // The byte parsers first (meminfo and /proc/stat are read as bytes).
    match (selector & 0x7f) % PARSERS {
        0 => {
            let _ = parse_meminfo(rest, path);
            return;
        }
        1 => {
            let mut ticks = Ticks::default();
            if parse_stat(rest, path, &mut ticks).is_ok() {
                assert!(ticks.per_cpu.iter().flatten().count() <= ticks.cpus, "{rest:?}");
            }
            return;
        }
        _ => {}
    }
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match (selector & 0x7f) % PARSERS {
        2 => {
            let _ = parse_memory_stat(version, text);
        }
        3 => {
            let _ = parse_cpu_usage(version, text);
        }
        4 => {
            let _ = parse_cpu_throttle(version, text);
        }
        5 => {
            if let Ok(p) = parse_psi(text) {
                assert!(p.some_avg10.is_finite() && p.some_avg10 >= 0.0, "{text:?}");
            }
        }
        6 => {
            if let Ok(nodes) = parse_numa_stat(version, text) {
                assert!(nodes.windows(2).all(|w| w[0].node < w[1].node), "{text:?}");
            }
        }
        7 => {
            if let Ok(file) = psi::parse_psi(text, path) {
                let p = file.pressure();
                assert!(p.some_avg10.is_finite() && p.some_avg10 >= 0.0, "{text:?}");
            }
        }
        8 => {
            // Every resource's own file format (cpu.max, memory.max, cpuset, ...).
            for &resource in Resource::ALL {
                let _ = resource.parse_file(version, text);
            }
        }
        9 => {
            let _ = topology::parse_id(path, text);
        }
        10 => {
            let _ = from_sched_features(text);
            let _ = from_release(text);
        }
        11 => {
            // Cgroup paths from pod specs and the runtime: must stay inside.
            if let Ok(dir) = CgroupDir::parse(text) {
                assert!(!dir.as_path().components().any(|c| c.as_os_str() == ".."), "{text:?}");
            }
            let _ = CgroupDriver::parse(text);
        }
        12 => {
            if let Ok(id) = ContainerId::parse(text) {
                assert!(!id.id().contains('/'), "{text:?}");
            }
        }
        _ => {
            let _ = kolo_agent::cgroup::validate_pod_uid(text);
        }
    }
});
