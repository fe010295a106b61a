//! The PersistentVolumeClaims and PersistentVolumes the volume plugins
//! read, kept from scheduling objects: per claim whether it is bound and to
//! which volume, per volume where it can be used.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};

use crate::framework::{ObjectEvent, ObjectKind, SchedulingObject};
use crate::plugins::node_affinity::{Required, required_of_selector};

/// The annotation the PersistentVolume controller sets once it has bound a
/// claim (kube-scheduler's `isPVCFullyBound` reads it with
/// `spec.volumeName`).
pub const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";

/// The access mode only one pod in the cluster may use a claim with.
pub const READ_WRITE_ONCE_POD: &str = "ReadWriteOncePod";

/// The node labels VolumeZone compares with a volume's labels (topology,
/// then the legacy failure-domain ones, as kube-scheduler).
pub const ZONE_LABELS: [&str; 4] = [
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
];

/// What the plugins read of one claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// `spec.volumeName`, when set.
    pub volume: Option<Box<str>>,
    /// Bound as kube-scheduler counts it: `spec.volumeName` set and the
    /// [`BIND_COMPLETED`] annotation present.
    pub bound: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `spec.accessModes` has [`READ_WRITE_ONCE_POD`].
    pub read_write_once_pod: bool,
}

impl Claim {
    /// Reads a claim.
    pub fn of(pvc: &PersistentVolumeClaim) -> Claim {
        let spec = pvc.spec.as_ref();
        let volume = spec.and_then(|s| s.volume_name.as_deref()).filter(|v| !v.is_empty());
        let annotated =
            pvc.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(BIND_COMPLETED));
        let modes = spec.and_then(|s| s.access_modes.as_ref());
        Claim {
            volume: volume.map(Into::into),
            bound: volume.is_some() && annotated,
            deleting: pvc.metadata.deletion_timestamp.is_some(),
            read_write_once_pod: modes
                .is_some_and(|m| m.iter().any(|mode| mode == READ_WRITE_ONCE_POD)),
        }
    }
}

/// What the plugins read of one volume.
#[derive(Debug, Clone, PartialEq)]
pub struct Volume {
    /// Its name.
    pub name: Box<str>,
    /// `spec.nodeAffinity.required`, compiled; `None` when absent (any
    /// node).
    pub affinity: Option<Required>,
    /// Its [`ZONE_LABELS`] labels: (label, the zones or regions it allows,
    /// `__`-separated in the value as kube's `LabelZonesToSet`).
    pub zones: Vec<(&'static str, Vec<Box<str>>)>,
}

impl Volume {
    /// Reads a volume.
    pub fn of(pv: &PersistentVolume) -> Volume {
        let affinity = pv
            .spec
            .as_ref()
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
            .map(required_of_selector);
        let labels = pv.metadata.labels.as_ref();
        let zones = ZONE_LABELS
            .iter()
            .filter_map(|&key| {
                let value = labels?.get(key)?;
                Some((key, value.split("__").map(Into::into).collect()))
            })
            .collect();
        Volume { name: pv.metadata.name.as_deref().unwrap_or_default().into(), affinity, zones }
    }
}

/// Every claim (by `namespace/name`) and volume (by name) the scheduler
/// knows.
#[derive(Debug, Default)]
pub struct Claims {
    claims: HashMap<String, Claim>,
    volumes: HashMap<String, Arc<Volume>>,
}

impl Claims {
    /// Applies a scheduling-object event; whether it was about a claim or a
    /// volume.
    pub fn on_object(&mut self, event: &ObjectEvent<'_>) -> bool {
        match event {
            ObjectEvent::Applied(SchedulingObject::PersistentVolumeClaim(pvc)) => {
                let key = SchedulingObject::PersistentVolumeClaim(pvc.clone()).reference().key;
                self.claims.insert(key, Claim::of(pvc));
            }
            ObjectEvent::Applied(SchedulingObject::PersistentVolume(pv)) => {
                let name = pv.metadata.name.clone().unwrap_or_default();
                self.volumes.insert(name, Arc::new(Volume::of(pv)));
            }
            ObjectEvent::Removed(r) if r.kind == ObjectKind::PersistentVolumeClaim => {
                self.claims.remove(&r.key);
            }
            ObjectEvent::Removed(r) if r.kind == ObjectKind::PersistentVolume => {
                self.volumes.remove(&r.key);
            }
            _ => return false,
        }
        true
    }

    /// The claim `namespace/name`.
    pub fn claim(&self, key: &str) -> Option<&Claim> {
        self.claims.get(key)
    }

    /// The volume `name`.
    pub fn volume(&self, name: &str) -> Option<&Arc<Volume>> {
        self.volumes.get(name)
    }
}

/// The claims a pod's volumes name (`spec.volumes[].persistentVolumeClaim
/// .claimName`), in order.
pub fn claim_names(pod: &Pod) -> impl Iterator<Item = &str> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    volumes
        .into_iter()
        .flatten()
        .filter_map(|v| Some(v.persistent_volume_claim.as_ref()?.claim_name.as_str()))
}

/// Whether the pod uses any PersistentVolumeClaim.
pub fn uses_claims(pod: &Pod) -> bool {
    claim_names(pod).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_and_volumes_read_as_kube_scheduler_reads_them() {
        let pvc = |yaml: &str| Claim::of(&serde_saphyr::from_str(yaml).unwrap());
        let cases = [
            // (claim, volume, bound, deleting, rwop)
            ("metadata: {name: c}\nspec: {}", (None, false, false, false)),
            (
                "metadata: {name: c}\nspec: {volumeName: pv1}",
                // Pre-bound by the user, not yet by the controller.
                (Some("pv1"), false, false, false),
            ),
            (
                "metadata: {name: c, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: pv1}",
                (Some("pv1"), true, false, false),
            ),
            (
                "metadata: {name: c, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: ''}",
                (None, false, false, false),
            ),
            (
                "metadata: {name: c, deletionTimestamp: '2026-01-01T00:00:00Z'}\nspec: {accessModes: [ReadWriteOnce, ReadWriteOncePod]}",
                (None, false, true, true),
            ),
        ];
        for (yaml, (volume, bound, deleting, rwop)) in cases {
            let c = pvc(yaml);
            assert_eq!(
                (c.volume.as_deref(), c.bound, c.deleting, c.read_write_once_pod),
                (volume, bound, deleting, rwop),
                "{yaml}"
            );
        }
        let pv: PersistentVolume = serde_saphyr::from_str(
            "metadata: {name: pv1, labels: {topology.kubernetes.io/zone: a__b, other: x}}\n\
             spec: {nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Exists}]}]}}}",
        )
        .unwrap();
        let v = Volume::of(&pv);
        assert_eq!(&*v.name, "pv1");
        assert!(v.affinity.is_some());
        assert_eq!(v.zones, [("topology.kubernetes.io/zone", vec!["a".into(), "b".into()])]);
    }
}
