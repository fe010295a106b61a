//! Well-known names: the labels, annotations and extended resources that
//! Koordinator and Katalyst put on pods and nodes.
//!
//! kolo reads and writes exactly these spellings so that a cluster running
//! either system can switch to kolo without touching its workloads. Each
//! constant says what its value means and in which unit.

/// Extended resources (keys of `resources.requests`, `resources.limits`,
/// `status.allocatable`).
pub mod resource {
    /// Batch (overcommitted, reclaimed-from-LS) CPU. **Milli-cores as a plain
    /// integer**: `kubernetes.io/batch-cpu: 25000` is 25 cores.
    pub const BATCH_CPU: &str = "kubernetes.io/batch-cpu";
    /// Batch memory, in bytes.
    pub const BATCH_MEMORY: &str = "kubernetes.io/batch-memory";
    /// Deprecated Koordinator alias of [`BATCH_CPU`] (same unit).
    pub const BATCH_CPU_DEPRECATED: &str = "koordinator.sh/batch-cpu";
    /// Deprecated Koordinator alias of [`BATCH_MEMORY`] (same unit).
    pub const BATCH_MEMORY_DEPRECATED: &str = "koordinator.sh/batch-memory";
    /// Mid-tier CPU (prod-reclaimable, for `koord-mid` pods). Milli-cores as a
    /// plain integer.
    pub const MID_CPU: &str = "kubernetes.io/mid-cpu";
    /// Mid-tier memory, in bytes.
    pub const MID_MEMORY: &str = "kubernetes.io/mid-memory";
    /// Katalyst's reclaimed CPU for `reclaimed_cores` pods. Milli-cores
    /// (`2k` = 2 cores). kolo treats it as an alias of [`BATCH_CPU`].
    pub const KATALYST_RECLAIMED_MILLICPU: &str =
        "resource.katalyst.kubewharf.io/reclaimed_millicpu";
    /// Katalyst's reclaimed memory, in bytes. Alias of [`BATCH_MEMORY`].
    pub const KATALYST_RECLAIMED_MEMORY: &str = "resource.katalyst.kubewharf.io/reclaimed_memory";
    /// The older spelling of [`KATALYST_RECLAIMED_MILLICPU`] still found in
    /// Katalyst's tutorials and examples.
    pub const KATALYST_RECLAIMED_MILLICPU_LEGACY: &str = "katalyst.kubewharf.io/reclaimed_millicpu";
    /// The older spelling of [`KATALYST_RECLAIMED_MEMORY`].
    pub const KATALYST_RECLAIMED_MEMORY_LEGACY: &str = "katalyst.kubewharf.io/reclaimed_memory";
    /// Katalyst network bandwidth resource.
    pub const KATALYST_NET_BANDWIDTH: &str = "resource.katalyst.kubewharf.io/net_bandwidth";
    /// Katalyst memory bandwidth resource.
    pub const KATALYST_MEMORY_BANDWIDTH: &str = "resource.katalyst.kubewharf.io/memory_bandwidth";
    /// Koordinator GPU core percentage (100 = one whole GPU).
    pub const KOORD_GPU_CORE: &str = "koordinator.sh/gpu-core";
    /// Koordinator GPU memory, in bytes.
    pub const KOORD_GPU_MEMORY: &str = "koordinator.sh/gpu-memory";
    /// Koordinator GPU memory as a percentage of one GPU.
    pub const KOORD_GPU_MEMORY_RATIO: &str = "koordinator.sh/gpu-memory-ratio";
    /// Koordinator whole-GPU shorthand (100 per GPU).
    pub const KOORD_GPU: &str = "koordinator.sh/gpu";
    /// Koordinator RDMA resource.
    pub const KOORD_RDMA: &str = "koordinator.sh/rdma";

    /// Every alias that means "batch CPU", in the order kolo prefers them. A
    /// pod may request any one; kolo counts them as the same resource.
    pub const BATCH_CPU_ALIASES: [&str; 4] = [
        BATCH_CPU,
        BATCH_CPU_DEPRECATED,
        KATALYST_RECLAIMED_MILLICPU,
        KATALYST_RECLAIMED_MILLICPU_LEGACY,
    ];
    /// Every alias that means "batch memory" (see [`BATCH_CPU_ALIASES`]).
    pub const BATCH_MEMORY_ALIASES: [&str; 4] = [
        BATCH_MEMORY,
        BATCH_MEMORY_DEPRECATED,
        KATALYST_RECLAIMED_MEMORY,
        KATALYST_RECLAIMED_MEMORY_LEGACY,
    ];
}

/// Pod and node labels.
pub mod label {
    /// Koordinator QoS class of a pod: `LSE`, `LSR`, `LS`, `BE` or `SYSTEM`.
    pub const QOS_CLASS: &str = "koordinator.sh/qosClass";
    /// Koordinator priority class of a pod: `koord-prod`, `koord-mid`,
    /// `koord-batch` or `koord-free`. Wins over `spec.priority`.
    pub const PRIORITY_CLASS: &str = "koordinator.sh/priority-class";
    /// Sub-priority inside a priority class (an `int32`).
    pub const SUB_PRIORITY: &str = "koordinator.sh/priority";
    /// `"true"` opts a pod into eviction by the node agent.
    pub const EVICTION_ENABLED: &str = "koordinator.sh/eviction-enabled";
    /// `"true"`: the admission webhook mutates the pod on update too.
    pub const MUTATING_UPDATE: &str = "pod.koordinator.sh/mutating-update";
    /// Elastic quota a pod is charged to.
    pub const QUOTA_NAME: &str = "quota.scheduling.koordinator.sh/name";
    /// `"false"` marks a pod non-preemptible inside its quota.
    pub const QUOTA_PREEMPTIBLE: &str = "quota.scheduling.koordinator.sh/preemptible";
    /// PodGroup (gang) a pod belongs to.
    pub const POD_GROUP: &str = "pod-group.scheduling.sigs.k8s.io";
    /// Deprecated lightweight gang name label.
    pub const POD_GROUP_NAME_DEPRECATED: &str = "pod-group.scheduling.sigs.k8s.io/name";
    /// Deprecated lightweight gang min-available label.
    pub const POD_GROUP_MIN_AVAILABLE_DEPRECATED: &str =
        "pod-group.scheduling.sigs.k8s.io/min-available";
    /// Pod is not matched by reservations.
    pub const RESERVATION_IGNORED: &str = "scheduling.koordinator.sh/reservation-ignored";
    /// Ordering hint among reservations (a unix-millisecond timestamp).
    pub const RESERVATION_ORDER: &str = "scheduling.koordinator.sh/reservation-order";
    /// The pod must be placed on a pre-allocated reservation.
    pub const PRE_ALLOCATION_REQUIRED: &str = "scheduling.koordinator.sh/pre-allocation-required";
    /// Core-scheduling cookie group of a pod.
    pub const CORE_SCHED_GROUP_ID: &str = "koordinator.sh/core-sched-group-id";
    /// Core-scheduling policy: `exclusive` or `none`.
    pub const CORE_SCHED_POLICY: &str = "koordinator.sh/core-sched-policy";
    /// `"true"` makes the runtime proxy skip the hook server for this pod.
    pub const RUNTIME_PROXY_SKIP_HOOKSERVER: &str = "runtimeproxy.koordinator.sh/skip-hookserver";
    /// Profile label: the object is managed by a controller.
    pub const CONTROLLER_MANAGED: &str = "config.koordinator.sh/controller-managed";

    /// Node label: fraction (float, `0.7` = 70%) of CPU that may be reclaimed
    /// for batch on this node; overrides the cluster config.
    pub const NODE_CPU_RECLAIM_RATIO: &str = "node.koordinator.sh/cpu-reclaim-ratio";
    /// Node label: memory reclaim fraction, like [`NODE_CPU_RECLAIM_RATIO`].
    pub const NODE_MEMORY_RECLAIM_RATIO: &str = "node.koordinator.sh/memory-reclaim-ratio";
    /// Node label: fraction of CPU statically reserved from mid.
    pub const NODE_MID_STATIC_CPU_RESERVED_RATIO: &str =
        "node.koordinator.sh/mid-static-cpu-reserved-ratio";
    /// Node label: fraction of memory statically reserved from mid.
    pub const NODE_MID_STATIC_MEMORY_RESERVED_RATIO: &str =
        "node.koordinator.sh/mid-static-memory-reserved-ratio";
    /// Node label: default CPU bind policy for LSR/LSE pods.
    pub const NODE_CPU_BIND_POLICY: &str = "node.koordinator.sh/cpu-bind-policy";
    /// Node label: NUMA allocation strategy (`MostAllocated` / `LeastAllocated`).
    pub const NODE_NUMA_ALLOCATE_STRATEGY: &str = "node.koordinator.sh/numa-allocate-strategy";
    /// Node label: NUMA topology policy of the node.
    pub const NODE_NUMA_TOPOLOGY_POLICY: &str = "node.koordinator.sh/numa-topology-policy";
}

/// Pod and node annotations.
pub mod annotation {
    /// Katalyst QoS level of a pod: `dedicated_cores`, `shared_cores`,
    /// `reclaimed_cores` or `system_cores`. An **annotation**, unlike
    /// Koordinator's QoS label.
    pub const KATALYST_QOS_LEVEL: &str = "katalyst.kubewharf.io/qos_level";
    /// Katalyst memory enhancements (JSON object of strings): `numa_binding`,
    /// `numa_exclusive`, `oom_priority`, `rss_overuse_threshold`.
    pub const KATALYST_MEMORY_ENHANCEMENT: &str = "katalyst.kubewharf.io/memory_enhancement";
    /// Katalyst CPU enhancements (JSON object of strings): `cpuset_pool`,
    /// `numa_share`, `suppression_tolerance_rate`, `cpu_burst_policy`, ...
    pub const KATALYST_CPU_ENHANCEMENT: &str = "katalyst.kubewharf.io/cpu_enhancement";
    /// Katalyst network enhancements (JSON object of strings).
    pub const KATALYST_NETWORK_ENHANCEMENT: &str = "katalyst.kubewharf.io/network_enhancement";
    /// Katalyst: the number of NUMA nodes a numa-binding pod must span.
    pub const KATALYST_NUMA_NUMBER: &str = "katalyst.kubewharf.io/numa_number";
    /// Katalyst: explicit NUMA id set; overrides [`KATALYST_NUMA_NUMBER`].
    pub const KATALYST_NUMA_IDS: &str = "katalyst.kubewharf.io/numa_ids";
    /// Katalyst: the NUMA id a numa-binding pod landed on (written back).
    pub const KATALYST_NUMA_BIND_RESULT: &str = "katalyst.kubewharf.io/numa_bind_result";
    /// Katalyst: `"true"` turns a soft eviction into a notification.
    pub const KATALYST_SOFT_EVICT_NOTIFY: &str = "katalyst.kubewharf.io/pod_soft_evict_notify";

    /// Koordinator: requested CPU bind / exclusive policy of a pod (JSON).
    pub const RESOURCE_SPEC: &str = "scheduling.koordinator.sh/resource-spec";
    /// Koordinator: the scheduler's allocation result (cpuset, NUMA resources; JSON).
    pub const RESOURCE_STATUS: &str = "scheduling.koordinator.sh/resource-status";
    /// Koordinator: NUMA topology policy requested by a pod (JSON).
    pub const NUMA_TOPOLOGY_SPEC: &str = "scheduling.koordinator.sh/numa-topology-spec";
    /// Koordinator: per-pod load-aware thresholds (JSON).
    pub const USAGE_THRESHOLDS: &str = "scheduling.koordinator.sh/usage-thresholds";
    /// Koordinator: per-pod load estimation scaling factors (JSON, percent).
    pub const LOAD_ESTIMATED_SCALING_FACTORS: &str =
        "scheduling.koordinator.sh/load-estimated-scaling-factors";
    /// Koordinator: seconds after scheduling during which a pod's load is estimated.
    pub const LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED: &str =
        "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled";
    /// Koordinator: seconds after initialization during which a pod's load is estimated.
    pub const LOAD_ESTIMATED_SECONDS_AFTER_INITIALIZED: &str =
        "scheduling.koordinator.sh/load-estimated-seconds-after-initialized";
    /// Koordinator: devices allocated to a pod (JSON).
    pub const DEVICE_ALLOCATED: &str = "scheduling.koordinator.sh/device-allocated";
    /// Koordinator: device allocation hints (JSON).
    pub const DEVICE_ALLOCATE_HINT: &str = "scheduling.koordinator.sh/device-allocate-hint";
    /// Koordinator: joint device allocation (JSON).
    pub const DEVICE_JOINT_ALLOCATE: &str = "scheduling.koordinator.sh/device-joint-allocate";
    /// Koordinator: GPU partition spec (JSON).
    pub const GPU_PARTITION_SPEC: &str = "scheduling.koordinator.sh/gpu-partition-spec";
    /// Koordinator: which reservations a pod may use (JSON).
    pub const RESERVATION_AFFINITY: &str = "scheduling.koordinator.sh/reservation-affinity";
    /// Koordinator: the reservation a pod was placed on (JSON).
    pub const RESERVATION_ALLOCATED: &str = "scheduling.koordinator.sh/reservation-allocated";
    /// Koordinator: options restricting reservation use (JSON).
    pub const RESERVATION_RESTRICTED_OPTIONS: &str =
        "scheduling.koordinator.sh/reservation-restricted-options";
    /// Marks a reserve pod; forbidden on user pods.
    pub const RESERVE_POD: &str = "scheduling.koordinator.sh/reserve-pod";
    /// Descheduler: cost of evicting a pod.
    pub const EVICTION_COST: &str = "scheduling.koordinator.sh/eviction-cost";
    /// `"a:b,c:d,e:"`: replace resource a with b, c with d, erase e.
    pub const REPLACE_RESOURCES: &str = "pod.koordinator.sh/replace-resources";
    /// JSON array of node-agent eviction features allowed to evict the pod.
    pub const EVICTION_POLICY: &str = "koordinator.sh/eviction-policy";
    /// Eviction order among candidates (integer, lower goes first).
    pub const EVICTION_PRIORITY: &str = "koordinator.sh/eviction-priority";
    /// Why a pod was evicted (on a PodMigrationJob).
    pub const EVICT_REASON: &str = "koordinator.sh/evict-reason";
    /// Which plugin triggered an eviction (on a PodMigrationJob).
    pub const EVICT_TRIGGER: &str = "koordinator.sh/evict-trigger";
    /// The controller that created a PodMigrationJob.
    pub const JOB_CREATED_BY: &str = "koordinator.sh/job-created-by";
    /// Per-pod CPU QoS (`{"enable":bool,"groupIdentity":int}`).
    pub const CPU_QOS: &str = "koordinator.sh/cpuQOS";
    /// Per-pod memory QoS (JSON).
    pub const MEMORY_QOS: &str = "koordinator.sh/memoryQOS";
    /// Per-pod blkio QoS (JSON).
    pub const BLKIO_QOS: &str = "koordinator.sh/blkioQOS";
    /// Per-pod CPU burst config (JSON).
    pub const CPU_BURST: &str = "koordinator.sh/cpuBurst";
    /// Profile annotation: do not translate the pod's resources.
    pub const SKIP_UPDATE_RESOURCES: &str = "config.koordinator.sh/skip-update-resources";
    /// Written by the webhook: per-container batch requests/limits (JSON).
    pub const EXTENDED_RESOURCE_SPEC: &str = "node.koordinator.sh/extended-resource-spec";

    /// Gang name.
    pub const GANG_NAME: &str = "gang.scheduling.koordinator.sh/name";
    /// Gang minimum number of members.
    pub const GANG_MIN_AVAILABLE: &str = "gang.scheduling.koordinator.sh/min-available";
    /// Gang waiting time (a Go duration).
    pub const GANG_WAITING_TIME: &str = "gang.scheduling.koordinator.sh/waiting-time";
    /// Gang total number of members.
    pub const GANG_TOTAL_NUMBER: &str = "gang.scheduling.koordinator.sh/total-number";
    /// Gang mode: `Strict` or `NonStrict`.
    pub const GANG_MODE: &str = "gang.scheduling.koordinator.sh/mode";
    /// Gang groups (JSON array of gang ids).
    pub const GANG_GROUPS: &str = "gang.scheduling.koordinator.sh/groups";
    /// Gang timeout flag.
    pub const GANG_TIMEOUT: &str = "gang.scheduling.koordinator.sh/timeout";
    /// Gang match policy.
    pub const GANG_MATCH_POLICY: &str = "gang.scheduling.koordinator.sh/match-policy";

    /// Node: resources reserved from kolo's accounting
    /// (`{"resources":{...},"reservedCPUs":"0-3","applyPolicy":"Default"}`).
    pub const NODE_RESERVATION: &str = "node.koordinator.sh/reservation";
    /// Node: allocatable before amplification.
    pub const NODE_RAW_ALLOCATABLE: &str = "node.koordinator.sh/raw-allocatable";
    /// Node: per-resource amplification ratios (JSON).
    pub const NODE_RESOURCE_AMPLIFICATION_RATIO: &str =
        "node.koordinator.sh/resource-amplification-ratio";
    /// Node: CPU normalization ratio (float, `-1` = none).
    pub const NODE_CPU_NORMALIZATION_RATIO: &str = "node.koordinator.sh/cpu-normalization-ratio";
    /// Node: JSON `ColocationStrategy` overriding the cluster config.
    pub const NODE_COLOCATION_STRATEGY: &str = "node.koordinator.sh/colocation-strategy";
    /// Node: CPU topology (NodeResourceTopology annotation, JSON).
    pub const NODE_CPU_TOPOLOGY: &str = "node.koordinator.sh/cpu-topology";
    /// Node: cpus allocated to pods (NodeResourceTopology annotation, JSON).
    pub const NODE_POD_CPU_ALLOCS: &str = "node.koordinator.sh/pod-cpu-allocs";
    /// Node: shared CPU pools (NodeResourceTopology annotation, JSON).
    pub const NODE_CPU_SHARED_POOLS: &str = "node.koordinator.sh/cpu-shared-pools";
    /// Node: BE shared CPU pools (NodeResourceTopology annotation, JSON).
    pub const NODE_BE_CPU_SHARED_POOLS: &str = "node.koordinator.sh/be-cpu-shared-pools";
    /// Node: extended allocatable before third-party allocations.
    pub const NODE_ORIGIN_EXTENDED_ALLOCATABLE: &str =
        "node.koordinator.sh/originExtendedAllocatable";
    /// Node: resources allocated by third parties.
    pub const NODE_THIRD_PARTY_ALLOCATIONS: &str = "node.koordinator.sh/thirdPartyAllocations";
    /// Node: cpuset reserved for SYSTEM pods (`{"cpuset":"0-1","cpusetExclusive":true}`).
    pub const NODE_SYSTEM_QOS_RESOURCE: &str = "node.koordinator.sh/system-qos-resource";
    /// Node: resctrl configuration.
    pub const NODE_RESCTRL: &str = "node.koordinator.sh/resctrl";
}

/// Priority class names and their `spec.priority` bands.
pub mod priority {
    /// Name of the prod class.
    pub const PROD: &str = "koord-prod";
    /// Name of the mid class.
    pub const MID: &str = "koord-mid";
    /// Name of the batch class.
    pub const BATCH: &str = "koord-batch";
    /// Name of the free class.
    pub const FREE: &str = "koord-free";
}

/// Katalyst QoS level values of [`annotation::KATALYST_QOS_LEVEL`].
pub mod katalyst_level {
    /// Exclusive cores.
    pub const DEDICATED_CORES: &str = "dedicated_cores";
    /// Shared cores (Katalyst's default when the annotation is absent).
    pub const SHARED_CORES: &str = "shared_cores";
    /// Over-committed, reclaimed cores.
    pub const RECLAIMED_CORES: &str = "reclaimed_cores";
    /// Cores for system agents.
    pub const SYSTEM_CORES: &str = "system_cores";
}
