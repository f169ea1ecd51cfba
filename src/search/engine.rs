//! The open index: its reader (reloaded after every commit, ours or the writer
//! process's), its writer (made when there is something to write, dropped when idle
//! so its memory goes back), queries turned into Tantivy queries, and one best message
//! per session.

use super::extract::MessageInfo;
use super::query::{Clause, Query};
use super::schema::Fields;
use super::storage::{Place, Stamp, Storage};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use tantivy::collector::DocSetCollector;
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query as TQuery,
    RangeQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{
    DocAddress, DocId, IndexReader, IndexWriter, Score, Searcher, SegmentOrdinal, TantivyDocument,
    Term,
};

/// The writer's memory: per indexing thread (Tantivy's minimum is 15 MB).
pub const WRITER_HEAP_PER_THREAD: usize = 20 << 20;
/// Indexing threads of the writer (the conversion of messages runs beside them).
pub const WRITER_THREADS: usize = 1;
/// Text sent to the writer and not yet taken by its thread is kept below this: the
/// readers of sessions run faster than the index takes their text, and what waits
/// in the writer's queue is what a commit (and so a stop at unmount) must wait for,
/// and memory. About a fortieth of a second of the writer's work: at 4 MB, row 11's
/// peak (a first pass over 10,000 pi sessions) was 141-155 MB, at 1 MB 136-140 MB
/// (six runs of each, alternated).
pub const BACKLOG: u64 = 1 << 20;

fn index_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(libc::EIO, format!("search index: {what}: {e}"))
}

/// What the index says of one session (its session document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub src: u64,
    pub size: u64,
    pub mtime: i64,
    pub count: u64,
    pub prefix: u64,
    /// Where its source read its messages to (none for an index made before).
    pub mark: crate::sources::MessageMark,
}

/// A session's facts as stored on its session document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub agent: String,
    pub id: String,
    /// As the store names it (`--home-u-proj--`).
    pub namespace: String,
    pub dir: String,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub preview: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    /// Shown from fen's kept copy (§11), and whether its source is gone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub source_deleted: bool,
    /// Another machine's name (§12); `None`: this machine's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// A subagent's session: its parent's folder, relative to the namespace's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// One hit before it is shown: a session's best document.
#[derive(Debug, Clone)]
pub struct Found {
    pub sid: u64,
    pub score: Score,
    pub doc: DocAddress,
    pub session: SessionInfo,
    pub message: MessageInfo,
    pub text: String,
}

/// The filters of a search.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub agent: Option<String>,
    pub cwd: Option<String>,
    /// Milliseconds since the epoch.
    pub since_ms: Option<i64>,
    /// Only these sources (the asking process's).
    pub sources: Option<Vec<u64>>,
}

pub struct Engine {
    pub fields: Fields,
    pub storage: Storage,
    reader: IndexReader,
    /// Shared by the threads adding documents; taken whole to commit.
    writer: RwLock<Option<IndexWriter>>,
    /// Bumped whenever what a search sees may have changed.
    generation: AtomicU64,
    /// The commit searched (its opstamp) and when this process first searched it:
    /// what a search sees changes only with a commit (a merge rewrites files, not
    /// what they hold).
    commit_seen: Mutex<(Option<u64>, std::time::SystemTime)>,
    /// The commit payload as of the reader's last reload.
    stamp: RwLock<Option<Stamp>>,
    /// meta.json's stamp at the last reload (a reader follows another writer).
    meta_seen: Mutex<Option<(i64, u64, u64)>>,
    /// When segment files written just now may be checked again, to be trusted by
    /// their stamps from then on (`storage::recheck`).
    recheck_at: Mutex<Option<std::time::SystemTime>>,
    /// `meta.json`'s stamp when the segment files were last recorded as checked: a
    /// merge that ended since (it rewrites `meta.json`) left files readers would
    /// check whole, each of them, until recorded.
    marked: Mutex<Option<(i64, u64, u64)>>,
    /// Bytes of text sent to the writer (`sending`), and taken by its thread (counted
    /// by the analyzer as it cuts them): their difference is the writer's backlog.
    sent: AtomicU64,
    taken: std::sync::Arc<AtomicU64>,
    /// Each searched segment's columns, opened once.
    columns: SegmentColumnsCache,
}

impl Engine {
    pub fn new(fields: Fields, mut storage: Storage) -> Result<Engine> {
        let reader = match storage.reader.take() {
            Some(r) => r,
            None => storage
                .index
                .reader_builder()
                .reload_policy(tantivy::ReloadPolicy::Manual)
                .try_into()
                .map_err(|e| index_error("open a reader", e))?,
        };
        let metas = storage.index.load_metas().ok();
        let opstamp = metas.as_ref().map(|m| m.opstamp);
        let stamp = metas.and_then(|m| Stamp::parse(m.payload.as_deref()));
        // The writer, made later, cuts text with the analyzer registered now.
        let taken = std::sync::Arc::new(AtomicU64::new(0));
        storage.index.tokenizers().register(
            super::schema::TOKENIZER,
            super::schema::counting_analyzer(taken.clone()),
        );
        let e = Engine {
            fields,
            storage,
            reader,
            writer: RwLock::new(None),
            generation: AtomicU64::new(1),
            commit_seen: Mutex::new((opstamp, std::time::SystemTime::now())),
            stamp: RwLock::new(stamp),
            meta_seen: Mutex::new(None),
            recheck_at: Mutex::new(None),
            marked: Mutex::new(None),
            sent: AtomicU64::new(0),
            taken,
            columns: SegmentColumnsCache::default(),
        };
        let seen = e.meta_stat();
        if !e.storage.writable() && (seen.is_none() || seen != e.storage.opened_at) {
            // The stamp read above may be of another commit than the one the checks
            // opened (a writer beside committed meanwhile): both again, with a proof.
            e.reload()?;
        }
        *e.meta_seen.lock().unwrap() = seen;
        Ok(e)
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Since when what a search sees is what it is: when the commit it searches was
    /// first searched here (the index's opening, or the reload after that commit).
    pub fn changed_at(&self) -> std::time::SystemTime {
        self.commit_seen.lock().unwrap().1
    }

    pub fn stamp(&self) -> Option<Stamp> {
        self.stamp.read().unwrap().clone()
    }

    fn meta_stat(&self) -> Option<(i64, u64, u64)> {
        let Place::Disk { folder, .. } = &self.storage.place else {
            return None;
        };
        super::storage::meta_stamp(folder)
    }

    /// A searcher over the latest commit: a process that does not write reloads when
    /// meta.json changed (one `stat`).
    pub fn searcher(&self) -> Searcher {
        if !self.storage.writable() {
            let now = self.meta_stat();
            let mut seen = self.meta_seen.lock().unwrap();
            if now != *seen && self.reload().is_ok() {
                *seen = now;
            }
        }
        self.reader.searcher()
    }

    /// Reloads the reader, and the stamp of the commit it now searches: read with a
    /// proof (`meta.json` was not replaced between the two), else read again, so a
    /// stamp never speaks for another commit than the one searched.
    fn reload(&self) -> Result<()> {
        let mut tries = 0;
        let (stamp, opstamp) = loop {
            let before = self.meta_stat();
            self.reader.reload().map_err(|e| index_error("reload", e))?;
            let metas = self.storage.index.load_metas().ok();
            tries += 1;
            if self.meta_stat() == before || tries == 20 {
                let opstamp = metas.as_ref().map(|m| m.opstamp);
                break (
                    metas.and_then(|m| Stamp::parse(m.payload.as_deref())),
                    opstamp,
                );
            }
        };
        *self.stamp.write().unwrap() = stamp;
        {
            let mut seen = self.commit_seen.lock().unwrap();
            if seen.0 != opstamp {
                *seen = (opstamp, std::time::SystemTime::now());
            }
        }
        self.generation.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn make_writer(&self, w: &mut Option<IndexWriter>) -> Result<()> {
        if !self.storage.writable() {
            return Err(Error::new(
                libc::EBUSY,
                "another process writes the search index",
            ));
        }
        if w.is_none() {
            let options = tantivy::indexer::IndexWriterOptions::builder()
                .num_worker_threads(WRITER_THREADS)
                .memory_budget_per_thread(WRITER_HEAP_PER_THREAD)
                .num_merge_threads(1)
                .build();
            let writer = self
                .storage
                .index
                .writer_with_options(options)
                .map_err(|e| index_error("open the writer", e))?;
            writer.set_merge_policy(Box::new(BoundedMerges));
            *w = Some(writer);
        }
        Ok(())
    }

    /// Runs `f` with the writer (made now if there is none); several threads may.
    pub fn with_writer<T>(&self, f: impl FnOnce(&IndexWriter) -> Result<T>) -> Result<T> {
        {
            let w = self.writer.read().unwrap();
            if let Some(w) = w.as_ref() {
                return f(w);
            }
        }
        self.make_writer(&mut self.writer.write().unwrap())?;
        let w = self.writer.read().unwrap();
        f(w.as_ref().expect("made above"))
    }

    /// Text of `bytes` is about to be sent to the writer: waits while the writer's
    /// backlog is over `BACKLOG` (unless `stop` says to stop, and for at most a few
    /// seconds: a gauge that drifted never stops the work).
    pub fn sending(&self, bytes: u64, stop: &dyn Fn() -> bool) {
        let waited = std::time::Instant::now();
        while self.backlog() > BACKLOG
            && !stop()
            && waited.elapsed() < std::time::Duration::from_secs(5)
        {
            // A few wake-ups per backlog's worth of work:
            // each is a switch on a core the mount's requests may be waiting for.
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.sent.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Text sent to the writer that its thread has not taken yet.
    pub fn backlog(&self) -> u64 {
        self.sent
            .load(Ordering::Relaxed)
            .saturating_sub(self.taken.load(Ordering::Relaxed))
    }

    /// Commits what was added, with `stamp` as its payload, and makes it searchable.
    pub fn commit(&self, stamp: &Stamp) -> Result<()> {
        let started = std::time::Instant::now();
        let payload = serde_json::to_string(stamp).expect("stamp serializes");
        {
            let mut w = self.writer.write().unwrap();
            self.make_writer(&mut w)?;
            let w = w.as_mut().expect("made above");
            let mut prepared = w
                .prepare_commit()
                .map_err(|e| index_error("prepare a commit", e))?;
            // Everything sent was taken (titles count as taken, not sent): the gauge
            // starts again from level.
            self.sent
                .store(self.taken.load(Ordering::Relaxed), Ordering::Relaxed);
            prepared.set_payload(&payload);
            prepared.commit().map_err(|e| index_error("commit", e))?;
        }
        let committed = started.elapsed();
        self.reload()?;
        let reloaded = started.elapsed();
        self.mark_checked();
        log::debug!(
            "search: committed in {committed:?}, searchable after {reloaded:?}, checked after {:?}",
            started.elapsed()
        );
        Ok(())
    }

    /// Gives what a batch's threads freed back to the system (glibc keeps it in its
    /// arenas otherwise). Not after every commit: a trim holds the arenas' locks while
    /// it walks them, and the mount's requests allocate meanwhile (after each commit
    /// of `ctl` appends it made the appends wait).
    pub fn trim(&self) {
        // SAFETY: glibc call with no preconditions.
        unsafe { libc::malloc_trim(0) };
    }

    /// Drops the writer (after its merges finish), giving its memory back.
    pub fn release_writer(&self) {
        let w = self.writer.write().unwrap().take();
        if let Some(w) = w {
            if let Err(e) = w.wait_merging_threads() {
                log::warn!("search index: merging: {e}");
            }
            // Merges removed files and wrote new ones.
            if let Place::Disk { .. } = &self.storage.place {
                let _ = self.reload();
                self.mark_checked();
            }
            // SAFETY: glibc call with no preconditions; returns freed heap to the system.
            unsafe { libc::malloc_trim(0) };
        }
    }

    fn mark_checked(&self) {
        if let Place::Disk { folder, .. } = &self.storage.place {
            let before = self.meta_stat();
            *self.recheck_at.lock().unwrap() =
                super::storage::mark_checked(folder, &self.storage.index);
            *self.marked.lock().unwrap() = before;
        }
    }

    /// The writer's upkeep: segments a merge wrote since the last commit are recorded
    /// as checked (the writer wrote them; readers check them whole until then), and
    /// files written just now are checked again once they may be trusted by their
    /// stamps (until then, every reader checks them). Cheap when there is nothing to
    /// do: a `stat` of `meta.json`.
    pub fn upkeep(&self) {
        if !self.storage.writable() {
            return;
        }
        let merged = self.meta_stat() != *self.marked.lock().unwrap();
        if merged && self.has_writer() {
            self.mark_checked();
        }
        let due = self
            .recheck_at
            .lock()
            .unwrap()
            .is_some_and(|t| std::time::SystemTime::now() >= t);
        if due && let Place::Disk { folder, .. } = &self.storage.place {
            *self.recheck_at.lock().unwrap() = super::storage::recheck(folder);
        }
    }

    /// When `upkeep` has files to check again (the indexer wakes then).
    pub fn upkeep_at(&self) -> Option<std::time::SystemTime> {
        *self.recheck_at.lock().unwrap()
    }

    pub fn has_writer(&self) -> bool {
        self.writer.read().unwrap().is_some()
    }

    /// Every session the index holds, by `sid`.
    pub fn known(&self) -> Result<HashMap<u64, Known>> {
        let searcher = self.searcher();
        let f = &self.fields;
        let q = TermQuery::new(Term::from_field_u64(f.kind, 1), IndexRecordOption::Basic);
        let docs = searcher
            .search(&q, &DocSetCollector)
            .map_err(|e| index_error("list sessions", e))?;
        let mut by_segment: HashMap<u32, Vec<DocId>> = HashMap::new();
        for d in docs {
            by_segment.entry(d.segment_ord).or_default().push(d.doc_id);
        }
        let mut out = HashMap::new();
        for (seg, docs) in by_segment {
            let r = searcher.segment_reader(seg);
            let ff = r.fast_fields();
            let col = |name: &str| ff.u64(name).map_err(|e| index_error("read a column", e));
            let (sid, src, size, count, prefix) = (
                col("sid")?,
                col("src")?,
                col("size")?,
                col("count")?,
                col("prefix")?,
            );
            let mtime = ff
                .i64("mtime")
                .map_err(|e| index_error("read a column", e))?;
            let marks = [
                col(super::schema::MARK_FIELDS[0])?,
                col(super::schema::MARK_FIELDS[1])?,
                col(super::schema::MARK_FIELDS[2])?,
                col(super::schema::MARK_FIELDS[3])?,
            ];
            for d in docs {
                let (Some(s), Some(src)) = (sid.first(d), src.first(d)) else {
                    continue;
                };
                out.insert(
                    s,
                    Known {
                        src,
                        size: size.first(d).unwrap_or(0),
                        mtime: mtime.first(d).unwrap_or(0),
                        count: count.first(d).unwrap_or(0),
                        prefix: prefix.first(d).unwrap_or(0),
                        mark: crate::sources::MessageMark(
                            marks.each_ref().map(|c| c.first(d).unwrap_or(0)),
                        ),
                    },
                );
            }
        }
        Ok(out)
    }

    fn clause_query(&self, c: &Clause) -> Box<dyn TQuery> {
        let field = self.fields.text;
        let terms: Vec<Term> = c
            .words
            .iter()
            .map(|w| Term::from_field_text(field, w))
            .collect();
        match (terms.len(), c.prefix) {
            (1, false) => Box::new(TermQuery::new(
                terms.into_iter().next().expect("one"),
                IndexRecordOption::WithFreqs,
            )),
            (1, true) => {
                let pattern = format!("{}.*", regex_escape(&c.words[0]));
                match RegexQuery::from_pattern(&pattern, field) {
                    Ok(q) => Box::new(q),
                    Err(_) => Box::new(tantivy::query::EmptyQuery),
                }
            }
            (_, false) => Box::new(PhraseQuery::new(terms)),
            (_, true) => {
                let mut q = PhrasePrefixQuery::new(terms);
                q.set_max_expansions(1000);
                Box::new(q)
            }
        }
    }

    /// The Tantivy query for `query` under `filters`.
    pub fn to_query(&self, query: &Query, filters: &Filters) -> Box<dyn TQuery> {
        let f = &self.fields;
        let mut clauses: Vec<(Occur, Box<dyn TQuery>)> = Vec::new();
        for c in &query.clauses {
            let occur = if c.negated {
                Occur::MustNot
            } else {
                Occur::Must
            };
            clauses.push((occur, self.clause_query(c)));
        }
        let filter = |q: Box<dyn TQuery>| -> (Occur, Box<dyn TQuery>) {
            (Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0)))
        };
        if let Some(agent) = &filters.agent {
            clauses.push(filter(Box::new(TermQuery::new(
                Term::from_field_text(f.agent, agent),
                IndexRecordOption::Basic,
            ))));
        }
        if let Some(cwd) = &filters.cwd {
            clauses.push(filter(Box::new(TermQuery::new(
                Term::from_field_text(f.cwd, cwd),
                IndexRecordOption::Basic,
            ))));
        }
        if let Some(ms) = filters.since_ms {
            clauses.push(filter(Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_i64(f.ts, ms)),
                Bound::Unbounded,
            ))));
        }
        // Sources are filtered by the collector, on the matches only (a set query
        // would first mark every document of every source).
        Box::new(BooleanQuery::new(clauses))
    }

    /// The best document of each of the best `limit` sessions, best first (ties: the
    /// newer message first).
    pub fn search(&self, query: &Query, filters: &Filters, limit: usize) -> Result<Vec<Found>> {
        let searcher = self.searcher();
        let q = self.to_query(query, filters);
        let best = best_sessions(
            &searcher,
            &*q,
            filters.sources.as_deref(),
            limit,
            &self.columns,
        )
        .map_err(|e| index_error("search", e))?;
        let mut out = Vec::new();
        for (sid, b) in best {
            let doc: TantivyDocument = searcher
                .doc(b.doc)
                .map_err(|e| index_error("read a document", e))?;
            let text = doc
                .get_first(self.fields.text)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let info = doc
                .get_first(self.fields.info)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let is_session = doc.get_first(self.fields.kind).is_some();
            let Some(session) = self.session_info(&searcher, sid)? else {
                continue;
            };
            let message = if is_session {
                MessageInfo {
                    role: "title".into(),
                    entry: None,
                    timestamp: session.updated_at.clone(),
                    in_conversation: true,
                }
            } else {
                serde_json::from_str(&info).unwrap_or_default()
            };
            out.push(Found {
                sid,
                score: b.score,
                doc: b.doc,
                session,
                message,
                text,
            });
        }
        Ok(out)
    }

    /// The facts on session `sid`'s own document.
    pub fn session_info(&self, searcher: &Searcher, sid: u64) -> Result<Option<SessionInfo>> {
        let q = TermQuery::new(
            Term::from_field_u64(self.fields.session_of, sid),
            IndexRecordOption::Basic,
        );
        let docs = searcher
            .search(&q, &DocSetCollector)
            .map_err(|e| index_error("find a session", e))?;
        let Some(addr) = docs.into_iter().next() else {
            return Ok(None);
        };
        let doc: TantivyDocument = searcher
            .doc(addr)
            .map_err(|e| index_error("read a document", e))?;
        let info = doc
            .get_first(self.fields.info)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Ok(serde_json::from_str(&info).ok())
    }
}

/// Merges small segments into bounded ones, and never beyond: a merge maps every
/// input segment and reads it whole, and those pages count in the daemon's memory
/// (Tantivy's default policy ends a big build by merging most of the index at once).
/// Segments merge with others of about their size (tiers of [`TIER`] times as many
/// documents): the tiny segments of a burst of appends' commits merge among
/// themselves, not each time into the biggest small segment (which rewrote megabytes
/// for a few new documents, and every reader then checked the new file whole).
#[derive(Debug)]
struct BoundedMerges;

/// A merge's output holds at most this many documents (~22 MB of index on the bench's
/// history). Its inputs are mapped and read whole while it runs: at 20,000 they were
/// 53 MB of the daemon's 156-168 MB peak over the history's first pass (`smaps`; bench
/// row 18), at 10,000 about 10 MB of a 116-118 MB one, for ~55 segments instead of ~31
/// (a query's cost per segment is small once its columns are open).
const MERGE_MAX_DOCS: u32 = 10_000;
/// Fewer small segments of a tier than this are left as they are.
const MERGE_MIN_SEGMENTS: usize = 6;
/// Segments whose sizes are within this factor share a tier.
const TIER: u32 = 8;

/// The tier of a segment of `docs` documents: 0 below `TIER`, 1 below `TIER`², ...
fn tier(docs: u32) -> u32 {
    let (mut t, mut n) = (0, docs);
    while n >= TIER {
        n /= TIER;
        t += 1;
    }
    t
}

impl tantivy::indexer::MergePolicy for BoundedMerges {
    fn compute_merge_candidates(
        &self,
        segments: &[tantivy::index::SegmentMeta],
    ) -> Vec<tantivy::indexer::MergeCandidate> {
        use tantivy::indexer::MergeCandidate;
        let mut out = Vec::new();
        // A segment that is mostly deleted documents is rewritten alone.
        for s in segments {
            if s.max_doc() > 0 && s.num_deleted_docs() * 2 > s.max_doc() {
                out.push(MergeCandidate(vec![s.id()]));
            }
        }
        let mut small: Vec<_> = segments
            .iter()
            .filter(|s| {
                s.num_docs() < MERGE_MAX_DOCS / 2 && s.num_deleted_docs() * 2 <= s.max_doc()
            })
            .collect();
        small.sort_by_key(|s| (tier(s.num_docs()), s.num_docs()));
        let mut group = Vec::new();
        let mut docs = 0u32;
        let mut group_tier = None;
        for s in small {
            let t = tier(s.num_docs());
            if group_tier != Some(t) || docs + s.num_docs() > MERGE_MAX_DOCS {
                if group.len() >= MERGE_MIN_SEGMENTS {
                    out.push(MergeCandidate(std::mem::take(&mut group)));
                }
                group.clear();
                docs = 0;
                group_tier = Some(t);
            }
            group.push(s.id());
            docs += s.num_docs();
        }
        if group.len() >= MERGE_MIN_SEGMENTS {
            out.push(MergeCandidate(group));
        }
        out
    }
}

/// Escapes what the regex syntax would read as an operator (analyzed words hold only
/// letters and digits, but nothing here relies on it).
fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A session's best document so far.
#[derive(Debug, Clone, Copy)]
struct Best {
    score: Score,
    ts: i64,
    doc: DocAddress,
}

impl Best {
    fn better_than(&self, other: &Best) -> bool {
        self.score > other.score || (self.score == other.score && self.ts > other.ts)
    }
}

/// Session ids are hashes already: they are their own hash.
#[derive(Default)]
struct SidHasher(u64);

impl std::hash::Hasher for SidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type BySid<V> = HashMap<u64, V, std::hash::BuildHasherDefault<SidHasher>>;

/// The answer's order of sessions, each with its best document, best first: the
/// higher score, then the newer message, then the smaller session id.
fn answer_order(a: (u64, &Best), b: (u64, &Best)) -> std::cmp::Ordering {
    b.1.score
        .total_cmp(&a.1.score)
        .then(b.1.ts.cmp(&a.1.ts))
        .then(a.0.cmp(&b.0))
}

/// Whether session `a` comes before session `b` in the answer.
fn ranks_above(a: (u64, &Best), b: (u64, &Best)) -> bool {
    answer_order(a, b).is_lt()
}

/// The best `limit` sessions met so far, each with its best document. Only these are
/// kept: a session pushed out ranked under the `limit` kept, so a later document of it
/// can only come back by beating the worst of them, as a session of its own.
struct TopSessions {
    limit: usize,
    kept: BySid<Best>,
    /// The worst kept session, once `limit` are kept.
    worst: Option<(u64, Best)>,
}

impl TopSessions {
    fn new(limit: usize) -> TopSessions {
        TopSessions {
            limit,
            kept: BySid::default(),
            worst: None,
        }
    }

    fn find_worst(&mut self) {
        self.worst = if self.kept.len() < self.limit {
            None
        } else {
            self.kept.iter().map(|(s, b)| (*s, *b)).reduce(|w, x| {
                if ranks_above((w.0, &w.1), (x.0, &x.1)) {
                    x
                } else {
                    w
                }
            })
        };
    }

    fn offer(&mut self, sid: u64, b: Best) {
        if let Some(old) = self.kept.get_mut(&sid) {
            // Ties within a session: the first document met stays.
            if b.better_than(old) {
                *old = b;
                if self.worst.is_some_and(|(w, _)| w == sid) {
                    self.find_worst();
                }
            }
            return;
        }
        match self.worst {
            None => {
                self.kept.insert(sid, b);
                self.find_worst();
            }
            Some((w, wb)) if ranks_above((sid, &b), (w, &wb)) => {
                self.kept.remove(&w);
                self.kept.insert(sid, b);
                self.find_worst();
            }
            Some(_) => {}
        }
    }

    /// Scores a document must beat to matter: with `limit` sessions kept, anything
    /// under the worst one's (a tie may still win on time, hence just under).
    fn threshold(&self) -> Score {
        self.worst.map_or(Score::MIN, |(_, b)| b.score.next_down())
    }

    /// Best first.
    fn into_sorted(self) -> Vec<(u64, Best)> {
        let mut best: Vec<(u64, Best)> = self.kept.into_iter().collect();
        best.sort_by(|a, b| answer_order((a.0, &a.1), (b.0, &b.1)));
        best
    }
}

/// The best document of each of the best `limit` sessions (the `sid` column), of
/// documents from `sources` only (the `src` column), best first; exactly what scoring
/// every match would give. Once `limit` sessions are held, a document scoring under
/// the worst of them changes nothing, so the scorer is told to skip such documents:
/// Tantivy's block-max WAND then passes over whole blocks of a common word's postings,
/// which were otherwise scored one by one (bench row 20: 4-6 ms for a common word on
/// the 2.5 GB history).
fn best_sessions(
    searcher: &Searcher,
    query: &dyn TQuery,
    sources: Option<&[u64]>,
    limit: usize,
    columns: &SegmentColumnsCache,
) -> tantivy::Result<Vec<(u64, Best)>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let mut top = TopSessions::new(limit);
    let weight = query.weight(tantivy::query::EnableScoring::enabled_from_searcher(
        searcher,
    ))?;
    for (ord, reader) in searcher.segment_readers().iter().enumerate() {
        let SegmentColumns { sid, src, ts } = columns.of(reader)?;
        let alive = reader.alive_bitset();
        let segment = ord as SegmentOrdinal;
        weight.for_each_pruning(top.threshold(), reader, &mut |doc: DocId, score: Score| {
            let wanted = alive.is_none_or(|a| a.is_alive(doc))
                && sources.is_none_or(|ss| src.first(doc).is_some_and(|s| ss.contains(&s)));
            if let (true, Some(sid)) = (wanted, sid.first(doc)) {
                top.offer(
                    sid,
                    Best {
                        score,
                        ts: ts.first(doc).unwrap_or(0),
                        doc: DocAddress::new(segment, doc),
                    },
                );
            }
            top.threshold()
        })?;
    }
    columns.keep_only(searcher);
    Ok(top.into_sorted())
}

/// The columns a search reads of each matching document.
#[derive(Clone)]
struct SegmentColumns {
    sid: tantivy::columnar::Column<u64>,
    src: tantivy::columnar::Column<u64>,
    ts: tantivy::columnar::Column<i64>,
}

/// Columns by segment: a segment never changes once written (its deletions are kept
/// apart), and opening its columns (reading the column directory, decoding every
/// block's header) was most of a query's time when done per query and segment
/// (`perf`, bench row 20).
#[derive(Default)]
struct SegmentColumnsCache(Mutex<HashMap<tantivy::index::SegmentId, SegmentColumns>>);

impl SegmentColumnsCache {
    fn of(&self, reader: &tantivy::SegmentReader) -> tantivy::Result<SegmentColumns> {
        let id = reader.segment_id();
        if let Some(c) = self.0.lock().unwrap().get(&id) {
            return Ok(c.clone());
        }
        let fast = reader.fast_fields();
        let c = SegmentColumns {
            sid: fast.u64("sid")?,
            src: fast.u64("src")?,
            ts: fast.i64("ts")?,
        };
        self.0.lock().unwrap().insert(id, c.clone());
        Ok(c)
    }

    /// Forgets the segments `searcher` does not search (merged away since).
    fn keep_only(&self, searcher: &Searcher) {
        let mut cache = self.0.lock().unwrap();
        if cache.len() > searcher.segment_readers().len() {
            let live: std::collections::HashSet<_> = searcher
                .segment_readers()
                .iter()
                .map(|r| r.segment_id())
                .collect();
            cache.retain(|id, _| live.contains(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::indexer::MergePolicy;

    fn segments(sizes: &[u32]) -> (Vec<tantivy::index::SegmentMeta>, HashMap<String, u32>) {
        let index = tantivy::Index::create_in_ram(tantivy::schema::Schema::builder().build());
        let metas: Vec<_> = sizes
            .iter()
            .map(|&n| index.new_segment_meta(tantivy::index::SegmentId::generate_random(), n))
            .collect();
        let by_id = metas
            .iter()
            .map(|m| (m.id().uuid_string(), m.max_doc()))
            .collect();
        (metas, by_id)
    }

    fn merges(sizes: &[u32]) -> Vec<Vec<u32>> {
        let (metas, by_id) = segments(sizes);
        let mut out: Vec<Vec<u32>> = BoundedMerges
            .compute_merge_candidates(&metas)
            .into_iter()
            .map(|c| {
                let mut g: Vec<u32> = c.0.iter().map(|id| by_id[&id.uuid_string()]).collect();
                g.sort();
                g
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn small_segments_merge_with_segments_of_their_size_only() {
        // A burst's tiny commits beside a big small segment: merged among themselves.
        assert_eq!(
            merges(&[3, 2, 4, 1, 5, 2, 9000, 15_000]),
            vec![vec![1, 2, 2, 3, 4, 5]]
        );
        // Too few of a tier: nothing.
        assert!(merges(&[3, 2, 4, 9000, 100, 200]).is_empty());
        // Each tier on its own, bounded.
        assert_eq!(
            merges(&[10, 20, 30, 40, 50, 60, 2, 2, 2, 2, 2, 2]),
            vec![vec![2, 2, 2, 2, 2, 2], vec![10, 20, 30, 40, 50, 60]]
        );
        // Within a tier, groups of at most MERGE_MAX_DOCS documents.
        assert_eq!(merges(&[1500; 13]), vec![vec![1500; 6], vec![1500; 6]]);
        // Never past it: seven of 1,500 would be 10,500.
        assert_eq!(merges(&[1500; 7]), vec![vec![1500; 6]]);
        assert!(tier(7) == 0 && tier(8) == 1 && tier(63) == 1 && tier(64) == 2);
    }

    /// A merge's segment, written by the writer's merge thread after a commit, is
    /// recorded as checked at the writer's next upkeep (and trusted by its stamp once
    /// it is old enough), not left for every reader to read whole until the next
    /// commit or the writer's drop.
    #[test]
    fn a_merged_segment_is_recorded_at_the_next_upkeep_and_trusted_once_old_enough() {
        let tmp = tempfile::tempdir().unwrap();
        let fields = Fields::new();
        let storage = super::super::storage::open(tmp.path(), &fields, true);
        let Place::Disk { folder, .. } = &storage.place else {
            panic!("an index on disk");
        };
        let folder = crate::store::open::Dir::open_root(folder.path()).unwrap();
        let engine = Engine::new(fields.clone(), storage).unwrap();
        let stamp = Stamp {
            format: super::super::storage::FORMAT.into(),
            version: super::super::schema::FORMAT_VERSION,
            complete: true,
            sessions: 0,
            indexed: 0,
            sources: Vec::new(),
            mount: None,
            writer: None,
            pid: None,
        };
        // Six commits of one document each: six segments of one tier, merged.
        for i in 0..MERGE_MIN_SEGMENTS as u64 {
            engine
                .with_writer(|w| {
                    let mut d = TantivyDocument::default();
                    d.add_text(fields.text, format!("word{i}"));
                    d.add_u64(fields.sid, i);
                    w.add_document(d)
                        .map(|_| ())
                        .map_err(|e| index_error("add", e))
                })
                .unwrap();
            engine.commit(&stamp).unwrap();
        }
        let segments = || {
            engine
                .storage
                .index
                .searchable_segment_metas()
                .unwrap()
                .len()
        };
        let start = std::time::Instant::now();
        while segments() > 1 {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "no merge"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // The merge's files: not recorded yet (a reader would read them whole).
        assert!(!super::super::storage::unchecked(&folder, &engine.storage.index).is_empty());
        engine.upkeep();
        // Recorded now, racily (just written): trusted once the writer checked them
        // again past the racy window.
        let racy = engine.upkeep_at().expect("a recheck is due");
        while std::time::SystemTime::now() < racy {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        engine.upkeep();
        assert_eq!(
            super::super::storage::unchecked(&folder, &engine.storage.index),
            Vec::<String>::new()
        );
    }

    /// Every matching document scored, no pruning: what `best_sessions` must equal.
    fn best_sessions_scoring_all(
        searcher: &Searcher,
        query: &dyn TQuery,
        sources: Option<&[u64]>,
        limit: usize,
    ) -> Vec<(u64, Best)> {
        let weight = query
            .weight(tantivy::query::EnableScoring::enabled_from_searcher(
                searcher,
            ))
            .unwrap();
        let mut best: Vec<(u64, Best)> = Vec::new();
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let fast = reader.fast_fields();
            let (sid, src, ts) = (
                fast.u64("sid").unwrap(),
                fast.u64("src").unwrap(),
                fast.i64("ts").unwrap(),
            );
            let alive = reader.alive_bitset();
            weight
                .for_each_pruning(Score::MIN, reader, &mut |doc, score| {
                    let s = sid.first(doc).unwrap();
                    if alive.is_none_or(|a| a.is_alive(doc))
                        && sources.is_none_or(|ss| ss.contains(&src.first(doc).unwrap()))
                    {
                        let b = Best {
                            score,
                            ts: ts.first(doc).unwrap(),
                            doc: DocAddress::new(ord as SegmentOrdinal, doc),
                        };
                        match best.iter_mut().find(|(x, _)| *x == s) {
                            Some((_, old)) if b.better_than(old) => *old = b,
                            Some(_) => {}
                            None => best.push((s, b)),
                        }
                    }
                    Score::MIN
                })
                .unwrap();
        }
        best.sort_by(|a, b| {
            b.1.score
                .total_cmp(&a.1.score)
                .then(b.1.ts.cmp(&a.1.ts))
                .then(a.0.cmp(&b.0))
        });
        best.truncate(limit);
        best
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Skipping what cannot make the best `limit` sessions changes no answer: the
        /// same sessions, each with the same document, in the same order, whatever the
        /// ties, segments, deletions and source filter.
        #[test]
        fn pruned_best_sessions_are_those_of_scoring_everything(
            docs in proptest::collection::vec(
                (0u64..12, 0u64..3, 0i64..4, proptest::collection::vec(0usize..4, 1..6)),
                1..400,
            ),
            commit_every in 1usize..120,
            deleted in proptest::collection::vec(0u64..12, 0..3),
            limit in 0usize..8,
            only_some_sources in proptest::bool::ANY,
            two_words in proptest::bool::ANY,
        ) {
            use tantivy::schema::{FAST, INDEXED, Schema, TEXT};
            let mut schema = Schema::builder();
            let text = schema.add_text_field("text", TEXT);
            let sid = schema.add_u64_field("sid", FAST | INDEXED);
            let src = schema.add_u64_field("src", FAST);
            let ts = schema.add_i64_field("ts", FAST);
            let index = tantivy::Index::create_in_ram(schema.build());
            let mut writer: IndexWriter = index.writer_with_num_threads(1, 15 << 20).unwrap();
            const WORDS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];
            for (i, (s, source, t, words)) in docs.iter().enumerate() {
                let words: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                let mut d = TantivyDocument::default();
                d.add_text(text, words.join(" "));
                d.add_u64(sid, *s);
                d.add_u64(src, *source);
                d.add_i64(ts, *t);
                writer.add_document(d).unwrap();
                if (i + 1) % commit_every == 0 {
                    writer.commit().unwrap();
                }
            }
            for d in &deleted {
                writer.delete_term(Term::from_field_u64(sid, *d));
            }
            writer.commit().unwrap();
            let reader = index.reader().unwrap();
            let searcher = reader.searcher();
            let term = |w: &str| -> Box<dyn TQuery> {
                Box::new(TermQuery::new(
                    Term::from_field_text(text, w),
                    IndexRecordOption::WithFreqs,
                ))
            };
            let query: Box<dyn TQuery> = if two_words {
                Box::new(BooleanQuery::new(vec![
                    (Occur::Should, term("alpha")),
                    (Occur::Should, term("beta")),
                ]))
            } else {
                term("alpha")
            };
            let sources: Option<Vec<u64>> = only_some_sources.then(|| vec![0, 2]);
            let cache = SegmentColumnsCache::default();
            for _ in 0..2 {
                let pruned =
                    best_sessions(&searcher, &*query, sources.as_deref(), limit, &cache).unwrap();
                let all = best_sessions_scoring_all(&searcher, &*query, sources.as_deref(), limit);
                let key = |v: &[(u64, Best)]| -> Vec<(u64, u32, i64, u32, u32)> {
                    v.iter()
                        .map(|(s, b)| (*s, b.score.to_bits(), b.ts, b.doc.segment_ord, b.doc.doc_id))
                        .collect()
                };
                proptest::prop_assert_eq!(key(&pruned), key(&all));
            }
        }
    }
}
