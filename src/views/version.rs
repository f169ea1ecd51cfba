//! Where a view's bytes changed: one state of a view ([`Version`]), kept small, and
//! the first byte at which a later state of the same view differs from it. The tree
//! keeps the version whose pages the kernel may cache, and when the view changes it
//! drops the kernel's pages from that byte on only: a conversation that grew by a
//! message keeps its unchanged prefix cached.
//!
//! Each answer is proved, never assumed: bytes are compared through what names them
//! (fen's message table, which only grows while its file only grows; a layout's
//! ranges, over a file whose already-read part is shown unchanged by the same check
//! the caches use; or a hash of each page of a rendering held whole). When a proof
//! fails the answer is 0: everything changed.

use super::Snapshot;
use super::pieces::{Chunk, PieceLayout, PieceRef};
use crate::store::index::{MessageRec, content_check};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, RwLock, Weak};

/// The kernel's page size, the unit of its cache and of a page hash.
pub const PAGE: u64 = 4096;

/// A file as far as a version depends on it: the part read when the version was
/// taken is proved unchanged by `content_check` over that part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileProof {
    dev: u64,
    ino: u64,
    len: u64,
    check: u64,
}

impl FileProof {
    fn of(file: &File) -> Option<Self> {
        let meta = file.metadata().ok()?;
        Some(FileProof {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            check: content_check(file, meta.len()).ok()?,
        })
    }

    /// Whether `file` is this file with the bytes this proof covers unchanged (it
    /// may have grown).
    fn still_in(&self, file: &File) -> bool {
        file.metadata().is_ok_and(|m| {
            m.dev() == self.dev
                && m.ino() == self.ino
                && m.len() >= self.len
                && content_check(file, self.len).is_ok_and(|c| c == self.check)
        })
    }
}

/// One state of a view, as much as is needed to find where a later state differs.
#[derive(Clone)]
pub enum Version {
    /// fen's `conversation.json`: the head, then messages `from..to` of the session
    /// index's table (append-only while the index lives: a rewritten file gets a new
    /// table), then `]\n`.
    Conversation {
        table: Weak<RwLock<Vec<MessageRec>>>,
        head: u64,
        head_len: u64,
        from: usize,
        to: usize,
        base_out: u64,
        size: u64,
    },
    /// Text and ranges of a file (another agent's `conversation.json`).
    Pieces {
        layout: Arc<PieceLayout>,
        file: Option<FileProof>,
    },
    /// Bytes rendered whole (`index.json`, `conversation.md`): a hash per page.
    Pages {
        bytes: Weak<Vec<u8>>,
        hashes: Arc<Vec<u64>>,
        size: u64,
    },
    /// The transcript itself: reads follow the file, so a state is the file's.
    Live { file: FileProof },
}

fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

fn page_hashes(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks(PAGE as usize).map(hash_of).collect()
}

impl Version {
    /// The view's size in this state.
    pub fn size(&self) -> u64 {
        match self {
            Version::Conversation { size, .. } | Version::Pages { size, .. } => *size,
            Version::Pieces { layout, .. } => layout.size(),
            Version::Live { file } => file.len,
        }
    }

    /// Whether reads of this state follow the file (a transcript), rather than being
    /// a snapshot.
    pub fn is_live(&self) -> bool {
        matches!(self, Version::Live { .. })
    }
}

impl Snapshot {
    /// This snapshot's state; `None` for a kind that is not kept in the page cache.
    pub fn version(&self) -> Option<Version> {
        Some(match self {
            Snapshot::Conversation(c) => {
                let (table, head, from, to, base_out) = c.parts();
                Version::Conversation {
                    table: Arc::downgrade(table),
                    head: hash_of(head),
                    head_len: head.len() as u64,
                    from,
                    to,
                    base_out,
                    size: c.size(),
                }
            }
            Snapshot::Pieces(p) => Version::Pieces {
                layout: p.layout().clone(),
                file: FileProof::of(p.file()),
            },
            Snapshot::Bytes(b) => Version::Pages {
                bytes: Arc::downgrade(b),
                hashes: Arc::new(page_hashes(b)),
                size: b.len() as u64,
            },
            Snapshot::Transcript(f) => Version::Live {
                file: FileProof::of(f)?,
            },
        })
    }

    /// The first byte at which this snapshot differs from `old`, an earlier state of
    /// the same view; `None` when the bytes are the same. Cheap when nothing changed
    /// (the same rendering or layout), and for a view that grew at its end.
    pub fn first_change_since(&self, old: &Version) -> Option<u64> {
        match (self, old) {
            (
                Snapshot::Conversation(c),
                Version::Conversation {
                    table,
                    head,
                    head_len,
                    from,
                    to,
                    base_out,
                    size,
                },
            ) => {
                let (t, h, f, new_to, b) = c.parts();
                let same_start = Weak::ptr_eq(table, &Arc::downgrade(t))
                    && hash_of(h) == *head
                    && h.len() as u64 == *head_len
                    && f == *from
                    && b == *base_out
                    && new_to >= *to;
                if !same_start {
                    return Some(0);
                }
                if new_to == *to {
                    return (c.size() != *size).then_some(0);
                }
                // The old last message's `\n` became `,\n` and the new messages
                // follow; with no message before, the head's last `\n` did.
                Some(if to > from {
                    size.saturating_sub(3)
                } else {
                    head_len.saturating_sub(1)
                })
            }
            (Snapshot::Pieces(p), Version::Pieces { layout, file }) => {
                let same_file = file.is_some_and(|f| f.still_in(p.file()));
                if Arc::ptr_eq(p.layout(), layout) && same_file {
                    return None;
                }
                if !same_file {
                    return Some(0);
                }
                layouts_differ_at(layout, p.layout())
            }
            (
                Snapshot::Bytes(b),
                Version::Pages {
                    bytes,
                    hashes,
                    size,
                },
            ) => {
                if Weak::ptr_eq(bytes, &Arc::downgrade(b)) {
                    return None;
                }
                let new = page_hashes(b);
                let first = new.iter().zip(hashes.iter()).position(|(a, b)| a != b);
                match first {
                    Some(i) => Some(i as u64 * PAGE),
                    None if b.len() as u64 == *size => None,
                    // One is a prefix of the other, in whole pages.
                    None => Some(new.len().min(hashes.len()) as u64 * PAGE),
                }
            }
            (Snapshot::Transcript(f), Version::Live { file }) => {
                if !file.still_in(f) {
                    return Some(0);
                }
                let now = f.metadata().map(|m| m.len()).unwrap_or(0);
                (now != file.len).then_some(file.len)
            }
            _ => Some(0),
        }
    }
}

/// The first byte at which two layouts' renderings differ (their ranges name the
/// same bytes of one file), `None` when they are the same. Chunks the two share (a
/// layout and one grown from it) are skipped whole: a conversation that gained a
/// message is compared in its last chunk.
fn layouts_differ_at(old: &PieceLayout, new: &PieceLayout) -> Option<u64> {
    let (a, b) = (old.chunks(), new.chunks());
    let shared = a
        .iter()
        .zip(b.iter())
        .take_while(|(x, y)| Arc::ptr_eq(x, y))
        .count();
    fn rest(chunks: &[Arc<Chunk>]) -> impl Iterator<Item = (u64, PieceRef<'_>)> {
        chunks.iter().flat_map(|c| c.parts())
    }
    let (mut a, mut b) = (rest(&a[shared..]), rest(&b[shared..]));
    loop {
        let ((at, p), (_, q)) = match (a.next(), b.next()) {
            (Some(x), Some(y)) => (x, y),
            (None, None) if old.size() == new.size() => return None,
            // Every part of the shorter is in the longer: they differ where it ends.
            _ => return Some(old.size().min(new.size())),
        };
        if p == q {
            continue;
        }
        let common = match (p, q) {
            (PieceRef::Text(x), PieceRef::Text(y)) => {
                x.bytes().zip(y.bytes()).take_while(|(c, d)| c == d).count() as u64
            }
            (PieceRef::Range { start: s, len: l }, PieceRef::Range { start: t, len: m })
                if s == t =>
            {
                l.min(m)
            }
            _ => 0,
        };
        return Some(at + common);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::pieces::{Piece, PieceSnapshot};
    use std::io::Write;

    fn bytes(s: &[u8]) -> Snapshot {
        Snapshot::Bytes(Arc::new(s.to_vec()))
    }

    fn read_all(s: &Snapshot) -> Vec<u8> {
        s.read_at(0, s.size() as usize).unwrap()
    }

    /// The claim checked against the bytes: everything before the answer is equal
    /// (when the answer is a page, every page before it).
    fn check(old: &Snapshot, new: &Snapshot) -> Option<u64> {
        let at = new.first_change_since(&old.version().unwrap());
        let (a, b) = (read_all(old), read_all(new));
        match at {
            None => assert_eq!(a, b),
            Some(at) => {
                let at = at as usize;
                assert!(at <= a.len().min(b.len()), "{at} past an end");
                assert_eq!(a[..at], b[..at]);
            }
        }
        at
    }

    #[test]
    fn pages_of_a_rendering_tell_where_it_changed() {
        let old = vec![b'a'; 10_000];
        let mut grown = old.clone();
        grown.extend_from_slice(b"tail");
        let mut edited = old.clone();
        edited[5000] = b'b';
        assert_eq!(check(&bytes(&old), &bytes(&old)), None);
        assert_eq!(check(&bytes(&old), &bytes(&grown)), Some(2 * PAGE));
        assert_eq!(check(&bytes(&old), &bytes(&edited)), Some(PAGE));
        assert_eq!(check(&bytes(&grown), &bytes(&old)), Some(2 * PAGE));
        let same = bytes(&old);
        assert_eq!(same.first_change_since(&same.version().unwrap()), None);
    }

    fn file_with(content: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut t = tempfile::NamedTempFile::new().unwrap();
        t.write_all(content).unwrap();
        let f = File::open(t.path()).unwrap();
        (t, f)
    }

    fn conv(file: &File, messages: &[(u64, u64)]) -> Snapshot {
        let msgs = messages
            .iter()
            .map(|&(start, len)| vec![Piece::Range { start, len }])
            .collect();
        Snapshot::Pieces(PieceSnapshot::conversation(file.try_clone().unwrap(), msgs))
    }

    #[test]
    fn a_layout_that_grew_by_a_message_changed_at_its_closing_bracket() {
        let (mut t, f) = file_with(b"{\"a\":1}\n{\"b\":2}\n");
        let old = conv(&f, &[(0, 7), (8, 7)]);
        let same = conv(&f, &[(0, 7), (8, 7)]);
        assert_eq!(check(&old, &same), None);
        t.write_all(b"{\"c\":3}\n").unwrap();
        let new = conv(&f, &[(0, 7), (8, 7), (16, 7)]);
        let at = check(&old, &new).unwrap();
        // `[\n{"a":1},\n{"b":2}` is unchanged: the `\n` after it is not.
        assert_eq!(at, old.size() - 3);
        // A message taken out (a rewind) changes the view where it was.
        let rewound = conv(&f, &[(0, 7), (16, 7)]);
        assert_eq!(check(&old, &rewound), Some(2 + 7 + 2));
    }

    #[test]
    fn a_file_rewritten_in_place_proves_nothing() {
        let (t, f) = file_with(b"{\"a\":1}\n{\"b\":2}\n");
        let old = conv(&f, &[(0, 7), (8, 7)]).version().unwrap();
        std::fs::write(t.path(), b"{\"a\":9}\n{\"b\":2}\n{\"c\":3}\n").unwrap();
        let new = conv(&f, &[(0, 7), (8, 7), (16, 7)]);
        assert_eq!(new.first_change_since(&old), Some(0));
    }

    #[test]
    fn a_transcript_that_grew_changed_where_it_ended() {
        let (mut t, f) = file_with(b"line one\n");
        let old = Snapshot::Transcript(f.try_clone().unwrap());
        let v = old.version().unwrap();
        assert_eq!(old.first_change_since(&v), None);
        t.write_all(b"line two\n").unwrap();
        assert_eq!(old.first_change_since(&v), Some(9));
        std::fs::write(t.path(), b"LINE ONE\nline two\n").unwrap();
        assert_eq!(old.first_change_since(&v), Some(0));
    }

    #[test]
    fn a_grown_layout_changed_at_the_old_closing_bracket_in_its_last_chunk() {
        let (mut t, f) = file_with(&vec![b'x'; 4000]);
        let msgs: Vec<Vec<Piece>> = (0..2000)
            .map(|k| vec![Piece::Range { start: k, len: 1 }])
            .collect();
        let old = Snapshot::Pieces(PieceSnapshot::conversation(
            f.try_clone().unwrap(),
            msgs.clone(),
        ));
        t.write_all(b"more").unwrap();
        let Snapshot::Pieces(p) = &old else {
            unreachable!()
        };
        let grown = p.layout().grown(vec![vec![Piece::Range {
            start: 4000,
            len: 4,
        }]]);
        let new = Snapshot::Pieces(PieceSnapshot::new(
            f.try_clone().unwrap(),
            Arc::new(grown.unwrap()),
        ));
        assert_eq!(check(&old, &new), Some(old.size() - 3));
    }
}
