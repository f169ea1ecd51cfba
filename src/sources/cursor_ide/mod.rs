//! Cursor (the IDE, kind `cursor-ide`; `cursor` is its agent CLI): its chats and
//! agent sessions ("composers") in the global `state.vscdb` of its user folder
//! (`~/.config/Cursor/User/globalStorage/state.vscdb`, table `cursorDiskKV`), one
//! session per composer (`rows.rs`). The global database names no workspace: a
//! composer's cwd is the folder of the workspace whose own `state.vscdb` lists it
//! (`ItemTable` key `composer.composerData`, `allComposers[].composerId`; the
//! folder from that workspace's `workspace.json`), else what its bubbles name
//! (`workspaceProjectDir`, `workspaceUris`). Every `state.vscdb` is read strictly
//! read-only (`sources/vscode_state.rs`, `db_units.rs`).
//!
//! Cursor is closed source: built from the public readers of these keys, not from
//! Cursor's code (Dicklesworthstone/franken_agent_detection
//! 6ae73d5f78d2800b3fd1cadec27b0db43f483817 `src/connectors/cursor.rs`: the keys,
//! bubble `type` 1 user / 2 assistant, `fullConversationHeadersOnly`, the inline
//! `conversation` of older versions, `workspaceProjectDir`/`workspaceUris`); nothing
//! was checked against Cursor itself, so `resume_rules: "best effort"`. Not read: the
//! legacy chat panel's `workbench.panel.aichat.view.aichat.chatdata` in workspace
//! databases (Cursor before composers).

pub mod kind;
mod neutral;
mod reader;
mod rows;
mod usage;

pub use neutral::to_neutral;
pub use reader::CursorIdeReader;
pub use usage::CursorIdeUsage;

use super::db_units::DbUnits;
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use crate::store::index::FileStamp;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The global database under the user folder.
pub fn database(root: &Path) -> PathBuf {
    root.join("globalStorage").join("state.vscdb")
}

/// Whether `root` (Cursor's user folder) holds its global database.
pub fn present(root: &Path) -> bool {
    std::fs::symlink_metadata(database(root)).is_ok_and(|m| m.is_file())
}

/// One workspace database as read: its stamp, the composers it lists, its folder.
struct Workspace {
    at: Option<FileStamp>,
    composers: Vec<String>,
    folder: Option<String>,
}

/// What the workspaces' databases say: composer id → the workspace's folder.
#[derive(Default)]
struct Workspaces {
    read: HashMap<PathBuf, Workspace>,
}

/// Cursor's composers as units.
pub struct CursorIdeUnits {
    root: PathBuf,
    db: DbUnits<rows::CursorRows>,
    workspaces: Mutex<Workspaces>,
}

fn stamp(p: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(p)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

impl CursorIdeUnits {
    pub fn new(root: &Path) -> Self {
        CursorIdeUnits {
            root: root.to_path_buf(),
            db: DbUnits::new(&database(root), rows::CursorRows),
            workspaces: Mutex::new(Workspaces::default()),
        }
    }

    /// Composer id → cwd, from every workspace database (each read again only when
    /// its stamp changed).
    fn cwds(&self) -> HashMap<String, String> {
        let mut w = self.workspaces.lock().unwrap();
        let mut seen = Vec::new();
        if let Ok(rd) = std::fs::read_dir(self.root.join("workspaceStorage")) {
            for e in rd.flatten() {
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let db = e.path().join("state.vscdb");
                let at = stamp(&db);
                seen.push(db.clone());
                if at.is_none() || w.read.get(&db).is_some_and(|r| r.at == at) {
                    continue;
                }
                let folder = super::vscode_state::workspace_folder(&e.path());
                let ids = super::vscode_state::items(&db, "ItemTable", &["composer.composerData"])
                    .ok()
                    .and_then(|items| items.into_iter().next())
                    .and_then(|(_, v)| serde_json::from_str::<serde_json::Value>(&v).ok())
                    .map(|v| {
                        v.get("allComposers")
                            .and_then(|a| a.as_array())
                            .into_iter()
                            .flatten()
                            .filter_map(|c| c.get("composerId")?.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                w.read.insert(
                    db,
                    Workspace {
                        at,
                        composers: ids,
                        folder,
                    },
                );
            }
        }
        w.read.retain(|p, _| seen.contains(p));
        let mut out = HashMap::new();
        for r in w.read.values() {
            if let Some(f) = &r.folder {
                for id in &r.composers {
                    out.insert(id.clone(), f.clone());
                }
            }
        }
        out
    }

    fn cwd_of(&self, key: &Path) -> Option<String> {
        let id = key.file_name()?.to_string_lossy().into_owned();
        self.cwds().remove(&id)
    }

    /// The database's signature, with the cwd the workspaces give it.
    fn with_cwd(s: Signature, cwd: &Option<String>) -> Signature {
        Signature {
            hash: s.hash
                ^ crate::store::atomic::checksum(&[cwd.as_deref().unwrap_or("").as_bytes()])
                    .rotate_left(7),
            updated_ms: s.updated_ms,
        }
    }
}

impl UnitSource for CursorIdeUnits {
    fn changed(&self) -> bool {
        true
    }

    fn list(&self) -> Vec<UnitInfo> {
        let cwds = self.cwds();
        self.db
            .list()
            .into_iter()
            .map(|mut u| {
                if let Some(id) = u.key.file_name().map(|n| n.to_string_lossy().into_owned()) {
                    u.cwd = cwds.get(&id).cloned();
                }
                u
            })
            .collect()
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        let s = self.db.signature(key)?;
        Some(Self::with_cwd(s, &self.cwd_of(key)))
    }

    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        let s = self.db.listed_signature(key)?;
        Some(Self::with_cwd(s, &self.cwd_of(key)))
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        let cwd = self.cwd_of(key);
        let d = self.db.dump(key)?;
        let mut bytes = Vec::with_capacity(d.bytes.len() + 64);
        super::whole_json::push_header(
            &mut bytes,
            "workspace",
            &[(
                "folder",
                cwd.as_deref().map_or("null".into(), crate::json::quote),
            )],
        );
        bytes.extend_from_slice(&d.bytes);
        Some(Dump {
            bytes,
            signature: Self::with_cwd(d.signature, &cwd),
            transient: d.transient,
        })
    }

    fn source_path(&self, _key: &Path) -> PathBuf {
        self.db.path().to_path_buf()
    }
}
