//! What every writer is given and what it hands back: the new session's facts, and
//! its file as bytes with the conversation the target's reader must find in it.

use crate::agent::Agent;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::path::PathBuf;

/// fen-fs's version, written where a session file names the program that wrote it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where a new session comes from (its provenance) and what it is about.
#[derive(Debug, Clone)]
pub struct Context {
    pub source_agent: Agent,
    pub source_id: String,
    pub source_path: PathBuf,
    /// The title the new session shows: the source's title (or first request), and
    /// where it came from.
    pub title: String,
    /// The working directory the new session belongs to.
    pub cwd: String,
    pub now: DateTime<Utc>,
}

impl Context {
    /// The provenance object written into the new session.
    pub fn provenance(&self) -> Value {
        serde_json::json!({
            "agent": self.source_agent.name(),
            "id": self.source_id,
            "path": self.source_path.to_string_lossy(),
        })
    }
}

/// A new session file, ready to publish.
#[derive(Debug, Clone)]
pub struct Draft {
    /// The new session's id (what the agent's resume command takes).
    pub id: String,
    /// Folders below the agent's root that hold the file (created when missing).
    pub folders: Vec<String>,
    pub file_name: String,
    pub bytes: Vec<u8>,
    /// `conversation.json` as fen-fs's reader of the target must read the file back:
    /// each value's keys must be in the message read back, with equal values.
    pub expected: Vec<Value>,
}

/// A JSON object with its keys in the order given (serde_json's own maps sort them).
pub struct Obj(String);

impl Obj {
    pub fn new() -> Obj {
        Obj(String::from("{"))
    }

    pub fn put(self, key: &str, value: impl serde::Serialize) -> Obj {
        let v = serde_json::to_value(&value).expect("JSON values serialize");
        self.put_raw(key, &text(&v))
    }

    /// `put` of JSON text already made (an object built with `Obj`), as it is.
    pub fn put_raw(mut self, key: &str, json_text: &str) -> Obj {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push_str(&crate::json::quote(key));
        self.0.push(':');
        self.0.push_str(json_text);
        self
    }

    /// `put` when `value` is `Some`.
    pub fn put_some(self, key: &str, value: Option<impl serde::Serialize>) -> Obj {
        match value {
            Some(v) => self.put(key, v),
            None => self,
        }
    }

    /// The object as one line, ending in `\n`.
    pub fn line(mut self) -> String {
        self.0.push_str("}\n");
        self.0
    }

    /// The object as JSON text (no newline).
    pub fn text(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// `v` as JSON text with each object's `type` and `role` first, then its other keys
/// (sorted): how the agents write their own lines, and easier to read.
pub fn text(v: &Value) -> String {
    let mut out = String::new();
    write_text(&mut out, v);
    out
}

fn write_text(out: &mut String, v: &Value) {
    match v {
        Value::Object(o) => {
            out.push('{');
            let first = ["type", "role"];
            let keys = first
                .iter()
                .filter(|k| o.contains_key(**k))
                .copied()
                .chain(o.keys().map(String::as_str).filter(|k| !first.contains(k)));
            for (i, k) in keys.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&crate::json::quote(k));
                out.push(':');
                write_text(out, &o[k]);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_text(out, x);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// JSON text as a value, for comparing what a reader gives back.
pub fn value(text: &str) -> Value {
    serde_json::from_str(text).expect("valid JSON text")
}

impl Default for Obj {
    fn default() -> Self {
        Self::new()
    }
}

/// A source timestamp as a time, if it is one.
pub fn parse_time(ts: Option<&str>) -> Option<DateTime<Utc>> {
    let ts = ts?;
    DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Times for the new session's lines: each message's own time when the source
/// recorded one, else the one before it (else `now`), never going back.
pub struct Clock {
    last: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
}

impl Clock {
    pub fn new(now: DateTime<Utc>) -> Clock {
        Clock { last: None, now }
    }

    pub fn at(&mut self, ts: Option<&str>) -> DateTime<Utc> {
        let t = match (parse_time(ts), self.last) {
            (Some(t), Some(last)) if t < last => last,
            (Some(t), _) => t,
            (None, Some(last)) => last,
            // Nothing known yet: now, without holding later times to it.
            (None, None) => return self.now,
        };
        self.last = Some(t);
        t
    }
}

/// `cwd` with its links resolved, as the agents name their folders (they take
/// `getcwd()`, the real path); as given when it does not exist.
pub fn real_path(cwd: &str) -> String {
    std::fs::canonicalize(cwd)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| cwd.to_string())
}

/// RFC 3339 UTC with milliseconds and `Z` (what all three agents write).
pub fn iso(t: DateTime<Utc>) -> String {
    crate::store::naming::timestamp(t)
}

/// A fresh lowercase UUIDv4 (Claude Code's ids).
pub fn uuid_v4() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A fresh lowercase UUIDv7 (Codex's and pi's session ids).
pub fn uuid_v7() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_their_key_order_and_lines_end_in_a_newline() {
        let l = Obj::new()
            .put("type", "user")
            .put("a", 1)
            .put_some("b", None::<u8>)
            .line();
        assert_eq!(l, "{\"type\":\"user\",\"a\":1}\n");
    }

    #[test]
    fn the_clock_never_goes_back() {
        let now = Utc::now();
        let mut c = Clock::new(now);
        assert_eq!(c.at(None), now);
        let t1 = c.at(Some("2026-01-02T03:04:05.123+01:00"));
        assert_eq!(iso(t1), "2026-01-02T02:04:05.123Z");
        assert_eq!(c.at(Some("2020-01-01T00:00:00Z")), t1);
        assert_eq!(c.at(Some("not a time")), t1);
    }
}
