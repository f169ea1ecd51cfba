//! fen's own store as a [`SessionSource`]: writable, read through `store` and
//! `views`, listed through the `catalog` (persisted listings, inotify-watched
//! namespaces).

pub mod catalog;
mod messages;
pub use messages::session_messages;
pub mod kind;
pub mod neutral;

use super::foreign::Agent;
use super::{NamespaceIndex, SessionSource, SessionStat};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::projection::Projection;
use crate::views::listing::Listing;
use crate::views::markdown::MarkdownCache;
use crate::views::{self, Snapshot, ViewKind};
use catalog::Catalog;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

pub struct FenSource {
    store: Arc<Store>,
    catalog: Catalog,
    /// `conversation.md` of recently read sessions, one rendering per file state.
    markdown: MarkdownCache,
}

fn mtime_of(meta: &std::fs::Metadata) -> SystemTime {
    meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)
}

impl FenSource {
    /// A source for a long-lived process (the daemon): namespaces are watched.
    pub fn watching(store: Arc<Store>) -> Self {
        FenSource {
            markdown: MarkdownCache::spilling_to(Some(&store.cache_root)),
            store,
            catalog: Catalog::watching(),
        }
    }

    /// A source for a one-shot command.
    pub fn new(store: Arc<Store>) -> Self {
        FenSource {
            markdown: MarkdownCache::spilling_to(Some(&store.cache_root)),
            store,
            catalog: Catalog::default(),
        }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    fn namespace_meta(&self, ns: &str) -> Result<std::fs::Metadata> {
        let path = crate::store::layout::namespace_path(&self.store.root, ns);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => Ok(m),
            _ => Err(Error::not_found(format!("no namespace {ns}"))),
        }
    }

    /// One stat decides existence, size and mtime.
    fn session_meta(&self, ns: &str, dir: &str) -> Result<std::fs::Metadata> {
        match std::fs::symlink_metadata(self.store.session_path(ns, dir)) {
            Ok(m) if m.is_file() => Ok(m),
            _ => Err(Error::not_found(format!("no session {ns}/{dir}"))),
        }
    }
}

impl SessionSource for FenSource {
    fn agent(&self) -> Agent {
        Agent::Fen
    }

    fn writable(&self) -> bool {
        true
    }

    fn root(&self) -> &Path {
        &self.store.root
    }

    fn root_mtime(&self) -> Option<SystemTime> {
        std::fs::metadata(&self.store.root)
            .ok()
            .map(|m| mtime_of(&m))
    }

    fn namespaces(&self) -> Result<Vec<String>> {
        self.store.namespaces()
    }

    fn has_namespace(&self, ns: &str) -> bool {
        self.store.has_sessions(ns)
    }

    fn namespace_mtime(&self, ns: &str) -> Option<SystemTime> {
        // The newest session update seen (by any access or append), else the folder's
        // mtime: O(1), so `ls -t` of the root sorts by activity without a stat per
        // session on every path walk.
        let folder = mtime_of(&self.namespace_meta(ns).ok()?);
        Some(
            self.catalog
                .last_update(ns)
                .map_or(folder, |t| t.max(folder)),
        )
    }

    fn session_dirs(&self, ns: &str) -> Result<Vec<String>> {
        self.store.session_dirs(ns)
    }

    fn session_stat(&self, ns: &str, dir: &str) -> Result<SessionStat> {
        let m = self.session_meta(ns, dir)?;
        let mtime = mtime_of(&m);
        self.catalog.observe(ns, mtime);
        Ok(SessionStat {
            size: m.len(),
            mtime,
        })
    }

    fn listings(&self, ns: &str) -> Result<Vec<Listing>> {
        self.catalog.namespace(&self.store, ns)
    }

    fn index(&self, ns: &str) -> Result<NamespaceIndex> {
        let r = self.catalog.rendered(&self.store, ns)?;
        Ok(NamespaceIndex {
            index_json: r.index_json,
            latest: r.latest,
        })
    }

    fn view_size(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<u64> {
        let session = || self.store.session_unchecked(ns, dir);
        match kind {
            ViewKind::Transcript => Ok(self.session_meta(ns, dir)?.len()),
            ViewKind::Conversation => {
                self.session_meta(ns, dir)?;
                let session = session();
                let idx = session.current()?;
                let table = idx.messages.read().unwrap();
                Ok(Projection::of(&idx).size(&table))
            }
            ViewKind::Markdown => Ok(self.markdown(ns, dir)?.len()),
            _ => self.snapshot(ns, dir, kind, writers).map(|s| s.size()),
        }
    }

    fn snapshot(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<Snapshot> {
        if kind == ViewKind::Markdown {
            return self.markdown(ns, dir)?.snapshot();
        }
        let session = self.store.session(ns, dir)?;
        views::snapshot(&session, kind, writers)
    }

    fn appended(&self, ns: &str) {
        self.catalog.observe(ns, SystemTime::now());
    }

    fn trash(&self, ns: &str, dir: &str) -> Result<()> {
        self.store.trash_session(ns, dir).map(|_| ())
    }

    fn messages(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
    ) -> Result<crate::neutral::SessionMessages> {
        let read = self.neutral_messages(ns, dir, history);
        self.store.release_if_idle(ns, dir);
        read
    }

    fn each_message(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
        each: &mut dyn FnMut(&crate::neutral::SessionFacts, crate::neutral::Message),
    ) -> Result<crate::neutral::SessionFacts> {
        let read = messages::each_message(&*self.store.session(ns, dir)?, history, each);
        self.store.release_if_idle(ns, dir);
        read
    }

    fn each_message_since(
        &self,
        ns: &str,
        dir: &str,
        since: super::MessageMark,
        each: &mut dyn FnMut(
            &crate::neutral::SessionFacts,
            u64,
            crate::neutral::Message,
        ) -> super::ControlFlow<()>,
    ) -> Result<super::SinceRead> {
        let read = messages::each_message_since(&*self.store.session(ns, dir)?, since, each);
        self.store.release_if_idle(ns, dir);
        read
    }

    /// Large sessions' indexes, so the next mount need not re-parse them.
    fn persist(&self) {
        for s in self.store.known_sessions() {
            s.persist_if_stale();
            let (syncs, covered) = s.commit_counters();
            if syncs > 0 {
                log::info!(
                    "{}/{}: {syncs} fdatasyncs covered {covered} appends",
                    s.namespace,
                    s.dir
                );
            }
        }
    }
}
