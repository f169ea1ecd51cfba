//! JSON text for dumps of database rows and pretty-printed files (OpenCode, Cursor's
//! `store.db`), made without re-encoding what was stored: `{...data, id, sessionID}`
//! (JavaScript's object spread) over a row's `data` text, and whitespace dropped so
//! each object fits on one line of a JSON Lines dump. Strings, numbers and key order
//! are kept byte for byte.

use crate::json::RawObject;

/// `text` without whitespace outside strings (`None`: not valid JSON).
pub fn minify(text: &str) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    Some(strip_whitespace(text))
}

/// Whitespace outside strings removed; `text` must be valid JSON.
fn strip_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// `{...object, k: v, ...}` as JavaScript writes it: the object's fields in order (one
/// named like an added key takes the added value in its place), then the added keys
/// not already there. `extra` values are JSON texts. `None`: `object` is not a JSON
/// object.
pub fn spread(object: &str, extra: &[(&str, String)]) -> Option<String> {
    let obj = RawObject::parse(object).ok()?;
    let mut out = String::with_capacity(object.len() + 64);
    out.push('{');
    let mut first = true;
    let mut push = |out: &mut String, key: &str, value: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&crate::json::quote(key));
        out.push(':');
        out.push_str(value);
    };
    for (k, v) in &obj.fields {
        match extra.iter().find(|(name, _)| name == k) {
            Some((_, value)) => push(&mut out, k, value),
            None => push(&mut out, k, &strip_whitespace(v.get())),
        }
    }
    for (name, value) in extra {
        if !obj.has(name) {
            push(&mut out, name, value);
        }
    }
    out.push('}');
    Some(out)
}

/// An ordered JSON object being written key by key (a hydrated row).
#[derive(Default)]
pub struct ObjectWriter {
    out: String,
}

impl ObjectWriter {
    /// Adds `key` with a JSON text value.
    pub fn raw(&mut self, key: &str, value: &str) -> &mut Self {
        self.out.push(if self.out.is_empty() { '{' } else { ',' });
        self.out.push_str(&crate::json::quote(key));
        self.out.push(':');
        self.out.push_str(value);
        self
    }

    pub fn string(&mut self, key: &str, value: &str) -> &mut Self {
        self.raw(key, &crate::json::quote(value))
    }

    pub fn finish(&mut self) -> String {
        let mut s = std::mem::take(&mut self.out);
        if s.is_empty() {
            s.push('{');
        }
        s.push('}');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_appends_like_javascript_and_keeps_stored_bytes() {
        let q = |s: &str| crate::json::quote(s);
        assert_eq!(
            spread(
                r#"{"role":"user","t":1.50}"#,
                &[("id", q("m1")), ("sessionID", q("s"))]
            )
            .unwrap(),
            r#"{"role":"user","t":1.50,"id":"m1","sessionID":"s"}"#
        );
        assert_eq!(spread("{}", &[("id", q("m"))]).unwrap(), r#"{"id":"m"}"#);
        // A stored field of the same name keeps its place and takes the new value.
        assert_eq!(
            spread(r#"{"id":"old","a":[1, 2]}"#, &[("id", q("new"))]).unwrap(),
            r#"{"id":"new","a":[1,2]}"#
        );
        assert_eq!(spread("[1]", &[]), None);
        assert_eq!(spread("{\"a\":", &[]), None);
    }

    #[test]
    fn minify_drops_only_whitespace_outside_strings() {
        assert_eq!(
            minify("{\n  \"a b\": \"x \\\" y\\n\",\n  \"c\": [ 1 , 2 ]\n}").unwrap(),
            "{\"a b\":\"x \\\" y\\n\",\"c\":[1,2]}"
        );
        assert_eq!(minify("{\"a\": "), None);
        assert_eq!(minify(""), None);
    }
}
