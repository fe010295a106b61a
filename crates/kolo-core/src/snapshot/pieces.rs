//! Cutting input text into pieces that decode independently: one per
//! document, and one per item of a list document.
//!
//! Pieces borrow from the input (JSON items and YAML items and documents are
//! slices of it), so a 70 MB dump is scanned once here, copying nothing, and
//! each item is deserialized straight into its type later, on whichever
//! thread gets it.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::split;
use super::{Position, SnapshotError, SyntaxError};

/// A piece of input still to be decoded, and where it came from.
pub(super) struct Piece<'a> {
    pub body: Body<'a>,
    pub position: Position,
    /// The kind to assume when the object has none (items of a typed list
    /// such as `PodList` may omit it).
    pub kind_hint: Option<String>,
}

/// One object's text or value.
pub(super) enum Body<'a> {
    /// JSON text of one object (a slice of the input).
    Json(&'a str),
    /// YAML text of one list item, cut out with its `- ` line: a sequence
    /// of that one item.
    YamlItem(&'a str),
    /// YAML text of one document holding one object.
    YamlDoc(&'a str),
    /// An already-parsed value (from a YAML document parsed whole).
    Value(Value),
}

/// Cuts input into pieces, detecting JSON (first non-blank character `{` or
/// `[`) or YAML. Input that starts like JSON but is not JSON is read as
/// YAML, whose flow style (`{apiVersion: v1, kind: Node}`) starts the same
/// way; if that fails too, the error is the JSON one when the input looks
/// like JSON (`{"`), else the YAML one.
pub(super) fn pieces<'a>(
    text: &'a str,
    source_name: &str,
) -> Result<Vec<Piece<'a>>, SnapshotError> {
    let start = text.trim_start();
    if !matches!(start.as_bytes().first(), Some(b'{' | b'[')) {
        return yaml_pieces(text, source_name);
    }
    let json_error = match json_pieces(text, source_name) {
        Ok(pieces) => return Ok(pieces),
        Err(e) => e,
    };
    match yaml_pieces(text, source_name) {
        Ok(pieces) => Ok(pieces),
        Err(yaml_error) if start.starts_with('{') && !looks_like_json(&start[1..]) => {
            Err(yaml_error)
        }
        Err(_) => Err(json_error),
    }
}

/// Whether the text after an opening `{` reads as a JSON object: a quoted
/// key or the closing brace.
fn looks_like_json(after_brace: &str) -> bool {
    matches!(after_brace.trim_start().as_bytes().first(), Some(b'"' | b'}'))
}

/// Appends one piece per list item, numbered from 1 inside `document`.
fn push_items<'a>(
    out: &mut Vec<Piece<'a>>,
    items: impl IntoIterator<Item = Body<'a>>,
    document: Position,
    kind_hint: Option<String>,
) {
    out.extend(items.into_iter().enumerate().map(|(i, body)| Piece {
        body,
        position: Position { item: Some(i + 1), ..document },
        kind_hint: kind_hint.clone(),
    }));
}

fn syntax_error(
    source_name: &str,
    position: Position,
    format: &'static str,
    message: String,
) -> SnapshotError {
    SnapshotError::Syntax(Box::new(SyntaxError {
        source_name: source_name.to_string(),
        position,
        format,
        message,
    }))
}

/// The top-level fields that tell a list from an object.
#[derive(Deserialize)]
struct ListHeader<'a> {
    #[serde(borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    items: Option<&'a RawValue>,
}

/// Splits JSON input: a stream of top-level values, each an object, a list
/// object (kind `...List` with `items`), or an array of objects.
fn json_pieces<'a>(text: &'a str, source_name: &str) -> Result<Vec<Piece<'a>>, SnapshotError> {
    let mut out = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
    for (index, raw) in stream.enumerate() {
        let position = Position { document: index + 1, item: None };
        let syntax =
            |e: serde_json::Error| syntax_error(source_name, position, "JSON", e.to_string());
        let raw = raw.map_err(syntax)?.get();
        let items: Option<(Vec<&RawValue>, Option<String>)> = match raw.as_bytes().first() {
            Some(b'[') => Some((serde_json::from_str(raw).map_err(syntax)?, None)),
            Some(b'{') => match serde_json::from_str::<ListHeader>(raw) {
                Ok(ListHeader { kind: Some(kind), items: Some(items) })
                    if is_list_kind(&kind) && items.get().starts_with('[') =>
                {
                    Some((
                        serde_json::from_str(items.get()).map_err(syntax)?,
                        item_kind_hint(&kind),
                    ))
                }
                // Not a list, or a header that does not read: decoding the
                // object reports what is wrong with it.
                _ => None,
            },
            _ => None,
        };
        match items {
            Some((items, hint)) => {
                push_items(&mut out, items.into_iter().map(|i| Body::Json(i.get())), position, hint)
            }
            None => out.push(Piece { body: Body::Json(raw), position, kind_hint: None }),
        }
    }
    Ok(out)
}

/// Splits YAML input: one piece per document, and one per item of a list
/// document when [`split::list_items`] can cut it safely. A document with a
/// top-level `kind` that is not a list is one object, parsed later in
/// parallel with the rest; other documents (bare sequences, lists that
/// cannot be cut) are parsed whole here.
fn yaml_pieces<'a>(text: &'a str, source_name: &str) -> Result<Vec<Piece<'a>>, SnapshotError> {
    let mut out = Vec::new();
    for doc in split::documents(text) {
        let position = Position { document: doc.number, item: None };
        let kind = top_level_kind(doc.text);
        match kind {
            Some(kind) if !is_list_kind(kind) => {
                out.push(Piece { body: Body::YamlDoc(doc.text), position, kind_hint: None });
                continue;
            }
            Some(kind) => {
                if let Some(items) = split::list_items(doc.text) {
                    let items = items.into_iter().map(Body::YamlItem);
                    push_items(&mut out, items, position, item_kind_hint(kind));
                    continue;
                }
            }
            None => {}
        }
        explode_value(parse_yaml(doc.text, position, source_name)?, position, &mut out);
    }
    Ok(out)
}

/// Turns one parsed YAML document into pieces: a list (a sequence, or a
/// mapping whose kind ends in `List` and that has `items`) becomes its items.
fn explode_value(value: Value, position: Position, out: &mut Vec<Piece<'_>>) {
    match value {
        Value::Array(items) => push_items(out, items.into_iter().map(Body::Value), position, None),
        Value::Object(mut map)
            if map.get("kind").and_then(Value::as_str).is_some_and(is_list_kind)
                && map.get("items").is_some_and(Value::is_array) =>
        {
            let hint = map.get("kind").and_then(Value::as_str).and_then(item_kind_hint);
            if let Some(Value::Array(items)) = map.remove("items") {
                push_items(out, items.into_iter().map(Body::Value), position, hint);
            }
        }
        value => out.push(Piece { body: Body::Value(value), position, kind_hint: None }),
    }
}

fn is_list_kind(kind: &str) -> bool {
    kind.ends_with("List")
}

/// `PodList` items may omit their kind; `List` items never do.
fn item_kind_hint(list_kind: &str) -> Option<String> {
    let kind = list_kind.strip_suffix("List")?;
    (!kind.is_empty()).then(|| kind.to_string())
}

/// The value of a top-level `kind:` line, if the document has one.
fn top_level_kind(doc: &str) -> Option<&str> {
    let at = split::line_starting_with(doc, "kind:")?;
    let value = &doc[at + "kind:".len()..];
    let value = &value[..value.find('\n').unwrap_or(value.len())];
    Some(value.trim().trim_matches(|c| c == '"' || c == '\''))
}

/// Parses one YAML document with serde-saphyr.
pub(super) fn parse_yaml(
    text: &str,
    position: Position,
    source_name: &str,
) -> Result<Value, SnapshotError> {
    serde_saphyr::from_str_with_options(text, yaml_options(text.len()))
        .map_err(|e| syntax_error(source_name, position, "YAML", crate::yaml_error::describe(&e)))
}

/// serde-saphyr's default budget stops at 250,000 nodes, which a 5,000-node
/// snapshot passes. Node, event and scalar budgets here grow with the input
/// (a YAML node costs at least one byte, so they cannot be exceeded by honest
/// input), while the alias limits, which guard against "billion laughs"
/// expansion, stay at their defaults.
fn yaml_options(len: usize) -> serde_saphyr::Options {
    let len = len.max(1024);
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: len,
            max_events: 4 * len,
            max_total_scalar_bytes: len,
            max_documents: len,
        },
    }
}
