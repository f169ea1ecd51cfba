//! JSON text for dumps of database rows and pretty-printed files (OpenCode, Cursor's
//! `store.db`), made without re-encoding what was stored: `{...data, id, sessionID}`
//! (JavaScript's object spread) over a row's `data` text, and whitespace dropped so
//! each object fits on one line of a JSON Lines dump. Strings, numbers and key order
//! are kept byte for byte.

use crate::json::RawObject;

/// Whitespace as JavaScript's `String.prototype.trim` and `JSON.parse` around a
/// value see it (pi and Gemini CLI trim with it).
pub fn is_js_ws(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `text` without whitespace outside strings (`None`: not valid JSON).
pub fn minify(text: &str) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    Some(strip_whitespace(text))
}

/// `text` without whitespace outside strings, for text already known to be valid JSON
/// (a value inside a document that was parsed whole).
pub fn minify_valid(text: &str) -> String {
    strip_whitespace(text)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whitespace outside strings removed; `text` must be valid JSON. (Bytes, not chars:
/// no byte of a multi-byte UTF-8 character is a quote, a backslash or whitespace.)
fn strip_whitespace(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in text.as_bytes() {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
            out.push(b);
        } else if !is_space(b) {
            out.push(b);
        }
    }
    String::from_utf8(out).expect("only ASCII whitespace was removed from UTF-8")
}

/// Whether a valid JSON object's text is already compact (no whitespace outside
/// strings), whether it has any field, and whether one of its top-level keys is
/// among `names` (compared as written, quotes included).
fn scan_object(text: &[u8], names: &[&str]) -> (bool, bool, bool) {
    let (mut compact, mut fields, mut clash) = (true, false, false);
    let (mut in_string, mut escaped, mut depth) = (false, false, 0usize);
    let mut key_start: Option<usize> = None;
    let mut expect_key = false;
    for (i, &b) in text.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                if let Some(start) = key_start.take() {
                    let key = &text[start..=i];
                    clash |= names.iter().any(|n| {
                        key.len() == n.len() + 2 && &key[1..key.len() - 1] == n.as_bytes()
                    });
                }
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                if depth == 1 && expect_key {
                    key_start = Some(i);
                    expect_key = false;
                    fields = true;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                expect_key = b == b'{' && depth == 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            b if is_space(b) => compact = false,
            _ => {}
        }
    }
    (compact, fields, clash)
}

/// Appends `{...object, k: v, ...}` to `out` as JavaScript writes it: the object's
/// fields in order (one named like an added key takes the added value in its place),
/// then the added keys not already there. `extra` values are JSON texts. `false`
/// (nothing appended): `object` is not a JSON object.
pub fn spread_into(out: &mut Vec<u8>, object: &[u8], extra: &[(&str, &str)]) -> bool {
    if serde_json::from_slice::<serde::de::IgnoredAny>(object).is_err() {
        return false;
    }
    let trimmed = object.trim_ascii();
    if trimmed.first() != Some(&b'{') {
        return false;
    }
    let names: Vec<&str> = extra.iter().map(|(k, _)| *k).collect();
    let (compact, fields, clash) = scan_object(trimmed, &names);
    if compact && !clash {
        // The common case (JSON.stringify's output): splice the keys in.
        out.extend_from_slice(&trimmed[..trimmed.len() - 1]);
        for (i, (k, v)) in extra.iter().enumerate() {
            if fields || i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(crate::json::quote(k).as_bytes());
            out.push(b':');
            out.extend_from_slice(v.as_bytes());
        }
        out.push(b'}');
        return true;
    }
    let Ok(text) = std::str::from_utf8(trimmed) else {
        return false;
    };
    let Ok(obj) = RawObject::parse(text) else {
        return false;
    };
    out.push(b'{');
    let mut first = true;
    let mut push = |out: &mut Vec<u8>, key: &str, value: &str| {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(crate::json::quote(key).as_bytes());
        out.push(b':');
        out.extend_from_slice(value.as_bytes());
    };
    for (k, v) in &obj.fields {
        match extra.iter().find(|(name, _)| name == k) {
            Some((_, value)) => push(out, k, value),
            None => push(out, k, &strip_whitespace(v.get())),
        }
    }
    for (name, value) in extra {
        if !obj.has(name) {
            push(out, name, value);
        }
    }
    out.push(b'}');
    true
}

/// [`spread_into`] as a new string.
pub fn spread(object: &str, extra: &[(&str, String)]) -> Option<String> {
    let extra: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut out = Vec::with_capacity(object.len() + 64);
    spread_into(&mut out, object.as_bytes(), &extra)
        .then(|| String::from_utf8(out).expect("UTF-8 in, UTF-8 out"))
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

/// Rewrites `\uD800`-style escapes to `\uFFFD` (same length, so offsets hold).
pub fn replace_surrogate_escapes(t: &str) -> String {
    let b = t.as_bytes();
    let mut out = String::with_capacity(t.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            if b[i + 1] == b'u' && i + 6 <= b.len() {
                let hex = &t[i + 2..i + 6];
                if let Ok(n) = u16::from_str_radix(hex, 16)
                    && (0xD800..=0xDFFF).contains(&n)
                {
                    out.push_str("\\uFFFD");
                    i += 6;
                    continue;
                }
            }
            out.push_str(&t[i..i + 2]);
            i += 2;
            continue;
        }
        let ch = t[i..].chars().next().unwrap_or('\u{FFFD}');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
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
        // Pretty-printed, or a nested "id": the slow path, same result shape.
        assert_eq!(
            spread("{ \"a\" : { \"id\": 1 } }", &[("id", q("m"))]).unwrap(),
            r#"{"a":{"id":1},"id":"m"}"#
        );
        assert_eq!(
            spread(r#"{"a":{"id":1}}"#, &[("id", q("m"))]).unwrap(),
            r#"{"a":{"id":1},"id":"m"}"#
        );
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

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i32>().prop_map(serde_json::Value::from),
            "[a-z \"\\\\{}:,é]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("(id|a|b|sessionID| x)", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The spliced fast path and the parsing slow path agree: the same object,
        /// compact or pretty-printed, spreads to the same text.
        #[test]
        fn compact_and_pretty_objects_spread_alike(
            fields in prop::collection::btree_map("(id|a|b|sessionID| x|\"q)", value(), 0..5)
        ) {
            let obj = serde_json::Value::Object(fields.into_iter().collect());
            let compact = serde_json::to_string(&obj).unwrap();
            let pretty = serde_json::to_string_pretty(&obj).unwrap();
            let extra = [("id", "\"m\"".to_string()), ("sessionID", "\"s\"".to_string())];
            let a = spread(&compact, &extra).unwrap();
            let b = spread(&pretty, &extra).unwrap();
            prop_assert_eq!(&a, &b);
            let v: serde_json::Value = serde_json::from_str(&a).unwrap();
            prop_assert_eq!(&v["id"], "m");
            prop_assert_eq!(&v["sessionID"], "s");
        }
    }
}
