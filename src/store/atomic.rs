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
    let written = Dir::open_root(&c.root)
        .and_then(|root| root.walk_create(&dirs(c)))
        .and_then(|d| d.replace_file(&c.name, bytes));
    if let Err(e) = written {
        log::warn!("cache file {}: {e}", c.path().display());
    }
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

/// FNV-1a, 64-bit: the checksum cache files carry over their own content (stable
/// across builds, unlike `DefaultHasher`).
pub fn checksum(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    h
}
