//! Where the search index lives and whether it may be trusted: `<store>/.fen-cache/
//! search/`, reached without following links, checked before use like every cache
//! (its format version and schema, and every segment file's own checksum), rebuilt
//! when missing, stale or damaged, and kept in memory when the folder cannot be
//! written.
//!
//! One process writes at a time: it holds `writer.lock` (a `flock`) for as long as it
//! may write, a daemon for its whole life. Another process that wants to search reads
//! the index as the writer keeps it, and never changes a file in the folder.

use super::folder::IndexFolder;
use super::schema::{FORMAT_VERSION, Fields, TOKENIZER, analyzer};
use crate::store::layout::CACHE_DIR;
use crate::store::open::Dir;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use tantivy::{Index, IndexSettings};

/// The index's folder in `.fen-cache`.
pub const SEARCH_DIR: &str = "search";
const WRITER_LOCK: &str = "writer.lock";
/// Segment files whose checksum was verified, with the stamp they had then.
const CHECKED: &str = "checked.json";

/// The commit payload: what the index is and how far it got.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    pub format: String,
    pub version: u32,
    /// Every session of `sources` was indexed when this was committed.
    pub complete: bool,
    pub sessions: u64,
    pub indexed: u64,
    /// The sources this index covers (`agent:root`).
    #[serde(default)]
    pub sources: Vec<String>,
    /// Where the writer (a daemon) has the store mounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<PathBuf>,
    /// Which holding of the writer lock made this commit (`Storage::token`): a reader
    /// trusts `complete` only from the process holding the lock now, which has then
    /// looked at the sessions since it took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
    /// The process that made this commit, when it has the store mounted (`mount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

pub const FORMAT: &str = "fen-fs search";

impl Stamp {
    pub fn parse(payload: Option<&str>) -> Option<Stamp> {
        let s: Stamp = serde_json::from_str(payload?).ok()?;
        (s.format == FORMAT && s.version == FORMAT_VERSION).then_some(s)
    }
}

/// Where an open index lives.
pub enum Place {
    /// On disk, in `path`; `lock` is held while this process may write it.
    Disk {
        path: PathBuf,
        folder: Dir,
        lock: Option<File>,
    },
    /// In memory only, and why.
    Memory { why: String },
    /// Not there yet, and another process holds the lock (it is building it): an
    /// empty stand-in, for a reader, until the writer's first commit.
    Absent,
}

pub struct Storage {
    pub index: Index,
    pub place: Place,
    /// Said once (log, and the CLI's stderr): rebuilt, or kept in memory, and why.
    pub notes: Vec<String>,
    /// The reader the checks opened (every segment opens), for the engine to keep.
    pub reader: Option<tantivy::IndexReader>,
    /// A writer's: this holding of the lock, written into the lock file and into
    /// every commit's stamp (a fresh UUID each time the lock is taken).
    pub token: Option<String>,
    /// `meta.json`'s stamp when `reader` was opened, proved (it did not change
    /// while the checks opened it); `None`: unknown.
    pub opened_at: MetaStamp,
}

impl Storage {
    /// Whether this process may write the index.
    pub fn writable(&self) -> bool {
        match &self.place {
            Place::Disk { lock, .. } => lock.is_some(),
            Place::Memory { .. } => true,
            Place::Absent => false,
        }
    }
}

fn settings() -> IndexSettings {
    IndexSettings {
        docstore_compression: tantivy::store::Compressor::Lz4,
        ..IndexSettings::default()
    }
}

fn with_tokenizer(index: Index) -> Index {
    index.tokenizers().register(TOKENIZER, analyzer());
    index
}

/// A fresh, empty index in memory.
pub fn memory(fields: &Fields, why: String) -> Storage {
    let index = Index::builder()
        .schema(fields.schema.clone())
        .settings(settings())
        .create_in_ram()
        .expect("an index in memory");
    Storage {
        index: with_tokenizer(index),
        place: Place::Memory { why: why.clone() },
        notes: vec![why],
        reader: None,
        token: None,
        opened_at: None,
    }
}

/// Says which holding of the lock this is, in the lock file (best effort: a reader
/// that cannot read it takes the index as not looked at yet, the safe side).
fn write_token(lock: &File, token: &str) {
    use std::os::unix::fs::FileExt;
    let _ = lock.set_len(0);
    let _ = lock.write_all_at(token.as_bytes(), 0);
}

/// The token of whoever holds (or last held) the writer lock of `storage`'s folder.
pub fn holder(storage: &Storage) -> Option<String> {
    let Place::Disk { folder, .. } = &storage.place else {
        return None;
    };
    token_in(folder)
}

fn token_in(folder: &Dir) -> Option<String> {
    let token = String::from_utf8(folder.read_file(WRITER_LOCK, 256).ok()?).ok()?;
    (!token.is_empty()).then_some(token)
}

/// The token in `store_root`'s lock file: that of the holding of the lock that wrote
/// it last (each holding writes a new one as it takes the lock).
pub fn lock_token(store_root: &Path) -> Option<String> {
    token_in(&existing_folder(store_root)?)
}

/// The search folder of `store_root` if there is one (never made: for readers).
fn existing_folder(store_root: &Path) -> Option<Dir> {
    Dir::open_root(store_root)
        .and_then(|root| root.walk(&[CACHE_DIR, SEARCH_DIR]))
        .ok()
}

/// Takes the writer lock if nobody holds it.
pub fn try_lock(folder: &Dir) -> std::io::Result<Option<File>> {
    let (f, _) = folder.open_file_with(WRITER_LOCK, libc::O_RDWR | libc::O_CREAT, 0o600)?;
    // SAFETY: valid fd.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(Some(f));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// The search folder of `store_root`, created (0700) if missing; never through a link.
pub fn folder(store_root: &Path) -> std::io::Result<Dir> {
    if !store_root.is_dir() {
        return Err(std::io::Error::from_raw_os_error(libc::ENOENT));
    }
    Dir::open_root(store_root)?.walk_create(&[CACHE_DIR, SEARCH_DIR])
}

/// The stamp of the index's last commit in `store_root`, read from Tantivy's
/// `meta.json` alone (no segment opened): who keeps the index and what it covers.
pub fn committed_stamp(store_root: &Path) -> Option<Stamp> {
    let folder = existing_folder(store_root)?;
    let meta = folder.read_file("meta.json", 64 << 20).ok()?;
    #[derive(Deserialize)]
    struct Meta {
        payload: Option<String>,
    }
    let meta: Meta = serde_json::from_slice(&meta).ok()?;
    Stamp::parse(meta.payload.as_deref())
}

/// The writer lock, taken ahead of opening the index: a daemon takes it before its
/// mount is ready (opening and checking the index come later, in the background),
/// so that a command run right after the mount does not take the writer's role.
pub struct Held {
    folder: Dir,
    lock: File,
    token: String,
}

/// Takes the writer lock of `store_root`'s index if it is free.
pub fn hold(store_root: &Path) -> Option<Held> {
    let folder = folder(store_root).ok()?;
    let lock = try_lock(&folder).ok()??;
    let token = new_token(&lock);
    Some(Held {
        folder,
        lock,
        token,
    })
}

/// A fresh token for this holding of the lock, written into the lock file.
fn new_token(lock: &File) -> String {
    let t = uuid::Uuid::now_v7().to_string();
    write_token(lock, &t);
    t
}

/// Opens the index of `store_root` as its writer, with the lock `held`.
pub fn open_held(fields: &Fields, held: Held) -> Storage {
    open_in(held.folder, fields, Some((held.lock, held.token)))
}

/// Opens the index of `store_root`: as its writer if the lock is free and `write`,
/// else for reading. Anything that cannot be trusted is rebuilt (by the writer) or
/// replaced by an empty index in memory (by a reader, which may not touch the files).
pub fn open(store_root: &Path, fields: &Fields, write: bool) -> Storage {
    let where_ = store_root.join(CACHE_DIR).join(SEARCH_DIR);
    let folder = match folder(store_root) {
        Ok(f) => f,
        Err(e) => {
            return memory(
                fields,
                format!(
                    "the search index cannot be kept in {} ({e}): it is built in memory, for this process only",
                    where_.display()
                ),
            );
        }
    };
    let lock = if write {
        match try_lock(&folder) {
            Ok(l) => l,
            Err(e) => {
                return memory(
                    fields,
                    format!(
                        "the search index cannot be kept in {} ({e}): it is built in memory, for this process only",
                        where_.display()
                    ),
                );
            }
        }
    } else {
        None
    };
    let lock = lock.map(|l| {
        let t = new_token(&l);
        (l, t)
    });
    open_in(folder, fields, lock)
}

/// Opens the index in `folder`, as its writer with `lock` (and its token).
fn open_in(folder: Dir, fields: &Fields, lock: Option<(File, String)>) -> Storage {
    let (lock, token) = match lock {
        Some((l, t)) => (Some(l), Some(t)),
        None => (None, None),
    };
    let path = folder.path().to_path_buf();
    let mut notes = Vec::new();
    match (open_checked_steady(&folder, fields, lock.is_some()), lock) {
        (Ok((index, reader, opened_at)), lock) => Storage {
            index,
            place: Place::Disk { path, folder, lock },
            notes,
            reader: Some(reader),
            token,
            opened_at,
        },
        (Err(why), Some(lock)) => {
            if why != Damage::Missing {
                notes.push(format!(
                    "search index in {}: {}; rebuilding it",
                    path.display(),
                    why.say()
                ));
            }
            match rebuild(&folder, fields) {
                Ok(index) => Storage {
                    index,
                    place: Place::Disk {
                        path,
                        folder,
                        lock: Some(lock),
                    },
                    notes,
                    reader: None,
                    token,
                    opened_at: None,
                },
                Err(e) => {
                    let mut s = memory(
                        fields,
                        format!(
                            "the search index cannot be written in {} ({e}): it is built in memory, for this process only",
                            path.display()
                        ),
                    );
                    notes.append(&mut s.notes);
                    s.notes = notes;
                    s
                }
            }
        }
        (Err(Damage::Missing), None) => {
            // Another process (a mount) holds the lock and builds it: nothing to
            // search yet, and an answer says the index is being built.
            Storage {
                place: Place::Absent,
                notes: Vec::new(),
                ..memory(fields, String::new())
            }
        }
        (Err(why), None) => {
            let msg = format!(
                "search index in {}: {}, and another process holds it: searching in memory this time",
                path.display(),
                why.say()
            );
            memory(fields, msg)
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Damage {
    Missing,
    Other(String),
}

impl Damage {
    fn say(&self) -> String {
        match self {
            Damage::Missing => "missing".into(),
            Damage::Other(s) => s.clone(),
        }
    }
}

/// `open_checked`, proved against a writer beside it: what was checked and opened
/// is one commit only if `meta.json` was not replaced meanwhile; if it was (a commit,
/// or a merge deleting the files the old one named: no damage), the index is opened
/// again, for up to a second.
fn open_checked_steady(
    folder: &Dir,
    fields: &Fields,
    writer: bool,
) -> Result<(Index, tantivy::IndexReader, MetaStamp), Damage> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let before = meta_stamp(folder);
        let r = open_checked(folder, fields, writer);
        let steady = meta_stamp(folder) == before;
        if writer || steady || std::time::Instant::now() >= deadline {
            // Not steady: no stamp vouches for what was opened.
            return r.map(|(i, rd)| (i, rd, if steady { before } else { None }));
        }
    }
}

/// A stamp of `meta.json` (time, size, inode).
pub type MetaStamp = Option<(i64, u64, u64)>;

/// `meta.json`'s stamp: a commit replaces it (a new inode, a new time).
pub fn meta_stamp(folder: &Dir) -> Option<(i64, u64, u64)> {
    let st = folder.stat("meta.json").ok()?;
    Some((
        st.st_mtime * 1_000_000_000 + st.st_mtime_nsec,
        st.st_size as u64,
        st.st_ino,
    ))
}

/// Opens the index in `folder` if everything in it checks out.
fn open_checked(
    folder: &Dir,
    fields: &Fields,
    writer: bool,
) -> Result<(Index, tantivy::IndexReader), Damage> {
    let names = folder
        .read_dir()
        .map_err(|e| Damage::Other(format!("cannot list it ({e})")))?;
    for (name, kind) in &names {
        if !kind.is_file() {
            return Err(Damage::Other(format!(
                "{} is not a regular file",
                name.to_string_lossy()
            )));
        }
    }
    if !names.iter().any(|(n, _)| n == "meta.json") {
        return Err(Damage::Missing);
    }
    let dir =
        IndexFolder::open(folder).map_err(|e| Damage::Other(format!("cannot open it ({e})")))?;
    let index = Index::open(dir).map_err(|e| Damage::Other(format!("unreadable ({e})")))?;
    if index.schema() != fields.schema {
        return Err(Damage::Other("made with another schema".into()));
    }
    let metas = index
        .load_metas()
        .map_err(|e| Damage::Other(format!("unreadable ({e})")))?;
    if Stamp::parse(metas.payload.as_deref()).is_none() && !metas.segments.is_empty() {
        return Err(Damage::Other(
            "made by another version of fen-fs (or never committed whole)".into(),
        ));
    }
    let index = with_tokenizer(index);
    let reader = verify_segments(folder, &index, &metas, writer)?;
    Ok((index, reader))
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
struct FileStamp {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
}

fn file_stamp(m: &std::fs::Metadata) -> FileStamp {
    FileStamp {
        size: m.len(),
        mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        ctime_ns: m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        ino: m.ino(),
    }
}

/// The segment files known to be intact: each with its stamp and when that was
/// established.
#[derive(Serialize, Deserialize, Default)]
struct Checked {
    files: HashMap<String, CheckedFile>,
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
struct CheckedFile {
    stamp: FileStamp,
    at_ns: i64,
}

/// File times have the granularity of the kernel's clock tick: a file changed in the
/// same tick as its check keeps its stamp. A file is trusted by its stamp only once it
/// was checked well after it was last written (as git treats "racily clean" files);
/// until then every reader checks it, and the writer checks it again once it is old
/// enough (`recheck`).
const RACY_NS: i64 = 2_000_000_000;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl CheckedFile {
    fn written_ns(&self) -> i64 {
        self.stamp.mtime_ns.max(self.stamp.ctime_ns)
    }

    fn racy(&self) -> bool {
        self.written_ns() + RACY_NS >= self.at_ns
    }

    fn trusts(&self, stamp: &FileStamp) -> bool {
        self.stamp == *stamp && !self.racy()
    }
}

fn load_checked(folder: &Dir) -> Checked {
    folder
        .read_file(CHECKED, 16 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save_checked(folder: &Dir, checked: &Checked) {
    if let Ok(bytes) = serde_json::to_vec(checked) {
        let _ = folder.replace_file(CHECKED, &bytes);
    }
}

/// Whether segment file `name` matches the checksum in its own footer (Tantivy's:
/// the body, then a JSON footer `{"version":…,"crc":N}`, its length and a magic
/// number, both little-endian u32). Read with `pread`, not through the index's memory
/// maps, whose pages would then count in this process's memory for as long as the
/// segment is open.
fn checksum_ok(folder: &Dir, name: &str) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let (f, meta) = folder.open_file(name)?;
    let len = meta.len();
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    if len < 8 {
        return Err(bad("shorter than its footer"));
    }
    let mut tail = [0u8; 8];
    f.read_exact_at(&mut tail, len - 8)?;
    let footer_len = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    let magic = u32::from_le_bytes(tail[4..].try_into().expect("4 bytes"));
    if magic != 1337 || footer_len > 50_000 || footer_len + 8 > len {
        return Err(bad("no valid footer"));
    }
    let body_len = len - 8 - footer_len;
    let mut footer = vec![0u8; footer_len as usize];
    f.read_exact_at(&mut footer, body_len)?;
    #[derive(Deserialize)]
    struct Footer {
        crc: u32,
    }
    let footer: Footer = serde_json::from_slice(&footer).map_err(|_| bad("unreadable footer"))?;
    let mut crc = crc32fast::Hasher::new();
    // Most files checked are a fresh commit's, of a few KB: a buffer of 1 MiB zeroed
    // for each was most of a search's time right after commits.
    let mut buf = vec![0u8; body_len.min(1 << 20) as usize];
    let mut at = 0u64;
    while at < body_len {
        let n = ((body_len - at) as usize).min(buf.len());
        f.read_exact_at(&mut buf[..n], at)?;
        crc.update(&buf[..n]);
        at += n as u64;
    }
    Ok(crc.finalize() == footer.crc)
}

/// Every file of the committed segments exists and matches its own checksum. A file
/// verified before (same size, times and inode, and not racily so) is not read again:
/// segment files never change once written, so a changed stamp means someone else
/// changed it.
fn verify_segments(
    folder: &Dir,
    index: &Index,
    metas: &tantivy::IndexMeta,
    writer: bool,
) -> Result<tantivy::IndexReader, Damage> {
    let checked = load_checked(folder);
    let started = now_ns();
    let mut known = HashMap::new();
    let mut changed = false;
    for path in metas.list_segment_files() {
        let name = path.to_string_lossy().into_owned();
        let Ok((_, meta)) = folder.open_file(&name) else {
            // Delete bitsets of other opstamps are candidates too; a missing core
            // file is caught when the reader opens the segment.
            continue;
        };
        let stamp = file_stamp(&meta);
        let entry = match checked.files.get(&name) {
            Some(c) if c.trusts(&stamp) => *c,
            _ => {
                let ok = checksum_ok(folder, &name)
                    .map_err(|e| Damage::Other(format!("{name} is unreadable ({e})")))?;
                if !ok {
                    return Err(Damage::Other(format!("{name} fails its checksum")));
                }
                changed = true;
                CheckedFile {
                    stamp,
                    at_ns: started,
                }
            }
        };
        known.insert(name, entry);
    }
    // Every segment must open too (a truncated file fails here).
    let reader = index
        .reader_builder()
        .reload_policy(tantivy::ReloadPolicy::Manual)
        .try_into()
        .map_err(|e| Damage::Other(format!("a segment does not open ({e})")))?;
    if writer && (changed || known.len() != checked.files.len()) {
        save_checked(folder, &Checked { files: known });
    }
    Ok(reader)
}

/// The calling thread, and the threads it starts from now on, create files private
/// (umask 077) whatever the process's umask: the index's writer threads create
/// Tantivy's files, and a merge still running when the daemon exits at unmount
/// leaves files nobody makes private after it. The thread gets a filesystem context
/// of its own first (`unshare(CLONE_FS)`), so the daemon's umask is left as it is.
pub fn private_files_on_this_thread() {
    // SAFETY: plain syscalls on the calling thread.
    unsafe {
        if libc::unshare(libc::CLONE_FS) == 0 {
            libc::umask(0o077);
        }
    }
}

/// Makes every file in the folder 0600: Tantivy creates its files under the umask,
/// and fen-fs's own files are private whatever the umask (the folder is 0700 too).
/// Files are opened without following links and changed through the descriptor.
pub fn make_private(folder: &Dir) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(names) = folder.read_dir() else {
        return;
    };
    for (name, kind) in names {
        if !kind.is_file() {
            continue;
        }
        if let Ok((f, meta)) = folder.open_file(&name)
            && meta.permissions().mode() & 0o777 != 0o600
        {
            let _ = f.set_permissions(std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// Records the current segment files (the writer calls this after a commit or a
/// merge: it wrote them itself). Returns when the first of them may be checked again
/// to be trusted by its stamp (`recheck`), if any is still racy.
pub fn mark_checked(folder: &Dir, index: &Index) -> Option<std::time::SystemTime> {
    make_private(folder);
    let metas = index.load_metas().ok()?;
    let old = load_checked(folder);
    let now = now_ns();
    let mut checked = Checked::default();
    for path in metas.list_segment_files() {
        let name = path.to_string_lossy().into_owned();
        if let Ok((_, meta)) = folder.open_file(&name) {
            let stamp = file_stamp(&meta);
            let entry = match old.files.get(&name) {
                Some(c) if c.stamp == stamp => *c,
                _ => CheckedFile { stamp, at_ns: now },
            };
            checked.files.insert(name, entry);
        }
    }
    save_checked(folder, &checked);
    racy_until(&checked)
}

/// The segment files of the index's current commit that a reader opening it now
/// would read whole: not recorded in `checked.json`, or recorded racily.
pub fn unchecked(folder: &Dir, index: &Index) -> Vec<String> {
    let checked = load_checked(folder);
    let Ok(metas) = index.load_metas() else {
        return Vec::new();
    };
    metas
        .list_segment_files()
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|name| {
            let Ok((_, meta)) = folder.open_file(name) else {
                return false;
            };
            !checked
                .files
                .get(name)
                .is_some_and(|c| c.trusts(&file_stamp(&meta)))
        })
        .collect()
}

/// When the first racily recorded file may be checked again (each is, as soon as it
/// may: until then every reader checks it whole).
fn racy_until(checked: &Checked) -> Option<std::time::SystemTime> {
    checked
        .files
        .values()
        .filter(|c| c.racy())
        .map(|c| c.written_ns() + RACY_NS + 1)
        .min()
        .map(|ns| std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns.max(0) as u64))
}

/// Checks again (their checksums) the files that were racily clean, now that they are
/// old enough to be trusted by their stamp afterwards, so readers stop checking them.
/// A file that fails is left untrusted (the next open rebuilds the index). Returns
/// when to call again, if some file is still racy (and may then be checked).
pub fn recheck(folder: &Dir) -> Option<std::time::SystemTime> {
    let mut checked = load_checked(folder);
    let now = now_ns();
    let mut changed = false;
    for (name, c) in checked.files.iter_mut() {
        if !c.racy() || c.written_ns() + RACY_NS >= now {
            continue;
        }
        let Ok((_, meta)) = folder.open_file(name) else {
            continue;
        };
        if file_stamp(&meta) != c.stamp {
            continue;
        }
        match checksum_ok(folder, name) {
            Ok(true) => {
                c.at_ns = now;
                changed = true;
            }
            _ => log::warn!("search index: {name} fails its checksum"),
        }
    }
    if changed {
        save_checked(folder, &checked);
    }
    racy_until(&checked)
}

/// Empties the folder (but the lock) and creates a fresh index in it.
fn rebuild(folder: &Dir, fields: &Fields) -> std::io::Result<Index> {
    for (name, kind) in folder.read_dir()? {
        if name == WRITER_LOCK {
            continue;
        }
        if kind.is_dir() {
            // Nothing of ours is a folder: whatever it is goes, links not followed.
            std::fs::remove_dir_all(folder.path().join(&name))?;
        } else {
            folder.unlink(&name)?;
        }
    }
    let dir = IndexFolder::open(folder).map_err(std::io::Error::other)?;
    let index = Index::builder()
        .schema(fields.schema.clone())
        .settings(settings())
        .open_or_create(dir)
        .map_err(std::io::Error::other)?;
    make_private(folder);
    Ok(with_tokenizer(index))
}

/// Makes this disk index writable: takes the lock (if free), then re-checks and, if
/// need be, rebuilds. `None` while another process holds the lock.
pub fn take_over(store_root: &Path, fields: &Fields) -> Option<Storage> {
    let folder = folder(store_root).ok()?;
    let lock = try_lock(&folder).ok()??;
    drop(lock);
    let s = open(store_root, fields, true);
    matches!(s.place, Place::Disk { lock: Some(_), .. }).then_some(s)
}
