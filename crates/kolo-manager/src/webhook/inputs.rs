//! What the admission state is built from: the ClusterColocationProfiles,
//! the labels of the Namespaces and the PriorityClasses, by name, taken from
//! a [`Snapshot`] (a `kubectl get -o yaml` dump, or what a cluster driver's
//! reflectors hold).

use std::collections::BTreeMap;

use kolo_api::crd::ClusterColocationProfile;
use kolo_core::snapshot::Snapshot;

use crate::webhook::{AdmissionState, PriorityClassInfo};

/// The objects an [`AdmissionState`] is built from, before they are
/// compiled; edit them (e.g. a what-if run's assumptions) then
/// [`AdmissionInputs::build`].
#[derive(Debug, Clone, Default)]
pub struct AdmissionInputs {
    /// The profiles.
    pub profiles: Vec<ClusterColocationProfile>,
    /// Each namespace's labels, by namespace name.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// The PriorityClasses, by name.
    pub priority_classes: BTreeMap<String, PriorityClassInfo>,
}

impl AdmissionInputs {
    /// The snapshot's ClusterColocationProfiles, Namespaces (their labels)
    /// and PriorityClasses (value and preemption policy). Other objects are
    /// ignored, and so are Namespaces and PriorityClasses without a name (a
    /// snapshot loaded from `kubectl get` always has names).
    pub fn from_snapshot(snapshot: &Snapshot) -> AdmissionInputs {
        let namespaces = snapshot
            .namespaces
            .iter()
            .filter_map(|ns| {
                let name = ns.metadata.name.clone()?;
                Some((name, ns.metadata.labels.clone().unwrap_or_default()))
            })
            .collect();
        let priority_classes = snapshot
            .priority_classes
            .iter()
            .filter_map(|pc| {
                let name = pc.metadata.name.clone()?;
                let info = PriorityClassInfo {
                    value: pc.value,
                    preemption_policy: pc.preemption_policy.clone(),
                };
                Some((name, info))
            })
            .collect();
        AdmissionInputs {
            profiles: snapshot.colocation_profiles.clone(),
            namespaces,
            priority_classes,
        }
    }

    /// Adds Koordinator's PriorityClasses (`koord-prod`, `koord-mid`,
    /// `koord-batch`, `koord-free`) with the values and preemption policies
    /// `kolo install` gives them, where the inputs do not define them: what
    /// a cluster installed by kolo has.
    pub fn assume_koordinator_priority_classes(&mut self) {
        for class in kolo_api::PriorityClass::NAMED {
            self.priority_classes.entry(class.as_str().to_string()).or_insert_with(|| {
                PriorityClassInfo {
                    value: class.installed_value(),
                    preemption_policy: Some(class.installed_preemption_policy().to_string()),
                }
            });
        }
    }

    /// The admission state (see [`AdmissionState::new`] for what it checks).
    pub fn build(self) -> AdmissionState {
        AdmissionState::new(self.profiles, self.namespaces, self.priority_classes)
    }
}

impl AdmissionState {
    /// The admission state of a snapshot's profiles, namespaces and
    /// PriorityClasses ([`AdmissionInputs::from_snapshot`]).
    pub fn from_snapshot(snapshot: &Snapshot) -> AdmissionState {
        AdmissionInputs::from_snapshot(snapshot).build()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn meta(name: Option<&str>) -> ObjectMeta {
        ObjectMeta { name: name.map(str::to_string), ..ObjectMeta::default() }
    }

    #[test]
    fn a_snapshot_gives_labels_and_priority_classes_by_name() {
        let mut labelled = meta(Some("shop"));
        labelled.labels = Some(BTreeMap::from([("team".to_string(), "a".to_string())]));
        let snapshot = Snapshot {
            namespaces: vec![
                Namespace { metadata: labelled, ..Namespace::default() },
                Namespace { metadata: meta(Some("bare")), ..Namespace::default() },
                Namespace { metadata: meta(None), ..Namespace::default() },
            ],
            priority_classes: vec![
                PriorityClass {
                    metadata: meta(Some("koord-batch")),
                    value: 5000,
                    preemption_policy: Some("Never".into()),
                    ..PriorityClass::default()
                },
                PriorityClass { metadata: meta(None), value: 1, ..PriorityClass::default() },
            ],
            ..Snapshot::default()
        };
        let inputs = AdmissionInputs::from_snapshot(&snapshot);
        assert_eq!(
            inputs.namespaces,
            BTreeMap::from([
                ("bare".to_string(), BTreeMap::new()),
                ("shop".to_string(), BTreeMap::from([("team".to_string(), "a".to_string())])),
            ])
        );
        assert_eq!(
            inputs.priority_classes,
            BTreeMap::from([(
                "koord-batch".to_string(),
                PriorityClassInfo { value: 5000, preemption_policy: Some("Never".into()) }
            )])
        );
    }

    #[test]
    fn assumed_koordinator_classes_never_replace_defined_ones() {
        let mut inputs = AdmissionInputs::default();
        inputs.priority_classes.insert(
            "koord-batch".to_string(),
            PriorityClassInfo { value: 5100, preemption_policy: Some("Never".into()) },
        );
        inputs.assume_koordinator_priority_classes();
        let value = |name: &str| inputs.priority_classes[name].value;
        assert_eq!(value("koord-batch"), 5100, "the defined class is kept");
        assert_eq!(value("koord-prod"), 9000);
        assert_eq!(value("koord-mid"), 7000);
        assert_eq!(value("koord-free"), 3000);
        assert_eq!(
            inputs.priority_classes["koord-free"].preemption_policy.as_deref(),
            Some("Never")
        );
        assert_eq!(
            inputs.priority_classes["koord-prod"].preemption_policy.as_deref(),
            Some("PreemptLowerPriority")
        );
    }
}
