//! The namespace catalog: one `Listing` per session for `index.json`, `latest` and
//! `fen-fs list`. A listing comes from the session's in-memory index when that is
//! current, else from the persisted cache when the file's stat (dev, inode, size,
//! mtime) is unchanged, else from parsing the file.
//!
//! The persisted cache lives in `<store>/.fen-cache/<namespace>.json` (a folder with no
//! `*.jsonl`, so the store ignores it). It is written atomically (temp file + rename),
//! validated per file, and safe to delete: it only saves a remount from re-reading
//! unchanged transcripts.

use crate::error::Result;
use crate::store::Store;
use crate::store::index::FileStamp;
use crate::views::listing::{Listing, sort_newest_first};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

/// The catalog of one mount (or one CLI run): persisted caches loaded once per
/// namespace, and the newest session update seen per namespace (its folder mtime).
#[derive(Default)]
pub struct Catalog {
    caches: Mutex<HashMap<String, NamespaceCache>>,
    last_update: Mutex<HashMap<String, SystemTime>>,
}

pub const CACHE_DIR: &str = ".fen-cache";
const CACHE_VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Default)]
struct NamespaceCache {
    version: u32,
    sessions: HashMap<String, CachedListing>,
}

#[derive(Serialize, Deserialize, Clone)]
struct CachedListing {
    /// dev, inode, size, mtime in ns: the state of the file the listing describes.
    stamp: (u64, u64, u64, i128),
    listing: Listing,
}

fn key(s: &FileStamp) -> (u64, u64, u64, i128) {
    (s.dev, s.ino, s.size, s.mtime_ns)
}

fn cache_path(store: &Store, ns: &str) -> PathBuf {
    store.root.join(CACHE_DIR).join(format!("{ns}.json"))
}

fn load(store: &Store, ns: &str) -> NamespaceCache {
    std::fs::read(cache_path(store, ns))
        .ok()
        .and_then(|b| serde_json::from_slice::<NamespaceCache>(&b).ok())
        .filter(|c| c.version == CACHE_VERSION)
        .unwrap_or_default()
}

/// Best effort: a cache that cannot be written only costs the next remount a parse.
fn save(store: &Store, ns: &str, cache: &NamespaceCache) {
    let dir = store.root.join(CACHE_DIR);
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let path = cache_path(store, ns);
    let tmp = dir.join(format!(".{ns}.{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec(cache).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        log::warn!("listing cache {}: {e}", path.display());
        let _ = std::fs::remove_file(&tmp);
    }
}

impl Catalog {
    /// Records that a session of `ns` was updated at `t` (a file mtime).
    pub fn observe(&self, ns: &str, t: SystemTime) {
        let mut map = self.last_update.lock().unwrap();
        let e = map.entry(ns.to_string()).or_insert(t);
        if t > *e {
            *e = t;
        }
    }

    /// The newest session update this catalog has seen in `ns`.
    pub fn last_update(&self, ns: &str) -> Option<SystemTime> {
        self.last_update.lock().unwrap().get(ns).copied()
    }

    /// Every session of namespace `ns`, newest first.
    pub fn namespace(&self, store: &Store, ns: &str) -> Result<Vec<Listing>> {
        let mut caches = self.caches.lock().unwrap();
        let cache = caches
            .entry(ns.to_string())
            .or_insert_with(|| load(store, ns));
        let (out, changed, newest) = list(store, ns, cache)?;
        if changed {
            save(store, ns, cache);
        }
        drop(caches);
        if let Some(newest) = newest {
            self.observe(ns, newest);
        }
        Ok(out)
    }
}

/// Listings of `ns` (newest first), whether `cache` changed, and the newest file mtime.
fn list(
    store: &Store,
    ns: &str,
    cache: &mut NamespaceCache,
) -> Result<(Vec<Listing>, bool, Option<SystemTime>)> {
    let mut changed = false;
    let mut newest: Option<SystemTime> = None;
    let mut out = Vec::new();
    let dirs = store.session_dirs(ns)?;
    for dir in &dirs {
        // A session deleted or unreadable mid-listing is left out, not fatal.
        let Ok(session) = store.session(ns, dir) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(&session.path) else {
            continue;
        };
        let stamp = FileStamp::of(&meta);
        let in_memory = {
            let idx = session.index();
            (idx.file == stamp).then(|| Listing::of(&session, &idx))
        };
        let listing = match (in_memory, cache.sessions.get(dir)) {
            (Some(l), Some(c)) if c.stamp == key(&stamp) && c.listing == l => l,
            (Some(l), _) => {
                changed = true;
                cache.sessions.insert(
                    dir.clone(),
                    CachedListing {
                        stamp: key(&stamp),
                        listing: l.clone(),
                    },
                );
                l
            }
            (None, Some(c)) if c.stamp == key(&stamp) => c.listing.clone(),
            (None, _) => {
                let Ok(idx) = session.current() else { continue };
                let l = Listing::of(&session, &idx);
                changed = true;
                cache.sessions.insert(
                    dir.clone(),
                    CachedListing {
                        stamp: key(&idx.file),
                        listing: l.clone(),
                    },
                );
                l
            }
        };
        newest = newest.max(meta.modified().ok());
        out.push(listing);
    }
    if cache.sessions.len() != dirs.len() {
        let present: std::collections::HashSet<&String> = dirs.iter().collect();
        cache.sessions.retain(|d, _| present.contains(d));
        changed = true;
    }
    cache.version = CACHE_VERSION;
    sort_newest_first(&mut out);
    Ok((out, changed, newest))
}
