//! The background workers of a process that serves a store (a mount's daemon,
//! `fen-fs mcp`, `fen-fs web`), in one registry: which work runs beside the
//! requests, in which priority class (`background::Class`), all started through one
//! `Background` that stops them (docs/background.md).
//!
//! | worker | thread | class |
//! |---|---|---|
//! | the first index of each other agent's store, kept copies, a peer's copies | `fen-index-<agent>` | awaited: a listing waits for it |
//! | the search indexer | `fen-search` (a big pass's threads and writer: idle) | fresh |
//! | the keeper | `fen-keep` and its copying workers | idle |
//! | the usage counter | `fen-usage` | idle |
//! | the trimmer: memory workers freed, back to the system | `fen-trim` | fresh |
//! | the peers folder followed: peers come and go while mounted (§12) | `fen-peers` | fresh |
//! | one-off work a call waits for (the MCP server's index update) | its own name | awaited |
//!
//! Above every module whose work it starts (sources, search, keep, usage); the
//! primitive they all share (stop, yield, priority) is `background`, below them.

use crate::background::{Background, Class};
use crate::error::{Error, Result};
use crate::keep::KeepOptions;
use crate::search::Search;
use crate::sources::SessionSource;
use crate::sources::foreign_source::ForeignSource;
use crate::usage::Usage;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How every process that runs the workers (the daemon, `fen-fs web`, `fen-fs mcp`)
/// sets up malloc, before its first thread starts.
///
/// Two arenas, not glibc's eight per core: the search index's build spreads its
/// allocations over several threads, and each thread's arena kept what it freed (the
/// daemon's peak RSS over a 2.5 GB build: 254 MB with the default, 190 MB with two;
/// the MCP server's idle RSS after that build: 56 MB, 30 MB with two; the builds took
/// as long).
///
/// And large blocks (1 MiB and more) always mapped on their own, given back when
/// freed: glibc otherwise raises that threshold to the size of the largest block
/// freed (up to 32 MiB), and the first pass's transient buffers (a copy's chunk and
/// zstd context, a reader's feed, a batch of documents, a usage count's entries) then
/// stayed in the arenas (peak RSS over a first pass of 10,000 pi sessions, debug
/// build: 264 MB before, 197 MB with this; `fen-fs web`'s, bench row W5, three runs
/// alternated: 138-155 MB before, 132-141 MB with this).
pub fn limit_malloc_arenas() {
    // SAFETY: glibc calls, made before the process starts its threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// The registry: one per process.
#[derive(Default)]
pub struct Workers {
    bg: Background,
    /// What was started, in order: (thread name, class).
    started: Mutex<Vec<(String, Class)>>,
}

impl Workers {
    pub fn new() -> Workers {
        Workers::default()
    }

    /// The stop signal and the mount's activity every worker shares (the tree marks
    /// its requests on it; a search opened for a daemon takes it).
    pub fn background(&self) -> &Background {
        &self.bg
    }

    /// Runs `work` on a thread named `name` in `class`, counted until it returns.
    pub fn spawn(
        &self,
        name: &str,
        class: Class,
        work: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        self.bg
            .spawn(name, class, work)
            .map_err(|e| Error::io(format!("starting the {name} thread"), &e))?;
        self.started.lock().unwrap().push((name.to_string(), class));
        Ok(())
    }

    /// Builds the first index of `source` (another agent's store, its kept copies, a
    /// peer's copies) in the background: awaited work, a listing waits for it. It
    /// stops at the next file when asked (the next mount reads the rest).
    pub fn first_index(&self, source: &Arc<ForeignSource>, name: &str) -> Result<()> {
        let (source, bg) = (source.clone(), self.bg.clone());
        self.spawn(name, Class::Awaited, move || source.build_index_with(&bg))
    }

    /// `first_index` of each of `sources`, named `fen-index-<agent>`.
    pub fn first_indexes(&self, sources: &[Arc<ForeignSource>]) -> Result<()> {
        for s in sources {
            self.first_index(s, &format!("fen-index-{}", s.agent().name()))?;
        }
        Ok(())
    }

    /// Starts the search indexer of `search` (opened with this registry's
    /// `Background`): the first build, then changes as they come.
    pub fn search(&self, search: &Arc<Search>) -> Result<()> {
        search
            .start()
            .map_err(|e| Error::io("starting the search indexer", &e))?;
        self.started
            .lock()
            .unwrap()
            .push(("fen-search".into(), Class::Fresh));
        Ok(())
    }

    /// Starts the keeper of the store at `root` over `sources` (the agents' own, and
    /// those over this store's kept copies, whose records it shares): it waits for
    /// the first indexes, then keeps every session, then what changes. `status` hears
    /// its state (`fen-fs status`).
    pub fn keeper(
        &self,
        root: PathBuf,
        sources: Vec<Arc<ForeignSource>>,
        options: KeepOptions,
        status: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<()> {
        let bg = self.bg.clone();
        self.spawn("fen-keep", Class::Idle, move || {
            crate::keep::run(root, sources, options, &bg, &status);
        })
    }

    /// Counts every session's usage once (saved when done; later reads of `usage/`
    /// count only what changed). A read of `usage/` meanwhile takes the count over
    /// (it is awaited then), and this one stops at the next unit.
    pub fn usage(&self, usage: &Arc<Usage>) -> Result<()> {
        let (usage, bg) = (usage.clone(), self.bg.clone());
        self.spawn("fen-usage", Class::Idle, move || {
            let stop = || bg.should_stop();
            let pause = || {
                bg.trim_soon();
                bg.pause()
            };
            crate::usage::count_in_background(&usage, &stop, &pause);
        })
    }

    /// Gives the memory workers freed back to the system when they ask
    /// (`Background::trim_soon`): a trim holds malloc's locks, so it is made here, on
    /// a thread at nice 10, never by idle work.
    pub fn trimmer(&self) -> Result<()> {
        let bg = self.bg.clone();
        self.spawn("fen-trim", Class::Fresh, move || bg.run_trimmer())
    }

    /// The workers started so far: (thread name, class), in order.
    pub fn started(&self) -> Vec<(String, Class)> {
        self.started.lock().unwrap().clone()
    }

    /// Stops every worker at its next message boundary and waits for them at most
    /// `budget`; whether they all returned (what had not saved by then stays at its
    /// last save).
    pub fn stop_and_wait(&self, budget: Duration) -> bool {
        self.bg.stop_and_wait(budget)
    }
}
