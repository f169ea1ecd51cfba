//! What the keeper (`keep/`) reads of a source: its sessions as the index knows them,
//! their bytes as the reader reads them (a file, or a database session's dump), and
//! which messages a state of those bytes holds.

use super::ForeignSource;
use super::readers::{Following, feed};
use crate::error::Result;
use crate::store::index::FileStamp;
use crate::store::kept::OutsideFacts;
use std::fs::File;
use std::path::{Path, PathBuf};

/// One session of a source, for keeping.
#[derive(Debug, Clone)]
pub struct ToKeep {
    /// The session's key: its file, or `<database>/<session id>`.
    pub key: PathBuf,
    pub stamp: FileStamp,
    /// A database-backed session (its bytes are a dump, rewritten when rows change).
    pub unit: bool,
    /// The agent only appends to the file (its reader follows appends).
    pub appends: bool,
    pub id: String,
    pub facts: OutsideFacts,
}

impl ForeignSource {
    /// Every session of this source now, each file `stat`ed (an agent's write is
    /// found within one sweep) and read again if it changed. Waits for the first
    /// index.
    pub fn sessions_to_keep(&self) -> Vec<ToKeep> {
        if self.kept.is_some() {
            return Vec::new();
        }
        self.sync(None);
        let entries: Vec<(PathBuf, FileStamp)> = {
            let idx = self.wait_for(None);
            idx.files
                .iter()
                .map(|(p, e)| (p.clone(), e.stamp))
                .collect()
        };
        for (path, stamp) in &entries {
            if self.stamp_of(path) != Some(*stamp) {
                self.refresh_file(path);
            }
        }
        let idx = self.index.lock().unwrap();
        let mut out: Vec<ToKeep> = idx
            .files
            .iter()
            .map(|(path, e)| {
                let listing = self.listing(&idx, path, e);
                let placed = idx.dir_of.get(path);
                ToKeep {
                    key: path.clone(),
                    stamp: e.stamp,
                    unit: self.is_unit(path),
                    appends: !self.is_unit(path) && self.new_reader(path).follows_appends(),
                    id: e.summary.id.clone(),
                    facts: OutsideFacts {
                        cwd: e.summary.cwd.clone(),
                        title: listing
                            .as_ref()
                            .and_then(|l| l.title.clone())
                            .or_else(|| e.summary.title.clone()),
                        archived: e.summary.archived,
                        created_at: Some(e.created_at()),
                        namespace: placed.map(|(n, _)| n.clone()),
                        dir: placed.map(|(_, d)| d.clone()),
                    },
                }
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    /// Whether its first index is built.
    pub fn is_indexed(&self) -> bool {
        self.index.lock().unwrap().ready
    }

    /// Session `key`'s bytes as its reader reads them, and their stamp.
    pub fn open_to_keep(&self, key: &Path) -> Result<(File, FileStamp)> {
        self.open_bytes(key)
    }

    /// The messages `file[..len]` holds when read as session `key` (history
    /// included), each as its entry id, else a hash of its bytes: what tells whether a
    /// rewritten session dropped any.
    pub fn message_ids(&self, key: &Path, file: &File, len: u64) -> Result<Vec<String>> {
        let mut following = Following::new(self.new_reader(key));
        let mut f = file
            .try_clone()
            .map_err(|e| crate::Error::io("a session", &e))?;
        feed(&mut f, &mut following, len)?;
        let refs = following.reader.messages(&following.tail, true);
        let mut out = Vec::with_capacity(refs.len());
        for r in refs {
            out.push(match r.entry {
                Some(id) => id,
                None => {
                    let bytes = crate::views::pieces::read_joined(file, &r.pieces)?;
                    format!("{:016x}", crate::store::atomic::checksum(&[&bytes]))
                }
            });
        }
        Ok(out)
    }
}
