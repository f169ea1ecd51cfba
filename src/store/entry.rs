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
        let mut s = String::with_capacity(
            96 + self
                .fields
                .iter()
                .map(|(k, v)| k.len() + v.len() + 4)
                .sum::<usize>(),
        );
        s.push_str("{\"type\":");
        s.push_str(&quote(&self.kind));
        s.push_str(",\"id\":");
        s.push_str(&quote(id));
        s.push_str(",\"parent-id\":");
        match parent_id {
            Some(p) => s.push_str(&quote(p)),
            None => s.push_str("null"),
        }
        s.push_str(",\"timestamp\":");
        s.push_str(&quote(timestamp));
        for (k, v) in self
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(extra.iter().map(|(k, v)| (*k, v.as_str())))
        {
            s.push(',');
            s.push_str(&quote(k));
            s.push(':');
            s.push_str(v);
        }
        s.push_str("}\n");
        s
    }
}
