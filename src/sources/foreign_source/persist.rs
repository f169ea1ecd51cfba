//! The index of summaries saved in fen's cache, reused on the next mount for every
//! file whose stamp is unchanged; and saving every cache at unmount.

use super::conversations::Conversation;
use super::index::FileEntry;
use super::readers::Following;
use super::{ForeignSource, INDEX_VERSION, MAX_CACHE_BYTES};
use crate::agent::Agent;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Serialize, Deserialize)]
struct Persisted {
    version: u32,
    agent: Agent,
    root: PathBuf,
    files: Vec<(PathBuf, FileEntry)>,
}

impl ForeignSource {
    pub(super) fn load_persisted(&self) -> HashMap<PathBuf, FileEntry> {
        let Some(bytes) = self
            .cache_file
            .as_ref()
            .and_then(|c| crate::store::atomic::read_file(c, MAX_CACHE_BYTES))
        else {
            return HashMap::new();
        };
        match serde_json::from_slice::<Persisted>(&bytes) {
            Ok(p) if p.version == INDEX_VERSION && p.agent == self.agent && p.root == self.root => {
                p.files.into_iter().collect()
            }
            _ => HashMap::new(),
        }
    }

    /// Saves the index (best effort: a lost cache costs the next mount a re-read).
    pub fn persist_index(&self) {
        let Some(path) = &self.cache_file else { return };
        let files: Vec<(PathBuf, FileEntry)> = {
            let idx = self.index.lock().unwrap();
            idx.files
                .iter()
                .map(|(p, e)| (p.clone(), (**e).clone()))
                .collect()
        };
        let p = Persisted {
            version: INDEX_VERSION,
            agent: self.agent,
            root: self.root.clone(),
            files,
        };
        if let Ok(bytes) = serde_json::to_vec(&p) {
            crate::store::atomic::replace_file(path, &bytes);
        }
    }

    /// Saves every cache that lets the next mount start fast: the index, the
    /// layouts and the reader states still in memory (best effort).
    pub(super) fn persist_caches(&self) {
        self.persist_index();
        let convs: Vec<(PathBuf, Conversation)> =
            self.conversations.lock().unwrap().by_path.drain().collect();
        for (path, c) in convs {
            self.save_conversation(&path, &c);
        }
        let readers: Vec<(PathBuf, Following)> =
            self.readers.lock().unwrap().following.drain().collect();
        for (path, mut f) in readers {
            self.save_state(&path, &mut f);
        }
    }
}
