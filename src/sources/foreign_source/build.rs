//! Building the first index (in the background, a few files at once, the namespaces
//! a listing waits for first) and keeping it current: new, changed and vanished
//! files, Codex's renames.

use super::conversations::{Conversation, tokens_in};
use super::index::{FileEntry, Index};
use super::readers::Keep;
use super::{ForeignSource, PERSIST_MIN, UNKNOWN_CWD_NAMESPACE, file_stamp, read_whole};
use crate::error::Result;
use crate::sources::agents;
use crate::sources::foreign::ConversationUpdate;
use crate::sources::registry::kind;
use crate::store::index::{FileStamp, content_check};
use crate::store::naming;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Session files read at once while the first index is built (it is mostly parsing).
const INDEX_WORKERS: usize = 4;

impl ForeignSource {
    /// Builds the first index: reuses the persisted one for unchanged files, reads
    /// the rest. Logs progress; wakes everyone waiting for it.
    pub fn build_index(&self) {
        self.build_index_with(&crate::background::Background::new());
    }

    /// `build_index`, stopping when `bg` asks (at unmount): after the files being
    /// read, with the index as far as it got (`persist` saves it, and the next
    /// mount reads only the rest). It does not pause for the mount's requests: they
    /// are what waits for it.
    pub fn build_index_with(&self, bg: &crate::background::Background) {
        let started = std::time::Instant::now();
        let persisted = self.load_persisted();
        let found = self.walk();
        let total = found.len();
        self.seed_units(&persisted);
        // Unchanged files come from the persisted index at once. (A unit not dumped
        // yet is not dumped here: it is read below, on every core, and its size
        // is not needed to order the reads.)
        let mut todo = Vec::new();
        {
            let mut idx = self.index.lock().unwrap();
            for path in found {
                match (persisted.get(&path), self.stamp_if_known(&path)) {
                    (Some(old), Some(stamp)) if old.stamp == stamp => {
                        self.insert(&mut idx, path, old.clone())
                    }
                    (_, stamp) => todo.push((stamp.map_or(0, |s| s.size), path)),
                }
            }
        }
        // The rest is read file by file; each gets a namespace hint first (the cwd
        // near its start, per project folder where folders are projects), so that a
        // listing waits only for the files of its own namespace, read first.
        let mut groups: BTreeMap<Option<String>, Vec<(u64, PathBuf)>> = BTreeMap::new();
        let mut folder_hints: HashMap<PathBuf, Option<String>> = HashMap::new();
        for (size, path) in todo {
            let hint_of = |path: &Path| self.hint_of(path).map(|c| naming::slug(&c));
            let hint = if agents::folders_are_projects(self.agent) {
                let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
                folder_hints
                    .entry(folder)
                    .or_insert_with(|| hint_of(&path))
                    .clone()
            } else {
                hint_of(&path)
            };
            // A file that names no cwd near its start most likely has none at all.
            let hint = hint.or_else(|| Some(UNKNOWN_CWD_NAMESPACE.to_string()));
            groups.entry(hint).or_default().push((size, path));
        }
        // Largest files first (`next_to_read` pops from the end): a big file read last
        // would leave the other cores idle while one parses it.
        for g in groups.values_mut() {
            g.sort_unstable();
        }
        let reread: usize = groups.values().map(Vec::len).sum();
        {
            let mut idx = self.index.lock().unwrap();
            idx.pending = groups
                .iter()
                .filter_map(|(h, files)| h.clone().map(|h| (h, files.len())))
                .collect();
            idx.planned = true;
        }
        self.ready.notify_all();
        // Reading is mostly parsing: a few files at once keep every core busy, and
        // one file's disk reads overlap another's parse.
        let groups = Mutex::new(groups);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, INDEX_WORKERS);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        if bg.should_stop() {
                            break;
                        }
                        let next = self.next_to_read(&mut groups.lock().unwrap());
                        let Some((hint, path)) = next else { break };
                        let entry = self.read_file(&path, Keep::Disk);
                        let mut idx = self.index.lock().unwrap();
                        if let Ok(e) = entry {
                            self.insert(&mut idx, path, e);
                        }
                        if let Some(h) = hint
                            && let Some(n) = idx.pending.get_mut(&h)
                        {
                            *n -= 1;
                            if *n == 0 {
                                idx.pending.remove(&h);
                                self.ready.notify_all();
                            }
                        }
                        drop(idx);
                        let done = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        if done.is_multiple_of(1000) {
                            log::info!(
                                "{}: read {done} of {reread} session files",
                                self.agent.name()
                            );
                        }
                    }
                });
            }
        });
        if bg.should_stop() {
            log::info!(
                "{}: stopped after {} of {reread} session files (the next mount reads the rest)",
                self.agent.name(),
                done.load(std::sync::atomic::Ordering::Relaxed)
            );
            return;
        }
        {
            let mut idx = self.index.lock().unwrap();
            self.refresh_renames(&mut idx);
            idx.ready = true;
            if self.watch.is_none() {
                idx.fresh = idx.by_ns.keys().cloned().collect();
            }
        }
        self.ready.notify_all();
        log::info!(
            "{}: {total} session files indexed in {:?} ({reread} read, the rest from the index cache)",
            self.agent.name(),
            started.elapsed()
        );
        if reread > 0 {
            self.persist_index();
        }
    }

    /// The next file to read: one of a namespace someone waits for, else any.
    pub(super) fn next_to_read(
        &self,
        groups: &mut BTreeMap<Option<String>, Vec<(u64, PathBuf)>>,
    ) -> Option<(Option<String>, PathBuf)> {
        let wanted = std::mem::take(&mut self.index.lock().unwrap().wanted);
        let key = wanted
            .into_iter()
            .map(Some)
            .find(|k| groups.get(k).is_some_and(|g| !g.is_empty()))
            .or_else(|| {
                groups
                    .iter()
                    .filter_map(|(k, g)| Some((g.last()?.0, k)))
                    .max_by_key(|(size, _)| *size)
                    .map(|(_, k)| k.clone())
            })?;
        let group = groups.get_mut(&key)?;
        let (_, path) = group.pop()?;
        if group.is_empty() {
            groups.remove(&key);
        }
        Some((key, path))
    }

    /// Brings `idx` up to date with the folders: new files are read, vanished ones
    /// dropped; with `ns`, every file of that namespace is also re-`stat`ed (and
    /// re-read if it changed).
    pub(super) fn sync(&self, ns: Option<&str>) {
        let idx = self.wait_for(ns);
        if !idx.ready {
            // The first index is still being built and has what `ns` needs; the walk
            // (and the watches' events) are the indexer's until it is done. What it
            // already read of `ns` may have been written to since: the next read must
            // show a write that returned before it, so those files are stat'ed.
            let stale = ns.map(|ns| self.changed_in(&idx, ns)).unwrap_or_default();
            drop(idx);
            for path in stale {
                self.refresh_file(&path);
            }
            return;
        }
        drop(idx);
        let _one_at_a_time = self.syncing.lock().unwrap();
        let mut walk = true;
        if let Some(watch) = &self.watch {
            let mut idx = self.wait_for(ns);
            // Folders with events since their last read: their files' namespaces must
            // be re-stat'ed, and the walk must look at them again.
            watch.drain();
            let folders: Vec<PathBuf> = idx.folders.keys().cloned().collect();
            // A sessions folder missing at the last walk is not watched: one `lstat`
            // tells whether it appeared since.
            // (A source of units alone has no folders to watch: its units tell.)
            let mut changed = (folders.is_empty() && !self.folders.is_empty())
                || self.folders.iter().any(|f| {
                    !idx.folders.contains_key(&f.path) && std::fs::symlink_metadata(&f.path).is_ok()
                });
            for f in &folders {
                let key = f.to_string_lossy();
                if watch.changed_as_drained(&key, f) {
                    // A file's content changed (an append): its namespace is re-read,
                    // the folders are not walked; a walk only for entries that changed.
                    // (Units, sessions in databases or task folders, are listed again
                    // by a walk whatever changed.)
                    changed |= self.units.is_some() || watch.entries_changed_as_drained(&key);
                    watch.mark_clean(&key);
                    let files = idx
                        .folders
                        .get(f)
                        .map(|s| s.files.clone())
                        .unwrap_or_default();
                    let namespaces: Vec<String> =
                        files.iter().filter_map(|p| idx.namespace_of(p)).collect();
                    idx.dirty.extend(namespaces);
                }
            }
            let renames_changed = kind(self.agent)
                .renames_file(&self.root)
                .is_some_and(|f| file_stamp(&f) != idx.renames_stamp);
            // Units see their own changes (their folders' events, or a stat of the
            // database files per access).
            let units_changed = self.units.as_ref().is_some_and(|u| u.changed());
            if !changed && !renames_changed && !units_changed {
                if ns.is_none_or(|n| !idx.dirty.contains(n)) {
                    return;
                }
                // No folder changed: no file came or went, only `ns`'s need a stat.
                walk = false;
            }
        }
        let mut stale = Vec::new();
        let mut idx = if walk {
            let found = self.walk();
            let mut idx = self.wait_for(ns);
            if let Some(kept) = &self.kept {
                idx.kept_walked = kept.reused_listing();
            }
            let present: std::collections::HashSet<&std::ffi::OsStr> =
                found.iter().map(|p| p.as_os_str()).collect();
            let gone: Vec<PathBuf> = idx
                .files
                .keys()
                .filter(|p| !present.contains(p.as_os_str()))
                .cloned()
                .collect();
            for p in gone {
                self.remove(&mut idx, &p);
            }
            stale.extend(found.into_iter().filter(|p| !idx.files.contains_key(p)));
            idx
        } else {
            self.index.lock().unwrap()
        };
        if let Some(ns) = ns
            && (idx.dirty.remove(ns) || (self.watch.is_none() && !idx.fresh.remove(ns)))
        {
            stale.extend(self.changed_in(&idx, ns));
        }
        self.refresh_renames(&mut idx);
        let units = self.changed_units(&idx);
        drop(idx);
        stale.extend(self.stale_units(units));
        stale.sort();
        stale.dedup();
        for path in stale {
            self.refresh_file(&path);
        }
    }

    /// The files of `ns` in `idx` whose stamp changed since they were read, with the
    /// files each hides (one of them may now be preferred).
    fn changed_in(&self, idx: &Index, ns: &str) -> Vec<PathBuf> {
        let mut stale = Vec::new();
        for path in idx.by_ns.get(ns).into_iter().flat_map(|dirs| dirs.values()) {
            let twins = idx
                .files
                .get(path)
                .and_then(|e| idx.by_id.get(&e.summary.id))
                .into_iter()
                .flatten()
                .filter(|p| *p != path);
            for p in std::iter::once(path).chain(twins) {
                if self.stamp_of(p) != idx.files.get(p).map(|e| e.stamp) {
                    stale.push(p.clone());
                }
            }
        }
        stale
    }

    /// Re-reads one file into the index (or drops it if it is gone).
    pub(super) fn refresh_file(&self, path: &Path) {
        let read = self.read_file(path, Keep::Memory);
        let mut idx = self.index.lock().unwrap();
        match read {
            Ok(e) => self.insert(&mut idx, path.to_path_buf(), e),
            Err(_) => self.remove(&mut idx, path),
        }
    }

    pub(super) fn refresh_renames(&self, idx: &mut Index) {
        let k = kind(self.agent);
        let Some(path) = k.renames_file(&self.root) else {
            return;
        };
        let stamp = file_stamp(&path);
        if stamp == idx.renames_stamp {
            return;
        }
        idx.renames_stamp = stamp;
        idx.renames = match read_whole(&path) {
            Ok(bytes) => k.read_renames(&bytes),
            Err(_) => HashMap::new(),
        };
        idx.generation += 1;
    }

    /// Reads `path` into an index entry. Its conversation is computed in the same
    /// pass (its token count goes into the entry); a large file's layout is kept for
    /// the next `conversation.json` (on disk at once when `keep` is `Disk`).
    pub(super) fn read_file(&self, path: &Path, keep: Keep) -> Result<FileEntry> {
        // A file followed in memory grows its conversation by what it gained.
        let before = match keep {
            Keep::Memory => (self.conversations.lock().unwrap())
                .by_path
                .get(path)
                .and_then(Conversation::before),
            Keep::Disk => None,
        };
        let since = before.as_ref().map(|b| b.mark);
        let (file, stamp, (summary, update, mark)) =
            self.with_reader_kept(path, keep, |r, tail| {
                r.summary_and_conversation_since(tail, since)
            })?;
        let large = stamp.size >= PERSIST_MIN;
        // The first index keeps only large files' layouts: the others' are not made.
        let (layout, context_tokens, mark) = match update {
            ConversationUpdate::Whole(m) if keep == Keep::Disk && !large => {
                (None, tokens_in(&m), None)
            }
            update => {
                let (layout, tokens, mark) =
                    self.grown_layout(path, before.as_ref(), update, mark)?;
                (Some(layout), tokens, mark)
            }
        };
        let mut summary = summary;
        // A unit's dump already says all its store knows (its key is no file's place).
        if self.kept.is_some() {
            self.complete_from_record(path, &mut summary);
        } else if !self.is_unit(path) {
            agents::complete_summary(self.agent, &self.root, path, &mut summary);
        }
        // A subagent's transcript (or a helper run's) is never resumed on its own:
        // nothing to warn of.
        if !summary.resumable
            && summary.subagent.is_none()
            && !summary.hidden
            && let Some(why) = &summary.not_resumable_reason
        {
            log::warn!(
                "{} session {}: not resumable: {why}",
                self.agent.name(),
                path.display()
            );
        }
        if let Some(layout) = layout {
            let proof = large
                .then(|| {
                    file.metadata()
                        .ok()
                        .filter(|m| FileStamp::of(m) == stamp)
                        .and_then(|_| content_check(&file, stamp.size).ok())
                })
                .flatten();
            let c = Conversation {
                stamp,
                proof,
                layout,
                context_tokens,
                mark,
                used: 0,
                saved: false,
            };
            match keep {
                Keep::Memory => self.remember_conversation(path, c),
                Keep::Disk => self.save_conversation(path, &c),
            }
        }
        Ok(FileEntry {
            stamp,
            summary,
            context_tokens: Some(context_tokens),
        })
    }
}
