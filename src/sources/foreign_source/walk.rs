//! Finding an agent's session files: a walk of its sessions folders that reads again
//! only the folders whose stamp changed. Links are never followed.

use super::ForeignSource;
use crate::agent::Agent;
use crate::sources::agents;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A folder as last read: its stamp and what it held.
pub(super) struct FolderScan {
    pub(super) stamp: (u64, i128),
    /// The folder's mtime was older than the scan by more than the clock's coarse
    /// granularity: a change after the scan moves it. Otherwise a file created in the
    /// same tick leaves the stamp as it was, so the next walk reads the folder again.
    pub(super) settled: bool,
    pub(super) folders: Vec<PathBuf>,
    pub(super) files: Vec<PathBuf>,
}

impl ForeignSource {
    /// How many session files the store holds now (found as the index finds them,
    /// without reading them).
    pub fn session_files(&self) -> usize {
        self.walk().len()
    }

    /// Every session file under the sessions folder, re-reading only folders whose
    /// stamp changed since the last walk. Links are never followed.
    pub(super) fn walk(&self) -> Vec<PathBuf> {
        self.walked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut scans = std::mem::take(&mut self.index.lock().unwrap().folders);
        let mut out = Vec::new();
        let mut next = HashMap::new();
        for top in &self.folders {
            let mut walk = Walk {
                agent: self.agent,
                top,
                old: &mut scans,
                new: &mut next,
                out: &mut out,
            };
            walk.folder(&top.path, 0);
        }
        self.index.lock().unwrap().folders = next;
        // By bytes: `Path`'s order compares component by component, which was a tenth
        // of a cold `fen-fs list` of 10,000 files.
        out.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        self.with_units(out)
    }
}

/// One walk of a sessions folder: folders whose stamp is unchanged since the last
/// walk are not read again.
struct Walk<'a> {
    agent: Agent,
    top: &'a agents::SessionsFolder,
    old: &'a mut HashMap<PathBuf, FolderScan>,
    new: &'a mut HashMap<PathBuf, FolderScan>,
    out: &'a mut Vec<PathBuf>,
}

impl Walk<'_> {
    /// Collects the session files under `folder`, which sits `level` levels below
    /// the sessions folder (0: the sessions folder itself).
    pub(super) fn folder(&mut self, folder: &Path, level: usize) {
        let Ok(meta) = std::fs::symlink_metadata(folder) else {
            return;
        };
        if !meta.is_dir() {
            return;
        }
        let stamp = (
            meta.ino(),
            meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        );
        let scan = match self.old.remove(folder) {
            Some(s) if s.stamp == stamp && s.settled => s,
            _ => {
                let settled = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.checked_add(Duration::from_secs(1)))
                    .is_some_and(|m| m < SystemTime::now());
                let mut scan = FolderScan {
                    stamp,
                    settled,
                    folders: Vec::new(),
                    files: Vec::new(),
                };
                let parent = folder.file_name().unwrap_or_default().to_string_lossy();
                if let Ok(rd) = std::fs::read_dir(folder) {
                    for entry in rd.flatten() {
                        let Ok(ft) = entry.file_type() else { continue };
                        let name = entry.file_name();
                        let name = name.to_string_lossy();
                        if ft.is_dir()
                            && level + 1 < self.top.depth
                            && agents::enters_folder(self.agent, level + 1, &name)
                        {
                            scan.folders.push(entry.path());
                        } else if ft.is_file()
                            && agents::is_session_entry(
                                self.agent,
                                self.top,
                                level + 1,
                                &parent,
                                &name,
                            )
                        {
                            scan.files.push(entry.path());
                        }
                    }
                }
                scan
            }
        };
        self.out.extend(scan.files.iter().cloned());
        for sub in &scan.folders {
            self.folder(sub, level + 1);
        }
        self.new.insert(folder.to_path_buf(), scan);
    }
}
