//! Readers following their files: a file that grew is fed to its reader from where it
//! stopped, the reader being in memory (a few recent ones) or its state saved in fen's
//! cache, used only when it proves it belongs to the file's bytes.

use super::{ForeignSource, MAX_CACHE_BYTES, PERSIST_MIN};
use crate::error::{Error, Result};
use crate::sources::agents;
use crate::sources::foreign::ForeignReader;
use crate::store::index::{FileStamp, ParsedEnds, content_check};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Readers kept in memory (each holds per-entry records, not contents): the files in
/// use. The others' states are on disk, so this only saves loading them.
const READERS_IN_MEMORY: usize = 8;

/// Files at least this large keep their reader's state on disk when it leaves memory
/// (the first index saves those of `PERSIST_MIN` or more): a smaller one is read
/// again in under a millisecond.
const STATE_MIN: u64 = 256 << 10;

/// How much of a file one `read` takes while feeding a reader.
const CHUNK: usize = 2 << 20;

/// The readers in memory, with the use counter that tells the oldest.
#[derive(Default)]
pub(super) struct Readers {
    tick: u64,
    pub(super) following: HashMap<PathBuf, Following>,
}

/// A reader that has consumed a file up to `consumed`, for following appends.
pub(super) struct Following {
    /// The file's stamp when it was last fed (default: never fed).
    stamp: FileStamp,
    consumed: u64,
    pub(super) tail: Vec<u8>,
    pub(super) reader: Box<dyn ForeignReader>,
    used: u64,
    /// `content_check` of the consumed bytes, taken when they were fed: what a saved
    /// state must match to be used.
    proof: Option<u64>,
    /// Fed since its state was last saved or loaded.
    unsaved: bool,
    /// The first and last bytes of all it has read (`consumed` and `tail`), kept from
    /// the bytes as they were read: a file that grew is read on only if it still
    /// starts and ends there with them (an agent may rewrite a file in place, longer:
    /// pi migrating an old session).
    ends: ParsedEnds,
}

impl Following {
    pub(super) fn new(reader: Box<dyn ForeignReader>) -> Self {
        Following {
            stamp: FileStamp::default(),
            consumed: 0,
            tail: Vec::new(),
            reader,
            used: 0,
            proof: None,
            unsaved: true,
            ends: ParsedEnds::default(),
        }
    }

    /// Whether the open `file`, now at `stamp`, is this one, unchanged or grown by
    /// appends (for a reader that follows them): same file, not shorter, and the
    /// bytes read so far still there (their first and last 4 KiB).
    pub(super) fn follows(&self, file: &File, stamp: FileStamp) -> bool {
        if stamp == self.stamp {
            return true;
        }
        self.stamp.dev == stamp.dev
            && self.stamp.ino == stamp.ino
            && stamp.size > self.stamp.size
            && self.reader.follows_appends()
            && content_check(file, self.ends.covered_len()).is_ok_and(|c| c == self.ends.hash())
    }
}

/// Where a reader goes after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    /// Into memory (a file in use: its next append is read from there).
    Memory,
    /// To disk at once (the first index reads every file once).
    Disk,
}

impl ForeignSource {
    pub(super) fn new_reader(&self, path: &Path) -> Box<dyn ForeignReader> {
        // A kept copy is read as the file it was kept from (its name says its format).
        agents::reader_for_path(self.agent, &self.source_path_of(path))
    }

    /// Feeds `path` through its reader, from where it last stopped if the file only
    /// grew since (the reader in memory, else its state saved on disk); returns the
    /// open file, its stamp, and the result of `f` on the reader and the unterminated
    /// tail.
    pub(super) fn with_reader<T>(
        &self,
        path: &Path,
        f: impl FnOnce(&dyn ForeignReader, &[u8]) -> T,
    ) -> Result<(File, FileStamp, T)> {
        self.with_reader_kept(path, Keep::Memory, f)
    }

    pub(super) fn with_reader_kept<T>(
        &self,
        path: &Path,
        keep: Keep,
        f: impl FnOnce(&dyn ForeignReader, &[u8]) -> T,
    ) -> Result<(File, FileStamp, T)> {
        let (mut file, stamp) = self.open_bytes(path)?;
        let cached = self.readers.lock().unwrap().following.remove(path);
        let mut following = match cached {
            Some(c) if c.follows(&file, stamp) => c,
            _ => self
                .load_state(path, &file, stamp)
                .unwrap_or_else(|| Following::new(self.new_reader(path))),
        };
        if following.stamp != stamp {
            let before = following.consumed;
            feed(&mut file, &mut following, stamp.size)?;
            following.stamp = stamp;
            if following.consumed != before {
                following.unsaved = true;
                following.proof = None;
            }
            if following.proof.is_none() && stamp.size >= STATE_MIN && following.consumed > 0 {
                following.proof = content_check(&file, following.consumed).ok();
            }
        }
        let out = f(following.reader.as_ref(), &following.tail);
        match keep {
            // The first index saves only large files' states: creating a cache
            // file per session was a tenth of its CPU. A smaller file is read whole
            // once if it grows, then its reader is kept like any other.
            Keep::Disk if stamp.size >= PERSIST_MIN => self.save_state(path, &mut following),
            Keep::Disk => {}
            Keep::Memory => {
                let evicted = {
                    let mut readers = self.readers.lock().unwrap();
                    readers.tick += 1;
                    following.used = readers.tick;
                    readers.following.insert(path.to_path_buf(), following);
                    let oldest = (readers.following.len() > READERS_IN_MEMORY)
                        .then(|| {
                            readers
                                .following
                                .iter()
                                .min_by_key(|(_, f)| f.used)
                                .map(|(p, _)| p.clone())
                        })
                        .flatten();
                    oldest.and_then(|p| readers.following.remove_entry(&p))
                };
                // Its state goes to disk, so the next append is still read alone.
                if let Some((p, mut f)) = evicted {
                    self.save_state(&p, &mut f);
                }
            }
        }
        Ok((file, stamp, out))
    }

    pub(super) fn state_cache_path(&self, path: &Path) -> Option<crate::store::layout::CacheFile> {
        let root = self.fen_root.as_ref()?;
        Some(crate::store::layout::foreign_reader_cache(
            root,
            self.agent.name(),
            path,
        ))
    }

    /// The saved state of `path`'s reader, if it proves it belongs to the file's
    /// bytes: same file (device, inode), the consumed part still there with the same
    /// head and tail, intact checksum, and the reader takes it back.
    pub(super) fn load_state(
        &self,
        path: &Path,
        file: &File,
        stamp: FileStamp,
    ) -> Option<Following> {
        if stamp.size < STATE_MIN {
            return None;
        }
        let cache = self.state_cache_path(path)?;
        let bytes = crate::store::atomic::read_file(&cache, MAX_CACHE_BYTES)?;
        let nl = bytes.iter().position(|&b| b == b'\n')?;
        let head: StateHead = serde_json::from_slice(&bytes[..nl]).ok()?;
        let body = &bytes[nl + 1..];
        let valid = head.version == STATE_VERSION
            && head.path == path
            && head.dev == stamp.dev
            && head.ino == stamp.ino
            && head.consumed <= stamp.size
            && head.checksum == crate::store::atomic::checksum(&[body]);
        if !valid {
            return None;
        }
        let ends = ParsedEnds::read(file, head.consumed).ok()?;
        if ends.hash() != head.edges {
            return None;
        }
        let mut reader = self.new_reader(path);
        if head.consumed != stamp.size && !reader.follows_appends() || !reader.restore_state(body) {
            return None;
        }
        Some(Following {
            consumed: head.consumed,
            proof: Some(head.edges),
            unsaved: false,
            ends,
            ..Following::new(reader)
        })
    }

    /// Saves the state of a large file's reader that was fed since it was last saved
    /// (best effort: without it, the file is read again from its start).
    pub(super) fn save_state(&self, path: &Path, following: &mut Following) {
        if !following.unsaved || following.stamp.size < STATE_MIN {
            return;
        }
        let (Some(edges), Some(cache)) = (following.proof, self.state_cache_path(path)) else {
            return;
        };
        let Some(body) = following.reader.save_state() else {
            return;
        };
        let head = StateHead {
            version: STATE_VERSION,
            path: path.to_path_buf(),
            dev: following.stamp.dev,
            ino: following.stamp.ino,
            consumed: following.consumed,
            edges,
            checksum: crate::store::atomic::checksum(&[&body]),
        };
        let Ok(mut bytes) = serde_json::to_vec(&head) else {
            return;
        };
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        crate::store::atomic::replace_file(&cache, &bytes);
        following.unsaved = false;
    }
}

// 2: Claude Code's and Codex's readers keep their last entry's time.
// 3: Claude Code readers know subagents (and the calls that started them).
const STATE_VERSION: u32 = 3;

/// The first line of a saved reader state; the reader's own bytes follow.
#[derive(Serialize, Deserialize)]
struct StateHead {
    version: u32,
    path: PathBuf,
    dev: u64,
    ino: u64,
    /// Where the reader stopped: the next feed starts here.
    consumed: u64,
    /// `content_check` of the file's first `consumed` bytes.
    edges: u64,
    checksum: u64,
}

/// Feeds `following.reader` the file's bytes from where it stopped up to `size`.
pub(super) fn feed(file: &mut File, following: &mut Following, size: u64) -> Result<()> {
    let mut pos = following.consumed + following.tail.len() as u64;
    let mut buf = std::mem::take(&mut following.tail);
    while pos < size {
        let want = ((size - pos) as usize).min(CHUNK);
        let n = read_appending(file, &mut buf, want, pos)
            .map_err(|e| Error::io("read session file", &e))?;
        if n == 0 {
            break;
        }
        following.ends.extend(&buf[buf.len() - n..]);
        pos += n as u64;
        let used = following.reader.feed(following.consumed, &buf) as usize;
        following.consumed += used as u64;
        buf.drain(..used.min(buf.len()));
    }
    // The rest is usually empty or one line: the chunk-sized buffer is not kept.
    following.tail = buf.as_slice().to_vec();
    Ok(())
}

/// Appends up to `want` bytes of `file` at offset `at` to `buf` without zeroing the
/// room first (a first index reads gigabytes; zeroing was 3% of it).
pub(super) fn read_appending(
    file: &File,
    buf: &mut Vec<u8>,
    want: usize,
    at: u64,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    buf.reserve(want);
    let spare = buf.spare_capacity_mut();
    loop {
        // SAFETY: `spare` has room for `want` bytes; the kernel writes at most that.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                want,
                at as libc::off_t,
            )
        };
        if n >= 0 {
            // SAFETY: the kernel initialized the first `n` bytes of the spare room.
            unsafe { buf.set_len(buf.len() + n as usize) };
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
