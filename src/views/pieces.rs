//! A generated view as pieces: literal text and byte ranges of the source file, read
//! with `pread` when asked for. Another agent's `conversation.json` is served this way,
//! so a large transcript's view costs an index of ranges, not a copy of its bytes.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// One part of a generated JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// An open view made of pieces: its bytes never change (the ranges name bytes of an
/// append-only file, read through the descriptor opened with the snapshot).
pub struct PieceSnapshot {
    file: File,
    /// (offset in the view, piece), in order.
    parts: Vec<(u64, Piece)>,
    size: u64,
}

impl PieceSnapshot {
    /// `conversation.json` of `messages` (each one JSON object's pieces):
    /// `[\n{…},\n{…}\n]\n`, or `[]\n` when empty.
    pub fn conversation(file: File, messages: Vec<Vec<Piece>>) -> Self {
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
        Self::new(file, pieces)
    }

    pub fn new(file: File, pieces: Vec<Piece>) -> Self {
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
        PieceSnapshot { file, parts, size }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let end = (offset.saturating_add(len as u64)).min(self.size);
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let mut i = self.parts.partition_point(|(at, _)| *at <= offset).saturating_sub(1);
        let mut pos = offset;
        while pos < end && i < self.parts.len() {
            let (at, piece) = &self.parts[i];
            let skip = pos - at;
            let take = (piece.len() - skip).min(end - pos);
            match piece {
                Piece::Text(t) => {
                    out.extend_from_slice(&t.as_bytes()[skip as usize..(skip + take) as usize])
                }
                Piece::Range { start, .. } => {
                    let from = out.len();
                    out.resize(from + take as usize, 0);
                    self.file
                        .read_exact_at(&mut out[from..], start + skip)
                        .map_err(|e| Error::io("read transcript", &e))?;
                }
            }
            pos += take;
            i += 1;
        }
        Ok(out)
    }
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
