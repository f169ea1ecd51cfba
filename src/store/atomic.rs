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
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(29);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
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
    h ^ (h >> 32)
}
