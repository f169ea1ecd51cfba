//! Cache files in `.fen-cache`: replaced atomically (temp file in the same folder,
//! then rename) and read back, always by walking from the store root without
//! following a link or opening anything but a folder or a regular file.

use super::layout::CacheFile;
use super::open::Dir;

fn dirs(c: &CacheFile) -> Vec<&str> {
    c.dirs.iter().map(String::as_str).collect()
}

/// Best effort, as befits a cache: failures are logged, never raised.
pub fn replace_file(c: &CacheFile, bytes: &[u8]) {
    replace_file_with(c, |f| std::io::Write::write_all(f, bytes));
}

/// `replace_file` of what `write` writes (`Dir::replace_file_with`).
pub fn replace_file_with(
    c: &CacheFile,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) {
    let written = Dir::open_root(&c.root)
        .and_then(|root| root.walk_create(&dirs(c)))
        .and_then(|d| d.replace_file_with(&c.name, write));
    if let Err(e) = written {
        log::warn!("cache file {}: {e}", c.path().display());
    }
}

/// Removes a cache file (best effort: a missing one is fine).
pub fn remove_file(c: &CacheFile) {
    let _ = Dir::open_root(&c.root)
        .and_then(|root| root.walk(&dirs(c)))
        .and_then(|d| d.unlink(&c.name));
}

/// The cache file's bytes, if it is a regular file of at most `max` bytes reached
/// through folders only; `None` for anything else (the caller rebuilds).
pub fn read_file(c: &CacheFile, max: u64) -> Option<Vec<u8>> {
    let read = Dir::open_root(&c.root)
        .and_then(|root| root.walk(&dirs(c)))
        .and_then(|d| d.read_file(&c.name, max));
    match read {
        Ok(b) => Some(b),
        Err(e) => {
            if e.raw_os_error() != Some(libc::ENOENT) {
                log::warn!("cache file {} ignored: {e}", c.path().display());
            }
            None
        }
    }
}

/// A checksum cache files carry over their own content, and the content check of a
/// transcript's head and tail (stable across builds, unlike `DefaultHasher`). Eight
/// bytes a step: it runs on every append, where FNV's byte loop showed up in profiles.
pub fn checksum(parts: &[&[u8]]) -> u64 {
    let mix = checksum_mix;
    let mut h: u64 = CHECKSUM_SEED;
    for p in parts {
        let mut words = p.chunks_exact(8);
        for w in &mut words {
            h = mix(h, u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        for &b in words.remainder() {
            h = mix(h, b as u64);
        }
        // Where one part ends matters: ("ab", "c") is not ("a", "bc").
        h = mix(h, p.len() as u64);
    }
    checksum_fold(h)
}

const CHECKSUM_K: u64 = 0x9e37_79b9_7f4a_7c15;
const CHECKSUM_SEED: u64 = 0xcbf2_9ce4_8422_2325;

fn checksum_fold(h: u64) -> u64 {
    h ^ (h >> 32)
}

fn checksum_mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(CHECKSUM_K).rotate_left(29)
}

/// `checksum` taken a piece at a time: the pieces of one part may be cut anywhere
/// (a cache streamed to disk is summed as it is written).
pub struct Checksum {
    h: u64,
    /// Bytes of the current part not yet taken as a word (fewer than 8).
    pending: [u8; 8],
    pending_len: usize,
    part_len: u64,
}

impl Default for Checksum {
    fn default() -> Self {
        Self::new()
    }
}

impl Checksum {
    pub fn new() -> Self {
        Checksum {
            h: CHECKSUM_SEED,
            pending: [0; 8],
            pending_len: 0,
            part_len: 0,
        }
    }

    /// More bytes of the current part.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.part_len += bytes.len() as u64;
        if self.pending_len > 0 {
            let take = (8 - self.pending_len).min(bytes.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&bytes[..take]);
            self.pending_len += take;
            bytes = &bytes[take..];
            if self.pending_len < 8 {
                return;
            }
            self.h = checksum_mix(self.h, u64::from_le_bytes(self.pending));
            self.pending_len = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.h = checksum_mix(self.h, u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    /// Ends the current part: where one part ends matters.
    pub fn end_part(&mut self) {
        for &b in &self.pending[..self.pending_len] {
            self.h = checksum_mix(self.h, b as u64);
        }
        self.h = checksum_mix(self.h, self.part_len);
        self.pending_len = 0;
        self.part_len = 0;
    }

    /// The checksum of the parts ended so far.
    pub fn finish(&self) -> u64 {
        checksum_fold(self.h)
    }
}

/// A writer that sums what goes through it as one part (`Checksum`).
struct SummingWriter<W> {
    inner: W,
    sum: Checksum,
}

/// Writes a body to `f` through `write`, buffered, and returns its `checksum` (as
/// one part), taken as it went: a large cache is summed without being held whole.
pub fn write_summed(
    f: &mut std::fs::File,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    use std::io::Write;
    let mut body = SummingWriter {
        inner: std::io::BufWriter::with_capacity(64 << 10, f),
        sum: Checksum::new(),
    };
    write(&mut body)?;
    body.flush()?;
    body.sum.end_part();
    Ok(body.sum.finish())
}

impl<W: std::io::Write> std::io::Write for SummingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod checksum_tests {
    use super::*;

    #[test]
    fn a_part_summed_in_pieces_cut_anywhere_is_summed_as_whole() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 300] {
            let whole = checksum(&[&data[..len]]);
            for cut in [1, 2, 3, 5, 8, 13, 64] {
                let mut h = Checksum::new();
                for piece in data[..len].chunks(cut) {
                    h.update(piece);
                }
                h.end_part();
                assert_eq!(h.finish(), whole, "{len} bytes in pieces of {cut}");
            }
        }
        // Parts are parts: ("ab", "c") is not ("a", "bc").
        let mut h = Checksum::new();
        h.update(b"ab");
        h.end_part();
        h.update(b"c");
        h.end_part();
        assert_eq!(h.finish(), checksum(&[b"ab", b"c"]));
        assert_ne!(h.finish(), checksum(&[b"a", b"bc"]));
    }
}
