//! A generated view as pieces: literal text and byte ranges of the source file, read
//! with `pread` when asked for. Another agent's `conversation.json` is served this way,
//! so a large transcript's view costs an index of ranges, not a copy of its bytes.

use super::span_read::{Part, read_parts};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::sync::Arc;

/// One part of a generated JSON text.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub enum Piece {
    /// Bytes made by the reader (always valid UTF-8 JSON text when joined).
    Text(String),
    /// `len` bytes of the source file from absolute offset `start`, kept verbatim.
    Range { start: u64, len: u64 },
}

/// One message object of `conversation.json`: its pieces joined are one JSON object
/// on one line (no `\n` inside).
pub type MessagePieces = Vec<Piece>;

impl Piece {
    pub fn as_ref(&self) -> PieceRef<'_> {
        match self {
            Piece::Text(t) => PieceRef::Text(t),
            Piece::Range { start, len } => PieceRef::Range {
                start: *start,
                len: *len,
            },
        }
    }
}

/// Where each piece of a generated view goes: shared by every open of the same file
/// state, and small enough to persist (a range is two numbers).
///
/// The parts are kept in chunks shared between a layout and the layouts grown from
/// it ([`grown`](Self::grown)): a conversation that gained a message copies its last
/// chunk, not its whole list of parts (a 300 MB session has about a million), and
/// finding where two of them differ skips the chunks they share.
#[derive(Debug, Clone)]
pub struct PieceLayout {
    /// In order, each of at most `CHUNK` parts; none is empty.
    chunks: Vec<Arc<Chunk>>,
    size: u64,
}

/// Parts per chunk: copying one is cheap, and a million parts make few chunks.
const CHUNK: usize = 512;

/// How the last message of `conversation.json` ends, and the array with it.
const CLOSE: &str = "\n]\n";

/// Up to `CHUNK` parts of a layout, 16 bytes each. Their texts are spans of one
/// string per chunk, not a string each (a persisted layout of a 100 MB transcript
/// has 113,000 texts, most of them `,\n`, and loading it was mostly allocating
/// them), and only the chunk knows where it starts in the view (a read finds its
/// part by adding at most `CHUNK` lengths). The 300 MB session's layout has about a
/// million parts: 32 bytes each and a string per text before.
#[derive(Debug, Clone, Default)]
pub struct Chunk {
    /// Where its first part is in the view.
    start: u64,
    /// In order; none is empty.
    parts: Vec<Stored>,
    /// The chunk's texts, one after the other (at most `SPAN` bytes).
    text: String,
}

/// A part as a chunk keeps it: a text is a span of the chunk's `text`. A range or a
/// text longer than `SPAN` is kept as several parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    Text { at: u32, len: u32 },
    Range { start: u64, len: u32 },
}

/// The longest part, and the most text one chunk holds.
const SPAN: usize = u32::MAX as usize;

/// A part of a layout, as its readers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceRef<'a> {
    Text(&'a str),
    Range { start: u64, len: u64 },
}

impl<'a> PieceRef<'a> {
    fn len(&self) -> u64 {
        match self {
            PieceRef::Text(t) => t.len() as u64,
            PieceRef::Range { len, .. } => *len,
        }
    }

    /// `take` bytes of it from `skip`, as a read takes them.
    fn part(self, skip: u64, take: u64) -> Part<'a> {
        match self {
            PieceRef::Text(t) => Part::Bytes(&t.as_bytes()[skip as usize..(skip + take) as usize]),
            PieceRef::Range { start, .. } => Part::File {
                at: start + skip,
                len: take as usize,
            },
        }
    }

    pub fn to_piece(self) -> Piece {
        match self {
            PieceRef::Text(t) => Piece::Text(t.to_string()),
            PieceRef::Range { start, len } => Piece::Range { start, len },
        }
    }
}

impl Chunk {
    fn starting_at(start: u64) -> Self {
        Chunk {
            start,
            parts: Vec::with_capacity(CHUNK),
            text: String::new(),
        }
    }

    fn get(&self, s: Stored) -> PieceRef<'_> {
        match s {
            Stored::Text { at, len } => {
                PieceRef::Text(&self.text[at as usize..(at as usize + len as usize)])
            }
            Stored::Range { start, len } => PieceRef::Range {
                start,
                len: len as u64,
            },
        }
    }

    /// (offset in the view, part), in order.
    pub fn parts(&self) -> impl Iterator<Item = (u64, PieceRef<'_>)> + '_ {
        let mut at = self.start;
        self.parts.iter().map(move |&s| {
            let p = self.get(s);
            let here = at;
            at += p.len();
            (here, p)
        })
    }

    /// Where its first part is in the view.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Whether `t` can be added to its last part, a text (which ends its `text`).
    fn can_extend_text(&self, t: &str) -> bool {
        matches!(self.parts.last(), Some(Stored::Text { len, .. })
            if *len as usize + t.len() <= SPAN && self.text.len() + t.len() <= SPAN)
    }

    fn extend_last_text(&mut self, t: &str) {
        if let Some(Stored::Text { len, .. }) = self.parts.last_mut() {
            *len += t.len() as u32;
            self.text.push_str(t);
        }
    }

    /// Whether a part `p` (at most `SPAN` long) fits.
    fn has_room(&self, p: PieceRef) -> bool {
        self.parts.len() < CHUNK
            && match p {
                PieceRef::Text(t) => self.text.len() + t.len() <= SPAN,
                PieceRef::Range { .. } => true,
            }
    }

    /// Adds a part of at most `SPAN` bytes.
    fn push(&mut self, p: PieceRef) {
        let stored = match p {
            PieceRef::Text(t) => {
                let s = Stored::Text {
                    at: self.text.len() as u32,
                    len: t.len() as u32,
                };
                self.text.push_str(t);
                s
            }
            PieceRef::Range { start, len } => Stored::Range {
                start,
                len: len as u32,
            },
        };
        self.parts.push(stored);
    }
}

/// `p` in parts of at most `SPAN` bytes (a text cut between characters).
fn spans(p: PieceRef<'_>) -> impl Iterator<Item = PieceRef<'_>> {
    let mut rest = Some(p);
    std::iter::from_fn(move || {
        let p = rest.take()?;
        match p {
            PieceRef::Range { start, len } if len > SPAN as u64 => {
                rest = Some(PieceRef::Range {
                    start: start + SPAN as u64,
                    len: len - SPAN as u64,
                });
                Some(PieceRef::Range {
                    start,
                    len: SPAN as u64,
                })
            }
            PieceRef::Text(t) if t.len() > SPAN => {
                let cut = (0..=SPAN).rev().find(|&i| t.is_char_boundary(i))?;
                rest = Some(PieceRef::Text(&t[cut..]));
                Some(PieceRef::Text(&t[..cut]))
            }
            p => Some(p),
        }
    })
}

impl PartialEq for PieceLayout {
    fn eq(&self, other: &Self) -> bool {
        self.size == other.size && self.parts().eq(other.parts())
    }
}

impl Eq for PieceLayout {}

/// An open view made of pieces: its bytes never change (the ranges name bytes of an
/// append-only file, read through the descriptor opened with the snapshot).
pub struct PieceSnapshot {
    file: File,
    layout: Arc<PieceLayout>,
}

impl PieceLayout {
    /// `conversation.json` of `messages` (each one JSON object's pieces):
    /// `[\n{…},\n{…}\n]\n`, or `[]\n` when empty.
    pub fn conversation(messages: Vec<Vec<Piece>>) -> Self {
        let mut layout = PieceLayout {
            chunks: Vec::new(),
            size: 0,
        };
        if messages.is_empty() {
            layout.push(PieceRef::Text("[]\n"));
        } else {
            layout.push(PieceRef::Text("[\n"));
            layout.push_messages(messages);
        }
        layout
    }

    /// This conversation with `messages` after its own: the same parts as
    /// [`conversation`](Self::conversation) of all of them, made by copying only the
    /// last chunk. `None` when this is no conversation layout (it does not end as one).
    pub fn grown(&self, messages: Vec<Vec<Piece>>) -> Option<Self> {
        if messages.is_empty() {
            return Some(self.clone());
        }
        if self.parts().eq([(0, PieceRef::Text("[]\n"))]) {
            return Some(Self::conversation(messages));
        }
        let mut grown = self.clone();
        // The closing `\n]\n` is the end of the last text part (texts are merged):
        // taken off, the parts are those of the messages so far, still open.
        let last = grown.chunks.last_mut()?;
        let (_, PieceRef::Text(t)) = last.parts().last()? else {
            return None;
        };
        if !t.ends_with(CLOSE) {
            return None;
        }
        let chunk = Arc::make_mut(last);
        chunk.text.truncate(chunk.text.len() - CLOSE.len());
        if let Some(Stored::Text { len, .. }) = chunk.parts.last_mut() {
            *len -= CLOSE.len() as u32;
            if *len == 0 {
                chunk.parts.pop();
            }
        }
        if chunk.parts.is_empty() {
            grown.chunks.pop();
        }
        grown.size -= CLOSE.len() as u64;
        grown.push(PieceRef::Text(",\n"));
        grown.push_messages(messages);
        Some(grown)
    }

    /// The messages' parts, `,\n` between them, then the closing `\n]\n`.
    fn push_messages(&mut self, messages: Vec<Vec<Piece>>) {
        let n = messages.len();
        for (i, m) in messages.into_iter().enumerate() {
            for p in &m {
                self.push(p.as_ref());
            }
            self.push(PieceRef::Text(if i + 1 == n { CLOSE } else { ",\n" }));
        }
    }

    pub fn new(pieces: Vec<Piece>) -> Self {
        let mut layout = PieceLayout {
            chunks: Vec::new(),
            size: 0,
        };
        for p in &pieces {
            layout.push(p.as_ref());
        }
        layout
    }

    fn push(&mut self, p: PieceRef) {
        if p.len() == 0 {
            return;
        }
        for p in spans(p) {
            let size = self.size;
            self.size += p.len();
            // Neighbouring texts are merged: fewer parts to search.
            if let (PieceRef::Text(t), Some(last)) = (p, self.chunks.last_mut())
                && last.can_extend_text(t)
            {
                Arc::make_mut(last).extend_last_text(t);
                continue;
            }
            match self.chunks.last_mut() {
                Some(last) if last.has_room(p) => Arc::make_mut(last).push(p),
                _ => {
                    let mut chunk = Chunk::starting_at(size);
                    chunk.push(p);
                    self.chunks.push(Arc::new(chunk));
                }
            }
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// (offset in the view, piece), in order.
    pub fn parts(&self) -> impl Iterator<Item = (u64, PieceRef<'_>)> + '_ {
        self.chunks.iter().flat_map(|c| c.parts())
    }

    /// The parts in their shared chunks (see [`grown`](Self::grown)).
    pub fn chunks(&self) -> &[Arc<Chunk>] {
        &self.chunks
    }

    /// Whether every range lies within a file of `size` bytes.
    pub fn fits(&self, size: u64) -> bool {
        self.chunks.iter().flat_map(|c| &c.parts).all(|p| match *p {
            Stored::Range { start, len } => {
                start.checked_add(len as u64).is_some_and(|e| e <= size)
            }
            Stored::Text { .. } => true,
        })
    }

    /// A compact binary form (for a persisted cache): per piece a tag, then a range's
    /// start and length, or a text's length and bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (_, p) in self.parts() {
            match p {
                PieceRef::Range { start, len } => {
                    out.push(0);
                    out.extend_from_slice(&start.to_le_bytes());
                    out.extend_from_slice(&len.to_le_bytes());
                }
                PieceRef::Text(t) => {
                    out.push(1);
                    out.extend_from_slice(&(t.len() as u64).to_le_bytes());
                    out.extend_from_slice(t.as_bytes());
                }
            }
        }
        out
    }

    /// The inverse of `to_bytes`; `None` for anything malformed. This is what
    /// opening a large transcript's view after a remount waits for: each text is
    /// checked and copied into its chunk's string, nothing is allocated per part.
    pub fn from_bytes(mut b: &[u8]) -> Option<Self> {
        let mut layout = PieceLayout {
            chunks: Vec::new(),
            size: 0,
        };
        let num = |b: &mut &[u8]| -> Option<u64> {
            let (n, rest) = b.split_first_chunk::<8>()?;
            *b = rest;
            Some(u64::from_le_bytes(*n))
        };
        while let Some((&tag, rest)) = b.split_first() {
            b = rest;
            let piece = match tag {
                0 => {
                    let start = num(&mut b)?;
                    let len = num(&mut b)?;
                    PieceRef::Range { start, len }
                }
                1 => {
                    let n = usize::try_from(num(&mut b)?).ok()?;
                    let text = b.get(..n)?;
                    b = &b[n..];
                    PieceRef::Text(std::str::from_utf8(text).ok()?)
                }
                _ => return None,
            };
            // What `to_bytes` wrote is already merged; anything else is merged here
            // as `push` merges it.
            layout.push(piece);
        }
        Some(layout)
    }

    /// The parts that cover view bytes `offset..end`, as a read takes them.
    fn covering(&self, offset: u64, end: u64) -> Vec<Part<'_>> {
        let mut want = Vec::new();
        let first = self
            .chunks
            .partition_point(|c| c.start() <= offset)
            .saturating_sub(1);
        let mut pos = offset;
        for chunk in self.chunks.iter().skip(first) {
            for (at, piece) in chunk.parts() {
                if pos >= end {
                    return want;
                }
                if at + piece.len() <= pos {
                    continue;
                }
                let skip = pos - at;
                let take = (piece.len() - skip).min(end - pos);
                want.push(piece.part(skip, take));
                pos += take;
            }
        }
        want
    }
}

impl PieceSnapshot {
    pub fn new(file: File, layout: Arc<PieceLayout>) -> Self {
        // Readers go front to back: let the kernel read ahead further.
        crate::store::open::advise(&file, 0, 0, libc::POSIX_FADV_SEQUENTIAL);
        PieceSnapshot { file, layout }
    }

    /// `conversation.json` of `messages` over `file`.
    pub fn conversation(file: File, messages: Vec<Vec<Piece>>) -> Self {
        Self::new(file, Arc::new(PieceLayout::conversation(messages)))
    }

    pub fn size(&self) -> u64 {
        self.layout.size
    }

    pub fn layout(&self) -> &Arc<PieceLayout> {
        &self.layout
    }

    /// The file its ranges are read from.
    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(offset, len, &mut out)?;
        Ok(out)
    }

    /// Bytes `[offset, offset+len)` into `out` (cleared first): a caller that serves
    /// many reads passes the same buffer, so no read allocates and faults in fresh
    /// pages.
    pub fn read_into(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let end = (offset.saturating_add(len as u64)).min(self.layout.size);
        read_parts(&self.file, &self.layout.covering(offset, end), out)
    }
}

/// Joins pieces against `file`, reading each range with `pread`.
pub fn read_joined(file: &File, pieces: &[Piece]) -> Result<Vec<u8>> {
    let parts: Vec<Part> = pieces
        .iter()
        .map(|p| p.as_ref())
        .map(|p| p.part(0, p.len()))
        .collect();
    let mut out = Vec::new();
    read_parts(file, &parts, &mut out)?;
    Ok(out)
}

/// Joins pieces against a file's bytes held in memory (tests, one-shot tools).
pub fn render(pieces: &[Piece], file: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces {
        match p {
            Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
            Piece::Range { start, len } => {
                let s = (*start as usize).min(file.len());
                let e = s.saturating_add(*len as usize).min(file.len());
                out.extend_from_slice(&file[s..e]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_at_any_offset_equal_the_whole() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"xx{\"a\":1}yy\"hi\"").unwrap();
        let msgs = vec![
            vec![Piece::Range { start: 2, len: 7 }],
            vec![
                Piece::Text("{\"b\":".into()),
                Piece::Range { start: 11, len: 4 },
                Piece::Text("}".into()),
            ],
        ];
        let snap = PieceSnapshot::conversation(f, msgs);
        let whole = snap.read_at(0, 1000).unwrap();
        assert_eq!(whole, b"[\n{\"a\":1},\n{\"b\":\"hi\"}\n]\n");
        assert_eq!(snap.size(), whole.len() as u64);
        for start in 0..whole.len() {
            for len in 0..whole.len() - start + 2 {
                let got = snap.read_at(start as u64, len).unwrap();
                let end = (start + len).min(whole.len());
                assert_eq!(got, &whole[start..end], "{start}+{len}");
            }
        }
        let empty = PieceSnapshot::conversation(tempfile::tempfile().unwrap(), vec![]);
        assert_eq!(empty.read_at(0, 10).unwrap(), b"[]\n");
    }

    /// Messages over a file of `n` bytes: each a text glue around a range, or a
    /// range alone (so a message can end with either).
    fn messages(n: u64, count: usize, seed: u64) -> Vec<Vec<Piece>> {
        (0..count as u64)
            .map(|k| {
                let start = (k * 7 + seed) % (n - 8);
                let range = Piece::Range {
                    start,
                    len: 1 + k % 7,
                };
                match (k + seed) % 3 {
                    0 => vec![range],
                    1 => vec![
                        Piece::Text("{\"a\":".into()),
                        range,
                        Piece::Text("}".into()),
                    ],
                    _ => vec![Piece::Text(format!("\"{k}\"")), range],
                }
            })
            .collect()
    }

    #[test]
    fn a_grown_layout_is_the_layout_of_all_its_messages() {
        let file: Vec<u8> = (0..4096u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&file).unwrap();
        let all = messages(file.len() as u64, 1500, 3);
        // Grown a few messages at a time, from nothing, across many chunks.
        let mut layout = PieceLayout::conversation(Vec::new());
        let mut at = 0;
        for step in [1, 2, 700, 1, 0, 5, 300, 491] {
            let old = layout.clone();
            layout = layout.grown(all[at..at + step].to_vec()).unwrap();
            at += step;
            let whole = PieceLayout::conversation(all[..at].to_vec());
            assert_eq!(layout, whole, "after {at}");
            assert_eq!(layout.size(), whole.size());
            // Only the last chunk is new: the others are the old layout's.
            let shared = old.chunks().len().saturating_sub(1);
            for k in 0..shared.min(layout.chunks().len()) {
                assert!(Arc::ptr_eq(&old.chunks()[k], &layout.chunks()[k]));
            }
        }
        assert!(layout.chunks().len() > 3);
        // Only a last text that itself ends as a conversation does is one: here the
        // chunk's texts end with `\n]\n`, its last part with `]\n`.
        let odd = PieceLayout::new(vec![
            Piece::Text("[\n".into()),
            Piece::Range { start: 0, len: 1 },
            Piece::Text("]\n".into()),
        ]);
        assert!(odd.grown(all[..1].to_vec()).is_none());
        let pieces: Vec<Piece> = layout.parts().map(|(_, p)| p.to_piece()).collect();
        let want = render(&pieces, &file);
        let snap = PieceSnapshot::new(f, Arc::new(layout));
        assert_eq!(snap.read_at(0, want.len() + 10).unwrap(), want);
        // Reads that start and end anywhere, chunk boundaries included.
        let starts = snap.layout().chunks().iter().map(|c| c.start());
        for start in starts.chain([1, 17, want.len() as u64 - 1]) {
            for len in [1, 2, 100, 5000] {
                let end = (start as usize + len).min(want.len());
                assert_eq!(
                    snap.read_at(start, len).unwrap(),
                    &want[start as usize..end]
                );
            }
        }
    }

    #[test]
    fn a_persisted_layout_loads_as_the_layout_it_was() {
        let file: Vec<u8> = (0..4096u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&file).unwrap();
        for count in [0, 1, 2, 511, 512, 513, 1500] {
            let layout = PieceLayout::conversation(messages(file.len() as u64, count, 5));
            let loaded = PieceLayout::from_bytes(&layout.to_bytes()).unwrap();
            assert_eq!(loaded, layout, "{count} messages");
            assert_eq!(loaded.size(), layout.size());
            // Loaded chunks are whole and in order: reads anywhere agree.
            let (a, b) = (
                PieceSnapshot::new(f.try_clone().unwrap(), Arc::new(layout)),
                PieceSnapshot::new(f.try_clone().unwrap(), Arc::new(loaded)),
            );
            let mut out = b"left over from another read".to_vec();
            for start in (0..a.size() + 2).step_by(97) {
                b.read_into(start, 300, &mut out).unwrap();
                assert_eq!(out, a.read_at(start, 300).unwrap(), "{count} at {start}");
            }
        }
        // Texts side by side (not what to_bytes writes) are merged as `new` merges them.
        let parts = vec![
            Piece::Text("[".into()),
            Piece::Text("\n".into()),
            Piece::Range { start: 0, len: 3 },
            Piece::Text(String::new()),
            Piece::Text("]".into()),
        ];
        let odd = PieceLayout::new(parts.clone());
        let mut bytes = Vec::new();
        for p in &parts {
            bytes.extend_from_slice(&PieceLayout::new(vec![p.clone()]).to_bytes());
        }
        assert_eq!(PieceLayout::from_bytes(&bytes).unwrap(), odd);
        assert_eq!(odd.parts().count(), 3);
        assert!(PieceLayout::from_bytes(&[7]).is_none());
        assert!(PieceLayout::from_bytes(&[1, 200, 0, 0, 0, 0, 0, 0, 0, b'x']).is_none());
    }

    #[test]
    fn a_read_spanning_ranges_far_apart_reads_no_more_than_it_needs() {
        // One byte every 60 KiB: within the gap that joins ranges into one read, but
        // a read of them must not read megabytes to copy a few bytes.
        let file: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&file).unwrap();
        let pieces: Vec<Piece> = (0..100u64)
            .map(|k| Piece::Range {
                start: k * 60 * 1024,
                len: 1,
            })
            .collect();
        let layout = PieceLayout::new(pieces.clone());
        let snap = PieceSnapshot::new(f, Arc::new(layout));
        assert_eq!(snap.read_at(0, 100).unwrap(), render(&pieces, &file));
        let largest = crate::views::span_read::LARGEST_SPAN.with(|l| l.get());
        assert!(
            largest <= 2 * 100 + 64 * 1024 + 1,
            "a span of {largest} bytes"
        );
    }

    /// A range longer than a part holds is kept as several, and reads and persists
    /// as the one it was.
    #[test]
    fn a_range_longer_than_a_part_is_split() {
        let len = SPAN as u64 * 2 + 10;
        let layout = PieceLayout::new(vec![
            Piece::Text("[".into()),
            Piece::Range { start: 7, len },
            Piece::Text("]".into()),
        ]);
        assert_eq!(layout.size(), len + 2);
        let parts: Vec<_> = layout.parts().collect();
        assert_eq!(
            parts,
            [
                (0, PieceRef::Text("[")),
                (
                    1,
                    PieceRef::Range {
                        start: 7,
                        len: SPAN as u64
                    }
                ),
                (
                    1 + SPAN as u64,
                    PieceRef::Range {
                        start: 7 + SPAN as u64,
                        len: SPAN as u64
                    }
                ),
                (
                    1 + 2 * SPAN as u64,
                    PieceRef::Range {
                        start: 7 + 2 * SPAN as u64,
                        len: 10
                    }
                ),
                (len + 1, PieceRef::Text("]")),
            ]
        );
        assert_eq!(PieceLayout::from_bytes(&layout.to_bytes()).unwrap(), layout);
        assert!(layout.fits(len + 7) && !layout.fits(len + 6));
        let tail = layout.covering(len - 1, len + 2);
        assert_eq!(tail.len(), 2);
        assert!(matches!(tail[0], Part::File { at, len: 2 } if at == 7 + len - 2));
        assert!(matches!(tail[1], Part::Bytes(b"]")));
    }
}
