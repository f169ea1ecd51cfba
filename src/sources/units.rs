//! Sessions that are not one file each: OpenCode's rows in a SQLite database or in
//! many small JSON files, Cursor's `store.db`. Each session is a *unit* named by a
//! key (a path that need not exist: `<database>/<session id>`), whose bytes are a
//! JSON Lines dump of its rows made on demand and held in an anonymous in-memory file
//! (`memfd`, in no folder). The foreign source reads a unit exactly like a session
//! file: its agent's reader is fed the dump, and `conversation.json` is byte ranges
//! of it.
//!
//! A unit's stamp is made up, not `stat`ed: its size is the dump's, its inode a hash
//! of the key and of the rows' signature, its mtime the session's last update. So a
//! change in the rows changes the stamp (and the inode, which tells the reader cache
//! not to follow it as an append: a dump is rewritten, not appended to), while an
//! unchanged session keeps its stamp without being dumped again.

use crate::error::{Error, Result};
use crate::store::index::FileStamp;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What changes whenever a session's stored rows change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signature {
    pub hash: u64,
    /// The session's last update (ms since the epoch): the folder's mtime.
    pub updated_ms: i64,
}

/// One unit as a listing finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitInfo {
    pub key: PathBuf,
    /// The working directory the rows name, when the listing knows it (a namespace
    /// hint before the dump is read).
    pub cwd: Option<String>,
}

/// A unit's bytes as just made.
pub struct Dump {
    pub bytes: Vec<u8>,
    /// The signature of exactly what was read.
    pub signature: Signature,
    /// The rows could not be read this time (a database busy past the retries): the
    /// bytes say so, and the last good dump, if one is kept, is served instead.
    pub transient: bool,
}

/// An agent's store of units.
pub trait UnitSource: Send + Sync {
    /// Every unit now. Cheap when nothing changed on disk (a `stat` of the database
    /// files); re-reads the store otherwise.
    fn list(&self) -> Vec<UnitInfo>;

    /// Whether anything may have changed since the last `list` (cheap: a `stat` of
    /// the databases; `true` when the store cannot tell). Not asked while the folders
    /// `watched` names are watched.
    fn changed(&self) -> bool {
        true
    }

    /// The folders whose entries change whenever a unit (as just listed) changes or
    /// a unit comes or goes: a file created, written, renamed or deleted in one of
    /// them. While inotify saw nothing in any of them, nothing changed and the units
    /// are not listed again. Empty (the default): `changed` is asked instead.
    fn watched(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    /// The signature of `key`'s rows now (`None`: the unit is gone).
    fn signature(&self, key: &Path) -> Option<Signature>;

    /// The same as the last `list` read it, without looking at the disk again (for
    /// checking every unit right after a listing).
    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        self.signature(key)
    }

    /// `key`'s rows as JSON Lines (`None`: the unit is gone).
    fn dump(&self, key: &Path) -> Option<Dump>;

    /// What `meta.json` names as where the session lives (the database, the folder).
    fn source_path(&self, key: &Path) -> PathBuf;

    /// A real file `transcript.jsonl` shows instead of the dump (Cursor: the agent's
    /// own transcript of a `store.db` session), if any.
    fn transcript(&self, _key: &Path) -> Option<PathBuf> {
        None
    }

    /// Whether a session file the folder walk found is already shown by a unit (so it
    /// is not a session of its own).
    fn claims(&self, _file: &Path) -> bool {
        false
    }
}

/// The folders (not links) in `dir`: for `UnitSource::watched`, which watches a
/// unit's folder before it holds the files that make it a unit.
pub fn subfolders(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Dumps kept in memory at once; older ones are made again when asked for.
const KEPT_DUMPS: usize = 32;

/// More folders than this to watch for one store: `changed` is asked instead (inotify
/// watches are a per-user budget the other sources share).
const MAX_WATCHED: usize = 4096;

/// The units of one store, with their dumps materialized on demand.
pub struct Units {
    source: Box<dyn UnitSource>,
    state: Mutex<State>,
    watched: Mutex<Watched>,
}

/// The folders `UnitSource::watched` named at the last listing, and the watch on
/// them (made at the first `changed`: only a long-lived process asks).
#[derive(Default)]
struct Watched {
    folders: Vec<PathBuf>,
    /// `None`: not made yet; `Some(None)`: inotify is not available.
    watch: Option<Option<super::watch::StoreWatch>>,
}

#[derive(Default)]
struct State {
    known: HashMap<PathBuf, Known>,
    tick: u64,
}

struct Known {
    signature: Signature,
    size: u64,
    /// The dump, while among the most recently used.
    file: Option<File>,
    used: u64,
}

fn stamp_of(key: &Path, s: Signature, size: u64) -> FileStamp {
    let key_hash = crate::store::atomic::checksum(&[key.as_os_str().as_encoded_bytes()]);
    FileStamp {
        dev: 0,
        ino: key_hash ^ s.hash.rotate_left(17),
        size,
        mtime_ns: s.updated_ms as i128 * 1_000_000,
        ctime_ns: s.hash as i128,
    }
}

impl Units {
    pub fn new(source: Box<dyn UnitSource>) -> Self {
        Units {
            source,
            state: Mutex::new(State::default()),
            watched: Mutex::new(Watched::default()),
        }
    }

    pub fn source(&self) -> &dyn UnitSource {
        self.source.as_ref()
    }

    /// Every unit now.
    pub fn list(&self) -> Vec<UnitInfo> {
        let units = self.source.list();
        // Only folders that exist: a missing one cannot be watched (its parent, also
        // named, sees it come).
        let mut folders: Vec<PathBuf> = self
            .source
            .watched()
            .into_iter()
            .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.is_dir()))
            .collect();
        if folders.len() > MAX_WATCHED {
            folders.clear();
        }
        self.watched.lock().unwrap().folders = folders;
        let mut st = self.state.lock().unwrap();
        let present: std::collections::HashSet<&PathBuf> = units.iter().map(|u| &u.key).collect();
        st.known.retain(|k, _| present.contains(k));
        units
    }

    /// Whether anything may have changed since the last `list`: an inotify event in
    /// a folder the source watches (a folder watched for the first time counts as
    /// one: what happened before the watch is seen by the next listing), or, for a
    /// store that names none, its own `changed`. (Without it every request under a
    /// namespace listed every unit again, and `stat`ed every unit's files.)
    pub fn changed(&self) -> bool {
        let mut w = self.watched.lock().unwrap();
        let Watched { folders, watch } = &mut *w;
        let watch = watch.get_or_insert_with(super::watch::StoreWatch::new);
        let (Some(watch), false) = (watch.as_ref(), folders.is_empty()) else {
            drop(w);
            return self.source.changed();
        };
        watch.drain();
        let mut changed = false;
        for f in folders.iter() {
            let key = f.to_string_lossy();
            if watch.changed_as_drained(&key, f) {
                watch.mark_clean(&key);
                changed = true;
            }
        }
        changed
    }

    /// `key`'s stamp now (dumping it only if its rows changed since its last dump).
    pub fn stamp(&self, key: &Path) -> Option<FileStamp> {
        let signature = self.source.signature(key)?;
        self.stamp_for(key, signature)
    }

    /// `key`'s stamp as of the last `list` (right after one: no disk access per unit).
    pub fn listed_stamp(&self, key: &Path) -> Option<FileStamp> {
        let signature = self.source.listed_signature(key)?;
        self.stamp_for(key, signature)
    }

    /// `key`'s stamp as of the last `list` when its dump's size is already known
    /// (seeded from a persisted index, or dumped since): `None` rather than a dump.
    /// The first index compares persisted stamps with it: dumping every unit there,
    /// one after the other, then again when it is read (only `KEPT_DUMPS` stay) made
    /// a first index of database sessions pay each dump twice, the first time on one
    /// core.
    pub fn known_stamp(&self, key: &Path) -> Option<FileStamp> {
        let signature = self.source.listed_signature(key)?;
        let st = self.state.lock().unwrap();
        let k = st.known.get(key).filter(|k| k.signature == signature)?;
        Some(stamp_of(key, signature, k.size))
    }

    fn stamp_for(&self, key: &Path, signature: Signature) -> Option<FileStamp> {
        {
            let st = self.state.lock().unwrap();
            if let Some(k) = st.known.get(key)
                && k.signature == signature
            {
                return Some(stamp_of(key, signature, k.size));
            }
        }
        self.materialize(key).ok().map(|(_, stamp)| stamp)
    }

    /// Remembers `stamp` (from a persisted index) as `key`'s if it is the stamp of the
    /// rows as they are now, so an unchanged unit is not dumped to learn its size.
    pub fn seed(&self, key: &Path, stamp: FileStamp) {
        let Some(signature) = self.source.signature(key) else {
            return;
        };
        if stamp_of(key, signature, stamp.size) != stamp {
            return;
        }
        let mut st = self.state.lock().unwrap();
        st.known.entry(key.to_path_buf()).or_insert(Known {
            signature,
            size: stamp.size,
            file: None,
            used: 0,
        });
    }

    /// `key`'s dump as it is now, as a file of its own (a new descriptor each call).
    pub fn open(&self, key: &Path) -> Result<(File, FileStamp)> {
        let missing = || Error::not_found(format!("{} is gone", key.display()));
        let signature = self.source.signature(key).ok_or_else(missing)?;
        {
            let mut st = self.state.lock().unwrap();
            st.tick += 1;
            let tick = st.tick;
            if let Some(k) = st.known.get_mut(key)
                && k.signature == signature
                && let Some(f) = &k.file
            {
                let dup = f
                    .try_clone()
                    .map_err(|e| Error::io("duplicate a session dump", &e))?;
                k.used = tick;
                return Ok((dup, stamp_of(key, signature, k.size)));
            }
        }
        self.materialize(key)
    }

    fn materialize(&self, key: &Path) -> Result<(File, FileStamp)> {
        let dump = self
            .source
            .dump(key)
            .ok_or_else(|| Error::not_found(format!("{} is gone", key.display())))?;
        if dump.transient {
            // Keep showing the last whole state rather than "cannot read" for a moment.
            let mut st = self.state.lock().unwrap();
            if let Some(k) = st.known.get_mut(key)
                && let Some(f) = &k.file
            {
                let dup = f
                    .try_clone()
                    .map_err(|e| Error::io("duplicate a session dump", &e))?;
                return Ok((dup, stamp_of(key, k.signature, k.size)));
            }
        }
        let (bytes, signature) = (dump.bytes, dump.signature);
        let file = crate::store::open::anonymous_file(&bytes)?;
        let dup = file
            .try_clone()
            .map_err(|e| Error::io("duplicate a session dump", &e))?;
        let size = bytes.len() as u64;
        let mut st = self.state.lock().unwrap();
        st.tick += 1;
        let used = st.tick;
        st.known.insert(
            key.to_path_buf(),
            Known {
                signature,
                size,
                file: Some(file),
                used,
            },
        );
        let kept = st.known.values().filter(|k| k.file.is_some()).count();
        if kept > KEPT_DUMPS
            && let Some(oldest) = st
                .known
                .values_mut()
                .filter(|k| k.file.is_some())
                .min_by_key(|k| k.used)
        {
            oldest.file = None;
        }
        Ok((dup, stamp_of(key, signature, size)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// One unit whose rows are `rows`, counting its dumps.
    struct Counting {
        rows: Mutex<String>,
        dumps: AtomicU64,
    }

    impl UnitSource for std::sync::Arc<Counting> {
        fn list(&self) -> Vec<UnitInfo> {
            vec![UnitInfo {
                key: PathBuf::from("/db/s1"),
                cwd: None,
            }]
        }
        fn signature(&self, _: &Path) -> Option<Signature> {
            let rows = self.rows.lock().unwrap();
            Some(Signature {
                hash: crate::store::atomic::checksum(&[rows.as_bytes()]),
                updated_ms: 7,
            })
        }
        fn dump(&self, key: &Path) -> Option<Dump> {
            self.dumps.fetch_add(1, Ordering::SeqCst);
            let rows = self.rows.lock().unwrap().clone();
            Some(Dump {
                signature: self.signature(key)?,
                bytes: rows.into_bytes(),
                transient: false,
            })
        }
        fn source_path(&self, _: &Path) -> PathBuf {
            PathBuf::from("/db")
        }
    }

    #[test]
    fn a_unit_is_dumped_only_when_its_rows_change() {
        let c = std::sync::Arc::new(Counting {
            rows: Mutex::new("{\"a\":1}\n".into()),
            dumps: AtomicU64::new(0),
        });
        let key = Path::new("/db/s1");
        let u = Units::new(Box::new(c.clone()));
        let s1 = u.stamp(key).unwrap();
        assert_eq!((s1.size, c.dumps.load(Ordering::SeqCst)), (8, 1));
        u.open(key).unwrap();
        u.stamp(key).unwrap();
        assert_eq!(c.dumps.load(Ordering::SeqCst), 1, "unchanged: no new dump");
        *c.rows.lock().unwrap() = "{\"a\":1}\n{\"b\":2}\n".into();
        let s2 = u.stamp(key).unwrap();
        assert_eq!(c.dumps.load(Ordering::SeqCst), 2);
        assert!(s2.size > s1.size && s2.ino != s1.ino);

        // A later mount seeded with the persisted stamp: no dump while the rows match.
        let fresh = Units::new(Box::new(c.clone()));
        fresh.seed(key, s1);
        fresh.seed(key, s2);
        assert_eq!(fresh.stamp(key), Some(s2));
        assert_eq!(c.dumps.load(Ordering::SeqCst), 2, "seeded: not dumped");
    }
}
