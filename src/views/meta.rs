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
