//! `kolo crds`: every CRD as a multi-document YAML stream.

use std::io::Write;

use crate::CliError;

/// Writes every CRD kolo uses, separated by `---`, ready for
/// `kubectl apply -f -`.
pub fn print_crds(out: &mut impl Write) -> Result<(), CliError> {
    for crd in kolo_api::crd::all_crds() {
        let yaml = serde_saphyr::to_string(&crd).map_err(|e| CliError::Serialize(e.to_string()))?;
        writeln!(out, "---")?;
        out.write_all(yaml.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    #[test]
    fn output_reads_back_as_the_same_crds() {
        let mut out = Vec::new();
        print_crds(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let parsed: Vec<CustomResourceDefinition> = serde_saphyr::from_multiple(&text).unwrap();
        assert_eq!(parsed, kolo_api::crd::all_crds());
        let names: Vec<_> = parsed.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
        for expected in [
            "nodemetrics.slo.koordinator.sh",
            "nodeslos.slo.koordinator.sh",
            "clustercolocationprofiles.config.koordinator.sh",
            "reservations.scheduling.koordinator.sh",
            "podmigrationjobs.scheduling.koordinator.sh",
            "devices.scheduling.koordinator.sh",
            "elasticquotas.scheduling.sigs.k8s.io",
            "podgroups.scheduling.sigs.k8s.io",
            "customnoderesources.node.katalyst.kubewharf.io",
        ] {
            assert!(names.iter().any(|n| n == expected), "{expected} missing from {names:?}");
        }
    }
}
