//! Keeping the index in step with the sources: which sessions exist now (through
//! `SessionSource::namespaces`, `session_dirs` and `session_stat` only), which of them
//! changed since they were indexed (their stamp), and (re)indexing a session from its
//! neutral messages (`SessionSource::messages(ns, dir, true)`): whole when it is new or
//! its earlier messages changed (a compaction moves them out of the conversation),
//! only its new messages when it just grew.

use super::engine::{Engine, Known, SessionInfo};
use super::extract::{MessageInfo, identity, message_text};
use crate::error::{Error, Result};
use crate::neutral::Message;
use crate::sources::SessionSource;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tantivy::{IndexWriter, TantivyDocument, Term};

/// A source with the identity its sessions are filed under in the index.
#[derive(Clone)]
pub struct SourceRef {
    /// Hash of `label`.
    pub src: u64,
    /// `agent:root` (the root made absolute and canonical where it exists).
    pub label: String,
    pub source: Arc<dyn SessionSource>,
}

/// The label of a source: its agent and root.
pub fn label_of(agent: crate::agent::Agent, root: &Path) -> String {
    let root = std::fs::canonicalize(root)
        .or_else(|_| std::path::absolute(root))
        .unwrap_or_else(|_| root.to_path_buf());
    format!("{}:{}", agent.name(), root.display())
}

pub fn src_id(label: &str) -> u64 {
    crate::store::naming::fnv1a64(label.as_bytes())
}

impl SourceRef {
    pub fn new(source: Arc<dyn SessionSource>) -> SourceRef {
        let label = label_of(source.agent(), source.root());
        SourceRef {
            src: src_id(&label),
            label,
            source,
        }
    }
}

/// The index's key of session `ns/dir` of source `src`.
pub fn session_id(src: u64, ns: &str, dir: &str) -> u64 {
    let key = format!("{src:016x}/{ns}/{dir}");
    crate::store::naming::fnv1a64(key.as_bytes())
}

/// One session as the sources show it now.
#[derive(Debug, Clone)]
pub struct Live {
    /// Index into the sources.
    pub source: usize,
    pub ns: String,
    pub dir: String,
    pub sid: u64,
    pub size: u64,
    pub mtime: i64,
}

fn nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

/// Every session of `sources` with its stamp. A source that fails is left out (and
/// logged); its sessions are then not treated as gone.
pub fn scan(sources: &[SourceRef]) -> (Vec<Live>, HashSet<u64>) {
    let mut out = Vec::new();
    let mut failed = HashSet::new();
    for (i, s) in sources.iter().enumerate() {
        let namespaces = match s.source.namespaces() {
            Ok(n) => n,
            Err(e) => {
                log::warn!("search: cannot list {}: {}", s.label, e.reason);
                failed.insert(s.src);
                continue;
            }
        };
        for ns in namespaces {
            let dirs = match s.source.session_dirs(&ns) {
                Ok(d) => d,
                Err(_) => continue,
            };
            for dir in dirs {
                let Ok(stat) = s.source.session_stat(&ns, &dir) else {
                    continue;
                };
                out.push(Live {
                    source: i,
                    sid: session_id(s.src, &ns, &dir),
                    ns: ns.clone(),
                    dir,
                    size: stat.size,
                    mtime: nanos(stat.mtime),
                });
            }
        }
    }
    (out, failed)
}

/// What changed: sessions to (re)index, newest first, and sessions of these sources
/// that are gone.
/// `retry`: also sessions whose messages could not be read last time (once per
/// process: the source may read them now).
pub fn changes(
    sources: &[SourceRef],
    live: &[Live],
    failed: &HashSet<u64>,
    known: &HashMap<u64, Known>,
    retry: bool,
) -> (Vec<Live>, Vec<u64>) {
    let mut todo: Vec<Live> = live
        .iter()
        .filter(|l| {
            known.get(&l.sid).is_none_or(|k| {
                k.size != l.size || k.mtime != l.mtime || (retry && k.count == UNREAD)
            })
        })
        .cloned()
        .collect();
    todo.sort_by_key(|l| std::cmp::Reverse(l.mtime));
    let ours: HashSet<u64> = sources
        .iter()
        .map(|s| s.src)
        .filter(|s| !failed.contains(s))
        .collect();
    let present: HashSet<u64> = live.iter().map(|l| l.sid).collect();
    let gone = known
        .iter()
        .filter(|(sid, k)| ours.contains(&k.src) && !present.contains(sid))
        .map(|(sid, _)| *sid)
        .collect();
    (todo, gone)
}

/// `Known::count` of a session whose messages could not be read.
pub const UNREAD: u64 = u64::MAX;

/// The chained identity of `msgs` (what a grown session's old part must still match).
fn chain(msgs: &[Message]) -> u64 {
    msgs.iter().fold(0x5eed, |h, m| identity(m, h))
}

fn millis_of(rfc3339: Option<&str>) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(rfc3339?)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Removes every document of session `sid`.
pub fn remove(engine: &Engine, writer: &IndexWriter, sid: u64) {
    writer.delete_term(Term::from_field_u64(engine.fields.sid, sid));
}

/// Sources whose `messages` failed, logged once each.
#[derive(Default)]
pub struct Complaints(HashSet<u64>);

/// (Re)indexes session `live` of `src`. Returns what the index now knows of it (None:
/// it is gone) and the bytes of text added.
pub fn index_session(
    engine: &Engine,
    writer: &IndexWriter,
    src: &SourceRef,
    live: &Live,
    known: Option<&Known>,
    complaints: &mut Complaints,
) -> Result<(Option<Known>, u64)> {
    let f = &engine.fields;
    let sid = live.sid;
    let read = src.source.messages(&live.ns, &live.dir, true);
    let mut unread = false;
    let session = match read {
        Ok(s) => s,
        Err(e) if e.errno == libc::ENOENT => {
            remove(engine, writer, sid);
            return Ok((None, 0));
        }
        Err(e) => {
            if complaints.0.insert(src.src) {
                log::warn!(
                    "search: {} gives no messages ({}): its sessions are not searchable",
                    src.label,
                    e.reason
                );
            }
            unread = true;
            crate::neutral::SessionMessages::default()
        }
    };
    let facts = &session.facts;
    let msgs = &session.messages;
    let (from, whole) = match known {
        Some(k)
            if k.count > 0
                && k.count != UNREAD
                && msgs.len() as u64 >= k.count
                && chain(&msgs[..k.count as usize]) == k.prefix =>
        {
            (k.count as usize, false)
        }
        _ => (0, true),
    };
    if whole {
        remove(engine, writer, sid);
    } else {
        writer.delete_term(Term::from_field_u64(f.session_of, sid));
    }
    let agent = src.source.agent().name();
    let cwd = facts
        .cwd
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(crate::store::naming::normalize_cwd);
    let updated_ms = millis_of(facts.updated_at.as_deref()).unwrap_or(live.mtime / 1_000_000);
    let common = |doc: &mut TantivyDocument, ts: i64| {
        doc.add_u64(f.sid, sid);
        doc.add_u64(f.src, src.src);
        doc.add_text(f.agent, agent);
        if let Some(c) = &cwd {
            doc.add_text(f.cwd, c);
        }
        doc.add_i64(f.ts, ts);
    };
    let mut bytes = 0u64;
    for m in &msgs[from..] {
        let text = message_text(m);
        if text.trim().is_empty() {
            continue;
        }
        bytes += text.len() as u64;
        let mut doc = TantivyDocument::new();
        doc.add_text(f.text, &text);
        common(
            &mut doc,
            millis_of(m.timestamp.as_deref()).unwrap_or(updated_ms),
        );
        let info = serde_json::to_string(&MessageInfo::of(m)).expect("info serializes");
        doc.add_text(f.info, info);
        writer
            .add_document(doc)
            .map_err(|e| Error::new(libc::EIO, format!("search index: add: {e}")))?;
    }
    let info = SessionInfo {
        agent: agent.to_string(),
        id: if facts.id.is_empty() {
            live.dir.clone()
        } else {
            facts.id.clone()
        },
        namespace: live.ns.clone(),
        dir: live.dir.clone(),
        cwd: facts.cwd.clone(),
        title: facts.title.clone(),
        preview: facts.preview.clone(),
        created_at: facts.created_at.clone(),
        updated_at: facts.updated_at.clone(),
    };
    let k = Known {
        src: src.src,
        size: live.size,
        mtime: live.mtime,
        count: if unread { UNREAD } else { msgs.len() as u64 },
        prefix: chain(msgs),
    };
    let mut doc = TantivyDocument::new();
    if let Some(t) = facts.title.as_deref().filter(|t| !t.trim().is_empty()) {
        doc.add_text(f.text, t);
        bytes += t.len() as u64;
    }
    common(&mut doc, updated_ms);
    doc.add_u64(f.session_of, sid);
    doc.add_u64(f.kind, 1);
    doc.add_text(
        f.info,
        serde_json::to_string(&info).expect("info serializes"),
    );
    doc.add_u64(f.size, k.size);
    doc.add_i64(f.mtime, k.mtime);
    doc.add_u64(f.count, k.count);
    doc.add_u64(f.prefix, k.prefix);
    writer
        .add_document(doc)
        .map_err(|e| Error::new(libc::EIO, format!("search index: add: {e}")))?;
    Ok((Some(k), bytes))
}
