//! Per-file feature detection: whether this kernel has a resource's file
//! (`cpu.idle` needs 5.15, `memory.high` on v1 needs Alibaba Cloud Linux,
//! PSI files on v1 need a kernel that adds them to cpuacct). A missing file
//! is normal, not an error: it is detected once, cached, and logged once
//! (Koordinator issue #2383 logged it every second).

use std::sync::OnceLock;

use super::layout::Layout;
use super::resource::Resource;

/// The cache of which resources this kernel supports.
#[derive(Debug)]
pub struct Features {
    cache: Vec<OnceLock<bool>>,
}

impl Default for Features {
    fn default() -> Self {
        Features::new()
    }
}

impl Features {
    /// An empty cache.
    pub fn new() -> Features {
        Features { cache: (0..Resource::COUNT).map(|_| OnceLock::new()).collect() }
    }

    /// Whether the kernel has `resource`'s file. Decided by looking for it
    /// in the kubepods directory of its hierarchy (files of the root cgroup
    /// differ: v2 roots have no `cpu.max`); while that directory does not
    /// exist nothing is cached and the answer is "supported", so the I/O
    /// itself reports what is missing.
    pub fn is_supported(&self, layout: &Layout, resource: Resource) -> bool {
        let slot = &self.cache[resource as usize];
        if let Some(&known) = slot.get() {
            return known;
        }
        let Some(file) = resource.file(layout.version()) else {
            return *slot.get_or_init(|| {
                log_unsupported(layout, resource, "no such file in this cgroup version")
            });
        };
        let Some(dir) = layout.abs_dir(resource.subsystem(), layout.pod_paths().kubepods_dir())
        else {
            return *slot.get_or_init(|| {
                log_unsupported(layout, resource, "its cgroup v1 subsystem is not mounted")
            });
        };
        if !dir.is_dir() {
            return true;
        }
        let exists = dir.join(file).exists();
        *slot.get_or_init(|| {
            exists || log_unsupported(layout, resource, "the kernel has no such file")
        })
    }
}

fn log_unsupported(layout: &Layout, resource: Resource, why: &str) -> bool {
    tracing::info!(
        resource = resource.name(),
        version = %layout.version(),
        reason = why,
        "cgroup resource not supported here; skipping it (logged once)"
    );
    false
}
