//! Cursor, the editor (not its agent CLI, `sources/cursor`): its chats ("composers")
//! as the public readers of its databases read them. Cursor is closed source; built
//! from AgentsView (kenn-io/agentsview), cass (Dicklesworthstone/franken_agent_detection
//! `src/connectors/cursor.rs`), cursor-history (Citadawn/cursor-history
//! `src/core/storage.ts`) and the storage notes of chatrxiv (michaeldhood/chatrxiv
//! `docs/cursor/storage-reference.md`); docs/agents.md names the commits.
//!
//! Cursor's user folder is VS Code's (`$XDG_CONFIG_HOME/Cursor/User`, else
//! `~/.config/Cursor/User`, `sources/vscdb.rs`): composers are rows of
//! `globalStorage/state.vscdb`, one unit each (`<database>/<composerId>`); the chats
//! of Cursor's first versions are in each workspace's `state.vscdb`, one unit per
//! chat tab (`<workspace database>/<tabId>`). `db.rs` dumps both.
//!
//! A composer's cwd: its Cursor 3 header's workspace URI; else the folder of the
//! workspace its header or a workspace's own list names (`workspace.json`); else the
//! workspace its messages name (read from the dump, `reader.rs`).

mod db;
pub mod kind;
pub mod neutral;
pub mod reader;
pub mod usage;

pub use db::{
    CHATDATA_KEY, ChatTabs, ComposerRows, DISK_KV, HEADERS_KEY, WORKSPACE_COMPOSERS_KEY,
    WorkspaceMap,
};
pub use neutral::to_neutral;
pub use reader::CursorIdeReader;

use super::db_units::DbUnits;
use super::units::{Dump, Signature, UnitInfo, UnitSource};
use super::vscdb;
use crate::store::index::FileStamp;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// The user folder Cursor itself uses on Linux (Electron's `appData` is
/// `$XDG_CONFIG_HOME`, else `~/.config`).
pub fn default_root() -> Option<PathBuf> {
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").map(|h| h.join(".config")))
        .map(|d| d.join("Cursor").join("User"))
}

/// The global database of a user folder.
pub fn global_db(root: &Path) -> PathBuf {
    vscdb::state_db(&root.join("globalStorage"))
}

/// Whether `root` (a user folder) holds Cursor's databases.
pub fn present(root: &Path) -> bool {
    std::fs::symlink_metadata(global_db(root)).is_ok_and(|m| m.is_file())
        || std::fs::symlink_metadata(root.join("workspaceStorage")).is_ok_and(|m| m.is_dir())
}

fn stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| FileStamp::of(&m))
}

fn with_wal(db: &Path) -> (Option<FileStamp>, Option<FileStamp>) {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    (stamp(db), stamp(Path::new(&wal)))
}

/// One workspace storage folder: its older chats, and which composers it lists.
struct Workspace {
    chats: DbUnits<ChatTabs>,
    /// The database's stamps when its composer list was read.
    read_at: Option<(Option<FileStamp>, Option<FileStamp>)>,
    composers: Vec<String>,
    folder: Option<String>,
}

#[derive(Default)]
struct Workspaces {
    /// `workspaceStorage`'s stamp when its folders were listed.
    listed_at: Option<Option<FileStamp>>,
    by_dir: BTreeMap<PathBuf, Workspace>,
}

/// Cursor's composers and older chats as units.
pub struct CursorIdeUnits {
    root: PathBuf,
    global: DbUnits<ComposerRows>,
    map: Arc<RwLock<WorkspaceMap>>,
    workspaces: Mutex<Workspaces>,
}

impl CursorIdeUnits {
    pub fn new(root: &Path) -> Self {
        let map = Arc::new(RwLock::new(WorkspaceMap::default()));
        CursorIdeUnits {
            root: root.to_path_buf(),
            global: DbUnits::new(&global_db(root), ComposerRows::new(map.clone())),
            map,
            workspaces: Mutex::new(Workspaces::default()),
        }
    }

    /// Reads again what changed among the workspaces (their folders, the composer
    /// lists of their databases); when the map of composers to workspaces changed,
    /// the composers' listing is read again (their cwds come from it).
    fn refresh_workspaces(&self) {
        let mut ws = self.workspaces.lock().unwrap();
        let storage = stamp(&self.root.join("workspaceStorage"));
        if ws.listed_at != Some(storage) {
            let dirs = vscdb::workspace_dirs(&self.root);
            ws.by_dir.retain(|d, _| dirs.contains(d));
            for dir in dirs {
                ws.by_dir.entry(dir.clone()).or_insert_with(|| {
                    let name = dir
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let folder = vscdb::workspace_folder(&dir);
                    Workspace {
                        chats: DbUnits::new(
                            &vscdb::state_db(&dir),
                            ChatTabs {
                                workspace: name,
                                cwd: folder.clone(),
                            },
                        ),
                        read_at: None,
                        composers: Vec::new(),
                        folder,
                    }
                });
            }
            ws.listed_at = Some(storage);
        }
        for (dir, w) in ws.by_dir.iter_mut() {
            let db = vscdb::state_db(dir);
            let at = with_wal(&db);
            if w.read_at == Some(at) {
                continue;
            }
            w.read_at = Some(at);
            w.composers = match at.0 {
                Some(s) if s.size > 0 => {
                    match super::sqlite_ro::read(&db, db::workspace_composers) {
                        Ok(c) => c,
                        Err(e) => {
                            log::debug!("cursor-ide: {}: {e}", db.display());
                            // Tried again on the next access.
                            w.read_at = None;
                            std::mem::take(&mut w.composers)
                        }
                    }
                }
                _ => Vec::new(),
            };
        }
        let mut map = WorkspaceMap::default();
        for (dir, w) in &ws.by_dir {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(f) = &w.folder {
                map.folders.insert(name.clone(), f.clone());
            }
            for c in &w.composers {
                map.composers.insert(c.clone(), name.clone());
            }
        }
        let changed = *self.map.read().unwrap() != map;
        if changed {
            *self.map.write().unwrap() = map;
            self.global.invalidate();
        }
    }

    /// The workspace whose database `key` is a unit of.
    fn workspace_of<'a>(ws: &'a Workspaces, key: &Path) -> Option<&'a Workspace> {
        let dir = key.parent()?.parent()?;
        ws.by_dir.get(dir).filter(|w| w.chats.owns(key))
    }

    fn with_workspace<T>(&self, key: &Path, f: impl FnOnce(&Workspace) -> Option<T>) -> Option<T> {
        let ws = self.workspaces.lock().unwrap();
        Self::workspace_of(&ws, key).and_then(f)
    }
}

impl UnitSource for CursorIdeUnits {
    fn changed(&self) -> bool {
        if self.global.changed() {
            return true;
        }
        let ws = self.workspaces.lock().unwrap();
        if ws.listed_at != Some(stamp(&self.root.join("workspaceStorage"))) {
            return true;
        }
        ws.by_dir
            .iter()
            .any(|(dir, w)| w.read_at != Some(with_wal(&vscdb::state_db(dir))) || w.chats.changed())
    }

    fn list(&self) -> Vec<UnitInfo> {
        self.refresh_workspaces();
        let mut out = self.global.list();
        let ws = self.workspaces.lock().unwrap();
        for w in ws.by_dir.values() {
            out.extend(w.chats.list());
        }
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        if self.global.owns(key) {
            return self.global.signature(key);
        }
        self.with_workspace(key, |w| w.chats.signature(key))
    }

    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        if self.global.owns(key) {
            return self.global.listed_signature(key);
        }
        self.with_workspace(key, |w| w.chats.listed_signature(key))
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        if self.global.owns(key) {
            return self.global.dump(key);
        }
        self.with_workspace(key, |w| w.chats.dump(key))
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        key.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}
