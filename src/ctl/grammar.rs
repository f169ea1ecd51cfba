//! The control-line grammar of §4: one JSON object per line, validated into entries
//! to append, or an error with its errno and a reason a person can act on.

use crate::error::{Error, Result};
use crate::json::strict::{self, Field, string_value};
use crate::store::entry::{NewCompaction, NewEntry};
use crate::store::index::SessionIndex;
use crate::store::line::replacement_messages;
use crate::store::naming::is_valid_session_id;

/// Fields the daemon assigns; a line that sets one is invalid.
pub const RESERVED: [&str; 3] = ["id", "parent-id", "timestamp"];

/// A root `ctl` line: where the new session lives and its first entry.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSessionRequest {
    pub cwd: String,
    pub session_id: Option<String>,
    pub first: NewEntry,
}

/// Validates a line for a session's `ctl`.
pub fn parse_session_line(line: &[u8]) -> Result<NewEntry> {
    let (text, obj) = strict_object(line)?;
    entry_from(text, obj, false)
}

/// Validates a line for the root `ctl`: `cwd`, optional `session-id`, first entry.
pub fn parse_root_line(line: &[u8]) -> Result<NewSessionRequest> {
    let (text, mut obj) = strict_object(line)?;
    let cwd = match take(&mut obj, "cwd") {
        None => {
            return Err(Error::invalid(
                "root ctl lines need \"cwd\" (the session's working directory)",
            ));
        }
        Some(v) => string_value(v).ok_or_else(|| Error::invalid("\"cwd\" must be a string"))?,
    };
    if !cwd.starts_with('/') {
        return Err(Error::invalid(format!(
            "\"cwd\" must be an absolute path, not {cwd:?}"
        )));
    }
    if cwd.contains('\0') {
        return Err(Error::invalid("\"cwd\" must not contain NUL"));
    }
    // `/p/`, `/p/.` and `/q/../p` are one directory, hence one namespace.
    let cwd = crate::store::naming::normalize_cwd(&cwd);
    let session_id = match take(&mut obj, "session-id") {
        None => None,
        Some(v) => {
            let id =
                string_value(v).ok_or_else(|| Error::invalid("\"session-id\" must be a string"))?;
            if !is_valid_session_id(&id) {
                return Err(Error::invalid(format!(
                    "\"session-id\" must be 1-64 characters of A-Za-z0-9_- (got {} characters: {:?})",
                    id.chars().count(),
                    id.chars().take(70).collect::<String>()
                )));
            }
            Some(id.into_owned())
        }
    };
    let first = entry_from(text, obj, true)?;
    Ok(NewSessionRequest {
        cwd,
        session_id,
        first,
    })
}

/// The state-dependent half of validation, run under the session's append lock:
/// `first-kept-entry-id` must name a message entry of this session.
pub fn check_against(index: &SessionIndex, entry: &NewEntry) -> Result<()> {
    if let Some(NewCompaction {
        first_kept: Some(Some(id)),
        ..
    }) = &entry.compaction
        && index.find_message(id).is_none()
    {
        return Err(Error::invalid(format!(
            "first-kept-entry-id {id} is not a message entry of this session"
        )));
    }
    Ok(())
}

/// UTF-8, strict JSON (no lone surrogates, nesting at most 128 deep), an object:
/// the trimmed text and its top-level fields, checked in one pass over the line.
fn strict_object(line: &[u8]) -> Result<(&str, Fields<'_>)> {
    // simdutf8 first (std's check was over half of this function's time on typical,
    // mostly non-ASCII lines); std only to say where a bad line goes wrong.
    let whole = match simdutf8::basic::from_utf8(line) {
        Ok(text) => text,
        Err(_) => {
            let at = std::str::from_utf8(line)
                .err()
                .map_or(0, |e| e.valid_up_to());
            return Err(Error::invalid(format!("not valid UTF-8 (byte {at})")));
        }
    };
    let text = whole.trim_matches(|c: char| c.is_ascii_whitespace());
    // The ctl file splits lines at '\n', but callers of this function may not: the
    // writer's whitespace is kept in the entry, which must stay one transcript line.
    if let Some(at) = memchr::memchr(b'\n', text.as_bytes()) {
        let at = crate::json::offset_in(whole, text) + at;
        return Err(Error::invalid(format!(
            "a ctl line must not contain a newline (byte {at})"
        )));
    }
    let fields = strict::scan(text).map_err(|e| {
        let at = crate::json::offset_in(whole, text) + e.pos;
        Error::invalid(format!("not JSON: {} at byte {at}", e.what))
    })?;
    let Some(fields) = fields else {
        return Err(Error::invalid(format!(
            "not a JSON object (got {})",
            kind_of(text)
        )));
    };
    for (i, (k, _)) in fields.iter().enumerate() {
        if fields[..i].iter().any(|(seen, _)| seen == k) {
            return Err(Error::invalid(format!("field {k:?} is given twice")));
        }
        if RESERVED.contains(&k.as_ref()) {
            return Err(Error::invalid(format!(
                "{k:?} is assigned by fen-fs; do not set it"
            )));
        }
    }
    Ok((text, fields))
}

/// What a valid JSON text that is not an object is, from its first byte.
fn kind_of(text: &str) -> &'static str {
    match text.as_bytes().first() {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

type Fields<'a> = Vec<Field<'a>>;

fn take<'a>(fields: &mut Fields<'a>, key: &str) -> Option<&'a str> {
    let i = fields.iter().position(|(k, _)| k == key)?;
    Some(fields.remove(i).1)
}

fn get<'a>(fields: &Fields<'a>, key: &str) -> Option<&'a str> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

fn is_null(v: &str) -> bool {
    v == "null"
}

fn raw_fields(fields: Fields<'_>) -> Vec<(String, String)> {
    fields
        .into_iter()
        .map(|(k, v)| (k.into_owned(), v.to_owned()))
        .collect()
}

/// `role` is the raw value of the message's `role` field, if any.
fn non_empty_role(role: Option<&str>) -> Result<()> {
    match role.map(string_value) {
        Some(Some(r)) if !r.is_empty() => Ok(()),
        Some(_) => Err(Error::invalid("\"role\" must be a non-empty string")),
        None => Err(Error::invalid(
            "a message needs \"role\" (or give \"type\")",
        )),
    }
}

/// `removed_any`: whether the line had routing fields (root ctl) taken out, in which
/// case a shorthand message must be re-assembled from its remaining fields.
fn entry_from(text: &str, mut fields: Fields<'_>, removed_any: bool) -> Result<NewEntry> {
    let Some(kind) = take(&mut fields, "type") else {
        non_empty_role(get(&fields, "role"))?;
        if !removed_any {
            return Ok(NewEntry::message(text));
        }
        let parts: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}:{v}", crate::json::quote(k)))
            .collect();
        return Ok(NewEntry::message(&format!("{{{}}}", parts.join(","))));
    };
    let kind = string_value(kind)
        .ok_or_else(|| Error::invalid("\"type\" must be a string"))?
        .into_owned();
    let mut compaction = None;
    match kind.as_str() {
        "" => return Err(Error::invalid("\"type\" must not be empty")),
        "session" => {
            return Err(Error::invalid(
                "type \"session\" is the header, written by fen-fs",
            ));
        }
        "message" => {
            let m = get(&fields, "message")
                .ok_or_else(|| Error::invalid("a message entry needs \"message\""))?;
            // Already validated with the line: only its fields are split here.
            if !m.starts_with('{') {
                return Err(Error::invalid("\"message\" must be a JSON object"));
            }
            let role = strict::valid_object_fields(m).find(|(k, _)| k == "role");
            non_empty_role(role.map(|(_, v)| v))?;
        }
        "compaction" => compaction = Some(validate_compaction(&fields)?),
        "title" => {
            get(&fields, "title")
                .and_then(string_value)
                .ok_or_else(|| Error::invalid("a title entry needs a string \"title\""))?;
        }
        "metadata" => {
            let d = get(&fields, "data")
                .ok_or_else(|| Error::invalid("a metadata entry needs \"data\""))?;
            if !d.starts_with('{') {
                return Err(Error::invalid("\"data\" must be a JSON object"));
            }
        }
        _ => {}
    }
    Ok(NewEntry {
        kind,
        fields: raw_fields(fields),
        compaction,
    })
}

fn validate_compaction(fields: &Fields<'_>) -> Result<NewCompaction> {
    let summary = match get(fields, "summary").map(string_value) {
        Some(Some(s)) if !s.is_empty() => s.into_owned(),
        _ => {
            return Err(Error::invalid(
                "a compaction needs a non-empty string \"summary\"",
            ));
        }
    };
    let first_kept = get(fields, "first-kept-entry-id");
    let messages = get(fields, "messages");
    let (first_kept, replacement_lens) = match (first_kept, messages) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                "give either \"first-kept-entry-id\" or \"messages\", not both",
            ));
        }
        (None, None) => {
            return Err(Error::invalid(
                "a compaction needs \"first-kept-entry-id\" (string or null) or \"messages\"",
            ));
        }
        (Some(v), None) if is_null(v) => (Some(None), Vec::new()),
        (Some(v), None) => match string_value(v) {
            Some(id) => (Some(Some(id.into_owned())), Vec::new()),
            None => {
                return Err(Error::invalid(
                    "\"first-kept-entry-id\" must be a string or null",
                ));
            }
        },
        (None, Some(m)) => {
            let items = replacement_messages(m)
                .map_err(|e| Error::invalid(format!("\"messages\": {e}")))?;
            (None, items.iter().map(|i| i.get().len() as u64).collect())
        }
    };
    for key in ["tokens-before", "tokens-after"] {
        if let Some(v) = get(fields, key)
            && v.parse::<u64>().is_err()
        {
            return Err(Error::invalid(format!(
                "{key:?} must be a non-negative integer"
            )));
        }
    }
    if let Some(v) = get(fields, "guidance")
        && !is_null(v)
        && string_value(v).is_none()
    {
        return Err(Error::invalid("\"guidance\" must be a string or null"));
    }
    if let Some(v) = get(fields, "trigger")
        && !matches!(string_value(v).as_deref(), Some("manual" | "auto"))
    {
        return Err(Error::invalid("\"trigger\" must be \"manual\" or \"auto\""));
    }
    Ok(NewCompaction {
        first_kept,
        replacement_lens,
        summary,
        has_tokens_before: get(fields, "tokens-before").is_some(),
        has_tokens_after: get(fields, "tokens-after").is_some(),
        has_trigger: get(fields, "trigger").is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(r: Result<impl std::fmt::Debug>) -> i32 {
        r.unwrap_err().errno
    }

    #[test]
    fn shorthand_keeps_the_writers_bytes() {
        let e = parse_session_line(br#" {"role":"user",  "content":"hi"} "#).unwrap();
        assert_eq!(e.message_raw(), Some(r#"{"role":"user",  "content":"hi"}"#));
        let r = parse_root_line(br#"{"cwd":"/p","role":"user","content":"hi"}"#).unwrap();
        assert_eq!(r.cwd, "/p");
        assert_eq!(
            r.first.message_raw(),
            Some(r#"{"role":"user","content":"hi"}"#)
        );
    }

    #[test]
    fn bad_lines_are_einval() {
        for bad in [
            &b"nope"[..],
            b"[1]",
            b"{\"role\":\"\"}",
            b"{\"role\":\"user\",\"id\":\"x\"}",
            b"{\"type\":\"message\",\"message\":[1]}",
            b"{\"type\":\"title\",\"title\":3}",
            b"{\"type\":\"compaction\",\"summary\":\"s\"}",
            b"{\"type\":\"compaction\",\"summary\":\"\",\"first-kept-entry-id\":null}",
            b"{\"type\":\"compaction\",\"summary\":\"s\",\"first-kept-entry-id\":null,\"messages\":[]}",
            b"{\"type\":\"session\"}",
            b"{\"role\":\"user\",\"content\":\"\\ud800\"}",
            b"{\"role\":\"user\",\"content\":\"\xff\"}",
            b"{\"role\":\"user\",\"role\":\"user\"}",
            b"{\"role\"\n:\"user\"}",
        ] {
            assert_eq!(errno(parse_session_line(bad)), libc::EINVAL, "{}", String::from_utf8_lossy(bad));
        }
        let deep = format!(
            "{{\"role\":\"user\",\"content\":{}{}}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert_eq!(errno(parse_session_line(deep.as_bytes())), libc::EINVAL);
        for bad in [
            &br#"{"role":"user","content":"hi"}"#[..],
            br#"{"cwd":"rel","role":"user"}"#,
            br#"{"cwd":"/p","session-id":"a/b","role":"user"}"#,
            br#"{"cwd":"/p","session-id":"..","role":"user"}"#,
        ] {
            assert_eq!(errno(parse_root_line(bad)), libc::EINVAL);
        }
        let long = format!(
            r#"{{"cwd":"/p","session-id":"{}","role":"user"}}"#,
            "a".repeat(65)
        );
        assert_eq!(errno(parse_root_line(long.as_bytes())), libc::EINVAL);
    }

    #[test]
    fn compaction_forms() {
        let c = parse_session_line(
            br#"{"type":"compaction","summary":"s","first-kept-entry-id":null}"#,
        )
        .unwrap();
        assert_eq!(c.compaction.unwrap().first_kept, Some(None));
        let c = parse_session_line(br#"{"type":"compaction","summary":"s","messages":[{"role":"user","content":"x"}],"trigger":"auto"}"#).unwrap();
        let c = c.compaction.unwrap();
        assert_eq!(c.replacement_lens, vec![29]);
        assert!(c.has_trigger);
    }
}
