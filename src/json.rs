//! Small JSON helpers on top of serde_json: an object's top-level fields in file order
//! as raw (unparsed) slices of the input. This is how messages stay byte-for-byte what
//! the writer sent, and how the loader finds where a message sits inside its line.

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

pub mod strict;

/// A JSON object's top-level fields in order, values left raw.
pub struct RawObject<'a> {
    pub fields: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> RawObject<'a> {
    /// Parses `text` as one JSON object (surrounding whitespace allowed).
    pub fn parse(text: &'a str) -> Result<Self, String> {
        let obj: RawObject<'a> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Ok(obj)
    }

    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// The top-level fields of `text`, values as raw JSON text, when `RawObject::parse`
/// accepts it, and the same fields. Found by the strict scanner (1.5× serde_json's
/// speed on session lines); what it refuses but serde_json's raw values take
/// (nesting 128 deep, numbers beyond an f64) goes to serde_json.
pub fn object_fields(text: &str) -> Option<Vec<strict::Field<'_>>> {
    match strict::scan(text) {
        Ok(fields) => fields,
        Err(_) => RawObject::parse(text)
            .ok()
            .map(|o| o.fields.into_iter().map(|(k, v)| (k, v.get())).collect()),
    }
}

/// A JSON string (a key or a value), borrowed from the input unless it has escapes.
pub struct JsonStr<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for JsonStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = JsonStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(StrVisitor)
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjVisitor;
        impl<'de> Visitor<'de> for ObjVisitor {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some((k, v)) = map.next_entry::<JsonStr<'de>, &'de RawValue>()? {
                    fields.push((k.0, v));
                }
                Ok(RawObject { fields })
            }
        }
        d.deserialize_map(ObjVisitor)
    }
}

/// Where `inner` (a sub-slice of `outer`) starts inside `outer`.
pub fn offset_in(outer: &str, inner: &str) -> usize {
    inner.as_ptr() as usize - outer.as_ptr() as usize
}

/// The raw value as a string, if it is a JSON string.
pub fn as_string(v: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(v.get()).ok()
}

pub fn is_null(v: &RawValue) -> bool {
    v.get() == "null"
}

/// JSON-encodes a string.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

#[cfg(test)]
mod tests {
    use super::strict::validate as validate_strict;

    #[test]
    fn strict_validation_matches_serde_json_value() {
        for text in [
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\ud800\udc00"}"#,
            r#"{"a":[1,2.5,-3,true,null,{"b":"c"}]}"#,
            r#"{"a":1,}"#,
            r#"[1 2]"#,
            "{\"a\":\"\u{0}\"}",
        ] {
            assert_eq!(
                validate_strict(text).is_ok(),
                serde_json::from_str::<serde_json::Value>(text).is_ok(),
                "{text}"
            );
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(validate_strict(&deep).is_err());
        let ok_depth = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(validate_strict(&ok_depth).is_ok());
    }
}
