//! Keeping the index in step with the sources: which sessions exist now (through
//! `SessionSource::namespaces`, `session_dirs` and `session_stat` only), which of them
//! changed since they were indexed (their stamp), and (re)indexing a session from its
//! neutral messages (`SessionSource::messages(ns, dir, true)`): whole when it is new or
//! its earlier messages changed (a compaction moves them out of the conversation),
//! only its new messages when it just grew.

use super::engine::{Engine, Known, SessionInfo};
use super::extract::{MessageInfo, identity, message_text};
use crate::error::{Error, Result};
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
/// that are gone (and every session of the `dropped` ones: sources taken out).
/// `retry`: also sessions whose messages could not be read last time (once per
/// process: the source may read them now).
pub fn changes(
    sources: &[SourceRef],
    dropped: &HashSet<u64>,
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
        .chain(dropped.iter().copied())
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

/// Where the chained identity of a session's messages starts (`extract::identity`).
const CHAIN_SEED: u64 = 0x5eed;

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
pub struct Complaints(std::sync::Mutex<HashSet<u64>>);

/// What a pass over sessions shares: the complaints said so far, and what to call
/// between messages: `pause` (a big pass lets the mount go first there) and `stop`
/// (the work is asked to stop, or this slice of the work is done: the session is
/// then saved as far as it was read, and the next pass goes on from there).
pub struct Manners<'a> {
    pub complaints: &'a Complaints,
    pub pause: &'a dyn Fn(),
    pub stop: &'a dyn Fn() -> bool,
}

/// `Known::mtime` of a session indexed only in part (its reading was stopped): no
/// file has it, so the next pass takes the session up again, from its mark.
pub const PARTIAL: i64 = i64::MIN;

/// Whether `k` is of a session indexed only in part.
pub fn is_partial(k: &Known) -> bool {
    k.mtime == PARTIAL
}

/// What indexing a session added, for the log.
#[derive(Debug, Default, Clone, Copy)]
pub struct Effort {
    pub sessions: u64,
    pub messages: u64,
    /// Bytes of text indexed.
    pub bytes: u64,
    /// Time spent reading and converting messages (`each_message`), and adding them.
    pub reading: std::time::Duration,
    pub adding: std::time::Duration,
}

impl Effort {
    pub fn add(&mut self, o: &Effort) {
        self.sessions += o.sessions;
        self.messages += o.messages;
        self.bytes += o.bytes;
        self.reading += o.reading;
        self.adding += o.adding;
    }
}

/// The fields every document of one session shares, known from its facts.
struct Common {
    cwd: Option<String>,
    updated_ms: i64,
}

impl Common {
    fn of(facts: &crate::neutral::SessionFacts, live: &Live) -> Common {
        Common {
            cwd: facts
                .cwd
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(crate::store::naming::normalize_cwd),
            updated_ms: millis_of(facts.updated_at.as_deref()).unwrap_or(live.mtime / 1_000_000),
        }
    }
}

/// How one pass over a session's messages ended.
enum Pass {
    Done(Option<Known>),
    /// Stopped before it added anything: the index holds what it held.
    Unchanged,
    /// The messages already indexed changed: index the whole session again.
    Again,
}

/// (Re)indexes session `live` of `src`: only its new messages when its earlier ones
/// are unchanged (`known`), else all of it. Returns what the index now knows of it
/// (None: it is gone; `is_partial`: it was stopped, as `manners.stop` asked, after
/// the messages it says).
pub fn index_session(
    engine: &Engine,
    writer: &IndexWriter,
    src: &SourceRef,
    live: &Live,
    known: Option<&Known>,
    manners: &Manners,
    effort: &mut Effort,
) -> Result<Option<Known>> {
    let grow = known
        .filter(|k| k.count > 0 && k.count != UNREAD)
        .map(|k| (k.count, k.prefix, k.mark));
    effort.sessions += 1;
    if grow.is_some() {
        match pass(engine, writer, src, live, grow, manners, effort)? {
            Pass::Done(k) => return Ok(k),
            Pass::Unchanged => return Ok(known.copied()),
            Pass::Again => {}
        }
    }
    match pass(engine, writer, src, live, None, manners, effort)? {
        Pass::Done(k) => Ok(k),
        Pass::Unchanged | Pass::Again => Err(Error::new(
            libc::EIO,
            "search: a session changed while read",
        )),
    }
}

#[derive(PartialEq)]
enum State {
    /// Reading the messages indexed before, to see whether they are the same.
    Checking,
    Adding,
    Changed,
}

fn pass(
    engine: &Engine,
    writer: &IndexWriter,
    src: &SourceRef,
    live: &Live,
    grow: Option<(u64, u64, crate::sources::MessageMark)>,
    manners: &Manners,
    effort: &mut Effort,
) -> Result<Pass> {
    let f = &engine.fields;
    let sid = live.sid;
    let agent = src.source.agent().name();
    if grow.is_none() {
        remove(engine, writer, sid);
    }
    let started = std::time::Instant::now();
    let mut adding = std::time::Duration::ZERO;
    let mut state = if grow.is_some() {
        State::Checking
    } else {
        State::Adding
    };
    let (count, prefix, since) = grow.unwrap_or_default();
    let mut n = 0u64;
    let mut h = CHAIN_SEED;
    let mut common: Option<Common> = None;
    let mut failed: Option<Error> = None;
    // Whether to stop after a message when asked to: while adding, what was added
    // so far is a prefix the next pass goes on from; while checking, nothing changed.
    let flow = || {
        if (manners.stop)() {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    };
    let read = src
        .source
        .each_message_since(&live.ns, &live.dir, since, &mut |facts, at, m| {
            (manners.pause)();
            if at != n {
                // The source went on from the mark: the messages before it are the
                // ones indexed (it proved they did not change).
                if state == State::Checking && n == 0 && at == count {
                    n = count;
                    h = prefix;
                    state = State::Adding;
                } else {
                    state = State::Changed;
                    return std::ops::ControlFlow::Break(());
                }
            }
            n += 1;
            h = identity(&m, h);
            match state {
                State::Checking => {
                    if n == count {
                        state = if h == prefix {
                            State::Adding
                        } else {
                            State::Changed
                        };
                    }
                    return flow();
                }
                State::Changed => return std::ops::ControlFlow::Break(()),
                State::Adding => {}
            }
            if failed.is_some() {
                return std::ops::ControlFlow::Break(());
            }
            let t = std::time::Instant::now();
            let c = common.get_or_insert_with(|| Common::of(facts, live));
            let text = message_text(&m);
            if text.trim().is_empty() {
                return flow();
            }
            effort.messages += 1;
            effort.bytes += text.len() as u64;
            // Not more than a moment of the writer's work waits in its queue.
            engine.sending(text.len() as u64, manners.stop);
            // Sized once: documents wait in the index's queue, and a doubled buffer
            // doubled what waits there.
            let mut doc = TantivyDocument::with_capacity(text.len() + 256);
            doc.add_text(f.text, &text);
            drop(text);
            shared_fields(f, &mut doc, sid, src.src, agent, c.cwd.as_deref());
            doc.add_i64(
                f.ts,
                millis_of(m.timestamp.as_deref()).unwrap_or(c.updated_ms),
            );
            let info = serde_json::to_string(&MessageInfo::of(&m)).expect("info serializes");
            doc.add_text(f.info, info);
            if let Err(e) = writer.add_document(doc) {
                failed = Some(Error::new(libc::EIO, format!("search index: add: {e}")));
            }
            adding += t.elapsed();
            flow()
        });
    effort.adding += adding;
    effort.reading += started.elapsed().saturating_sub(adding);
    if let Some(e) = failed {
        return Err(e);
    }
    let mut stopped = false;
    let (facts, unread, mark) = match read {
        Ok(r) => {
            if r.resumed && state == State::Checking && n == 0 {
                // Gone on from the mark with nothing new.
                n = count;
                h = prefix;
                state = State::Adding;
            }
            // Stopped with messages left: saved as far as read (a source that cannot
            // mark where it stopped read them all).
            stopped = r.stopped && !r.mark.is_none();
            if stopped && state == State::Checking {
                return Ok(Pass::Unchanged);
            }
            (r.facts, false, r.mark)
        }
        Err(e) if e.errno == libc::ENOENT => {
            remove(engine, writer, sid);
            return Ok(Pass::Done(None));
        }
        Err(e) => {
            if manners.complaints.0.lock().unwrap().insert(src.src) {
                log::warn!(
                    "search: {} gives no messages ({}): its sessions are not searchable",
                    src.label,
                    e.reason
                );
            }
            if grow.is_some() {
                return Ok(Pass::Again);
            }
            (
                crate::neutral::SessionFacts::default(),
                true,
                crate::sources::MessageMark::default(),
            )
        }
    };
    if state != State::Adding {
        // Fewer messages than were indexed, or other ones.
        return Ok(Pass::Again);
    }
    if grow.is_some() {
        writer.delete_term(Term::from_field_u64(f.session_of, sid));
    }
    let c = common.unwrap_or_else(|| Common::of(&facts, live));
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
        kept: facts.kept,
        source_deleted: facts.source_deleted,
        host: facts.host.clone(),
        parent: facts.parent.clone(),
    };
    let k = Known {
        src: src.src,
        size: live.size,
        mtime: if stopped { PARTIAL } else { live.mtime },
        count: if unread { UNREAD } else { n },
        prefix: h,
        mark,
    };
    let mut doc = TantivyDocument::new();
    if let Some(t) = facts.title.as_deref().filter(|t| !t.trim().is_empty()) {
        doc.add_text(f.text, t);
    }
    shared_fields(f, &mut doc, sid, src.src, agent, c.cwd.as_deref());
    doc.add_i64(f.ts, c.updated_ms);
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
    for (field, v) in f.mark.iter().zip(k.mark.0) {
        doc.add_u64(*field, v);
    }
    writer
        .add_document(doc)
        .map_err(|e| Error::new(libc::EIO, format!("search index: add: {e}")))?;
    Ok(Pass::Done(Some(k)))
}

fn shared_fields(
    f: &super::schema::Fields,
    doc: &mut TantivyDocument,
    sid: u64,
    src: u64,
    agent: &str,
    cwd: Option<&str>,
) {
    doc.add_u64(f.sid, sid);
    doc.add_u64(f.src, src);
    doc.add_text(f.agent, agent);
    if let Some(c) = cwd {
        doc.add_text(f.cwd, c);
    }
}
