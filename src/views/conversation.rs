//! `conversation.json` as a snapshot: a small literal head (`[\n`, plus the summary or
//! replacement messages of a compaction), then byte ranges of the append-only
//! transcript, then `]\n`. Opening it copies nothing; a snapshot stays valid forever
//! because the ranges it names are never rewritten.

use super::span_read::{Part, read_parts};
use crate::error::{Error, Result};
use crate::store::index::{
    CompactionForm, CompactionRec, MessageTable, SessionIndex, synthetic_summary_message,
};
use crate::store::line::{Body, CompactionFields, Line, parse_line};
use crate::store::projection::Projection;
use std::fs::File;
use std::os::unix::fs::FileExt;

pub struct ConversationSnapshot {
    file: File,
    head: Vec<u8>,
    table: MessageTable,
    from: usize,
    to: usize,
    /// `out_end` of the message before `from` (0 at the start).
    base_out: u64,
    size: u64,
}

/// Reads one whole transcript line at a known offset (compactions at render time).
pub fn read_line_at(file: &File, start: u64, len: u64) -> Result<String> {
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, start)
        .map_err(|e| Error::io("read transcript", &e))?;
    String::from_utf8(buf).map_err(|_| Error::new(libc::EIO, "transcript line changed under us"))
}

/// Reads and re-parses the latest valid compaction's line (the index keeps only where
/// it is), and hands its fields to `f`; `None` when there is no valid compaction.
fn with_latest_compaction<T>(
    index: &SessionIndex,
    file: &File,
    f: impl FnOnce(&CompactionRec, CompactionFields<'_>) -> Result<T>,
) -> Result<Option<T>> {
    let Some(ci) = index.latest_valid_compaction else {
        return Ok(None);
    };
    let c = &index.compactions[ci];
    let line = read_line_at(file, c.line_start, c.line_len)?;
    let Line::Entry(entry) = parse_line(line.trim_start_matches(['\u{feff}', '\0'])) else {
        return Err(Error::new(libc::EIO, "compaction line no longer parses"));
    };
    let Body::Compaction(fields) = entry.body else {
        return Err(Error::new(libc::EIO, "compaction line changed"));
    };
    f(c, fields).map(Some)
}

/// The literal items a compaction puts before the kept messages.
fn head_items(index: &SessionIndex, file: &File) -> Result<Vec<String>> {
    let items = with_latest_compaction(index, file, |c, fields| {
        Ok(match c.validity {
            Ok(CompactionForm::Replacement(_)) => match fields.messages {
                Some(Ok(items)) => items.iter().map(|i| i.get().to_string()).collect(),
                _ => return Err(Error::new(libc::EIO, "compaction messages changed")),
            },
            _ => vec![synthetic_summary_message(
                &fields.summary.unwrap_or_default(),
            )],
        })
    })?;
    Ok(items.unwrap_or_default())
}

/// The text of the latest valid compaction's summary, for people.
pub fn latest_summary(index: &SessionIndex, file: &File) -> Result<Option<String>> {
    Ok(with_latest_compaction(index, file, |_, fields| Ok(fields.summary))?.flatten())
}

impl ConversationSnapshot {
    /// Takes a snapshot of the projection as the index sees the file now. `file` must
    /// be a descriptor of the same transcript (kept: it outlives renames and deletes).
    pub fn new(index: &SessionIndex, file: File) -> Result<Self> {
        let proj = Projection::of(index);
        let items = head_items(index, &file)?;
        let kept = proj.to - proj.from;
        let mut head = Vec::new();
        if items.is_empty() && kept == 0 {
            head.extend_from_slice(b"[]\n");
        } else {
            head.extend_from_slice(b"[\n");
            for (i, item) in items.iter().enumerate() {
                head.extend_from_slice(item.as_bytes());
                let last = i + 1 == items.len() && kept == 0;
                head.extend_from_slice(if last { b"\n" } else { b",\n" });
            }
        }
        let table = index.messages.clone();
        let (base_out, size) = {
            let t = table.read().unwrap();
            let base = if proj.from == 0 {
                0
            } else {
                t[proj.from - 1].out_end
            };
            let body = if kept > 0 {
                t[proj.to - 1].out_end - base - 1
            } else {
                0
            };
            let trailer = if head.as_slice() == b"[]\n" { 0 } else { 2 };
            (base, head.len() as u64 + body + trailer)
        };
        Ok(ConversationSnapshot {
            file,
            head,
            table,
            from: proj.from,
            to: proj.to,
            base_out,
            size,
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// What the bytes are made of: the message table, the head, the kept messages
    /// `from..to` and the table's running offset before `from` (`views::version`).
    pub fn parts(&self) -> (&MessageTable, &[u8], usize, usize, u64) {
        (&self.table, &self.head, self.from, self.to, self.base_out)
    }

    /// Bytes `[offset, offset+len)` of the rendered view.
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(offset, len, &mut out)?;
        Ok(out)
    }

    /// The same into `out`, cleared first (see `PieceSnapshot::read_into`).
    pub fn read_into(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let end = (offset + len as u64).min(self.size);
        out.reserve(end.saturating_sub(offset) as usize);
        let mut pos = offset;
        let head_len = self.head.len() as u64;
        if pos < head_len {
            let stop = end.min(head_len);
            out.extend_from_slice(&self.head[pos as usize..stop as usize]);
            pos = stop;
        }
        if pos >= end {
            return Ok(());
        }
        let body_end = self.size
            - if self.head.as_slice() == b"[]\n" {
                0
            } else {
                2
            };
        if pos < body_end {
            let stop = end.min(body_end);
            self.read_messages(pos - head_len, stop - head_len, out)?;
            pos = stop;
        }
        if pos < end {
            let trailer = b"]\n";
            let t0 = (pos - body_end) as usize;
            let t1 = (end - body_end) as usize;
            out.extend_from_slice(&trailer[t0..t1]);
        }
        Ok(())
    }

    /// Body bytes `[lo, hi)` (offsets relative to the first kept message).
    fn read_messages(&self, lo: u64, hi: u64, out: &mut Vec<u8>) -> Result<()> {
        let table = self.table.read().unwrap();
        let msgs = &table[self.from..self.to];
        let rel_end = |i: usize| msgs[i].out_end - self.base_out;
        let first = msgs.partition_point(|m| m.out_end - self.base_out <= lo);
        // Parts: (file offset, len) of message bytes, or a separator.
        let mut pieces: Vec<Part> = Vec::new();
        let mut i = first;
        let mut pos = lo;
        while pos < hi && i < msgs.len() {
            let m = &msgs[i];
            let start_rel = rel_end(i) - (m.len as u64 + 2);
            let in_msg = pos - start_rel;
            if in_msg < m.len as u64 {
                let take = (m.len as u64 - in_msg).min(hi - pos);
                pieces.push(Part::File {
                    at: m.start + in_msg,
                    len: take as usize,
                });
                pos += take;
            }
            if pos >= hi {
                break;
            }
            let sep: &'static [u8] = if i + 1 == msgs.len() { b"\n" } else { b",\n" };
            let sep_off = (pos - start_rel - m.len as u64) as usize;
            let take = (sep.len() - sep_off).min((hi - pos) as usize);
            pieces.push(Part::Bytes(&sep[sep_off..sep_off + take]));
            pos += take as u64;
            i += 1;
        }
        drop(table);
        read_parts(&self.file, &pieces, out)
    }
}
