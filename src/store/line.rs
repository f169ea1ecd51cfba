//! Parsing one transcript line (fen session format v1/v2) into what the index needs.
//! Lenient by design (§1.1): anything that is not a JSON object with a string `type`
//! is `Malformed`; unknown types are `Custom`; unknown fields are ignored. Messages
//! are located, not copied: `raw` is the writer's bytes as a slice of the line.

use crate::json::{RawObject, as_string, is_null};
use serde_json::value::RawValue;

pub enum Line<'a> {
    Malformed(String),
    Header(Header),
    Entry(Entry<'a>),
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    pub id: Option<String>,
    pub version: u64,
    pub timestamp: Option<String>,
    pub cwd: Option<String>,
}

pub struct Entry<'a> {
    pub id: Option<String>,
    pub timestamp: Option<String>,
    pub body: Body<'a>,
}

pub enum Body<'a> {
    Message {
        role: String,
        raw: &'a str,
    },
    Compaction(CompactionFields<'a>),
    Title(String),
    Metadata(serde_json::Map<String, serde_json::Value>),
    /// Custom entries, and known types whose fields have the wrong shape
    /// (a `title` without a string title is shown in the transcript, nothing more).
    Custom(String),
}

pub enum FirstKept {
    Absent,
    Null,
    Id(String),
    WrongType,
}

pub struct CompactionFields<'a> {
    /// `None` when `summary` is missing or not a string (the compaction is then invalid).
    pub summary: Option<String>,
    pub first_kept: FirstKept,
    /// `Some(Ok(items))`: a valid replacement list; `Some(Err(why))`: given but invalid.
    pub messages: Option<Result<Vec<&'a RawValue>, String>>,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub trigger: Option<String>,
}

/// The form of a compaction that §3 accepts.
pub enum ValidCompaction<'a, K> {
    /// `messages` is a valid replacement list.
    Replacement(Vec<&'a RawValue>),
    /// `first-kept-entry-id`: `None` for null, else what `kept` found for the id.
    FirstKept(Option<K>),
}

impl<'a> CompactionFields<'a> {
    /// §3's validity rule, the one place it is written: valid when `messages` is a
    /// valid list, OR first-kept is null, OR `kept(id)` finds an earlier message.
    /// Read literally, a bad `messages` beside a good first-kept still leaves the
    /// compaction valid (in first-kept form). `Err` says why it is ignored.
    pub fn validity<K>(
        &mut self,
        kept: impl FnOnce(&str) -> Result<K, String>,
    ) -> Result<ValidCompaction<'a, K>, String> {
        if self.summary.is_none() {
            return Err("summary is missing or not a string".into());
        }
        match (self.messages.take(), &self.first_kept) {
            (Some(Ok(items)), _) => Ok(ValidCompaction::Replacement(items)),
            (_, FirstKept::Null) => Ok(ValidCompaction::FirstKept(None)),
            (_, FirstKept::Id(id)) => kept(id).map(|k| ValidCompaction::FirstKept(Some(k))),
            (Some(Err(why)), _) => Err(why),
            (None, FirstKept::WrongType) => {
                Err("first-kept-entry-id is neither a string nor null".into())
            }
            (None, FirstKept::Absent) => {
                Err("neither first-kept-entry-id nor messages is given".into())
            }
        }
    }
}

/// A JSON object with a non-empty string `role`: what every message must be.
/// `raw` must already be a valid JSON value (as the loader's line parse guarantees).
pub fn message_role(raw: &str) -> Option<String> {
    // Fast path: writers nearly always put the role first. A valid object that starts
    // `{"role":"<plain>"` has that role (keys are unique in what fen-fs writes; a
    // duplicate later would be the writer's own ambiguity). Saves a second scan of
    // every message's content on load.
    if let Some(rest) = raw.strip_prefix("{\"role\":\"")
        && let Some(end) = rest.find('"')
        && !rest[..end].contains('\\')
        && end > 0
    {
        return Some(rest[..end].to_string());
    }
    message_role_slow(raw)
}

fn message_role_slow(raw: &str) -> Option<String> {
    let obj = RawObject::parse(raw).ok()?;
    let role = as_string(obj.get("role")?)?;
    (!role.is_empty()).then_some(role)
}

/// A line without its trailing blanks (`\r` of CRLF included), as every reader of
/// the format sees it.
pub fn trim_line_end(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|b| !b" \t\r".contains(b))
        .map_or(0, |p| p + 1);
    &line[..end]
}

pub fn parse_line(text: &str) -> Line<'_> {
    let obj = match RawObject::parse(text) {
        Ok(o) => o,
        Err(e) => return Line::Malformed(e),
    };
    let Some(kind) = obj.get("type").and_then(as_string) else {
        return Line::Malformed("no string \"type\"".into());
    };
    let string_field = |k: &str| obj.get(k).and_then(as_string);
    if kind == "session" {
        return Line::Header(Header {
            id: string_field("id"),
            version: obj
                .get("version")
                .and_then(|v| v.get().parse().ok())
                .unwrap_or(1),
            timestamp: string_field("timestamp"),
            cwd: string_field("cwd"),
        });
    }
    let body = match kind.as_str() {
        "message" => {
            let Some(raw) = obj.get("message") else {
                return Line::Malformed("message entry without \"message\"".into());
            };
            match message_role(raw.get()) {
                Some(role) => Body::Message {
                    role,
                    raw: raw.get(),
                },
                None => {
                    return Line::Malformed("message is not an object with a role".into());
                }
            }
        }
        "compaction" => Body::Compaction(parse_compaction(&obj)),
        "title" => match string_field("title") {
            Some(t) => Body::Title(t),
            None => Body::Custom(kind),
        },
        "metadata" => match obj
            .get("data")
            .and_then(|d| serde_json::from_str::<serde_json::Map<_, _>>(d.get()).ok())
        {
            Some(m) => Body::Metadata(m),
            None => Body::Custom(kind),
        },
        _ => Body::Custom(kind),
    };
    Line::Entry(Entry {
        id: string_field("id"),
        timestamp: string_field("timestamp"),
        body,
    })
}

fn parse_compaction<'a>(obj: &RawObject<'a>) -> CompactionFields<'a> {
    let first_kept = match obj.get("first-kept-entry-id") {
        None => FirstKept::Absent,
        Some(v) if is_null(v) => FirstKept::Null,
        Some(v) => match as_string(v) {
            Some(s) => FirstKept::Id(s),
            None => FirstKept::WrongType,
        },
    };
    let messages = obj.get("messages").map(|v| replacement_messages(v.get()));
    let int = |k: &str| obj.get(k).and_then(|v| v.get().parse::<u64>().ok());
    CompactionFields {
        summary: obj.get("summary").and_then(as_string),
        first_kept,
        messages,
        tokens_before: int("tokens-before"),
        tokens_after: int("tokens-after"),
        trigger: obj.get("trigger").and_then(as_string),
    }
}

/// A compaction's `messages`: an array of objects with a string role (§3).
pub fn replacement_messages(raw: &str) -> Result<Vec<&RawValue>, String> {
    let items: Vec<&RawValue> =
        serde_json::from_str(raw).map_err(|_| "messages is not an array".to_string())?;
    for (i, item) in items.iter().enumerate() {
        if message_role(item.get()).is_none() {
            return Err(format!("messages[{i}] is not an object with a string role"));
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_raw_is_a_slice_of_the_line() {
        let line =
            r#"{"type":"message","id":"x","message": {"role":"user", "content":"hi"} ,"zz":1}"#;
        let Line::Entry(e) = parse_line(line) else {
            panic!()
        };
        let Body::Message { role, raw } = e.body else {
            panic!()
        };
        assert_eq!(role, "user");
        assert_eq!(raw, r#"{"role":"user", "content":"hi"}"#);
        assert_eq!(&line[crate::json::offset_in(line, raw)..][..raw.len()], raw);
    }

    #[test]
    fn malformed_and_unknown() {
        assert!(matches!(parse_line("[1,2]"), Line::Malformed(_)));
        assert!(matches!(parse_line("{\"a\":1}"), Line::Malformed(_)));
        assert!(matches!(
            parse_line("{\"type\":\"message\",\"message\":{\"role\":\"\"}}"),
            Line::Malformed(_)
        ));
        assert!(matches!(
            parse_line("{\"type\":\"bash\",\"x\":[1]}"),
            Line::Entry(Entry {
                body: Body::Custom(_),
                ..
            })
        ));
        assert!(matches!(
            parse_line("{\"type\":\"session\",\"version\":2}"),
            Line::Header(Header { version: 2, .. })
        ));
    }
}
