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

use memchr::memmem;

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
    let mut push = |start: usize, end: usize, number: &mut usize| {
        let text = &stream[start..end];
        *number += 1;
        if has_content(text) {
            out.push(Document { number: *number, text });
        }
    };
    for (line_start, line_end) in marker_lines(stream) {
        if start < line_start || has_content(&stream[start..line_start]) {
            push(start, line_start, &mut number);
        }
        start = line_end;
    }
    if start < stream.len() {
        push(start, stream.len(), &mut number);
    }
    out
}

/// The `---` and `...` lines of a stream, as (start, end after the line
/// break), in order. Only lines starting with `---` or `...` are looked at,
/// found by a vectorised search, so a 70 MB dump is not walked line by line.
fn marker_lines(stream: &str) -> Vec<(usize, usize)> {
    let b = stream.as_bytes();
    let mut candidates: Vec<usize> = memmem::find_iter(b, b"\n---")
        .chain(memmem::find_iter(b, b"\n..."))
        .map(|at| at + 1)
        .collect();
    if b.starts_with(b"---") || b.starts_with(b"...") {
        candidates.push(0);
    }
    candidates.sort_unstable();
    candidates
        .into_iter()
        .filter_map(|at| {
            let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i + 1);
            let bare = stream[at..end].trim_end();
            (bare == "---" || bare.starts_with("--- ") || bare == "...").then_some((at, end))
        })
        .collect()
}

/// The start of the first line of `text` that starts with `prefix`.
pub(super) fn line_starting_with(text: &str, prefix: &str) -> Option<usize> {
    if text.starts_with(prefix) {
        return Some(0);
    }
    let needle = format!("\n{prefix}");
    memmem::find(text.as_bytes(), needle.as_bytes()).map(|at| at + 1)
}

fn has_content(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    })
}

/// The items of a list document, each as the slice of `doc` from its `- `
/// line to the line before the next item, or `None` when the document is not
/// a block-style list that can be cut safely (the caller then parses it
/// whole).
///
/// An item's slice is itself a YAML document: a sequence of that one item,
/// equal to the item in the whole document. Slices borrow from the input, so
/// cutting a 70 MB dump copies nothing.
///
/// A document qualifies when it has a top-level `items:` key followed by a
/// block sequence whose entries start with `- ` at one consistent
/// indentation, contains no tabs, anchors or aliases, and every other
/// top-level key is a plain scalar line (`kind: List`, `apiVersion: v1`) or a
/// small nested mapping (`metadata:`).
pub fn list_items(doc: &str) -> Option<Vec<&str>> {
    if memchr::memchr(b'\t', doc.as_bytes()).is_some() || may_use_anchors(doc) {
        return None;
    }
    let b = doc.as_bytes();
    // The first line that is exactly `items:` (trailing spaces allowed).
    let mut from = 0;
    let items_line = loop {
        let at = from + line_starting_with(&doc[from..], "items:")?;
        let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i + 1);
        if doc[at..end].trim_end() == "items:" {
            break end;
        }
        from = end;
    };
    let mut lines = Lines { b, next: items_line };
    // The sequence's indentation is set by its first entry.
    let first_start = lines.by_ref().find(|&(s, e)| !is_blank(&doc[s..e]))?.0;
    let first = &doc[first_start..];
    let indent = indentation(first);
    let entry_prefix = format!("{}- ", " ".repeat(indent));
    if !first.starts_with(&entry_prefix) {
        return None;
    }
    // Lines indented past the entry column by two or more belong to the
    // current item whatever they hold (content, or a blank line): checking
    // that prefix is all most lines need.
    let inside = " ".repeat(indent + 2);
    let mut items: Vec<&str> = Vec::new();
    let mut item_start = first_start;
    let mut end = doc.len();
    for (start, line_end) in lines {
        let line = &doc[start..line_end];
        if line.starts_with(&inside) || is_blank(line) {
            // Blank and comment lines stay with the item before them: inside
            // a literal block scalar they are content (`#!/bin/sh`,
            // paragraph breaks), elsewhere a comment is still a comment.
            continue;
        }
        if line.starts_with(&entry_prefix) {
            items.push(&doc[item_start..start]);
            item_start = start;
            continue;
        }
        let line_indent = indentation(line);
        if line_indent == 0 && indent == 0 || line_indent < indent {
            // The sequence ended; the rest must be top-level keys of the
            // list document itself.
            end = start;
            break;
        } else {
            // "-" alone, or a line between the entry column and the entry's
            // content: a layout this cutter does not handle.
            return None;
        }
    }
    items.push(&doc[item_start..end]);
    // A top-level key twice (`cat list.yaml configmap.yaml` without `---`)
    // must not be cut around: the full parser reports it as an error rather
    // than letting the second object vanish.
    // The header (up to and including `items:`) and the trailer hold the
    // document's other top-level keys.
    let mut keys: Vec<&str> = Vec::new();
    for part in [&doc[..items_line], &doc[end..]] {
        for line in part.lines() {
            let Some((key, _)) = line.split_once(':') else { continue };
            if key.is_empty() || key.starts_with([' ', '-', '#']) {
                continue;
            }
            let key = key.trim_end().trim_matches(|c| c == '"' || c == '\'');
            if keys.contains(&key) {
                return None;
            }
            keys.push(key);
        }
    }
    Some(items)
}

/// The lines of `b` from `next` on, as (start, end after the line break).
struct Lines<'a> {
    b: &'a [u8],
    next: usize,
}

impl Iterator for Lines<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let start = self.next;
        if start >= self.b.len() {
            return None;
        }
        self.next = memchr::memchr(b'\n', &self.b[start..]).map_or(self.b.len(), |i| start + i + 1);
        Some((start, self.next))
    }
}

/// Whether the text may define or use an anchor, an alias or a merge key,
/// which tie items together. Errs on the side of "yes": a quoted string that
/// merely contains ": &" only costs the fast path.
pub(super) fn may_use_anchors(doc: &str) -> bool {
    [": &", "- &", ": *", "- *", "<<:"].iter().any(|p| doc.contains(p))
}

fn is_blank(line: &str) -> bool {
    // Also true for a line break alone, or `\r\n`.
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
    fn only_whole_marker_lines_split() {
        let stream = "a: |\n  ---not a marker\n---foo: 1\n---\r\nb: 2\n...   \nc: 3\n....\n";
        let docs = documents(stream);
        let got: Vec<(usize, &str)> = docs.iter().map(|d| (d.number, d.text)).collect();
        assert_eq!(
            got,
            vec![(1, "a: |\n  ---not a marker\n---foo: 1\n"), (2, "b: 2\n"), (3, "c: 3\n....\n")]
        );
    }

    #[test]
    fn leading_marker_does_not_create_an_empty_document() {
        let docs = documents("---\napiVersion: v1\n");
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].number, 1);
    }

    /// Each cut item, read alone, is a sequence of just that item.
    fn cut_items_as_values(doc: &str) -> Vec<serde_json::Value> {
        list_items(doc)
            .expect("the list is cut")
            .into_iter()
            .map(|item| match serde_saphyr::from_str(item).unwrap() {
                serde_json::Value::Array(mut one) if one.len() == 1 => one.remove(0),
                other => panic!("item {item:?} reads as {other}, not a one-item sequence"),
            })
            .collect()
    }

    /// The property the loader rests on: the cut items, read alone, are
    /// the items of the whole document.
    fn assert_cut_agrees(doc: &str) {
        let whole: serde_json::Value = serde_saphyr::from_str(doc).unwrap();
        assert_eq!(serde_json::Value::Array(cut_items_as_values(doc)), whole["items"], "{doc:?}");
    }

    #[test]
    fn cuts_kubectl_style_lists() {
        let doc = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n\n- kind: Node\n  metadata:\n    name: b\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
        let items = list_items(doc).unwrap();
        assert_eq!(
            items,
            vec![
                // The blank line between items stays with the first.
                "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n\n",
                "- kind: Node\n  metadata:\n    name: b\n"
            ]
        );
        assert_cut_agrees(doc);
    }

    #[test]
    fn cuts_indented_lists() {
        let doc = "kind: List\nitems:\n  - kind: Pod\n    metadata:\n      name: a\n  - kind: Pod\n    metadata:\n      name: b\n";
        let items = list_items(doc).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1], "  - kind: Pod\n    metadata:\n      name: b\n");
        assert_cut_agrees(doc);
    }

    #[test]
    fn keeps_blank_and_comment_lines_inside_block_scalars() {
        let doc = "kind: List\nitems:\n- kind: ConfigMap\n  data:\n    script: |\n      #!/bin/sh\n      echo hi\n\n      echo bye\n  # a comment\n  metadata:\n    name: c\n\n# between items\n- kind: Pod\n";
        assert_cut_agrees(doc);
        let items = cut_items_as_values(doc);
        assert_eq!(items[0]["data"]["script"], "#!/bin/sh\necho hi\n\necho bye\n");
    }

    #[test]
    fn cuts_what_serde_saphyr_emits() {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            {"kind": "Pod", "metadata": {"name": "a", "labels": {"x": "- not an item", "y": "one\ntwo"}}},
            {"kind": "Pod", "spec": {"containers": [{"name": "c", "args": ["--x", "- y"]}]}}
        ]});
        let yaml = serde_saphyr::to_string(&list).unwrap();
        assert_eq!(serde_json::Value::Array(cut_items_as_values(&yaml)), list["items"]);
    }

    #[test]
    fn crlf_line_breaks_are_cut_too() {
        assert_cut_agrees(
            "kind: List\r\nitems:\r\n- kind: Pod\r\n  a: 1\r\n- kind: Pod\r\n  a: 2\r\n",
        );
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
