//! The records of one agent's kept copies, listed in one file in this machine's
//! `.fen-cache` (`layout::kept_listing_cache`): a cold listing of 10,000 copies reads
//! one file and `stat`s each copy folder, instead of reading 10,000 records.
//!
//! Never trusted without a proof, per copy: a cached record stands for a copy only
//! while its folder's stamp (inode, mtime, ctime) is the one cached. Every change of a
//! copy's record replaces `kept.json` through a rename in its folder (and a new copy,
//! a trashed or restored one, is a folder renamed into place), so the folder's
//! stamp moves with it. Only settled stamps are cached: a folder changed within the
//! clock's coarse tick of its reading could change again in the same tick without
//! moving its mtime, so its record is read again until its mtime is a second old.
//! The file carries a checksum of its content and the folder it lists: a damaged,
//! cut or edited file, or one of another folder, is not used, and is rebuilt.

use crate::store::kept::KeptRecord;
use crate::store::layout::CacheFile;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A copy folder's stamp: inode, mtime and ctime (ns).
pub(super) type FolderStamp = (u64, i128, i128);

const VERSION: u32 = 2;
/// A cache larger than this is not read (records are ~1 KB: 64 MB is ~60,000 copies).
const MAX_BYTES: u64 = 64 << 20;
/// A folder whose mtime is this much older than its reading is settled.
const SETTLED: i128 = 1_000_000_000;

#[derive(serde::Serialize, serde::Deserialize)]
struct Head {
    version: u32,
    /// The copies' folder it lists.
    dir: PathBuf,
    /// `store::atomic::checksum` of the body (the lines after this one: a copy a
    /// line, read one at a time, so that 10,000 records are never in memory twice).
    checksum: u64,
}

#[derive(serde::Deserialize)]
struct Cached {
    name: String,
    stamp: FolderStamp,
    record: KeptRecord,
}

/// One copy as written: its folder's name and stamp, and its record.
#[derive(serde::Serialize)]
pub(super) struct CachedRef<'a> {
    pub name: &'a str,
    pub stamp: FolderStamp,
    pub record: &'a KeptRecord,
}

/// The stamp of a folder's `lstat`.
pub(super) fn folder_stamp(st: &libc::stat) -> FolderStamp {
    (
        st.st_ino,
        st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
        st.st_ctime as i128 * 1_000_000_000 + st.st_ctime_nsec as i128,
    )
}

/// Whether a folder of `stamp`, read at `now_ns`, can be cached (see above).
pub(super) fn settled(stamp: &FolderStamp, now_ns: i128) -> bool {
    stamp.1 + SETTLED < now_ns
}

pub(super) fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The cached records of `agent`'s copies in `dir`, by folder name, with their
/// folders' stamps; empty when there is no cache, or it is not one of `dir` or fails
/// its checksum. A record is held to the rules of one read from its folder.
pub(super) fn load(
    cache: &CacheFile,
    dir: &Path,
    agent: &str,
) -> HashMap<String, (FolderStamp, KeptRecord)> {
    let Some(bytes) = crate::store::atomic::read_file(cache, MAX_BYTES) else {
        return HashMap::new();
    };
    let parsed = (|| {
        let nl = bytes.iter().position(|&b| b == b'\n')?;
        let head: Head = serde_json::from_slice(&bytes[..nl]).ok()?;
        let body = &bytes[nl + 1..];
        if head.version != VERSION
            || head.dir != dir
            || head.checksum != crate::store::atomic::checksum(&[body])
        {
            return None;
        }
        let mut out = HashMap::new();
        for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let c: Cached = serde_json::from_slice(line).ok()?;
            if c.record.agent == agent && c.record.sane() {
                out.insert(c.name, (c.stamp, c.record));
            }
        }
        Some(out)
    })();
    match parsed {
        Some(entries) => entries,
        None => {
            log::info!(
                "{}: not a listing of {} (damaged, or of another version): rebuilt",
                cache.path().display(),
                dir.display()
            );
            HashMap::new()
        }
    }
}

/// Writes the listing of `dir`'s copies (best effort, as befits a cache). Streamed
/// to the file, its checksum taken as it goes and written into the head last: 10,000
/// records are ~10 MB, and building them in memory (twice, with the head) was the
/// daemon's peak while the search's first pass listed the kept copies (bench row 11).
pub(super) fn save(cache: &CacheFile, dir: &Path, entries: &[CachedRef<'_>]) {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    // The head, its checksum a fixed-width field filled in once the body is written.
    let head = |checksum: u64| {
        let mut h = serde_json::to_vec(&Head {
            version: VERSION,
            dir: dir.to_path_buf(),
            checksum,
        })
        .expect("a head serializes");
        h.push(b'\n');
        h
    };
    // Widest value first: the field only grows narrower, padded with spaces.
    let width = head(u64::MAX).len();
    crate::store::atomic::replace_file_with(cache, |f| {
        f.write_all(&vec![b' '; width])?;
        let sum = crate::store::atomic::write_summed(f, |body| {
            for e in entries {
                serde_json::to_writer(&mut *body, e)?;
                body.write_all(b"\n")?;
            }
            Ok(())
        })?;
        let mut line = head(sum);
        let nl = line.pop();
        line.resize(width - 1, b' ');
        line.extend(nl);
        f.write_all_at(&line, 0)
    });
}
