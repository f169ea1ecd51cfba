//! Reading another agent's SQLite database strictly read-only and consistently,
//! without creating, locking or changing anything in its folder (OpenCode's
//! `opencode.db`, Cursor's `store.db`).
//!
//! SQLite's own read-only modes all touch the folder: a WAL database opened with
//! `SQLITE_OPEN_READONLY` still opens (and creates) `-shm` read-write and takes
//! `fcntl` locks on it and on the database; `readonly_shm=1` still locks, and as root
//! `fchown`s the `-shm`; `nolock=1` cannot read a WAL database at all; `immutable=1`
//! ignores the `-wal`, where most rows of a live database are. So fen-fs reads through
//! its own VFS, `fen-ro`: every file is opened `O_RDONLY | O_NOFOLLOW` (through
//! `store::open`), never written, truncated or deleted; locks are no-ops that grant
//! SHARED and refuse anything stronger (so SQLite never checkpoints, rolls back or
//! deletes); and the WAL index lives in this process's memory, as in SQLite's
//! exclusive mode: each connection runs WAL recovery itself, which accepts only the
//! frames up to the last commit whose checksums hold. A transaction being written
//! is therefore never seen, half or whole, until its commit frame is there.
//!
//! Taking no lock means the agent may checkpoint (copy WAL pages into the database
//! file) or restart the WAL while we read. [`read`] detects both: it notes the
//! database file's stamp and the WAL header (its salts change on every restart)
//! before opening, and compares them after the last query; if either changed (or a
//! query failed), it reads again, a few times, then reports the database busy.
//! Appends to the WAL alone do not disturb a reader: they are beyond its snapshot.

use crate::store::index::FileStamp;
use rusqlite::ffi;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

const VFS_NAME: &CStr = c"fen-ro";

/// Why a database could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// It kept changing under every attempt (a checkpoint or WAL restart each time),
    /// or a writer holds it in a way a reader must wait for (a hot rollback journal).
    Busy(String),
    /// Not a database, damaged, or refused by SQLite.
    Unreadable(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Busy(why) => write!(f, "database busy: {why}"),
            ReadError::Unreadable(why) => write!(f, "database unreadable: {why}"),
        }
    }
}

/// How many times a read is tried while the database changes under it.
const ATTEMPTS: u32 = 10;

/// The files whose state decides whether a read saw one consistent database.
#[derive(Debug, Clone, PartialEq)]
struct Guard {
    db: Option<FileStamp>,
    wal_header: Option<[u8; 32]>,
    journal: bool,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn guard(db: &Path) -> Guard {
    let wal_header = crate::store::open::open_regular(&sibling(db, "-wal"))
        .ok()
        .and_then(|(f, _)| {
            let mut h = [0u8; 32];
            f.read_exact_at(&mut h, 0).ok().map(|_| h)
        });
    Guard {
        db: stamp(db),
        wal_header,
        journal: stamp(&sibling(db, "-journal")).is_some_and(|s| s.size > 0),
    }
}

/// Runs `f` on a read-only connection to the database at `db` (an absolute path) and
/// returns its result only if nothing it read can have been torn by a concurrent
/// writer; retried a few times otherwise.
pub fn read<T>(
    db: &Path,
    mut f: impl FnMut(&rusqlite::Connection) -> rusqlite::Result<T>,
) -> Result<T, ReadError> {
    register();
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(5 << attempt.min(4)));
        }
        let before = guard(db);
        if before.db.is_none() {
            return Err(ReadError::Unreadable(format!(
                "{} is not a regular file",
                db.display()
            )));
        }
        if before.journal {
            // A writer in rollback mode is mid-commit (or crashed): its journal must
            // be played back first, which a reader may not do.
            last = "a rollback journal is present".into();
            continue;
        }
        let files = (before.db, stamp(&sibling(db, "-wal")));
        let conn = match take_cached(db, files) {
            Some(c) => Ok(c),
            None => open(db),
        };
        let result = conn.and_then(|conn| {
            let v = f(&conn);
            if v.is_ok() {
                put_cached(db, files, conn);
            }
            v
        });
        let after = guard(db);
        if after != before {
            // The snapshot may be torn: never reuse that connection.
            drop_cached(db);
        }
        match result {
            Ok(v) if after == before => return Ok(v),
            Ok(_) => last = "it changed while being read".into(),
            Err(e) if after != before => last = format!("it changed while being read ({e})"),
            Err(e) if is_busy(&e) => last = e.to_string(),
            Err(e) => return Err(ReadError::Unreadable(e.to_string())),
        }
    }
    Err(ReadError::Busy(last))
}

/// Connections kept open while their database and `-wal` are exactly as when they
/// were opened: such a connection's snapshot is the database as it is now, and reusing
/// it spares opening, parsing the schema and WAL recovery (many sessions of one
/// database are read in a row). Any change to either file retires it.
struct Cached {
    files: (Option<FileStamp>, Option<FileStamp>),
    conn: rusqlite::Connection,
    used: u64,
}

const CACHED: usize = 8;

fn cache() -> &'static std::sync::Mutex<(u64, std::collections::HashMap<PathBuf, Cached>)> {
    static C: std::sync::OnceLock<
        std::sync::Mutex<(u64, std::collections::HashMap<PathBuf, Cached>)>,
    > = std::sync::OnceLock::new();
    C.get_or_init(Default::default)
}

fn take_cached(
    db: &Path,
    files: (Option<FileStamp>, Option<FileStamp>),
) -> Option<rusqlite::Connection> {
    let mut c = cache().lock().unwrap();
    let cached = c.1.remove(db)?;
    (cached.files == files).then_some(cached.conn)
}

fn put_cached(
    db: &Path,
    files: (Option<FileStamp>, Option<FileStamp>),
    conn: rusqlite::Connection,
) {
    let mut c = cache().lock().unwrap();
    c.0 += 1;
    let used = c.0;
    c.1.insert(db.to_path_buf(), Cached { files, conn, used });
    if c.1.len() > CACHED
        && let Some(oldest) =
            c.1.iter()
                .min_by_key(|(_, v)| v.used)
                .map(|(k, _)| k.clone())
    {
        c.1.remove(&oldest);
    }
}

fn drop_cached(db: &Path) {
    cache().lock().unwrap().1.remove(db);
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn open(db: &Path) -> rusqlite::Result<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    let conn = rusqlite::Connection::open_with_flags_and_vfs(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        VFS_NAME,
    )?;
    // Sorting and temporary tables stay in memory: the VFS opens no other file.
    conn.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA query_only = 1;")?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    Ok(conn)
}

fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_vfs_find(NULL) returns the default VFS, which lives for the
        // whole process; the new VFS is leaked for the same reason.
        unsafe {
            let default = ffi::sqlite3_vfs_find(std::ptr::null());
            assert!(!default.is_null(), "SQLite has a default VFS");
            let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
                iVersion: 2,
                szOsFile: std::mem::size_of::<RoFile>() as c_int,
                mxPathname: 4096,
                pNext: std::ptr::null_mut(),
                zName: VFS_NAME.as_ptr(),
                pAppData: default.cast(),
                xOpen: Some(x_open),
                xDelete: Some(x_delete),
                xAccess: Some(x_access),
                xFullPathname: Some(x_full_pathname),
                xDlOpen: None,
                xDlError: None,
                xDlSym: None,
                xDlClose: None,
                xRandomness: Some(x_randomness),
                xSleep: Some(x_sleep),
                xCurrentTime: Some(x_current_time),
                xGetLastError: Some(x_get_last_error),
                xCurrentTimeInt64: Some(x_current_time_int64),
                xSetSystemCall: None,
                xGetSystemCall: None,
                xNextSystemCall: None,
            }));
            let rc = ffi::sqlite3_vfs_register(vfs, 0);
            assert_eq!(rc, ffi::SQLITE_OK, "register the read-only VFS");
        }
    });
}

/// The file object SQLite allocates (`szOsFile` bytes) and we fill in `x_open`.
#[repr(C)]
struct RoFile {
    base: ffi::sqlite3_file,
    inner: *mut Inner,
}

struct Inner {
    /// `None`: a WAL that does not exist, seen as an empty file (never created).
    file: Option<File>,
    /// This connection's private WAL index (the main database file's object only).
    shm: Vec<Box<[u8]>>,
}

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};

fn default_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: pAppData was set to the default VFS at registration.
    unsafe { (*vfs).pAppData.cast() }
}

fn path_of(name: *const c_char) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if name.is_null() {
        return None;
    }
    // SAFETY: SQLite passes NUL-terminated names.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

/// The bits of `xOpen`'s flags that say which kind of file SQLite wants.
const KIND_MASK: c_int = ffi::SQLITE_OPEN_MAIN_DB
    | ffi::SQLITE_OPEN_TEMP_DB
    | ffi::SQLITE_OPEN_TRANSIENT_DB
    | ffi::SQLITE_OPEN_MAIN_JOURNAL
    | ffi::SQLITE_OPEN_TEMP_JOURNAL
    | ffi::SQLITE_OPEN_SUBJOURNAL
    | ffi::SQLITE_OPEN_SUPER_JOURNAL
    | ffi::SQLITE_OPEN_WAL;

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let ro = file.cast::<RoFile>();
    // SAFETY: SQLite gives szOsFile bytes; pMethods NULL means "nothing to close".
    unsafe {
        (*ro).base.pMethods = std::ptr::null();
        (*ro).inner = std::ptr::null_mut();
    }
    let Some(path) = path_of(name) else {
        // Temporary files: none are needed (temp_store = MEMORY).
        return ffi::SQLITE_CANTOPEN;
    };
    let kind = flags & KIND_MASK;
    let opened = crate::store::open::open_regular(&path);
    let file = match (opened, kind) {
        (Ok((f, _)), ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_WAL) => Some(f),
        (Ok((f, _)), ffi::SQLITE_OPEN_MAIN_JOURNAL) => Some(f),
        // A WAL that is not there reads as empty; it is never created.
        (Err(e), ffi::SQLITE_OPEN_WAL) if e.errno == libc::ENOENT => None,
        _ => return ffi::SQLITE_CANTOPEN,
    };
    let inner = Box::into_raw(Box::new(Inner {
        file,
        shm: Vec::new(),
    }));
    // SAFETY: as above; out_flags may be NULL.
    unsafe {
        (*ro).inner = inner;
        (*ro).base.pMethods = &IO_METHODS;
        if !out_flags.is_null() {
            *out_flags = ffi::SQLITE_OPEN_READONLY | kind;
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_delete(_: *mut ffi::sqlite3_vfs, _: *const c_char, _: c_int) -> c_int {
    // Never: nothing of another agent's is ever removed.
    ffi::SQLITE_IOERR_DELETE
}

unsafe extern "C" fn x_access(
    _: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    res: *mut c_int,
) -> c_int {
    let exists = path_of(name)
        .and_then(|p| std::fs::symlink_metadata(p).ok())
        // As SQLite's unix VFS: an empty regular file does not count as existing.
        .is_some_and(|m| !m.is_file() || m.len() > 0);
    let answer = match flags {
        ffi::SQLITE_ACCESS_READWRITE => false,
        _ => exists,
    };
    // SAFETY: SQLite passes a valid out-pointer.
    unsafe { *res = answer as c_int };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_full_pathname(
    _: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    // Paths are given absolute; links are not resolved (every open refuses them).
    // SAFETY: NUL-terminated input; `out` holds n_out bytes.
    unsafe {
        let bytes = CStr::from_ptr(name).to_bytes_with_nul();
        if bytes.len() > n_out as usize {
            return ffi::SQLITE_CANTOPEN;
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), out, bytes.len());
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let d = default_vfs(vfs);
    // SAFETY: delegating to the default VFS with its own pointer.
    unsafe { (*d).xRandomness.map_or(0, |f| f(d, n, out)) }
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, us: c_int) -> c_int {
    let d = default_vfs(vfs);
    // SAFETY: as above.
    unsafe { (*d).xSleep.map_or(0, |f| f(d, us)) }
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, t: *mut f64) -> c_int {
    let d = default_vfs(vfs);
    // SAFETY: as above.
    unsafe { (*d).xCurrentTime.map_or(ffi::SQLITE_ERROR, |f| f(d, t)) }
}

unsafe extern "C" fn x_current_time_int64(vfs: *mut ffi::sqlite3_vfs, t: *mut i64) -> c_int {
    let d = default_vfs(vfs);
    // SAFETY: as above.
    unsafe {
        (*d).xCurrentTimeInt64
            .map_or(ffi::SQLITE_ERROR, |f| f(d, t))
    }
}

unsafe extern "C" fn x_get_last_error(
    vfs: *mut ffi::sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    let d = default_vfs(vfs);
    // SAFETY: as above.
    unsafe { (*d).xGetLastError.map_or(0, |f| f(d, n, out)) }
}

/// The `Inner` behind a file object SQLite hands back.
///
/// # Safety
/// `file` must be a file object opened by `x_open` and not yet closed.
unsafe fn inner<'a>(file: *mut ffi::sqlite3_file) -> &'a mut Inner {
    // SAFETY: per the contract, `inner` points to a live Box.
    unsafe { &mut *(*file.cast::<RoFile>()).inner }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let ro = file.cast::<RoFile>();
    // SAFETY: the Box made in x_open, freed once.
    unsafe {
        if !(*ro).inner.is_null() {
            drop(Box::from_raw((*ro).inner));
            (*ro).inner = std::ptr::null_mut();
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: an open file object; `buf` holds `amount` bytes.
    let (inner, out) = unsafe {
        (
            inner(file),
            std::slice::from_raw_parts_mut(buf.cast::<u8>(), amount.max(0) as usize),
        )
    };
    let mut done = 0usize;
    if let Some(f) = &inner.file {
        while done < out.len() {
            match f.read_at(&mut out[done..], offset as u64 + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return ffi::SQLITE_IOERR_READ,
            }
        }
    }
    if done < out.len() {
        // SQLite requires the unread rest zeroed on a short read.
        out[done..].fill(0);
        return ffi::SQLITE_IOERR_SHORT_READ;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_write(
    _: *mut ffi::sqlite3_file,
    _: *const c_void,
    _: c_int,
    _: i64,
) -> c_int {
    ffi::SQLITE_READONLY
}

unsafe extern "C" fn x_truncate(_: *mut ffi::sqlite3_file, _: i64) -> c_int {
    ffi::SQLITE_READONLY
}

unsafe extern "C" fn x_sync(_: *mut ffi::sqlite3_file, _: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    // SAFETY: an open file object and a valid out-pointer.
    let inner = unsafe { inner(file) };
    let len = match &inner.file {
        Some(f) => match f.metadata() {
            Ok(m) => m.len() as i64,
            Err(_) => return ffi::SQLITE_IOERR_FSTAT,
        },
        None => 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { *size = len };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_lock(_: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // A reader needs SHARED; anything stronger (to write, checkpoint, roll back a
    // journal or delete the WAL) is refused, and no lock is ever taken on the file.
    if level <= ffi::SQLITE_LOCK_SHARED {
        ffi::SQLITE_OK
    } else {
        ffi::SQLITE_BUSY
    }
}

unsafe extern "C" fn x_unlock(_: *mut ffi::sqlite3_file, _: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_check_reserved_lock(_: *mut ffi::sqlite3_file, res: *mut c_int) -> c_int {
    // SAFETY: valid out-pointer.
    unsafe { *res = 0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_control(_: *mut ffi::sqlite3_file, _: c_int, _: *mut c_void) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn x_sector_size(_: *mut ffi::sqlite3_file) -> c_int {
    4096
}

unsafe extern "C" fn x_device_characteristics(_: *mut ffi::sqlite3_file) -> c_int {
    0
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: an open file object (the main database) and a valid out-pointer.
    let inner = unsafe { inner(file) };
    let region = region as usize;
    while inner.shm.len() <= region {
        if extend == 0 {
            // SAFETY: valid out-pointer.
            unsafe { *out = std::ptr::null_mut() };
            return ffi::SQLITE_OK;
        }
        inner
            .shm
            .push(vec![0u8; size.max(0) as usize].into_boxed_slice());
    }
    // SAFETY: valid out-pointer; the region's address stays fixed until unmap.
    unsafe { *out = inner.shm[region].as_mut_ptr().cast() };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shm_lock(_: *mut ffi::sqlite3_file, _: c_int, _: c_int, _: c_int) -> c_int {
    // The WAL index is this connection's own memory: no one to exclude.
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shm_barrier(_: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, _delete: c_int) -> c_int {
    // SAFETY: an open file object.
    unsafe { inner(file) }.shm.clear();
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::MetadataExt;

    /// Every file in `dir`: (size, mtime ns, ctime ns, content).
    fn state(dir: &Path) -> BTreeMap<String, (u64, i128, i128, Vec<u8>)> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let m = e.metadata().unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    (
                        m.len(),
                        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
                        m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
                        std::fs::read(e.path()).unwrap(),
                    ),
                )
            })
            .collect()
    }

    /// A WAL database whose rows stay in the `-wal` (no automatic checkpoint), and its
    /// writer connection.
    fn wal_db(dir: &Path) -> (PathBuf, rusqlite::Connection) {
        let path = dir.join("x.db");
        let w = rusqlite::Connection::open(&path).unwrap();
        w.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);",
        )
        .unwrap();
        (path, w)
    }

    fn count(db: &Path) -> Result<i64, ReadError> {
        read(db, |c| {
            c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        })
    }

    #[test]
    fn reads_rows_that_live_only_in_the_wal_and_changes_no_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (db, w) = wal_db(tmp.path());
        for i in 0..50 {
            w.execute("INSERT INTO t (v) VALUES (?1)", [format!("row {i}")])
                .unwrap();
        }
        assert!(sibling(&db, "-wal").exists() && sibling(&db, "-shm").exists());
        let before = state(tmp.path());
        assert_eq!(count(&db), Ok(50));
        assert_eq!(state(tmp.path()), before, "a read changed the folder");
    }

    #[test]
    fn without_a_shm_file_none_is_created() {
        let tmp = tempfile::tempdir().unwrap();
        let (db, w) = wal_db(tmp.path());
        w.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
        for i in 0..20 {
            w.execute("INSERT INTO t (v) VALUES (?1)", [format!("row {i}")])
                .unwrap();
        }
        drop(w);
        let _ = std::fs::remove_file(sibling(&db, "-shm"));
        assert!(sibling(&db, "-wal").metadata().unwrap().len() > 0);
        let before = state(tmp.path());
        assert_eq!(count(&db), Ok(20));
        assert_eq!(state(tmp.path()), before);
        assert!(!sibling(&db, "-shm").exists());
    }

    #[test]
    fn a_transaction_being_written_is_not_seen_until_it_commits() {
        let tmp = tempfile::tempdir().unwrap();
        let (db, w) = wal_db(tmp.path());
        w.execute("INSERT INTO t (v) VALUES ('committed')", [])
            .unwrap();
        // A small page cache makes the open transaction spill its pages into the WAL.
        w.execute_batch("PRAGMA cache_size = 2; BEGIN IMMEDIATE;")
            .unwrap();
        for i in 0..500 {
            w.execute("INSERT INTO t (v) VALUES (?1)", [format!("{i:0>200}")])
                .unwrap();
        }
        let wal = sibling(&db, "-wal").metadata().unwrap().len();
        assert!(wal > 100_000, "the open transaction spilled ({wal} bytes)");
        assert_eq!(count(&db), Ok(1));
        w.execute_batch("COMMIT").unwrap();
        assert_eq!(count(&db), Ok(501));
    }

    #[test]
    fn a_writer_checkpointing_and_restarting_the_wal_is_never_seen_half() {
        let tmp = tempfile::tempdir().unwrap();
        let (db, w) = wal_db(tmp.path());
        w.execute_batch("CREATE TABLE s (n INTEGER NOT NULL); INSERT INTO s VALUES (0);")
            .unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // Each transaction adds 10 rows and counts them in `s`; checkpoints
                // and WAL restarts run in between.
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    w.execute_batch("BEGIN").unwrap();
                    for _ in 0..10 {
                        w.execute("INSERT INTO t (v) VALUES (?1)", ["x".repeat(300)])
                            .unwrap();
                    }
                    w.execute("UPDATE s SET n = n + 10", []).unwrap();
                    w.execute_batch("COMMIT").unwrap();
                    n += 1;
                    if n % 3 == 0 {
                        w.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
                            .unwrap();
                    }
                    if n % 7 == 0 {
                        w.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                            .unwrap();
                    }
                }
            })
        };
        let (mut ok, mut busy) = (0, 0);
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < deadline {
            let r = read(&db, |c| {
                let rows: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
                let n: i64 = c.query_row("SELECT n FROM s", [], |r| r.get(0))?;
                Ok((rows, n))
            });
            match r {
                Ok((rows, n)) => {
                    assert_eq!(rows, n, "a torn read");
                    ok += 1;
                }
                Err(ReadError::Busy(_)) => busy += 1,
                Err(e) => panic!("{e}"),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert!(ok > 0, "no read succeeded ({busy} busy)");
    }

    #[test]
    fn a_rollback_journal_database_reads_too_and_garbage_is_unreadable() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("r.db");
        let w = rusqlite::Connection::open(&path).unwrap();
        w.execute_batch("CREATE TABLE t (v); INSERT INTO t VALUES (1), (2);")
            .unwrap();
        drop(w);
        let before = state(tmp.path());
        assert_eq!(count(&path), Ok(2));
        assert_eq!(state(tmp.path()), before);
        let junk = tmp.path().join("junk.db");
        std::fs::write(&junk, vec![7u8; 8192]).unwrap();
        assert!(matches!(count(&junk), Err(ReadError::Unreadable(_))));
        assert!(matches!(
            count(&tmp.path().join("missing.db")),
            Err(ReadError::Unreadable(_))
        ));
        // A hot journal (a writer died mid-commit) is a reason to wait, never to
        // roll it back ourselves.
        std::fs::write(sibling(&path, "-journal"), b"not empty").unwrap();
        assert!(matches!(count(&path), Err(ReadError::Busy(_))));
    }
}
