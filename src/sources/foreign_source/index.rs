//! The index of an agent's sessions: which file is which session folder in which
//! namespace, one session per id where the agent shows one, the rendered listings,
//! and waiting for the first index to answer for a namespace.

use super::walk::FolderScan;
use super::{ForeignSource, UNKNOWN_CWD_NAMESPACE};
use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::sources::NamespaceIndex;
use crate::sources::agents;
use crate::sources::foreign::ForeignSummary;
use crate::store::index::FileStamp;
use crate::store::naming;
use crate::views::listing::{Listing, newest_first, render_json_each};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the index keeps per session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct FileEntry {
    pub(super) stamp: FileStamp,
    pub(super) summary: ForeignSummary,
    /// `meta.json`'s `context_tokens`, from the same read (so it needs no layout).
    #[serde(default)]
    pub(super) context_tokens: Option<u64>,
}

impl FileEntry {
    pub(super) fn mtime(&self) -> SystemTime {
        let ns = self.stamp.mtime_ns.max(0) as u128;
        UNIX_EPOCH + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
    }

    pub(super) fn namespace(&self) -> String {
        match self.summary.cwd.as_deref() {
            Some(cwd) if !cwd.is_empty() => naming::slug(cwd),
            _ => UNKNOWN_CWD_NAMESPACE.to_string(),
        }
    }

    pub(super) fn created_at(&self) -> String {
        self.summary
            .created_at
            .clone()
            .unwrap_or_else(|| rfc3339(self.mtime()))
    }
}

pub(super) fn rfc3339(t: SystemTime) -> String {
    naming::timestamp(chrono::DateTime::<chrono::Utc>::from(t))
}

/// When the session was last updated: as the agent recorded it, else its file's mtime.
fn updated_at(e: &FileEntry) -> String {
    e.summary
        .updated_at
        .clone()
        .unwrap_or_else(|| rfc3339(e.mtime()))
}

/// `<created stamp>_<agent>-<id>`: sorts by time beside fen's `<stamp>_<id>` folders.
pub(super) fn session_dir_name(agent: Agent, path: &Path, e: &FileEntry) -> String {
    let created = chrono::DateTime::parse_from_rfc3339(&e.created_at())
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| e.mtime().into());
    let id = if naming::is_valid_session_id(&e.summary.id) {
        e.summary.id.clone()
    } else {
        // No usable id in the file: its name stands in (made path-safe).
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        stem.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!("{}_{}-{id}", naming::stamp(created), agent.name())
}

#[derive(Default)]
pub(super) struct Index {
    /// Boxed: an entry is about 500 bytes, and a table grown by doubling held up to
    /// twice that per file, inline (8.7 MB for 10,000 files, 13 MB while it grew).
    pub(super) files: HashMap<PathBuf, Box<FileEntry>>,
    /// namespace → session dir → file.
    pub(super) by_ns: BTreeMap<String, BTreeMap<String, PathBuf>>,
    pub(super) dir_of: HashMap<PathBuf, (String, String)>,
    /// For agents showing one session per id (`agents::one_session_per_id`): id →
    /// the files carrying it; only the one `agents::prefer` ranks first is placed in
    /// `by_ns`, the others wait in `files` in case it goes.
    pub(super) by_id: HashMap<String, Vec<PathBuf>>,
    /// Every indexed file by its session id (a subagent's parent is found here).
    pub(super) by_session: HashMap<String, BTreeSet<PathBuf>>,
    /// A parent's id → the files of the sessions that name it as their parent.
    pub(super) children: HashMap<String, BTreeSet<PathBuf>>,
    pub(super) folders: HashMap<PathBuf, FolderScan>,
    /// Codex renames (`session_index.jsonl`): id → name, with the file's stamp.
    pub(super) renames: HashMap<String, String>,
    pub(super) renames_stamp: Option<FileStamp>,
    pub(super) ready: bool,
    /// Set once the first index knows which files it must still read.
    pub(super) planned: bool,
    /// Namespaces (by hint) with files the first index has still to read.
    pub(super) pending: HashMap<String, usize>,
    /// Namespaces a listing waits for: read their files first.
    pub(super) wanted: BTreeSet<String>,
    /// Bumped by every change to the index: keys the rendered listings.
    pub(super) generation: u64,
    /// Namespaces whose files must be re-`stat`ed before the next listing (all of
    /// them when nothing watches the folders).
    pub(super) dirty: BTreeSet<String>,
    /// For a source over kept copies: the listing of them its last walk took
    /// (`KeptCopies::reused_listing`).
    pub(super) kept_walked: Option<u64>,
    /// Without a watch: namespaces whose files the first index has just `stat`ed,
    /// not listed since; their first listing takes those stamps (a one-shot command
    /// such as `fen-fs list` would `stat` every file twice otherwise).
    pub(super) fresh: BTreeSet<String>,
    pub(super) rendered: HashMap<String, (u64, NamespaceIndex)>,
}

impl Index {
    pub(super) fn namespace_of(&self, path: &Path) -> Option<String> {
        self.dir_of.get(path).map(|(n, _)| n.clone())
    }
}

impl ForeignSource {
    /// The namespace `path` is shown in (its own when it is not shown).
    fn namespace_of_dir(&self, idx: &Index, path: &Path) -> String {
        match idx.dir_of.get(path) {
            Some((n, _)) => n.clone(),
            None => idx
                .files
                .get(path)
                .map(|e| e.namespace())
                .unwrap_or_default(),
        }
    }
}

impl ForeignSource {
    /// The index once it can answer for `ns` (`None`: for everything): at once after
    /// the first index is built; before, when the files hinted to be in `ns` are read
    /// (asking the indexer to read those first), and those whose start named no cwd:
    /// they may be in any namespace (OpenCode's JSON sessions name theirs only in a
    /// file the listing does not read), and a first look must not miss them.
    pub(super) fn wait_for(&self, ns: Option<&str>) -> std::sync::MutexGuard<'_, Index> {
        let mut idx = self.index.lock().unwrap();
        loop {
            if idx.ready {
                return idx;
            }
            if let Some(ns) = ns
                && idx.planned
            {
                let unsure = idx.pending.contains_key(UNKNOWN_CWD_NAMESPACE);
                if !idx.pending.contains_key(ns) && !unsure {
                    return idx;
                }
                idx.wanted.insert(ns.to_string());
                if unsure {
                    idx.wanted.insert(UNKNOWN_CWD_NAMESPACE.to_string());
                }
            }
            idx = self.ready.wait(idx).unwrap();
        }
    }

    pub(super) fn insert(&self, idx: &mut Index, path: PathBuf, e: FileEntry) {
        // Its subagents are placed again once it is (`place`), not twice.
        self.remove_keeping_children(idx, &path);
        let id = (agents::one_session_per_id(self.agent)
            && !e.summary.id.is_empty()
            && !self.is_version(&path))
        .then(|| e.summary.id.clone());
        link(idx, &path, &e);
        idx.files.insert(path.clone(), Box::new(e));
        idx.generation += 1;
        match id {
            Some(id) => {
                idx.by_id.entry(id.clone()).or_default().push(path);
                self.elect(idx, &id);
            }
            None => self.place(idx, path),
        }
    }

    /// Shows the indexed file `path` as a session folder of its namespace, and its
    /// subagents beside it.
    pub(super) fn place(&self, idx: &mut Index, path: PathBuf) {
        self.place_nested(idx, path, 0)
    }

    fn place_nested(&self, idx: &mut Index, path: PathBuf, depth: usize) {
        let Some(e) = idx.files.get(&path).filter(|e| !e.summary.hidden) else {
            // A hidden file is indexed (kept, its usage counted), never shown.
            return;
        };
        let id = e.summary.id.clone();
        let (ns, mut dir) = self.placement(idx, &path, e);
        if idx
            .by_ns
            .get(&ns)
            .and_then(|m| m.get(&dir))
            .is_some_and(|other| *other != path)
        {
            // Two files claim one id (a copied file): the path tells them apart.
            dir = format!("{dir}-{:08x}", path_hash(&path) as u32);
        }
        idx.by_ns
            .entry(ns.clone())
            .or_default()
            .insert(dir.clone(), path.clone());
        idx.dir_of.insert(path, (ns, dir));
        if let Some(cwd) = &e.summary.cwd {
            // A candidate for placing sessions whose store names their cwd by a hash
            // only (Cursor's `store.db`).
            for k in crate::sources::registry::foreign() {
                k.note_cwd(cwd);
            }
        }
        idx.generation += 1;
        self.place_children(idx, &id, depth + 1);
    }

    /// Where `path` shows: its own namespace and folder name; a subagent's session
    /// beside its parent's (shown by this source), in the parent's namespace, as
    /// `<parent's folder>.agent-<agent id>` (it sorts right after its parent and reads
    /// as its own). A subagent whose parent is not shown: where its kept copy's
    /// record says it was, else its own namespace as `<stamp>_<agent>-<parent
    /// id>.agent-<agent id>`.
    fn placement(&self, idx: &Index, path: &Path, e: &FileEntry) -> (String, String) {
        let s = &e.summary;
        let (Some(sub), Some(parent)) = (&s.subagent, &s.parent_id) else {
            return (e.namespace(), self.dir_name(path, e));
        };
        let agent = path_safe(&sub.agent_id);
        let kept = self.kept_facts(path);
        let version = kept
            .as_ref()
            .and_then(|f| f.version)
            .map(|n| format!(".v{n}"))
            .unwrap_or_default();
        if let Some((ns, dir)) = self.parent_place(idx, parent, path) {
            return (ns, format!("{dir}.agent-{agent}{version}"));
        }
        if let Some(f) = &kept
            && let (Some(ns), Some(dir)) = (&f.record.facts.namespace, &f.record.facts.dir)
        {
            return (ns.clone(), format!("{dir}{version}"));
        }
        let mut named = e.clone();
        named.summary.id = parent.clone();
        let own = session_dir_name(self.agent, path, &named);
        (e.namespace(), format!("{own}.agent-{agent}{version}"))
    }

    /// Where the session `id` (a parent) shows, other than `path`: its current
    /// version first.
    fn parent_place(&self, idx: &Index, id: &str, path: &Path) -> Option<(String, String)> {
        self.place_in(idx, id, Some(path))
    }

    /// Where session `id` shows (not as file `except`): its current version first.
    fn place_in(&self, idx: &Index, id: &str, except: Option<&Path>) -> Option<(String, String)> {
        let files = idx.by_session.get(id)?;
        let placed = |p: &&PathBuf| Some(p.as_path()) != except && idx.dir_of.contains_key(*p);
        files
            .iter()
            .filter(placed)
            .find(|p| !self.is_version(p))
            .or_else(|| files.iter().find(placed))
            .and_then(|p| idx.dir_of.get(p).cloned())
    }

    /// Places again the subagents of session `id` whose place changed with it.
    fn place_children(&self, idx: &mut Index, id: &str, depth: usize) {
        // Deeper than any chain of subagents: a parent loop stops here.
        if depth > 8 || id.is_empty() {
            return;
        }
        let kids: Vec<PathBuf> = idx
            .children
            .get(id)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        for kid in kids {
            let Some(e) = idx.files.get(&kid) else {
                continue;
            };
            let Some(now) = idx.dir_of.get(&kid) else {
                continue;
            };
            let want = self.placement(idx, &kid, e);
            if *now != want {
                unplace(idx, &kid);
                self.place_nested(idx, kid, depth);
            }
        }
    }

    /// The parent and subagents of session `path` as links: the parent's id and
    /// folder, and each subagent it started or that names it as parent (by the tool
    /// call its file records, else its subagent's), relative to namespace `ns`'s
    /// folder.
    pub(super) fn links(&self, idx: &Index, path: &Path, e: &FileEntry, ns: &str) -> Links {
        let rel = |place: (String, String)| self.relative_place(ns, place);
        let s = &e.summary;
        let parent = s
            .parent_id
            .as_deref()
            .and_then(|p| self.parent_place(idx, p, path))
            .map(rel);
        let mut subagents: Vec<crate::neutral::SubagentLink> = s
            .spawned
            .iter()
            .map(|sp| crate::neutral::SubagentLink {
                id: sp.entry.clone().unwrap_or_else(|| sp.agent_id.clone()),
                call_id: Some(sp.call_id.clone()),
                dir: None,
                inline: sp.entry.is_some(),
            })
            .collect();
        let kids = (!s.id.is_empty())
            .then(|| idx.children.get(&s.id))
            .flatten()
            .into_iter()
            .flatten();
        for kid in kids {
            let (Some(k), Some(place)) = (idx.files.get(kid), idx.dir_of.get(kid)) else {
                continue;
            };
            let dir = rel(place.clone());
            let agent_id = k
                .summary
                .subagent
                .as_ref()
                .map_or_else(|| k.summary.id.clone(), |a| a.agent_id.clone());
            match subagents.iter_mut().find(|l| !l.inline && l.id == agent_id) {
                Some(l) if l.dir.is_none() => l.dir = Some(dir),
                Some(_) => {}
                None => subagents.push(crate::neutral::SubagentLink {
                    id: agent_id,
                    call_id: k.summary.subagent.as_ref().and_then(|a| a.call_id.clone()),
                    dir: Some(dir),
                    inline: false,
                }),
            }
        }
        Links { parent, subagents }
    }

    /// Where `place` (namespace, folder) is, from a session in namespace `ns`.
    fn relative_place(&self, ns: &str, (n, d): (String, String)) -> String {
        // A peer's kept copies show as `<dir>@host` (`peers.rs`): so do their links.
        let suffix = (self.kept.as_ref())
            .and_then(|k| k.host())
            .map(crate::host::dir_suffix)
            .unwrap_or_default();
        if n == ns {
            format!("{d}{suffix}")
        } else {
            format!("../{}/{d}{suffix}", naming::mount_name(&n))
        }
    }

    /// The session's listing and links, with what its kin know: a parent whose agent
    /// deleted it shows from its kept copy while its subagent is still the agent's,
    /// and the other way round. The kin are asked after this index's lock is
    /// released (each takes only its own).
    pub(super) fn listing_and_links(
        &self,
        path: &Path,
        e: &FileEntry,
        ns: &str,
    ) -> (Option<crate::views::listing::Listing>, Links) {
        let (listing, mut links) = {
            let idx = self.index.lock().unwrap();
            (self.listing(&idx, path, e), self.links(&idx, path, e, ns))
        };
        let kin = self.kin();
        if kin.is_empty() {
            return (listing, links);
        }
        let s = &e.summary;
        if links.parent.is_none()
            && let Some(p) = &s.parent_id
        {
            links.parent = kin
                .iter()
                .find_map(|k| k.session_place(p))
                .map(|place| self.relative_place(ns, place));
        }
        if !s.id.is_empty() {
            for k in &kin {
                for (agent_id, call_id, place) in k.subagent_places(&s.id) {
                    let dir = self.relative_place(ns, place);
                    match links
                        .subagents
                        .iter_mut()
                        .find(|l| !l.inline && l.id == agent_id)
                    {
                        Some(l) if l.dir.is_none() => l.dir = Some(dir),
                        Some(_) => {}
                        None => links.subagents.push(crate::neutral::SubagentLink {
                            id: agent_id,
                            call_id,
                            dir: Some(dir),
                            inline: false,
                        }),
                    }
                }
            }
        }
        (listing, links)
    }

    /// Where session `id` shows in this source (for its kin).
    pub(super) fn session_place(&self, id: &str) -> Option<(String, String)> {
        let idx = self.index.lock().unwrap();
        self.place_in(&idx, id, None)
    }

    /// The subagents of session `id` this source shows: id, call, place (for its kin).
    pub(super) fn subagent_places(
        &self,
        id: &str,
    ) -> Vec<(String, Option<String>, (String, String))> {
        let idx = self.index.lock().unwrap();
        let kids = idx.children.get(id).into_iter().flatten();
        kids.filter(|kid| !self.is_version(kid))
            .filter_map(|kid| {
                let (k, place) = (idx.files.get(kid)?, idx.dir_of.get(kid)?);
                let sub = k.summary.subagent.as_ref();
                let agent_id = sub.map_or_else(|| k.summary.id.clone(), |a| a.agent_id.clone());
                Some((agent_id, sub.and_then(|a| a.call_id.clone()), place.clone()))
            })
            .collect()
    }

    /// Of the files carrying session `id`, places the preferred one and hides the rest.
    pub(super) fn elect(&self, idx: &mut Index, id: &str) {
        let Some(group) = idx.by_id.get(id).cloned() else {
            return;
        };
        let winner = group
            .iter()
            .filter_map(|p| idx.files.get(p).map(|e| (p, &e.summary)))
            .max_by(|a, b| agents::prefer(self.agent, (a.0, a.1), (b.0, b.1)))
            .map(|(p, _)| p.clone());
        for p in &group {
            if Some(p) != winner.as_ref() {
                unplace(idx, p);
            }
        }
        if let Some(w) = winner
            && !idx.dir_of.contains_key(&w)
        {
            self.place(idx, w);
        }
    }

    /// Drops `path` from the index; a file it hid (same session id) shows again, and
    /// its subagents show where they do without it.
    pub(super) fn remove(&self, idx: &mut Index, path: &Path) {
        let id = self.remove_keeping_children(idx, path);
        if let Some(id) = id {
            self.place_children(idx, &id, 1);
        }
    }

    /// `remove`, its subagents left where they were; returns its session id.
    fn remove_keeping_children(&self, idx: &mut Index, path: &Path) -> Option<String> {
        let id = idx.files.get(path).map(|e| e.summary.id.clone());
        if let Some(old) = idx.files.remove(path) {
            unlink(idx, path, &old);
            idx.generation += 1;
        }
        unplace(idx, path);
        if let Some(id) = &id
            && let Some(group) = idx.by_id.get_mut(id)
        {
            group.retain(|p| p != path);
            if group.is_empty() {
                idx.by_id.remove(id);
            } else {
                self.elect(idx, id);
            }
        }
        id
    }

    /// The file and index entry of session `ns/dir`, re-read if it changed on disk.
    pub(super) fn session(&self, ns: &str, dir: &str) -> Result<(PathBuf, FileEntry)> {
        let missing = || Error::not_found(format!("no session {ns}/{dir}"));
        let placed = || {
            let idx = self.wait_for(Some(ns));
            idx.by_ns.get(ns).and_then(|m| m.get(dir)).cloned()
        };
        let path = match placed() {
            Some(p) => p,
            // A kept session shows once its source is gone: a lookup right after,
            // before any listing, finds it too.
            None if self.kept.is_some() => {
                self.sync(Some(ns));
                placed().ok_or_else(missing)?
            }
            None => return Err(missing()),
        };
        let known = self.index.lock().unwrap().files.get(&path).map(|e| e.stamp);
        if self.stamp_of(&path) != known {
            self.refresh_file(&path);
        }
        let idx = self.index.lock().unwrap();
        match (idx.dir_of.get(&path), idx.files.get(&path)) {
            (Some((n, d)), Some(e)) if n == ns && d == dir => Ok((path.clone(), (**e).clone())),
            _ => Err(missing()),
        }
    }

    pub(super) fn listing(&self, idx: &Index, path: &Path, e: &FileEntry) -> Option<Listing> {
        let (_, dir) = idx.dir_of.get(path)?;
        let s = &e.summary;
        let title = idx.renames.get(&s.id).cloned().or_else(|| s.title.clone());
        let kept = self.kept_facts(path);
        Some(Listing {
            dir: dir.clone(),
            id: s.id.clone(),
            cwd: s.cwd.clone(),
            title,
            preview: s.preview.clone(),
            created_at: Some(e.created_at()),
            updated_at: Some(updated_at(e)),
            messages: s.messages as usize,
            agent: self.agent,
            kept: kept.is_some(),
            source_deleted: kept.as_ref().map(|f| f.source_deleted),
            version: kept.and_then(|f| f.version),
            archived: s.archived,
            parent_id: s.parent_id.clone(),
            host: Some(self.host_shown().to_string()),
            cwd_on_host: s.cwd.clone(),
            version_of: None,
            parent: self
                .links(idx, path, e, &self.namespace_of_dir(idx, path))
                .parent,
        })
    }

    /// The listings of `ns`, newest first, built from the index as it is now.
    pub(super) fn listings_now(&self, ns: &str) -> Vec<Listing> {
        self.sync(Some(ns));
        let idx = self.index.lock().unwrap();
        self.listings_in(&idx, ns)
    }

    fn listings_in(&self, idx: &Index, ns: &str) -> Vec<Listing> {
        self.files_newest_first(idx, ns)
            .into_iter()
            .filter_map(|p| self.listing(idx, p, idx.files.get(p)?))
            .collect()
    }

    /// The files of `ns` in the order of `sort_newest_first`, sorted by its two keys
    /// alone: a listing is made only when it is used.
    fn files_newest_first<'a>(&self, idx: &'a Index, ns: &str) -> Vec<&'a Path> {
        let mut keyed: Vec<(String, &str, &Path)> = idx
            .by_ns
            .get(ns)
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(|p| {
                let (_, dir) = idx.dir_of.get(p)?;
                Some((updated_at(idx.files.get(p)?), dir.as_str(), p.as_path()))
            })
            .collect();
        keyed.sort_by(|a, b| newest_first((Some(&a.0), a.1), (Some(&b.0), b.1)));
        keyed.into_iter().map(|(_, _, p)| p).collect()
    }

    /// `index.json` of `ns`, rendered again only after the index changed. The
    /// listings it is made of are not kept beside it, nor all made at once: 10,000
    /// sessions' are 10 MB, and a caller that wants them (`fen-fs list`) builds them
    /// in a few ms.
    pub(super) fn rendered(&self, ns: &str) -> NamespaceIndex {
        self.sync(Some(ns));
        let mut idx = self.index.lock().unwrap();
        let last_len = match idx.rendered.get(ns) {
            Some((generation, index)) if *generation == idx.generation => return index.clone(),
            Some((_, index)) => index.index_json.len(),
            None => 0,
        };
        // The old render goes first (a reader that holds it keeps it).
        idx.rendered.remove(ns);
        let order = self.files_newest_first(&idx, ns);
        let listings = order
            .iter()
            .filter_map(|p| self.listing(&idx, p, idx.files.get(*p)?));
        let index = NamespaceIndex {
            latest: order
                .first()
                .and_then(|p| idx.dir_of.get(*p))
                .map(|(_, dir)| dir.clone()),
            index_json: Arc::new(render_json_each(listings, order.len(), last_len)),
        };
        drop(order);
        let generation = idx.generation;
        idx.rendered
            .insert(ns.to_string(), (generation, index.clone()));
        index
    }

    /// The session (namespace, folder) whose file is `path`, compared by device and
    /// inode so that any path to the file names it (`fen-fs resume PATH`).
    pub fn session_of_file(&self, path: &Path) -> Option<(String, String)> {
        let meta = std::fs::metadata(path).ok()?;
        self.sync(None);
        let idx = self.wait_for(None);
        idx.files
            .iter()
            .find(|(_, e)| e.stamp.dev == meta.dev() && e.stamp.ino == meta.ino())
            .and_then(|(p, _)| idx.dir_of.get(p).cloned())
    }
}

/// A session's parent and subagents (`ForeignSource::links`).
#[derive(Debug, Clone, Default)]
pub(super) struct Links {
    pub(super) parent: Option<String>,
    pub(super) subagents: Vec<crate::neutral::SubagentLink>,
}

/// Notes `e`'s ids: its own, and its parent's.
fn link(idx: &mut Index, path: &Path, e: &FileEntry) {
    if !e.summary.id.is_empty() {
        let files = idx.by_session.entry(e.summary.id.clone()).or_default();
        files.insert(path.to_path_buf());
    }
    if let Some(p) = &e.summary.parent_id {
        let kids = idx.children.entry(p.clone()).or_default();
        kids.insert(path.to_path_buf());
    }
}

fn unlink(idx: &mut Index, path: &Path, e: &FileEntry) {
    let drop_from = |map: &mut HashMap<String, BTreeSet<PathBuf>>, key: &str| {
        if let Some(set) = map.get_mut(key) {
            set.remove(path);
            if set.is_empty() {
                map.remove(key);
            }
        }
    };
    drop_from(&mut idx.by_session, &e.summary.id);
    if let Some(p) = &e.summary.parent_id {
        drop_from(&mut idx.children, p);
    }
}

/// An id as part of a folder name: anything but ASCII letters, digits, `-` and `_`
/// becomes `-`.
fn path_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Takes `path`'s session folder out of its namespace (the file stays indexed).
fn unplace(idx: &mut Index, path: &Path) {
    if let Some((ns, dir)) = idx.dir_of.remove(path)
        && let Some(m) = idx.by_ns.get_mut(&ns)
    {
        m.remove(&dir);
        if m.is_empty() {
            idx.by_ns.remove(&ns);
        }
        idx.generation += 1;
    }
}

/// Stable across builds: it is part of a folder name in the mount.
fn path_hash(path: &Path) -> u64 {
    crate::store::atomic::checksum(&[path.as_os_str().as_encoded_bytes()])
}
