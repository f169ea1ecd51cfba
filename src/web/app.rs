//! What the handlers share: the history, and what is kept between requests so that a
//! page answers at once: the merged listing (kept `LISTING_FRESH`), each session's
//! tokens and cost (counted in the background: a page never waits for the usage
//! counter, it says what is not counted yet), Syncthing's answer (kept
//! `SYNCTHING_FRESH`), and where each open Session page's reading got to
//! (`pages::session::Readings`).

use super::guard::Guard;
use super::pages::session::Readings;
use crate::agent::Agent;
use crate::background::Class;
use crate::history::History;
use crate::sync::setup::PeerStatus;
use crate::usage::report::{SessionCost, SessionKey};
use crate::views::listing::Listing;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A listing this recent is served again (a page of 10,000 sessions, paged, answers
/// from memory; a session made meanwhile shows at the next look after this).
const LISTING_FRESH: Duration = Duration::from_secs(2);
/// Per-session usage this recent is not counted again.
const USAGE_FRESH: Duration = Duration::from_secs(15);
const SYNCTHING_FRESH: Duration = Duration::from_secs(5);

/// What the usage counter had counted, per session (agent, host and id: an id alone
/// could name sessions of two agents, or of two machines).
pub struct SessionUsage {
    by_session: HashMap<SessionKey, SessionCost>,
}

impl SessionUsage {
    /// The session of `agent` recorded on `host` (`None`: this machine) with `id`.
    pub fn get(&self, agent: Agent, host: Option<&str>, id: &str) -> Option<SessionCost> {
        self.by_session
            .get(&SessionKey::new(agent, host, id))
            .copied()
    }

    /// A listed session's.
    pub fn of(&self, l: &Listing) -> Option<SessionCost> {
        self.get(l.agent, l.host.as_deref(), &l.id)
    }
}

#[derive(Default)]
struct UsageState {
    counted: Option<(Instant, Arc<SessionUsage>)>,
    counting: bool,
    /// The last count's failure, said on the pages.
    failed: Option<String>,
}

/// Syncthing's view of the peers, or why there is none.
pub type SyncthingState = std::result::Result<Vec<PeerStatus>, String>;

pub struct App {
    pub history: Arc<History>,
    pub guard: Guard,
    listing: Mutex<Option<(Instant, Arc<Vec<Listing>>)>>,
    /// One listing is made at a time (others wait for it rather than make their own).
    listing_made: Mutex<()>,
    usage: Arc<Mutex<UsageState>>,
    syncthing: Mutex<Option<(Instant, Arc<SyncthingState>)>>,
    pub readings: Readings,
    stopping: Arc<AtomicBool>,
}

impl App {
    pub fn new(history: Arc<History>, guard: Guard) -> App {
        App {
            history,
            guard,
            listing: Mutex::new(None),
            listing_made: Mutex::new(()),
            usage: Arc::new(Mutex::new(UsageState::default())),
            syncthing: Mutex::new(None),
            readings: Readings::default(),
            stopping: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Starts what the first pages need, in the background: the other agents' sources
    /// indexed and the listing made, the search index brought up to date, the usage
    /// counted.
    pub fn warm(self: &Arc<Self>) {
        // Awaited work (the first pages wait for it), through the history's worker
        // registry.
        let app = self.clone();
        let workers = self.history.workers();
        let started = workers.spawn("fen-web-warm", Class::Awaited, move || {
            app.history.foreign();
            let _ = app.listing();
            app.count_usage();
        });
        let history = self.history.clone();
        let indexing = workers.spawn("fen-web-index", Class::Awaited, move || {
            history.warm_index()
        });
        for e in [started, indexing].into_iter().filter_map(|r| r.err()) {
            log::warn!("{}", e.reason);
        }
    }

    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// Every session, newest first (made again when older than `LISTING_FRESH`).
    pub fn listing(&self) -> crate::error::Result<Arc<Vec<Listing>>> {
        if let Some(l) = self.fresh_listing() {
            return Ok(l);
        }
        let _one = self.listing_made.lock().unwrap();
        if let Some(l) = self.fresh_listing() {
            return Ok(l);
        }
        let l = Arc::new(self.history.list(None)?);
        *self.listing.lock().unwrap() = Some((Instant::now(), l.clone()));
        Ok(l)
    }

    fn fresh_listing(&self) -> Option<Arc<Vec<Listing>>> {
        self.listing
            .lock()
            .unwrap()
            .as_ref()
            .filter(|(at, _)| at.elapsed() < LISTING_FRESH)
            .map(|(_, l)| l.clone())
    }

    /// Each session's tokens and cost as last counted, without waiting (`None`:
    /// the first count is not done); starts a new count when this one is old.
    pub fn session_usage(self: &Arc<Self>) -> Option<Arc<SessionUsage>> {
        let (now, stale) = {
            let s = self.usage.lock().unwrap();
            let now = s.counted.as_ref().map(|(_, u)| u.clone());
            let stale = !s.counting
                && s.counted
                    .as_ref()
                    .is_none_or(|(at, _)| at.elapsed() > USAGE_FRESH);
            (now, stale)
        };
        if stale {
            // Not idle: a usage call may wait for the ledgers this count holds.
            let app = self.clone();
            let started =
                self.history
                    .workers()
                    .spawn("fen-web-usage", Class::Awaited, move || app.count_usage());
            if let Err(e) = started {
                log::warn!("{}", e.reason);
            }
        }
        now
    }

    /// Why the last count failed, if it did.
    pub fn usage_failure(&self) -> Option<String> {
        self.usage.lock().unwrap().failed.clone()
    }

    /// Counts the usage now (one count at a time: a second caller returns at once).
    fn count_usage(&self) {
        {
            let mut s = self.usage.lock().unwrap();
            if s.counting {
                return;
            }
            s.counting = true;
        }
        let counted = self.history.usage().map(|usage| {
            Arc::new(SessionUsage {
                by_session: crate::usage::report::by_session(&usage.entries()),
            })
        });
        let mut s = self.usage.lock().unwrap();
        s.counting = false;
        match counted {
            Ok(u) => {
                s.counted = Some((Instant::now(), u));
                s.failed = None;
            }
            Err(e) => s.failed = Some(e.reason),
        }
    }

    /// Syncthing's view of the peers (asked again after `SYNCTHING_FRESH`).
    pub fn syncthing(&self) -> Arc<SyncthingState> {
        if let Some((at, s)) = self.syncthing.lock().unwrap().as_ref()
            && at.elapsed() < SYNCTHING_FRESH
        {
            return s.clone();
        }
        let state = Arc::new(
            crate::sync::home::find(None)
                .and_then(crate::sync::rest::Client::new)
                .and_then(|c| crate::sync::setup::status(&c))
                .map_err(|e| e.reason),
        );
        *self.syncthing.lock().unwrap() = Some((Instant::now(), state.clone()));
        state
    }
}
