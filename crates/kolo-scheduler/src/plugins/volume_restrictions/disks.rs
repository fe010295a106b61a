//! The in-line disks two pods may not both use on one node, and when they
//! conflict (kube-scheduler v1.20's `isVolumeConflict`).
//!
//! | volume | same disk when | conflict unless |
//! | --- | --- | --- |
//! | `gcePersistentDisk` | same `pdName` | both `readOnly` |
//! | `awsElasticBlockStore` | same `volumeID` | never |
//! | `iscsi` | same `iqn` | both `readOnly` |
//! | `rbd` | a monitor in common, same `pool` (default `rbd`) and `image` | both `readOnly` |

use k8s_openapi::api::core::v1::{Pod, Volume};

/// One in-line disk of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disk {
    /// A GCE persistent disk.
    GcePd {
        /// `pdName`.
        name: Box<str>,
        /// `readOnly`.
        read_only: bool,
    },
    /// An AWS EBS volume.
    AwsEbs {
        /// `volumeID`.
        id: Box<str>,
    },
    /// An iSCSI target.
    Iscsi {
        /// `iqn`.
        iqn: Box<str>,
        /// `readOnly`.
        read_only: bool,
    },
    /// A Ceph RBD image.
    Rbd {
        /// `monitors`.
        monitors: Vec<Box<str>>,
        /// `pool` (the API's default `rbd` when absent).
        pool: Box<str>,
        /// `image`.
        image: Box<str>,
        /// `readOnly`.
        read_only: bool,
    },
}

impl Disk {
    /// The disk a volume uses, if it is one of these kinds.
    pub fn of(volume: &Volume) -> Option<Disk> {
        if let Some(d) = &volume.gce_persistent_disk {
            return Some(Disk::GcePd {
                name: d.pd_name.as_str().into(),
                read_only: d.read_only == Some(true),
            });
        }
        if let Some(d) = &volume.aws_elastic_block_store {
            return Some(Disk::AwsEbs { id: d.volume_id.as_str().into() });
        }
        if let Some(d) = &volume.iscsi {
            return Some(Disk::Iscsi {
                iqn: d.iqn.as_str().into(),
                read_only: d.read_only == Some(true),
            });
        }
        let d = volume.rbd.as_ref()?;
        Some(Disk::Rbd {
            monitors: d.monitors.iter().map(|m| m.as_str().into()).collect(),
            pool: d.pool.as_deref().filter(|p| !p.is_empty()).unwrap_or("rbd").into(),
            image: d.image.as_str().into(),
            read_only: d.read_only == Some(true),
        })
    }

    /// Whether two pods using `self` and `other` cannot share a node.
    pub fn conflicts(&self, other: &Disk) -> bool {
        match (self, other) {
            (Disk::GcePd { name: a, read_only: ra }, Disk::GcePd { name: b, read_only: rb })
            | (Disk::Iscsi { iqn: a, read_only: ra }, Disk::Iscsi { iqn: b, read_only: rb }) => {
                a == b && !(*ra && *rb)
            }
            (Disk::AwsEbs { id: a }, Disk::AwsEbs { id: b }) => a == b,
            (
                Disk::Rbd { monitors: ma, pool: pa, image: ia, read_only: ra },
                Disk::Rbd { monitors: mb, pool: pb, image: ib, read_only: rb },
            ) => ma.iter().any(|m| mb.contains(m)) && pa == pb && ia == ib && !(*ra && *rb),
            _ => false,
        }
    }
}

/// The in-line disks of a pod's volumes (empty for most pods).
pub fn disks(pod: &Pod) -> Vec<Disk> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    volumes.into_iter().flatten().filter_map(Disk::of).collect()
}

/// Whether any of `wanted` conflicts with any of `held`.
pub fn any_conflict(wanted: &[Disk], held: &[Disk]) -> bool {
    wanted.iter().any(|w| held.iter().any(|h| w.conflicts(h)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(yaml: &str) -> Disk {
        let volume: Volume = serde_saphyr::from_str(&format!("{{name: v, {yaml}}}")).unwrap();
        Disk::of(&volume).unwrap()
    }

    #[test]
    fn conflict_table_as_kube_scheduler_v1_20() {
        let gce = "gcePersistentDisk: {pdName: pd1}";
        let gce_ro = "gcePersistentDisk: {pdName: pd1, readOnly: true}";
        let ebs = "awsElasticBlockStore: {volumeID: vol1}";
        let ebs_ro = "awsElasticBlockStore: {volumeID: vol1, readOnly: true}";
        let iscsi = "iscsi: {targetPortal: p, iqn: iqn1, lun: 0}";
        let iscsi_ro = "iscsi: {targetPortal: p, iqn: iqn1, lun: 0, readOnly: true}";
        let rbd = "rbd: {monitors: [m1, m2], image: img}";
        let cases = [
            (gce, gce, true),
            (gce, gce_ro, true),
            (gce_ro, gce_ro, false),
            (gce, "gcePersistentDisk: {pdName: pd2}", false),
            // EBS: read-only or not, one node per volume.
            (ebs, ebs, true),
            (ebs_ro, ebs_ro, true),
            (ebs, "awsElasticBlockStore: {volumeID: vol2}", false),
            (iscsi, iscsi, true),
            (iscsi_ro, iscsi, true),
            (iscsi_ro, iscsi_ro, false),
            (iscsi, "iscsi: {targetPortal: p, iqn: iqn2, lun: 0}", false),
            // RBD: a monitor in common, same pool (default rbd) and image.
            (rbd, "rbd: {monitors: [m2, m3], image: img, pool: rbd}", true),
            (rbd, "rbd: {monitors: [m3], image: img}", false),
            (rbd, "rbd: {monitors: [m1], image: img, pool: other}", false),
            (rbd, "rbd: {monitors: [m1], image: img2}", false),
            (
                "rbd: {monitors: [m1], image: img, readOnly: true}",
                "rbd: {monitors: [m1], image: img, readOnly: true}",
                false,
            ),
            // Different kinds never conflict.
            (gce, ebs, false),
        ];
        for (a, b, want) in cases {
            assert_eq!(disk(a).conflicts(&disk(b)), want, "{a} / {b}");
            assert_eq!(disk(b).conflicts(&disk(a)), want, "{b} / {a}");
        }
        assert!(any_conflict(&[disk(gce_ro), disk(ebs)], &[disk(rbd), disk(ebs_ro)]));
        assert!(!any_conflict(&[disk(gce_ro)], &[disk(gce_ro), disk(ebs)]));
    }
}
