//! VolumeBinding's decisions, pure: which volumes a pod's claims are bound
//! to (or why the pod cannot be placed at all), and whether a node may use
//! them.

use std::sync::Arc;

use kolo_core::node::NodeView;

use super::claims::{Claims, Volume};
use crate::framework::Rejection;

/// kube-scheduler's reason for a node outside a bound volume's node
/// affinity.
pub const NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";

/// Why a claim keeps the pod from any node (each names the claim).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimProblem {
    /// No such claim in the pod's namespace.
    #[error("persistentvolumeclaim \"{0}\" not found")]
    NotFound(String),
    /// The claim is being deleted.
    #[error("persistentvolumeclaim \"{0}\" is being deleted")]
    Deleting(String),
    /// The claim has no volume yet (dynamic provisioning, or a
    /// WaitForFirstConsumer storage class), or the PersistentVolume
    /// controller has not completed binding it.
    #[error("persistentvolumeclaim \"{0}\" is not bound; kolo-scheduler does not bind volumes")]
    NotBound(String),
    /// The claim is bound to a volume that does not exist.
    #[error("persistentvolume \"{volume}\" of persistentvolumeclaim \"{claim}\" not found")]
    VolumeMissing {
        /// The claim.
        claim: String,
        /// Its `spec.volumeName`.
        volume: String,
    },
}

impl ClaimProblem {
    /// As a rejection for every node: no node can help until the claim or
    /// its volume changes.
    pub fn rejection(&self) -> Rejection {
        Rejection::unresolvable(self.to_string())
    }
}

/// The volumes the pod's claims (`claim_names`, in the namespace
/// `namespace`) are bound to, in claim order; the first claim that is not
/// usable stops the search.
pub fn bound_volumes<'a>(
    claims: &Claims,
    namespace: &str,
    claim_names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Arc<Volume>>, ClaimProblem> {
    let mut volumes = Vec::new();
    for name in claim_names {
        let claim = claims
            .claim(&format!("{namespace}/{name}"))
            .ok_or_else(|| ClaimProblem::NotFound(name.to_string()))?;
        if claim.deleting {
            return Err(ClaimProblem::Deleting(name.to_string()));
        }
        let Some(volume_name) = claim.volume.as_deref().filter(|_| claim.bound) else {
            return Err(ClaimProblem::NotBound(name.to_string()));
        };
        let volume = claims.volume(volume_name).ok_or_else(|| ClaimProblem::VolumeMissing {
            claim: name.to_string(),
            volume: volume_name.to_string(),
        })?;
        volumes.push(volume.clone());
    }
    Ok(volumes)
}

/// Whether every volume's node affinity admits the node.
pub fn node_fits(volumes: &[Arc<Volume>], node: &NodeView) -> bool {
    volumes.iter().all(|v| v.affinity.as_ref().is_none_or(|a| a.matches_node(node)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{ObjectEvent, SchedulingObject};
    use crate::testing::node_from_yaml;

    fn claims(objects: &[&str]) -> Claims {
        let mut claims = Claims::default();
        for yaml in objects {
            let object = if yaml.contains("kind: PersistentVolumeClaim") {
                SchedulingObject::PersistentVolumeClaim(Arc::new(
                    serde_saphyr::from_str(yaml).unwrap(),
                ))
            } else {
                SchedulingObject::PersistentVolume(Arc::new(serde_saphyr::from_str(yaml).unwrap()))
            };
            assert!(claims.on_object(&ObjectEvent::Applied(&object)));
        }
        claims
    }

    const BOUND: &str = "kind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ns, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: pv-b}";
    const PV_B: &str = "kind: PersistentVolume\nmetadata: {name: pv-b}\nspec: {nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [b]}]}]}}}";
    const PV_ANY: &str = "kind: PersistentVolume\nmetadata: {name: pv-any}\nspec: {}";
    const LOGS: &str = "kind: PersistentVolumeClaim\nmetadata: {name: logs, namespace: ns, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: pv-any}";

    #[test]
    fn claims_resolve_or_name_what_is_missing() {
        let names = |v: Result<Vec<Arc<Volume>>, ClaimProblem>| {
            v.map(|v| v.iter().map(|v| v.name.to_string()).collect::<Vec<_>>())
        };
        let all = claims(&[BOUND, PV_B, PV_ANY, LOGS]);
        type Case<'a> = (&'a Claims, &'a str, &'a [&'a str], Result<Vec<String>, ClaimProblem>);
        let cases: [Case<'_>; 7] = [
            (&all, "ns", &[], Ok(vec![])),
            (&all, "ns", &["data", "logs"], Ok(vec!["pv-b".into(), "pv-any".into()])),
            // Claims are namespaced.
            (&all, "other", &["data"], Err(ClaimProblem::NotFound("data".into()))),
            (&all, "ns", &["logs", "nope"], Err(ClaimProblem::NotFound("nope".into()))),
            (
                &claims(&[
                    "kind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ns}\nspec: {storageClassName: wffc}",
                ]),
                "ns",
                &["data"],
                Err(ClaimProblem::NotBound("data".into())),
            ),
            (
                &claims(&[BOUND]),
                "ns",
                &["data"],
                Err(ClaimProblem::VolumeMissing { claim: "data".into(), volume: "pv-b".into() }),
            ),
            (
                &claims(&[
                    "kind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ns, deletionTimestamp: '2026-01-01T00:00:00Z'}\nspec: {volumeName: pv-b}",
                    PV_B,
                ]),
                "ns",
                &["data"],
                Err(ClaimProblem::Deleting("data".into())),
            ),
        ];
        for (claims, namespace, wanted, want) in cases {
            assert_eq!(
                names(bound_volumes(claims, namespace, wanted.iter().copied())),
                want,
                "{wanted:?}"
            );
        }
        assert_eq!(
            ClaimProblem::NotBound("data".into()).to_string(),
            "persistentvolumeclaim \"data\" is not bound; kolo-scheduler does not bind volumes"
        );
    }

    #[test]
    fn only_nodes_the_volumes_allow_fit() {
        let all = claims(&[BOUND, PV_B, PV_ANY, LOGS]);
        let node = |name: &str| {
            let n = node_from_yaml(&format!(
                "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}"
            ));
            NodeView::from_node(&n).unwrap()
        };
        let both = bound_volumes(&all, "ns", ["data", "logs"]).unwrap();
        let any = bound_volumes(&all, "ns", ["logs"]).unwrap();
        // (volumes, node, fits)
        let cases = [(&both, "a", false), (&both, "b", true), (&any, "a", true), (&any, "b", true)];
        for (volumes, name, want) in cases {
            assert_eq!(node_fits(volumes, &node(name)), want, "{name}");
        }
    }
}
