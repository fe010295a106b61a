//! The names of the elastic quota tree: the labels and annotations on
//! `ElasticQuota` objects (`quota.scheduling.koordinator.sh/*`) and the
//! special quotas. The pod labels are `kolo_api::names::label::QUOTA_NAME`
//! and `QUOTA_PREEMPTIBLE`.
//!
//! Kept here rather than in `kolo_api::names` for now; they belong there
//! once the manager's quota controller needs them too.

/// The implicit root of every quota tree: its runtime is the cluster
/// total less what the system and default quotas use.
pub const ROOT_QUOTA: &str = "koordinator-root-quota";
/// The quota of system pods; its runtime is reported as its max.
pub const SYSTEM_QUOTA: &str = "koordinator-system-quota";
/// The quota of pods that map to no other; its runtime is reported as
/// its max.
pub const DEFAULT_QUOTA: &str = "koordinator-default-quota";

/// Label: `"true"` makes the quota a parent (it may have children).
pub const IS_PARENT: &str = "quota.scheduling.koordinator.sh/is-parent";
/// Label: the parent quota's name; empty or absent means [`ROOT_QUOTA`].
pub const PARENT: &str = "quota.scheduling.koordinator.sh/parent";
/// Label: only `"false"` stops the quota lending its unused min.
pub const ALLOW_LENT_RESOURCE: &str = "quota.scheduling.koordinator.sh/allow-lent-resource";
/// Label: marks the root of a separate tree.
pub const IS_ROOT: &str = "quota.scheduling.koordinator.sh/is-root";
/// Label: the tree a quota belongs to.
pub const TREE_ID: &str = "quota.scheduling.koordinator.sh/tree-id";
/// Label: the quota stays out of the default tree.
pub const IGNORE_DEFAULT_TREE: &str = "quota.scheduling.koordinator.sh/ignore-default-tree";
/// Label: skip the webhook's min-sum checks on update.
pub const ALLOW_FORCE_UPDATE: &str = "quota.scheduling.koordinator.sh/allow-force-update";

/// Annotation: the shared weight, a JSON ResourceList; absent or all
/// zero means the quota's max.
pub const SHARED_WEIGHT: &str = "quota.scheduling.koordinator.sh/shared-weight";
/// Annotation: a JSON list of namespaces whose pods map to the quota.
pub const NAMESPACES: &str = "quota.scheduling.koordinator.sh/namespaces";
/// Annotation (controller-written): the runtime, a JSON ResourceList.
pub const RUNTIME: &str = "quota.scheduling.koordinator.sh/runtime";
/// Annotation (controller-written): the request, a JSON ResourceList.
pub const REQUEST: &str = "quota.scheduling.koordinator.sh/request";
/// Annotation (controller-written): the children's request.
pub const CHILD_REQUEST: &str = "quota.scheduling.koordinator.sh/child-request";
/// Annotation (controller-written): the guaranteed resources.
pub const GUARANTEED: &str = "quota.scheduling.koordinator.sh/guaranteed";
/// Annotation (controller-written): the allocated resources.
pub const ALLOCATED: &str = "quota.scheduling.koordinator.sh/allocated";
/// Annotation (controller-written): what non-preemptible pods request.
pub const NON_PREEMPTIBLE_REQUEST: &str = "quota.scheduling.koordinator.sh/non-preemptible-request";
/// Annotation (controller-written): what non-preemptible pods use.
pub const NON_PREEMPTIBLE_USED: &str = "quota.scheduling.koordinator.sh/non-preemptible-used";
/// Annotation: resource keys whose max is checked strictly.
pub const MAX_STRICT_CHECK_RESOURCE_KEYS: &str =
    "quota.scheduling.koordinator.sh/max-strict-check-resource-keys";
