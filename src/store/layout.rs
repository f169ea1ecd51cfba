//! Every path name in a store, in one place: the namespace folders, session files,
//! and fen-fs's own cache folder with its caches and lock files. Nothing else in the
//! crate joins a name onto the store's root.

use super::naming::fit_name;
use std::path::{Path, PathBuf};

/// `${XDG_STATE_HOME:-$HOME/.local/state}/fen/sessions`, unless `FEN_FS_STORE` is set.
pub fn default_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("FEN_FS_STORE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    state_dir().join("sessions")
}

/// `${XDG_STATE_HOME:-$HOME/.local/state}/fen`: fen's own folder.
fn state_dir() -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
            PathBuf::from(home).join(".local/state")
        })
        .join("fen")
}

/// `${XDG_STATE_HOME:-$HOME/.local/state}/fen/peers`: other machines' stores, as
/// Syncthing receives them (§12), one folder per machine; fen-fs never writes there.
pub fn default_peers_dir() -> PathBuf {
    state_dir().join("peers")
}

/// The folder, inside this machine's `.fen-cache`, that holds the caches of peer
/// `host`'s store (never the peer's own folder).
pub const PEERS_CACHE_DIR: &str = "peers";

/// Syncthing's ignore file at the store's root (§12): what is not shared.
pub const STIGNORE: &str = ".stignore";

/// Where a detached daemon logs without `--log-file`:
/// `${XDG_STATE_HOME:-$HOME/.local/state}/fen/fen-fs.log` (beside the default store,
/// not in it: the store holds only sessions and fen-fs's caches).
pub fn default_log_file() -> PathBuf {
    state_dir().join("fen-fs.log")
}

/// fen-fs's own folder in the store: caches (safe to delete) and lock files. It holds
/// no `*.jsonl` at its top, so the store's readers ignore it.
pub const CACHE_DIR: &str = ".fen-cache";

/// The trash (§6): `<store>/.trash/<namespace>/<dir>.jsonl.deleted-<stamp>`. The name
/// alone says where the file came from and when it left, so one `rename(2)` records
/// everything and a crash cannot separate the file from its record. It starts with
/// `.` and holds no `*.jsonl` at its top, so it is never a namespace.
pub const TRASH_DIR: &str = ".trash";

const DELETED: &str = ".deleted-";

/// Kept copies of other agents' sessions (§11): `<store>/.kept/<agent>/<copy>/`, one
/// folder per session (`store::kept` says what is in it). Only this machine writes
/// it; it starts with `.` and holds no `*.jsonl` at its top, so it is never a
/// namespace.
pub const KEPT_DIR: &str = ".kept";

pub fn kept_dir(root: &Path) -> PathBuf {
    root.join(KEPT_DIR)
}

/// Kept copies in the trash: `<store>/.trash/.kept/<agent>/<copy>.deleted-<stamp>/`.
pub fn trash_kept_dir(root: &Path) -> PathBuf {
    trash_dir(root).join(KEPT_DIR)
}

/// A trashed kept copy's folder name.
pub fn trashed_copy_name(copy: &str, stamp: &str) -> String {
    format!("{copy}{DELETED}{stamp}")
}

/// The copy's folder name and deletion stamp of a trashed kept copy's folder name.
pub fn parse_trashed_copy_name(name: &str) -> Option<(&str, &str)> {
    name.rsplit_once(DELETED).filter(|(c, _)| !c.is_empty())
}

/// Where decompressed kept copies are held while they are read (unnamed files, in
/// this machine's `.fen-cache`: a peer's folder is never written).
pub fn kept_read_dir(root: &Path) -> CacheFile {
    cache_file(root, &["kept"], String::new())
}

/// The records of the kept copies in folder `copies` (this machine's
/// `.kept/<agent>`, or a peer's), listed in one file (`sources::kept`): a cold
/// listing reads it instead of one record per copy.
pub fn kept_listing_cache(root: &Path, agent: &str, copies: &Path) -> CacheFile {
    let h = super::naming::fnv1a64(copies.as_os_str().as_encoded_bytes());
    cache_file(root, &["kept-lists"], format!("{agent}-{h:016x}.json"))
}

/// The lock a keeper holds while it writes kept copies (one writer per store).
pub const KEEP_LOCK: &str = "keep.lock";

/// Left by a keeper that ended cleanly (taken by the next one): without it, the next
/// keeper first undoes what a crash may have left in `.kept`.
pub const KEEP_CLEAN: &str = "keep.clean";

/// A session file's name for its folder name `dir` (`<stamp>_<session-id>`).
pub fn session_file_name(dir: &str) -> String {
    format!("{dir}.jsonl")
}

/// The folder name of a session file name, if it is one (`*.jsonl`, non-empty stem).
pub fn session_dir_of(file_name: &str) -> Option<&str> {
    file_name.strip_suffix(".jsonl").filter(|s| !s.is_empty())
}

pub fn namespace_path(root: &Path, ns: &str) -> PathBuf {
    root.join(ns)
}

pub fn session_path(root: &Path, ns: &str, dir: &str) -> PathBuf {
    root.join(ns).join(session_file_name(dir))
}

pub fn cache_dir(root: &Path) -> PathBuf {
    root.join(CACHE_DIR)
}

/// A file in `.fen-cache`: the store root, the folders below it, the file's name.
/// Opened only by walking from the root without following links (`open::Dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheFile {
    pub root: PathBuf,
    pub dirs: Vec<String>,
    pub name: String,
}

impl CacheFile {
    pub fn path(&self) -> PathBuf {
        let mut p = self.root.clone();
        p.extend(&self.dirs);
        p.join(&self.name)
    }
}

fn cache_file(root: &Path, dirs: &[&str], name: String) -> CacheFile {
    let mut all = vec![CACHE_DIR.to_string()];
    all.extend(dirs.iter().map(|d| d.to_string()));
    CacheFile {
        root: root.to_path_buf(),
        dirs: all,
        name,
    }
}

/// The persisted listings of one namespace (`catalog`). A folder fen-fs did not make
/// may have a name too long for the suffix: it is cut as long slugs are (the cache
/// checks its content, so a shared name costs a re-read, never a wrong listing).
pub fn listing_cache(root: &Path, ns: &str) -> CacheFile {
    cache_file(root, &[], format!("{}.json", fit_name(ns)))
}

/// The persisted rendered `index.json` of one namespace (`catalog`).
pub fn rendered_index_cache(root: &Path, ns: &str) -> CacheFile {
    cache_file(root, &[], format!("{}.index", fit_name(ns)))
}

/// The persisted index of one large session (`index_cache`); names cut as above.
pub fn session_index_cache(root: &Path, ns: &str, dir: &str) -> CacheFile {
    cache_file(
        root,
        &["index", &fit_name(ns)],
        format!("{}.idx", fit_name(dir)),
    )
}

/// fen-fs's index of another agent's store rooted at `agent_root` (never kept in the
/// agent's own folder).
pub fn foreign_index_cache(root: &Path, agent: &str, agent_root: &Path) -> CacheFile {
    // A stable hash (not DefaultHasher): the next build must find the same file.
    let h = super::naming::fnv1a64(agent_root.as_os_str().as_encoded_bytes());
    cache_file(root, &["foreign"], format!("{agent}-{h:016x}.json"))
}

/// fen-fs's persisted `conversation.json` layout of one large foreign session file.
pub fn foreign_conversation_cache(root: &Path, agent: &str, file: &Path) -> CacheFile {
    let h = super::naming::fnv1a64(file.as_os_str().as_encoded_bytes());
    let name = format!("{agent}-{h:016x}.bin");
    cache_file(root, &["foreign", "conversations"], name)
}

/// What `fen-fs resume --in AGENT` made from which source (in `.fen-cache`): one JSON
/// object per line, appended.
pub const RESUME_LEDGER: &str = "resume-ledger.jsonl";

/// `${XDG_CACHE_HOME:-$HOME/.cache}/fen-fs`: fen-fs's caches when there is no store.
pub fn xdg_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
            PathBuf::from(home).join(".cache")
        })
        .join("fen-fs")
}

/// fen-fs's saved reader state of one large foreign session file (to read on from
/// where it stopped when the file grows).
pub fn foreign_reader_cache(root: &Path, agent: &str, file: &Path) -> CacheFile {
    let h = super::naming::fnv1a64(file.as_os_str().as_encoded_bytes());
    cache_file(
        root,
        &["foreign", "readers"],
        format!("{agent}-{h:016x}.bin"),
    )
}

/// fen-fs's ledger of the token usage one source's units recorded (§13), beside its
/// other caches of that source.
pub fn usage_cache(root: &Path, agent: &str, source_root: &Path) -> CacheFile {
    let h = super::naming::fnv1a64(source_root.as_os_str().as_encoded_bytes());
    cache_file(root, &["usage"], format!("{agent}-{h:016x}.bin"))
}

/// What a running daemon says of itself for `fen-fs status` (removed when it exits).
pub fn mount_status_file(root: &Path, pid: u32) -> CacheFile {
    cache_file(root, &["mounts"], format!("{pid}.json"))
}

/// The lock that makes "is this session-id free? then create it" atomic across
/// processes (in `.fen-cache`).
pub const SESSION_IDS_LOCK: &str = "session-ids.lock";

pub fn trash_dir(root: &Path) -> PathBuf {
    root.join(TRASH_DIR)
}

pub fn trash_namespace(root: &Path, ns: &str) -> PathBuf {
    trash_dir(root).join(ns)
}

/// The trashed file of session `dir`, deleted at `stamp` (`naming::stamp`): not
/// `*.jsonl`, so nothing that scans for sessions mistakes it for a live one.
pub fn trashed_file_name(dir: &str, stamp: &str) -> String {
    format!("{}{DELETED}{stamp}", session_file_name(dir))
}

/// The session folder name and deletion stamp of a trashed file's name.
pub fn parse_trashed_file_name(name: &str) -> Option<(&str, &str)> {
    let (file, stamp) = name.rsplit_once(DELETED)?;
    Some((session_dir_of(file)?, stamp))
}

/// Whether `name` may be a namespace or session folder name: one plain path
/// component (no `/`, not `.` or `..`, no NUL).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}
