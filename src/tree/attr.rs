//! Attributes of the tree's nodes as plain values, and how long the kernel may cache
//! them; the FUSE adapter only converts these.

use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Directory,
    RegularFile,
    Symlink,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: FileKind,
    pub perm: u16,
    pub size: u64,
    /// 512-byte blocks (0 for `ctl`: a stream occupies nothing).
    pub blocks: u64,
    pub mtime: SystemTime,
    pub uid: u32,
    pub gid: u32,
    /// Never cached by the kernel, neither the name nor the attributes (the `search/`
    /// folder: every lookup there is a fresh query).
    pub volatile: bool,
}

impl Attr {
    pub fn nlink(&self) -> u32 {
        if self.kind == FileKind::Directory {
            2
        } else {
            1
        }
    }

    /// How long the kernel may keep these attributes.
    pub fn ttl(&self) -> Duration {
        if self.volatile {
            Duration::ZERO
        } else if self.kind == FileKind::Directory {
            DIR_ATTR_TTL
        } else {
            FILE_ATTR_TTL
        }
    }
}

/// Files' attributes are never cached by the kernel: sizes come from store files that
/// other processes append to behind our back, the spec wants that visible on the next
/// access, and a `getattr` is one cheap request (a `stat` plus O(1) arithmetic).
pub const FILE_ATTR_TTL: Duration = Duration::ZERO;
/// Folders' attributes are cached for a second. With `default_permissions` the kernel
/// re-checks every ancestor on every path walk: with TTL 0 one `ls -l` of a 10,000-
/// session folder cost 70,000 GETATTRs. A folder's only changing attribute is its
/// mtime; our own appends invalidate it at once (notifier), other writers' within 1 s.
pub const DIR_ATTR_TTL: Duration = Duration::from_secs(1);
/// Names may be cached for a second: a removed session leaves `readdir` at once, and
/// a stale cached name only leads to ENOENT from `getattr`/`open`. New names are never
/// negatively cached (ENOENT replies carry no TTL), so they show up immediately.
pub const ENTRY_TTL: Duration = Duration::from_secs(1);

impl Attr {
    /// How long the kernel may keep the name that led here.
    pub fn entry_ttl(&self) -> Duration {
        if self.volatile {
            Duration::ZERO
        } else {
            ENTRY_TTL
        }
    }
}

/// How an open file is to be served by the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// A per-handle snapshot: no page cache, so one handle's bytes never land in
    /// another's reads.
    DirectIo,
    /// Through the page cache, which keeps its pages across opens (the tree drops
    /// them when what they hold changes: `page_cache`).
    KeepCache,
    /// Past the page cache, leaving its pages as they are: a view's new state while
    /// handles of the cached state are still open.
    Bypass,
    /// Through the page cache, which the kernel empties of this file at this open: a
    /// new state that differs early, cheaper to read again than to wait for a drop.
    Refill,
    /// A `ctl` open for writing: no page cache, no file position (the kernel passes
    /// offset 0 to every write, so one that is no longer than the `ctl`'s size runs
    /// concurrently with others: group commit), and writers on separate descriptors
    /// reach the daemon concurrently. `lseek` fails with ESPIPE, as on a pipe.
    Stream,
}

/// The backing filesystem's space, for `df` on the mount.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatFs {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub bsize: u32,
    pub namelen: u32,
    pub frsize: u32,
}
