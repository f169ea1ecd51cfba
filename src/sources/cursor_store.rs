//! Cursor agent CLI's `store.db` (AGENT-FORMATS-MORE.md §4): one SQLite file per
//! session, `~/.cursor/chats/<md5 of the cwd>/<agentId>/store.db`, with a `meta` table
//! (row `0`: hex of a JSON object `{agentId, latestRootBlobId, name, mode, createdAt,
//! lastUsedModel?}`) and a content-addressed `blobs` table (message blobs are JSON,
//! index nodes protobuf). Each store is a unit (`sources/units.rs`); its dump is a
//! header line (which store, the workspace hash and the cwd matched to it), the meta
//! row, then every blob row in stored order: `{"id", "data": <the JSON blob>}` or
//! `{"id", "protobuf": {<field>: [values]}}` (bytes as hex).
//!
//! The conversation is the message blobs the root node (`latestRootBlobId`) lists
//! in its field 1, in order. That is a guess no one has checked against
//! `cursor-agent --resume` (Cursor is closed and needs a login), so `meta.json` says
//! `resume_rules: "best effort"`.
//!
//! The cwd is not stored: the folder is its MD5. fen-fs tries the working directories
//! it knows (other agents' sessions, the transcript's lossy slug decoded every way,
//! the home folder and two levels below it) and takes the one whose MD5 matches; else
//! the session goes to `unknown-cwd`.
//!
//! Cursor's readable transcript (`projects/<slug>/agent-transcripts/<id>/<id>.jsonl`)
//! is read by the transcript reader as a session of its own, except when a
//! `store.db` has the same id: then they are one session, whose `transcript.jsonl` is
//! that file and whose `conversation.json` comes from the store (`claims`).

mod md5;
use super::protobuf_wire as protobuf;
mod reader;

pub use reader::{CursorStoreReader, is_blob_shape, to_neutral};

use super::sqlite_ro;
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The file name of a store: what tells the reader factory which reader to make.
pub const STORE_FILE: &str = "store.db";

/// Working directories other sources' sessions name: candidates for the MD5 match.
fn known_cwds() -> &'static Mutex<HashSet<String>> {
    static KNOWN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    KNOWN.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Notes a working directory some session names (any agent's), so a Cursor store
/// whose folder is its MD5 can be placed there.
pub fn note_cwd(cwd: &str) {
    if let Ok(mut k) = known_cwds().lock()
        && !k.contains(cwd)
    {
        k.insert(cwd.to_string());
    }
}

/// The home folder and the folders one and two levels below it, by their MD5: where
/// projects usually are (computed once; bounded).
fn home_candidates() -> &'static HashMap<String, String> {
    static HOME: OnceLock<HashMap<String, String>> = OnceLock::new();
    HOME.get_or_init(|| {
        let mut out = HashMap::new();
        let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
            return out;
        };
        let mut add = |p: &Path| {
            let s = p.to_string_lossy().into_owned();
            out.insert(md5::hex(s.as_bytes()), s);
        };
        add(&home);
        let subdirs = |p: &Path| -> Vec<PathBuf> {
            std::fs::read_dir(p)
                .map(|rd| {
                    rd.flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path())
                        .take(2000)
                        .collect()
                })
                .unwrap_or_default()
        };
        for d in subdirs(&home) {
            add(&d);
            for dd in subdirs(&d).into_iter().take(200) {
                add(&dd);
            }
        }
        out
    })
}

/// Every reading of a lossy slug (`/` and `-` both became `-`) with its MD5, when
/// there are not too many.
fn slug_candidates(slug: &str) -> Vec<String> {
    let parts: Vec<&str> = slug.split('-').collect();
    if parts.is_empty() || parts.len() > 16 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for mask in 0u32..(1 << (parts.len() - 1)) {
        let mut s = String::from("/");
        s.push_str(parts[0]);
        for (i, p) in parts.iter().enumerate().skip(1) {
            s.push(if mask & (1 << (i - 1)) != 0 { '-' } else { '/' });
            s.push_str(p);
        }
        out.push(s);
    }
    out
}

/// The working directory whose MD5 is `hash`, among the candidates.
fn match_cwd(hash: &str, slug: Option<&str>) -> Option<String> {
    if let Some(slug) = slug
        && let Some(c) = slug_candidates(slug)
            .into_iter()
            .find(|c| md5::hex(c.as_bytes()) == hash)
    {
        return Some(c);
    }
    if let Some(c) = known_cwds()
        .lock()
        .ok()?
        .iter()
        .find(|c| md5::hex(c.as_bytes()) == hash)
    {
        return Some(c.clone());
    }
    home_candidates().get(hash).cloned()
}

/// One store as the listing found it.
#[derive(Debug, Clone)]
struct Store {
    workspace: String,
    transcript: Option<PathBuf>,
    cwd: Option<String>,
}

#[derive(Default)]
struct State {
    stores: HashMap<PathBuf, Store>,
    claimed: HashSet<PathBuf>,
    /// Workspace hash → the cwd found for it (only found ones are kept).
    cwds: HashMap<String, String>,
}

/// `~/.cursor`'s stores as units.
pub struct CursorStoreUnits {
    root: PathBuf,
    state: Mutex<State>,
}

fn dirs(p: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(p) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect()
}

fn is_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
}

/// The agent transcripts under `projects/`: id → (file, the project's slug).
fn transcripts(root: &Path) -> HashMap<String, (PathBuf, String)> {
    let mut out = HashMap::new();
    for (slug, project) in dirs(&root.join("projects")) {
        let folder = project.join("agent-transcripts");
        let Ok(rd) = std::fs::read_dir(&folder) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                let f = e.path().join(format!("{name}.jsonl"));
                if is_file(&f) {
                    out.insert(name, (f, slug.clone()));
                }
            } else if t.is_file()
                && let Some(id) = name.strip_suffix(".jsonl")
            {
                out.insert(id.to_string(), (e.path(), slug.clone()));
            }
        }
    }
    out
}

fn sibling(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

impl CursorStoreUnits {
    pub fn new(root: &Path) -> Self {
        CursorStoreUnits {
            root: root.to_path_buf(),
            state: Mutex::new(State::default()),
        }
    }
}

fn header(store: &Store, key: &Path) -> Vec<u8> {
    let v = serde_json::json!({
        "store": key,
        "workspace": store.workspace,
        "cwd": store.cwd,
    });
    let mut b = serde_json::to_vec(&v).expect("a JSON value");
    b.push(b'\n');
    b
}

/// The meta row's value as JSON text: hex of JSON (as Cursor writes it), or JSON, or
/// the text itself as a string.
fn meta_value(value: &str) -> String {
    let hex_decoded = (value.len().is_multiple_of(2)
        && value.bytes().all(|b| b.is_ascii_hexdigit()))
    .then(|| {
        (0..value.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&value[i..i + 2], 16).ok())
            .collect::<Option<Vec<u8>>>()
    })
    .flatten()
    .and_then(|b| String::from_utf8(b).ok());
    for text in [hex_decoded.as_deref(), Some(value)].into_iter().flatten() {
        if let Some(min) = super::json_text::minify(text) {
            return min;
        }
    }
    crate::json::quote(value)
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One blob row as a dump line.
fn blob_line(id: &str, data: &[u8]) -> String {
    let q = crate::json::quote(id);
    if matches!(data.first(), Some(b'{' | b'['))
        && let Ok(text) = std::str::from_utf8(data)
        && let Some(min) = super::json_text::minify(text)
    {
        return format!("{{\"id\":{q},\"data\":{min}}}");
    }
    if let Some(fields) = protobuf::fields(data) {
        let mut by: std::collections::BTreeMap<u64, Vec<serde_json::Value>> = Default::default();
        for (f, v) in fields {
            by.entry(f).or_default().push(match v {
                protobuf::Value::Varint(n) | protobuf::Value::Fixed64(n) => n.into(),
                protobuf::Value::Fixed32(n) => n.into(),
                protobuf::Value::Bytes(b) => hex_of(&b).into(),
            });
        }
        let obj: serde_json::Map<String, serde_json::Value> = by
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into()))
            .collect();
        return format!(
            "{{\"id\":{q},\"protobuf\":{}}}",
            serde_json::Value::Object(obj)
        );
    }
    format!("{{\"id\":{q},\"bytes\":\"{}\"}}", hex_of(data))
}

fn read_store(conn: &rusqlite::Connection) -> rusqlite::Result<Result<Vec<u8>, String>> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if !tables.iter().any(|t| t == "meta") || !tables.iter().any(|t| t == "blobs") {
        return Ok(Err("not a Cursor store: no meta or blobs table".into()));
    }
    let mut out = Vec::new();
    let mut stmt = conn.prepare("SELECT key, value FROM meta ORDER BY rowid")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let key: String = r.get::<_, Option<String>>(0)?.unwrap_or_default();
        let value = match r.get_ref(1)? {
            rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                String::from_utf8_lossy(t).into_owned()
            }
            other => format!("{other:?}"),
        };
        out.extend_from_slice(
            format!(
                "{{\"meta\":{},\"value\":{}}}\n",
                crate::json::quote(&key),
                meta_value(&value)
            )
            .as_bytes(),
        );
    }
    let mut stmt = conn.prepare("SELECT id, data FROM blobs ORDER BY rowid")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let id = match r.get_ref(0)? {
            rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
            rusqlite::types::ValueRef::Blob(b) => hex_of(b),
            other => format!("{other:?}"),
        };
        let data = match r.get_ref(1)? {
            rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
            _ => Vec::new(),
        };
        out.extend_from_slice(blob_line(&id, &data).as_bytes());
        out.push(b'\n');
    }
    Ok(Ok(out))
}

impl UnitSource for CursorStoreUnits {
    fn list(&self) -> Vec<UnitInfo> {
        let found = transcripts(&self.root);
        let mut stores = HashMap::new();
        let mut claimed = HashSet::new();
        let mut st = self.state.lock().unwrap();
        for (workspace, ws_dir) in dirs(&self.root.join("chats")) {
            for (agent_id, dir) in dirs(&ws_dir) {
                let key = dir.join(STORE_FILE);
                if !is_file(&key) {
                    continue;
                }
                let (transcript, slug) = match found.get(&agent_id) {
                    Some((f, slug)) => (Some(f.clone()), Some(slug.as_str())),
                    None => (None, None),
                };
                if let Some(t) = &transcript {
                    claimed.insert(t.clone());
                }
                let cwd = match st.cwds.get(&workspace) {
                    Some(c) => Some(c.clone()),
                    None => {
                        let c = match_cwd(&workspace, slug);
                        if let Some(c) = &c {
                            st.cwds.insert(workspace.clone(), c.clone());
                        }
                        c
                    }
                };
                stores.insert(
                    key,
                    Store {
                        workspace: workspace.clone(),
                        transcript,
                        cwd,
                    },
                );
            }
        }
        let mut out: Vec<UnitInfo> = stores
            .iter()
            .map(|(key, s)| UnitInfo {
                key: key.clone(),
                cwd: s.cwd.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        st.stores = stores;
        st.claimed = claimed;
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        let store = self.state.lock().unwrap().stores.get(key).cloned()?;
        let mut bytes = Vec::new();
        let mut newest = 0i64;
        let files = [
            Some(key.to_path_buf()),
            Some(sibling(key, "-wal")),
            Some(sibling(key, "-journal")),
            store.transcript.clone(),
        ];
        for f in files.iter().flatten() {
            if let Ok(m) = std::fs::symlink_metadata(f) {
                for v in [
                    m.ino() as i64,
                    m.len() as i64,
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                ] {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
                newest = newest.max(m.mtime() * 1000 + m.mtime_nsec() / 1_000_000);
            }
            bytes.push(0xff);
        }
        if !is_file(key) {
            return None;
        }
        bytes.extend_from_slice(store.cwd.as_deref().unwrap_or("").as_bytes());
        Some(Signature {
            hash: crate::store::atomic::checksum(&[&bytes]),
            updated_ms: newest,
        })
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        // The signature first: it looks the store up too, and a listing between the
        // two (one that found the cwd) would otherwise give a header made from the
        // older store the newer store's signature, kept until the store changes.
        let signature = self.signature(key)?;
        let store = self.state.lock().unwrap().stores.get(key).cloned()?;
        let mut bytes = header(&store, key);
        let (rows, transient) = match sqlite_ro::read(key, read_store) {
            Ok(Ok(rows)) => (rows, false),
            Ok(Err(why)) => (unreadable(&why), false),
            Err(e) => {
                log::warn!("cursor: {}: {e}", key.display());
                let busy = matches!(e, sqlite_ro::ReadError::Busy(_));
                (unreadable(&e.to_string()), busy)
            }
        };
        bytes.extend_from_slice(&rows);
        Some(Dump {
            bytes,
            // A busy store is dumped again on the next access.
            signature: if transient {
                Signature {
                    hash: !signature.hash,
                    ..signature
                }
            } else {
                signature
            },
            transient,
        })
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        key.to_path_buf()
    }

    fn transcript(&self, key: &Path) -> Option<PathBuf> {
        self.state
            .lock()
            .unwrap()
            .stores
            .get(key)?
            .transcript
            .clone()
    }

    fn claims(&self, file: &Path) -> bool {
        self.state.lock().unwrap().claimed.contains(file)
    }
}

fn unreadable(why: &str) -> Vec<u8> {
    let mut b = format!("{{\"fen_unreadable\":{}}}", crate::json::quote(why)).into_bytes();
    b.push(b'\n');
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slug_is_read_every_way_and_the_md5_picks_one() {
        let c = slug_candidates("home-u-my-proj");
        assert_eq!(c.len(), 8);
        assert!(c.contains(&"/home/u/my-proj".to_string()));
        assert!(c.contains(&"/home-u/my/proj".to_string()));
        let hash = md5::hex(b"/home/u/my-proj");
        assert_eq!(
            match_cwd(&hash, Some("home-u-my-proj")).as_deref(),
            Some("/home/u/my-proj")
        );
        note_cwd("/home/u/x");
        assert_eq!(
            match_cwd(&md5::hex(b"/home/u/x"), None).as_deref(),
            Some("/home/u/x")
        );
        assert_eq!(match_cwd(&md5::hex(b"/nowhere/known"), None), None);
    }

    #[test]
    fn meta_values_are_hex_of_json_or_json_or_text() {
        let hex: String =
            br#"{"agentId":"a","name":"N"}"#.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(meta_value(&hex), r#"{"agentId":"a","name":"N"}"#);
        assert_eq!(meta_value(r#"{"a": 1}"#), r#"{"a":1}"#);
        assert_eq!(meta_value("plain"), r#""plain""#);
    }
}
