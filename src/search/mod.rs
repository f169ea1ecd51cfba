//! Search over every session of every source (SPEC §8): a Tantivy index kept in
//! fen's cache folder, fed only with the neutral messages sources give
//! (`SessionSource::messages`), queried with `fen-fs search` and the mount's
//! `search/` folder. A layer below `tree` and above `sources`.
//!
//! - `query`: the query language, parsed by hand;
//! - `schema`: fields and the word analyzer; `extract`: what of a message is indexed;
//! - `storage`: where the index lives, its checks, rebuilds and the writer lock;
//! - `engine`: the open index, Tantivy queries, one best message per session;
//! - `sync`: which sessions changed, and (re)indexing them;
//! - `snippet`, `hits`: what a hit shows.
//!
//! [`Search`] ties them: a daemon starts it in the background (`start`), a one-shot
//! command brings the index up to date first (`update`); both ask `answer`.

pub mod engine;
pub mod extract;
pub mod folder;
pub mod hits;
pub mod query;
pub mod schema;
pub mod snippet;
pub mod storage;
pub mod sync;

use crate::background::{Background, Class, priority};
use crate::error::{Error, Result};
use crate::sources::set::SourceSet;
use engine::{Engine, Filters, Known};
use hits::{Answer, Building, Hit};
use schema::Fields;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};
use sync::{Complaints, Live, SourceRef};

/// Hits per search unless asked otherwise (and in the mount's `search/`).
pub const DEFAULT_LIMIT: usize = 20;
/// Threads reading and converting sessions while the index takes their documents.
const INDEX_THREADS: usize = 2;
/// How often a daemon looks for sessions changed behind its back.
const SWEEP: Duration = Duration::from_millis(400);
/// During a build, a commit at least this often (what is indexed becomes searchable,
/// and the progress visible to other processes; the first after a second, so the
/// newest sessions, indexed first, are found soon after a mount)...
const COMMIT_EVERY: Duration = Duration::from_secs(5);
const COMMIT_FIRST: Duration = Duration::from_secs(1);
/// ...or after this much text: a commit waits for the index to take every document
/// sent, so this also bounds the documents waiting in its queue (their memory), and
/// what a stop has to commit before the daemon exits. A huge session is indexed in
/// slices of this size, each saved as far as it got.
const COMMIT_BYTES: u64 = 32 << 20;
/// A long pass looks at every session again at its end, at most this many times
/// (sessions that keep changing are then followed by the sweeps).
const RESCANS: usize = 3;
/// Sessions appended to through `ctl` are indexed at most this often...
const TOUCH_MIN: Duration = Duration::from_millis(200);
/// ...and at least this often while appends go on (they are found within a second).
const TOUCH_MAX: Duration = Duration::from_millis(600);
/// An idle writer is dropped after this long (its memory goes back).
const WRITER_IDLE: Duration = Duration::from_secs(10);
/// A mount's answers to one query are reused this long if the index did not change
/// meanwhile (a `ls -l` asks for the folder, its listing and `hits.jsonl`).
const MEMO: Duration = Duration::from_millis(1000);
/// A process reading the index another keeps waits this long at most for the keeper
/// to have looked at the sessions (right after a mount), then says it may be partial.
pub const SETTLE: Duration = Duration::from_secs(1);

/// A search's question.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: query::Query,
    pub agent: Option<crate::agent::Agent>,
    /// Absolute and normalized.
    pub cwd: Option<String>,
    pub since_ms: Option<i64>,
    pub limit: usize,
    /// Only the sessions of this machine (§12: a peer's name, or this one's).
    pub host: Option<String>,
}

impl Request {
    /// Just the words of `text`, with the default limit.
    pub fn parse(text: &str) -> Result<Request> {
        Ok(Request {
            query: query::parse(text)?,
            agent: None,
            cwd: None,
            since_ms: None,
            limit: DEFAULT_LIMIT,
            host: None,
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    complete: bool,
    sessions: u64,
    indexed: u64,
}

/// A mount's recent answers: query → (index generation, when, answer).
type Memo = HashMap<String, (u64, Instant, Arc<Answer>)>;

#[derive(Default)]
struct Pending {
    /// Sessions appended to through `ctl` (namespace, folder).
    touched: HashSet<(String, String)>,
    /// A session was made through the root `ctl`: look at every session now.
    sweep: bool,
}

pub struct Search {
    store_root: Option<PathBuf>,
    fields: Fields,
    /// The sources searched; the set can change while a mount runs (§12: peers).
    set: SourceSet,
    /// `set` as the index files it, as of the set's generation, and when that
    /// changed (answers leave out the sessions of sources taken out at once).
    refs: Mutex<(u64, Arc<Vec<SourceRef>>)>,
    refs_changed: Mutex<std::time::SystemTime>,
    /// Sources taken out of the set while this process ran: their sessions leave the
    /// index at the next pass (answers leave them out at once).
    dropped: Mutex<HashSet<u64>>,
    engine: RwLock<Arc<Engine>>,
    /// The writer's own progress (a reader takes the commit's stamp): `None` until
    /// it has looked at the sessions, and until then an answer says it may be partial.
    progress: Mutex<Option<Progress>>,
    pending: Mutex<Pending>,
    wake: Condvar,
    memo: Mutex<Memo>,
    said: Mutex<HashSet<String>>,
    /// Set once the first full update of this process is done.
    settled: AtomicBool,
    /// The index on disk is opened by the indexer thread (`start`), not yet.
    deferred: AtomicBool,
    /// How long the last look at every session's stamp took: a daemon's sweeps are
    /// spaced so that they cost at most a tenth of a core.
    scan_cost: Mutex<Duration>,
    /// A daemon's: big passes yield to the mount (lower priorities, and `bg.pause`
    /// between messages: the I/O scheduler may not honour the idle class).
    yields: bool,
    /// A daemon's mount point (said in each commit).
    mount: Option<PathBuf>,
    /// The stop signal and the mount's activity (a one-shot command's never stops).
    bg: Background,
    /// A daemon's writer lock, taken by `start` before the mount is ready, until the
    /// indexer opens the index with it.
    held: Mutex<Option<storage::Held>>,
}

impl Search {
    /// The index of the store at `store_root` (`None`: in memory only) over
    /// `sources`; `write`: take the writer's role if nobody has it.
    pub fn open(store_root: Option<&Path>, sources: impl Into<SourceSet>, write: bool) -> Search {
        let fields = Fields::new();
        let storage = match store_root {
            Some(root) => storage::open(root, &fields, write),
            None => storage::memory(&fields, "no store: the index is kept in memory".into()),
        };
        // The caller says the storage's notes (a command on stderr, once).
        Search::with_storage(store_root, sources, fields, storage)
    }

    /// For a daemon: the index on disk is opened and checked by the indexer thread
    /// (`start`), so the mount is ready at once; until then a search finds nothing and
    /// says the index is being built.
    pub fn open_deferred(
        store_root: &Path,
        mount: &Path,
        sources: impl Into<SourceSet>,
        bg: Background,
    ) -> Search {
        let fields = Fields::new();
        let placeholder = storage::Storage {
            notes: Vec::new(),
            ..storage::memory(&fields, String::new())
        };
        let mut s = Search::with_storage(Some(store_root), sources, fields, placeholder);
        s.deferred.store(true, Ordering::Relaxed);
        s.yields = true;
        s.bg = bg;
        s.mount = Some(std::path::absolute(mount).unwrap_or_else(|_| mount.to_path_buf()));
        s
    }

    fn with_storage(
        store_root: Option<&Path>,
        sources: impl Into<SourceSet>,
        fields: Fields,
        storage: storage::Storage,
    ) -> Search {
        let set: SourceSet = sources.into();
        let refs = (
            set.generation(),
            Arc::new(set.current().iter().cloned().map(SourceRef::new).collect()),
        );
        let engine = Engine::new(fields.clone(), storage).unwrap_or_else(|e| {
            let s = storage::memory(&fields, e.reason);
            Engine::new(fields.clone(), s).expect("an index in memory opens")
        });
        Search {
            store_root: store_root.map(Path::to_path_buf),
            fields,
            set,
            refs: Mutex::new(refs),
            refs_changed: Mutex::new(std::time::UNIX_EPOCH),
            dropped: Mutex::new(HashSet::new()),
            engine: RwLock::new(Arc::new(engine)),
            progress: Mutex::new(None),
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            memo: Mutex::new(HashMap::new()),
            said: Mutex::new(HashSet::new()),
            settled: AtomicBool::new(false),
            deferred: AtomicBool::new(false),
            scan_cost: Mutex::new(Duration::ZERO),
            yields: false,
            mount: None,
            bg: Background::new(),
            held: Mutex::new(None),
        }
    }

    /// Asks this index's background work (a running update) to stop at its next
    /// session and commit what it has: for a process that exits (`fen-fs mcp`).
    pub fn stop(&self) {
        self.bg.stop();
    }

    /// The sources as the index files them, now.
    fn sources(&self) -> Arc<Vec<SourceRef>> {
        let generation = self.set.generation();
        let mut refs = self.refs.lock().unwrap();
        if refs.0 == generation {
            return refs.1.clone();
        }
        // The set changed: the sources still in it keep their identity (a label is a
        // canonical path: not looked up again).
        let next: Vec<SourceRef> = self
            .set
            .current()
            .iter()
            .map(|s| {
                refs.1
                    .iter()
                    .find(|r| Arc::ptr_eq(&r.source, s))
                    .cloned()
                    .unwrap_or_else(|| SourceRef::new(s.clone()))
            })
            .collect();
        let now: HashSet<u64> = next.iter().map(|r| r.src).collect();
        let mut dropped = self.dropped.lock().unwrap();
        dropped.extend(refs.1.iter().map(|r| r.src).filter(|s| !now.contains(s)));
        dropped.retain(|s| !now.contains(s));
        *refs = (generation, Arc::new(next));
        *self.refs_changed.lock().unwrap() = std::time::SystemTime::now();
        refs.1.clone()
    }

    /// The set of sources changed (a peer came or went): the indexer looks at every
    /// session now, indexing the new ones and dropping the ones gone.
    pub fn sources_changed(&self) {
        self.sources();
        self.sweep_soon();
    }

    fn engine(&self) -> Arc<Engine> {
        self.engine.read().unwrap().clone()
    }

    /// Notes of the storage (rebuilt, in memory), each logged once.
    fn say_notes(&self) {
        let notes = self.engine().storage.notes.clone();
        for n in notes {
            if self.said.lock().unwrap().insert(n.clone()) {
                log::warn!("{n}");
            }
        }
    }

    /// What this process's storage had to say (for a command's stderr).
    pub fn notes(&self) -> Vec<String> {
        self.engine().storage.notes.clone()
    }

    /// Whether this process writes the index.
    pub fn writable(&self) -> bool {
        self.engine().storage.writable()
    }

    /// Sources of this process that the index's writer does not cover (a reader's
    /// answers leave their sessions out until a writer indexes them). Nothing for an
    /// index in memory: its notes say why it is empty.
    pub fn uncovered(&self) -> Vec<String> {
        let engine = self.engine();
        if engine.storage.writable()
            || matches!(
                engine.storage.place,
                storage::Place::Memory { .. } | storage::Place::Absent
            )
        {
            return Vec::new();
        }
        let Some(stamp) = engine.stamp() else {
            return Vec::new();
        };
        self.sources()
            .iter()
            .filter(|s| !stamp.sources.contains(&s.label))
            .map(|s| s.label.clone())
            .collect()
    }

    fn stamp_now(&self, engine: &Engine, p: Progress) -> storage::Stamp {
        storage::Stamp {
            format: storage::FORMAT.into(),
            version: schema::FORMAT_VERSION,
            complete: p.complete,
            sessions: p.sessions,
            indexed: p.indexed,
            sources: self.sources().iter().map(|s| s.label.clone()).collect(),
            mount: self.mount.clone(),
            writer: engine.storage.token.clone(),
            pid: self.mount.is_some().then(std::process::id),
        }
    }

    /// Where the index's writer has the store mounted, as its last commit says (the
    /// caller checks that it still is).
    pub fn writer_mount(&self) -> Option<PathBuf> {
        self.engine().stamp().and_then(|s| s.mount)
    }

    /// For a process reading the index another keeps: whether the keeper has
    /// committed since it took the index (its stamp then says how complete the index
    /// is; before, the index is as a keeper that is gone left it, and sessions may
    /// have changed since).
    fn keeper_has_looked(&self, engine: &Engine) -> bool {
        let stamp = engine.stamp();
        let writer = stamp.as_ref().and_then(|s| s.writer.as_deref());
        writer.is_some() && writer == storage::holder(&engine.storage).as_deref()
    }

    /// For a process reading the index another keeps: waits, up to `limit`, until
    /// the keeper has looked at the sessions since it took the index (right after a
    /// mount it has not yet); an answer until then says it may be partial.
    pub fn settle(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let engine = self.engine();
            if engine.storage.writable() || self.keeper_has_looked(&engine) {
                return;
            }
            if Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
            if matches!(engine.storage.place, storage::Place::Absent)
                && let Some(root) = &self.store_root
            {
                // Its first commit makes it: opened then.
                let s = storage::open(root, &self.fields, false);
                if matches!(s.place, storage::Place::Disk { .. })
                    && let Ok(e) = Engine::new(self.fields.clone(), s)
                {
                    *self.engine.write().unwrap() = Arc::new(e);
                }
            } else {
                // A reload when meta.json changed.
                engine.searcher();
            }
        }
    }

    /// How far the index is, if it is not complete (or may not be).
    pub fn building(&self) -> Option<Building> {
        let engine = self.engine();
        let p = if engine.storage.writable() {
            // This process keeps the index: its own progress, none before it looked
            // at the sessions.
            self.progress.lock().unwrap().unwrap_or_default()
        } else {
            match engine.stamp() {
                Some(s) if self.keeper_has_looked(&engine) => Progress {
                    complete: s.complete,
                    sessions: s.sessions,
                    indexed: s.indexed,
                },
                // Nothing committed yet, or not since the keeper took the index.
                _ => Progress::default(),
            }
        };
        (!p.complete).then_some(Building {
            indexed: p.indexed,
            sessions: p.sessions,
        })
    }

    /// Answers `request`.
    pub fn answer(&self, request: &Request) -> Result<Answer> {
        let engine = self.engine();
        let filters = Filters {
            agent: request.agent.map(|a| a.name().to_string()),
            cwd: request.cwd.clone(),
            since_ms: request.since_ms,
            sources: Some(
                self.sources()
                    .iter()
                    .filter(|s| {
                        request.host.as_deref().is_none_or(|h| {
                            s.source.host().unwrap_or(crate::host::this_host()) == h
                        })
                    })
                    .map(|s| s.src)
                    .collect(),
            ),
        };
        let found = engine.search(&request.query, &filters, request.limit)?;
        let hits = found
            .into_iter()
            .map(|f| {
                let ns_shown = crate::store::naming::mount_name(&f.session.namespace);
                Hit {
                    path: format!("{ns_shown}/{}", f.session.dir),
                    namespace: ns_shown,
                    store_namespace: f.session.namespace.clone(),
                    id: f.session.id.clone(),
                    agent: f.session.agent.clone(),
                    host: f
                        .session
                        .host
                        .clone()
                        .unwrap_or_else(|| crate::host::this_host().to_string()),
                    cwd: f.session.cwd.clone(),
                    dir: f.session.dir.clone(),
                    title: f.session.title.clone(),
                    preview: f.session.preview.clone(),
                    updated_at: f.session.updated_at.clone(),
                    role: f.message.role.clone(),
                    timestamp: f.message.timestamp.clone(),
                    entry: f.message.entry.clone(),
                    in_conversation: f.message.in_conversation,
                    snippet: snippet::snippet(&f.text, &request.query),
                    score: f.score,
                    kept: f.session.kept.then_some(true),
                    source_deleted: f.session.kept.then_some(f.session.source_deleted),
                    parent: f.session.parent.clone(),
                }
            })
            .collect();
        Ok(Answer {
            hits,
            building: self.building(),
        })
    }

    /// Since when the index's answers are what they are (the time of the commit they
    /// come from, as this process saw it, or of the last change of the sources
    /// searched): the time of `search/`'s folders and files.
    pub fn changed_at(&self) -> std::time::SystemTime {
        self.sources();
        let sources = *self.refs_changed.lock().unwrap();
        self.engine().changed_at().max(sources)
    }

    /// A mount's query: the folder name `text` as a query with the default limit. The
    /// same question within a second, with no change to the index, gets the same
    /// answer (one `ls -l` asks several times).
    pub fn answer_text(&self, text: &str) -> Result<Arc<Answer>> {
        let generation = self.engine().generation();
        if let Some((g, at, a)) = self.memo.lock().unwrap().get(text)
            && *g == generation
            && at.elapsed() < MEMO
        {
            return Ok(a.clone());
        }
        let request = Request::parse(text)?;
        let answer = Arc::new(self.answer(&request)?);
        let mut memo = self.memo.lock().unwrap();
        memo.retain(|_, (_, at, _)| at.elapsed() < MEMO);
        if memo.len() < 256 {
            memo.insert(
                text.to_string(),
                (generation, Instant::now(), answer.clone()),
            );
        }
        Ok(answer)
    }

    /// A session was just made (through the root `ctl`): the indexer looks at every
    /// session now, not at its next sweep.
    pub fn sweep_soon(&self) {
        let mut p = self.pending.lock().unwrap();
        if !p.sweep {
            p.sweep = true;
            self.wake.notify_one();
        }
    }

    /// Session `ns/dir` was just appended to (through `ctl`): index it soon.
    pub fn touched(&self, ns: &str, dir: &str) {
        let mut p = self.pending.lock().unwrap();
        // Called on every append: a session already pending costs no allocation, and
        // the indexer is woken only by the first touch since it last looked (it then
        // knows when to look again). A wake-up per append was a context switch per
        // append on the indexer's core.
        if p.touched.iter().any(|(n, d)| n == ns && d == dir) {
            return;
        }
        let first = p.touched.is_empty();
        p.touched.insert((ns.to_string(), dir.to_string()));
        if first {
            self.wake.notify_one();
        }
    }

    /// Brings the index up to date with every session of the sources (a one-shot
    /// command, before it searches). `report` hears of a long build now and then.
    pub fn update(&self, report: &mut dyn FnMut(Building)) -> Result<()> {
        let engine = self.engine();
        if !engine.storage.writable() {
            return Ok(());
        }
        let mut known = engine.known()?;
        let complaints = Complaints::default();
        self.full_pass(&engine, &mut known, &complaints, report, false)?;
        engine.release_writer();
        Ok(())
    }

    /// One pass over every session: index what changed, drop what is gone, commit
    /// now and then (and at the end, marking the index complete). A huge session is
    /// indexed in slices, one per commit. Asked to stop, the workers stop at their
    /// next message, and what they did is committed.
    fn full_pass(
        &self,
        engine: &Engine,
        known: &mut HashMap<u64, Known>,
        complaints: &Complaints,
        report: &mut dyn FnMut(Building),
        touched_too: bool,
    ) -> Result<()> {
        let first = !self.settled.load(Ordering::Relaxed);
        let started = Instant::now();
        // What a look costs is the processor time it takes (a look waiting for the
        // processor on a busy machine costs nothing meanwhile).
        let scan_started = thread_cpu_time();
        // One list of sources for the whole pass (positions in it name them).
        let sources = self.sources();
        let dropped = self.dropped.lock().unwrap().clone();
        let (live, failed) = sync::scan(&sources);
        let scan_cost = thread_cpu_time().saturating_sub(scan_started);
        log::debug!(
            "search: looked at {} sessions in {:?} ({scan_cost:?} of processor)",
            live.len(),
            started.elapsed()
        );
        if self.bg.should_stop() {
            return Ok(());
        }
        let (mut todo, gone) = sync::changes(&sources, &dropped, &live, &failed, known, first);
        if !first {
            // Sessions being appended to through `ctl` are the touched path's: a sweep
            // during a burst of appends would index them twice (and commit twice).
            let p = self.pending.lock().unwrap();
            if !p.touched.is_empty() {
                todo.retain(|l| {
                    !(sources[l.source].source.writable()
                        && p.touched.contains(&(l.ns.clone(), l.dir.clone())))
                });
            }
        }
        if todo.is_empty() && gone.is_empty() {
            // What looking costs when nothing changed spaces the sweeps (a look that
            // found changes also re-read them in the sources: work done anyway, which
            // must not put the next look, and the next change found, off).
            *self.scan_cost.lock().unwrap() = scan_cost;
            if !first {
                return Ok(());
            }
        }
        let partial: Vec<u64> = todo
            .iter()
            .filter_map(|l| known.get(&l.sid).filter(|k| sync::is_partial(k)))
            .map(|k| k.count)
            .collect();
        if !partial.is_empty() {
            log::info!(
                "search: {} sessions indexed in part go on from where they stopped \
                 (message {})",
                partial.len(),
                partial
                    .iter()
                    .take(10)
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut total = live.len() as u64;
        let mut progress = Progress {
            complete: todo.is_empty(),
            sessions: total,
            indexed: total - todo.len() as u64,
        };
        // A daemon's big pass (its first, or many changed sessions) yields to the
        // mount: its reading threads, and the writer made for it (Tantivy's threads
        // inherit it), are idle work (`Class::Idle`), and pause while the mount serves
        // someone; small updates stay on the indexer's own thread (`Class::Fresh`),
        // to be fresh. Nothing a request waits for runs on them: a query reads the
        // last commit, and the first commit (what a search right after a mount waits
        // for) is made on the indexer's thread before they start.
        let background = self.yields && (first || todo.len() > 16);
        engine.with_writer(|w| {
            for sid in &gone {
                sync::remove(engine, w, *sid);
                known.remove(sid);
            }
            Ok(())
        })?;
        if first || background || todo.is_empty() {
            // Said at once, to this process's answers and (committed) to every other
            // process's: what changed is being indexed, or nothing did.
            *self.progress.lock().unwrap() = Some(progress);
            engine.commit(&self.stamp_now(engine, progress))?;
        }
        if todo.is_empty() {
            self.settled.store(true, Ordering::Relaxed);
            return Ok(());
        }
        let mut effort = sync::Effort::default();
        if background {
            engine.release_writer();
            priority::run_in(Class::Idle, || engine.with_writer(|_| Ok(())))?;
        }
        let queue = Mutex::new(std::collections::VecDeque::from(todo));
        let mut every = COMMIT_FIRST;
        let mut rescans = 0;
        loop {
            // A batch: every worker takes sessions until the queue is empty or it is
            // time to commit (what is indexed becomes searchable, progress visible);
            // a session being read then stops at its next message, and the next batch
            // goes on with it.
            let batch = Instant::now();
            let bytes = std::sync::atomic::AtomicU64::new(0);
            let results = Mutex::new(Vec::new());
            let failure = Mutex::new(None);
            let over = || {
                self.bg.should_stop()
                    || batch.elapsed() >= every
                    || bytes.load(Ordering::Relaxed) >= COMMIT_BYTES
            };
            let pause = || {
                if background {
                    self.bg.pause();
                }
            };
            std::thread::scope(|scope| {
                let n: usize = std::env::var("FEN_FS_SEARCH_THREADS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(INDEX_THREADS);
                let workers: Vec<_> = (0..n)
                    .map(|_| {
                        scope.spawn(|| {
                            if background {
                                self.bg.enter(Class::Idle);
                            }
                            let mut mine = sync::Effort::default();
                            loop {
                                if over() || failure.lock().unwrap().is_some() {
                                    break;
                                }
                                pause();
                                let Some(l) = queue.lock().unwrap().pop_front() else {
                                    break;
                                };
                                let before = mine.bytes;
                                let src = &sources[l.source];
                                let r = engine.with_writer(|w| {
                                    sync::index_session(
                                        engine,
                                        w,
                                        src,
                                        &l,
                                        known.get(&l.sid),
                                        &sync::Manners {
                                            complaints,
                                            pause: &pause,
                                            stop: &over,
                                        },
                                        &mut mine,
                                    )
                                });
                                bytes.fetch_add(mine.bytes - before, Ordering::Relaxed);
                                match r {
                                    Ok(k) => {
                                        let done = k.is_none_or(|k| {
                                            !sync::is_partial(&k)
                                                && k.size == l.size
                                                && k.mtime == l.mtime
                                        });
                                        results.lock().unwrap().push((l.sid, k, done));
                                        if !done {
                                            // Stopped in it: first in the next batch.
                                            queue.lock().unwrap().push_front(l);
                                        }
                                    }
                                    Err(e) => *failure.lock().unwrap() = Some(e),
                                }
                            }
                            mine
                        })
                    })
                    .collect();
                for w in workers {
                    if let Ok(e) = w.join() {
                        effort.add(&e);
                    }
                }
            });
            if let Some(e) = failure.into_inner().unwrap() {
                return Err(e);
            }
            for (sid, k, done) in results.into_inner().unwrap() {
                if done {
                    progress.indexed += 1;
                }
                match k {
                    Some(k) => known.insert(sid, k),
                    None => known.remove(&sid),
                };
            }
            let mut empty = queue.lock().unwrap().is_empty();
            let stopping = self.bg.should_stop();
            if empty && !stopping && (first || background) && rescans < RESCANS {
                // A long pass says it is complete only as of a look at every session
                // after its work: what was appended or made meanwhile comes first.
                rescans += 1;
                if touched_too && let Err(e) = self.index_touched(engine, known, complaints) {
                    log::warn!("search: {}", e.reason);
                }
                let (live, failed) = sync::scan(&sources);
                let (more, gone) = sync::changes(&sources, &dropped, &live, &failed, known, false);
                engine.with_writer(|w| {
                    for sid in &gone {
                        sync::remove(engine, w, *sid);
                        known.remove(sid);
                    }
                    Ok(())
                })?;
                if !more.is_empty() {
                    total = live.len() as u64;
                    progress.sessions = total;
                    progress.indexed = total - more.len() as u64;
                    queue.lock().unwrap().extend(more);
                    empty = false;
                }
            }
            progress.complete = empty && !stopping;
            // Said once searchable: the commit waits for the index to take every
            // document, and a search until then sees the last commit.
            let stamp = self.stamp_now(engine, progress);
            if background {
                // Tantivy starts the writer's indexing threads anew at each commit,
                // from the committing thread, whose class they inherit: committed
                // from here, the rest of the pass would index at nice 10, ahead of
                // everything idle and beside the mount's requests.
                priority::run_in(Class::Idle, || engine.commit(&stamp))?;
            } else {
                engine.commit(&stamp)?;
            }
            engine.trim();
            // What the last batches wrote (and merged) is checked again as soon as it
            // may be: readers stop reading it whole during a long build too.
            engine.upkeep();
            if first || background {
                *self.progress.lock().unwrap() = Some(progress);
            }
            if empty || stopping {
                break;
            }
            every = COMMIT_EVERY;
            report(Building {
                indexed: progress.indexed,
                sessions: total,
            });
            // A long build lets `ctl` appends in between batches.
            if touched_too && let Err(e) = self.index_touched(engine, known, complaints) {
                log::warn!("search: {}", e.reason);
            }
        }
        *self.progress.lock().unwrap() = Some(progress);
        let stopped = self.bg.should_stop();
        if !stopped {
            self.settled.store(true, Ordering::Relaxed);
        }
        if background && !stopped {
            // The next writer is made at the normal priority (once its merges are
            // done: not when stopping, which must not wait for them).
            engine.release_writer();
        }
        if effort.sessions > 0 {
            log::info!(
                "search: {} of {total} sessions {} in {:?}: {} messages, {} MB of text; \
                 reading them {:?}, adding them {:?} (over {INDEX_THREADS} threads)",
                effort.sessions,
                if stopped {
                    "indexed (stopped: the next mount goes on with the rest)"
                } else {
                    "indexed"
                },
                started.elapsed(),
                effort.messages,
                effort.bytes >> 20,
                effort.reading,
                effort.adding,
            );
        }
        Ok(())
    }

    /// Reindexes the sessions touched through `ctl` since the last call.
    fn index_touched(
        &self,
        engine: &Engine,
        known: &mut HashMap<u64, Known>,
        complaints: &Complaints,
    ) -> Result<bool> {
        let touched = std::mem::take(&mut self.pending.lock().unwrap().touched);
        if touched.is_empty() {
            return Ok(false);
        }
        let mut effort = sync::Effort::default();
        let stop = || self.bg.should_stop();
        for (ns, dir) in touched {
            for (i, s) in self.sources().iter().enumerate() {
                let Ok(stat) = s.source.session_stat(&ns, &dir) else {
                    continue;
                };
                let live = Live {
                    source: i,
                    sid: sync::session_id(s.src, &ns, &dir),
                    ns: ns.clone(),
                    dir: dir.clone(),
                    size: stat.size,
                    mtime: stat
                        .mtime
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as i64),
                };
                let k = engine.with_writer(|w| {
                    sync::index_session(
                        engine,
                        w,
                        s,
                        &live,
                        known.get(&live.sid),
                        &sync::Manners {
                            complaints,
                            pause: &|| {},
                            stop: &stop,
                        },
                        &mut effort,
                    )
                })?;
                match k {
                    Some(k) => known.insert(live.sid, k),
                    None => known.remove(&live.sid),
                };
                break;
            }
            if self.bg.should_stop() {
                // The rest is found by the next mount's first pass (their stamps).
                break;
            }
        }
        Ok(true)
    }

    /// Starts the daemon's indexer thread: the first build, then changes as they
    /// come (`ctl` appends at once, other writers' within a sweep). It ends when
    /// its `Background` is stopped, with what it did committed.
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        // The writer's role is this daemon's before its mount is ready: a search run
        // right after the mount reads the index this daemon keeps, and does not build
        // it itself.
        if self.deferred.load(Ordering::Relaxed)
            && let Some(root) = &self.store_root
        {
            *self.held.lock().unwrap() = storage::hold(root);
        }
        let me = Arc::downgrade(self);
        self.bg.on_stop(move || {
            if let Some(me) = me.upgrade() {
                let _p = me.pending.lock().unwrap();
                me.wake.notify_all();
            }
        });
        let me = self.clone();
        // Following changes keeps answers fresh (appends found within a second):
        // below the mount's requests, never idle. A big pass's threads and its
        // writer's are idle (`full_pass`).
        self.bg.spawn("fen-search", Class::Fresh, move || {
            storage::private_files_on_this_thread();
            if let Err(e) = me.run() {
                log::error!("search indexer stopped: {}", e.reason);
            }
        })?;
        Ok(())
    }

    /// Waits until this process may write the index (another process may hold it).
    fn become_writer(&self) -> bool {
        loop {
            if self.engine().storage.writable() {
                return true;
            }
            if self.bg.should_stop() {
                return false;
            }
            if let Some(root) = &self.store_root
                && let Some(storage) = storage::take_over(root, &self.fields)
            {
                match Engine::new(self.fields.clone(), storage) {
                    Ok(e) => {
                        *self.engine.write().unwrap() = Arc::new(e);
                        self.say_notes();
                        return true;
                    }
                    Err(e) => log::warn!("search index: {}", e.reason),
                }
            }
            let p = self.pending.lock().unwrap();
            if self.bg.should_stop() {
                return false;
            }
            let _ = self.wake.wait_timeout(p, Duration::from_secs(1)).unwrap();
        }
    }

    fn run(&self) -> Result<()> {
        if self.deferred.swap(false, Ordering::Relaxed)
            && let Some(root) = &self.store_root
        {
            let held = self.held.lock().unwrap().take();
            let storage = match held {
                Some(held) => storage::open_held(&self.fields, held),
                None => storage::open(root, &self.fields, true),
            };
            let engine = Engine::new(self.fields.clone(), storage).unwrap_or_else(|e| {
                let s = storage::memory(&self.fields, e.reason);
                Engine::new(self.fields.clone(), s).expect("an index in memory opens")
            });
            *self.engine.write().unwrap() = Arc::new(engine);
            self.say_notes();
        }
        if !self.become_writer() {
            return Ok(());
        }
        let engine = self.engine();
        let mut known = engine.known()?;
        let complaints = Complaints::default();
        let started = Instant::now();
        self.full_pass(&engine, &mut known, &complaints, &mut |_| {}, true)?;
        if self.bg.should_stop() {
            // Committed as far as it got; merges are not waited for.
            return Ok(());
        }
        log::info!(
            "search index up to date in {:?} ({} sessions)",
            started.elapsed(),
            known.len()
        );
        let mut last_write = Instant::now();
        let mut sweep_at = Instant::now() + SWEEP;
        let mut touch_after = Instant::now();
        // When files a reader checks whole are old enough for the writer to check
        // them again (then readers trust them by their stamps): a wake-up of its own.
        let upkeep_due = |engine: &Engine| {
            engine
                .upkeep_at()
                .and_then(|at| at.duration_since(std::time::SystemTime::now()).ok())
                .map(|left| Instant::now() + left)
        };
        let mut upkeep_at = upkeep_due(&engine);
        loop {
            // Wait for touched sessions (no sooner than `touch_after`: a burst of
            // appends is indexed a few times a second, not once per append), the next
            // sweep, or the upkeep's time.
            let next = {
                let mut p = self.pending.lock().unwrap();
                loop {
                    if self.bg.should_stop() {
                        return Ok(());
                    }
                    let now = Instant::now();
                    if !p.touched.is_empty() && now >= touch_after {
                        break Next::Touched;
                    }
                    if now >= sweep_at || p.sweep {
                        p.sweep = false;
                        break Next::Sweep;
                    }
                    if upkeep_at.is_some_and(|at| now >= at) {
                        break Next::Upkeep;
                    }
                    let mut until = sweep_at - now;
                    if !p.touched.is_empty() {
                        until = until.min(touch_after - now);
                    }
                    if let Some(at) = upkeep_at {
                        until = until.min(at - now);
                    }
                    p = self.wake.wait_timeout(p, until).unwrap().0;
                }
            };
            if next == Next::Upkeep {
                engine.upkeep();
                upkeep_at = upkeep_due(&engine);
                continue;
            }
            let touched = next == Next::Touched;
            if touched {
                let t = Instant::now();
                let done = self
                    .index_touched(&engine, &mut known, &complaints)
                    .and_then(|wrote| {
                        if !wrote {
                            return Ok(());
                        }
                        let p = self.progress.lock().unwrap().unwrap_or_default();
                        engine.commit(&self.stamp_now(
                            &engine,
                            Progress {
                                // Stopped in the middle, the rest is left out.
                                complete: !self.bg.should_stop(),
                                ..p
                            },
                        ))
                    });
                if let Err(e) = done {
                    log::warn!("search: {}", e.reason);
                }
                // Indexing appends takes at most about a quarter of the time.
                touch_after = Instant::now() + (t.elapsed() * 3).clamp(TOUCH_MIN, TOUCH_MAX);
                last_write = Instant::now();
                // A merge the commits set off may have ended: its segment recorded.
                engine.upkeep();
                upkeep_at = upkeep_due(&engine);
                continue;
            }
            let before = engine.generation();
            self.full_pass(&engine, &mut known, &complaints, &mut |_| {}, false)?;
            let found = engine.generation() != before;
            if found {
                last_write = Instant::now();
            }
            // Sweeps cost at most a tenth of a core, but follow an agent that is
            // writing (a change just found) every `SWEEP`: its next line is found
            // within a second.
            sweep_at = Instant::now()
                + if found {
                    SWEEP
                } else {
                    SWEEP.max(*self.scan_cost.lock().unwrap() * 10)
                };
            engine.upkeep();
            if engine.has_writer() && last_write.elapsed() > WRITER_IDLE {
                engine.release_writer();
            }
            upkeep_at = upkeep_due(&engine);
        }
    }
}

/// What the indexer's loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Index the sessions appended to through `ctl`.
    Touched,
    /// Look at every session.
    Sweep,
    /// The writer's upkeep (`Engine::upkeep`).
    Upkeep,
}

/// The processor time the calling thread has used.
fn thread_cpu_time() -> Duration {
    // SAFETY: valid out-pointer.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: valid clock id and out-pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A query error for people (exit 2 on the command line, EINVAL in the mount).
pub fn is_usage_error(e: &Error) -> bool {
    e.errno == libc::EINVAL
}
