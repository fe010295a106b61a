//! `VolumeRestrictions`: volumes two pods may not use at once
//! (kube-scheduler's plugin).
//!
//! * **In-line disks** ([`disks`]): a pod whose GCE PD, AWS EBS, iSCSI or
//!   RBD volume is already used on a node by another pod, in a way
//!   kube-scheduler v1.20 calls a conflict, is kept off that node
//!   (`node(s) had no available disk`; a pod going away frees it, and
//!   preemption counts its victims' disks as freed).
//! * **ReadWriteOncePod claims**: a pod whose claim has the
//!   `ReadWriteOncePod` access mode while another pod placed in the
//!   cluster uses that claim is unschedulable at PreFilter, with a reason
//!   naming the claim and the pod using it (kube-scheduler 1.22+, which
//!   says `node has pod using PersistentVolumeClaim with the same name and
//!   ReadWriteOncePod access mode`).
//!
//! [`plugin`] is the framework adapter: the pods of each node with disks,
//! the users of each claim, and the claims, kept from cluster events.

pub mod disks;
pub mod plugin;

pub use disks::{Disk, any_conflict};
pub use plugin::{DISK_CONFLICT, NAME, VolumeRestrictions};
