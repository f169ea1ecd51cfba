//! Usage and cost (SPEC §13): what every source's model calls used, counted once per
//! response whichever files and sources repeat it, priced, and reported by day,
//! week, month, session, project, model, agent or host, for `fen-fs usage` and the
//! mount's `usage/` folder.
//!
//! - `ledger`: per source, what each unit recorded as of its stamp, kept in fen's
//!   cache folder so that a report reads only what changed since the last one;
//! - `prices`: LiteLLM's price table (a snapshot ships) and what a response costs;
//! - `report`: the grouping, filters and JSON rows; `table`: the terminal's table;
//!   `chart`: `daily.svg`; `zone`: which day a time is in.
//!
//! Nothing here reads an agent's format: sources yield neutral records
//! (`usage_record.rs`).

pub mod chart;
pub mod ledger;
pub mod prices;
pub mod report;
pub mod table;
pub mod zone;

use crate::agent::Agent;
use crate::error::Result;
use crate::sources::SessionSource;
use crate::sources::set::SourceSet;
use ledger::{Interner, NONE, Pass, SourceLedger};
use prices::Prices;
use report::{Entry, Query, Report};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Units read at once by a count someone waits for (at most; fewer cores, fewer).
const WORKERS: usize = 4;

/// The usage of a set of sources.
pub struct Usage {
    /// The sources counted; the set can change while a mount runs (§12: peers).
    sources: SourceSet,
    /// Where ledgers are kept between runs (`None`: not kept).
    cache_root: Option<PathBuf>,
    prices: Prices,
    /// This machine's name, for the records of its own sources: the name its
    /// sessions carry everywhere else (§12: `$FEN_FS_HOST`, else the host name).
    host: Arc<str>,
    state: Mutex<State>,
    /// Counts someone waits for, waiting or running.
    waiting: AtomicUsize,
}

#[derive(Default)]
struct State {
    /// One per source, in the sources' order (loaded on first use), as of the set's
    /// generation (`None`: not loaded yet).
    ledgers: Vec<(Arc<dyn SessionSource>, SourceLedger)>,
    loaded: Option<u64>,
    /// The counted responses as of `Usage::inputs`.
    entries: Option<(Inputs, Arc<Vec<Entry>>)>,
}

/// What the counted responses are made of: the set of sources and each ledger's
/// generation. Equal inputs, equal entries (and reports).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Inputs {
    set: u64,
    ledgers: Vec<u64>,
}

/// What a refresh did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Refreshed {
    /// Units read (the others were unchanged).
    pub units_read: u64,
    /// Every source was gone through (false: stopped).
    pub complete: bool,
}

/// Where ledgers are kept for the store at `store_root`: the store, else fen-fs's cache
/// folder (created, 0700); `None` when neither can be had.
pub fn ledger_root(store_root: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    if store_root.is_dir() {
        return Some(store_root.to_path_buf());
    }
    let dir = crate::store::layout::xdg_cache_dir();
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    made.is_ok().then_some(dir)
}

/// `ledger_root` for a process that must create nothing (the MCP server without a
/// store): the store, else fen-fs's cache folder if it exists; `None` keeps the counts
/// in memory.
pub fn existing_ledger_root(store_root: &Path) -> Option<PathBuf> {
    if store_root.is_dir() {
        return Some(store_root.to_path_buf());
    }
    let dir = crate::store::layout::xdg_cache_dir();
    std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir())
        .then_some(dir)
}

impl Usage {
    /// The usage of `sources`, its ledgers kept under `cache_root` (a store root; its
    /// `.fen-cache`) when given.
    pub fn new(sources: impl Into<SourceSet>, cache_root: Option<&Path>, prices: Prices) -> Usage {
        Usage {
            sources: sources.into(),
            cache_root: cache_root.map(Path::to_path_buf),
            prices,
            host: Arc::from(crate::host::this_host()),
            state: Mutex::new(State::default()),
            waiting: AtomicUsize::new(0),
        }
    }

    pub fn prices(&self) -> &Prices {
        &self.prices
    }

    fn cache_file(&self, s: &dyn SessionSource) -> Option<crate::store::layout::CacheFile> {
        let root = self.cache_root.as_ref()?;
        Some(crate::store::layout::usage_cache(
            root,
            s.agent().name(),
            s.root(),
        ))
    }

    /// Ledgers for the sources now: the ones kept for sources still in the set, the
    /// others loaded (a source taken out takes its ledger, saved, with it).
    fn load(&self, state: &mut State) {
        let generation = self.sources.generation();
        if state.loaded == Some(generation) {
            return;
        }
        let mut old = std::mem::take(&mut state.ledgers);
        for s in self.sources.current().iter() {
            let ledger = match old.iter().position(|(o, _)| Arc::ptr_eq(o, s)) {
                Some(i) => old.swap_remove(i).1,
                None => match self.cache_file(s.as_ref()) {
                    Some(c) => SourceLedger::load(s.agent(), s.root(), &c),
                    None => SourceLedger::new(s.agent(), s.root()),
                },
            };
            state.ledgers.push((s.clone(), ledger));
        }
        for (gone, mut ledger) in old {
            if let Some(c) = self.cache_file(gone.as_ref()) {
                ledger.save(&c);
            }
        }
        state.loaded = Some(generation);
    }

    /// What the counted responses are made of now (as of the last refresh).
    pub fn inputs(&self) -> Inputs {
        let mut state = self.state.lock().unwrap();
        self.load(&mut state);
        Inputs {
            set: state.loaded.unwrap_or_default(),
            ledgers: state.ledgers.iter().map(|(_, l)| l.generation).collect(),
        }
    }

    /// Brings every ledger up to date with its source: unchanged units cost a `stat`,
    /// grown ones their new bytes. `stop` ends it at the next unit or chunk (what was
    /// read is kept); `pause` is called between them (background work waits there).
    /// A count someone waits for (`refresh_all`) takes over from it: this one stops at
    /// the next unit or chunk, keeping what it read.
    pub fn refresh(&self, stop: &dyn Fn() -> bool, pause: &dyn Fn()) -> Result<Refreshed> {
        let yield_to_foreground = || stop() || self.waiting.load(Ordering::Relaxed) > 0;
        self.refresh_with(&yield_to_foreground, pause, 1)
    }

    /// `refresh` to the end, as fast as it goes: someone waits for it (`fen-fs usage`,
    /// an open of `usage/`), so units are read on several threads.
    pub fn refresh_all(&self) -> Result<Refreshed> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let done = self.refresh_with(&|| false, &|| {}, cores.clamp(1, WORKERS));
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        done
    }

    fn refresh_with(
        &self,
        stop: &dyn Fn() -> bool,
        pause: &dyn Fn(),
        workers: usize,
    ) -> Result<Refreshed> {
        let mut state = self.state.lock().unwrap();
        self.load(&mut state);
        let mut done = Refreshed {
            units_read: 0,
            complete: true,
        };
        for (source, ledger) in state.ledgers.iter_mut() {
            ledger.begin();
            let mut pass = Pass {
                ledger,
                stop,
                pause,
                stopped: false,
                read: 0,
                workers,
            };
            let result = source.usage(&mut pass);
            done.units_read += pass.read;
            if pass.stopped() {
                done.complete = false;
                break;
            }
            if let Err(e) = result {
                log::warn!("usage of {}: {}", source.agent().name(), e.reason);
                continue;
            }
            ledger.end_complete();
        }
        Ok(done)
    }

    /// Saves the ledgers that changed (best effort).
    pub fn persist(&self) {
        let mut state = self.state.lock().unwrap();
        for (source, ledger) in state.ledgers.iter_mut() {
            if let Some(c) = self.cache_file(source.as_ref()) {
                ledger.save(&c);
            }
        }
    }

    /// Every counted response, priced: one per key (the highest revision, then the
    /// most tokens, then the first read), records without a key as they are.
    pub fn entries(&self) -> Arc<Vec<Entry>> {
        let mut state = self.state.lock().unwrap();
        self.load(&mut state);
        let inputs = Inputs {
            set: state.loaded.unwrap_or_default(),
            ledgers: state.ledgers.iter().map(|(_, l)| l.generation).collect(),
        };
        if let Some((i, e)) = &state.entries
            && *i == inputs
        {
            return e.clone();
        }
        let mut strings = Interner::default();
        let mut out: Vec<Entry> = Vec::new();
        let mut rank: Vec<(u64, u64)> = Vec::new();
        let mut winner: HashMap<u64, usize> = HashMap::new();
        for (_, l) in &state.ledgers {
            for (unit, r) in l.records() {
                let s = |i: u32| if i == NONE { None } else { unit.string(i) };
                let this = (r.revision, r.tokens.total());
                let slot = match r.key.map(|k| (k, winner.get(&k).copied())) {
                    Some((_, Some(i))) if this > rank[i] => Some(i),
                    Some((_, Some(_))) => continue,
                    Some((k, None)) => {
                        winner.insert(k, out.len());
                        None
                    }
                    None => None,
                };
                let model = s(r.model).map(|m| {
                    if r.fast {
                        strings.get(Some(&format!("{m}-fast"))).expect("some")
                    } else {
                        strings.get(Some(m)).expect("some")
                    }
                });
                let cost = r
                    .recorded_cost
                    .or_else(|| self.prices.cost(s(r.model), &r.tokens, r.fast));
                let e = Entry {
                    time_ms: r.time_ms,
                    agent: l.agent,
                    session: strings.get(s(r.session)).unwrap_or_else(|| Arc::from("")),
                    cwd: strings.get(s(r.cwd)),
                    host: strings.get(s(r.host)).unwrap_or_else(|| self.host.clone()),
                    model,
                    tokens: r.tokens,
                    cost,
                };
                match slot {
                    Some(i) => {
                        out[i] = e;
                        rank[i] = this;
                    }
                    None => {
                        out.push(e);
                        rank.push(this);
                    }
                }
            }
        }
        let entries = Arc::new(out);
        state.entries = Some((inputs, entries.clone()));
        entries
    }

    /// The time of the newest response counted (milliseconds since the epoch).
    pub fn newest_response_ms(&self) -> Option<i64> {
        self.entries().iter().map(|e| e.time_ms).max()
    }

    pub fn report(&self, q: &Query) -> Report {
        report::build(&self.entries(), q)
    }

    /// `daily.svg` for the 30 days ending today in `zone`.
    pub fn daily_svg(&self, zone: zone::Zone) -> String {
        chart::daily_svg(&self.entries(), zone, zone.today())
    }

    /// Units with usage objects that could not be read: (agent, unit, how many, the
    /// first one's place and reason).
    pub fn malformed(&self) -> Vec<(Agent, String, u64, Option<String>)> {
        let mut state = self.state.lock().unwrap();
        self.load(&mut state);
        state
            .ledgers
            .iter()
            .flat_map(|(_, l)| {
                l.malformed()
                    .map(|(k, n, first)| (l.agent, k.to_string(), n, first.map(str::to_string)))
            })
            .collect()
    }
}

/// A daemon's first count after its mount (idle work: the caller's thread is in the
/// idle class), saved when done: `stop` ends it at the next unit or chunk (what it read is saved), `pause` is
/// where it waits while foreground requests are served.
pub fn count_in_background(usage: &Usage, stop: &dyn Fn() -> bool, pause: &dyn Fn()) {
    let started = std::time::Instant::now();
    match usage.refresh(stop, pause) {
        Ok(r) => log::info!(
            "usage: {} units read in {:?}{}",
            r.units_read,
            started.elapsed(),
            if r.complete { "" } else { " (stopped)" }
        ),
        Err(e) => log::warn!("usage: {}", e.reason),
    }
    usage.persist();
}
