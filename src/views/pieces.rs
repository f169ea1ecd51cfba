//! A generated view as pieces: literal text and byte ranges of the source file, read
//! with `pread` when asked for. Another agent's `conversation.json` is served this way,
//! so a large transcript's view costs an index of ranges, not a copy of its bytes.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::unix::fs::FileExt;

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

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Piece::Text(t) => t.len() as u64,
            Piece::Range { len, .. } => *len,
        }
    }
}

/// Where each piece of a generated view goes: shared by every open of the same file
/// state, and small enough to persist (a range is two numbers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieceLayout {
    /// (offset in the view, piece), in order.
    parts: Vec<(u64, Piece)>,
    size: u64,
}

/// An open view made of pieces: its bytes never change (the ranges name bytes of an
/// append-only file, read through the descriptor opened with the snapshot).
pub struct PieceSnapshot {
    file: File,
    layout: std::sync::Arc<PieceLayout>,
}

impl PieceLayout {
    /// `conversation.json` of `messages` (each one JSON object's pieces):
    /// `[\n{…},\n{…}\n]\n`, or `[]\n` when empty.
    pub fn conversation(messages: Vec<Vec<Piece>>) -> Self {
        let mut pieces = Vec::new();
        if messages.is_empty() {
            pieces.push(Piece::Text("[]\n".into()));
        } else {
            pieces.push(Piece::Text("[\n".into()));
            let n = messages.len();
            for (i, m) in messages.into_iter().enumerate() {
                pieces.extend(m);
                pieces.push(Piece::Text(if i + 1 == n { "\n]\n" } else { ",\n" }.into()));
            }
        }
        Self::new(pieces)
    }

    pub fn new(pieces: Vec<Piece>) -> Self {
        let mut parts = Vec::with_capacity(pieces.len());
        let mut size = 0;
        for p in pieces {
            let len = p.len();
            if len == 0 {
                continue;
            }
            // Neighbouring texts are merged: fewer parts to search.
            if let (Piece::Text(t), Some((_, Piece::Text(last)))) = (&p, parts.last_mut()) {
                last.push_str(t);
            } else {
                parts.push((size, p));
            }
            size += len;
        }
        PieceLayout { parts, size }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// (offset in the view, piece), in order.
    pub fn parts(&self) -> &[(u64, Piece)] {
        &self.parts
    }

    /// Whether every range lies within a file of `size` bytes.
    pub fn fits(&self, size: u64) -> bool {
        self.parts.iter().all(|(_, p)| match p {
            Piece::Range { start, len } => start.checked_add(*len).is_some_and(|e| e <= size),
            Piece::Text(_) => true,
        })
    }

    /// A compact binary form (for a persisted cache): per piece a tag, then a range's
    /// start and length, or a text's length and bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.parts.len() * 17);
        for (_, p) in &self.parts {
            match p {
                Piece::Range { start, len } => {
                    out.push(0);
                    out.extend_from_slice(&start.to_le_bytes());
                    out.extend_from_slice(&len.to_le_bytes());
                }
                Piece::Text(t) => {
                    out.push(1);
                    out.extend_from_slice(&(t.len() as u64).to_le_bytes());
                    out.extend_from_slice(t.as_bytes());
                }
            }
        }
        out
    }

    /// The inverse of `to_bytes`; `None` for anything malformed.
    pub fn from_bytes(mut b: &[u8]) -> Option<Self> {
        let mut pieces = Vec::new();
        let num = |b: &mut &[u8]| -> Option<u64> {
            let (n, rest) = b.split_first_chunk::<8>()?;
            *b = rest;
            Some(u64::from_le_bytes(*n))
        };
        while let Some((&tag, rest)) = b.split_first() {
            b = rest;
            match tag {
                0 => {
                    let start = num(&mut b)?;
                    let len = num(&mut b)?;
                    pieces.push(Piece::Range { start, len });
                }
                1 => {
                    let n = usize::try_from(num(&mut b)?).ok()?;
                    let text = b.get(..n)?;
                    pieces.push(Piece::Text(String::from_utf8(text.to_vec()).ok()?));
                    b = &b[n..];
                }
                _ => return None,
            }
        }
        Some(Self::new(pieces))
    }
}

impl PieceSnapshot {
    pub fn new(file: File, layout: std::sync::Arc<PieceLayout>) -> Self {
        // Readers go front to back: let the kernel read ahead further.
        // SAFETY: a valid descriptor; advice only.
        unsafe {
            libc::posix_fadvise(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
                0,
                libc::POSIX_FADV_SEQUENTIAL,
            )
        };
        PieceSnapshot { file, layout }
    }

    /// `conversation.json` of `messages` over `file`.
    pub fn conversation(file: File, messages: Vec<Vec<Piece>>) -> Self {
        Self::new(
            file,
            std::sync::Arc::new(PieceLayout::conversation(messages)),
        )
    }

    pub fn size(&self) -> u64 {
        self.layout.size
    }

    pub fn layout(&self) -> &std::sync::Arc<PieceLayout> {
        &self.layout
    }

    /// The file its ranges are read from.
    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let parts = &self.layout.parts;
        let end = (offset.saturating_add(len as u64)).min(self.layout.size);
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        // The parts to copy: (index, skip, take).
        let mut want = Vec::new();
        let mut i = parts
            .partition_point(|(at, _)| *at <= offset)
            .saturating_sub(1);
        let mut pos = offset;
        while pos < end && i < parts.len() {
            let (at, piece) = &parts[i];
            let skip = pos - at;
            let take = (piece.len() - skip).min(end - pos);
            want.push((i, skip, take));
            pos += take;
            i += 1;
        }
        // Ranges of a transcript sit close together (a message's role and content, the
        // next message's line): a run of them is read with one `pread` of its span.
        const GAP: u64 = 64 * 1024;
        let mut k = 0;
        while k < want.len() {
            let (i, skip, take) = want[k];
            match &parts[i].1 {
                Piece::Text(t) => {
                    out.extend_from_slice(&t.as_bytes()[skip as usize..(skip + take) as usize]);
                    k += 1;
                }
                Piece::Range { start, .. } => {
                    let span_start = start + skip;
                    let mut span_end = span_start + take;
                    let mut last = k;
                    for (j, &(pj, sj, tj)) in want.iter().enumerate().skip(k + 1) {
                        match &parts[pj].1 {
                            Piece::Range { start, .. } => {
                                let s = start + sj;
                                if s < span_end || s - span_end > GAP {
                                    break;
                                }
                                span_end = s + tj;
                                last = j;
                            }
                            Piece::Text(_) => {}
                        }
                    }
                    let mut buf = vec![0u8; (span_end - span_start) as usize];
                    self.file
                        .read_exact_at(&mut buf, span_start)
                        .map_err(|e| Error::io("read transcript", &e))?;
                    for &(pj, sj, tj) in &want[k..=last] {
                        match &parts[pj].1 {
                            Piece::Text(t) => out
                                .extend_from_slice(&t.as_bytes()[sj as usize..(sj + tj) as usize]),
                            Piece::Range { start, .. } => {
                                let a = (start + sj - span_start) as usize;
                                out.extend_from_slice(&buf[a..a + tj as usize]);
                            }
                        }
                    }
                    k = last + 1;
                }
            }
        }
        Ok(out)
    }
}

/// Joins pieces against `file`, reading each range with `pread`.
pub fn read_joined(file: &File, pieces: &[Piece]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(pieces.iter().map(|p| p.len() as usize).sum());
    for p in pieces {
        match p {
            Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
            Piece::Range { start, len } => {
                let at = out.len();
                out.resize(at + *len as usize, 0);
                file.read_exact_at(&mut out[at..], *start)
                    .map_err(|e| Error::io("read session file", &e))?;
            }
        }
    }
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
}
