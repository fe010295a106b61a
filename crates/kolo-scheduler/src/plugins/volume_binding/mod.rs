//! `VolumeBinding` for pods whose PersistentVolumeClaims are bound: such a
//! pod runs only on nodes its volumes' `spec.nodeAffinity.required` admits
//! (kube-scheduler's plugin, for bound claims).
//!
//! kolo-scheduler binds no volume. A claim that does not exist, is being
//! deleted, is not bound yet (dynamic provisioning, a WaitForFirstConsumer
//! storage class, a binding the PersistentVolume controller has not
//! completed) or is bound to a volume that does not exist makes the pod
//! unschedulable at PreFilter, with a reason naming the claim; a change of
//! any claim or volume ([`EventKinds::VOLUME`]) sends it back to the
//! active queue.
//!
//! * [`claims`]: the claims and volumes, kept from scheduling objects
//!   (VolumeZone and VolumeRestrictions keep them the same way);
//! * [`decide`]: the pure core — the volumes a pod's claims are bound to,
//!   and whether a node fits them;
//! * [`plugin`]: the framework adapter.
//!
//! [`EventKinds::VOLUME`]: crate::framework::EventKinds::VOLUME

pub mod claims;
pub mod decide;
pub mod plugin;

pub use claims::{Claim, Claims, Volume, claim_names, uses_claims};
pub use decide::{ClaimProblem, NODE_CONFLICT, bound_volumes, node_fits};
pub use plugin::{NAME, VolumeBinding};
