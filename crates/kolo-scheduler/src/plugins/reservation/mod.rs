//! Reservation (Koordinator `pkg/scheduler/plugins/reservation`, spec
//! §9.1): resources held on a node for future owner pods.
//!
//! # How it works
//!
//! * A Reservation is scheduled like a pod: the driver hands it to the
//!   scheduler ([`feed::apply_reservation`]), which turns it into a
//!   *reserve pod* ([`reserve_pod::reserve_pod`], key
//!   `Reservation/<name>`). Pending, the reserve pod is queued and goes
//!   through the ordinary cycle; its bind request is taken by this
//!   plugin's Bind and targets the reservation
//!   ([`BindTarget::Reservation`](crate::binder::BindTarget)). Scheduled,
//!   it is counted on its node and holds `allocatable − allocated` there
//!   against every other pod.
//! * Owner pods ([`owners`]; optionally steered by the
//!   `reservation-affinity` annotation, [`affinity`]) may use what a
//!   reservation still holds. PreFilter picks, per node, the reservation
//!   the pod would use ([`decide`]) and writes a
//!   [`NodeOverlay`](crate::framework::NodeOverlay): the Filter and Score
//!   plugins (NodeResourcesFit and all) then see those nodes *without*
//!   that reserve pod, for this pod only. Score prefers nodes with a
//!   reservation (order label, then most-allocated; weight 5000). Reserve
//!   records the pod's part; PreBind writes
//!   `scheduling.koordinator.sh/reservation-allocated: {"name","uid"}` on
//!   the pod.
//! * Pods labelled `scheduling.koordinator.sh/reservation-ignored: "true"`
//!   see every node without its reserve pods and take from none.
//! * Cheap when unused: with no reserve pod counted anywhere, PreFilter
//!   and PreScore skip every pod after one lock and one annotation
//!   lookup; no overlay is made and the equivalence cache serves as
//!   before. Non-owners of existing reservations are skipped the same way
//!   after a scan of the reservations.
//!
//! # The driver's contract
//!
//! 1. On every Reservation watch event, and again at its expiry
//!    ([`spec::expiry`]): [`feed::apply_reservation`]; on deletion:
//!    [`feed::remove_reservation`]. Owner pods are fed as ordinary pods.
//! 2. A [`BindRequest`](crate::binder::BindRequest) with target
//!    `Reservation { name }` is not a pod binding: write the
//!    reservation's status with `nodeName` = the request's node (through
//!    [`status::next_status`] with `Observed::node`), then report success;
//!    then feed the updated reservation (its reserve pod is now assigned).
//! 3. Write [`status::next_status`] whenever its inputs change: the owners
//!    (pods annotated `reservation-allocated` with the reservation's UID,
//!    not finished), the scheduler's "no node" message for
//!    `Reservation/<name>` (a cycle report), or the time passing its
//!    expiry; then feed the written object again (a `Succeeded` or
//!    `Failed` reservation's reserve pod is forgotten; an `Available`
//!    one's hold shrinks by `status.allocated`).
//! 4. Owner pods are bound as usual; the request's annotations include
//!    `reservation-allocated`.
//!
//! # Deliberate differences from Koordinator
//!
//! * One reservation per node is tried for a pod (the preferred one, see
//!   [`decide`]); Koordinator may fall back to another on the same node.
//! * `status.allocated` is capped per resource at what is reserved (an
//!   owner takes from the reservation first, the rest from the node).
//! * Refused, naming the field, instead of being honoured: pre-allocation
//!   (`preAllocation`, `preAllocationPolicy`), reservation `taints`, the
//!   affinity's `requiredDuringScheduling…` terms and `tolerations`,
//!   `reservation-restricted-options` (ignored: not read), and a
//!   non-integer `reservation-order` label.
//! * Reserve pods are never preemption victims, and never preempt.
//! * A reservation is usable as soon as its reserve pod is counted on a
//!   node (assumed), before its status says `Available`.
//! * Only node-level resources are reserved: cpusets, NUMA and devices a
//!   reserve pod was given are not handed to its owners.
//! * Plugin arguments (`enablePreemption`, GC intervals, …) are not read:
//!   expiry and garbage collection are the driver's, through
//!   [`status::next_status`].

pub mod affinity;
pub mod decide;
pub mod feed;
pub mod owners;
pub mod plugin;
pub mod reserve_pod;
pub mod spec;
pub mod status;
mod tracker;

#[cfg(test)]
mod testing;

pub use plugin::{NAME, ReservationPlugin};
pub use spec::ReservationError;
