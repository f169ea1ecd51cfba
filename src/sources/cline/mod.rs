//! Cline's sessions, as units (`sources/units.rs`) whose dumps are their JSON files
//! (`sources/whole_json.rs`), read by [`ClineReader`]:
//!
//! - Cline 3.x (the CLI, `cline` on npm): `sessions/<id>/<id>.json` (the session's
//!   record: cwd, title, usage), `<id>.messages.json` (the messages, Anthropic-style
//!   blocks, each assistant message's `metrics`), and `<id>.compaction.json` once a
//!   compaction ran, all rewritten whole on every update. Dump: the record, the
//!   compaction, the messages.
//! - Task folders (the 2.x CLI and the VS Code extension before it moved to 3.x's
//!   sessions): `tasks/<id>/api_conversation_history.json` (what is sent),
//!   `ui_messages.json` (what is shown, with each request's tokens and cost),
//!   `task_metadata.json`, and the task's entry of `state/taskHistory.json` (its cwd,
//!   title and truncation). Dump: the metadata, the entry, the API history, the UI
//!   messages.
//!
//! Roo Code keeps Cline's task folders under its own names (`history_item.json`
//! beside each task, no index): `sources/roo/` is this module over [`Names`].

mod format;
pub mod kind;
mod neutral;
mod reader;
pub mod usage;

pub use format::display_user_input;
pub use neutral::to_neutral;
pub use reader::ClineReader;

use super::units::{Dump, Signature, UnitInfo, UnitSource};
use super::whole_json::{self, FileRead};
use crate::store::index::FileStamp;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What differs between the agents keeping Cline's task folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    /// The agent, for reasons and the keys of its usage records.
    pub name: &'static str,
    /// Who rewrites its files, in reasons ("Cline").
    pub display: &'static str,
    /// The record beside each task's history: `task_metadata.json` (Cline),
    /// `history_item.json` (Roo Code).
    pub task_record: &'static str,
    /// The index of tasks under the root (Cline's `state/taskHistory.json`), if any.
    pub history_index: Option<&'static str>,
    /// Whether the root also holds 3.x `sessions/<id>/` folders.
    pub sessions: bool,
}

/// Cline's names.
pub const CLINE: Names = Names {
    name: "cline",
    display: "Cline",
    task_record: "task_metadata.json",
    history_index: Some("state/taskHistory.json"),
    sessions: true,
};

const API: &str = "api_conversation_history.json";
const UI: &str = "ui_messages.json";

fn is_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

fn is_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
}

/// The folders (not links) in `dir`, by name.
fn folders(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    out
}

/// Whether `root` holds sessions of an agent with `names`.
pub fn present(names: &Names, root: &Path) -> bool {
    (names.sessions && is_dir(&root.join("sessions"))) || is_dir(&root.join("tasks"))
}

/// Cline's task index as last read: each task's entry, minified.
#[derive(Default)]
struct Index {
    at: Option<FileStamp>,
    entries: HashMap<String, String>,
}

/// An agent's sessions and task folders under one root, as units.
pub struct TaskUnits {
    root: PathBuf,
    names: Names,
    index: Mutex<Index>,
}

/// What kind of unit a key is.
enum Unit {
    /// `sessions/<id>`.
    Session(String),
    /// `tasks/<id>`.
    Task(String),
}

impl TaskUnits {
    pub fn new(names: Names, root: &Path) -> Self {
        TaskUnits {
            root: root.to_path_buf(),
            names,
            index: Mutex::new(Index::default()),
        }
    }

    fn unit(&self, key: &Path) -> Option<Unit> {
        let id = key.file_name()?.to_string_lossy().into_owned();
        let parent = key.parent()?;
        if parent == self.root.join("tasks") {
            Some(Unit::Task(id))
        } else if self.names.sessions && parent == self.root.join("sessions") {
            Some(Unit::Session(id))
        } else {
            None
        }
    }

    fn session_files(&self, key: &Path, id: &str) -> [PathBuf; 3] {
        [
            key.join(format!("{id}.json")),
            key.join(format!("{id}.compaction.json")),
            key.join(format!("{id}.messages.json")),
        ]
    }

    fn task_files(&self, key: &Path) -> [PathBuf; 3] {
        [
            key.join(self.names.task_record),
            key.join(API),
            key.join(UI),
        ]
    }

    /// The task's entry of the index (re-read when the index file changed).
    fn index_entry(&self, id: &str) -> Option<String> {
        let rel = self.names.history_index?;
        let path = self.root.join(rel);
        let stamp = std::fs::symlink_metadata(&path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| FileStamp::of(&m));
        let mut index = self.index.lock().unwrap();
        if index.at != stamp || stamp.is_none() {
            index.entries.clear();
            if let FileRead::Json(text) = whole_json::read(&path, self.names.display)
                && let Ok(items) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(&text)
            {
                for item in items {
                    let Ok(o) = crate::json::RawObject::parse(item.get()) else {
                        continue;
                    };
                    if let Some(id) = o.get("id").and_then(crate::json::as_string)
                        && let Some(text) = super::json_text::minify(item.get())
                    {
                        index.entries.insert(id, text);
                    }
                }
            }
            index.at = stamp;
        }
        index.entries.get(id).cloned()
    }
}

impl UnitSource for TaskUnits {
    /// The root (where `tasks/`, `sessions/` and `state/` come), those folders, the
    /// index's, and every session and task folder, unit or not yet (their files are
    /// rewritten there).
    fn watched(&self) -> Vec<PathBuf> {
        let mut out = vec![self.root.clone()];
        if let Some(parent) = self
            .names
            .history_index
            .and_then(|rel| self.root.join(rel).parent().map(Path::to_path_buf))
        {
            out.push(parent);
        }
        let mut kinds = vec![self.root.join("tasks")];
        if self.names.sessions {
            kinds.push(self.root.join("sessions"));
        }
        for dir in kinds {
            out.extend(super::units::subfolders(&dir));
            out.push(dir);
        }
        out
    }

    fn list(&self) -> Vec<UnitInfo> {
        let mut out = Vec::new();
        if self.names.sessions {
            for (id, dir) in folders(&self.root.join("sessions")) {
                if is_file(&dir.join(format!("{id}.messages.json")))
                    || is_file(&dir.join(format!("{id}.json")))
                {
                    out.push(UnitInfo {
                        key: dir,
                        cwd: None,
                    });
                }
            }
        }
        for (_, dir) in folders(&self.root.join("tasks")) {
            if is_file(&dir.join(API)) || is_file(&dir.join(self.names.task_record)) {
                out.push(UnitInfo {
                    key: dir,
                    cwd: None,
                });
            }
        }
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        match self.unit(key)? {
            Unit::Session(id) => whole_json::signature(&self.session_files(key, &id), b""),
            Unit::Task(id) => {
                let entry = self.index_entry(&id).unwrap_or_default();
                whole_json::signature(&self.task_files(key), entry.as_bytes())
            }
        }
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        let signature = self.signature(key)?;
        let who = self.names.display;
        let mut out = Vec::new();
        match self.unit(key)? {
            Unit::Session(id) => {
                let [record, compaction, messages] = self.session_files(key, &id);
                let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
                whole_json::dump_file(
                    &mut out,
                    &name(&record),
                    &whole_json::read(&record, who),
                    None,
                );
                whole_json::dump_file(
                    &mut out,
                    &name(&compaction),
                    &whole_json::read(&compaction, who),
                    Some("messages"),
                );
                whole_json::dump_file(
                    &mut out,
                    &name(&messages),
                    &whole_json::read(&messages, who),
                    Some("messages"),
                );
            }
            Unit::Task(id) => {
                let [record, api, ui] = self.task_files(key);
                whole_json::dump_file(
                    &mut out,
                    self.names.task_record,
                    &whole_json::read(&record, who),
                    None,
                );
                if let (Some(rel), Some(entry)) = (self.names.history_index, self.index_entry(&id))
                {
                    whole_json::dump_file(&mut out, rel, &FileRead::Json(entry), None);
                }
                whole_json::dump_file(&mut out, API, &whole_json::read(&api, who), None);
                whole_json::dump_file(&mut out, UI, &whole_json::read(&ui, who), None);
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
