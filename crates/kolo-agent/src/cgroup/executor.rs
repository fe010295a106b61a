//! The executor: applies a batch of cgroup writes in a safe order and
//! records what it changed (spec §7).
//!
//! Writes are leveled by directory depth. Top-down (parents first), a
//! mergeable resource (CFS quota, memory limits, cpusets) is first loosened
//! to the merge of its current and target value — the larger limit, the
//! union of cpusets — so a parent is never tighter than the child about to
//! be written; other resources are written right away. Bottom-up (children
//! first), mergeable resources then get their real value. So growing limits
//! are applied parent first and shrinking limits child first, which the
//! kernel requires on v1 (a child's `cpu.cfs_quota_us` may not exceed its
//! parent's, a child's `cpuset.cpus` must be a subset of its parent's).
//!
//! Every write is "write if different": the current value is read and
//! compared semantically (cpusets as sets, `max` as `-1`, shares as v2
//! weights); equal values are skipped. Unsupported files and missing
//! directories are skipped too, never errors (§7.1).

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Cgroups;
use super::error::CgroupError;
use super::layout::CgroupVersion;
use super::path::CgroupDir;
use super::reader::ReadBuf;
use super::resource::{Resource, Value};

/// One write: `value` (v1 domain) to `resource` of the cgroup `dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupWrite {
    /// The cgroup directory.
    pub dir: CgroupDir,
    /// The resource.
    pub resource: Resource,
    /// The value, in the v1 domain (shares, µs, bytes, `-1`/[`Value::Max`]
    /// for unlimited).
    pub value: Value,
}

impl CgroupWrite {
    /// Shorthand for an integer value.
    pub fn int(dir: &CgroupDir, resource: Resource, value: i64) -> CgroupWrite {
        CgroupWrite { dir: dir.clone(), resource, value: Value::Int(value) }
    }
}

/// Which pass wrote a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Top-down merge: a loosened intermediate value.
    Merge,
    /// The real target value.
    Final,
}

/// A file the executor changed (or, dry-run, would change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedWrite {
    /// The file.
    pub path: PathBuf,
    /// The resource.
    pub resource: Resource,
    /// Its content before (trimmed).
    pub old: String,
    /// What was written.
    pub new: String,
    /// Which pass.
    pub phase: Phase,
}

/// Why a write was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// The file already holds the value.
    AlreadySet,
    /// The kernel has no such file.
    Unsupported,
    /// The cgroup directory does not exist.
    MissingDir,
}

/// A write that was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedWrite {
    /// The file (the cgroup directory for unsupported resources).
    pub path: PathBuf,
    /// The resource.
    pub resource: Resource,
    /// Why.
    pub reason: SkipReason,
}

/// What a batch did.
#[derive(Debug, Default)]
pub struct ApplyReport {
    /// Files changed, in the order they were written.
    pub applied: Vec<AppliedWrite>,
    /// Writes not made (already set, unsupported, missing directory).
    pub skipped: Vec<SkippedWrite>,
    /// Writes that failed (invalid value, unreadable or unparsable file,
    /// the kernel refusing the value).
    pub errors: Vec<CgroupError>,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
}

impl ApplyReport {
    /// The final-value writes (what changed, without merge steps).
    pub fn changed(&self) -> impl Iterator<Item = &AppliedWrite> {
        self.applied.iter().filter(|a| a.phase == Phase::Final)
    }
}

/// Applies batches of writes through a [`Cgroups`].
#[derive(Debug, Clone, Copy)]
pub struct Executor<'a> {
    cgroups: &'a Cgroups,
    dry_run: bool,
}

struct Item<'w> {
    write: &'w CgroupWrite,
    path: PathBuf,
    target: Value,
    depth: usize,
    done: bool,
}

impl<'a> Executor<'a> {
    /// An executor that writes.
    pub fn new(cgroups: &'a Cgroups) -> Executor<'a> {
        Executor { cgroups, dry_run: false }
    }

    /// Dry run: read, compare and report, write nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Executor<'a> {
        self.dry_run = dry_run;
        self
    }

    /// Applies a batch, leveled by directory depth (see the module docs).
    pub fn apply(&self, writes: &[CgroupWrite]) -> ApplyReport {
        let version = self.cgroups.version();
        let mut report = ApplyReport { dry_run: self.dry_run, ..ApplyReport::default() };
        let mut items: Vec<Item<'_>> = Vec::with_capacity(writes.len());
        for write in writes {
            match self.prepare(write) {
                Ok(item) => items.push(item),
                Err(Skip(skip)) => report.skipped.push(skip),
                Err(Fail(err)) => report.errors.push(err),
            }
        }
        // Stable: same-depth writes keep the caller's order.
        items.sort_by_key(|i| i.depth);
        let mut state = State { buf: ReadBuf::new(), overlay: HashMap::new(), version };

        // Top-down: merge mergeable resources, write the others.
        for item in items.iter_mut() {
            let resource = item.write.resource;
            let (content, current) = match self.current(&mut state, item) {
                Ok(c) => c,
                Err(err) => {
                    report.errors.push(err);
                    item.done = true;
                    continue;
                }
            };
            if resource.is_mergeable() {
                if let Some(merged) = resource.merge(&current, &item.target) {
                    self.write(&mut state, &mut report, item, &merged, &content, Phase::Merge);
                }
            } else {
                item.done = true;
                if resource.is_current(&current, &item.target) {
                    report.skipped.push(already(item));
                } else {
                    let target = item.target.clone();
                    self.write(&mut state, &mut report, item, &target, &content, Phase::Final);
                }
            }
        }

        // Bottom-up: real values of mergeable resources.
        for item in items.iter_mut().rev().filter(|i| !i.done) {
            let (content, current) = match self.current(&mut state, item) {
                Ok(c) => c,
                Err(err) => {
                    report.errors.push(err);
                    continue;
                }
            };
            if item.write.resource.is_current(&current, &item.target) {
                // Not "skipped" if the merge pass already wrote the target.
                let merged_here =
                    report.applied.iter().any(|a| a.path == item.path && a.phase == Phase::Merge);
                if !merged_here {
                    report.skipped.push(already(item));
                }
            } else {
                let target = item.target.clone();
                self.write(&mut state, &mut report, item, &target, &content, Phase::Final);
            }
        }
        report
    }

    fn prepare<'w>(&self, write: &'w CgroupWrite) -> Result<Item<'w>, Outcome> {
        let cg = self.cgroups;
        let version = cg.version();
        let resource = write.resource;
        let target = resource.validate(version, &write.value).map_err(Fail)?;
        let target = resource.to_file_value(version, target);
        let unsupported = || {
            Skip(SkippedWrite {
                path: cg.layout().abs_dir(resource.subsystem(), &write.dir).unwrap_or_default(),
                resource,
                reason: SkipReason::Unsupported,
            })
        };
        if !cg.is_supported(resource) {
            return Err(unsupported());
        }
        let path = cg.layout().file_path(&write.dir, resource).ok_or_else(unsupported)?;
        if !path.parent().is_some_and(Path::is_dir) {
            return Err(Skip(SkippedWrite { path, resource, reason: SkipReason::MissingDir }));
        }
        Ok(Item { write, path, target, depth: write.dir.depth(), done: false })
    }

    /// The file's content (trimmed) and its parsed file-domain value.
    fn current(&self, state: &mut State, item: &Item<'_>) -> Result<(String, Value), CgroupError> {
        let resource = item.write.resource;
        let mut content = match state.overlay.get(&item.path) {
            Some(c) => c.clone(),
            None => state.buf.read(&item.path)?.trim().to_string(),
        };
        // An empty v2 cpuset inherits the parent's: compare and merge with
        // the effective set.
        if state.version == CgroupVersion::V2
            && content.is_empty()
            && matches!(resource, Resource::CpusetCpus | Resource::CpusetMems)
        {
            let effective =
                item.path.with_file_name(resource.read_file(state.version).unwrap_or_default());
            if let Ok(text) = state.buf.read(&effective) {
                content = text.trim().to_string();
            }
        }
        let value = resource
            .parse_file(state.version, &content)
            .map_err(|reason| CgroupError::Parse { path: item.path.clone(), reason })?;
        Ok((content, value))
    }

    fn write(
        &self,
        state: &mut State,
        report: &mut ApplyReport,
        item: &mut Item<'_>,
        value: &Value,
        old: &str,
        phase: Phase,
    ) {
        let resource = item.write.resource;
        let new = resource.render(state.version, value, old);
        if self.dry_run {
            state.overlay.insert(item.path.clone(), new.clone());
        } else {
            let result = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&item.path)
                .and_then(|mut f| f.write_all(new.as_bytes()));
            if let Err(source) = result {
                report.errors.push(CgroupError::Write {
                    path: item.path.clone(),
                    value: new,
                    source,
                });
                item.done = true;
                return;
            }
        }
        tracing::debug!(path = %item.path.display(), old, new = %new, ?phase, dry_run = self.dry_run, "cgroup write");
        report.applied.push(AppliedWrite {
            path: item.path.clone(),
            resource,
            old: old.to_string(),
            new,
            phase,
        });
    }
}

struct State {
    buf: ReadBuf,
    /// Dry run: what the batch "wrote", so later steps see it.
    overlay: HashMap<PathBuf, String>,
    version: CgroupVersion,
}

enum Outcome {
    Skip(SkippedWrite),
    Fail(CgroupError),
}
use Outcome::{Fail, Skip};

fn already(item: &Item<'_>) -> SkippedWrite {
    SkippedWrite {
        path: item.path.clone(),
        resource: item.write.resource,
        reason: SkipReason::AlreadySet,
    }
}
