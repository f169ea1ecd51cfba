//! Another agent's store (pi, Claude Code, Codex) as a read-only [`SessionSource`].
//!
//! Its session files are found by walking the agent's folders (a folder whose mtime
//! did not change is not re-read), each file is read once by the agent's
//! [`ForeignReader`] into a small summary (cwd, title, counts...), and a session
//! appears in the namespace of its real cwd, named `<created stamp>_<agent>-<id>`.
//! A file that grew is read from where the last read stopped: its reader is in memory
//! (a few recent ones) or its saved state is on disk (files of 256 KiB or more, proved
//! to belong to the file's bytes), whatever was read since; anything else about it
//! changing means a fresh read.
//!
//! Nothing is ever written, locked or created in the agent's folders: every open is
//! read-only, `O_NOFOLLOW`, checked to be a regular file. The index of summaries is
//! kept in fen's own cache folder, reused on the next mount for every file whose
//! (device, inode, size, mtime) is unchanged. The first index is built by a
//! background thread, so `mount` returns at once; a listing waits for it.
//!
//! Split by concern, one job per file:
//! - `walk.rs`: finding the session files (folders whose stamp is unchanged are not
//!   read again);
//! - `build.rs`: the first index (`build_index`) and keeping it current (`sync`);
//! - `index.rs`: which file is which session folder, the listings;
//! - `readers.rs`: readers following their files, and their saved states;
//! - `conversations.rs`: `conversation.json` layouts and their cache;
//! - `persist.rs`: the index saved in fen's cache, and saving every cache;
//! - `views.rs`: `meta.json`, `summary.txt`; `messages.rs`: neutral messages and
//!   `conversation.md`;
//! - `units.rs`: where a session's bytes come from (a file, or a database's unit);
//!   `kept.rs`: a source over kept copies (`sources/kept.rs`) instead of an agent's
//!   folders; `keeping.rs`: what the keeper (`keep/`) reads of a source;
//! - `usage.rs`: the token usage its units record (`SessionSource::usage`).

mod build;
mod conversations;
mod index;
mod keeping;
mod kept;
mod messages;
mod persist;
mod readers;
mod units;
mod usage;
mod views;
mod walk;

use super::agents::{self, AgentRoot};
use super::{NamespaceIndex, SessionSource, SessionStat};
use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::store::index::FileStamp;
use crate::views::listing::Listing;
use crate::views::pieces::PieceSnapshot;
use crate::views::{Snapshot, ViewKind};
use conversations::Layouts;
use index::Index;
pub use keeping::ToKeep;
use readers::Readers;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::SystemTime;

/// The namespace of sessions whose file names no working directory.
pub const UNKNOWN_CWD_NAMESPACE: &str = "--unknown-cwd--";

/// 2: summaries carry `archived` and `resume_rules`; 3: entries carry
/// `context_tokens`.
// 4: Claude Code's and Codex's updated_at come from the content (§12).
// 5: Claude Code's subagents (summaries carry `subagent` and `spawned`).
const INDEX_VERSION: u32 = 5;

/// Files at least this large keep their conversation layout across mounts: reading
/// the layout back is much cheaper than parsing the file again.
const PERSIST_MIN: u64 = 1 << 20;
/// Larger cache files are not read (a damaged or planted one cannot cost memory).
const MAX_CACHE_BYTES: u64 = 1 << 30;

pub struct ForeignSource {
    // Where the sessions are.
    agent: Agent,
    root: PathBuf,
    /// The folders holding its session files (most agents have one).
    folders: Vec<agents::SessionsFolder>,
    /// inotify on the session folders (daemon only): an unchanged store costs no
    /// `stat` per file on a listing.
    watch: Option<super::watch::StoreWatch>,
    /// Sessions that are not files (a database's rows), beside or instead of files.
    units: Option<super::units::Units>,
    /// The units of the last walk, with the cwd their listing names.
    unit_hints: Mutex<HashMap<PathBuf, Option<String>>>,
    /// Kept copies (§11) instead of the agent's folders: a source over `.kept/<agent>`.
    kept: Option<Arc<super::kept::KeptCopies>>,

    // The index of sessions (`index.rs`, `build.rs`, `walk.rs`).
    index: Mutex<Index>,
    /// Wakes whoever waits for the first index (or a namespace of it).
    ready: Condvar,
    /// Held for a whole `sync`: the watch's events are taken by the first caller to
    /// drain them, so a second caller finding nothing new must wait until the first
    /// has read what changed, not serve the index as it was.
    syncing: Mutex<()>,

    // Reading and rendering (`readers.rs`, `conversations.rs`, `messages.rs`).
    /// Readers following recently read files.
    readers: Mutex<Readers>,
    /// Conversation layouts of recently opened files: `stat`, `open` and every later
    /// open of an unchanged file share one computation.
    conversations: Mutex<Layouts>,
    /// `conversation.md` of recently read sessions, one rendering per file state.
    markdown: crate::views::markdown::MarkdownCache,

    // Caches in fen's store, never in the agent's folder (`persist.rs`).
    /// fen's store, for saved reader states and conversation layouts.
    fen_root: Option<PathBuf>,
    /// Where the index is persisted.
    cache_file: Option<crate::store::layout::CacheFile>,
    /// The source over this agent's kept copies (`kept_sources`), for links to a
    /// parent or subagent only a kept copy still shows.
    kept_kin: std::sync::OnceLock<std::sync::Weak<ForeignSource>>,
    /// How many times its folders were walked (`walks`).
    walked: std::sync::atomic::AtomicU64,
}

impl ForeignSource {
    /// A source over `root`, keeping its caches in fen's store at `fen_root` (none
    /// when `None`).
    pub fn new(root: &AgentRoot, fen_root: Option<&Path>) -> Self {
        let cache_file = fen_root.map(|fen| {
            crate::store::layout::foreign_index_cache(fen, root.agent.name(), &root.root)
        });
        ForeignSource {
            agent: root.agent,
            root: root.root.clone(),
            folders: agents::sessions_folders(root.agent, &root.root),
            watch: None,
            units: agents::units_for(root.agent, &root.root),
            unit_hints: Mutex::new(HashMap::new()),
            kept: None,
            index: Mutex::new(Index::default()),
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

    /// How many times its folders were walked (each walk lists every folder and
    /// `stat`s what changed): what a change costs, seen by tests.
    pub fn walks(&self) -> u64 {
        self.walked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The same, watching its folders with inotify (a long-lived daemon).
    pub fn watching(root: &AgentRoot, fen_root: Option<&Path>) -> Self {
        ForeignSource {
            watch: super::watch::StoreWatch::new(),
            ..Self::new(root, fen_root)
        }
    }
}

fn file_stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

fn read_whole(path: &Path) -> Result<Vec<u8>> {
    let (mut file, _) = crate::store::open::open_regular(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io(path.display(), &e))?;
    Ok(bytes)
}

impl SessionSource for ForeignSource {
    fn agent(&self) -> Agent {
        self.agent
    }

    fn writable(&self) -> bool {
        false
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn root_mtime(&self) -> Option<SystemTime> {
        None
    }

    fn namespaces(&self) -> Result<Vec<String>> {
        // The whole list needs the whole first index: a file's namespace is known
        // only once it is read (hints can be wrong), and a root listing that showed
        // a namespace its files later leave would be worse than a wait.
        self.sync(None);
        Ok(self.index.lock().unwrap().by_ns.keys().cloned().collect())
    }

    fn has_namespace(&self, ns: &str) -> bool {
        if self.wait_for(Some(ns)).by_ns.contains_key(ns) {
            return true;
        }
        // Kept copies whose listing is the one the last walk took have nothing new: a
        // "no" costs no walk (a first mount's `ls` and every `index.json` ask each
        // source about each namespace).
        if let Some(kept) = &self.kept
            && let Some(listing) = kept.reused_listing()
            && self.index.lock().unwrap().kept_walked == Some(listing)
        {
            return false;
        }
        // Units are re-listed cheaply (a stat of the databases): a session that
        // appeared in a new namespace is found by its path, not only after an `ls`.
        // So are kept copies: a session whose source just went shows at once.
        (self.units.is_some() || self.kept.is_some()) && {
            self.sync(Some(ns));
            self.index.lock().unwrap().by_ns.contains_key(ns)
        }
    }

    fn namespace_mtime(&self, ns: &str) -> Option<SystemTime> {
        let idx = self.wait_for(Some(ns));
        let dirs = idx.by_ns.get(ns)?;
        dirs.values()
            .filter_map(|p| idx.files.get(p))
            .map(|e| e.mtime())
            .max()
    }

    fn session_dirs(&self, ns: &str) -> Result<Vec<String>> {
        self.sync(Some(ns));
        let idx = self.index.lock().unwrap();
        Ok(idx
            .by_ns
            .get(ns)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default())
    }

    fn session_stat(&self, ns: &str, dir: &str) -> Result<SessionStat> {
        let (path, e) = self.session(ns, dir)?;
        Ok(SessionStat {
            size: self.transcript_size(&path, &e),
            mtime: e.mtime(),
        })
    }

    fn listings(&self, ns: &str) -> Result<Vec<Listing>> {
        Ok(self.listings_now(ns))
    }

    fn index(&self, ns: &str) -> Result<NamespaceIndex> {
        Ok(self.rendered(ns))
    }

    fn view_size(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<u64> {
        if kind == ViewKind::Markdown {
            return Ok(self.markdown(ns, dir)?.len());
        }
        if kind == ViewKind::Conversation {
            let (path, _) = self.session(ns, dir)?;
            return Ok(self.conversation(&path)?.1.size());
        }
        Ok(self.snapshot(ns, dir, kind, writers)?.size())
    }

    fn snapshot(&self, ns: &str, dir: &str, kind: ViewKind, _writers: u64) -> Result<Snapshot> {
        let (path, e) = self.session(ns, dir)?;
        Ok(match kind {
            ViewKind::Transcript => Snapshot::Transcript(self.open_transcript(&path)?),
            ViewKind::Conversation => {
                let (file, layout, _) = self.conversation(&path)?;
                Snapshot::Pieces(PieceSnapshot::new(file, layout))
            }
            ViewKind::Meta => Snapshot::Bytes(Arc::new(self.meta(ns, dir, &path, &e)?)),
            ViewKind::Summary => Snapshot::Bytes(Arc::new(self.summary_text(ns, &path, &e))),
            ViewKind::Markdown => self.markdown(ns, dir)?.snapshot()?,
        })
    }

    fn messages(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
    ) -> Result<crate::neutral::SessionMessages> {
        self.neutral_messages(ns, dir, history)
    }

    fn each_message(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
        each: &mut dyn FnMut(&crate::neutral::SessionFacts, crate::neutral::Message),
    ) -> Result<crate::neutral::SessionFacts> {
        self.neutral_each(ns, dir, history, each)
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
        self.neutral_since(ns, dir, since, each)
    }

    fn usage(&self, ledger: &mut dyn crate::usage_record::UsageLedger) -> Result<()> {
        self.usage_into(ledger)
    }

    fn persist(&self) {
        self.persist_caches();
        if let Some(k) = &self.kept {
            k.persist();
        }
    }
}
