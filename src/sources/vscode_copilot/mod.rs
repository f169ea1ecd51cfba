//! GitHub Copilot Chat in VS Code (the chat sessions VS Code itself stores for it):
//! `workspaceStorage/<hash>/chatSessions/<id>.json` (one JSON document, rewritten
//! whole) or `<id>.jsonl` (an operation log, appended to: `oplog.rs`), and the
//! empty-window chats in `globalStorage/emptyWindowChatSessions/`, under VS Code's
//! user folder; a workspace's folder is its `workspace.json`'s. Each session is a unit
//! (`sources/units.rs`) whose dump is the session as turns:
//!
//! 1. `{"fen_file": "workspace.json", "folder": PATH}` (the session's cwd, or null),
//! 2. `{"fen_file": "<id>.json[l]", ...the session's fields but requests}`,
//! 3. per request, a user line `{"role": "user", requestId, timestamp, message,
//!    variableData, modelId, agent, modeInfo}` and, once answered, an assistant line
//!    `{"role": "assistant", requestId, responseId, timestamp, modelId, agent,
//!    response, result, modelState}`: the request's stored fields, each kept as
//!    stored for a `.json` file (a `.jsonl` log has no stored form of the whole
//!    request: its replayed values are written back as JSON).
//!
//! A `.jsonl` log is replayed incrementally: only the entries appended since the last
//! read are parsed (the replay's state kept in memory for the most recently read
//! logs), so a new message costs its entry's bytes, plus writing the dump again.
//!
//! Built from source only (VS Code is not run here): microsoft/vscode
//! ce1580aa66c166f369325f5dcaa55db7701cf6cc (`objectMutationLog.ts`),
//! 03d43368c3ce601d54d8eceb01b11cf9758b9e4a (`chatSessionOperationLog.ts`),
//! 047238f9fe1b7661362b3f27cfbddd503339cb1b (`chatSessionStore.ts`), all under
//! `src/vs/workbench/contrib/chat/common/model/`; microsoft/vscode-copilot-chat
//! 31acd00a86424e2ee6e980e54919cf31fbf88030 (`src/extension/prompt/common/conversation.ts`:
//! `result.metadata` `toolCallRounds`, `toolCallResults`, `promptTokens`).

pub mod kind;
mod neutral;
mod oplog;
mod reader;
mod usage;

pub use neutral::to_neutral;
pub use reader::ChatReader;
pub use usage::ChatUsage;

use super::json_text::{ObjectWriter, minify};
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use super::whole_json::{self, FileRead};
use crate::json::RawObject;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The request fields of a user turn and of an assistant turn, in the dump's order.
const USER_FIELDS: [&str; 7] = [
    "requestId",
    "timestamp",
    "message",
    "variableData",
    "modelId",
    "agent",
    "modeInfo",
];
const ASSISTANT_FIELDS: [&str; 8] = [
    "requestId",
    "responseId",
    "timestamp",
    "modelId",
    "agent",
    "response",
    "result",
    "modelState",
];

/// Replays kept in memory at once (the most recently read logs).
const KEPT_REPLAYS: usize = 16;

/// How much of a log's consumed bytes proves it is the log read before.
const PROOF: usize = 4096;

struct Kept {
    dev: u64,
    ino: u64,
    consumed: u64,
    /// The last bytes consumed (at most `PROOF`).
    tail: Vec<u8>,
    replay: oplog::Replay,
    used: u64,
}

/// VS Code's user folder as units.
pub struct ChatUnits {
    root: PathBuf,
    replays: Mutex<(HashMap<PathBuf, Kept>, u64)>,
}

fn is_session_file(name: &str) -> bool {
    (name.ends_with(".json") || name.ends_with(".jsonl")) && !name.starts_with('.')
}

/// The session files of one folder: `<id>.jsonl` over `<id>.json` (VS Code moves a
/// session to the log and reads it first).
fn session_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| is_session_file(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    files.sort();
    let logs: std::collections::HashSet<PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| p.with_extension(""))
        .collect();
    files.retain(|p| {
        p.extension().is_some_and(|e| e == "jsonl") || !logs.contains(&p.with_extension(""))
    });
    files
}

impl ChatUnits {
    pub fn new(root: &Path) -> Self {
        ChatUnits {
            root: root.to_path_buf(),
            replays: Mutex::new((HashMap::new(), 0)),
        }
    }

    /// The workspace storage folder a session file is in (none: an empty window's).
    fn workspace_of(&self, file: &Path) -> Option<PathBuf> {
        let chat = file.parent()?;
        let ws = chat.parent()?;
        (chat.file_name()? == "chatSessions" && ws.parent()? == self.root.join("workspaceStorage"))
            .then(|| ws.to_path_buf())
    }

    /// The log's state now, reading only what was appended since the last read.
    fn replay(&self, path: &Path) -> Result<oplog::Replay, String> {
        use std::io::{Read, Seek, SeekFrom};
        let (mut file, meta) = crate::store::open::open_regular(path).map_err(|e| e.reason)?;
        let (dev, ino, size) = (meta.dev(), meta.ino(), meta.len());
        let mut guard = self.replays.lock().unwrap();
        guard.1 += 1;
        let tick = guard.1;
        let mut kept = guard.0.remove(path).filter(|k| {
            k.dev == dev && k.ino == ino && k.consumed <= size && {
                // The bytes before the mark are still the ones read.
                let mut check = vec![0; k.tail.len()];
                file.seek(SeekFrom::Start(k.consumed - k.tail.len() as u64))
                    .and_then(|_| file.read_exact(&mut check))
                    .is_ok()
                    && check == k.tail
            }
        });
        let mut k = kept.take().unwrap_or(Kept {
            dev,
            ino,
            consumed: 0,
            tail: Vec::new(),
            replay: oplog::Replay::default(),
            used: tick,
        });
        if size - k.consumed > whole_json::MAX_FILE {
            return Err(format!(
                "{} grew by more than {} bytes",
                path.display(),
                whole_json::MAX_FILE
            ));
        }
        let mut new = Vec::with_capacity((size - k.consumed) as usize);
        file.seek(SeekFrom::Start(k.consumed))
            .and_then(|_| file.take(size - k.consumed).read_to_end(&mut new))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let whole = memchr::memrchr(b'\n', &new).map_or(0, |i| i + 1);
        for line in new[..whole].split(|&b| b == b'\n') {
            k.replay.apply(line.trim_ascii());
        }
        k.consumed += whole as u64;
        let mut tail = std::mem::take(&mut k.tail);
        tail.extend_from_slice(&new[..whole]);
        let cut = tail.len().saturating_sub(PROOF);
        k.tail = tail.split_off(cut);
        k.used = tick;
        let out = k.replay.clone();
        guard.0.insert(path.to_path_buf(), k);
        if guard.0.len() > KEPT_REPLAYS
            && let Some(oldest) = guard
                .0
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(p, _)| p.clone())
        {
            guard.0.remove(&oldest);
        }
        Ok(out)
    }
}

/// Writes a request's turns: `fields` are its (key, JSON text) pairs.
fn push_turns(out: &mut Vec<u8>, fields: &[(String, String)]) {
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str());
    let mut user = ObjectWriter::default();
    user.string("role", "user");
    for f in USER_FIELDS {
        if let Some(v) = get(f) {
            user.raw(f, v);
        }
    }
    out.extend_from_slice(user.finish().as_bytes());
    out.push(b'\n');
    let answered = get("response").is_some_and(|r| r != "[]" && r != "null")
        || get("result").is_some_and(|r| r != "null");
    if !answered {
        return;
    }
    let mut assistant = ObjectWriter::default();
    assistant.string("role", "assistant");
    for f in ASSISTANT_FIELDS {
        if let Some(v) = get(f) {
            assistant.raw(f, v);
        }
    }
    out.extend_from_slice(assistant.finish().as_bytes());
    out.push(b'\n');
}

impl UnitSource for ChatUnits {
    /// The folders sessions come in: the root, `workspaceStorage/`, each workspace
    /// (its `workspace.json`, its `chatSessions/` coming) and its `chatSessions/`,
    /// and the empty window's.
    fn watched(&self) -> Vec<PathBuf> {
        let workspaces = self.root.join("workspaceStorage");
        let global = self.root.join("globalStorage");
        let mut out = vec![
            self.root.clone(),
            global.join("emptyWindowChatSessions"),
            global,
        ];
        for ws in super::units::subfolders(&workspaces) {
            out.push(ws.join("chatSessions"));
            out.push(ws);
        }
        out.push(workspaces);
        out
    }

    fn list(&self) -> Vec<UnitInfo> {
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(self.root.join("workspaceStorage")) {
            let mut workspaces: Vec<PathBuf> = rd
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            workspaces.sort();
            for ws in workspaces {
                let files = session_files(&ws.join("chatSessions"));
                if files.is_empty() {
                    continue;
                }
                let cwd = super::vscdb::workspace_folder(&ws);
                out.extend(files.into_iter().map(|key| UnitInfo {
                    key,
                    cwd: cwd.clone(),
                }));
            }
        }
        for key in session_files(&self.root.join("globalStorage/emptyWindowChatSessions")) {
            out.push(UnitInfo { key, cwd: None });
        }
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        let mut files = vec![key.to_path_buf()];
        if let Some(ws) = self.workspace_of(key) {
            files.push(ws.join("workspace.json"));
        }
        std::fs::symlink_metadata(key)
            .ok()
            .filter(|m| m.is_file())?;
        whole_json::signature(&files, b"")
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        let signature = self.signature(key)?;
        let name = key.file_name()?.to_string_lossy().into_owned();
        let mut out = Vec::new();
        let folder = self
            .workspace_of(key)
            .and_then(|ws| super::vscdb::workspace_folder(&ws));
        whole_json::push_header(
            &mut out,
            "workspace.json",
            &[(
                "folder",
                folder.map_or("null".into(), |f| crate::json::quote(&f)),
            )],
        );
        if name.ends_with(".jsonl") {
            match self.replay(key) {
                Ok(r) => {
                    let (fields, requests) = r.state.as_ref().map(oplog::split).unwrap_or_default();
                    let mut all: Vec<(&str, String)> = fields
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.clone()))
                        .collect();
                    if let Some(why) = &r.error {
                        all.push(("fen_unreadable", crate::json::quote(why)));
                    }
                    whole_json::push_header(&mut out, &name, &all);
                    for req in requests {
                        let fields: Vec<(String, String)> = req
                            .iter()
                            .map(|(k, v)| (k.clone(), v.to_string()))
                            .collect();
                        push_turns(&mut out, &fields);
                    }
                }
                Err(why) => whole_json::push_unreadable(&mut out, &name, &why),
            }
        } else {
            match whole_json::read(key, "VS Code") {
                FileRead::Json(text) => match RawObject::parse(&text) {
                    Ok(o) => {
                        let fields: Vec<(&str, String)> = o
                            .fields
                            .iter()
                            .filter(|(k, _)| k != "requests")
                            .map(|(k, v)| (k.as_ref(), minify(v.get()).unwrap_or_default()))
                            .collect();
                        whole_json::push_header(&mut out, &name, &fields);
                        let requests: Vec<&serde_json::value::RawValue> = o
                            .get("requests")
                            .and_then(|r| serde_json::from_str(r.get()).ok())
                            .unwrap_or_default();
                        for r in requests {
                            let Ok(ro) = RawObject::parse(r.get()) else {
                                continue;
                            };
                            let fields: Vec<(String, String)> = ro
                                .fields
                                .iter()
                                .map(|(k, v)| (k.to_string(), minify(v.get()).unwrap_or_default()))
                                .collect();
                            push_turns(&mut out, &fields);
                        }
                    }
                    Err(e) => whole_json::push_unreadable(&mut out, &name, &e),
                },
                FileRead::Bad(why) => whole_json::push_unreadable(&mut out, &name, &why),
                FileRead::Absent => return None,
            }
        }
        Some(Dump {
            bytes: out,
            signature,
            transient: false,
        })
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        key.to_path_buf()
    }
}

/// Whether `root` holds VS Code's chat sessions (a user folder with workspace or
/// global storage).
pub fn present(root: &Path) -> bool {
    let dir = |p: PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    dir(root.join("workspaceStorage")) || dir(root.join("globalStorage/emptyWindowChatSessions"))
}
