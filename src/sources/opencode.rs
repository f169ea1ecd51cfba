//! OpenCode's sessions (AGENT-FORMATS-MORE.md §1), all three generations, as units
//! (`sources/units.rs`): each session's rows become a JSON Lines dump that its
//! `transcript.jsonl` shows and [`OpencodeReader`] reads.
//!
//! - SQLite "V1" (1.2 – 1.18): every `opencode*.db` in the data folder and
//!   `$OPENCODE_DB`, read strictly read-only through `sqlite_ro`. Unit key
//!   `<database>/<session id>`.
//! - OpenCode 2 (best effort): sessions with `session_message` rows in the same
//!   databases. Key `<database>/<session id>.v2`.
//! - JSON files under `storage/` (< 1.2): only sessions whose id is in no database
//!   (1.2's migration copies them into the database and leaves the files). Key: the
//!   session's file.
//!
//! A database that cannot be read (damaged, truncated, an unknown schema, busy past
//! the retries with nothing read before) still shows, as one session named
//! `unreadable` that says why; a database busy for a moment keeps showing what was
//! last read from it.

mod db;
pub mod kind;
mod neutral;
mod reader;
mod storage;
pub mod usage;

pub use neutral::to_neutral;
pub use reader::OpencodeReader;

use super::sqlite_ro::{self, ReadError};
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use crate::store::index::FileStamp;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Which rules a dump is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// SQLite `session`/`message`/`part` (1.2 – 1.18).
    V1,
    /// OpenCode 2's `session_message` rows.
    V2,
    /// JSON files under `storage/` (before 1.2).
    Storage,
}

/// The suffix of an OpenCode 2 session's key.
const V2_SUFFIX: &str = ".v2";
/// The name of the unit standing for a database that cannot be read.
const UNREADABLE: &str = "unreadable";

/// The generation a unit's key names (its file name: `<id>`, `<id>.v2`, `<id>.json`).
pub fn generation_of(file_name: &str) -> Generation {
    if file_name.ends_with(V2_SUFFIX) {
        Generation::V2
    } else if file_name.ends_with(".json") {
        Generation::Storage
    } else {
        Generation::V1
    }
}

/// An agent that stores sessions as OpenCode does: OpenCode itself, or a fork (Kilo)
/// with its own data folder and names. Everything else (the tables, the dump, the
/// reader, the usage) is OpenCode's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavor {
    /// The agent's name: in log lines and in the keys of its usage records.
    pub name: &'static str,
    /// The databases' file names: `<db_prefix>*.db` in the data folder.
    pub db_prefix: &'static str,
    /// The variable naming one more database (absolute, or relative to the folder).
    pub db_env: &'static str,
}

/// OpenCode's own names.
pub const OPENCODE: Flavor = Flavor {
    name: "opencode",
    db_prefix: "opencode",
    db_env: "OPENCODE_DB",
};

/// The databases of a data folder: `$OPENCODE_DB` (absolute, or relative to the data
/// folder; `:memory:` is none) and every `opencode*.db` in it (the channel databases).
pub fn databases(root: &Path) -> Vec<PathBuf> {
    databases_of(&OPENCODE, root)
}

/// The databases of a data folder by `flavor`'s names.
pub fn databases_of(flavor: &Flavor, root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(v) = std::env::var_os(flavor.db_env).filter(|v| !v.is_empty() && v != ":memory:") {
        out.push(root.join(v));
    }
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(flavor.db_prefix)
                && name.ends_with(".db")
                && e.file_type().is_ok_and(|t| t.is_file())
            {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out.dedup();
    out.retain(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()));
    out
}

fn stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// One database as last read.
struct Database {
    /// The database and `-wal` stamps the listing was read at.
    at: (Option<FileStamp>, Option<FileStamp>),
    entries: HashMap<String, db::Entry>,
    order: Vec<String>,
    /// Why nothing could be read from it (shown as the `unreadable` unit).
    error: Option<String>,
}

#[derive(Default)]
struct State {
    databases: BTreeMap<PathBuf, Database>,
    storage: HashMap<PathBuf, storage::StorageSession>,
    /// The data folder's stamp at the last listing (a new database changes it).
    root_at: Option<FileStamp>,
}

fn dir_stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| FileStamp::of(&m))
}

/// OpenCode's data folder (or a fork's) as units.
pub struct OpencodeUnits {
    root: PathBuf,
    flavor: Flavor,
    state: Mutex<State>,
}

impl OpencodeUnits {
    pub fn new(root: &Path) -> Self {
        Self::of(OPENCODE, root)
    }

    /// The data folder of an agent storing sessions as OpenCode does, by its names.
    pub fn of(flavor: Flavor, root: &Path) -> Self {
        OpencodeUnits {
            root: root.to_path_buf(),
            flavor,
            state: Mutex::new(State::default()),
        }
    }

    /// Re-reads `path`'s listing if the database or its WAL changed since.
    fn refresh(&self, st: &mut State, path: &Path) {
        let at = (stamp(path), stamp(&with_suffix(path, "-wal")));
        if st.databases.get(path).is_some_and(|d| d.at == at) {
            return;
        }
        if at.0.is_some_and(|s| s.size == 0) {
            // A database file OpenCode has just created: nothing in it yet.
            st.databases.insert(
                path.to_path_buf(),
                Database {
                    at,
                    entries: HashMap::new(),
                    order: Vec::new(),
                    error: None,
                },
            );
            return;
        }
        let read = sqlite_ro::read(path, db::list);
        let (entries, error) = match read {
            Ok(Ok(list)) => (list, None),
            Ok(Err(why)) => (Vec::new(), Some(why)),
            Err(ReadError::Busy(why)) if st.databases.contains_key(path) => {
                // Keep what was read last; try again on the next access.
                log::info!(
                    "{}: {} busy ({why}); showing its last listing",
                    self.flavor.name,
                    path.display()
                );
                if let Some(d) = st.databases.get_mut(path) {
                    d.at = (None, None);
                }
                return;
            }
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        if let Some(why) = &error {
            log::warn!("{}: {}: {why}", self.flavor.name, path.display());
        }
        st.databases.insert(
            path.to_path_buf(),
            Database {
                at,
                order: entries.iter().map(|e| e.id.clone()).collect(),
                entries: entries.into_iter().map(|e| (e.id.clone(), e)).collect(),
                error,
            },
        );
    }

    /// The database and the session id (or `unreadable`) a database key names.
    fn split_key(key: &Path) -> Option<(PathBuf, String, bool)> {
        let name = key.file_name()?.to_string_lossy().into_owned();
        let db = key.parent()?.to_path_buf();
        match name.strip_suffix(V2_SUFFIX) {
            Some(id) => Some((db, id.to_string(), true)),
            None => Some((db, name, false)),
        }
    }

    /// A unit's signature as its database's last listing has it.
    fn signature_in(d: &Database, path: &Path, id: &str, v2: bool) -> Option<Signature> {
        if id == UNREADABLE {
            return d
                .error
                .is_some()
                .then(|| Self::unreadable_signature(d, path));
        }
        d.entries
            .get(id)
            .filter(|e| e.v2 == v2)
            .map(|e| e.signature)
    }

    fn unreadable_signature(db: &Database, path: &Path) -> Signature {
        let why = db.error.as_deref().unwrap_or_default();
        Signature {
            hash: crate::store::atomic::checksum(&[
                why.as_bytes(),
                path.as_os_str().as_encoded_bytes(),
            ]),
            updated_ms: db
                .at
                .0
                .map(|s| (s.mtime_ns / 1_000_000) as i64)
                .unwrap_or(0),
        }
    }
}

fn unreadable_line(why: &str, database: &Path) -> Vec<u8> {
    let mut w = crate::sources::json_text::ObjectWriter::default();
    w.string("fen_unreadable", why)
        .string("database", &database.to_string_lossy());
    let mut b = w.finish().into_bytes();
    b.push(b'\n');
    b
}

impl UnitSource for OpencodeUnits {
    fn changed(&self) -> bool {
        let st = self.state.lock().unwrap();
        // The JSON files change in place, folder stamps unmoved: always look again.
        st.root_at.is_none()
            || st.root_at != dir_stamp(&self.root)
            || !st.storage.is_empty()
            || dir_stamp(&storage::storage_dir(&self.root).join("session")).is_some()
            || st.databases.iter().any(|(p, d)| {
                d.at != (stamp(p), stamp(&with_suffix(p, "-wal"))) || d.error.is_some()
            })
            || std::env::var_os(self.flavor.db_env).is_some_and(|v| {
                let p = self.root.join(v);
                stamp(&p).is_some() && !st.databases.contains_key(&p)
            })
    }

    fn list(&self) -> Vec<UnitInfo> {
        let root_at = dir_stamp(&self.root);
        let dbs = databases_of(&self.flavor, &self.root);
        let mut st = self.state.lock().unwrap();
        st.root_at = root_at;
        st.databases.retain(|p, _| dbs.contains(p));
        let mut out = Vec::new();
        let mut in_db: HashSet<String> = HashSet::new();
        for path in &dbs {
            self.refresh(&mut st, path);
            let d = &st.databases[path];
            if d.error.is_some() {
                out.push(UnitInfo {
                    key: path.join(UNREADABLE),
                    cwd: None,
                });
                continue;
            }
            for id in &d.order {
                let e = &d.entries[id];
                in_db.insert(id.clone());
                let name = if e.v2 {
                    format!("{id}{V2_SUFFIX}")
                } else {
                    id.clone()
                };
                out.push(UnitInfo {
                    key: path.join(name),
                    cwd: e.directory.clone(),
                });
            }
        }
        // The JSON files: only what no database holds (1.2 migrated the rest).
        let files = storage::list(&self.root);
        st.storage.clear();
        for s in files {
            if in_db.contains(&s.id) {
                continue;
            }
            out.push(UnitInfo {
                key: s.file.clone(),
                cwd: None,
            });
            st.storage.insert(s.file.clone(), s);
        }
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        let mut st = self.state.lock().unwrap();
        if let Some(s) = st.storage.get(key).cloned() {
            drop(st);
            return storage::signature(&self.root, &s);
        }
        let (path, id, v2) = Self::split_key(key)?;
        if !st.databases.contains_key(&path)
            && !databases_of(&self.flavor, &self.root).contains(&path)
        {
            return None;
        }
        self.refresh(&mut st, &path);
        Self::signature_in(st.databases.get(&path)?, &path, &id, v2)
    }

    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        let st = self.state.lock().unwrap();
        if st.storage.contains_key(key) {
            drop(st);
            return self.signature(key);
        }
        let (path, id, v2) = Self::split_key(key)?;
        Self::signature_in(st.databases.get(&path)?, &path, &id, v2)
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        let storage_session = self.state.lock().unwrap().storage.get(key).cloned();
        if let Some(s) = storage_session {
            return storage::dump(&self.root, &s);
        }
        let (path, id, v2) = Self::split_key(key)?;
        let error = |why: &str, signature: Signature, transient: bool| Dump {
            bytes: unreadable_line(why, &path),
            signature,
            transient,
        };
        if id == UNREADABLE {
            let st = self.state.lock().unwrap();
            let d = st.databases.get(&path)?;
            let why = d.error.clone()?;
            return Some(error(&why, Self::unreadable_signature(d, &path), false));
        }
        // A failed read is said with the signature from before it: one taken after
        // could name a change made meanwhile, and the error would be served as current.
        let before = self.signature(key);
        match sqlite_ro::read(&path, |c| db::dump(c, &id, v2)) {
            Ok(Ok(found)) => found.map(|(bytes, signature)| Dump {
                bytes,
                signature,
                transient: false,
            }),
            Ok(Err(why)) => Some(error(&why, before?, false)),
            Err(e) => {
                log::warn!(
                    "{}: {}: session {id}: {e}",
                    self.flavor.name,
                    path.display()
                );
                // Said with the session's identity (so its folder stays where it is);
                // a made-up signature differs from the listing's, so the next access
                // reads it again.
                let entry = {
                    let st = self.state.lock().unwrap();
                    st.databases.get(&path)?.entries.get(&id)?.clone()
                };
                let mut w = crate::sources::json_text::ObjectWriter::default();
                w.string("id", &entry.id);
                if let Some(d) = &entry.directory {
                    w.string("directory", d);
                }
                let mut time = crate::sources::json_text::ObjectWriter::default();
                if let Some(c) = entry.created_ms {
                    time.raw("created", &c.to_string());
                }
                time.raw("updated", &entry.signature.updated_ms.to_string());
                w.raw("time", &time.finish());
                let mut bytes = w.finish().into_bytes();
                bytes.push(b'\n');
                bytes.extend_from_slice(&unreadable_line(&e.to_string(), &path));
                let signature = Signature {
                    hash: !entry.signature.hash,
                    updated_ms: entry.signature.updated_ms,
                };
                Some(Dump {
                    bytes,
                    signature,
                    transient: true,
                })
            }
        }
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        if self.state.lock().unwrap().storage.contains_key(key) {
            return storage::storage_dir(&self.root);
        }
        key.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}
