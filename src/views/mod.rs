//! Views (§2.2): what a reader of the mount (or `fen-fs show`) sees, each a pure
//! function of a session's index and its append-only file.

pub mod conversation;
pub mod html;
pub mod listing;
pub mod markdown;
pub mod meta;
pub mod pieces;
pub mod span_read;
pub mod summary;
pub mod version;

use crate::error::{Error, Result};
use crate::store::session::Session;
use conversation::ConversationSnapshot;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The views of a session folder (§2.2), each a file in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViewKind {
    Transcript,
    Conversation,
    Summary,
    Meta,
    /// `conversation.md` (§9).
    Markdown,
}

impl ViewKind {
    /// The file name in a session folder: the one table of view names.
    pub const fn file_name(self) -> &'static str {
        match self {
            ViewKind::Transcript => "transcript.jsonl",
            ViewKind::Conversation => "conversation.json",
            ViewKind::Summary => "summary.txt",
            ViewKind::Meta => "meta.json",
            ViewKind::Markdown => "conversation.md",
        }
    }

    /// The view a short name (`conversation`, `meta`, `summary`, `transcript`, `md`)
    /// or file name stands for (`fen-fs show --view`).
    pub fn from_name(name: &str) -> Option<ViewKind> {
        if name == "md" {
            return Some(ViewKind::Markdown);
        }
        [
            ViewKind::Transcript,
            ViewKind::Conversation,
            ViewKind::Summary,
            ViewKind::Meta,
            ViewKind::Markdown,
        ]
        .into_iter()
        .find(|k| {
            let file = k.file_name();
            name == file || Some(name) == file.split('.').next()
        })
    }
}

/// One open view: its bytes never change, whatever is appended meanwhile.
pub enum Snapshot {
    Bytes(std::sync::Arc<Vec<u8>>),
    Conversation(ConversationSnapshot),
    /// Literal text and ranges of a file (another agent's conversation).
    Pieces(pieces::PieceSnapshot),
    /// The transcript itself: append-only, so bytes once read never change and a
    /// handle may follow growth (`tail -f`). Reads and size go to the descriptor.
    Transcript(File),
}

impl Snapshot {
    pub fn size(&self) -> u64 {
        match self {
            Snapshot::Bytes(b) => b.len() as u64,
            Snapshot::Conversation(c) => c.size(),
            Snapshot::Pieces(p) => p.size(),
            Snapshot::Transcript(file) => file.metadata().map(|m| m.len()).unwrap_or(0),
        }
    }

    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(offset, len, &mut out)?;
        Ok(out)
    }

    /// Bytes `[offset, offset+len)` into `out`, cleared first (see
    /// `PieceSnapshot::read_into`).
    pub fn read_into(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        match self {
            Snapshot::Bytes(b) => {
                let start = (offset as usize).min(b.len());
                let end = start.saturating_add(len).min(b.len());
                out.extend_from_slice(&b[start..end]);
                Ok(())
            }
            Snapshot::Conversation(c) => c.read_into(offset, len, out),
            Snapshot::Pieces(p) => p.read_into(offset, len, out),
            Snapshot::Transcript(file) => {
                out.resize(len, 0);
                let mut got = 0;
                while got < len {
                    match file.read_at(&mut out[got..], offset + got as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(Error::io("read transcript", &e)),
                    }
                }
                out.truncate(got);
                Ok(())
            }
        }
    }
}

/// Opens the session file for reading, never through a symlink.
pub fn open_transcript(session: &Session) -> Result<File> {
    session.open_read()
}

/// Renders `kind` of `session` as it is now. `writers` is the open `ctl` handle count.
pub fn snapshot(session: &Session, kind: ViewKind, writers: u64) -> Result<Snapshot> {
    // Open first, then refresh: the index may then know less than the descriptor can
    // read, never more.
    let file = open_transcript(session)?;
    if kind == ViewKind::Transcript {
        return Ok(Snapshot::Transcript(file));
    }
    let idx = session.current()?;
    Ok(match kind {
        ViewKind::Transcript => unreachable!("served above"),
        ViewKind::Markdown => {
            return Err(Error::new(
                libc::ENOTSUP,
                "conversation.md is rendered by the session's source",
            ));
        }
        ViewKind::Conversation => Snapshot::Conversation(ConversationSnapshot::new(&idx, file)?),
        ViewKind::Meta => Snapshot::Bytes(meta::render(session, &idx, writers).into()),
        ViewKind::Summary => Snapshot::Bytes(summary::render(session, &idx, &file).into()),
    })
}

/// A timestamp shown in the local time zone, to the second.
pub fn local_time(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => t
            .with_timezone(&chrono::Local)
            .format("%Y-%m-%d %H:%M:%S %Z")
            .to_string(),
        Err(_) => rfc3339.to_string(),
    }
}
