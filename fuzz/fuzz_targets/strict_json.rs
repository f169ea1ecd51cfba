//! The strict JSON scanner against serde_json on arbitrary bytes: the same verdict
//! as `serde_json::Value`, and for an object the same fields as `RawObject` (also
//! through the non-validating splitter, for nested objects, and through
//! `json::object_fields`, with RawObject's own verdict). The first byte, when
//! odd, also wraps the rest in that many arrays, to reach the nesting limit.
#![no_main]
use fen_fs::json::{RawObject, strict};
use libfuzzer_sys::fuzz_target;
use std::borrow::Cow;

fn raw_fields(text: &str) -> Vec<(String, &str)> {
    let obj = RawObject::parse(text).expect("serde_json took this object");
    obj.fields
        .into_iter()
        .map(|(k, v)| (k.into_owned(), v.get()))
        .collect()
}

fn check(text: &str) {
    // What the readers take a line's fields from: RawObject's verdict and fields.
    let raw = RawObject::parse(text)
        .ok()
        .map(|o| o.fields.into_iter().map(|(k, v)| (k, v.get())).collect());
    assert_eq!(fen_fs::json::object_fields(text), raw, "{text:?}");
    let ours = strict::scan(text);
    let theirs = serde_json::from_str::<serde_json::Value>(text);
    assert_eq!(
        ours.is_ok(),
        theirs.is_ok(),
        "{text:?}: {ours:?} vs {theirs:?}"
    );
    assert_eq!(strict::validate(text).is_ok(), ours.is_ok(), "{text:?}");
    let Ok(Some(fields)) = ours else { return };
    let ours: Vec<(String, &str)> = fields.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(ours, raw_fields(text), "{text:?}");
    let split: Vec<_> = strict::valid_object_fields(text).collect();
    assert_eq!(split, fields, "{text:?}");
    for (_, v) in &fields {
        let s = strict::string_value(v).map(Cow::into_owned);
        assert_eq!(s, serde_json::from_str::<String>(v).ok(), "{v:?}");
        if v.starts_with('{') {
            let nested: Vec<(String, &str)> = strict::valid_object_fields(v)
                .map(|(k, v)| (k.into_owned(), v))
                .collect();
            assert_eq!(nested, raw_fields(v), "{v:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check(text);
    if let Some(&d) = data.first()
        && d % 2 == 1
        && let Some(rest) = text.get(1..)
    {
        let d = d as usize / 2;
        check(&format!("{}{rest}{}", "[".repeat(d), "]".repeat(d)));
    }
});
