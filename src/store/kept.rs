//! Kept copies of other agents' sessions (§11), on disk. Only this machine's keeper
//! writes them; a peer that receives the store reads them as they are.
//!
//!     <store>/.kept/<agent>/<name>/kept.json       the record (facts, generations)
//!     <store>/.kept/<agent>/<name>/<n>.jsonl       generation n, as plain bytes
//!     <store>/.kept/<agent>/<name>/<n>.jsonl.zst   generation n, compressed (zstd)
//!
//! A generation is one state of the session's bytes; a later one starts when the
//! source dropped or altered bytes already kept, and the earlier ones stay (versions).
//! The newest grows by appends: bytes to a plain file, a frame to a compressed one
//! (zstd reads concatenated frames as one stream), so a synced copy changes only at
//! its end. A quiet plain generation is compressed once.
//!
//! The record is the commit point: a generation file counts only as far as its record
//! says (`stored` bytes on disk for `len` bytes of session, with their CRC-32). Data
//! is written first and synced (`syncfs`, once per batch), then the record is replaced
//! (temp file + rename); a new copy is made in a hidden `.new-<name>` folder and
//! renamed into place whole. What a crash leaves past the record is cut off or removed
//! by `recover`, so no half-written copy is ever read as one.

use super::naming;
use super::open::Dir;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub use super::layout::{KEPT_DIR, kept_dir};
/// A kept session's record, in its folder.
pub const RECORD: &str = "kept.json";
/// A copy being made (renamed to its name once whole).
const NEW_PREFIX: &str = ".new-";
/// The record's format.
pub const RECORD_FORMAT: u32 = 1;
/// A record larger than this is not read (a damaged or planted one cannot cost memory).
const MAX_RECORD: u64 = 4 << 20;
/// One read of the source while copying.
const CHUNK: usize = 2 << 20;
/// How far ahead of the chunk being copied the disk is asked to read.
const AHEAD: usize = 8 << 20;
/// zstd's settings for kept copies (`zst_sink`): its fastest match finder, with a
/// window wide enough to reach the text a session repeats (a file read again, a
/// prompt sent again). Measured on the bench's history against level 3 (`zstd -b`,
/// one core, each file its own frame): 1.33x faster and 0.93x the size.
const WINDOW_LOG: u32 = 23;
const HASH_LOG: u32 = 17;
/// JSON's repeated keys and quotes make short matches cost more than they save.
const MIN_MATCH: u32 = 6;

/// What a long copy asks of its caller between chunks: whether to stop (it then
/// keeps what it copied, cut at a line's end) and a chance to let foreground work go
/// first.
pub struct Control<'a> {
    pub stop: &'a (dyn Fn() -> bool + Sync),
    pub pause: &'a (dyn Fn() + Sync),
}

impl Control<'_> {
    /// Never stops, never pauses.
    pub fn none() -> Control<'static> {
        Control {
            stop: &|| false,
            pause: &|| {},
        }
    }
}

/// Facts about a session that came from outside its bytes (another file of the
/// agent's, the file's place), as the source showed them when the copy was last
/// brought up to date: enough to show the copy exactly so where the agent's folder
/// cannot be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutsideFacts {
    pub cwd: Option<String>,
    pub title: Option<String>,
    #[serde(default)]
    pub archived: bool,
    pub created_at: Option<String>,
    /// The namespace (as the store names it) and session folder it was shown in.
    pub namespace: Option<String>,
    pub dir: Option<String>,
}

/// What proves that the source is still the file the copy was made from: its device
/// and inode, and the first and last 4 KiB of the bytes kept (`index::content_check`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceProof {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub edges: u64,
    pub mtime_ns: i128,
}

/// One state of the session's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    pub n: u32,
    /// `<n>.jsonl` or `<n>.jsonl.zst`, in the copy's folder.
    pub file: String,
    /// The session's bytes it holds.
    pub len: u64,
    /// CRC-32 of those bytes.
    pub crc32: u32,
    /// The file's bytes that count (the rest, if any, is a torn write).
    pub stored: u64,
    /// When this generation was first kept, and when a later one replaced it.
    pub started: String,
    #[serde(default)]
    pub ended: Option<String>,
    /// Why it ended: the source was rewritten, cut short...
    #[serde(default)]
    pub why: Option<String>,
    /// The source's mtime as of these bytes (the session's last update where the
    /// agent takes it from the file's time).
    pub source_mtime_ns: i128,
}

impl Generation {
    pub fn compressed(&self) -> bool {
        self.file.ends_with(".zst")
    }
}

/// A kept session's record (`kept.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptRecord {
    pub format: u32,
    /// The agent's name (`claude`, `codex`...).
    pub agent: String,
    /// Where the session lives at its source: its file, or for a database-backed
    /// session `<database>/<session id>`.
    pub source: PathBuf,
    /// The agent's root it was found under.
    pub source_root: PathBuf,
    /// A database-backed session: its bytes are the reader's dump of its rows.
    #[serde(default)]
    pub unit: bool,
    /// The session's id, as the source read it.
    pub id: String,
    pub facts: OutsideFacts,
    /// When the keeper first and last saw the source (last: to the hour, or when it
    /// saw it go).
    pub first_seen: String,
    pub last_seen: String,
    /// The source is gone (deleted by its agent or by hand).
    #[serde(default)]
    pub source_deleted: bool,
    #[serde(default)]
    pub deleted_noticed: Option<String>,
    /// Oldest first; the last is the current one.
    pub generations: Vec<Generation>,
    pub proof: SourceProof,
}

impl KeptRecord {
    pub fn current(&self) -> Option<&Generation> {
        self.generations.last()
    }

    fn current_mut(&mut self) -> Option<&mut Generation> {
        self.generations.last_mut()
    }

    /// Whether every file it names is a plain name of a generation (a record is read
    /// from a store that may be damaged or synced from elsewhere).
    pub fn sane(&self) -> bool {
        self.format == RECORD_FORMAT
            && !self.generations.is_empty()
            && self
                .generations
                .iter()
                .all(|g| g.file == plain_name(g.n) || g.file == zst_name(g.n))
    }
}

pub fn plain_name(n: u32) -> String {
    format!("{n}.jsonl")
}

pub fn zst_name(n: u32) -> String {
    format!("{n}.jsonl.zst")
}

/// The kept copy's folder name for a session: its id (or file stem) made path-safe,
/// and a hash of where it lives at its source (two files may carry one id).
pub fn folder_name(id: &str, source: &Path) -> String {
    let base = if id.is_empty() {
        source
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        id.to_string()
    };
    let safe: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let h = naming::fnv1a64(source.as_os_str().as_encoded_bytes());
    format!("{safe}-{h:016x}")
}

fn io(what: impl std::fmt::Display, e: std::io::Error) -> Error {
    Error::io(what, &e)
}

/// Reads a record from an open copy folder (`None`: missing, damaged or not ours).
pub fn read_record(folder: &Dir) -> Option<KeptRecord> {
    let bytes = folder.read_file(RECORD, MAX_RECORD).ok()?;
    serde_json::from_slice::<KeptRecord>(&bytes)
        .ok()
        .filter(KeptRecord::sane)
}

/// The copies of one agent in a `.kept` folder: (folder name, record), sorted by
/// name; folders being made and folders without a readable record are left out.
pub fn records(agent_dir: &Dir) -> Vec<(String, KeptRecord)> {
    let mut out = Vec::new();
    each_record(agent_dir, |name, r| out.push((name, r)));
    out
}

/// Each copy's record in `agent_dir`, by folder name, one at a time (a keeper
/// rereading 10,000 records holds one, not all of them beside its own).
pub fn each_record(agent_dir: &Dir, mut f: impl FnMut(String, KeptRecord)) {
    let mut names: Vec<String> = agent_dir
        .read_dir()
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, kind)| kind.is_dir() && !name.as_encoded_bytes().starts_with(b"."))
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    names.sort();
    for name in names {
        if let Some(r) = agent_dir
            .open_dir(&name)
            .ok()
            .as_ref()
            .and_then(read_record)
        {
            f(name, r);
        }
    }
}

/// Writes `bytes` as `name` in `dir` through a temp file and a rename (no sync: the
/// caller's batch syncs; a lost rename leaves the previous record, which the copy's
/// bytes still satisfy).
fn replace(dir: &Dir, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    dir.replace_file(name, bytes)
}

fn record_bytes(r: &KeptRecord) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(r).expect("a record serializes");
    b.push(b'\n');
    b
}

/// `syncfs` of the filesystem holding `dir`: one flush for a whole batch of copies.
pub fn sync_all(dir: &Dir) -> Result<()> {
    let f = dir.open_self().map_err(|e| io("the kept folder", e))?;
    // SAFETY: a valid descriptor.
    if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
        return Err(io("syncfs", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The `.kept` folder of a store (created 0700 when `create`), and its agents'.
pub struct KeptStore {
    root: Dir,
}

/// What a copy operation wrote and still has to commit (after the batch is synced).
pub enum Staged {
    /// A new copy, whole in `.new-<name>`: renamed to `<name>`.
    New {
        agent: String,
        name: String,
        record: Box<KeptRecord>,
    },
    /// An existing copy's new record; then the files it no longer names go.
    Update {
        agent: String,
        name: String,
        record: Box<KeptRecord>,
    },
}

/// Where a copy's bytes go: a plain file, or zstd frames.
enum Sink {
    Plain(File),
    Zst(zstd::stream::write::Encoder<'static, File>),
}

/// A copy's writes pass the store's write gate: a keeper that did not stop in time
/// must not write after the daemon unmounted.
impl Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<()> {
        super::write_gate::pass(|| match self {
            Sink::Plain(f) => f.write_all(b),
            Sink::Zst(e) => e.write_all(b),
        })
    }

    fn finish(self) -> std::io::Result<File> {
        super::write_gate::pass(|| match self {
            Sink::Plain(f) => Ok(f),
            Sink::Zst(e) => e.finish(),
        })
    }
}

/// Cuts a copy's file back to `len` (a torn or undone append), through the store's
/// write gate as every write of a copy.
fn cut(f: &File, len: u64) -> std::io::Result<()> {
    super::write_gate::pass(|| f.set_len(len))
}

/// A zstd frame with its checksum, for about `len` bytes (no size pledged: a copy
/// stopped mid-way still ends its frame, and the rest comes as the next frame).
fn zst_sink(f: File, len: u64) -> std::io::Result<Sink> {
    use zstd::zstd_safe::{CParameter, Strategy};
    let (window_log, hash_log) = zst_logs(len);
    let mut e = zstd::stream::write::Encoder::new(f, 0)?;
    e.set_parameter(CParameter::Strategy(Strategy::ZSTD_fast))?;
    e.set_parameter(CParameter::WindowLog(window_log))?;
    e.set_parameter(CParameter::HashLog(hash_log))?;
    e.set_parameter(CParameter::MinMatch(MIN_MATCH))?;
    e.include_checksum(true)?;
    Ok(Sink::Zst(e))
}

/// The window and hash table for a frame of `len` bytes: no wider than the bytes
/// (the same frame, byte for byte, for a copy that fits), as zstd itself narrows them
/// when it knows the size. Without a pledged size it does not, and each encoder took
/// an 8 MiB window and a 512 KiB table however small the session: about 9.7 MB per
/// copying worker, held while it copies (row 11's peak, docs/performance.md).
fn zst_logs(len: u64) -> (u32, u32) {
    // ZSTD_WINDOWLOG_MIN; the smallest window that holds `len` bytes.
    let window_log = (u64::BITS - len.saturating_sub(1).leading_zeros()).clamp(10, WINDOW_LOG);
    (window_log, HASH_LOG.min(window_log + 1))
}

/// Copies `src[from..to]` into `sink`, a chunk at a time; on `stop`, ends after the
/// last whole line copied. Returns how many bytes it copied and their CRC-32 chained
/// on `crc`.
fn copy_range(
    src: &File,
    from: u64,
    to: u64,
    sink: &mut Sink,
    crc: u32,
    ctl: &Control,
) -> std::io::Result<(u64, u32)> {
    let mut hasher = crc32fast::Hasher::new_with_initial(crc);
    let mut pos = from;
    // No bigger than what is copied: most sessions are a few KB, and a 2 MiB buffer
    // zeroed per copy was most of what copying them wrote to memory.
    let mut buf = vec![0u8; CHUNK.min(to.saturating_sub(from) as usize)];
    // The part of the last chunk after its last newline, written with the next one.
    let mut held: Vec<u8> = Vec::new();
    let mut copied = 0u64;
    // The disk reads the chunks ahead while this one is compressed (a worker waiting
    // on each read left its core idle: a first keep is bound by CPU, not the disk).
    let mut ahead = pos;
    while pos < to {
        if (ctl.stop)() {
            return Ok((copied, hasher.finalize()));
        }
        (ctl.pause)();
        if ahead < (pos + AHEAD as u64).min(to) {
            let end = (pos + 2 * AHEAD as u64).min(to);
            super::open::advise(src, ahead, end - ahead, libc::POSIX_FADV_WILLNEED);
            ahead = end;
        }
        let want = ((to - pos) as usize).min(CHUNK);
        let n = pread(src, &mut buf[..want], pos)?;
        if n == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENODATA));
        }
        pos += n as u64;
        let read = &buf[..n];
        let cut = if pos == to {
            n
        } else {
            memchr::memrchr(b'\n', read).map_or(0, |i| i + 1)
        };
        if cut == 0 {
            // No line ends in this chunk: all of it waits for the rest of its line.
            held.extend_from_slice(read);
            continue;
        }
        for part in [&held[..], &read[..cut]] {
            if part.is_empty() {
                continue;
            }
            sink.write(part)?;
            hasher.update(part);
            copied += part.len() as u64;
        }
        held.clear();
        held.extend_from_slice(&read[cut..]);
    }
    Ok((copied, hasher.finalize()))
}

fn pread(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    loop {
        // SAFETY: the buffer is valid for its length.
        let n = unsafe {
            libc::pread(
                f.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                at as libc::off_t,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn now() -> String {
    naming::timestamp(chrono::Utc::now())
}

impl KeptStore {
    /// The `.kept` folder of the store at `root`: created (0700) when `create`, else
    /// `None` when there is none.
    pub fn open(root: &Path, create: bool) -> Result<Option<KeptStore>> {
        let store = Dir::open_root(root).map_err(|e| io(root.display(), e))?;
        let kept = if create {
            store.create_dir(KEPT_DIR)
        } else {
            match store.open_dir(KEPT_DIR) {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
                other => other,
            }
        };
        let root = kept.map_err(|e| io(kept_dir(root).display(), e))?;
        Ok(Some(KeptStore { root }))
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    pub fn dir(&self) -> &Dir {
        &self.root
    }

    /// The agents that have copies here.
    pub fn agents(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .root
            .read_dir()
            .unwrap_or_default()
            .into_iter()
            .filter(|(n, k)| k.is_dir() && !n.to_string_lossy().starts_with('.'))
            .filter_map(|(n, _)| n.to_str().map(String::from))
            .collect();
        out.sort();
        out
    }

    pub fn agent_dir(&self, agent: &str) -> Result<Dir> {
        self.root
            .create_dir(agent)
            .map_err(|e| io(self.root.path().join(agent).display(), e))
    }

    /// Every copy of `agent`.
    pub fn records(&self, agent: &str) -> Vec<(String, KeptRecord)> {
        match self.root.open_dir(agent) {
            Ok(d) => records(&d),
            Err(_) => Vec::new(),
        }
    }

    /// `records`, one at a time (`each_record`).
    pub fn each_record(&self, agent: &str, f: impl FnMut(String, KeptRecord)) {
        if let Ok(d) = self.root.open_dir(agent) {
            each_record(&d, f);
        }
    }

    /// Flushes what the batch wrote (before its records are committed).
    pub fn sync(&self) -> Result<()> {
        sync_all(&self.root)
    }

    /// Undoes what a crash left of `agent`'s copies: half-made copies, bytes past a
    /// record's length, files no record names. Only the keeper (holding the keep
    /// lock) calls it.
    pub fn recover(&self, agent: &str) -> Result<()> {
        let dir = self.agent_dir(agent)?;
        for (name, kind) in dir.read_dir().unwrap_or_default() {
            let Some(name) = name.to_str() else { continue };
            if !kind.is_dir() {
                if name.starts_with('.') && name.ends_with(".tmp") {
                    let _ = dir.unlink(name);
                }
                continue;
            }
            if name.starts_with(NEW_PREFIX) {
                remove_tree(&dir, name);
                continue;
            }
            let Ok(folder) = dir.open_dir(name) else {
                continue;
            };
            let Some(r) = read_record(&folder) else {
                // A folder without a record was never a copy (the record is made
                // before the folder gets its name): nothing in it is anyone's.
                log::warn!("kept copy {agent}/{name}: no readable record; left as it is");
                continue;
            };
            for (file, _) in folder.read_dir().unwrap_or_default() {
                let Some(file) = file.to_str() else { continue };
                if file == RECORD {
                    continue;
                }
                match r.generations.iter().find(|g| g.file == file) {
                    Some(g) => {
                        if let Ok((f, meta)) = folder.open_file_with(file, libc::O_WRONLY, 0)
                            && meta.len() > g.stored
                        {
                            let _ = cut(&f, g.stored);
                        }
                    }
                    None => {
                        let _ = folder.unlink(file);
                    }
                }
            }
        }
        Ok(())
    }

    /// Starts a copy of `src[0..len]` as generation 1 of `record` (whose
    /// `generations` and `proof` it fills in), compressed when `compress`. On `stop`
    /// it keeps what it copied so far, cut at a line's end (the next keep appends the
    /// rest). Returns what to commit, or `None` when nothing was copied.
    pub fn stage_new(
        &self,
        name: &str,
        mut record: KeptRecord,
        src: &File,
        len: u64,
        compress: bool,
        ctl: &Control,
    ) -> Result<Option<Staged>> {
        let dir = self.agent_dir(&record.agent)?;
        let tmp = format!("{NEW_PREFIX}{name}");
        remove_tree(&dir, &tmp);
        let made = (|| -> Result<Option<()>> {
            let folder = dir.create_dir(&tmp).map_err(|e| io(&tmp, e))?;
            let file = if compress { zst_name(1) } else { plain_name(1) };
            let (f, _) = folder
                .open_file_with(&file, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o600)
                .map_err(|e| io(&file, e))?;
            let mut sink = if compress {
                zst_sink(f, len).map_err(|e| io(&file, e))?
            } else {
                Sink::Plain(f)
            };
            let (copied, crc) =
                copy_range(src, 0, len, &mut sink, 0, ctl).map_err(|e| io(&file, e))?;
            if copied == 0 && len > 0 {
                return Ok(None);
            }
            let f = sink.finish().map_err(|e| io(&file, e))?;
            let stored = f.metadata().map_err(|e| io(&file, e))?.len();
            record.generations = vec![Generation {
                n: 1,
                file,
                len: copied,
                crc32: crc,
                stored,
                started: now(),
                ended: None,
                why: None,
                source_mtime_ns: record.proof.mtime_ns,
            }];
            record.proof.len = copied;
            if copied < len {
                record.proof.edges = crate::store::index::content_check(src, copied)
                    .map_err(|e| io("the source", e))?;
            }
            replace(&folder, RECORD, &record_bytes(&record)).map_err(|e| io(RECORD, e))?;
            Ok(Some(()))
        })();
        match made {
            Ok(Some(())) => Ok(Some(Staged::New {
                agent: record.agent.clone(),
                name: name.to_string(),
                record: Box::new(record),
            })),
            Ok(None) => {
                remove_tree(&dir, &tmp);
                Ok(None)
            }
            Err(e) => {
                remove_tree(&dir, &tmp);
                Err(e)
            }
        }
    }

    /// Appends `src[from..to]` to the current generation of copy `name` (whose
    /// bytes end at `from`, as its record says), as plain bytes or a new zstd frame.
    pub fn stage_append(
        &self,
        name: &str,
        mut record: KeptRecord,
        src: &File,
        to: u64,
        ctl: &Control,
    ) -> Result<Option<Staged>> {
        let dir = self.agent_dir(&record.agent)?;
        let folder = dir.open_dir(name).map_err(|e| io(name, e))?;
        let g = record.current().cloned().ok_or_else(|| damaged(name))?;
        let (f, meta) = folder
            .open_file_with(&g.file, libc::O_WRONLY, 0)
            .map_err(|e| io(&g.file, e))?;
        if meta.len() < g.stored {
            return Err(damaged(name));
        }
        // A torn append of an earlier run: cut it off first.
        if meta.len() > g.stored {
            cut(&f, g.stored).map_err(|e| io(&g.file, e))?;
        }
        let seek = |f: &File| -> std::io::Result<File> {
            let mut f = f.try_clone()?;
            std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(g.stored))?;
            Ok(f)
        };
        let out = seek(&f).map_err(|e| io(&g.file, e))?;
        let mut sink = if g.compressed() {
            zst_sink(out, to.saturating_sub(g.len)).map_err(|e| io(&g.file, e))?
        } else {
            Sink::Plain(out)
        };
        let undo = |e: Error| {
            let _ = cut(&f, g.stored);
            e
        };
        let (copied, crc) = copy_range(src, g.len, to, &mut sink, g.crc32, ctl)
            .map_err(|e| undo(io(&g.file, e)))?;
        if copied == 0 {
            let _ = cut(&f, g.stored);
            return Ok(None);
        }
        sink.finish().map_err(|e| undo(io(&g.file, e)))?;
        let stored = f.metadata().map_err(|e| undo(io(&g.file, e)))?.len();
        let new_len = g.len + copied;
        let mtime = record.proof.mtime_ns;
        let cur = record.current_mut().expect("a current generation");
        cur.len = new_len;
        cur.crc32 = crc;
        cur.stored = stored;
        cur.source_mtime_ns = mtime;
        record.proof.len = new_len;
        record.proof.edges = crate::store::index::content_check(src, new_len)
            .map_err(|e| undo(io("the source", e)))?;
        Ok(Some(Staged::Update {
            agent: record.agent.clone(),
            name: name.to_string(),
            record: Box::new(record),
        }))
    }

    /// Starts a new generation with `src[0..len]`. With `keep_old`, the current one
    /// stays as a version (compressed, if it was not), ended for `why`; without, it is
    /// replaced (its bytes are all in the new one).
    #[allow(clippy::too_many_arguments)]
    pub fn stage_generation(
        &self,
        name: &str,
        mut record: KeptRecord,
        src: &File,
        len: u64,
        keep_old: Option<&str>,
        compress: bool,
        ctl: &Control,
    ) -> Result<Option<Staged>> {
        let dir = self.agent_dir(&record.agent)?;
        let folder = dir.open_dir(name).map_err(|e| io(name, e))?;
        let old = record.current().cloned().ok_or_else(|| damaged(name))?;
        let n = record.generations.iter().map(|g| g.n).max().unwrap_or(0) + 1;
        let file = if compress { zst_name(n) } else { plain_name(n) };
        let (f, _) = folder
            .open_file_with(&file, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o600)
            .map_err(|e| io(&file, e))?;
        let mut sink = if compress {
            zst_sink(f, len).map_err(|e| io(&file, e))?
        } else {
            Sink::Plain(f)
        };
        let gone = |e: Error| {
            let _ = folder.unlink(zst_name(n)).and(folder.unlink(plain_name(n)));
            e
        };
        let (copied, crc) =
            copy_range(src, 0, len, &mut sink, 0, ctl).map_err(|e| gone(io(&file, e)))?;
        if copied < len {
            // Stopped: a new generation is made whole or not at all.
            drop(sink);
            let _ = folder.unlink(&file);
            return Ok(None);
        }
        let f = sink.finish().map_err(|e| gone(io(&file, e)))?;
        let stored = f.metadata().map_err(|e| gone(io(&file, e)))?.len();
        let now = now();
        if let Some(why) = keep_old {
            let kept = record.current_mut().expect("a current generation");
            kept.ended = Some(now.clone());
            kept.why = Some(why.to_string());
            if !old.compressed() {
                let z = self.compress_file(&folder, &old, ctl).map_err(gone)?;
                let kept = record.current_mut().expect("a current generation");
                kept.file = zst_name(old.n);
                kept.stored = z;
            }
        } else {
            record.generations.pop();
        }
        record.generations.push(Generation {
            n,
            file,
            len,
            crc32: crc,
            stored,
            started: now,
            ended: None,
            why: None,
            source_mtime_ns: record.proof.mtime_ns,
        });
        record.proof.len = len;
        record.proof.edges =
            crate::store::index::content_check(src, len).map_err(|e| gone(io("the source", e)))?;
        Ok(Some(Staged::Update {
            agent: record.agent.clone(),
            name: name.to_string(),
            record: Box::new(record),
        }))
    }

    /// Compresses the current generation of copy `name` (a quiet session). Returns
    /// what to commit, or `None` if it already is compressed.
    pub fn stage_compress(
        &self,
        name: &str,
        mut record: KeptRecord,
        ctl: &Control,
    ) -> Result<Option<Staged>> {
        let dir = self.agent_dir(&record.agent)?;
        let folder = dir.open_dir(name).map_err(|e| io(name, e))?;
        let g = record.current().cloned().ok_or_else(|| damaged(name))?;
        if g.compressed() {
            return Ok(None);
        }
        let stored = self.compress_file(&folder, &g, ctl)?;
        let cur = record.current_mut().expect("a current generation");
        cur.file = zst_name(g.n);
        cur.stored = stored;
        Ok(Some(Staged::Update {
            agent: record.agent.clone(),
            name: name.to_string(),
            record: Box::new(record),
        }))
    }

    /// Writes `<n>.jsonl.zst` from the plain generation `g`; returns its size.
    fn compress_file(&self, folder: &Dir, g: &Generation, ctl: &Control) -> Result<u64> {
        let (src, meta) = folder.open_file(&g.file).map_err(|e| io(&g.file, e))?;
        if meta.len() < g.stored {
            return Err(damaged(&g.file));
        }
        let name = zst_name(g.n);
        let (f, _) = folder
            .open_file_with(&name, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o600)
            .map_err(|e| io(&name, e))?;
        let mut sink = zst_sink(f, g.len).map_err(|e| io(&name, e))?;
        let whole = Control {
            stop: &|| false,
            pause: ctl.pause,
        };
        let written = copy_range(&src, 0, g.len, &mut sink, 0, &whole)
            .and_then(|(_, crc)| {
                if crc != g.crc32 {
                    return Err(std::io::Error::from_raw_os_error(libc::EIO));
                }
                sink.finish()
            })
            .and_then(|f| f.metadata());
        match written {
            Ok(m) => Ok(m.len()),
            Err(e) => {
                let _ = folder.unlink(&name);
                if e.raw_os_error() == Some(libc::EIO) {
                    Err(damaged(&g.file))
                } else {
                    Err(io(&name, e))
                }
            }
        }
    }

    /// A changed record alone (facts, sightings, the source gone or back).
    pub fn stage_record(&self, name: &str, record: KeptRecord) -> Staged {
        Staged::Update {
            agent: record.agent.clone(),
            name: name.to_string(),
            record: Box::new(record),
        }
    }

    /// Makes a staged operation count: the record replaced, or the new copy renamed
    /// into place; then the files its record no longer names are removed. Call after
    /// `sync` for everything staged since the last one.
    pub fn commit(&self, staged: Staged) -> Result<()> {
        match staged {
            Staged::New { agent, name, .. } => {
                let dir = self.agent_dir(&agent)?;
                let tmp = format!("{NEW_PREFIX}{name}");
                rename_noreplace(&dir, &tmp, &name).map_err(|e| io(&name, e))
            }
            Staged::Update {
                agent,
                name,
                record,
            } => {
                let dir = self.agent_dir(&agent)?;
                let folder = dir.open_dir(&name).map_err(|e| io(&name, e))?;
                replace(&folder, RECORD, &record_bytes(&record)).map_err(|e| io(RECORD, e))?;
                for (file, _) in folder.read_dir().unwrap_or_default() {
                    let Some(file) = file.to_str() else { continue };
                    if file != RECORD && !record.generations.iter().any(|g| g.file == file) {
                        let _ = folder.unlink(file);
                    }
                }
                Ok(())
            }
        }
    }

    /// Moves copy `agent/name` into the trash folder `trash` (one rename, then both
    /// folders synced), named `<name>.deleted-<stamp>`.
    pub fn trash(&self, agent: &str, name: &str, trash: &Dir) -> Result<String> {
        let from = self.agent_dir(agent)?;
        let to = trash.create_dir(agent).map_err(|e| io(agent, e))?;
        let stamp = naming::stamp(chrono::Utc::now());
        let new = super::layout::trashed_copy_name(name, &stamp);
        rename_between(&from, name, &to, &new).map_err(|e| io(name, e))?;
        let _ = to.sync();
        let _ = from.sync();
        Ok(new)
    }
}

/// The keep lock's file in the store's cache folder (created), and the cache
/// folder where kept copies are decompressed for reading (`.fen-cache/kept`).
pub fn keep_lock_and_scratch(root: &Path) -> Result<(File, Dir)> {
    let store = Dir::open_root(root).map_err(|e| io(root.display(), e))?;
    let cache = store
        .create_dir(super::layout::CACHE_DIR)
        .map_err(|e| io(super::layout::cache_dir(root).display(), e))?;
    let lock = || {
        cache.open_file_with(
            super::layout::KEEP_LOCK,
            libc::O_RDONLY | libc::O_CREAT,
            0o600,
        )
    };
    // Something planted in its place is not ours to open: made anew.
    let (file, _) = match lock() {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ELOOP)) => {
            let _ = cache.unlink(super::layout::KEEP_LOCK);
            lock()
        }
        other => other,
    }
    .map_err(|e| io(super::layout::KEEP_LOCK, e))?;
    let scratch = cache.create_dir("kept").map_err(|e| io("kept", e))?;
    Ok((file, scratch))
}

/// Whether the last keeper of the store at `root` ended cleanly (its mark is then
/// taken: a keeper that dies from now on leaves none).
pub fn take_clean_mark(root: &Path) -> bool {
    let Ok(cache) = Dir::open_root(root).and_then(|d| d.open_dir(super::layout::CACHE_DIR)) else {
        return false;
    };
    cache.unlink(super::layout::KEEP_CLEAN).is_ok()
}

/// Marks the keeper's end as clean (best effort: without it, the next keeper only
/// does more work).
pub fn set_clean_mark(root: &Path) {
    if let Ok(cache) = Dir::open_root(root).and_then(|d| d.open_dir(super::layout::CACHE_DIR)) {
        let _ = cache.replace_file(super::layout::KEEP_CLEAN, b"");
    }
}

impl Staged {
    /// The copy's record once committed.
    pub fn record(&self) -> &KeptRecord {
        match self {
            Staged::New { record, .. } | Staged::Update { record, .. } => record,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Staged::New { name, .. } | Staged::Update { name, .. } => name,
        }
    }
}

impl KeptStore {
    /// Generation `g` of copy `agent/name` as a file of its logical bytes: the plain
    /// file itself (read only as far as `g.len`), or the compressed one decompressed
    /// (and checked) into an unnamed file in `scratch`.
    pub fn generation_bytes(
        &self,
        agent: &str,
        name: &str,
        g: &Generation,
        scratch: &Dir,
    ) -> Result<File> {
        let folder = self
            .root
            .walk(&[agent, name])
            .map_err(|e| io(format!("{agent}/{name}"), e))?;
        if !g.compressed() {
            let (f, meta) = folder.open_file(&g.file).map_err(|e| io(&g.file, e))?;
            if meta.len() < g.len {
                return Err(damaged(&g.file));
            }
            return Ok(f);
        }
        let out = scratch.tmpfile_rw().map_err(|e| io("a scratch file", e))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &out);
        read_generation(&folder, g, &mut w)?;
        w.flush().map_err(|e| io("a scratch file", e))?;
        drop(w);
        Ok(out)
    }

    /// Renames copy `agent/from` to `agent/to` (its source moved: same file, new
    /// place), refusing to replace anything.
    pub fn rename(&self, agent: &str, from: &str, to: &str) -> Result<()> {
        let dir = self.agent_dir(agent)?;
        rename_noreplace(&dir, from, to).map_err(|e| io(to, e))
    }
}

fn damaged(what: &str) -> Error {
    Error::new(
        libc::EIO,
        format!("the kept copy {what} does not match its record (damaged): see fen-fs fsck"),
    )
}

/// Renames `from` to `to` in `dir`, refusing to replace anything.
fn rename_noreplace(dir: &Dir, from: &str, to: &str) -> std::io::Result<()> {
    rename_between(dir, from, dir, to)
}

pub fn rename_between(a: &Dir, from: &str, b: &Dir, to: &str) -> std::io::Result<()> {
    let (f, t) = (
        std::ffi::CString::new(from)
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?,
        std::ffi::CString::new(to).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?,
    );
    let (fa, fb) = (a.open_self()?, b.open_self()?);
    // SAFETY: valid descriptors and C strings.
    let rc = unsafe {
        libc::renameat2(
            fa.as_raw_fd(),
            f.as_ptr(),
            fb.as_raw_fd(),
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Removes folder `name` in `dir` and the files in it (a copy's folder holds files
/// only); best effort.
pub fn remove_tree(dir: &Dir, name: &str) {
    let Ok(sub) = dir.open_dir(name) else { return };
    for (f, kind) in sub.read_dir().unwrap_or_default() {
        if kind.is_dir() {
            if let Some(n) = f.to_str() {
                remove_tree(&sub, n);
                let _ = sub.rmdir(n);
            }
        } else {
            let _ = sub.unlink(&f);
        }
    }
    let _ = dir.rmdir(name);
}

/// Total bytes of the files in folder `name` of `dir`.
pub fn folder_size(dir: &Dir, name: &str) -> u64 {
    let Ok(sub) = dir.open_dir(name) else {
        return 0;
    };
    sub.entries()
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Reads generation `g` of an open copy folder into `out` (its logical bytes, in
/// order), checking its length and CRC-32: an error says how it is damaged.
pub fn read_generation(folder: &Dir, g: &Generation, out: &mut dyn Write) -> Result<()> {
    let (f, meta) = folder.open_file(&g.file).map_err(|e| io(&g.file, e))?;
    if meta.len() < g.stored {
        return Err(Error::new(
            libc::EIO,
            format!(
                "{} is {} bytes, its record says {}",
                g.file,
                meta.len(),
                g.stored
            ),
        ));
    }
    let mut hasher = crc32fast::Hasher::new();
    let mut total = 0u64;
    let mut each = |b: &[u8]| -> std::io::Result<()> {
        hasher.update(b);
        total += b.len() as u64;
        out.write_all(b)
    };
    let read = (|| -> std::io::Result<()> {
        use std::io::Read;
        let limited = std::io::Read::take(&f, g.stored);
        if g.compressed() {
            let mut d = zstd::stream::read::Decoder::new(limited)?;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = d.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                each(&buf[..n])?;
            }
        } else {
            let mut r = limited;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = r.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                each(&buf[..n])?;
            }
        }
        Ok(())
    })();
    if let Err(e) = read {
        return Err(Error::new(
            libc::EIO,
            format!("{} cannot be read whole: {e}", g.file),
        ));
    }
    if total != g.len || hasher.finalize() != g.crc32 {
        return Err(Error::new(
            libc::EIO,
            format!(
                "{} holds {total} bytes that do not match its record ({} bytes, CRC-32 {:08x})",
                g.file, g.len, g.crc32
            ),
        ));
    }
    Ok(())
}

/// Checks a plain generation's length and CRC-32 without copying it (fsck, and the
/// first read of a copy).
pub fn verify_generation(folder: &Dir, g: &Generation) -> Result<()> {
    read_generation(folder, g, &mut std::io::sink())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(agent: &str, source: &Path) -> KeptRecord {
        KeptRecord {
            format: RECORD_FORMAT,
            agent: agent.into(),
            source: source.to_path_buf(),
            source_root: source.parent().unwrap().to_path_buf(),
            unit: false,
            id: "s1".into(),
            facts: OutsideFacts::default(),
            first_seen: now(),
            last_seen: now(),
            source_deleted: false,
            deleted_noticed: None,
            generations: Vec::new(),
            proof: SourceProof::default(),
        }
    }

    fn bytes_of(store: &KeptStore, name: &str, g: &Generation) -> Vec<u8> {
        let folder = store.dir().walk(&["claude", name]).unwrap();
        let mut out = Vec::new();
        read_generation(&folder, g, &mut out).unwrap();
        out
    }

    /// Lines that end inside a chunk, at its edge, and one longer than a whole chunk:
    /// the copy is the bytes, the CRC theirs; a stop ends it after a whole line.
    #[test]
    fn a_copy_is_every_byte_across_chunks_and_a_stop_ends_it_after_a_line() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("s.jsonl");
        let mut bytes = Vec::new();
        for n in [10, CHUNK - 11 - 1, 0, 3 * CHUNK + 5, 7, CHUNK / 2] {
            bytes.extend(std::iter::repeat_n(b'x', n));
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(b"no newline at the end");
        std::fs::write(&path, &bytes).unwrap();
        let src = File::open(&path).unwrap();
        let len = bytes.len() as u64;
        for from in [0, 5, CHUNK as u64 + 3] {
            let out = tempfile::tempfile().unwrap();
            let mut sink = Sink::Plain(out.try_clone().unwrap());
            let (copied, crc) =
                copy_range(&src, from, len, &mut sink, 0, &Control::none()).unwrap();
            assert_eq!(copied, len - from);
            assert_eq!(crc, crc32fast::hash(&bytes[from as usize..]));
            assert_eq!(
                std::fs::read(format!("/proc/self/fd/{}", out.as_raw_fd())).unwrap(),
                &bytes[from as usize..]
            );
        }
        // Stopped after two reads: what was copied ends with a whole line.
        let reads = std::sync::atomic::AtomicUsize::new(0);
        let stop = || reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 2;
        let ctl = Control {
            stop: &stop,
            pause: &|| {},
        };
        let out = tempfile::tempfile().unwrap();
        let mut sink = Sink::Plain(out.try_clone().unwrap());
        let (copied, crc) = copy_range(&src, 0, len, &mut sink, 0, &ctl).unwrap();
        // The first two lines fill the first chunk; the second read holds the empty
        // third line and the start of the fourth, longer than a chunk.
        assert_eq!(copied as usize, CHUNK + 1);
        assert_eq!(bytes[copied as usize - 1], b'\n');
        assert_eq!(crc, crc32fast::hash(&bytes[..copied as usize]));
    }

    #[test]
    fn copies_append_version_compress_and_recover_from_a_crash() {
        let t = tempfile::tempdir().unwrap();
        let src_path = t.path().join("s1.jsonl");
        std::fs::write(&src_path, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let store = KeptStore::open(t.path(), true).unwrap().unwrap();
        let ctl = Control::none();
        let src = File::open(&src_path).unwrap();
        let s = store
            .stage_new("s1-x", record("claude", &src_path), &src, 16, false, &ctl)
            .unwrap()
            .unwrap();
        // Not committed yet: a hidden folder no reader takes for a copy.
        assert!(store.records("claude").is_empty());
        store.sync().unwrap();
        store.commit(s).unwrap();
        let r = store.records("claude").remove(0).1;
        assert_eq!(
            bytes_of(&store, "s1-x", r.current().unwrap()),
            b"{\"a\":1}\n{\"b\":2}\n"
        );

        // An append, then the same compressed, then an append as a zstd frame.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&src_path)
            .unwrap()
            .write_all(b"{\"c\":3}\n")
            .unwrap();
        let src = File::open(&src_path).unwrap();
        let s = store
            .stage_append("s1-x", r, &src, 24, &ctl)
            .unwrap()
            .unwrap();
        store.commit(s).unwrap();
        let r = store.records("claude").remove(0).1;
        let s = store.stage_compress("s1-x", r, &ctl).unwrap().unwrap();
        store.commit(s).unwrap();
        let r = store.records("claude").remove(0).1;
        assert!(r.current().unwrap().compressed());
        std::fs::OpenOptions::new()
            .append(true)
            .open(&src_path)
            .unwrap()
            .write_all(b"{\"d\":4}\n")
            .unwrap();
        let src = File::open(&src_path).unwrap();
        let s = store
            .stage_append("s1-x", r, &src, 32, &ctl)
            .unwrap()
            .unwrap();
        store.commit(s).unwrap();
        let r = store.records("claude").remove(0).1;
        let whole = std::fs::read(&src_path).unwrap();
        assert_eq!(bytes_of(&store, "s1-x", r.current().unwrap()), whole);

        // A crash after an append's bytes, before its record: the record still holds,
        // and recover cuts the torn bytes off; a half-made copy goes.
        let g = r.current().unwrap().clone();
        let folder = store.dir().walk(&["claude", "s1-x"]).unwrap();
        let (f, _) = folder
            .open_file_with(&g.file, libc::O_WRONLY | libc::O_APPEND, 0)
            .unwrap();
        (&f).write_all(b"torn").unwrap();
        assert!(
            verify_generation(&folder, &g).is_ok(),
            "read only as far as the record says"
        );
        store
            .agent_dir("claude")
            .unwrap()
            .create_dir(".new-s2-y")
            .unwrap();
        store.recover("claude").unwrap();
        assert_eq!(folder.stat(&g.file).unwrap().st_size as u64, g.stored);
        assert!(store.dir().walk(&["claude", ".new-s2-y"]).is_err());

        // The source cut short: a new generation, the earlier kept as a version.
        std::fs::write(&src_path, b"{\"a\":1}\n").unwrap();
        let src = File::open(&src_path).unwrap();
        let s = store
            .stage_generation("s1-x", r, &src, 8, Some("cut short"), false, &ctl)
            .unwrap()
            .unwrap();
        store.commit(s).unwrap();
        let r = store.records("claude").remove(0).1;
        assert_eq!(r.generations.len(), 2);
        assert_eq!(bytes_of(&store, "s1-x", &r.generations[0]), whole);
        assert_eq!(r.generations[0].why.as_deref(), Some("cut short"));
        assert_eq!(bytes_of(&store, "s1-x", &r.generations[1]), b"{\"a\":1}\n");

        // A damaged generation is found.
        let g = r.generations[1].clone();
        let folder = store.dir().walk(&["claude", "s1-x"]).unwrap();
        std::fs::write(folder.path().join(&g.file), b"{\"a\":2}\n").unwrap();
        assert!(verify_generation(&folder, &g).is_err());
    }

    /// A frame's window holds what it is made for and never more than `WINDOW_LOG`;
    /// small and large copies both decode to their bytes.
    #[test]
    fn a_frame_is_sized_to_its_copy() {
        assert_eq!(zst_logs(0), (10, 11));
        assert_eq!(zst_logs(1024), (10, 11));
        assert_eq!(zst_logs(1025), (11, 12));
        assert_eq!(zst_logs(20_000), (15, 16));
        assert_eq!(zst_logs(1 << 23), (WINDOW_LOG, HASH_LOG));
        assert_eq!(zst_logs(u64::MAX), (WINDOW_LOG, HASH_LOG));
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 100, 5_000, 300_000] {
            let line = b"{\"type\":\"message\",\"text\":\"a line the session repeats\"}\n";
            let bytes: Vec<u8> = line.iter().copied().cycle().take(len).collect();
            let path = dir.path().join(format!("z{len}"));
            let mut sink = zst_sink(File::create(&path).unwrap(), len as u64).unwrap();
            sink.write(&bytes).unwrap();
            sink.finish().unwrap();
            let back = zstd::stream::decode_all(File::open(&path).unwrap()).unwrap();
            assert_eq!(back, bytes, "{len} bytes");
        }
        // A copy that grew past what its frame was sized for still decodes whole.
        let path = dir.path().join("grew");
        let bytes: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut sink = zst_sink(File::create(&path).unwrap(), 1000).unwrap();
        sink.write(&bytes).unwrap();
        sink.finish().unwrap();
        assert_eq!(
            zstd::stream::decode_all(File::open(&path).unwrap()).unwrap(),
            bytes
        );
    }
}
