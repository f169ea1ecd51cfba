//! A source over kept copies (§11) instead of an agent's folders: the same reader, the
//! same caches, the same views; its sessions' bytes come from the copies
//! (`sources/kept.rs`), and what came from outside the agent's file (the cwd Gemini
//! keeps in `projects.json`, a Codex rename, Claude Code's archive mark...) from their
//! records. Each shows where its session was, under its folder name; an earlier
//! version as `<dir>.v<N>`.

use super::index::{FileEntry, session_dir_name};
use super::{ForeignSource, Layouts, Readers};
use crate::sources::foreign::ForeignSummary;
use crate::sources::kept::{CopyFacts, KeptCopies};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

impl ForeignSource {
    /// A read-only source over one agent's kept copies (`<store>/.kept/<agent>`, or
    /// a peer's), keeping its caches in this machine's store at `fen_root`.
    pub fn over_kept(copies: KeptCopies, fen_root: Option<&Path>) -> Self {
        let cache_file = fen_root.map(|fen| {
            crate::store::layout::foreign_index_cache(fen, copies.agent().name(), copies.dir())
        });
        ForeignSource {
            agent: copies.agent(),
            root: copies.dir().to_path_buf(),
            folders: Vec::new(),
            watch: None,
            units: None,
            unit_hints: Mutex::new(HashMap::new()),
            kept: Some(Arc::new(copies)),
            index: Mutex::new(Default::default()),
            ready: Condvar::new(),
            syncing: Mutex::new(()),
            readers: Mutex::new(Readers::default()),
            conversations: Mutex::new(Layouts::default()),
            markdown: crate::views::markdown::MarkdownCache::spilling_to(fen_root),
            fen_root: fen_root.map(Path::to_path_buf),
            cache_file,
            kept_kin: Default::default(),
            walked: Default::default(),
        }
    }

    /// The kept copies it shows, if it is a source over them.
    pub fn kept_copies(&self) -> Option<&Arc<KeptCopies>> {
        self.kept.as_ref()
    }

    /// The machine its sessions were recorded on: a peer's, for a peer's kept copies.
    pub(super) fn host_shown(&self) -> &str {
        self.kept
            .as_ref()
            .and_then(|k| k.host())
            .unwrap_or_else(|| crate::host::this_host())
    }

    /// The cwd kept session `ns/dir` was recorded in (a peer's path map applies to it).
    pub fn kept_cwd(&self, ns: &str, dir: &str) -> Option<String> {
        use crate::sources::SessionSource;
        if let Some((_, f)) = self.kept_source_of(ns, dir)
            && f.record.facts.cwd.is_some()
        {
            return f.record.facts.cwd;
        }
        self.listings(ns)
            .ok()?
            .into_iter()
            .find(|l| l.dir == dir)?
            .cwd
    }

    /// The folder it reads: the agent's root (or the kept copies' folder).
    pub fn agent_root(&self) -> &Path {
        &self.root
    }

    /// Whether it still has the database-backed session `key`: its index does (a unit
    /// whose rows cannot be dumped any more is dropped there, even while a listing
    /// kept from a busy moment still names it); before its first index is built, its
    /// first walk's listing does (nothing listed yet: yes, for now).
    pub fn lists_unit(&self, key: &Path) -> bool {
        let idx = self.index.lock().unwrap();
        if idx.ready {
            return idx.files.contains_key(key);
        }
        drop(idx);
        let hints = self.unit_hints.lock().unwrap();
        hints.is_empty() || hints.contains_key(key)
    }

    /// Whether it shows session folder `dir` in namespace `ns` now.
    pub fn shows_session(&self, ns: &str, dir: &str) -> bool {
        use crate::sources::SessionSource;
        self.has_namespace(ns)
            && self
                .session_dirs(ns)
                .is_ok_and(|d| d.iter().any(|x| x == dir))
    }

    /// What the copy's record says of kept session `path`.
    pub(super) fn kept_facts(&self, path: &Path) -> Option<CopyFacts> {
        self.kept.as_ref()?.facts(path)
    }

    /// An earlier version of a kept session (not in the one-session-per-id election:
    /// it is shown beside its session, under a name of its own).
    pub(super) fn is_version(&self, path: &Path) -> bool {
        self.kept_facts(path).is_some_and(|f| f.version.is_some())
    }

    /// The session folder's name: as the agent's source names it, from the file it
    /// was kept from; `.v<N>` for an earlier version.
    pub(super) fn dir_name(&self, path: &Path, e: &FileEntry) -> String {
        match self.kept_facts(path) {
            Some(f) => {
                let dir = session_dir_name(self.agent, &f.record.source, e);
                match f.version {
                    Some(n) => format!("{dir}.v{n}"),
                    None => dir,
                }
            }
            None => session_dir_name(self.agent, path, e),
        }
    }

    /// What the agent's other files said of the session when it was kept, in place of
    /// reading them (they may be gone too, or on another machine).
    pub(super) fn complete_from_record(&self, path: &Path, s: &mut ForeignSummary) {
        let Some(f) = self.kept_facts(path) else {
            return;
        };
        let facts = &f.record.facts;
        if facts.cwd.is_some() {
            s.cwd = facts.cwd.clone();
        }
        if facts.title.is_some() {
            s.title = facts.title.clone();
        }
        if facts.created_at.is_some() {
            s.created_at = facts.created_at.clone();
        }
        s.archived |= facts.archived;
        if s.id.is_empty() {
            s.id = f.record.id.clone();
        }
        if let Some(why) = &f.damaged {
            s.resumable = false;
            s.not_resumable_reason =
                Some(format!("the kept copy is damaged ({why}); run fen-fs fsck"));
        }
    }

    /// Whether its agent could resume kept session `ns/dir` (a subagent's transcript,
    /// for one, it cannot).
    pub fn kept_resumable(&self, ns: &str, dir: &str) -> bool {
        self.session(ns, dir)
            .is_ok_and(|(_, e)| e.summary.resumable)
    }

    /// The source each kept session was kept from (for `fen-fs restore`).
    pub fn kept_source_of(&self, ns: &str, dir: &str) -> Option<(PathBuf, CopyFacts)> {
        let (path, _) = self.session(ns, dir).ok()?;
        let f = self.kept_facts(&path)?;
        Some((path, f))
    }
}

impl crate::sources::kept::LiveSessions for ForeignSource {
    fn agent_root(&self) -> &Path {
        ForeignSource::agent_root(self)
    }
    fn is_indexed(&self) -> bool {
        ForeignSource::is_indexed(self)
    }
    fn lists_unit(&self, key: &Path) -> bool {
        ForeignSource::lists_unit(self, key)
    }
    fn shows_session(&self, ns: &str, dir: &str) -> bool {
        ForeignSource::shows_session(self, ns, dir)
    }
    fn session_place(&self, id: &str) -> Option<(String, String)> {
        ForeignSource::session_place(self, id)
    }
    fn subagent_places(&self, id: &str) -> Vec<(String, Option<String>, (String, String))> {
        ForeignSource::subagent_places(self, id)
    }
}

impl ForeignSource {
    /// The other sources of this agent's sessions on this machine: the agent's own
    /// for a source over kept copies, the kept copies' for the agent's own.
    pub(super) fn kin(&self) -> Vec<Arc<dyn crate::sources::kept::LiveSessions>> {
        match &self.kept {
            Some(k) => k.live().to_vec(),
            None => (self.kept_kin.get().and_then(std::sync::Weak::upgrade))
                .map(|k| k as Arc<dyn crate::sources::kept::LiveSessions>)
                .into_iter()
                .collect(),
        }
    }

    /// Names the source over this agent's kept copies (once).
    pub fn set_kept_kin(&self, kept: &Arc<ForeignSource>) {
        let _ = self.kept_kin.set(Arc::downgrade(kept));
    }
}
