//! One agent's SQLite database whose sessions are rows (Goose's `sessions.db`, Zed's
//! `threads.db`, Warp's `warp.sqlite`), as units (`units.rs`): each session is the
//! key `<database>/<id>`, dumped as JSON Lines by the agent's [`SessionRows`]. The
//! database is read strictly read-only through `sqlite_ro` (no `-shm`, lock,
//! journal or checkpoint in the agent's folder).
//!
//! What every such store shares lives here: the listing is read again only when the
//! database or its `-wal` changed (their stamps); a database that cannot be read
//! (damaged, truncated, not one this reader knows, busy past the retries with nothing
//! read before) shows as one session named `unreadable` that says why; a database busy
//! for a moment keeps showing what was last read from it, and a session whose rows
//! cannot be read this time is shown with its identity and the reason, never half.

use super::sqlite_ro::{self, ReadError};
use super::units::{Dump, Signature, UnitInfo};
use crate::sources::json_text::ObjectWriter;
use crate::store::index::FileStamp;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The name of the unit standing for a database that cannot be read.
pub const UNREADABLE: &str = "unreadable";

/// One session as a listing finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct RowEntry {
    pub id: String,
    /// Its working directory, when the rows name one (a namespace hint).
    pub cwd: Option<String>,
    /// Changes whenever the session's rows change.
    pub signature: Signature,
}

/// One session's dump and the signature of the rows it was made from.
pub type RowDump = (Vec<u8>, Signature);

/// What one agent's database gives: its sessions and one session's dump.
pub trait SessionRows: Send + Sync {
    /// The agent's name, for logs.
    fn agent(&self) -> &'static str;

    /// Every session, or why the database is not one this reader knows.
    fn list(&self, conn: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>>;

    /// Session `id`'s rows as JSON Lines with the signature of what was read
    /// (`Ok(Ok(None))`: no such session now), or why they cannot be read.
    fn dump(
        &self,
        conn: &Connection,
        id: &str,
    ) -> rusqlite::Result<Result<Option<RowDump>, String>>;

    /// The first line of a dump standing for a session whose rows could not be read
    /// this time: its identity, shaped as the agent's reader takes a first line.
    fn identity_line(&self, entry: &RowEntry) -> String {
        let mut w = ObjectWriter::default();
        w.string("id", &entry.id);
        w.finish()
    }
}

/// A line saying why a dump holds no rows (every reader of these dumps knows it).
pub fn unreadable_line(why: &str, database: &Path) -> Vec<u8> {
    let mut w = ObjectWriter::default();
    w.string("fen_unreadable", why)
        .string("database", &database.to_string_lossy());
    let mut b = w.finish().into_bytes();
    b.push(b'\n');
    b
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

/// The stamps a listing was read at: the database and its `-wal`.
fn stamps(db: &Path) -> (Option<FileStamp>, Option<FileStamp>) {
    (stamp(db), stamp(&with_suffix(db, "-wal")))
}

/// The database as last read.
struct Listing {
    at: (Option<FileStamp>, Option<FileStamp>),
    entries: HashMap<String, RowEntry>,
    order: Vec<String>,
    /// Why nothing could be read from it (shown as the `unreadable` unit).
    error: Option<String>,
}

/// One agent database's sessions.
pub struct DbUnits<R: SessionRows> {
    db: PathBuf,
    rows: R,
    listing: Mutex<Option<Listing>>,
}

impl<R: SessionRows> DbUnits<R> {
    pub fn new(db: &Path, rows: R) -> Self {
        DbUnits {
            db: db.to_path_buf(),
            rows,
            listing: Mutex::new(None),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.db
    }

    pub fn rows(&self) -> &R {
        &self.rows
    }

    /// Whether the database or its WAL changed since the last listing (or it could
    /// not be read then).
    pub fn changed(&self) -> bool {
        let l = self.listing.lock().unwrap();
        match l.as_ref() {
            None => stamp(&self.db).is_some(),
            Some(l) => l.at != stamps(&self.db) || l.error.is_some(),
        }
    }

    /// Has the next access read the listing again though the database did not change
    /// (something the rows are read with changed elsewhere: Cursor's workspaces).
    pub fn invalidate(&self) {
        if let Some(l) = self.listing.lock().unwrap().as_mut() {
            l.at = (None, None);
        }
    }

    /// Re-reads the listing if the database or its WAL changed since.
    fn refresh(&self, slot: &mut Option<Listing>) {
        let at = stamps(&self.db);
        if at.0.is_none() {
            *slot = None;
            return;
        }
        if slot.as_ref().is_some_and(|l| l.at == at) {
            return;
        }
        if at.0.is_some_and(|s| s.size == 0) {
            // A database the agent has just created: nothing in it yet.
            *slot = Some(Listing {
                at,
                entries: HashMap::new(),
                order: Vec::new(),
                error: None,
            });
            return;
        }
        let (entries, error) = match sqlite_ro::read(&self.db, |c| self.rows.list(c)) {
            Ok(Ok(list)) => (list, None),
            Ok(Err(why)) => (Vec::new(), Some(why)),
            Err(ReadError::Busy(why)) if slot.is_some() => {
                // Keep what was read last; try again on the next access.
                log::info!(
                    "{}: {} busy ({why}); showing its last listing",
                    self.rows.agent(),
                    self.db.display()
                );
                if let Some(l) = slot.as_mut() {
                    l.at = (None, None);
                }
                return;
            }
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        if let Some(why) = &error {
            log::warn!("{}: {}: {why}", self.rows.agent(), self.db.display());
        }
        *slot = Some(Listing {
            at,
            order: entries.iter().map(|e| e.id.clone()).collect(),
            entries: entries.into_iter().map(|e| (e.id.clone(), e)).collect(),
            error,
        });
    }

    /// Every session now (the `unreadable` unit for a database that cannot be read).
    pub fn list(&self) -> Vec<UnitInfo> {
        let mut l = self.listing.lock().unwrap();
        self.refresh(&mut l);
        let Some(listing) = l.as_ref() else {
            return Vec::new();
        };
        if listing.error.is_some() {
            return vec![UnitInfo {
                key: self.db.join(UNREADABLE),
                cwd: None,
            }];
        }
        listing
            .order
            .iter()
            .map(|id| UnitInfo {
                key: self.db.join(id),
                cwd: listing.entries[id].cwd.clone(),
            })
            .collect()
    }

    /// The session ids of the last listing.
    pub fn ids(&self) -> Vec<String> {
        let mut l = self.listing.lock().unwrap();
        self.refresh(&mut l);
        l.as_ref().map(|l| l.order.clone()).unwrap_or_default()
    }

    /// Whether `key` names a unit of this database.
    pub fn owns(&self, key: &Path) -> bool {
        key.parent() == Some(self.db.as_path())
    }

    fn id_of(&self, key: &Path) -> Option<String> {
        self.owns(key)
            .then(|| key.file_name().map(|n| n.to_string_lossy().into_owned()))
            .flatten()
    }

    fn unreadable_signature(&self, l: &Listing) -> Signature {
        let why = l.error.as_deref().unwrap_or_default();
        Signature {
            hash: crate::store::atomic::checksum(&[
                why.as_bytes(),
                self.db.as_os_str().as_encoded_bytes(),
            ]),
            updated_ms: l.at.0.map(|s| (s.mtime_ns / 1_000_000) as i64).unwrap_or(0),
        }
    }

    fn signature_in(&self, l: &Listing, id: &str) -> Option<Signature> {
        if id == UNREADABLE {
            return l.error.is_some().then(|| self.unreadable_signature(l));
        }
        l.entries.get(id).map(|e| e.signature)
    }

    /// `key`'s signature now (re-reading the listing if the database changed).
    pub fn signature(&self, key: &Path) -> Option<Signature> {
        let id = self.id_of(key)?;
        let mut l = self.listing.lock().unwrap();
        self.refresh(&mut l);
        self.signature_in(l.as_ref()?, &id)
    }

    /// `key`'s signature as the last listing read it.
    pub fn listed_signature(&self, key: &Path) -> Option<Signature> {
        let id = self.id_of(key)?;
        let l = self.listing.lock().unwrap();
        self.signature_in(l.as_ref()?, &id)
    }

    /// `key`'s rows as JSON Lines now.
    pub fn dump(&self, key: &Path) -> Option<Dump> {
        let id = self.id_of(key)?;
        if id == UNREADABLE {
            let l = self.listing.lock().unwrap();
            let l = l.as_ref()?;
            let why = l.error.clone()?;
            return Some(Dump {
                bytes: unreadable_line(&why, &self.db),
                signature: self.unreadable_signature(l),
                transient: false,
            });
        }
        // The listing's entry as it is before the read: a listing read again meanwhile
        // (another access) would give rows newer than the ones that failed, and the
        // failure would be kept as their dump until the session changes again.
        let listed = self.entry(&id);
        match sqlite_ro::read(&self.db, |c| self.rows.dump(c, &id)) {
            Ok(Ok(found)) => found.map(|(bytes, signature)| Dump {
                bytes,
                signature,
                transient: false,
            }),
            Ok(Err(why)) => {
                let entry = listed?;
                let mut bytes = self.rows.identity_line(&entry).into_bytes();
                bytes.push(b'\n');
                bytes.extend_from_slice(&unreadable_line(&why, &self.db));
                Some(Dump {
                    bytes,
                    signature: entry.signature,
                    transient: false,
                })
            }
            Err(e) => {
                log::warn!(
                    "{}: {}: session {id}: {e}",
                    self.rows.agent(),
                    self.db.display()
                );
                // Said with the session's identity (so its folder stays where it
                // is); a made-up signature differs from the listing's, so the next
                // access reads it again.
                let entry = listed?;
                let mut bytes = self.rows.identity_line(&entry).into_bytes();
                bytes.push(b'\n');
                bytes.extend_from_slice(&unreadable_line(&e.to_string(), &self.db));
                Some(Dump {
                    bytes,
                    signature: Signature {
                        hash: !entry.signature.hash,
                        updated_ms: entry.signature.updated_ms,
                    },
                    transient: true,
                })
            }
        }
    }

    fn entry(&self, id: &str) -> Option<RowEntry> {
        self.listing
            .lock()
            .unwrap()
            .as_ref()?
            .entries
            .get(id)
            .cloned()
    }
}

/// The columns of `table` (empty: no such table).
pub fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let cols = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(cols)
}

/// Whether every one of `want` is among `cols`.
pub fn has_all(cols: &[String], want: &[&str]) -> bool {
    want.iter().all(|w| cols.iter().any(|c| c == w))
}

/// A hash of a row's every column (for signatures).
pub fn row_hash(row: &rusqlite::Row, n: usize, into: &mut Vec<u8>) {
    use rusqlite::types::ValueRef;
    for i in 0..n {
        match row.get_ref(i) {
            Ok(ValueRef::Null) | Err(_) => into.push(0),
            Ok(ValueRef::Integer(v)) => into.extend_from_slice(&v.to_le_bytes()),
            Ok(ValueRef::Real(v)) => into.extend_from_slice(&v.to_le_bytes()),
            Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => {
                into.extend_from_slice(&(t.len() as u64).to_le_bytes());
                into.extend_from_slice(t);
            }
        }
        into.push(0xff);
    }
}

/// A column as a JSON value's text: TEXT as a string, numbers as numbers, NULL as
/// `null`; a BLOB as `null` (no agent here keeps one in a column that is dumped).
pub fn column_json(v: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null | ValueRef::Blob(_) => "null".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) if f.is_finite() => {
            serde_json::to_string(&f).unwrap_or_else(|_| "null".into())
        }
        ValueRef::Real(_) => "null".into(),
        ValueRef::Text(t) => crate::json::quote(&String::from_utf8_lossy(t)),
    }
}

/// SQLite's `CURRENT_TIMESTAMP` text (`YYYY-MM-DD HH:MM:SS`, UTC) or RFC 3339, as
/// milliseconds since the epoch.
pub fn sqlite_time_ms(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(t) {
        return Some(dt.timestamp_millis());
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S%.f",
    ] {
        if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(t, fmt) {
            return Some(dt.and_utc().timestamp_millis());
        }
    }
    None
}

/// Milliseconds since the epoch as fen's RFC 3339 text.
pub fn rfc3339_ms(ms: i64) -> Option<String> {
    let t = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)?;
    Some(crate::store::naming::timestamp(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// One session whose rows are a generation number, whose dump cannot read them,
    /// and something to do while a dump reads.
    #[derive(Default)]
    struct Shared {
        generation: AtomicU64,
        during_dump: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    }

    struct Failing(Arc<Shared>);

    impl Failing {
        fn entry(&self, generation: u64) -> RowEntry {
            RowEntry {
                id: "s1".into(),
                cwd: None,
                signature: Signature {
                    hash: generation,
                    updated_ms: 0,
                },
            }
        }
    }

    impl SessionRows for Failing {
        fn agent(&self) -> &'static str {
            "test"
        }

        fn list(&self, _: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>> {
            Ok(Ok(vec![
                self.entry(self.0.generation.load(Ordering::SeqCst)),
            ]))
        }

        fn dump(
            &self,
            _: &Connection,
            _: &str,
        ) -> rusqlite::Result<Result<Option<RowDump>, String>> {
            let generation = self.0.generation.load(Ordering::SeqCst);
            let during = self.0.during_dump.lock().unwrap().take();
            if let Some(f) = during {
                f();
            }
            Ok(Err(format!("generation {generation} cannot be read")))
        }
    }

    #[test]
    fn a_failed_dump_has_the_signature_listed_before_it_read() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("s.db");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let shared = Arc::new(Shared::default());
        let units = Arc::new(DbUnits::new(&db, Failing(shared.clone())));
        let key = db.join("s1");
        assert_eq!(units.list().len(), 1);
        let before = units.signature(&key).unwrap();

        // While the dump reads generation 0, the rows change and another access reads
        // the listing again.
        let (u, k, s) = (units.clone(), key.clone(), shared.clone());
        *shared.during_dump.lock().unwrap() = Some(Box::new(move || {
            s.generation.store(1, Ordering::SeqCst);
            u.invalidate();
            assert_eq!(u.signature(&k).map(|s| s.hash), Some(1));
        }));
        let d = units.dump(&key).unwrap();
        assert!(
            String::from_utf8_lossy(&d.bytes).contains("generation 0"),
            "{}",
            String::from_utf8_lossy(&d.bytes)
        );
        assert_eq!(d.signature, before, "the signature of what was read");
        assert_ne!(
            units.signature(&key),
            Some(d.signature),
            "so the next access dumps again"
        );
    }

    #[test]
    fn sqlite_times_read_as_utc() {
        assert_eq!(
            sqlite_time_ms("2026-08-16 04:05:14"),
            Some(1_786_853_114_000)
        );
        assert_eq!(
            sqlite_time_ms("2026-08-16T04:05:14.500+00:00"),
            Some(1_786_853_114_500)
        );
        assert_eq!(sqlite_time_ms("yesterday"), None);
        assert_eq!(
            rfc3339_ms(1_786_853_114_000).as_deref(),
            Some("2026-08-16T04:05:14.000Z")
        );
    }
}
