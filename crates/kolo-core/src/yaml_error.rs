//! serde-saphyr's errors in words for the people who wrote the YAML: its
//! budget breaches print as Rust debug output (`ScalarBytes {
//! total_scalar_bytes: 6033 }`) and its duplicate-key error tells the user to
//! "set DuplicateKeyPolicy in Options", an option of the library, not of
//! kolo. Every kolo loader of YAML formats errors with [`describe`].

use serde_saphyr::Error;
use serde_saphyr::budget::BudgetBreach;

/// The message of a YAML error: kolo's own words for duplicate keys and
/// size / complexity limits (with the line and column), serde-saphyr's
/// message (with its snippet of the input) for everything else.
pub fn describe(error: &Error) -> String {
    match own_words(error) {
        Some(message) => match error.location() {
            Some(at) => format!("line {} column {}: {message}", at.line(), at.column()),
            None => message,
        },
        None => error.to_string(),
    }
}

/// kolo's wording of the errors serde-saphyr words for its own users.
fn own_words(error: &Error) -> Option<String> {
    match error {
        Error::WithSnippet { error, .. } | Error::AliasError { error, .. } => own_words(error),
        Error::DuplicateMappingKey { key: Some(key), .. } => {
            Some(format!("duplicate key {key:?} (a key may appear only once in a mapping)"))
        }
        Error::DuplicateMappingKey { key: None, .. } => {
            Some("duplicate key (a key may appear only once in a mapping)".to_string())
        }
        Error::Budget { breach, .. } => Some(format!(
            "the document is too large or too complex to read: {}",
            breach_words(breach)
        )),
        _ => None,
    }
}

/// What a budget breach means, in words.
fn breach_words(breach: &BudgetBreach) -> String {
    match breach {
        BudgetBreach::ScalarBytes { total_scalar_bytes } => format!(
            "its values add up to more than {total_scalar_bytes} bytes (each use of an alias \
             counts its anchor's value again)"
        ),
        BudgetBreach::Aliases { aliases } => format!("more than {aliases} aliases (*name)"),
        BudgetBreach::Anchors { anchors } => format!("more than {anchors} anchors (&name)"),
        BudgetBreach::AliasAnchorRatio { aliases, anchors } => {
            format!("{aliases} aliases for {anchors} anchors (an alias bomb?)")
        }
        BudgetBreach::Depth { depth } => format!("nested {depth} levels deep"),
        BudgetBreach::Nodes { nodes } => format!("more than {nodes} values"),
        BudgetBreach::Events { events } => format!("more than {events} parser events"),
        BudgetBreach::Documents { documents } => format!("more than {documents} documents"),
        BudgetBreach::MergeKeys { merge_keys } => format!("more than {merge_keys} merge keys (<<)"),
        BudgetBreach::SequenceUnbalanced => "a closing bracket without its opening one".into(),
        // Limits kolo's loaders do not use (includes, readers, properties).
        _ => "a parser limit was reached".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str, options: serde_saphyr::Options) -> Error {
        serde_saphyr::from_str_with_options::<serde_json::Value>(text, options).unwrap_err()
    }

    #[test]
    fn no_library_internals_in_messages() {
        let alias = format!("x: &a \"{}\"\n{}", "y".repeat(100), "k: *a\n".replace('k', "k1"));
        let alias = format!("{alias}k2: *a\nk3: *a\n");
        let small = serde_saphyr::options! {
            budget: serde_saphyr::budget! { max_total_scalar_bytes: 150 },
        };
        // (input, options, the message starts with, contains)
        let cases = [
            (
                "a: 1\nb: 2\na: 3\n".to_string(),
                serde_saphyr::Options::default(),
                "line 3 column 1: duplicate key \"a\"",
            ),
            (alias, small, "line "),
        ];
        for (text, options, starts) in cases {
            let message = describe(&error_of(&text, options));
            assert!(message.starts_with(starts), "{message}");
            for internal in ["DuplicateKeyPolicy", "Options", "ScalarBytes", "total_scalar_bytes"] {
                assert!(!message.contains(internal), "{internal} in {message}");
            }
        }
        // Other errors keep serde-saphyr's message and snippet.
        let message = describe(&error_of("a: [1, 2\n", serde_saphyr::Options::default()));
        assert!(message.contains("line"), "{message}");
    }
}
