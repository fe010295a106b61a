//! What a snapshot loads without error but probably not as meant: an input
//! with no object at all (an empty file gives "Nodes: 0"), and objects
//! that appear more than once (the same file given twice, two Nodes with
//! one name), which every command would count twice.

use std::collections::BTreeMap;

use super::Snapshot;

impl Snapshot {
    /// Warnings about the loaded input, for the command to print: every
    /// input that held no object, and every Node, Pod, NodeMetric, NodeSLO
    /// and ConfigMap whose namespace and name appear more than once (they
    /// are kept, and counted, as many times).
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = self.empty_inputs.clone();
        let nodes = self.nodes.iter().map(|n| (None, n.object.metadata.name.as_deref()));
        let pods = self
            .pods
            .iter()
            .map(|p| (p.object.metadata.namespace.as_deref(), p.object.metadata.name.as_deref()));
        let metrics = self.node_metrics.iter().map(|m| (None, m.metadata.name.as_deref()));
        let slos = self.node_slos.iter().map(|s| (None, s.metadata.name.as_deref()));
        let maps = self
            .config_maps
            .iter()
            .map(|c| (c.metadata.namespace.as_deref(), c.metadata.name.as_deref()));
        duplicates("Node", nodes, &mut warnings);
        duplicates("Pod", pods, &mut warnings);
        duplicates("NodeMetric", metrics, &mut warnings);
        duplicates("NodeSLO", slos, &mut warnings);
        duplicates("ConfigMap", maps, &mut warnings);
        warnings
    }
}

/// Appends a warning per (namespace, name) seen more than once.
fn duplicates<'a>(
    kind: &str,
    keys: impl Iterator<Item = (Option<&'a str>, Option<&'a str>)>,
    warnings: &mut Vec<String>,
) {
    let mut counts: BTreeMap<(Option<&str>, Option<&str>), usize> = BTreeMap::new();
    for key in keys {
        *counts.entry(key).or_default() += 1;
    }
    for ((namespace, name), count) in counts.into_iter().filter(|(_, n)| *n > 1) {
        let name = name.unwrap_or("<no name>");
        let object = match namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_string(),
        };
        warnings.push(format!(
            "{kind} {object} appears {count} times in the input (the same file given twice?); \
             it is counted {count} times"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n";
    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\n";

    #[test]
    fn duplicates_and_empty_inputs_are_warned_about() {
        let mut s = Snapshot::default();
        s.add_text(&format!("{NODE}---\n{POD}"), "one.yaml").unwrap();
        assert_eq!(s.warnings(), Vec::<String>::new());
        s.add_text(&format!("{NODE}---\n{POD}"), "again.yaml").unwrap();
        s.add_text("# nothing here\n", "empty.yaml").unwrap();
        s.add_text(&POD.replace("namespace: a", "namespace: b"), "other.yaml").unwrap();
        let warnings = s.warnings();
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert_eq!(warnings[0], "empty.yaml: no Kubernetes object in it");
        assert!(warnings[1].starts_with("Node n1 appears 2 times"), "{}", warnings[1]);
        assert!(warnings[2].starts_with("Pod a/p appears 2 times"), "{}", warnings[2]);
        // An empty first input survives the next one's merge.
        let mut s = Snapshot::default();
        s.add_text("", "-").unwrap();
        s.add_text(NODE, "nodes.yaml").unwrap();
        assert_eq!(s.warnings(), vec!["-: no Kubernetes object in it".to_string()]);
    }
}
