//! The history every server reads (`fen-fs mcp`'s tools, `fen-fs web`'s pages), for
//! the life of the server: fen's store, the other agents'
//! sources (made and indexed by the first call that needs them, then kept current by
//! inotify), other machines' stores (§12), the search index and the usage ledgers.
//! The library, not the mount: it works the same with or without one. The sources
//! are gathered by `sources::all` (`every`, `others`, `peer_sources`), as the
//! commands gather them.
//!
//! The search index is shared with the mount and the CLI (SPEC §8): one process
//! writes it. A mount's daemon keeps it current and the server only reads it; with no
//! mount, the server brings it up to date at each search (as `fen-fs search` does),
//! in the background so that a call waits at most `UPDATE_WAIT` (a first build of a
//! large history answers from what is indexed so far, and says how far it is). The
//! index stays open while calls come, and is closed `KEEP` after the last one: an idle
//! server holds neither the index's memory nor its writer lock (a mount started later
//! takes the writer's role at once). The usage counts (§13) are kept the same way:
//! loaded at the first `usage` call, brought up to date at each (a `stat` per file,
//! the new bytes of grown ones), saved to the ledgers `fen-fs usage` keeps, dropped
//! `KEEP` after the last call.

use crate::background::Class;
use crate::error::Result;
use crate::resume::find::Found;
use crate::search::hits::Answer;
use crate::search::{Request, Search};
use crate::sources::foreign_source::ForeignSource;
use crate::sources::peers::PeerOptions;
use crate::sources::{ForeignOptions, SessionSource};
use crate::store::Store;
use crate::usage::Usage;
use crate::views::listing::Listing;
use crate::workers::Workers;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a search waits for the index to be brought up to date.
const UPDATE_WAIT: Duration = Duration::from_secs(10);
/// A search that does not wait starts an update at most this often.
const UPDATE_EVERY: Duration = Duration::from_secs(1);
/// The index is closed this long after the last search.
const KEEP: Duration = Duration::from_secs(10);
/// At exit, how long an update still running has to stop and commit.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// The idle index and usage counts are looked at this often (to close them).
const LOOK_EVERY: Duration = Duration::from_secs(5);

pub struct History {
    store: Arc<Store>,
    foreign_options: ForeignOptions,
    foreign: OnceLock<Vec<Arc<ForeignSource>>>,
    /// Set once the other agents' sources are indexed.
    foreign_indexed: Arc<OnceLock<()>>,
    /// Other machines' stores (§12), read-only: `sources::all::peer_sources`.
    peers: Vec<Arc<dyn SessionSource>>,
    index: Arc<Mutex<Option<OpenIndex>>>,
    usage: Arc<Mutex<Option<OpenUsage>>>,
    /// Set while an update of the index runs.
    updating: Arc<(Mutex<bool>, Condvar)>,
    /// When the last update of the index ended.
    updated_at: Arc<Mutex<Option<Instant>>>,
    /// The server's background work (`workers`): the index's updates, and closing
    /// what is idle; stopped at exit.
    workers: Workers,
    /// `--store`, `--source`, `--no-detect`, `--peers` and `--map` as the server was
    /// started with, for the commands it prints (`fen-fs resume ... --in AGENT`).
    pub store_args: Vec<String>,
}

struct OpenUsage {
    usage: Arc<Usage>,
    last_use: Instant,
}

struct OpenIndex {
    search: Arc<Search>,
    last_use: Instant,
    /// Its notes were said (once per opening).
    said: bool,
}

/// A search's answer, with what the agent should know about it (but the index
/// being built: `answer.building`).
pub struct SearchAnswer {
    pub answer: Answer,
    pub notes: Vec<String>,
}

impl History {
    /// The history of `store`, the other agents' folders of `foreign_options` (made at
    /// first use) and the other machines' stores of `peers` (made now: a bad path
    /// map is an error before the server starts; a peer added later shows after a
    /// restart, as in a mount).
    pub fn new(
        store: Store,
        foreign_options: ForeignOptions,
        peers: &PeerOptions,
        store_args: Vec<String>,
    ) -> Result<History> {
        let peer_sources = crate::sources::all::peer_sources(peers, &store)?;
        Ok(History {
            store: Arc::new(store),
            foreign_options,
            foreign: OnceLock::new(),
            foreign_indexed: Arc::new(OnceLock::new()),
            peers: peer_sources,
            index: Arc::new(Mutex::new(None)),
            usage: Arc::new(Mutex::new(None)),
            updating: Arc::new((Mutex::new(false), Condvar::new())),
            updated_at: Arc::new(Mutex::new(None)),
            workers: Workers::new(),
            store_args,
        })
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The process's background workers (`workers.rs`): what a front end (the web
    /// app) runs beside its requests goes through them too, and `stop` stops it.
    pub fn workers(&self) -> &Workers {
        &self.workers
    }

    /// The other agents' sources, indexed (the first call waits for that: their
    /// persisted index when it is current, else a reading of every session file).
    pub fn foreign(&self) -> &[Arc<ForeignSource>] {
        let sources = self.foreign_sources();
        self.foreign_indexed
            .get_or_init(|| crate::sources::build_indexes(sources));
        sources
    }

    /// The other agents' sources, made but perhaps not indexed yet (enough to name
    /// them to the search index).
    fn foreign_sources(&self) -> &[Arc<ForeignSource>] {
        self.foreign.get_or_init(|| {
            crate::sources::foreign_sources(&self.foreign_options, &self.store.root, true)
        })
    }

    /// Every source: fen's store, every other agent's (not waiting for their
    /// index), every other machine's (gathered by `sources::all`, as the commands
    /// gather them).
    fn sources(&self) -> Vec<Arc<dyn SessionSource>> {
        crate::sources::all::every(&self.store, self.foreign_sources(), &self.peers)
    }

    /// Every session newest first, or those of `cwd`.
    pub fn list(&self, cwd: Option<&str>) -> Result<Vec<Listing>> {
        let others = crate::sources::all::others(self.foreign(), &self.peers);
        crate::sources::all::list_among(&self.store, &others, cwd)
    }

    /// The session `spec` names: an id, a unique prefix of one, a folder name or a
    /// session file's path.
    pub fn find(&self, spec: &str) -> Result<Found> {
        crate::resume::find::find_among(&self.store, self.foreign(), &self.peers, spec)
    }

    /// The usage of every source, brought up to date now (SPEC §13; the numbers of
    /// `fen-fs usage`), and the ledgers saved.
    pub fn usage(&self) -> Result<Arc<Usage>> {
        let usage = {
            let mut slot = self.usage.lock().unwrap();
            match slot.as_mut() {
                Some(open) => {
                    open.last_use = Instant::now();
                    open.usage.clone()
                }
                None => {
                    // Where `fen-fs usage` keeps them, never made: the server creates
                    // nothing (without a store they are kept in memory).
                    let cache = crate::usage::existing_ledger_root(&self.store.root);
                    let usage = Arc::new(Usage::new(
                        self.sources(),
                        cache.as_deref(),
                        crate::usage::prices::Prices::builtin(),
                    ));
                    *slot = Some(OpenUsage {
                        usage: usage.clone(),
                        last_use: Instant::now(),
                    });
                    // Counts kept nowhere else are this process's only copy: kept.
                    if cache.is_some() {
                        self.drop_usage_when_idle();
                    }
                    usage
                }
            }
        };
        usage.refresh_all()?;
        usage.persist();
        if let Some(open) = self.usage.lock().unwrap().as_mut() {
            open.last_use = Instant::now();
        }
        Ok(usage)
    }

    /// Drops the usage counts `KEEP` after their last use (saved already: the next
    /// call loads them again).
    fn drop_usage_when_idle(&self) {
        let (usage, bg) = (self.usage.clone(), self.workers.background().clone());
        // Not idle: its trim holds malloc's locks, which a call's thread may wait for.
        let closer = self
            .workers
            .spawn("fen-hist-usage", Class::Awaited, move || {
                while bg.sleep(LOOK_EVERY) {
                    let mut slot = usage.lock().unwrap();
                    let Some(open) = slot.as_ref() else { return };
                    // Not while a call counts with it (it holds another reference).
                    if open.last_use.elapsed() >= KEEP && Arc::strong_count(&open.usage) == 1 {
                        let dropped = slot.take();
                        drop(slot);
                        drop(dropped);
                        // SAFETY: glibc call with no preconditions.
                        unsafe { libc::malloc_trim(0) };
                        return;
                    }
                }
            });
        if let Err(e) = closer {
            log::warn!("{}", e.reason);
        }
    }

    /// Where the store is mounted by a live daemon, if it is.
    pub fn mount(&self) -> Option<PathBuf> {
        crate::mount_table::live_mount_of(&self.store.root)
    }

    /// Answers `request` from the search index, brought up to date first when no
    /// other process keeps it (waiting at most `UPDATE_WAIT`).
    pub fn search(&self, request: &Request) -> Result<SearchAnswer> {
        self.search_waiting(request, UPDATE_WAIT)
    }

    /// `search`, waiting at most `wait` for the update (the web page answers each
    /// key typed at once, from the index as it is, and asks again while
    /// `index_updating` says an update runs).
    pub fn search_waiting(&self, request: &Request, wait: Duration) -> Result<SearchAnswer> {
        let (search, said) = self.open_index();
        let mut notes = Vec::new();
        if !said {
            notes.extend(search.notes());
        }
        if search.writable() {
            self.update(&search, wait);
        } else {
            for label in search.uncovered() {
                notes.push(format!(
                    "{label} is not indexed by the process that keeps this store's index (a mount without that source): its sessions are left out"
                ));
            }
        }
        // An index being built is said by each server in its own words
        // (`answer.building`): an agent is told to ask again, the web page asks by
        // itself.
        let mut answer = search.answer(request)?;
        // Paths in the mount, when the store is mounted (as `fen-fs search` gives them).
        let mount = (!search.writable())
            .then(|| search.writer_mount())
            .flatten()
            .filter(|m| crate::mount_table::entry_at(m).is_some_and(|e| e.fen))
            .or_else(|| self.mount());
        if let Some(m) = &mount {
            for h in &mut answer.hits {
                h.path = m.join(&h.path).to_string_lossy().into_owned();
            }
        }
        if let Some(open) = self.index.lock().unwrap().as_mut() {
            open.last_use = Instant::now();
        }
        Ok(SearchAnswer { answer, notes })
    }

    /// The open index, opened now if it is not (and whether its notes were said).
    fn open_index(&self) -> (Arc<Search>, bool) {
        let mut slot = self.index.lock().unwrap();
        if let Some(open) = slot.as_mut() {
            open.last_use = Instant::now();
            return (open.search.clone(), std::mem::replace(&mut open.said, true));
        }
        let root = &self.store.root;
        let on_disk = root.is_dir();
        let search = Arc::new(Search::open(
            on_disk.then_some(root.as_path()),
            self.sources(),
            true,
        ));
        *slot = Some(OpenIndex {
            search: search.clone(),
            last_use: Instant::now(),
            said: true,
        });
        // An index in memory (no store folder) is this process's only copy: kept.
        if on_disk {
            self.close_when_idle();
        }
        (search, false)
    }

    /// Closes the index `KEEP` after its last use (not while an update runs).
    fn close_when_idle(&self) {
        let (index, updating) = (self.index.clone(), self.updating.clone());
        let bg = self.workers.background().clone();
        // Not idle: its trim holds malloc's locks, which a call's thread may wait for.
        let closer = self
            .workers
            .spawn("fen-hist-index", Class::Awaited, move || {
                while bg.sleep(LOOK_EVERY) {
                    let mut slot = index.lock().unwrap();
                    let Some(open) = slot.as_ref() else { return };
                    if open.last_use.elapsed() >= KEEP && !*updating.0.lock().unwrap() {
                        let closed = slot.take();
                        drop(slot);
                        drop(closed);
                        // What the index's maps and the writer freed goes back at once.
                        // SAFETY: glibc call with no preconditions.
                        unsafe { libc::malloc_trim(0) };
                        return;
                    }
                }
            });
        if let Err(e) = closer {
            log::warn!("{}", e.reason);
        }
    }

    /// Whether an update of the index runs now (a search answered meanwhile may miss
    /// what it has not reached yet).
    pub fn index_updating(&self) -> bool {
        *self.updating.0.lock().unwrap()
    }

    /// Opens the index and starts bringing it up to date, without waiting: a
    /// server's first search then finds it ready.
    pub fn warm_index(&self) {
        let (search, _) = self.open_index();
        if search.writable() {
            self.update(&search, Duration::ZERO);
        }
    }

    /// Brings the index up to date in the background; waits for it at most `wait`.
    /// A caller that does not wait (a key typed in the web page's box) starts no new
    /// update within `UPDATE_EVERY` of the last one's end: a word typed a letter at a
    /// time looks at the sessions once.
    fn update(&self, search: &Arc<Search>, wait: Duration) {
        let (lock, done) = &*self.updating;
        let mut busy = lock.lock().unwrap();
        let recent = wait.is_zero()
            && self
                .updated_at
                .lock()
                .unwrap()
                .is_some_and(|t| t.elapsed() < UPDATE_EVERY);
        if !*busy && !recent {
            *busy = true;
            let (search, updating, updated_at) = (
                search.clone(),
                self.updating.clone(),
                self.updated_at.clone(),
            );
            let (foreign, indexed) = (
                self.foreign_sources().to_vec(),
                self.foreign_indexed.clone(),
            );
            // Awaited work: a call may wait for it (one that does not, a key typed in
            // the web page's box, is followed by one that does; a first build of a
            // large history goes on after the call's wait, at the same priority).
            let started = self
                .workers
                .spawn("fen-hist-update", Class::Awaited, move || {
                    // The other agents' sources are indexed first, here: the call's wait
                    // covers it.
                    indexed.get_or_init(|| crate::sources::build_indexes(&foreign));
                    if let Err(e) = search.update(&mut |_| {}) {
                        log::warn!("search index: {}", e.reason);
                    }
                    *updated_at.lock().unwrap() = Some(Instant::now());
                    *updating.0.lock().unwrap() = false;
                    updating.1.notify_all();
                });
            if let Err(e) = started {
                log::warn!("{}", e.reason);
                *busy = false;
                return;
            }
        }
        let deadline = Instant::now() + wait;
        while *busy {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            busy = done.wait_timeout(busy, deadline - now).unwrap().0;
        }
    }
}

impl History {
    /// Before the server exits: an update still running stops at its next session
    /// and commits what it indexed; every worker is waited for at most `STOP_WAIT`.
    pub fn stop(&self) {
        let open = self
            .index
            .lock()
            .unwrap()
            .as_ref()
            .map(|o| o.search.clone());
        if let Some(search) = open {
            search.stop();
        }
        self.workers.stop_and_wait(STOP_WAIT);
    }
}
