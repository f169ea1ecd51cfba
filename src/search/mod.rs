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
pub mod hits;
pub mod query;
pub mod schema;
pub mod snippet;
pub mod storage;
pub mod sync;

use crate::error::{Error, Result};
use crate::sources::SessionSource;
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
/// and the progress visible to other processes)...
const COMMIT_EVERY: Duration = Duration::from_secs(5);
/// ...or after this much text: a commit waits for the index to take every document
/// sent, so this also bounds the documents waiting in its queue (their memory).
const COMMIT_BYTES: u64 = 32 << 20;
/// Sessions appended to through `ctl` are indexed at most this often...
const TOUCH_MIN: Duration = Duration::from_millis(200);
/// ...and at least this often while appends go on (they are found within a second).
const TOUCH_MAX: Duration = Duration::from_millis(600);
/// A big pass waits while the mount served a read within this long...
const BUSY: Duration = Duration::from_millis(150);
/// ...in steps of this long, for at most this much of every second.
const YIELD_STEP: Duration = Duration::from_millis(10);
const YIELD_SHARE: Duration = Duration::from_millis(500);
/// An idle writer is dropped after this long (its memory goes back).
const WRITER_IDLE: Duration = Duration::from_secs(10);
/// A mount's answers to one query are reused this long if the index did not change
/// meanwhile (a `ls -l` asks for the folder, its listing and `hits.jsonl`).
const MEMO: Duration = Duration::from_millis(1000);

/// A search's question.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: query::Query,
    pub agent: Option<crate::agent::Agent>,
    /// Absolute and normalized.
    pub cwd: Option<String>,
    pub since_ms: Option<i64>,
    pub limit: usize,
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
    stop: bool,
}

pub struct Search {
    store_root: Option<PathBuf>,
    fields: Fields,
    sources: Vec<SourceRef>,
    engine: RwLock<Arc<Engine>>,
    /// The writer's own progress (a reader takes the commit's stamp).
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
    /// A daemon's: big passes yield to the mount (lower priorities).
    yields: bool,
    /// The indexer thread (`start`), joined by `stop`.
    indexer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// A daemon's mount point (said in each commit).
    mount: Option<PathBuf>,
    /// When the mount last served a read (ms after `epoch`): a big pass waits while
    /// it is busy (the I/O scheduler may not honour the idle class).
    activity_ms: std::sync::atomic::AtomicU64,
    epoch: Instant,
    /// The second a big pass has been waiting in, and how long it waited.
    yielded: Mutex<(Instant, Duration)>,
}

impl Search {
    /// The index of the store at `store_root` (`None`: in memory only) over
    /// `sources`; `write`: take the writer's role if nobody has it.
    pub fn open(
        store_root: Option<&Path>,
        sources: Vec<Arc<dyn SessionSource>>,
        write: bool,
    ) -> Search {
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
        sources: Vec<Arc<dyn SessionSource>>,
    ) -> Search {
        let fields = Fields::new();
        let placeholder = storage::Storage {
            notes: Vec::new(),
            ..storage::memory(&fields, String::new())
        };
        let mut s = Search::with_storage(Some(store_root), sources, fields, placeholder);
        s.deferred.store(true, Ordering::Relaxed);
        s.yields = true;
        s.mount = Some(std::path::absolute(mount).unwrap_or_else(|_| mount.to_path_buf()));
        s
    }

    fn with_storage(
        store_root: Option<&Path>,
        sources: Vec<Arc<dyn SessionSource>>,
        fields: Fields,
        storage: storage::Storage,
    ) -> Search {
        let engine = Engine::new(fields.clone(), storage).unwrap_or_else(|e| {
            let s = storage::memory(&fields, e.reason);
            Engine::new(fields.clone(), s).expect("an index in memory opens")
        });
        Search {
            store_root: store_root.map(Path::to_path_buf),
            fields,
            sources: sources.into_iter().map(SourceRef::new).collect(),
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
            indexer: Mutex::new(None),
            mount: None,
            activity_ms: std::sync::atomic::AtomicU64::new(0),
            epoch: Instant::now(),
            yielded: Mutex::new((Instant::now(), Duration::ZERO)),
        }
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
    /// answers leave their sessions out until a writer indexes them).
    pub fn uncovered(&self) -> Vec<String> {
        if self.writable() {
            return Vec::new();
        }
        let covered = self.engine().stamp().map(|s| s.sources).unwrap_or_default();
        self.sources
            .iter()
            .filter(|s| !covered.contains(&s.label))
            .map(|s| s.label.clone())
            .collect()
    }

    fn stamp_now(&self, p: Progress) -> storage::Stamp {
        storage::Stamp {
            format: storage::FORMAT.into(),
            version: schema::FORMAT_VERSION,
            complete: p.complete,
            sessions: p.sessions,
            indexed: p.indexed,
            sources: self.sources.iter().map(|s| s.label.clone()).collect(),
            mount: self.mount.clone(),
        }
    }

    /// Where the index's writer has the store mounted, as its last commit says (the
    /// caller checks that it still is).
    pub fn writer_mount(&self) -> Option<PathBuf> {
        self.engine().stamp().and_then(|s| s.mount)
    }

    /// How far the index is, if it is not complete.
    pub fn building(&self) -> Option<Building> {
        let p = match *self.progress.lock().unwrap() {
            Some(p) => p,
            None => {
                let stamp = self.engine().stamp();
                match stamp {
                    Some(s) => Progress {
                        complete: s.complete,
                        sessions: s.sessions,
                        indexed: s.indexed,
                    },
                    // Nothing committed yet: nothing indexed.
                    None => Progress::default(),
                }
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
            sources: Some(self.sources.iter().map(|s| s.src).collect()),
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
                }
            })
            .collect();
        Ok(Answer {
            hits,
            building: self.building(),
        })
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

    /// The mount is serving someone (an open or a read): a big pass lets it be.
    pub fn mount_busy(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.activity_ms.store(now, Ordering::Relaxed);
    }

    /// `let_the_mount_go_first`, for other background work of the daemon (keeping):
    /// it shares the same budget of waiting.
    pub fn yield_to_mount(&self) {
        self.let_the_mount_go_first();
    }

    /// Waits while the mount served someone in the last `BUSY`, but for at most half
    /// of every second: a busy mount slows a build down, never stops it.
    fn let_the_mount_go_first(&self) {
        let busy = || {
            let last = self.activity_ms.load(Ordering::Relaxed);
            let now = self.epoch.elapsed().as_millis() as u64;
            now.saturating_sub(last) < BUSY.as_millis() as u64
        };
        while busy() {
            {
                let mut y = self.yielded.lock().unwrap();
                if y.0.elapsed() >= Duration::from_secs(1) {
                    *y = (Instant::now(), Duration::ZERO);
                }
                if y.1 >= YIELD_SHARE {
                    return;
                }
                y.1 += YIELD_STEP;
            }
            std::thread::sleep(YIELD_STEP);
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

    /// Stops the background indexer (at unmount) and waits for it: what it indexed is
    /// committed, its writer's merges finish, and its files are left private.
    pub fn stop(&self) {
        self.pending.lock().unwrap().stop = true;
        self.wake.notify_all();
        if let Some(h) = self.indexer.lock().unwrap().take() {
            let _ = h.join();
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
    /// now and then (and at the end, marking the index complete).
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
        let scan_started = Instant::now();
        let (live, failed) = sync::scan(&self.sources);
        *self.scan_cost.lock().unwrap() = scan_started.elapsed();
        let (todo, gone) = sync::changes(&self.sources, &live, &failed, known, first);
        if todo.is_empty() && gone.is_empty() && !first {
            return Ok(());
        }
        let total = live.len() as u64;
        let mut progress = Progress {
            complete: todo.is_empty(),
            sessions: total,
            indexed: total - todo.len() as u64,
        };
        if first {
            *self.progress.lock().unwrap() = Some(progress);
        }
        engine.with_writer(|w| {
            for sid in &gone {
                sync::remove(engine, w, *sid);
                known.remove(sid);
            }
            Ok(())
        })?;
        let mut effort = sync::Effort::default();
        // A daemon's big pass (its first build, or many changed sessions) yields to
        // the mount: its threads, and the index's own (made here, they inherit it),
        // run at a lower priority; small updates keep the normal one, to be fresh.
        let background = self.yields && (first || todo.len() > 16);
        if background {
            engine.release_writer();
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    lower_priority();
                    engine.with_writer(|_| Ok(()))
                });
            });
        }
        let queue = Mutex::new(todo.into_iter());
        loop {
            // A batch: every worker takes sessions until the queue is empty or it is
            // time to commit (what is indexed becomes searchable, progress visible).
            let batch = Instant::now();
            let bytes = std::sync::atomic::AtomicU64::new(0);
            let results = Mutex::new(Vec::new());
            let failure = Mutex::new(None);
            std::thread::scope(|scope| {
                let n: usize = std::env::var("FEN_FS_SEARCH_THREADS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(INDEX_THREADS);
                let workers: Vec<_> = (0..n)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut mine = sync::Effort::default();
                            loop {
                                if batch.elapsed() >= COMMIT_EVERY
                                    || bytes.load(Ordering::Relaxed) >= COMMIT_BYTES
                                    || self.pending.lock().unwrap().stop
                                    || failure.lock().unwrap().is_some()
                                {
                                    break;
                                }
                                if background {
                                    self.let_the_mount_go_first();
                                }
                                let Some(l) = queue.lock().unwrap().next() else {
                                    break;
                                };
                                let before = mine.bytes;
                                let src = &self.sources[l.source];
                                let r = engine.with_writer(|w| {
                                    sync::index_session(
                                        engine,
                                        w,
                                        src,
                                        &l,
                                        known.get(&l.sid),
                                        &sync::Manners {
                                            complaints,
                                            pause: &|| {
                                                if background {
                                                    self.let_the_mount_go_first();
                                                }
                                            },
                                        },
                                        &mut mine,
                                    )
                                });
                                bytes.fetch_add(mine.bytes - before, Ordering::Relaxed);
                                match r {
                                    Ok(k) => results.lock().unwrap().push((l.sid, k)),
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
            for (sid, k) in results.into_inner().unwrap() {
                progress.indexed += 1;
                match k {
                    Some(k) => known.insert(sid, k),
                    None => known.remove(&sid),
                };
            }
            let empty = queue.lock().unwrap().len() == 0;
            let stopping = self.pending.lock().unwrap().stop;
            progress.complete = empty && !stopping;
            // Said once searchable: the commit waits for the index to take every
            // document, and a search until then sees the last commit.
            engine.commit(&self.stamp_now(progress))?;
            if first {
                *self.progress.lock().unwrap() = Some(progress);
            }
            if empty || stopping {
                break;
            }
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
        self.settled.store(true, Ordering::Relaxed);
        if background {
            // The next writer is made at the normal priority.
            engine.release_writer();
        }
        if effort.sessions > 0 {
            log::info!(
                "search: {} of {total} sessions indexed in {:?}: {} messages, {} MB of text; \
                 reading them {:?}, adding them {:?} (over {INDEX_THREADS} threads)",
                effort.sessions,
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
        for (ns, dir) in touched {
            for (i, s) in self.sources.iter().enumerate() {
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
        }
        Ok(true)
    }

    /// Starts the daemon's indexer thread: the first build, then changes as they
    /// come (`ctl` appends at once, other writers' within a sweep).
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        let me = self.clone();
        let h = std::thread::Builder::new()
            .name("fen-search".into())
            .spawn(move || {
                // Every indexing runs below the mount's requests: appends are found
                // within a second all the same (they take milliseconds), and the
                // indexer never takes a core the daemon's requests are waiting for.
                // (The writer's threads, made from here, inherit it.)
                lower_cpu_priority();
                if let Err(e) = me.run() {
                    log::error!("search indexer stopped: {}", e.reason);
                }
            })?;
        *self.indexer.lock().unwrap() = Some(h);
        Ok(())
    }

    /// Waits until this process may write the index (another process may hold it).
    fn become_writer(&self) -> bool {
        loop {
            if self.engine().storage.writable() {
                return true;
            }
            if self.pending.lock().unwrap().stop {
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
            let _ = self.wake.wait_timeout(p, Duration::from_secs(1)).unwrap();
        }
    }

    fn run(&self) -> Result<()> {
        if self.deferred.swap(false, Ordering::Relaxed)
            && let Some(root) = &self.store_root
        {
            let storage = storage::open(root, &self.fields, true);
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
        log::info!(
            "search index up to date in {:?} ({} sessions)",
            started.elapsed(),
            known.len()
        );
        let mut last_write = Instant::now();
        let mut sweep_at = Instant::now() + SWEEP;
        let mut touch_after = Instant::now();
        'serve: loop {
            // Wait for touched sessions (no sooner than `touch_after`: a burst of
            // appends is indexed a few times a second, not once per append) or the
            // next sweep.
            let touched = {
                let mut p = self.pending.lock().unwrap();
                loop {
                    if p.stop {
                        break 'serve;
                    }
                    let now = Instant::now();
                    if !p.touched.is_empty() && now >= touch_after {
                        break true;
                    }
                    if now >= sweep_at {
                        break false;
                    }
                    let mut until = sweep_at - now;
                    if !p.touched.is_empty() {
                        until = until.min(touch_after - now);
                    }
                    p = self.wake.wait_timeout(p, until).unwrap().0;
                }
            };
            if touched {
                let t = Instant::now();
                let done = self
                    .index_touched(&engine, &mut known, &complaints)
                    .and_then(|wrote| {
                        if !wrote {
                            return Ok(());
                        }
                        let p = self.progress.lock().unwrap().unwrap_or_default();
                        engine.commit(&self.stamp_now(Progress {
                            complete: true,
                            ..p
                        }))
                    });
                if let Err(e) = done {
                    log::warn!("search: {}", e.reason);
                }
                // Indexing appends takes at most about a quarter of the time.
                touch_after = Instant::now() + (t.elapsed() * 3).clamp(TOUCH_MIN, TOUCH_MAX);
                last_write = Instant::now();
                continue;
            }
            let before = engine.generation();
            self.full_pass(&engine, &mut known, &complaints, &mut |_| {}, false)?;
            if engine.generation() != before {
                last_write = Instant::now();
            }
            sweep_at = Instant::now() + SWEEP.max(*self.scan_cost.lock().unwrap() * 10);
            engine.upkeep();
            if engine.has_writer() && last_write.elapsed() > WRITER_IDLE {
                engine.release_writer();
            }
        }
        engine.release_writer();
        Ok(())
    }
}

/// The calling thread (and the threads it starts) at a lower CPU priority.
fn lower_cpu_priority() {
    // SAFETY: plain syscalls on the calling thread.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// A big pass yields to everything else: a lower CPU priority for the calling thread
/// (and the threads it starts, which inherit it) and the idle I/O class.
fn lower_priority() {
    // SAFETY: plain syscalls on the calling thread.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
        // IOPRIO_CLASS_IDLE (3) << 13, for this thread (IOPRIO_WHO_PROCESS = 1).
        libc::syscall(libc::SYS_ioprio_set, 1, tid, 3 << 13);
    }
}

/// A query error for people (exit 2 on the command line, EINVAL in the mount).
pub fn is_usage_error(e: &Error) -> bool {
    e.errno == libc::EINVAL
}
