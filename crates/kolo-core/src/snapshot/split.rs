//! Splitting a YAML stream into independently parseable pieces.
//!
//! `kubectl get -o yaml` prints one `kind: List` document whose items are a
//! block sequence. Parsing 50,000 items as one document is single-threaded
//! and slow, so the loader cuts the text into one piece per document and, for
//! a list, one piece per item, and parses the pieces in parallel.
//!
//! The cut is textual and deliberately conservative: it only recognises the
//! block layout that kubectl and most tools print. Anything it is unsure of
//! (flow-style lists, anchors, tabs, odd indentation) makes the caller parse
//! the whole document instead, so the split can make loading faster but can
//! never make it succeed differently. A test checks both paths agree.

/// One YAML document of a stream, by byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document<'a> {
    /// 1-based position in the stream.
    pub number: usize,
    /// The document's text (without the `---` line).
    pub text: &'a str,
}

/// Splits a YAML stream at `---` / `...` marker lines. Documents that are
/// empty or only comments are dropped, but still counted, so numbers match
/// what a person counts in the file.
pub fn documents(stream: &str) -> Vec<Document<'_>> {
    let mut out = Vec::new();
    let mut number = 0;
    let mut start = 0;
    let mut offset = 0;
    let mut push = |start: usize, end: usize, number: &mut usize| {
        let text = &stream[start..end];
        *number += 1;
        if has_content(text) {
            out.push(Document { number: *number, text });
        }
    };
    for line in stream.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare.starts_with("--- ") || bare == "..." {
            if start < offset || has_content(&stream[start..offset]) {
                push(start, offset, &mut number);
            }
            start = offset + line.len();
        }
        offset += line.len();
    }
    if start < stream.len() {
        push(start, stream.len(), &mut number);
    }
    out
}

fn has_content(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    })
}

/// The items of a list document, each re-indented to stand alone as a YAML
/// mapping, or `None` when the document is not a block-style list that can be
/// cut safely (the caller then parses it whole).
///
/// A document qualifies when it has a top-level `items:` key followed by a
/// block sequence whose entries start with `- ` at one consistent
/// indentation, contains no tabs, anchors or aliases, and every other
/// top-level key is a plain scalar line (`kind: List`, `apiVersion: v1`) or a
/// small nested mapping (`metadata:`).
pub fn list_items(doc: &str) -> Option<Vec<String>> {
    if doc.contains('\t') || may_use_anchors(doc) {
        return None;
    }
    let lines: Vec<&str> = doc.lines().collect();
    let items_at = lines.iter().position(|l| l.trim_end() == "items:")?;
    // The sequence's indentation is set by its first entry.
    let first = lines[items_at + 1..].iter().position(|l| !is_blank(l))? + items_at + 1;
    let indent = indentation(lines[first]);
    let entry_prefix = format!("{}- ", " ".repeat(indent));
    if !lines[first].starts_with(&entry_prefix) {
        return None;
    }
    let mut items: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in &lines[first..] {
        if is_blank(line) {
            // Blank and comment lines are kept: inside a literal block
            // scalar they are content (`#!/bin/sh`, paragraph breaks).
            // A comment indented less than the item's content still ends a
            // block scalar, so it stays a comment, at column 0.
            if let Some(item) = current.as_mut() {
                if indentation(line) >= indent + 2 {
                    item.push_str(&line[indent + 2..]);
                } else {
                    item.push_str(line.trim_start());
                }
                item.push('\n');
            }
            continue;
        }
        if line.starts_with(&entry_prefix) {
            items.extend(current.take());
            // Turn "- key: v" into "key: v" at column 0.
            let mut item = String::with_capacity(1024);
            item.push_str(&line[indent + 2..]);
            item.push('\n');
            current = Some(item);
            continue;
        }
        let line_indent = indentation(line);
        if line_indent > indent + 1 {
            let item = current.as_mut()?;
            item.push_str(&line[indent + 2..]);
            item.push('\n');
        } else if line_indent == 0 && indent == 0 || line_indent < indent {
            // The sequence ended; the rest must be top-level keys of the
            // list document itself.
            break;
        } else {
            // "-" alone, or a line between the entry column and the entry's
            // content: a layout this cutter does not handle.
            return None;
        }
    }
    items.extend(current);
    Some(items)
}

/// Whether the text may define or use an anchor, an alias or a merge key,
/// which tie items together. Errs on the side of "yes": a quoted string that
/// merely contains ": &" only costs the fast path.
pub(super) fn may_use_anchors(doc: &str) -> bool {
    [": &", "- &", ": *", "- *", "<<:"].iter().any(|p| doc.contains(p))
}

fn is_blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_numbered_like_a_person_counts_them() {
        let stream = "a: 1\n---\nb: 2\n--- \n# only a comment\n---\nc: 3\n...\n";
        let docs = documents(stream);
        let got: Vec<(usize, &str)> = docs.iter().map(|d| (d.number, d.text.trim())).collect();
        assert_eq!(got, vec![(1, "a: 1"), (2, "b: 2"), (4, "c: 3")]);
    }

    #[test]
    fn leading_marker_does_not_create_an_empty_document() {
        let docs = documents("---\napiVersion: v1\n");
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].number, 1);
    }

    #[test]
    fn cuts_kubectl_style_lists() {
        let doc = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n\n- kind: Node\n  metadata:\n    name: b\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
        let items = list_items(doc).unwrap();
        assert_eq!(
            items,
            vec![
                // The blank line between items stays with the first.
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n\n".to_string(),
                "kind: Node\nmetadata:\n  name: b\n".to_string()
            ]
        );
    }

    #[test]
    fn cuts_indented_lists() {
        let doc = "kind: List\nitems:\n  - kind: Pod\n    metadata:\n      name: a\n  - kind: Pod\n    metadata:\n      name: b\n";
        let items = list_items(doc).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1], "kind: Pod\nmetadata:\n  name: b\n");
    }

    #[test]
    fn keeps_blank_and_comment_lines_inside_block_scalars() {
        let doc = "kind: List\nitems:\n- kind: ConfigMap\n  data:\n    script: |\n      #!/bin/sh\n      echo hi\n\n      echo bye\n  # a comment\n  metadata:\n    name: c\n\n- kind: Pod\n";
        let items = list_items(doc).unwrap();
        let whole: serde_json::Value = serde_saphyr::from_str(doc).unwrap();
        let cut: Vec<serde_json::Value> =
            items.iter().map(|i| serde_saphyr::from_str(i).unwrap()).collect();
        assert_eq!(serde_json::Value::Array(cut), whole["items"]);
        assert_eq!(whole["items"][0]["data"]["script"], "#!/bin/sh\necho hi\n\necho bye\n");
    }

    #[test]
    fn cuts_what_serde_saphyr_emits() {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            {"kind": "Pod", "metadata": {"name": "a", "labels": {"x": "- not an item", "y": "one\ntwo"}}},
            {"kind": "Pod", "spec": {"containers": [{"name": "c", "args": ["--x", "- y"]}]}}
        ]});
        let yaml = serde_saphyr::to_string(&list).unwrap();
        let items = list_items(&yaml).expect("block-style list is cut");
        let parsed: Vec<serde_json::Value> =
            items.iter().map(|i| serde_saphyr::from_str(i).unwrap()).collect();
        assert_eq!(serde_json::Value::Array(parsed), list["items"]);
    }

    #[test]
    fn refuses_layouts_it_cannot_cut_safely() {
        let cases = [
            ("flow list", "kind: List\nitems: [{kind: Pod}]\n"),
            ("anchor", "kind: List\nitems:\n- &a\n  kind: Pod\n- *a\n"),
            ("merge key", "kind: List\nitems:\n- kind: Pod\n  <<: {a: 1}\n"),
            ("tab", "kind: List\nitems:\n-\tkind: Pod\n"),
            ("dash alone", "kind: List\nitems:\n-\n  kind: Pod\n"),
            ("no items", "kind: Pod\nmetadata:\n  name: a\n"),
        ];
        for (case, doc) in cases {
            assert_eq!(list_items(doc), None, "{case}");
        }
    }
}
