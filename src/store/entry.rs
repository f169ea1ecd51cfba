//! An entry about to be appended: validated fields in the writer's order, values kept
//! as the writer's raw JSON. The store adds `id`, `parent-id` and `timestamp`, and
//! computes what a compaction left out.

use crate::json::quote;

#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    pub kind: String,
    /// (key, raw JSON value) in the writer's order; never `type`/`id`/`parent-id`/`timestamp`.
    pub fields: Vec<(String, String)>,
    pub compaction: Option<NewCompaction>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewCompaction {
    /// `Some(None)` for an explicit null; `None` when `messages` is given instead.
    pub first_kept: Option<Option<String>>,
    /// Bytes of each replacement message (when `messages` is given).
    pub replacement_lens: Vec<u64>,
    pub summary: String,
    pub has_tokens_before: bool,
    pub has_tokens_after: bool,
    pub has_trigger: bool,
}

impl NewEntry {
    pub fn message(raw_message: &str) -> Self {
        NewEntry {
            kind: "message".into(),
            fields: vec![("message".into(), raw_message.into())],
            compaction: None,
        }
    }

    /// The raw message object, for message entries.
    pub fn message_raw(&self) -> Option<&str> {
        (self.kind == "message")
            .then(|| self.fields.iter().find(|(k, _)| k == "message"))
            .flatten()
            .map(|(_, v)| v.as_str())
    }

    /// Serializes the line (with its trailing `\n`). `extra` are computed fields
    /// appended after the writer's own.
    pub fn to_line(
        &self,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
        extra: &[(&str, String)],
    ) -> String {
        let mut s = String::new();
        self.write_line(&mut s, id, parent_id, timestamp, extra);
        s
    }

    /// `to_line` into `out`. Returns where the message object sits in `out` (start,
    /// length) for a message entry, so the index can take the line without parsing
    /// it again.
    pub fn write_line(
        &self,
        out: &mut String,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
        extra: &[(&str, String)],
    ) -> Option<(usize, usize)> {
        out.reserve(
            96 + self
                .fields
                .iter()
                .map(|(k, v)| k.len() + v.len() + 4)
                .sum::<usize>(),
        );
        out.push_str("{\"type\":");
        push_quoted(out, &self.kind);
        out.push_str(",\"id\":");
        push_quoted(out, id);
        out.push_str(",\"parent-id\":");
        match parent_id {
            Some(p) => push_quoted(out, p),
            None => out.push_str("null"),
        }
        out.push_str(",\"timestamp\":");
        push_quoted(out, timestamp);
        let mut message = None;
        for (k, v) in self
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(extra.iter().map(|(k, v)| (*k, v.as_str())))
        {
            out.push(',');
            push_quoted(out, k);
            out.push(':');
            if k == "message" && message.is_none() && self.kind == "message" {
                message = Some((out.len(), v.len()));
            }
            out.push_str(v);
        }
        out.push_str("}\n");
        message
    }
}

/// Appends `s` JSON-quoted; plain keys and ids (the usual case) need no escaping.
fn push_quoted(out: &mut String, s: &str) {
    if s.bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f)
    {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&quote(s));
    }
}
