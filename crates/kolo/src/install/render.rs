//! Fills a manifest template's `${key}` placeholders from a context. The
//! templates are kolo's own (compiled in) and every value is checked
//! before (see `values.rs`), so plain substitution is safe; an unknown
//! placeholder is an error, never an empty string.

use std::collections::BTreeMap;

use super::InstallError;

/// The placeholder values, by key.
pub type Context = BTreeMap<String, String>;

/// `template` with every `${key}` replaced by `context[key]`.
pub fn render(file: &str, template: &str, context: &Context) -> Result<String, InstallError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| InstallError::Template {
            file: file.to_string(),
            reason: "an unclosed ${".to_string(),
        })?;
        let key = &after[..end];
        let value = context.get(key).ok_or_else(|| InstallError::Template {
            file: file.to_string(),
            reason: format!("no value for ${{{key}}}"),
        })?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_and_the_rest_kept() {
        let ctx = Context::from([("a".into(), "1".into()), ("b.c".into(), "x y".into())]);
        let cases = [
            ("", ""),
            ("plain $(NODE_IP) $x {a}", "plain $(NODE_IP) $x {a}"),
            ("${a}", "1"),
            ("v: ${a}-${b.c}!", "v: 1-x y!"),
        ];
        for (template, want) in cases {
            assert_eq!(render("t", template, &ctx).unwrap(), want, "{template:?}");
        }
    }

    #[test]
    fn an_unknown_or_unclosed_placeholder_is_an_error_naming_the_file() {
        let ctx = Context::new();
        let err = render("agent.yaml", "x: ${nope}", &ctx).unwrap_err().to_string();
        assert!(err.contains("agent.yaml") && err.contains("${nope}"), "{err}");
        let err = render("agent.yaml", "x: ${nope", &ctx).unwrap_err().to_string();
        assert!(err.contains("unclosed"), "{err}");
    }
}
