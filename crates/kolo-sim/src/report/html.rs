//! The self-contained `report.html`: the summary table and the plots as
//! inline SVG — no script, no external file, opens from disk.

use super::{PolicyRun, plots, story, table};
use crate::scenario::Scenario;

/// Escapes text for HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The share of the cluster's CPU the LS pods request: the fixed pods'
/// requests (a snapshot's), else the generator's requested fraction.
fn ls_requested_share(scenario: &Scenario, capacity: f64) -> f64 {
    if scenario.ls.pods.is_empty() || capacity <= 0.0 {
        return scenario.ls.requested_fraction;
    }
    scenario.ls.pods.iter().map(|p| p.cpu).sum::<f64>() / capacity
}

/// `docs/sim.md` as a link to the file in the source tree this binary was
/// built from when it is there (the report opens from disk), else its
/// name in the repository.
fn docs_link() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/sim.md");
    match path.canonicalize() {
        Ok(p) => format!("<a href=\"file://{}\">docs/sim.md</a>", escape(&p.display().to_string())),
        Err(_) => "<code>docs/sim.md</code> in kolo's repository".to_string(),
    }
}

/// The page.
pub fn render(scenario: &Scenario, runs: &[PolicyRun]) -> String {
    let capacity: f64 =
        scenario.cluster.node_groups.iter().map(|g| g.count as f64 * f64::from(g.cpu)).sum();
    let mut body = String::new();
    body.push_str(&format!(
        "<h1>kolo sim: {}</h1>\n<p>{}</p>\n<p>{} nodes ({:.0} CPUs), {} simulated hours in {} s steps, seed {}.</p>\n",
        escape(if scenario.name.is_empty() { "scenario" } else { &scenario.name }),
        escape(&scenario.description),
        scenario.node_count(),
        capacity,
        scenario.duration_hours,
        scenario.step_seconds,
        scenario.seed
    ));
    body.push_str(&format!("<p><b>{}</b></p>\n", escape(&story::headline(runs))));
    body.push_str("<h2>Summary</h2>\n<ul>\n");
    for r in runs {
        body.push_str(&format!(
            "<li><b>{}</b>: {}</li>\n",
            escape(&r.result.summary.policy),
            escape(&r.description)
        ));
    }
    body.push_str("</ul>\n<pre>");
    body.push_str(&escape(&table::render(runs)));
    body.push_str("</pre>\n");
    let setting = story::Setting { ls_requested_share: ls_requested_share(scenario, capacity) };
    for paragraph in story::paragraphs(runs, setting) {
        body.push_str(&format!("<p>{}</p>\n", escape(&paragraph)));
    }
    body.push_str(
        "<h2>Cluster CPU utilization</h2>\n<p>CPU used by the system, LS and BE pods as a share of the cluster's CPU capacity, per policy. The thin grey line is what LS pods and the system use on their own: the level without co-location.</p>\n",
    );
    body.push_str(&plots::utilization(runs));
    body.push_str("<h2>LS vs BE CPU</h2>\n<p>Stacked: the system at the bottom, LS pods, then BE pods; the black line is the cluster's capacity. Under co-location BE fills what LS leaves, and shrinks when LS grows.</p>\n");
    for r in runs {
        body.push_str(&plots::stacked(r, capacity));
    }
    body.push_str("<h2>Batch allocatable vs used</h2>\n<p>Σ <code>kubernetes.io/batch-cpu</code> allocatable the manager published (co-location policies; 0 otherwise), Σ CPU requests of running BE pods, and what BE pods actually used.</p>\n");
    let top = plots::batch_top(runs);
    for r in runs {
        body.push_str(&plots::batch(r, top));
    }
    body.push_str("<h2>Evictions</h2>\n<p>BE pods the agent evicted (CPU or memory eviction) and pods the kernel OOM-killed, per simulated hour.</p>\n");
    body.push_str(&plots::evictions(runs));
    body.push_str("<h2>Per-node utilization</h2>\n<p>Each row is a node, each cell its average CPU utilization over the bucket; white is idle, dark red is full.</p>\n");
    for r in runs {
        body.push_str(&plots::heatmap(&r.result.summary.policy, &r.result.heat));
    }
    body.push_str(&format!("<p>How to read this report: {}.</p>\n", docs_link()));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kolo sim report</title>\n<style>\nbody {{ font-family: sans-serif; max-width: 1000px; margin: 2em auto; color: #222; }}\npre {{ background: #f6f6f6; padding: 1em; overflow-x: auto; }}\nsvg {{ display: block; margin: 1em 0; max-width: 100%; height: auto; }}\n</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
