//! Session sources: one [`SessionSource`] per kind of store (fen's own store; pi,
//! Claude Code and Codex come behind the same trait). The tree asks a source for
//! names, stats, listings and view snapshots; beyond "writable or not" it does not
//! know which kind of store it serves.

pub mod agents;
pub mod aider;
pub mod all;
pub mod amp;
pub mod claude;
pub mod cline;
pub mod codex;
pub mod continue_cli;
pub mod convert;
pub mod copilot;
pub mod crush;
pub mod cursor;
pub mod cursor_ide;
pub mod cursor_store;
pub mod db_units;
pub mod digest;
pub mod droid;
pub mod fen;
pub mod foreign;
pub mod foreign_source;
pub mod gemini;
pub mod goose;
pub mod growth;
pub mod json_text;
pub mod kept;
pub mod kilo;
pub mod kimi;
pub mod kind;
pub mod openclaw;
pub mod opencode;
pub mod openhands;
pub mod peers;
pub mod peers_watch;
pub mod pi;
pub mod projects;
pub mod protobuf_wire;
pub mod qwen;
pub mod registry;
pub mod roo;
pub mod set;
pub mod sqlite_ro;
pub mod units;
pub mod vscdb;
pub mod vscode_copilot;
pub mod warp;
pub mod watch;
pub mod whole_json;
pub mod zed;

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::neutral::{Message, SessionFacts, SessionMessages};
use crate::views::listing::Listing;
use crate::views::{Snapshot, ViewKind};
pub use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// What a `stat` of one session tells the tree.
#[derive(Debug, Clone, Copy)]
pub struct SessionStat {
    /// The transcript's size.
    pub size: u64,
    /// The session's last update (its folder's mtime).
    pub mtime: SystemTime,
}

/// A namespace's `index.json` bytes and `latest` target, as of now.
#[derive(Clone)]
pub struct NamespaceIndex {
    pub index_json: Arc<Vec<u8>>,
    pub latest: Option<String>,
}

pub trait SessionSource: Send + Sync {
    fn agent(&self) -> Agent;

    /// Whether sessions can be created and appended to (`ctl`); a read-only source's
    /// sessions refuse every change.
    fn writable(&self) -> bool;

    /// The folder the source reads (for `statfs`, and messages).
    fn root(&self) -> &Path;

    /// The other machine whose sessions these are (§12: a peer's name); `None` for
    /// this machine's own.
    fn host(&self) -> Option<&str> {
        None
    }

    /// The root folder's mtime (the mount root's, for a writable source).
    fn root_mtime(&self) -> Option<SystemTime>;

    /// Namespaces that hold at least one session of this source, sorted.
    fn namespaces(&self) -> Result<Vec<String>>;

    /// Whether `ns` holds at least one session of this source.
    fn has_namespace(&self, ns: &str) -> bool;

    /// The newest update of `ns` this source knows of, cheaply (no stat per session).
    fn namespace_mtime(&self, ns: &str) -> Option<SystemTime>;

    /// Session folder names in `ns`, sorted.
    fn session_dirs(&self, ns: &str) -> Result<Vec<String>>;

    /// The session `ns/dir`, or ENOENT when it is not one of this source's.
    fn session_stat(&self, ns: &str, dir: &str) -> Result<SessionStat>;

    /// Every session of `ns`, newest first (for `index.json` and `fen-fs list`).
    fn listings(&self, ns: &str) -> Result<Vec<Listing>>;

    /// `index.json` and `latest` of `ns` from this source's sessions alone (may be
    /// cached; the tree uses it when no other source shares the namespace).
    fn index(&self, ns: &str) -> Result<NamespaceIndex>;

    /// The size of view `kind` of `ns/dir` as a fresh open would see it.
    fn view_size(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<u64>;

    /// A snapshot of view `kind`; `writers` is the count of open `ctl` writers.
    fn snapshot(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<Snapshot>;

    /// A session of `ns` was appended to just now (through `ctl`).
    fn appended(&self, _ns: &str) {}

    /// Moves session `ns/dir` to the trash (§6); a read-only source refuses.
    fn trash(&self, ns: &str, dir: &str) -> Result<()> {
        Err(Error::new(
            libc::EROFS,
            format!("{ns}/{dir} is another agent's session; fen-fs does not delete it"),
        ))
    }

    /// Saves what lets the next mount start fast (caches); best effort.
    fn persist(&self) {}

    /// Session `ns/dir`'s messages as neutral values, for `conversation.md`, search
    /// and `fen-fs resume`. `history` false: exactly `conversation.json`'s messages,
    /// in its order. `history` true: every message the session holds, including
    /// those a compaction, rewind or undo took out of the conversation (their
    /// `in_conversation` is false), for search.
    fn messages(&self, ns: &str, dir: &str, _history: bool) -> Result<SessionMessages> {
        Err(Error::new(
            libc::ENOTSUP,
            format!("{ns}/{dir}: this source cannot give neutral messages yet"),
        ))
    }

    /// `messages`, one at a time and in the same order: `each` gets every message
    /// with the session's facts, and nothing needs to hold them all (search reads
    /// every session, some of hundreds of MB). Returns the facts. By default through
    /// `messages`.
    fn each_message(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
        each: &mut dyn FnMut(&SessionFacts, Message),
    ) -> Result<SessionFacts> {
        let s = self.messages(ns, dir, history)?;
        for m in s.messages {
            each(&s.facts, m);
        }
        Ok(s.facts)
    }

    /// The session's messages with history (as `each_message(.., true, ..)`), going
    /// on from `since` (a mark an earlier call returned) when the source can prove
    /// that the messages before it are unchanged, i.e. the session only grew: then
    /// `each` gets only the messages after it. `each` is given each message's place
    /// among all of them, so a caller sees where reading started. A session that
    /// grows by a line must not cost a reading of all of it (search follows
    /// sessions of hundreds of MB as they grow).
    ///
    /// `each` returns `Break` to stop early (background work asked to stop, or a slice
    /// of a huge session done): the source stops at the next place a later reading
    /// can go on from (messages given until then still count), and the returned mark
    /// says where (`SinceRead::stopped`). By default every message is read, and
    /// none can be skipped by a later reading.
    fn each_message_since(
        &self,
        ns: &str,
        dir: &str,
        _since: MessageMark,
        each: &mut dyn FnMut(&SessionFacts, u64, Message) -> ControlFlow<()>,
    ) -> Result<SinceRead> {
        let mut at = 0u64;
        let facts = self.each_message(ns, dir, true, &mut |f, m| {
            let _ = each(f, at, m);
            at += 1;
        })?;
        Ok(SinceRead {
            facts,
            resumed: false,
            mark: MessageMark::default(),
            stopped: false,
        })
    }

    /// What this source's model calls used (§13): for each of its units (a session
    /// file, or a file it does not show as a session that still records model calls,
    /// such as Claude Code's subagent transcripts), the records `ledger` does not hold
    /// yet: none for a unit whose stamp it holds, those after its mark for a unit that
    /// only grew (proved by the bytes before the mark), all of them otherwise. Stops at
    /// the next unit or chunk when the ledger asks. By default: no usage.
    fn usage(&self, _ledger: &mut dyn crate::usage_record::UsageLedger) -> Result<()> {
        Ok(())
    }
}

/// Where a reading of a session's messages ended, for a later reading to go on from
/// there if the session only grew. The numbers are the source's own (which file,
/// where its reader stopped, how many messages, a hash of what they were); all
/// zero: no mark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageMark(pub [u64; 4]);

impl MessageMark {
    pub fn is_none(&self) -> bool {
        self.0 == [0; 4]
    }

    /// Which file a mark is of: its device and inode, and its bytes as far as `len`
    /// (the first and last 4 KiB), so that a file re-created on a reused inode is
    /// another file.
    pub fn file_identity(file: &std::fs::File, dev: u64, ino: u64, len: u64) -> u64 {
        let edges = crate::store::index::content_check(file, len).unwrap_or(0);
        crate::store::atomic::checksum(&[
            &dev.to_le_bytes(),
            &ino.to_le_bytes(),
            &edges.to_le_bytes(),
        ])
    }
}

/// What `each_message_since` read.
pub struct SinceRead {
    pub facts: SessionFacts,
    /// Only the messages after the mark were given.
    pub resumed: bool,
    /// Where this reading ended.
    pub mark: MessageMark,
    /// It stopped before the last message, as `each` asked: `mark` is where the
    /// next reading goes on from.
    pub stopped: bool,
}

/// Which other agents' stores to show: detected roots (unless `detect` is off), with
/// explicit `--source KIND=DIR` roots adding or replacing them.
#[derive(Debug, Clone, Default)]
pub struct ForeignOptions {
    pub detect: bool,
    pub explicit: Vec<agents::AgentRoot>,
}

/// The sources of other agents' stores, indexed in fen's store at `fen_root`;
/// `watching` for a long-lived daemon (inotify on their folders). After them, one
/// source per agent over the copies kept in that store (§11), showing the sessions
/// whose source is gone.
pub fn foreign_sources(
    options: &ForeignOptions,
    fen_root: &Path,
    watching: bool,
) -> Vec<Arc<foreign_source::ForeignSource>> {
    // A store that does not exist yet is not created just to hold a cache.
    let fen = fen_root.is_dir().then_some(fen_root);
    let live: Vec<Arc<foreign_source::ForeignSource>> =
        agents::roots(options.detect, &options.explicit)
            .iter()
            .map(|r| {
                Arc::new(if watching {
                    foreign_source::ForeignSource::watching(r, fen)
                } else {
                    foreign_source::ForeignSource::new(r, fen)
                })
            })
            .collect();
    let kept = kept_sources(fen_root, &live);
    live.into_iter().chain(kept).collect()
}

/// Sources over another machine's kept copies (`<peer store>/.kept/<agent>/`, received
/// read-only, e.g. by Syncthing into `peers/<host>/`), one per agent: every copy is
/// shown (its source is on that machine), with each agent's own reader. Their caches
/// (indexes, reader states, decompressed copies) go in this machine's store at
/// `fen_root`; nothing is ever written, locked or created under the peer's folder.
/// `peers::peer_kept_sources` wraps them as a peer's sessions (host, path map).
/// `every_agent`: one source per agent fen-fs reads, for a long-lived process (the
/// peer's first copies of an agent may arrive later); else one per agent with copies.
pub fn peer_kept_copies(
    peer_store: &Path,
    host: &str,
    fen_root: &Path,
    every_agent: bool,
) -> Vec<Arc<foreign_source::ForeignSource>> {
    let dir = crate::store::layout::kept_dir(peer_store);
    let mut agents: Vec<Agent> = if every_agent {
        Agent::ALL
            .into_iter()
            .filter(|a| *a != Agent::Fen)
            .collect()
    } else {
        std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| Agent::from_kind(e.file_name().to_str()?))
            .collect()
    };
    agents.sort();
    let fen = fen_root.is_dir().then_some(fen_root);
    agents
        .into_iter()
        .map(|agent| {
            let copies = kept::KeptCopies::new(
                agent,
                dir.join(agent.name()),
                kept::Shown::All,
                Some(host.to_string()),
                fen.map(Path::to_path_buf),
                Vec::new(),
            );
            Arc::new(foreign_source::ForeignSource::over_kept(copies, fen))
        })
        .collect()
}

/// Builds the first index of each of `sources` (a one-shot command), the agents' own
/// first, then those over kept copies (which show what the others no longer do).
pub fn build_indexes(sources: &[Arc<foreign_source::ForeignSource>]) {
    for kept in [false, true] {
        std::thread::scope(|scope| {
            for s in sources.iter().filter(|s| s.kept_copies().is_some() == kept) {
                scope.spawn(|| s.build_index());
            }
        });
    }
}

/// A source per agent over the copies kept in the store at `root` (§11), each
/// showing what `live` (the agents' own sources) no longer shows.
pub fn kept_sources(
    root: &Path,
    live: &[Arc<foreign_source::ForeignSource>],
) -> Vec<Arc<foreign_source::ForeignSource>> {
    let dir = crate::store::layout::kept_dir(root);
    // Every agent with copies, and every agent shown (its copies may come later).
    let real = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
    let mut agents: Vec<Agent> = std::fs::read_dir(&dir)
        .into_iter()
        .filter(|_| real)
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Agent::from_kind(e.file_name().to_str()?))
        .chain(live.iter().map(|s| s.agent()))
        .collect();
    agents.sort();
    agents.dedup();
    agents
        .into_iter()
        .map(|agent| {
            let same: Vec<Arc<dyn kept::LiveSessions>> = live
                .iter()
                .filter(|s| s.agent() == agent)
                .map(|s| s.clone() as Arc<dyn kept::LiveSessions>)
                .collect();
            let copies = kept::KeptCopies::new(
                agent,
                dir.join(agent.name()),
                kept::Shown::Gone,
                None,
                Some(root.to_path_buf()),
                same,
            );
            let kept = Arc::new(foreign_source::ForeignSource::over_kept(copies, Some(root)));
            for s in live.iter().filter(|s| s.agent() == agent) {
                s.set_kept_kin(&kept);
            }
            kept
        })
        .collect()
}
