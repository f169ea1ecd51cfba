//! `meta.json` (§2.2): machine-readable metadata, snake_case keys, from the index.

use crate::store::index::SessionIndex;
use crate::store::projection::Projection;
use crate::store::session::Session;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct Meta<'a> {
    pub id: String,
    pub dir: &'a str,
    pub namespace: String,
    pub cwd: Option<&'a str>,
    /// The machine it was recorded on, and its cwd there (§12).
    pub host: &'a str,
    pub cwd_on_host: Option<&'a str>,
    pub version: u64,
    pub title: Option<&'a str>,
    pub preview: Option<&'a str>,
    pub created_at: Option<&'a str>,
    pub updated_at: Option<&'a str>,
    pub entries: u64,
    pub messages: usize,
    pub roles: &'a BTreeMap<String, u64>,
    pub compactions: usize,
    pub last_compaction: Option<LastCompaction<'a>>,
    pub custom_entries: &'a BTreeMap<String, u64>,
    pub metadata: &'a serde_json::Map<String, serde_json::Value>,
    pub malformed_lines: u64,
    pub transcript_tokens: u64,
    pub context_tokens: u64,
    pub last_entry_id: Option<&'a str>,
    pub size_bytes: u64,
    pub writers: u64,
}

#[derive(Serialize)]
pub struct LastCompaction<'a> {
    pub id: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub trigger: &'a str,
}

/// The session id: the header's, else the one in the file name.
pub fn session_id(session: &Session, idx: &SessionIndex) -> String {
    idx.header
        .as_ref()
        .and_then(|h| h.id.clone())
        .unwrap_or_else(|| session.session_id().to_string())
}

pub fn render(session: &Session, idx: &SessionIndex, writers: u64) -> Vec<u8> {
    let table = idx.messages.read().unwrap();
    let proj = Projection::of(idx);
    let meta = Meta {
        id: session_id(session, idx),
        dir: &session.dir,
        namespace: crate::store::naming::mount_name(&session.namespace),
        cwd: idx.cwd(),
        host: crate::host::this_host(),
        cwd_on_host: idx.cwd(),
        version: idx.version(),
        title: idx.title.as_deref(),
        preview: idx.preview.as_deref(),
        created_at: idx.created_at(),
        updated_at: idx.updated_at.as_deref().or(idx.created_at()),
        entries: idx.entries,
        messages: table.len(),
        roles: &idx.roles,
        compactions: idx.compactions.len(),
        last_compaction: idx.latest_valid_compaction.map(|i| {
            let c = &idx.compactions[i];
            LastCompaction {
                id: c.id.as_deref(),
                timestamp: c.timestamp.as_deref(),
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
                trigger: c.trigger.as_deref().unwrap_or("manual"),
            }
        }),
        custom_entries: &idx.custom_entries,
        metadata: &idx.metadata,
        malformed_lines: idx.malformed_total(),
        transcript_tokens: idx.transcript_tokens,
        context_tokens: proj.context_tokens(&table),
        last_entry_id: idx.last_entry_id.as_deref(),
        size_bytes: idx.size_bytes(),
        writers,
    };
    let mut out = serde_json::to_vec_pretty(&meta).expect("meta serializes");
    out.push(b'\n');
    out
}

/// `meta.json` bytes (a pretty-printed object) with the top-level keys of `set` given
/// new values, in place, the others untouched and in their order; keys it lacks are
/// added at the end. Another machine's session (§12) is shown under this machine's
/// names (its folder, namespace, mapped cwd) through this.
pub fn with_fields(bytes: &[u8], set: &[(&str, serde_json::Value)]) -> Vec<u8> {
    use serde::ser::SerializeMap;
    use serde_json::value::RawValue;
    let Ok(fields) = serde_json::from_slice::<OrderedObject>(bytes) else {
        return bytes.to_vec();
    };
    struct Out<'a>(
        &'a [(String, Box<RawValue>)],
        &'a [(&'a str, serde_json::Value)],
    );
    impl Serialize for Out<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(None)?;
            for (k, v) in self.0 {
                match self.1.iter().find(|(name, _)| name == k) {
                    Some((_, new)) => m.serialize_entry(k, new)?,
                    None => m.serialize_entry(k, v)?,
                }
            }
            for (k, v) in self.1 {
                if !self.0.iter().any(|(name, _)| name == k) {
                    m.serialize_entry(k, v)?;
                }
            }
            m.end()
        }
    }
    let mut out = serde_json::to_vec_pretty(&Out(&fields.0, set)).expect("meta serializes");
    out.push(b'\n');
    out
}

/// A JSON object's members in their order, each value kept as its raw text.
struct OrderedObject(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for OrderedObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OrderedObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<OrderedObject, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry()? {
                    out.push((k, v));
                }
                Ok(OrderedObject(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_replaced_in_place_and_the_rest_kept() {
        let before = b"{\n  \"id\": \"a\",\n  \"cwd\": \"/x\",\n  \"roles\": {\n    \"user\": 1\n  },\n  \"host\": \"h\"\n}\n";
        let after = super::with_fields(
            before,
            &[
                ("cwd", "/y".into()),
                ("host", "peer".into()),
                ("new", 1.into()),
            ],
        );
        assert_eq!(
            std::str::from_utf8(&after).unwrap(),
            "{\n  \"id\": \"a\",\n  \"cwd\": \"/y\",\n  \"roles\": {\n    \"user\": 1\n  },\n  \"host\": \"peer\",\n  \"new\": 1\n}\n"
        );
    }
}
