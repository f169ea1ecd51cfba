//! What the agents' conversions to neutral messages share: reading JSON shapes that
//! several formats use (a string or text blocks, data URLs, JSON as readable text).
//! Each agent's own shapes stay in its module (`claude/neutral.rs`, ...).

pub mod anthropic;
pub mod openai;

use crate::neutral::{Part, Role};
use serde_json::Value;

/// A role by its usual name; anything else is kept by name.
pub fn role_of(name: &str) -> Role {
    match name {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        "system" | "developer" => Role::System,
        other => Role::Other(other.to_string()),
    }
}

/// A value as text a person reads: a string as it is, anything else as compact JSON
/// (`null` as nothing).
pub fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A string field of an object.
pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A `data:<mime>;base64,<data>` URL as an inline image; any other URL as a linked one.
pub fn image_from_url(url: &str) -> Part {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((head, data)) = rest.split_once(',')
        && let Some(mime) = head.strip_suffix(";base64")
    {
        return Part::Image {
            mime: mime.to_string(),
            data: Some(data.to_string()),
            url: None,
        };
    }
    Part::Image {
        mime: String::new(),
        data: None,
        url: Some(url.to_string()),
    }
}

/// Tool arguments stored as a JSON string: the parsed value, or the string itself
/// when it does not parse.
pub fn parse_arguments(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// One message object as bytes of `conversation.json`, as a value. pi keeps lone
/// surrogate escapes (JSON.parse accepts them, serde_json does not): those read as
/// U+FFFD.
pub fn parse_message(bytes: &[u8]) -> Option<Value> {
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Some(v);
    }
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str(&super::json_text::replace_surrogate_escapes(&text)).ok()
}

/// Whether a message is made of text parts only, each passing `test` (and at least one).
pub fn all_texts(parts: &[Part], test: impl Fn(&str) -> bool) -> bool {
    !parts.is_empty()
        && parts
            .iter()
            .all(|p| matches!(p, Part::Text { text } if test(text.trim_start())))
}

/// The first text part's text.
pub fn first_text(parts: &[Part]) -> Option<&str> {
    parts.iter().find_map(|p| match p {
        Part::Text { text } => Some(text.as_str()),
        _ => None,
    })
}

/// Replaces the first text part's text with `f` of it.
pub fn map_first_text(parts: &mut [Part], f: impl FnOnce(&str) -> String) {
    if let Some(Part::Text { text }) = parts.iter_mut().find(|p| matches!(p, Part::Text { .. })) {
        *text = f(text);
    }
}
