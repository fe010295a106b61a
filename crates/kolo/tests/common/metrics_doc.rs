//! `docs/metrics.md` against what a component really exports: every
//! metric the file lists for the component (and for `all`) is on its
//! `/metrics`, and every `kolo_*` / `process_*` metric it exports is
//! listed.

use std::collections::BTreeSet;

/// `GET path` on 127.0.0.1:`port` (HTTP/1.1, connection close): the whole
/// answer, headers included; `None` when it cannot be had.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// The sections of `docs/metrics.md` a component exports besides `all`:
/// the manager serves the webhooks too.
fn sections(component: &str) -> Vec<&str> {
    match component {
        "manager" => vec!["manager", "webhook"],
        other => vec![other],
    }
}

/// The metrics `docs/metrics.md` lists for `component` (with `all`'s,
/// `<c>` replaced by the component).
pub fn documented(component: &str) -> BTreeSet<String> {
    let sections = sections(component);
    let path = super::workspace_root().join("docs/metrics.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut section = String::new();
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.split('`').nth(1).unwrap_or_default().to_string();
            continue;
        }
        if section != "all" && !sections.contains(&section.as_str()) {
            continue;
        }
        let Some(cell) = line.strip_prefix("| `") else { continue };
        let name = cell.split('`').next().unwrap();
        out.insert(name.replace("<c>", component));
    }
    assert!(!out.is_empty(), "docs/metrics.md lists nothing for {component}");
    out
}

/// The metrics in an OpenMetrics text, by sample name (a counter's
/// `_total`, a histogram's base name).
pub fn exported(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let mut it = l.split_ascii_whitespace();
            let (name, kind) = (it.next()?, it.next()?);
            Some(if kind == "counter" { format!("{name}_total") } else { name.to_string() })
        })
        .filter(|n| n.starts_with("kolo_") || n.starts_with("process_"))
        .collect()
}

/// Checks a scrape of `component` against the file: each listed metric
/// is exported unless in `not_here` (families this run gives no series:
/// the caller says why), and each exported one is listed.
pub fn check(component: &str, scraped: &str, not_here: &[&str]) {
    let documented = documented(component);
    let exported = exported(scraped);
    let undocumented: Vec<_> = exported.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "{component} exports metrics docs/metrics.md does not list: {undocumented:?}"
    );
    for name in not_here {
        assert!(documented.contains(*name), "{name} is not in docs/metrics.md for {component}");
    }
    let missing: Vec<_> = documented
        .iter()
        .filter(|n| !exported.contains(*n) && !not_here.contains(&n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{component} does not export what docs/metrics.md lists: {missing:?}\n{scraped}"
    );
}
