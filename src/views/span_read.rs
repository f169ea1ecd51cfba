//! A read of a view made of parts: bytes it holds, and ranges of the session's
//! append-only file. Both kinds of view over a transcript (fen's `conversation.json`,
//! `ConversationSnapshot`; another agent's, `PieceSnapshot`) read through here, once
//! per request of the mount.
//!
//! Ranges of a transcript sit close together (a message's role and content, the next
//! message's line): a run of them is read with one call, a *span*, straight into the
//! reply (`preadv`: each range into its place, the bytes between two ranges into a
//! small scratch buffer). No span reads much more than the request copies. Nothing is
//! allocated per request: a buffer made and zeroed for each span, freed after, cost a
//! third of a 44 MB `conversation.json` read's CPU in page faults, zeroing and the
//! TLB flushes of giving it back (`perf`, issue 35 row 3f).

use crate::error::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// A part of what a read returns.
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    /// Bytes the view holds.
    Bytes(&'a [u8]),
    /// `len` bytes of the file from offset `at`.
    File { at: u64, len: usize },
}

impl Part<'_> {
    fn len(&self) -> usize {
        match self {
            Part::Bytes(b) => b.len(),
            Part::File { len, .. } => *len,
        }
    }
}

/// Ranges at most this far apart are read with one call.
const GAP: u64 = 64 * 1024;

/// The largest span buffer a thread keeps between reads.
const SPAN_KEPT: usize = 1 << 20;

/// Linux's limit on the parts of one `preadv` (`UIO_MAXIOV`).
const MAX_IOV: usize = 1024;

thread_local! {
    /// A `preadv`'s parts, and where the bytes between two ranges go.
    static SCATTER: std::cell::RefCell<(Vec<libc::iovec>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
    /// A span read whole, when it cannot be scattered: one per request thread, grown
    /// to the largest span and reused.
    static SPAN: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    pub static LARGEST_SPAN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Spans read straight into the reply, and spans read whole then copied.
    pub static SPAN_READS: std::cell::Cell<(usize, usize)> =
        const { std::cell::Cell::new((0, 0)) };
}

/// `parts` joined, appended to `out`, the ranges read from `file`.
pub fn read_parts(file: &File, parts: &[Part], out: &mut Vec<u8>) -> Result<()> {
    let total: usize = parts.iter().map(Part::len).sum();
    out.reserve(total);
    // No span reads much more than the request copies (ranges of a byte far apart).
    let max_span = 2 * total as u64 + GAP;
    let mut k = 0;
    while k < parts.len() {
        let (span_start, len) = match parts[k] {
            Part::Bytes(b) => {
                out.extend_from_slice(b);
                k += 1;
                continue;
            }
            Part::File { at, len } => (at, len),
        };
        let mut span_end = span_start + len as u64;
        let mut last = k;
        for (j, p) in parts.iter().enumerate().skip(k + 1) {
            if let Part::File { at, len } = *p {
                if at < span_end || at - span_end > GAP || at + len as u64 - span_start > max_span {
                    break;
                }
                span_end = at + len as u64;
                last = j;
            }
        }
        let run = &parts[k..=last];
        let n = (span_end - span_start) as usize;
        #[cfg(test)]
        LARGEST_SPAN.with(|l| l.set(l.get().max(n)));
        let scattered = scatter(file, run, span_start, n, out)?;
        if !scattered {
            read_whole(file, run, span_start, n, out)?;
        }
        #[cfg(test)]
        SPAN_READS.with(|c| {
            let (a, b) = c.get();
            c.set(if scattered { (a + 1, b) } else { (a, b + 1) });
        });
        k = last + 1;
    }
    Ok(())
}

/// A span's parts appended to `out` with one `preadv`. `false` when it cannot (more
/// parts than one call takes, a short read): nothing was appended.
fn scatter(
    file: &File,
    run: &[Part],
    span_start: u64,
    n: usize,
    out: &mut Vec<u8>,
) -> Result<bool> {
    let total: usize = run.iter().map(Part::len).sum();
    let base = out.len();
    out.reserve(total);
    SCATTER.with_borrow_mut(|(iov, scratch)| {
        iov.clear();
        if scratch.len() < GAP as usize {
            scratch.resize(GAP as usize, 0);
        }
        let dst = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
        let mut done = 0usize;
        let mut pos = span_start;
        for part in run {
            match *part {
                Part::Bytes(b) => {
                    // SAFETY: `done + b.len() <= total`, within the capacity reserved
                    // above; `b` is not in `out`.
                    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), dst.add(done), b.len()) };
                }
                Part::File { at, len } => {
                    // A run's ranges come in file order, at most `GAP` apart.
                    if at > pos {
                        iov.push(libc::iovec {
                            iov_base: scratch.as_mut_ptr().cast(),
                            iov_len: (at - pos) as usize,
                        });
                    }
                    iov.push(libc::iovec {
                        // SAFETY: as above.
                        iov_base: unsafe { dst.add(done) }.cast(),
                        iov_len: len,
                    });
                    pos = at + len as u64;
                }
            }
            done += part.len();
        }
        if iov.len() > MAX_IOV || pos - span_start != n as u64 {
            return Ok(false);
        }
        // SAFETY: every part points into `out`'s reserved capacity or the scratch
        // buffer, each for its length; the descriptor is open.
        let got = unsafe {
            libc::preadv(
                file.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                span_start as libc::off_t,
            )
        };
        if got < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(Error::io("read transcript", &e));
        }
        if got as usize != n {
            return Ok(false);
        }
        // SAFETY: all `total` bytes after `base` were written above: the held bytes
        // by copy, the ranges by the read.
        unsafe { out.set_len(base + total) };
        Ok(true)
    })
}

/// A span read whole into the thread's span buffer, its parts copied to `out`.
fn read_whole(
    file: &File,
    run: &[Part],
    span_start: u64,
    n: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    SPAN.with_borrow_mut(|held| -> Result<()> {
        if held.len() < n {
            held.resize(n, 0);
        }
        let buf = &mut held[..n];
        file.read_exact_at(buf, span_start)
            .map_err(|e| Error::io("read transcript", &e))?;
        for part in run {
            match *part {
                Part::Bytes(b) => out.extend_from_slice(b),
                Part::File { at, len } => {
                    let a = (at - span_start) as usize;
                    out.extend_from_slice(&buf[a..a + len]);
                }
            }
        }
        // A rare huge span is not held on to by the thread.
        if held.len() > SPAN_KEPT {
            *held = Vec::new();
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn render(parts: &[Part], file: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            match *p {
                Part::Bytes(b) => out.extend_from_slice(b),
                Part::File { at, len } => {
                    out.extend_from_slice(&file[at as usize..at as usize + len])
                }
            }
        }
        out
    }

    #[test]
    fn a_span_read_straight_into_the_reply_or_whole_gives_the_same_bytes() {
        let file: Vec<u8> = (0..1u32 << 20).map(|i| b'a' + (i % 26) as u8).collect();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&file).unwrap();
        let labels: Vec<String> = (0..300).map(|k| format!("<{k}>")).collect();
        let mut parts = Vec::new();
        // Ranges a few bytes apart with bytes between them: one `preadv` a span.
        for (k, l) in labels.iter().enumerate() {
            parts.push(Part::Bytes(l.as_bytes()));
            parts.push(Part::File {
                at: k as u64 * 97,
                len: 1 + k % 50,
            });
        }
        // More ranges in one span than one call takes: read whole.
        for k in 0..3000u64 {
            parts.push(Part::File {
                at: 100_000 + k * 3,
                len: 1,
            });
        }
        // A range before the last (a new span), and a range up to the file's end.
        parts.push(Part::File { at: 5, len: 10 });
        parts.push(Part::File {
            at: (1 << 20) - 7,
            len: 7,
        });
        SPAN_READS.with(|c| c.set((0, 0)));
        let mut out = b"kept".to_vec();
        read_parts(&f, &parts, &mut out).unwrap();
        assert_eq!(&out[..4], b"kept");
        assert_eq!(&out[4..], render(&parts, &file));
        let (scattered, whole) = SPAN_READS.with(|c| c.get());
        assert!(scattered > 0 && whole > 0, "{scattered} {whole}");
        // A range past the end of the file is an error, both ways.
        for len in [1, 2] {
            let past = [Part::File {
                at: (1 << 20) - 1,
                len,
            }];
            let r = read_parts(&f, &past, &mut Vec::new());
            assert_eq!(r.is_ok(), len == 1, "{len}");
        }
    }
}
