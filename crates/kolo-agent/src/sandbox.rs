//! A sandbox on the real cgroups of the machine (cgroup v1 or v2), for
//! tests, `kolo bench agent-overhead` and trying the agent without a
//! cluster.
//!
//! [`TestCgroups`] creates a unique kubepods-shaped hierarchy
//! `<mount>/kolo-test-<pid>-<n>/kubepods/{burstable,besteffort}` — on v1 in
//! the cpu, cpuacct, cpuset and memory hierarchies (wherever each is
//! mounted: they may be separate, as on this machine, or combined), on v2
//! in the unified tree with the cpu, cpuset and memory controllers enabled
//! down to it. With `KOLO_TEST_CGROUP_DRIVER=systemd` the directories have
//! the systemd driver's names (`kubepods.slice/kubepods-besteffort.slice/
//! kubepods-besteffort-pod<uid>.slice/cri-containerd-<id>.scope`), made by
//! the harness itself as a kubelet's systemd would. It starts real
//! processes in pod / container cgroups below it, and on drop — also when
//! the test panics — kills every process, waits for it, and removes every
//! cgroup it created, leaf to root. It never touches a cgroup it did not
//! create (except removing empty `kolo-test-<pid>-*` leftovers of a dead
//! test process).
//!
//! Give the agent `TestCgroups::layout_config()`: the cgroup root is the
//! real one and the kubelet cgroup root is the unique test directory, so
//! the agent's own path building finds the test pods.
//!
//! On v2 a cgroup's controllers are enabled in its parent's
//! `cgroup.subtree_control` when the first child is created below it, as
//! the kubelet does; processes only ever go to leaves (the kernel refuses
//! a process in a cgroup whose children have controllers).
//!
//! A signal does not run `Drop`: a binary that keeps a `TestCgroups` alive
//! while the user may press Ctrl-C (`kolo agent demo`, `kolo bench`) calls
//! [`clean_up_after_signal`] from its signal watcher, which kills the
//! sandboxes' processes and removes their trees (see `interrupt.rs`).
//!
//! Tests hold a process-wide lock while a `TestCgroups` lives, so real
//! cgroup tests of one test binary run one at a time (CPU measurements
//! would disturb each other otherwise). The test directory gets the
//! largest CPU weight (`cpu.shares` 262144, `cpu.weight` 10000), so processes in it get the CPU they ask
//! for even while the machine is busy compiling.

use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::agent_pod::{AgentPod, ContainerRef};
use crate::cgroup::{
    CgroupDir, CgroupDriver, CgroupVersion, ContainerId, Layout, LayoutConfig, PodPaths, Resource,
    Subsystem, Value,
};
use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::resources::{ResourceName, ResourceVector};

mod interrupt;
pub use interrupt::clean_up_after_signal;

/// The real cgroup mount root.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// The hierarchies the harness creates its tree in.
pub const CONTROLLERS: [Subsystem; 4] =
    [Subsystem::Cpu, Subsystem::Cpuacct, Subsystem::Cpuset, Subsystem::Memory];
/// The v2 controllers the harness enables down its tree.
pub const V2_CONTROLLERS: [&str; 3] = ["cpu", "cpuset", "memory"];
/// The environment variable choosing the cgroup driver's names
/// (`cgroupfs`, the default, or `systemd`).
pub const DRIVER_ENV: &str = "KOLO_TEST_CGROUP_DRIVER";

static LOCK: Mutex<()> = Mutex::new(());
static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// What a spawned process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// A shell busy loop: one core.
    Spin,
    /// The same busy loop, but [`TestCgroups::spawn`] returns it stopped
    /// (`SIGSTOP`) once it is in its cgroups; [`TestCgroups::resume`]
    /// starts it, so a caller knows to the millisecond when it began.
    SpinOnResume,
    /// `sleep`: nothing.
    Sleep,
    /// Python allocating and touching `mib` MiB of anonymous memory,
    /// locking it in RAM (a machine with swap may otherwise swap the
    /// sleeping holder out, and its cgroup's usage falls), then sleeping;
    /// without python (a VM's initramfs), the shell holding a
    /// string of `mib` MiB (a little more than `mib` MiB resident).
    Memory {
        /// MiB to allocate.
        mib: u64,
    },
}

/// A unique kubepods-shaped test hierarchy on the real cgroup mounts.
pub struct TestCgroups {
    name: String,
    version: CgroupVersion,
    /// (subsystem, absolute test root `<mount>/kolo-test-…`); on v2 every
    /// subsystem has the same one.
    roots: Vec<(Subsystem, PathBuf)>,
    /// Absolute dirs, in creation order (removed in reverse).
    created: Vec<PathBuf>,
    children: Vec<Child>,
    paths: PodPaths,
    _lock: MutexGuard<'static, ()>,
}

impl TestCgroups {
    /// Creates the hierarchy, or says why this machine cannot (not root,
    /// no cgroup v1 cpu / cpuacct / cpuset / memory hierarchies, a v2 tree
    /// without those controllers, an unknown [`DRIVER_ENV`]). Callers
    /// print the reason loudly and return: see [`skip`].
    pub fn new() -> Result<TestCgroups, String> {
        let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let driver = match std::env::var(DRIVER_ENV) {
            Err(_) => CgroupDriver::Cgroupfs,
            Ok(name) => CgroupDriver::parse(&name)
                .ok_or_else(|| format!("{DRIVER_ENV}={name:?}: neither cgroupfs nor systemd"))?,
        };
        let layout = Layout::detect(&LayoutConfig::new(CGROUP_ROOT))
            .map_err(|e| format!("no cgroups: {e}"))?;
        let version = layout.version();
        let mounts = match version {
            CgroupVersion::V1 => v1_mounts(&layout)?,
            CgroupVersion::V2 => v2_mounts(layout.root())?,
        };
        for mount in unique(mounts.iter().map(|(_, m)| m)) {
            remove_stale(mount);
        }
        let name =
            format!("kolo-test-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut t = TestCgroups {
            name: name.clone(),
            version,
            roots: mounts.iter().map(|(s, m)| (*s, m.join(&name))).collect(),
            created: Vec::new(),
            children: Vec::new(),
            paths: PodPaths::new(driver, &CgroupDir::parse(&name).map_err(|e| e.to_string())?),
            _lock: lock,
        };
        // The test root itself (its creation tells whether we may).
        match t.mkdir_one("") {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                return Err(format!("cannot create cgroups ({e}): run as root"));
            }
            Err(e) => return Err(format!("cannot create a test cgroup: {e}")),
        }
        t.write_resource("", Resource::CpuShares, Value::Int(262_144))
            .map_err(|e| e.to_string())?;
        let qos = [KubeQoSClass::Guaranteed, KubeQoSClass::Burstable, KubeQoSClass::BestEffort];
        for dir in qos.map(|q| t.rel_of(t.paths.qos_dir(q))) {
            t.mkdir_one(&dir).map_err(|e| format!("creating {dir}: {e}"))?;
        }
        Ok(t)
    }

    /// The cgroup version of the machine's mount.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The driver whose names the tree has ([`DRIVER_ENV`]).
    pub fn driver(&self) -> CgroupDriver {
        self.paths.driver()
    }

    /// The QoS directory of `qos` relative to the test root (`kubepods`
    /// for Guaranteed, `kubepods/besteffort`,
    /// `kubepods.slice/kubepods-besteffort.slice`, ...).
    pub fn qos_rel(&self, qos: KubeQoSClass) -> String {
        self.rel_of(self.paths.qos_dir(qos))
    }

    /// The unique directory name (`kolo-test-<pid>-<n>`): the kubelet
    /// cgroup root to give the agent.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What to give [`crate::cgroup::Cgroups::detect`] (this tree's
    /// driver, real root, this test's kubelet root).
    pub fn layout_config(&self) -> LayoutConfig {
        LayoutConfig {
            root: CGROUP_ROOT.into(),
            kubelet_root: self.name.clone(),
            driver: Some(self.driver()),
        }
    }

    /// Absolute path of `rel` (relative to the test root) in a hierarchy.
    pub fn abs(&self, subsystem: Subsystem, rel: &str) -> PathBuf {
        let root =
            &self.roots.iter().find(|(s, _)| *s == subsystem).expect("a harness hierarchy").1;
        if rel.is_empty() { root.clone() } else { root.join(rel) }
    }

    /// The relative dir (below the test root) of an agent `CgroupDir`
    /// (which includes the test root's name).
    pub fn rel_of(&self, dir: &crate::cgroup::CgroupDir) -> String {
        let p = dir.as_path().strip_prefix(&self.name).expect("below the test root");
        p.to_str().expect("utf-8").to_string()
    }

    fn mkdir_one(&mut self, rel: &str) -> io::Result<()> {
        let mut done = Vec::new();
        for (s, _) in self.roots.clone() {
            let dir = self.abs(s, rel);
            if done.contains(&dir) {
                continue; // v2: one tree for every subsystem
            }
            done.push(dir.clone());
            if self.version == CgroupVersion::V2 {
                enable_controllers(dir.parent().expect("has a parent"))?;
            }
            // Registered under the lock a signal's clean-up takes, so the
            // clean-up either sees this directory or it is never made.
            let mut live = interrupt::live();
            fs::create_dir(&dir)?;
            if rel.is_empty() {
                live.add_root(&dir);
            }
            drop(live);
            self.created.push(dir.clone());
            if s == Subsystem::Cpuset && self.version == CgroupVersion::V1 {
                // A new v1 cpuset is empty; give it its parent's.
                let parent = dir.parent().expect("has a parent");
                for f in ["cpuset.cpus", "cpuset.mems"] {
                    let v = fs::read_to_string(parent.join(f))?;
                    fs::write(dir.join(f), v.trim())?;
                }
            }
        }
        Ok(())
    }

    /// Creates a pod cgroup (`kubepods/<qos>/pod<uid>`) and returns its
    /// directory relative to the test root.
    pub fn add_pod(&mut self, qos: KubeQoSClass, uid: &str) -> String {
        let dir = self.paths.pod_dir(qos, uid).expect("valid test uid");
        let rel = self.rel_of(&dir);
        self.mkdir_one(&rel).unwrap_or_else(|e| panic!("creating {rel}: {e}"));
        rel
    }

    /// The directory (relative to the test root) of a pod's cgroup.
    pub fn pod_rel(&self, qos: KubeQoSClass, uid: &str) -> String {
        self.rel_of(&self.paths.pod_dir(qos, uid).expect("valid test uid"))
    }

    /// Creates a container cgroup below a pod's and returns its relative
    /// directory. `id` is the bare ID (a containerd container's).
    pub fn add_container(&mut self, pod_rel: &str, id: &str) -> String {
        let rel = self.container_rel(pod_rel, id);
        self.mkdir_one(&rel).unwrap_or_else(|e| panic!("creating {rel}: {e}"));
        rel
    }

    /// Creates pod `n` (UID [`test_uid`]`(n)`) with one container `main`
    /// (ID [`test_container_id`]`(n)`) and returns its [`AgentPod`] — named
    /// `name`, of QoS class `qos` — and the container's directory, for
    /// [`TestCgroups::spawn`].
    pub fn add_single_container_pod(
        &mut self,
        n: u64,
        name: &str,
        qos: QoSClass,
        kube_qos: KubeQoSClass,
    ) -> (AgentPod, String) {
        let (uid, id) = (test_uid(n), test_container_id(n));
        let pod_rel = self.add_pod(kube_qos, &uid);
        let rel = self.add_container(&pod_rel, &id);
        let mut pod = agent_pod(&uid, kube_qos, &[("main".into(), format!("containerd://{id}"))]);
        pod.id.name = name.into();
        pod.qos = qos;
        (pod, rel)
    }

    /// Creates `pods` burstable pods with `containers` containers each
    /// (no processes) and returns their [`AgentPod`]s (for footprint
    /// measurements).
    pub fn populate(&mut self, pods: usize, containers: usize) -> Vec<AgentPod> {
        (0..pods)
            .map(|p| {
                let uid = test_uid(p as u64);
                let pod_rel = self.add_pod(KubeQoSClass::Burstable, &uid);
                let ids: Vec<String> =
                    (0..containers).map(|c| test_container_id((p * 100 + c) as u64)).collect();
                for id in &ids {
                    self.add_container(&pod_rel, id);
                }
                let names: Vec<(String, String)> = ids
                    .iter()
                    .enumerate()
                    .map(|(c, id)| (format!("c{c}"), format!("containerd://{id}")))
                    .collect();
                agent_pod(&uid, KubeQoSClass::Burstable, &names)
            })
            .collect()
    }

    /// Starts a process in the cgroup `rel` of every harness hierarchy
    /// (the process moves itself in before it does anything, so all its
    /// memory is charged there) and waits until it is ready (for
    /// [`Workload::Memory`]: until the memory is touched). Returns its pid.
    pub fn spawn(&mut self, rel: &str, workload: Workload) -> io::Result<u32> {
        // The workload shell, started in `rel` by `command_in`.
        let mut cmd = self.command_in(rel, "/bin/sh");
        let script = match workload {
            Workload::Spin => "echo ready; while :; do :; done".to_string(),
            Workload::SpinOnResume => "echo ready; kill -STOP $$; while :; do :; done".to_string(),
            Workload::Sleep => "echo ready; exec sleep 3600".to_string(),
            Workload::Memory { mib } if python().is_none() => format!(
                "x=$(head -c {} /dev/zero | tr '\\000' a); echo ready; while :; do sleep 3600; done",
                mib << 20
            ),
            Workload::Memory { mib } => {
                let python = python().ok_or_else(|| io::Error::other("python3 not found"))?;
                cmd.env("KOLO_PY", python).env(
                    "KOLO_PY_CODE",
                    format!(
                        "import sys, time\nb = b'\\x01' * ({mib} << 20)\n{MLOCK}sys.stdout.write('ready\\n')\nsys.stdout.flush()\ntime.sleep(3600)\n"
                    ),
                );
                r#"exec "$KOLO_PY" -c "$KOLO_PY_CODE""#.to_string()
            }
        };
        cmd.arg("-c").arg(script);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut live = interrupt::live();
        let mut child = cmd.spawn()?;
        let pid = child.id();
        live.add_pid(pid);
        drop(live);
        let stdout = child.stdout.take().expect("piped");
        self.children.push(child);
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) if line.trim() == "ready" && workload == Workload::SpinOnResume => {
                wait_stopped(pid).map(|()| pid)
            }
            Ok(line) if line.trim() == "ready" => Ok(pid),
            Ok(line) => {
                Err(io::Error::other(format!("{workload:?} (pid {pid}) did not start: {line:?}")))
            }
            Err(_) => {
                Err(io::Error::other(format!("{workload:?} (pid {pid}) not ready after 30 s")))
            }
        }
    }

    /// The cgroup of the node's own daemons, `system`, beside `kubepods`
    /// at the default CPU weight (1024), with `kubepods` at the weight
    /// the kubelet gives it (1024 per CPU): a node's shape. Created on the
    /// first call; returns its relative path.
    ///
    /// Run an agent under test here ([`TestCgroups::command_in`]), not in
    /// the caller's cgroup: the test root has the largest `cpu.shares`
    /// (to shield measurements from compiles), so a process outside it
    /// has 1/256 of the weight of the test's pods, and while they fill
    /// every CPU its wake-ups wait tens of milliseconds — a delay no
    /// node gives its agent.
    pub fn system_cgroup(&mut self) -> io::Result<&'static str> {
        const SYSTEM: &str = "system";
        if !self.abs(Subsystem::Cpu, SYSTEM).exists() {
            let cpus = thread::available_parallelism().map_or(1, |n| n.get()) as i64;
            let kubepods = self.qos_rel(KubeQoSClass::Guaranteed);
            self.write_resource(&kubepods, Resource::CpuShares, Value::Int(cpus * 1024))?;
            self.mkdir_one(SYSTEM)?;
        }
        Ok(SYSTEM)
    }

    /// A command that runs `program` in the cgroup `rel` of every harness
    /// hierarchy: a shell moves itself in, then `exec`s the program, so
    /// the program is there from its first instruction. Add its arguments
    /// and spawn it as usual; kill it before the `TestCgroups` is dropped
    /// (a cgroup with a process in it cannot be removed).
    pub fn command_in(&self, rel: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let dirs: Vec<PathBuf> = CONTROLLERS.iter().map(|s| self.abs(*s, rel)).collect();
        let procs: Vec<String> =
            unique(dirs.iter()).map(|d| d.join("cgroup.procs").display().to_string()).collect();
        let mut cmd = Command::new("/bin/sh");
        cmd.env("KOLO_CGROUP_PROCS", procs.join(":"))
            .arg("-c")
            .arg(
                r#"IFS=:; for f in $KOLO_CGROUP_PROCS; do echo $$ > "$f" || exit 1; done; unset IFS KOLO_CGROUP_PROCS; exec "$@""#,
            )
            .arg("sh")
            .arg(program);
        cmd
    }

    /// Starts a [`Workload::SpinOnResume`] process (`SIGCONT`).
    pub fn resume(&self, pid: u32) -> io::Result<()> {
        let status = Command::new("kill").args(["-CONT", &pid.to_string()]).status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill -CONT {pid}: {status}")))
        }
    }

    /// Kills a process [`TestCgroups::spawn`] started (and reaps it), so
    /// its cgroup can be removed or another process measured alone.
    pub fn kill(&mut self, pid: u32) {
        if let Some(i) = self.children.iter().position(|c| c.id() == pid) {
            let mut child = self.children.swap_remove(i);
            let _ = child.kill();
            let _ = child.wait();
            interrupt::live().remove_pid(pid);
        }
    }

    /// Reads a file of the test tree.
    pub fn read(&self, subsystem: Subsystem, rel: &str, file: &str) -> io::Result<String> {
        fs::read_to_string(self.abs(subsystem, rel).join(file)).map(|s| s.trim().to_string())
    }

    /// Writes a file of the test tree.
    pub fn write(
        &self,
        subsystem: Subsystem,
        rel: &str,
        file: &str,
        value: &str,
    ) -> io::Result<()> {
        fs::write(self.abs(subsystem, rel).join(file), value)
    }

    /// Writes a resource of the test tree: `value` in the v1 domain
    /// (shares, µs, bytes; [`Value::Max`] for unlimited), converted to
    /// what this version's file takes (`cpu.weight`, `cpu.max`, ...).
    pub fn write_resource(&self, rel: &str, resource: Resource, value: Value) -> io::Result<()> {
        let file = resource.file(self.version).ok_or_else(|| {
            io::Error::other(format!("{} has no cgroup {} file", resource.name(), self.version))
        })?;
        let path = self.abs(resource.subsystem(), rel).join(file);
        let current = fs::read_to_string(&path).unwrap_or_default();
        let value = resource.to_file_value(self.version, value);
        fs::write(&path, resource.render(self.version, &value, &current))
    }

    /// Reads a resource of the test tree, converted back to the v1 domain
    /// (`cpu.weight` as shares, `max` as [`Value::Max`], the quota field of
    /// `cpu.max`, ...).
    pub fn read_resource(&self, rel: &str, resource: Resource) -> io::Result<Value> {
        let file = resource.read_file(self.version).ok_or_else(|| {
            io::Error::other(format!("{} has no cgroup {} file", resource.name(), self.version))
        })?;
        let content = fs::read_to_string(self.abs(resource.subsystem(), rel).join(file))?;
        let value = resource.parse_file(self.version, &content).map_err(io::Error::other)?;
        Ok(resource.from_file_value(self.version, value))
    }

    /// The container directory below `pod_rel` (relative, not created).
    pub fn container_rel(&self, pod_rel: &str, id: &str) -> String {
        let pod = CgroupDir::parse(&format!("{}/{pod_rel}", self.name)).expect("a valid pod dir");
        let id = ContainerId::parse(&format!("containerd://{id}")).expect("a valid container ID");
        self.rel_of(&self.paths.container_dir(&pod, &id).expect("containerd has a scope prefix"))
    }

    /// Every cgroup directory created so far (all hierarchies), in creation
    /// order.
    pub fn created(&self) -> &[PathBuf] {
        &self.created
    }

    /// Kills every process started so far and waits for it.
    pub fn kill_all(&mut self) {
        for mut child in self.children.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
            interrupt::live().remove_pid(child.id());
        }
    }
}

impl Drop for TestCgroups {
    fn drop(&mut self) {
        self.kill_all();
        let mut problems = Vec::new();
        // Anything else that ended up in our cgroups (a grandchild).
        for dir in self.created.iter().rev() {
            kill_procs(dir);
        }
        for dir in self.created.iter().rev() {
            if let Err(e) = rmdir_retry(dir) {
                problems.push(format!("{}: {e}", dir.display()));
            }
        }
        if !problems.is_empty() {
            eprintln!("kolo test harness: could not remove {problems:?}");
        }
        let roots: Vec<PathBuf> = self.roots.iter().map(|(_, root)| root.clone()).collect();
        interrupt::live().remove_roots(&roots);
    }
}

/// The v1 hierarchy of each harness controller.
fn v1_mounts(layout: &Layout) -> Result<Vec<(Subsystem, PathBuf)>, String> {
    CONTROLLERS
        .iter()
        .map(|s| {
            let dir = layout.hierarchy(*s).ok_or_else(|| {
                format!("no cgroup v1 {} hierarchy under {CGROUP_ROOT}", s.name())
            })?;
            Ok((*s, dir.to_path_buf()))
        })
        .collect()
}

/// The v2 tree for every harness controller, once its root offers the
/// controllers the harness needs in its subtree.
fn v2_mounts(root: &Path) -> Result<Vec<(Subsystem, PathBuf)>, String> {
    let offered = fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
    let missing: Vec<&str> = V2_CONTROLLERS
        .into_iter()
        .filter(|c| !offered.split_whitespace().any(|o| o == *c))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the cgroup v2 tree at {} does not offer {missing:?} (cgroup.controllers: {:?})",
            root.display(),
            offered.trim()
        ));
    }
    enable_controllers(root)
        .map_err(|e| format!("cannot enable {V2_CONTROLLERS:?} in {}: {e}", root.display()))?;
    Ok(CONTROLLERS.iter().map(|s| (*s, root.to_path_buf())).collect())
}

/// Enables the harness's v2 controllers for `dir`'s children (a no-op when
/// they are on).
fn enable_controllers(dir: &Path) -> io::Result<()> {
    let file = dir.join("cgroup.subtree_control");
    let on = fs::read_to_string(&file)?;
    let want: Vec<String> = V2_CONTROLLERS
        .iter()
        .filter(|c| !on.split_whitespace().any(|o| o == **c))
        .map(|c| format!("+{c}"))
        .collect();
    if want.is_empty() { Ok(()) } else { fs::write(&file, want.join(" ")) }
}

/// Each path once, in first-seen order.
fn unique<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> impl Iterator<Item = &'a PathBuf> {
    let mut seen: Vec<&PathBuf> = Vec::new();
    paths.filter(move |p| {
        let new = !seen.contains(p);
        if new {
            seen.push(p);
        }
        new
    })
}

/// Kills the processes listed in a cgroup and waits (≤ 5 s) until it is
/// empty.
fn kill_procs(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pids: Vec<String> = fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if pids.is_empty() || Instant::now() > deadline {
            return;
        }
        let _ = Command::new("kill").arg("-9").args(&pids).stderr(Stdio::null()).status();
        thread::sleep(Duration::from_millis(20));
    }
}

fn rmdir_retry(dir: &Path) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Removes `kolo-test-<pid>-*` trees of test processes that no longer
/// exist (a test binary killed before its guards ran).
fn remove_stale(mount: &Path) {
    let Ok(entries) = fs::read_dir(mount) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("kolo-test-")) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        remove_tree(&entry.path());
    }
}

fn remove_tree(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    kill_procs(dir);
    let _ = rmdir_retry(dir);
}

/// The python3 interpreter (resolved once, past any pyenv shim).
fn python() -> Option<&'static str> {
    static PY: OnceLock<Option<String>> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()?;
        let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !path.is_empty()).then_some(path)
    })
    .as_deref()
}

/// Python lines locking the memory allocated so far (`mlockall(MCL_CURRENT)`),
/// warning on stderr where that fails (no ctypes, no `CAP_IPC_LOCK`).
const MLOCK: &str = "try:\n    import ctypes, os\n    if ctypes.CDLL(None, use_errno=True).mlockall(1) != 0:\n        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\nexcept Exception as e:\n    sys.stderr.write('kolo sandbox: the memory is not locked (%s); swap may shrink it\\n' % e)\n";

/// Whether [`Workload::Memory`] can run here.
pub fn have_python() -> bool {
    python().is_some()
}

/// Prints a loud skip notice (tests then return early). Written to the
/// process's stderr directly, past the test harness's output capture, so it
/// shows without `--nocapture`.
pub fn skip(test: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(io::stderr(), "\n*** SKIPPED {test}: {reason} ***");
}

/// A deterministic, valid pod UID.
pub fn test_uid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// A deterministic container ID (64 hex digits, like containerd's).
pub fn test_container_id(n: u64) -> String {
    format!("{n:064x}")
}

/// A running pod for the collector.
pub fn agent_pod(uid: &str, qos: KubeQoSClass, containers: &[(String, String)]) -> AgentPod {
    AgentPod {
        id: kolo_core::PodRef {
            namespace: "kolo-test".into(),
            name: format!("pod-{uid}"),
            uid: uid.to_string(),
        },
        kube_qos: qos,
        qos: QoSClass::LS,
        qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
        priority_class: PriorityClass::Prod,
        requests: ResourceVector::default(),
        limits: ResourceVector::default(),
        terminated: false,
        deleting: false,
        created: None,
        containers: containers
            .iter()
            .map(|(name, id)| ContainerRef { name: name.clone(), id: Some(id.clone()) })
            .collect(),
    }
}

/// Time the process has run on a CPU, ns (`/proc/<pid>/schedstat`): the
/// independent reference for CPU measurements.
pub fn cpu_time_ns(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The process's resident anonymous memory, bytes (`RssAnon` of
/// `/proc/<pid>/status`).
pub fn rss_anon(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("RssAnon:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// A `kind: List` of running Pod objects (JSON) for the given pods, as a
/// pods file for `kolo agent --standalone --pods`: name, namespace, UID,
/// Kubernetes QoS class and each container's runtime ID, which is what the
/// agent needs to find their cgroups.
pub fn pods_file(pods: &[AgentPod]) -> String {
    let items: Vec<serde_json::Value> = pods
        .iter()
        .map(|p| {
            // The pod's requests go on its first container.
            let mut requests = serde_json::Map::new();
            if let Some(cpu) = p.requests.get(ResourceName::Cpu) {
                requests.insert("cpu".into(), format!("{cpu}m").into());
            }
            if let Some(memory) = p.requests.get(ResourceName::Memory) {
                requests.insert("memory".into(), memory.to_string().into());
            }
            let containers: Vec<serde_json::Value> = p
                .containers
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let mut c = serde_json::json!({"name": c.name, "image": "none"});
                    if i == 0 && !requests.is_empty() {
                        c["resources"] = serde_json::json!({"requests": requests});
                    }
                    c
                })
                .collect();
            let statuses: Vec<serde_json::Value> = p
                .containers
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "name": c.name, "containerID": c.id, "image": "none", "imageID": "",
                        "ready": true, "restartCount": 0
                    })
                })
                .collect();
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": p.id.name, "namespace": p.id.namespace, "uid": p.id.uid,
                             "labels": {"koordinator.sh/qosClass": p.qos.as_str()}},
                "spec": {"containers": containers},
                "status": {"phase": "Running", "qosClass": p.kube_qos.as_str(),
                           "containerStatuses": statuses}
            })
        })
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// A process's state letter (`R`, `S`, `T` stopped, `Z` zombie, ...) from
/// `/proc/<pid>/stat`, where it follows the command name in parentheses;
/// `None` once the process is gone.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Waits (up to 5 s) until `pid` is stopped (state `T`).
fn wait_stopped(pid: u32) -> io::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match process_state(pid) {
            Some('T') => return Ok(()),
            None => return Err(io::Error::other(format!("pid {pid} exited instead of stopping"))),
            Some(_) => {}
        }
        if start.elapsed() > Duration::from_secs(5) {
            return Err(io::Error::other(format!("pid {pid} did not stop itself within 5 s")));
        }
        thread::sleep(Duration::from_millis(1));
    }
}
