//! Crush's sessions: rows of `<project>/.crush/crush.db` (SQLite), built from Crush's
//! public source only (charmbracelet/crush: `internal/db/migrations/*.sql`,
//! `internal/db/sql/*.sql`, `internal/message/message.go`, `internal/agent/agent.go`
//! `getSessionMessages`, `internal/projects/projects.go`): its npm package downloads
//! its binary from GitHub at install, which is not reachable here.
//!
//! Each project keeps its own database; Crush lists the projects it knows in
//! `projects.json` under its global data folder (`$CRUSH_GLOBAL_DATA`, else
//! `$XDG_DATA_HOME/crush`, else `~/.local/share/crush`), each with its `data_dir`.
//! fen-fs reads the databases that file names, and those `sources/projects.rs` finds
//! (`.crush/crush.db` under every cwd other sessions name and under the folder
//! `--source crush=DIR` names), strictly read-only (`sources/sqlite_ro.rs`).
//!
//! A session is a unit (`sources/units.rs`) whose dump is its `sessions` row (with the
//! project's cwd), then its `messages` rows in Crush's order (`created_at`, then the
//! row's place), each `{id, session_id, role, parts, model, provider, created_at,
//! updated_at, finished_at, is_summary_message}` with `parts` (Crush's `[{type,
//! data}]`) as stored. On resume Crush loads the messages from the session's
//! `summary_message_id` on (a summary it made), that one as a user message:
//! `conversation.json` is those messages. Child sessions (`parent_session_id`: a
//! subagent's) are sessions of their own, not listed by Crush.

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use crate::sources::projects::ProjectFiles;
use crate::sources::sqlite_ro;
use crate::sources::units::{Dump, Signature, UnitInfo, UnitSource};
use crate::store::index::FileStamp;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A project's database, relative to the project folder (Crush's default data dir).
pub const PROJECT_DB: &str = ".crush/crush.db";
/// The unit that says a database could not be read.
const UNREADABLE: &str = "unreadable";

/// The databases `projects.json` (in Crush's global data folder `root`) names:
/// `(database, project folder)`.
pub fn registered(root: &Path) -> Vec<(PathBuf, String)> {
    let Some(bytes) = crate::store::open::read_small(&root.join("projects.json"), 16 << 20) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
        return Vec::new();
    };
    v["projects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let path = p["path"].as_str()?;
            let data = p["data_dir"].as_str()?;
            let data = Path::new(path).join(data);
            Some((data.join("crush.db"), path.to_string()))
        })
        .collect()
}

fn file_stamp(p: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(p)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// One database as last listed.
#[derive(Clone)]
struct DbState {
    stamps: (Option<FileStamp>, Option<FileStamp>),
    cwd: String,
    /// Session id → its signature.
    sessions: BTreeMap<String, Signature>,
    /// Why it could not be read, if so.
    unreadable: Option<String>,
}

/// Crush's sessions in every database found.
pub struct CrushUnits {
    root: PathBuf,
    files: ProjectFiles,
    state: Mutex<HashMap<PathBuf, DbState>>,
}

impl CrushUnits {
    /// `root`: Crush's global data folder (its `projects.json`); `searched`: folders
    /// `--source crush=DIR` names; every cwd other sessions name is looked at too.
    pub fn new(root: &Path, searched: Vec<PathBuf>) -> Self {
        CrushUnits {
            root: root.to_path_buf(),
            files: ProjectFiles::new(PROJECT_DB, searched, true),
            state: Mutex::new(HashMap::new()),
        }
    }

    /// Every database now with its project folder.
    fn databases(&self) -> Vec<(PathBuf, String)> {
        let mut out: BTreeMap<PathBuf, String> = BTreeMap::new();
        for f in self.files.files() {
            let cwd = f
                .parent()
                .and_then(Path::parent)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.insert(f, cwd);
        }
        for (db, cwd) in registered(&self.root) {
            if file_stamp(&db).is_some() {
                out.insert(db, cwd);
            }
        }
        out.into_iter().collect()
    }

    /// `db` as it is now: listed again when it or its `-wal` changed.
    fn refresh(&self, db: &Path, cwd: &str) -> DbState {
        let stamps = (file_stamp(db), file_stamp(&with_suffix(db, "-wal")));
        if let Some(s) = self.state.lock().unwrap().get(db)
            && s.stamps == stamps
        {
            return s.clone();
        }
        let read = sqlite_ro::read(db, |conn| {
            let mut stmt = conn.prepare(
                "SELECT s.id, s.updated_at, s.message_count, s.prompt_tokens, s.completion_tokens, \
                 s.cost, s.title, coalesce(s.summary_message_id, ''), \
                 (SELECT count(*) || ':' || coalesce(max(m.updated_at), 0) || ':' || \
                  coalesce(max(m.finished_at), 0) FROM messages m WHERE m.session_id = s.id) \
                 FROM sessions s",
            )?;
            let rows = stmt.query_map([], |r| {
                let id: String = r.get(0)?;
                let updated: i64 = r.get(1)?;
                let mut sig = Vec::new();
                for i in 1..9 {
                    let v: rusqlite::types::Value = r.get(i)?;
                    sig.extend_from_slice(format!("{v:?}").as_bytes());
                    sig.push(0);
                }
                Ok((id, updated, sig))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        });
        let mut sessions = BTreeMap::new();
        let mut unreadable = None;
        match read {
            Ok(rows) => {
                for (id, updated, sig) in rows {
                    let hash = crate::store::atomic::checksum(&[&sig, cwd.as_bytes()]);
                    sessions.insert(
                        id,
                        Signature {
                            hash,
                            updated_ms: seconds_to_ms(updated),
                        },
                    );
                }
            }
            Err(e) => {
                log::warn!("crush: {}: {e}", db.display());
                unreadable = Some(e.to_string());
            }
        }
        let s = DbState {
            stamps,
            cwd: cwd.to_string(),
            sessions,
            unreadable,
        };
        self.state
            .lock()
            .unwrap()
            .insert(db.to_path_buf(), s.clone());
        s
    }

    fn split(key: &Path) -> Option<(PathBuf, String)> {
        Some((
            key.parent()?.to_path_buf(),
            key.file_name()?.to_str()?.to_string(),
        ))
    }
}

/// Crush writes its times with `strftime('%s', 'now')` (seconds), its schema comments
/// say milliseconds: a number too large for seconds is taken as milliseconds.
fn seconds_to_ms(t: i64) -> i64 {
    if t > 100_000_000_000 { t } else { t * 1000 }
}

fn rfc3339(t: Option<i64>) -> Option<String> {
    t.and_then(|t| chrono::DateTime::from_timestamp_millis(seconds_to_ms(t)))
        .map(|d| d.to_rfc3339())
}

impl UnitSource for CrushUnits {
    /// A database changed (it or its `-wal`) or went since the last listing, or one
    /// could not be read then: two `stat`s per database; or one came (every known
    /// project folder looked at, and `projects.json` read, at most once a second).
    /// (Without it every request under a namespace listed every database again.)
    fn changed(&self) -> bool {
        if self.files.due(crate::sources::projects::LOOK_FOR_NEW) {
            let dbs = self.databases();
            let st = self.state.lock().unwrap();
            if dbs.len() != st.len()
                || dbs
                    .iter()
                    .any(|(db, cwd)| st.get(db).is_none_or(|s| s.cwd != *cwd))
            {
                return true;
            }
        }
        let st = self.state.lock().unwrap();
        st.iter().any(|(db, s)| {
            s.unreadable.is_some()
                || s.stamps != (file_stamp(db), file_stamp(&with_suffix(db, "-wal")))
        })
    }

    fn list(&self) -> Vec<UnitInfo> {
        let dbs = self.databases();
        let mut out = Vec::new();
        let mut keep = std::collections::HashSet::new();
        for (db, cwd) in dbs {
            let s = self.refresh(&db, &cwd);
            if s.unreadable.is_some() {
                out.push(UnitInfo {
                    key: db.join(UNREADABLE),
                    cwd: None,
                });
            }
            for id in s.sessions.keys() {
                out.push(UnitInfo {
                    key: db.join(id),
                    cwd: Some(cwd.clone()),
                });
            }
            keep.insert(db);
        }
        self.state.lock().unwrap().retain(|d, _| keep.contains(d));
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        let (db, id) = Self::split(key)?;
        let cwd = self.state.lock().unwrap().get(&db)?.cwd.clone();
        let s = self.refresh(&db, &cwd);
        if id == UNREADABLE {
            return s.unreadable.as_ref().map(|why| Signature {
                hash: crate::store::atomic::checksum(&[why.as_bytes()]),
                updated_ms: 0,
            });
        }
        s.sessions.get(&id).copied()
    }

    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        let (db, id) = Self::split(key)?;
        let st = self.state.lock().unwrap();
        let s = st.get(&db)?;
        if id == UNREADABLE {
            return s.unreadable.as_ref().map(|why| Signature {
                hash: crate::store::atomic::checksum(&[why.as_bytes()]),
                updated_ms: 0,
            });
        }
        s.sessions.get(&id).copied()
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        let (db, id) = Self::split(key)?;
        let signature = self.signature(key)?;
        let cwd = self.state.lock().unwrap().get(&db)?.cwd.clone();
        let line = |v: Value| {
            let mut l = v.to_string().into_bytes();
            l.push(b'\n');
            l
        };
        if id == UNREADABLE {
            let why = self.state.lock().unwrap().get(&db)?.unreadable.clone()?;
            return Some(Dump {
                bytes: line(json!({"type": "session", "id": "unreadable", "db": db,
                                   "unreadable": why})),
                signature,
                transient: false,
            });
        }
        let read = sqlite_ro::read(&db, |conn| {
            let session = conn.query_row(
                "SELECT id, parent_session_id, title, message_count, prompt_tokens, \
                 completion_tokens, cost, updated_at, created_at, summary_message_id \
                 FROM sessions WHERE id = ?1",
                [&id],
                |r| {
                    Ok(json!({
                        "type": "session",
                        "id": r.get::<_, String>(0)?,
                        "parent_session_id": r.get::<_, Option<String>>(1)?,
                        "title": r.get::<_, String>(2)?,
                        "message_count": r.get::<_, i64>(3)?,
                        "prompt_tokens": r.get::<_, i64>(4)?,
                        "completion_tokens": r.get::<_, i64>(5)?,
                        "cost": r.get::<_, f64>(6)?,
                        "updated_at": r.get::<_, i64>(7)?,
                        "created_at": r.get::<_, i64>(8)?,
                        "summary_message_id": r.get::<_, Option<String>>(9)?,
                    }))
                },
            )?;
            let mut stmt = conn.prepare(
                "SELECT id, session_id, role, parts, model, provider, created_at, updated_at, \
                 finished_at, is_summary_message FROM messages WHERE session_id = ?1 \
                 ORDER BY created_at ASC, rowid ASC",
            )?;
            let messages = stmt
                .query_map([&id], |r| {
                    let parts: String = r.get(3)?;
                    Ok((
                        json!({
                            "id": r.get::<_, String>(0)?,
                            "session_id": r.get::<_, String>(1)?,
                            "role": r.get::<_, String>(2)?,
                            "parts": null,
                            "model": r.get::<_, Option<String>>(4)?,
                            "provider": r.get::<_, Option<String>>(5)?,
                            "created_at": r.get::<_, i64>(6)?,
                            "updated_at": r.get::<_, i64>(7)?,
                            "finished_at": r.get::<_, Option<i64>>(8)?,
                            "is_summary_message": r.get::<_, i64>(9)?,
                        }),
                        parts,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((session, messages))
        });
        let (mut session, messages) = match read {
            Ok(v) => v,
            Err(e) => {
                let busy = matches!(e, sqlite_ro::ReadError::Busy(_));
                return Some(Dump {
                    bytes: line(json!({"type": "session", "id": id, "cwd": cwd,
                                       "unreadable": e.to_string()})),
                    signature: Signature {
                        hash: !signature.hash,
                        ..signature
                    },
                    transient: busy,
                });
            }
        };
        session["cwd"] = json!(cwd);
        session["db"] = json!(db);
        let mut bytes = line(session);
        for (mut m, parts) in messages {
            // `parts` as stored: whitespace outside strings taken out (one line), or,
            // when it is not JSON, as a string.
            let text = m.to_string();
            let stored = crate::sources::json_text::minify(&parts)
                .unwrap_or_else(|| serde_json::to_string(&parts).unwrap_or_default());
            m["parts"] = Value::Null;
            let text = text.replacen("\"parts\":null", &format!("\"parts\":{stored}"), 1);
            bytes.extend_from_slice(text.as_bytes());
            bytes.push(b'\n');
        }
        Some(Dump {
            bytes,
            signature,
            transient: false,
        })
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        Self::split(key).map_or_else(|| key.to_path_buf(), |(db, _)| db)
    }
}

// ---------------------------------------------------------------------------
// The reader of a session's dump

/// Reader of one Crush session's dump.
#[derive(Default)]
pub struct CrushReader {
    session: Option<Value>,
    /// (id, role, start, len, created_at) of each message line.
    messages: Vec<(String, String, u64, u64, Option<i64>)>,
    /// The whole line of each message when it must be rewritten (the summary's role).
    summary_line: Option<String>,
    preview: Option<String>,
    entries: u64,
    malformed: u64,
}

impl CrushReader {
    pub fn new() -> CrushReader {
        CrushReader::default()
    }

    fn summary_id(&self) -> Option<&str> {
        self.session.as_ref()?["summary_message_id"].as_str()
    }

    fn line(&mut self, bytes: &[u8], at: u64) {
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            self.malformed += 1;
            return;
        };
        self.entries += 1;
        if v["type"] == "session" && self.session.is_none() {
            self.session = Some(v);
            return;
        }
        let (Some(id), Some(role)) = (v["id"].as_str(), v["role"].as_str()) else {
            return;
        };
        if role == "user" && self.preview.is_none() {
            self.preview = v["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["type"] == "text")
                .and_then(|p| p["data"]["text"].as_str())
                .map(|t| t.trim().lines().next().unwrap_or("").to_string())
                .filter(|t| !t.is_empty());
        }
        if Some(id) == self.summary_id() {
            self.summary_line = std::str::from_utf8(bytes).ok().map(str::to_string);
        }
        self.messages.push((
            id.to_string(),
            role.to_string(),
            at,
            bytes.len() as u64,
            v["created_at"].as_i64(),
        ));
    }

    /// Where the resumed conversation starts: the summary message, when the session
    /// names one that is there.
    fn start(&self) -> usize {
        self.summary_id()
            .and_then(|s| self.messages.iter().position(|m| m.0 == s))
            .unwrap_or(0)
    }
}

impl ForeignReader for CrushReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        crate::usage_record::each_line(offset, bytes, |at, line| self.line(line, at))
    }

    fn follows_appends(&self) -> bool {
        false
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let mut s = ForeignSummary {
            entries: self.entries,
            malformed_lines: self.malformed,
            preview: self.preview.clone(),
            ..ForeignSummary::default()
        };
        let Some(h) = &self.session else {
            s.not_resumable_reason = Some("not a Crush session".into());
            return s;
        };
        s.id = h["id"].as_str().unwrap_or_default().to_string();
        s.cwd = h["cwd"].as_str().map(str::to_string);
        s.title = h["title"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        s.created_at = rfc3339(h["created_at"].as_i64());
        s.updated_at = rfc3339(h["updated_at"].as_i64());
        s.parent_id = h["parent_session_id"].as_str().map(str::to_string);
        // `crush` lists root sessions only.
        s.listed = s.parent_id.is_none() && h.get("unreadable").is_none();
        s.compactions = u64::from(self.start() > 0);
        if let Some(why) = h["unreadable"].as_str() {
            s.not_resumable_reason = Some(format!("the database cannot be read: {why}"));
            return s;
        }
        s.resumable = true;
        for m in &self.messages[self.start()..] {
            s.messages += 1;
            *s.roles.entry(m.1.clone()).or_insert(0) += 1;
        }
        s
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn messages(&self, _tail: &[u8], history: bool) -> Vec<MessageRef> {
        if self
            .session
            .as_ref()
            .is_none_or(|h| h.get("unreadable").is_some())
        {
            return Vec::new();
        }
        let start = self.start();
        let summary = self.summary_id();
        self.messages
            .iter()
            .enumerate()
            .filter(|(i, _)| history || *i >= start)
            .map(|(i, (id, _, at, len, created))| {
                let is_summary = Some(id.as_str()) == summary && i == start;
                // Crush resumes from its summary as a user message.
                let pieces = match (&self.summary_line, is_summary) {
                    (Some(line), true) => vec![Piece::Text(
                        crate::sources::json_text::spread(line, &[("role", "\"user\"".into())])
                            .unwrap_or_else(|| line.clone()),
                    )],
                    _ => vec![Piece::Range {
                        start: *at,
                        len: *len,
                    }],
                };
                MessageRef {
                    pieces,
                    entry: Some(id.clone()),
                    timestamp: rfc3339(*created),
                    in_conversation: i >= start,
                    injected: false,
                    summary: is_summary,
                    model: None,
                }
            })
            .collect()
    }
}
