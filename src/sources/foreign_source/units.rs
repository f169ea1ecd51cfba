//! Where a foreign session's bytes come from: every open and `stat` of them goes
//! through these few functions. A session is a file the folder walk found (pi, Claude
//! Code, Codex...), or a unit of a database-backed store (`sources/units.rs`: OpenCode,
//! Cursor's `store.db`), whose key is a path that need not exist and whose bytes are a
//! dump made on demand.

use super::ForeignSource;
use super::index::{FileEntry, Index};
use crate::error::Result;
use crate::store::index::FileStamp;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

impl ForeignSource {
    fn unit_keys(&self) -> Option<HashMap<PathBuf, Option<String>>> {
        let units = self.units.as_ref()?;
        Some(units.list().into_iter().map(|u| (u.key, u.cwd)).collect())
    }

    /// The walk's files, less those a unit stands for, plus every unit.
    pub(super) fn with_units(&self, mut files: Vec<PathBuf>) -> Vec<PathBuf> {
        if let Some(kept) = &self.kept {
            let listed = kept.list();
            *self.unit_hints.lock().unwrap() = listed.iter().cloned().collect();
            return listed.into_iter().map(|(k, _)| k).collect();
        }
        let Some(units) = &self.units else {
            return files;
        };
        // Listed first: which files the units claim is known from this listing.
        let keys = self.unit_keys().unwrap_or_default();
        files.retain(|f| !units.source().claims(f));
        *self.unit_hints.lock().unwrap() = keys.clone();
        files.extend(keys.into_keys());
        files.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        files
    }

    pub(super) fn is_unit(&self, path: &Path) -> bool {
        self.units.is_some() && self.unit_hints.lock().unwrap().contains_key(path)
    }

    /// The session's stamp now (`None`: gone).
    pub(super) fn stamp_of(&self, path: &Path) -> Option<FileStamp> {
        if let Some(kept) = &self.kept {
            return kept.stamp(path);
        }
        match &self.units {
            Some(units) if self.is_unit(path) => units.stamp(path),
            _ => super::file_stamp(path),
        }
    }

    /// The session's stamp if it is known without making a unit's dump (a file's:
    /// its `stat`); `None` for a unit not dumped yet, or gone.
    pub(super) fn stamp_if_known(&self, path: &Path) -> Option<FileStamp> {
        match &self.units {
            Some(units) if self.kept.is_none() && self.is_unit(path) => units.known_stamp(path),
            _ => self.stamp_of(path),
        }
    }

    /// The session's bytes, as the reader and `conversation.json` read them.
    pub(super) fn open_bytes(&self, path: &Path) -> Result<(File, FileStamp)> {
        if let Some(kept) = &self.kept {
            return kept.open(path);
        }
        match &self.units {
            Some(units) if self.is_unit(path) => units.open(path),
            _ => {
                let (file, meta) = crate::store::open::open_regular(path)?;
                Ok((file, FileStamp::of(&meta)))
            }
        }
    }

    /// What `transcript.jsonl` shows: the file, the unit's dump, or the agent's own
    /// transcript a unit names.
    pub(super) fn open_transcript(&self, path: &Path) -> Result<File> {
        if let Some(units) = &self.units
            && self.is_unit(path)
            && let Some(real) = units.source().transcript(path)
        {
            return Ok(crate::store::open::open_regular(&real)?.0);
        }
        Ok(self.open_bytes(path)?.0)
    }

    /// The size `transcript.jsonl` has (the dump's, or the transcript file's a unit
    /// names).
    pub(super) fn transcript_size(&self, path: &Path, e: &FileEntry) -> u64 {
        if let Some(units) = &self.units
            && self.is_unit(path)
            && let Some(real) = units.source().transcript(path)
        {
            return super::file_stamp(&real).map_or(0, |s| s.size);
        }
        e.stamp.size
    }

    /// `meta.json`'s `source_path`: the file, or the database or folder of a unit.
    pub(super) fn source_path_of(&self, path: &Path) -> PathBuf {
        if let Some(kept) = &self.kept {
            return kept.source_key(path).unwrap_or_else(|| path.to_path_buf());
        }
        match &self.units {
            Some(units) if self.is_unit(path) => units.source().source_path(path),
            _ => path.to_path_buf(),
        }
    }

    /// The working directory a session's start names, before it is read whole.
    pub(super) fn hint_of(&self, path: &Path) -> Option<String> {
        if self.is_unit(path) || self.kept.is_some() {
            return self.unit_hints.lock().unwrap().get(path).cloned().flatten();
        }
        crate::sources::agents::cwd_hint(self.agent, &self.root, path)
    }

    /// Lets units whose rows did not change since the persisted index was written
    /// keep its entries without being dumped again (their made-up stamps carry the
    /// rows' signature and the dump's size).
    pub(super) fn seed_units(&self, persisted: &HashMap<PathBuf, FileEntry>) {
        if let Some(units) = &self.units {
            for (path, e) in persisted {
                units.seed(path, e.stamp);
            }
        }
    }

    /// Units already indexed whose rows changed since (checked without the index
    /// lock held: a changed unit is dumped to learn its stamp).
    pub(super) fn changed_units(&self, idx: &Index) -> Vec<(PathBuf, Option<FileStamp>)> {
        if self.units.is_none() {
            return Vec::new();
        }
        let hints = self.unit_hints.lock().unwrap();
        idx.files
            .iter()
            .filter(|(p, _)| hints.contains_key(*p))
            .map(|(p, e)| (p.clone(), Some(e.stamp)))
            .collect()
    }

    /// Of `known` (unit, indexed stamp), those whose stamp is not the indexed one, as
    /// the listing just read them (no disk access per unit).
    pub(super) fn stale_units(&self, known: Vec<(PathBuf, Option<FileStamp>)>) -> Vec<PathBuf> {
        let Some(units) = &self.units else {
            return Vec::new();
        };
        known
            .into_iter()
            .filter(|(p, s)| units.listed_stamp(p) != *s)
            .map(|(p, _)| p)
            .collect()
    }
}
