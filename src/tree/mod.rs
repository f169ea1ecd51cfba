//! The mount's tree (§2) as plain Rust: lookups, listings, attributes, open views,
//! `ctl` writes and their replies are methods that take inode numbers and names and
//! return values or an [`Error`] with an errno. Nothing here knows FUSE; the adapter in
//! `fuse` translates each request into one call, and tests drive this in-process.
//!
//! Sessions come from [`SessionSource`]s: a namespace folder lists the sessions of
//! every source that has it; the tree knows of a source only whether it is writable.

pub mod attr;
pub mod inodes;
pub mod invalidate;
mod page_cache;
mod search;
pub mod usage;
mod usage_files;

use crate::ctl::{CtlHandle, CtlService, CtlTarget, Written};
use crate::error::{Error, Result};
use crate::sources::set::SourceSet;
use crate::sources::{NamespaceIndex, SessionSource};
use crate::views::listing::{render_json, sort_newest_first};
use crate::views::{Snapshot, ViewKind};
use attr::{Attr, CacheMode, FileKind, StatFs};
use inodes::{CTL, InodeTable, Node, SESSION_FILES};
use invalidate::Invalidations;
use page_cache::PageCache;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

pub use inodes::ROOT;

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    pub kind: FileKind,
    pub name: String,
}

/// An open file or folder.
enum OpenFile {
    /// `cached`: the inode and token, when the handle reads through the page cache
    /// as one of the handles `page_cache` counts.
    View {
        snap: Snapshot,
        cached: Mutex<Option<(u64, u64)>>,
    },
    /// A search's `hits.jsonl` or a file of `usage/` (reading them is not the mount
    /// being busy: see `serving`).
    Hits(Snapshot),
    Ctl(Mutex<CtlHandle>),
    Dir(Arc<Vec<DirEntry>>),
}

/// What `open` gives: the handle number and how the kernel should cache it.
#[derive(Debug, Clone, Copy)]
pub struct Opened {
    pub fh: u64,
    pub cache: CacheMode,
    /// The handle reads one file as it is on disk (a transcript): the kernel may read
    /// that file itself ([`Tree::backing_file`]).
    pub backing: bool,
    /// `cache` is only meant for a kernel that reads the file itself: if it will not,
    /// ask [`Tree::not_backed`].
    pub if_backed: bool,
}

/// The changes `setattr` asks for (times are accepted and ignored).
#[derive(Debug, Clone, Copy, Default)]
pub struct SetAttr {
    pub mode: bool,
    pub owner: bool,
    pub size: bool,
}

pub struct Tree {
    /// The sources shown; the set can change while the mount runs (§12: peers).
    sources: SourceSet,
    /// The `ctl` service of the writable source, if there is one.
    ctl: Option<Arc<CtlService>>,
    inodes: InodeTable,
    handles: Mutex<HashMap<u64, Arc<OpenFile>>>,
    next_fh: AtomicU64,
    uid: u32,
    gid: u32,
    stale: Arc<Invalidations>,
    /// What the kernel's page cache holds of views and transcripts.
    page_cache: PageCache,
    /// The kernel reads transcripts from their files (FUSE passthrough), not through
    /// the page cache of the mount.
    kernel_reads_transcripts: AtomicBool,
    /// Held by `rmdir` from its writer check to the move, and by an `open` of a
    /// session `ctl` from its existence check to counting the writer: a `ctl` is then
    /// never opened on a session that is on its way to the trash.
    trashing: Mutex<()>,
    /// Answers the `search/` folder's queries, and hears of `ctl` appends.
    search: Option<Arc<crate::search::Search>>,
    /// The `usage/` folder.
    usage: Option<usage::UsageFolder>,
    /// The daemon's background work, which lets the requests served here go first.
    background: Option<crate::background::Background>,
}

impl Tree {
    /// A tree over `sources` (the writable one first, if any); `ctl` serves its control
    /// files. Files and folders belong to `uid`/`gid` (the user who mounted).
    pub fn new(
        sources: impl Into<SourceSet>,
        ctl: Option<Arc<CtlService>>,
        uid: u32,
        gid: u32,
    ) -> Self {
        Tree {
            sources: sources.into(),
            ctl,
            inodes: InodeTable::default(),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            uid,
            gid,
            stale: Arc::new(Invalidations::default()),
            page_cache: PageCache::default(),
            kernel_reads_transcripts: AtomicBool::new(false),
            trashing: Mutex::new(()),
            search: None,
            usage: None,
            background: None,
        }
    }

    /// The same tree with a `usage/` folder counting `usage`'s sources, its days in
    /// `zone`.
    pub fn with_usage(
        mut self,
        usage: Arc<crate::usage::Usage>,
        zone: crate::usage::zone::Zone,
    ) -> Self {
        self.usage = Some(usage::UsageFolder::new(usage, zone));
        self
    }

    /// The same tree, marking the requests it serves (opens, reads, appends, queries)
    /// for `background` work to let them go first.
    pub fn with_background(mut self, background: crate::background::Background) -> Self {
        self.background = Some(background);
        self
    }

    /// The same tree with a `search/` folder answered by `search`.
    pub fn with_search(mut self, search: Arc<crate::search::Search>) -> Self {
        self.search = Some(search);
        self
    }

    /// Inodes whose kernel caches must be dropped (drained by the adapter's notifier).
    pub fn invalidations(&self) -> Arc<Invalidations> {
        self.stale.clone()
    }

    /// The set of sources changed while mounted (§12: a peer's folder came or went;
    /// `gone`: the peers taken out). The kernel forgets the root's and the namespaces'
    /// attributes (their mtimes may move), and every name that led to what is gone: a
    /// namespace no source has any more, a gone peer's session folders (`<dir>@host`).
    /// Their inode numbers answer ENOENT from now on; nothing of them is cached to go
    /// stale.
    pub fn sources_changed(&self, gone: &[String]) {
        self.stale.mark(ROOT);
        let suffixes: Vec<String> = gone.iter().map(|h| format!("@{h}")).collect();
        for (ino, node) in self.inodes.folders() {
            match node {
                Node::Namespace(ns) => {
                    self.stale.mark(ino);
                    self.stale.mark(ino | 1);
                    self.stale.mark(ino | 2);
                    if !gone.is_empty() && !self.has_namespace(&ns) {
                        self.stale
                            .mark_entry(ROOT, &crate::store::naming::mount_name(&ns));
                    }
                }
                Node::SessionDir(ns, dir) if suffixes.iter().any(|s| dir.ends_with(s)) => {
                    self.stale.mark(ino);
                    let parent = self.inodes.ino(&Node::Namespace(ns));
                    self.stale.mark_entry(parent, &dir);
                }
                _ => {}
            }
        }
    }

    /// Said by the FUSE adapter: whether the kernel reads transcripts from their files
    /// (passthrough), so their handles need no page-cache bookkeeping.
    pub fn set_kernel_reads_transcripts(&self, on: bool) {
        self.kernel_reads_transcripts.store(on, Ordering::Release);
    }

    fn attr(&self, ino: u64, kind: FileKind, perm: u16, size: u64, mtime: SystemTime) -> Attr {
        Attr {
            ino,
            kind,
            perm,
            size,
            blocks: size.div_ceil(512),
            mtime,
            uid: self.uid,
            gid: self.gid,
            volatile: false,
        }
    }

    fn node_of(&self, ino: u64) -> Result<Node> {
        self.inodes
            .node(ino)
            .ok_or_else(|| Error::not_found("stale inode"))
    }

    fn ctl_service(&self) -> Result<&Arc<CtlService>> {
        self.ctl
            .as_ref()
            .ok_or_else(|| Error::not_found("this mount has no control file"))
    }

    /// Whether any source has `ns`: asked in order, up to the first that has it (a
    /// kept copies' source answers a "no" by listing its copies again, so a lookup
    /// must not ask it when a live source already said yes).
    fn has_namespace(&self, ns: &str) -> bool {
        self.sources.current().iter().any(|s| s.has_namespace(ns))
    }

    fn sources_of(&self, ns: &str) -> Vec<Arc<dyn SessionSource>> {
        self.sources
            .current()
            .iter()
            .filter(|s| s.has_namespace(ns))
            .cloned()
            .collect()
    }

    /// The source that holds session `ns/dir`, with the session's stat.
    fn session_source(
        &self,
        ns: &str,
        dir: &str,
    ) -> Result<(Arc<dyn SessionSource>, crate::sources::SessionStat)> {
        for s in self.sources.current().iter() {
            if let Ok(stat) = s.session_stat(ns, dir) {
                return Ok((s.clone(), stat));
            }
        }
        Err(Error::not_found(format!("no session {ns}/{dir}")))
    }

    fn root_mtime(&self) -> SystemTime {
        self.sources
            .current()
            .iter()
            .filter_map(|s| s.root_mtime())
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    fn namespace_mtime(&self, ns: &str) -> Result<SystemTime> {
        self.sources
            .current()
            .iter()
            .filter_map(|s| s.namespace_mtime(ns))
            .max()
            .ok_or_else(|| Error::not_found(format!("no namespace {ns}")))
    }

    /// `index.json` and `latest` of `ns` over every source that has it.
    pub fn namespace_index(&self, ns: &str) -> Result<NamespaceIndex> {
        let sources = self.sources_of(ns);
        match sources.as_slice() {
            [] => Err(Error::not_found(format!("no sessions in {ns}"))),
            [one] => one.index(ns),
            many => {
                let mut all = Vec::new();
                for s in many {
                    all.extend(s.listings(ns)?);
                }
                sort_newest_first(&mut all);
                Ok(NamespaceIndex {
                    latest: all.first().map(|l| l.dir.clone()),
                    index_json: Arc::new(render_json(&all)),
                })
            }
        }
    }

    fn latest(&self, ns: &str) -> Result<String> {
        self.namespace_index(ns)?
            .latest
            .ok_or_else(|| Error::not_found(format!("no sessions in {ns}")))
    }

    fn writers(&self, ns: &str, dir: &str) -> u64 {
        self.ctl.as_ref().map_or(0, |c| c.writers_of(ns, dir))
    }

    /// Attributes of `node` as the kernel is to be told them: as the store is now,
    /// with a page-cached file's pages made ready for the size told (`page_cache`).
    fn node_attr(
        &self,
        ino: u64,
        node: &Node,
        opened: Option<u64>,
        pid: Option<u32>,
    ) -> Result<Attr> {
        let mut attr = self.node_attr_now(ino, node, opened, pid)?;
        match node {
            Node::View(ns, dir, ViewKind::Transcript) => {
                let current = || {
                    let (source, _) = self.session_source(ns, dir).ok()?;
                    source.snapshot(ns, dir, ViewKind::Transcript, 0).ok()
                };
                if let Some(size) = self
                    .page_cache
                    .live_size(ino, attr.size, current, &self.stale)
                {
                    attr.size = size;
                    attr.blocks = size.div_ceil(512);
                }
            }
            Node::View(_, _, ViewKind::Conversation | ViewKind::Markdown) | Node::IndexJson(_) => {
                self.page_cache.before_size(ino, attr.size, &self.stale)
            }
            _ => {}
        }
        Ok(attr)
    }

    /// Attributes of `node` as the store is now; `opened` is the size through an open
    /// handle (its snapshot's), `pid` who asks (a `ctl` is sized per reader).
    fn node_attr_now(
        &self,
        ino: u64,
        node: &Node,
        opened: Option<u64>,
        pid: Option<u32>,
    ) -> Result<Attr> {
        Ok(match node {
            Node::SearchRoot
            | Node::SearchQuery(_)
            | Node::SearchHits(_)
            | Node::SearchLink(..) => {
                return self.search_attr(ino, node, opened);
            }
            Node::UsageRoot | Node::UsageFile(_) => return self.usage_attr(ino, node, opened),
            Node::Root => self.attr(ino, FileKind::Directory, 0o755, 0, self.root_mtime()),
            Node::RootCtl => {
                let size = opened.unwrap_or_else(|| self.ctl_size(None, pid));
                self.ctl_service()?;
                Attr {
                    blocks: 0,
                    ..self.attr(ino, FileKind::RegularFile, 0o600, size, self.root_mtime())
                }
            }
            Node::Namespace(ns) => {
                let mtime = self.namespace_mtime(ns)?;
                self.attr(ino, FileKind::Directory, 0o755, 0, mtime)
            }
            Node::Latest(ns) => {
                let mtime = self.namespace_mtime(ns)?;
                let target = self.latest(ns)?;
                self.attr(ino, FileKind::Symlink, 0o777, target.len() as u64, mtime)
            }
            Node::IndexJson(ns) => {
                let mtime = self.namespace_mtime(ns)?;
                let size = match opened {
                    Some(s) => s,
                    None => self.namespace_index(ns)?.index_json.len() as u64,
                };
                self.attr(ino, FileKind::RegularFile, 0o444, size, mtime)
            }
            Node::SessionDir(ns, dir) => {
                let (_, stat) = self.session_source(ns, dir)?;
                self.attr(ino, FileKind::Directory, 0o755, 0, stat.mtime)
            }
            Node::SessionCtl(ns, dir) => {
                let (source, stat) = self.session_source(ns, dir)?;
                if !source.writable() {
                    return Err(Error::not_found(format!("no ctl in {ns}/{dir}")));
                }
                let size = opened.unwrap_or_else(|| self.ctl_size(Some((ns, dir)), pid));
                // Not stored data: `du` and `ls -s` say 0.
                Attr {
                    blocks: 0,
                    ..self.attr(ino, FileKind::RegularFile, 0o600, size, stat.mtime)
                }
            }
            Node::View(ns, dir, kind) => {
                let (source, stat) = self.session_source(ns, dir)?;
                let size = match (opened, kind) {
                    (Some(s), _) => s,
                    (None, ViewKind::Transcript) => stat.size,
                    (None, k) => source.view_size(ns, dir, *k, self.writers(ns, dir))?,
                };
                self.attr(ino, FileKind::RegularFile, 0o444, size, stat.mtime)
            }
        })
    }

    /// A `ctl`'s size: its log (what a fresh `open` and `read` return).
    fn ctl_size(&self, session: Option<(&str, &str)>, pid: Option<u32>) -> u64 {
        self.ctl.as_ref().map_or(0, |c| c.log_size(session, pid))
    }

    fn child(&self, parent: &Node, name: &str) -> Result<Node> {
        let missing = || Error::not_found(format!("no {name}"));
        Ok(match parent {
            Node::Root if name == CTL => Node::RootCtl,
            Node::Root if name == inodes::SEARCH && self.search.is_some() => Node::SearchRoot,
            Node::SearchRoot | Node::SearchQuery(_) => return self.search_child(parent, name),
            Node::Root if name == usage::USAGE && self.usage.is_some() => Node::UsageRoot,
            Node::UsageRoot => return self.usage_child(name),
            Node::Root => {
                // Mount names are the slugs without their `--` (naming::mount_name).
                let ns = crate::store::naming::namespaces_of_mount_name(name)
                    .into_iter()
                    .find(|ns| {
                        crate::store::naming::mount_name(ns) == name && self.has_namespace(ns)
                    })
                    .ok_or_else(missing)?;
                Node::Namespace(ns)
            }
            Node::Namespace(ns) => match name {
                "latest" => Node::Latest(ns.clone()),
                "index.json" => Node::IndexJson(ns.clone()),
                dir => {
                    // Checked before an inode slot is allocated for the name: a lookup
                    // of a name that does not exist must not cost memory forever.
                    self.session_source(ns, dir).map_err(|_| missing())?;
                    Node::SessionDir(ns.clone(), dir.to_string())
                }
            },
            Node::SessionDir(ns, dir) => inodes::session_file(ns, dir, name).ok_or_else(missing)?,
            _ => return Err(Error::new(libc::ENOTDIR, "not a folder")),
        })
    }

    /// The entries of folder `node`, `.` and `..` first.
    fn list_dir(&self, node: &Node) -> Result<Vec<DirEntry>> {
        let entry = |node: &Node, kind: FileKind, name: &str| DirEntry {
            ino: self.inodes.ino(node),
            kind,
            name: name.to_string(),
        };
        let mut out = vec![
            entry(node, FileKind::Directory, "."),
            DirEntry {
                ino: ROOT,
                kind: FileKind::Directory,
                name: "..".into(),
            },
        ];
        match node {
            Node::Root => {
                if self.ctl.is_some() {
                    out.push(entry(&Node::RootCtl, FileKind::RegularFile, CTL));
                }
                if self.search.is_some() {
                    out.push(entry(
                        &Node::SearchRoot,
                        FileKind::Directory,
                        inodes::SEARCH,
                    ));
                }
                if self.usage.is_some() {
                    out.push(entry(&Node::UsageRoot, FileKind::Directory, usage::USAGE));
                }
                let mut names = Vec::new();
                for s in self.sources.current().iter() {
                    names.extend(s.namespaces()?);
                }
                names.sort();
                names.dedup();
                let mut shown: Vec<(String, String)> = names
                    .into_iter()
                    .map(|ns| (crate::store::naming::mount_name(&ns), ns))
                    .collect();
                shown.sort();
                for (name, ns) in shown {
                    out.push(entry(&Node::Namespace(ns), FileKind::Directory, &name));
                }
            }
            Node::Namespace(ns) => {
                let mut dirs = Vec::new();
                for s in self.sources_of(ns) {
                    dirs.extend(s.session_dirs(ns)?);
                }
                if dirs.is_empty() {
                    // Its last session is gone: so is the namespace.
                    return Err(Error::not_found(format!("no sessions in {ns}")));
                }
                dirs.sort();
                dirs.dedup();
                out.push(entry(
                    &Node::Latest(ns.clone()),
                    FileKind::Symlink,
                    "latest",
                ));
                out.push(entry(
                    &Node::IndexJson(ns.clone()),
                    FileKind::RegularFile,
                    "index.json",
                ));
                for dir in dirs {
                    let n = Node::SessionDir(ns.clone(), dir.clone());
                    out.push(entry(&n, FileKind::Directory, &dir));
                }
            }
            Node::SessionDir(ns, dir) => {
                let (source, _) = self.session_source(ns, dir)?;
                for (name, _) in SESSION_FILES {
                    if name == CTL && !source.writable() {
                        continue;
                    }
                    let n = inodes::session_file(ns, dir, name).expect("listed names resolve");
                    out.push(entry(&n, FileKind::RegularFile, name));
                }
            }
            Node::SearchRoot | Node::SearchQuery(_) => self.search_list(node, &mut out)?,
            Node::UsageRoot => self.usage_list(&mut out)?,
            _ => return Err(Error::new(libc::ENOTDIR, "not a folder")),
        }
        Ok(out)
    }

    fn add_handle(&self, f: OpenFile) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles.lock().unwrap().insert(fh, Arc::new(f));
        fh
    }

    fn handle(&self, fh: u64) -> Option<Arc<OpenFile>> {
        self.handles.lock().unwrap().get(&fh).cloned()
    }

    // ---- the operations, one per FUSE request ----

    /// `name` in folder `parent`.
    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        // A view's size is its whole rendering: a first lookup may parse a session.
        let _served = self.foreground(true);
        let parent = self.node_of(parent)?;
        let name = name.to_str().ok_or_else(|| Error::not_found("not UTF-8"))?;
        let node = self.child(&parent, name)?;
        let ino = self.inodes.ino(&node);
        self.node_attr(ino, &node, None, None)
    }

    /// Attributes of `ino`; through an open handle `fh`, its snapshot's size. `pid`
    /// is the asking process (`fstat` comes without `fh`; a `ctl` reader's process
    /// then sees its handle's size).
    pub fn getattr(&self, ino: u64, fh: Option<u64>, pid: Option<u32>) -> Result<Attr> {
        let _served = self.foreground(true);
        let handle = fh.and_then(|fh| self.handle(fh));
        let opened = match (handle.as_deref(), &self.ctl) {
            (Some(OpenFile::View { snap: s, .. } | OpenFile::Hits(s)), _) => Some(s.size()),
            (Some(OpenFile::Ctl(h)), Some(ctl)) => Some(ctl.handle_size(&h.lock().unwrap())),
            _ => None,
        };
        self.node_attr(ino, &self.node_of(ino)?, opened, pid)
    }

    /// Owners and modes are fixed; `echo … > ctl` truncates first, which is accepted
    /// and ignored, as are times.
    pub fn setattr(&self, ino: u64, change: SetAttr) -> Result<Attr> {
        let node = self.node_of(ino)?;
        let is_ctl = matches!(node, Node::RootCtl | Node::SessionCtl(..));
        if (change.mode || change.owner || change.size) && self.is_read_only(&node) {
            return Err(Self::read_only_error());
        }
        if change.mode || change.owner {
            return Err(Error::not_permitted(
                "the tree's owners and modes are fixed",
            ));
        }
        if change.size && !is_ctl {
            return Err(Error::access("views are read-only"));
        }
        self.node_attr(ino, &node, None, None)
    }

    /// The target of a `latest` link.
    pub fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        match self.node_of(ino)? {
            Node::Latest(ns) => Ok(self.latest(&ns)?.into_bytes()),
            n @ Node::SearchLink(..) => self.search_readlink(&n),
            _ => Err(Error::invalid("not a symbolic link")),
        }
    }

    /// Whether `node` is (in) a session of a read-only source: another agent's.
    fn is_read_only(&self, node: &Node) -> bool {
        match node {
            Node::SessionDir(ns, dir) | Node::SessionCtl(ns, dir) | Node::View(ns, dir, _) => self
                .session_source(ns, dir)
                .is_ok_and(|(source, _)| !source.writable()),
            _ => false,
        }
    }

    fn read_only_error() -> Error {
        Error::new(
            libc::EROFS,
            "another agent's session is read-only: fen-fs never changes it",
        )
    }

    /// Any change to the tree's structure (create, mkdir, mknod, unlink, symlink,
    /// link, rename; `rmdir` but of a session folder): the structure is synthesized
    /// (§2.1), and another agent's session is read-only.
    pub fn change_structure(&self, parent: u64, name: &OsStr) -> Error {
        let parent = self.node_of(parent);
        let target = match (&parent, name.to_str()) {
            (Ok(Node::Namespace(ns)), Some(dir)) => Some(Node::SessionDir(ns.clone(), dir.into())),
            _ => None,
        };
        let read_only = parent.as_ref().is_ok_and(|p| self.is_read_only(p))
            || target.is_some_and(|t| self.is_read_only(&t));
        if read_only {
            return Self::read_only_error();
        }
        Error::not_permitted("the tree's structure is fixed; write to ctl instead")
    }

    /// `rmdir` of a session folder moves the session to the trash (§6): EBUSY while a
    /// `ctl` of it is open for writing, EROFS for another agent's session. Its views
    /// go with it (as in cgroupfs, the folder is removed whole; they cannot be
    /// unlinked one by one). Anything else is the fixed structure: EPERM.
    pub fn rmdir(&self, parent: u64, name: &OsStr) -> Result<()> {
        let Node::Namespace(ns) = self.node_of(parent)? else {
            return Err(self.change_structure(parent, name));
        };
        let dir = name.to_str().ok_or_else(|| Error::not_found("not UTF-8"))?;
        if matches!(dir, "latest" | "index.json") {
            return Err(Error::new(libc::ENOTDIR, format!("{dir} is not a folder")));
        }
        let (source, _) = self.session_source(&ns, dir)?;
        if !source.writable() {
            return Err(Self::read_only_error());
        }
        // The kernel sends RELEASE after close(2) has returned: a writer that just
        // closed may still count for a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
        while self.writers(&ns, dir) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        {
            let _moving = self.trashing.lock().unwrap();
            if self.writers(&ns, dir) > 0 {
                return Err(Error::new(
                    libc::EBUSY,
                    format!("{ns}/{dir} has a ctl open for writing"),
                ));
            }
            source.trash(&ns, dir)?;
        }
        // The namespace's listing, mtime, `latest` and `index.json` changed; with its
        // last session, the namespace itself is gone from the root.
        let ns_ino = self.inodes.ino(&Node::Namespace(ns.clone()));
        self.stale.mark(ns_ino);
        if !self.has_namespace(&ns) {
            self.stale.mark(ROOT);
            self.stale
                .mark_entry(ROOT, &crate::store::naming::mount_name(&ns));
        }
        Ok(())
    }

    /// Opens `ino`: a view becomes a snapshot held by the handle; so does a `ctl`
    /// opened read-only (its log, growing as lines are logged); a `ctl` opened for
    /// writing is a stream.
    pub fn open(&self, ino: u64, flags: i32, pid: u32) -> Result<Opened> {
        let node = self.node_of(ino)?;
        let writing = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let _served = self.foreground(matches!(node, Node::SearchHits(_)));
        if let Node::SearchHits(_) = node {
            if writing || flags & libc::O_TRUNC != 0 {
                return Err(Error::access("a search's hits are read-only"));
            }
            let (snapshot, cache) = self.search_open(&node)?;
            let fh = self.add_handle(OpenFile::Hits(snapshot));
            return Ok(Opened {
                fh,
                cache,
                backing: false,
                if_backed: false,
            });
        }
        if let Node::UsageRoot | Node::UsageFile(_) = node {
            let (snapshot, cache) =
                self.usage_open(&node, writing || flags & libc::O_TRUNC != 0)?;
            let fh = self.add_handle(OpenFile::Hits(snapshot));
            return Ok(Opened {
                fh,
                cache,
                backing: false,
                if_backed: false,
            });
        }
        let _moving = matches!(node, Node::SessionCtl(..)).then(|| self.trashing.lock().unwrap());
        let ctl_target = match &node {
            Node::RootCtl => Some(CtlTarget::Root),
            Node::SessionCtl(ns, dir) => {
                let (source, _) = self.session_source(ns, dir)?;
                if !source.writable() {
                    return Err(Error::not_found(format!("no ctl in {ns}/{dir}")));
                }
                let store = &self.ctl_service()?.store;
                Some(CtlTarget::Session(store.session(ns, dir)?))
            }
            _ => None,
        };
        if let Some(target) = ctl_target {
            let h = self.ctl_service()?.open(target, pid, writing);
            let fh = self.add_handle(OpenFile::Ctl(Mutex::new(h)));
            let cache = if writing {
                CacheMode::Stream
            } else {
                CacheMode::DirectIo
            };
            return Ok(Opened {
                fh,
                cache,
                backing: false,
                if_backed: false,
            });
        }
        if writing || flags & libc::O_TRUNC != 0 {
            if self.is_read_only(&node) {
                return Err(Self::read_only_error());
            }
            return Err(Error::access("views are read-only; write to ctl instead"));
        }
        let snapshot = match &node {
            Node::IndexJson(ns) => Snapshot::Bytes(self.namespace_index(ns)?.index_json),
            Node::View(ns, dir, kind) => {
                let (source, _) = self.session_source(ns, dir)?;
                source.snapshot(ns, dir, *kind, self.writers(ns, dir))?
            }
            _ => return Err(Error::new(libc::EISDIR, "is a folder")),
        };
        let backing = matches!(snapshot, Snapshot::Transcript(_));
        let if_backed = backing && self.kernel_reads_transcripts.load(Ordering::Acquire);
        let (cache, cached) = if if_backed {
            // Read by the kernel from the file itself, never through our page cache.
            (CacheMode::KeepCache, None)
        } else {
            self.cache_mode(ino, &node, &snapshot)
        };
        Ok(Opened {
            fh: self.add_handle(OpenFile::View {
                snap: snapshot,
                cached: Mutex::new(cached),
            }),
            cache,
            backing,
            if_backed,
        })
    }

    /// How a handle of `node` reading `snap` is served, and whether it is counted as
    /// a page-cached handle of `ino`. Where the kernel drops pages on its own whenever
    /// a size changes (no FUSE_EXPLICIT_INVAL_DATA, or no mount), transcripts keep the
    /// page cache (append-only: a new size drops it all) and views bypass it.
    fn cache_mode(
        &self,
        ino: u64,
        node: &Node,
        snap: &Snapshot,
    ) -> (CacheMode, Option<(u64, u64)>) {
        let cacheable = matches!(
            node,
            Node::IndexJson(_)
                | Node::View(
                    _,
                    _,
                    ViewKind::Transcript | ViewKind::Conversation | ViewKind::Markdown
                )
        );
        if !cacheable {
            return (CacheMode::DirectIo, None);
        }
        if !self.stale.precise() {
            let cache = if matches!(snap, Snapshot::Transcript(_)) {
                CacheMode::KeepCache
            } else {
                CacheMode::DirectIo
            };
            return (cache, None);
        }
        let opened = self.page_cache.open(ino, snap, &self.stale);
        (
            opened.cache,
            (opened.token != 0).then_some((ino, opened.token)),
        )
    }

    /// A transcript handle the kernel could not read from its file after all
    /// (passthrough refused): how it is served instead.
    pub fn not_backed(&self, ino: u64, fh: u64) -> CacheMode {
        let Some(handle) = self.handle(fh) else {
            return CacheMode::DirectIo;
        };
        let OpenFile::View { snap, cached } = handle.as_ref() else {
            return CacheMode::DirectIo;
        };
        let Ok(node) = self.node_of(ino) else {
            return CacheMode::DirectIo;
        };
        let (cache, counted) = self.cache_mode(ino, &node, snap);
        *cached.lock().unwrap() = counted;
        cache
    }

    /// The file an open transcript handle reads (a new descriptor of it), for the
    /// kernel to read directly; `None` for any other handle.
    pub fn backing_file(&self, fh: u64) -> Option<std::fs::File> {
        match self.handle(fh).as_deref() {
            Some(OpenFile::View {
                snap: Snapshot::Transcript(f),
                ..
            }) => f.try_clone().ok(),
            _ => None,
        }
    }

    /// Up to `size` bytes at `offset` of an open view, or a `ctl`'s replies.
    pub fn read(&self, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(fh, offset, size, &mut out)?;
        Ok(out)
    }

    /// The same into `out`, cleared first: the mount passes each request thread's
    /// own buffer, so a long read allocates nothing per request.
    pub fn read_into(&self, fh: u64, offset: u64, size: u32, out: &mut Vec<u8>) -> Result<()> {
        match self.handle(fh).as_deref() {
            Some(OpenFile::View { snap, cached }) => {
                let _served = self.foreground(false);
                snap.read_into(offset, size as usize, out)?;
                if let Some((ino, token)) = *cached.lock().unwrap() {
                    let to_end = out.len() < size as usize;
                    self.page_cache.read(ino, token, to_end);
                }
                Ok(())
            }
            Some(OpenFile::Hits(s)) => {
                *out = s.read_at(offset, size as usize)?;
                Ok(())
            }
            Some(OpenFile::Ctl(h)) => {
                let ctl = self.ctl_service()?;
                *out = ctl.read(&mut h.lock().unwrap(), offset, size as usize);
                Ok(())
            }
            Some(OpenFile::Dir(_)) => Err(Error::new(libc::EISDIR, "is a folder")),
            None => Err(Error::new(libc::EBADF, "no such handle")),
        }
    }

    /// A `write(2)` to a `ctl`; `writer` is the kernel's lock owner of the writer.
    /// Blocks until the answer is known (`write_then` does not).
    pub fn write(&self, ino: u64, fh: u64, data: &[u8], writer: Option<u64>) -> Result<usize> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.write_then(ino, fh, data, writer, move |r| {
            let _ = tx.send(r);
        });
        rx.recv()
            .unwrap_or_else(|_| Err(Error::new(libc::EIO, "the write was dropped")))
    }

    /// `write`, answered through `done`: now, or (with `--fsync always`) from the
    /// thread that runs the sync covering it, so the request's thread is free to
    /// serve others meanwhile and one sync answers its whole batch.
    pub fn write_then(
        &self,
        ino: u64,
        fh: u64,
        data: &[u8],
        writer: Option<u64>,
        done: impl FnOnce(Result<usize>) + Send + 'static,
    ) {
        let _served = self.foreground(false);
        let handle = self.handle(fh);
        let Some(OpenFile::Ctl(h)) = handle.as_deref() else {
            return done(Err(Error::new(libc::EBADF, "not open for writing")));
        };
        let ctl = match self.ctl_service() {
            Ok(ctl) => ctl.clone(),
            Err(e) => return done(Err(e)),
        };
        let len = data.len();
        // The handle's lock is let go before waiting: the sync's thread takes it to
        // answer, maybe this very thread.
        let written = ctl.write(&mut h.lock().unwrap(), data, writer);
        match written {
            Err(e) => done(Err(e)),
            Ok(Written::Nothing) => done(Ok(len)),
            Ok(Written::Answered) => {
                self.ctl_appended(ino);
                done(Ok(len))
            }
            Ok(Written::Syncing(syncing)) => {
                self.ctl_appended(ino);
                let handle = handle.clone();
                syncing.then(move |ids, outcome| {
                    let answer = match handle.as_deref() {
                        Some(OpenFile::Ctl(h)) => ctl.finish(&mut h.lock().unwrap(), ids, outcome),
                        _ => outcome,
                    };
                    done(answer.map(|_| len))
                });
            }
        }
    }

    /// Waits for lines a `flush` left syncing (with the handle's lock let go).
    fn finish_flush(&self, ctl: &CtlService, h: &Mutex<CtlHandle>, written: Written) -> Result<()> {
        match written {
            Written::Nothing | Written::Answered => Ok(()),
            Written::Syncing(syncing) => {
                let (ids, outcome) = syncing.wait();
                ctl.finish(&mut h.lock().unwrap(), ids, outcome)
            }
        }
    }

    /// A `close(2)` of a descriptor: a `ctl`'s unterminated last line is processed.
    pub fn flush(&self, ino: u64, fh: u64, closer: u64) -> Result<()> {
        let handle = self.handle(fh);
        let Some(OpenFile::Ctl(h)) = handle.as_deref() else {
            return Ok(());
        };
        let ctl = self.ctl_service()?;
        // A close with nothing pending (every reader's) changes nothing.
        let written = ctl.flush(&mut h.lock().unwrap(), Some(closer))?;
        if !matches!(written, Written::Nothing) {
            self.ctl_appended(ino);
        }
        self.finish_flush(ctl, h, written)
    }

    /// The last close of a handle. Its errors reach nobody, so there are none.
    pub fn release(&self, fh: u64) {
        let removed = self.handles.lock().unwrap().remove(&fh);
        if let Some(OpenFile::View { cached, .. }) = removed.as_deref()
            && let Some((ino, token)) = *cached.lock().unwrap()
        {
            self.page_cache.release(ino, token);
        }
        if let (Some(OpenFile::Ctl(h)), Some(ctl)) = (removed.as_deref(), &self.ctl) {
            // Normally flushed already; a leftover line is still processed (and logged).
            let written = ctl.flush(&mut h.lock().unwrap(), None);
            if let Ok(written) = written {
                let _ = self.finish_flush(ctl, h, written);
            }
            ctl.release(&h.lock().unwrap());
        }
    }

    /// Opens folder `ino`: the listing is taken once per open, so paging through a
    /// big folder does not re-list it for every readdir call.
    pub fn opendir(&self, ino: u64) -> Result<u64> {
        let _served = self.foreground(true);
        let entries = self.list_dir(&self.node_of(ino)?)?;
        Ok(self.add_handle(OpenFile::Dir(Arc::new(entries))))
    }

    /// The listing taken at `opendir`.
    pub fn readdir(&self, fh: u64) -> Result<Arc<Vec<DirEntry>>> {
        match self.handle(fh).as_deref() {
            Some(OpenFile::Dir(entries)) => Ok(entries.clone()),
            _ => Err(Error::new(libc::EBADF, "not an open folder")),
        }
    }

    /// Attributes for one `readdirplus` entry; `None` for an entry that vanished
    /// since `opendir` (left out of the reply).
    pub fn entry_attr(&self, entry: &DirEntry) -> Option<Attr> {
        let node = self.inodes.node(entry.ino)?;
        match node {
            // `latest` and `index.json` cost a pass over the whole namespace, and their
            // attributes have TTL 0: the kernel asks again (LOOKUP/GETATTR) before any
            // use, so the listing carries only their type and permissions.
            Node::Latest(_) => {
                Some(self.attr(entry.ino, entry.kind, 0o777, 0, SystemTime::UNIX_EPOCH))
            }
            Node::IndexJson(_) => {
                let size = self.page_cache.listed_size(entry.ino, 0);
                Some(self.attr(entry.ino, entry.kind, 0o444, size, SystemTime::UNIX_EPOCH))
            }
            // Likewise `usage/`'s files: a listing counts nothing.
            Node::UsageFile(f) => Some(Attr {
                volatile: true,
                ..self.attr(entry.ino, entry.kind, 0o444, 0, self.usage_listed_mtime(f))
            }),
            // Likewise `conversation.md`: its size is known once it is rendered (a
            // pass over the session), which a plain `ls` should not cost.
            Node::View(ns, dir, ViewKind::Markdown) => {
                let (_, stat) = self.session_source(&ns, &dir).ok()?;
                let size = self.page_cache.listed_size(entry.ino, 0);
                Some(self.attr(entry.ino, entry.kind, 0o444, size, stat.mtime))
            }
            // A listing waits for nothing: a page-cached file is listed at the size of
            // the state the kernel holds (its attributes are asked for again before
            // any use, as they are never cached).
            _ => {
                let mut attr = self.node_attr_now(entry.ino, &node, None, None).ok()?;
                if matches!(node, Node::View(..)) {
                    attr.size = self.page_cache.listed_size(entry.ino, attr.size);
                    attr.blocks = attr.size.div_ceil(512);
                }
                Some(attr)
            }
        }
    }

    pub fn releasedir(&self, fh: u64) {
        self.handles.lock().unwrap().remove(&fh);
    }

    /// The space of the writable source's filesystem, so `df` on the mount says
    /// something true.
    pub fn statfs(&self) -> StatFs {
        let empty = StatFs {
            bsize: 4096,
            namelen: 255,
            frsize: 4096,
            ..Default::default()
        };
        let sources = self.sources.current();
        let Some(source) = sources.first() else {
            return empty;
        };
        let Ok(path) = std::ffi::CString::new(source.root().as_os_str().as_encoded_bytes()) else {
            return empty;
        };
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid C string and out-pointer.
        if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
            return empty;
        }
        StatFs {
            blocks: s.f_blocks,
            bfree: s.f_bfree,
            bavail: s.f_bavail,
            files: s.f_files,
            ffree: s.f_ffree,
            bsize: s.f_bsize as u32,
            namelen: 255,
            frsize: s.f_frsize as u32,
        }
    }

    /// Someone is being served until the value is dropped: background work lets
    /// them go first. A `brief` request only while it is served, not for a moment
    /// after (a search's answer, a lookup, a `stat`, a folder's listing): a build is
    /// watched through such polls, and must not wait after each. Opens, reads and
    /// writes of files come in runs (`cat`, an agent's appends): work waits a moment
    /// after each.
    fn foreground(&self, brief: bool) -> Option<crate::background::Foreground<'_>> {
        let bg = self.background.as_ref()?;
        Some(if brief { bg.brief() } else { bg.foreground() })
    }

    /// The background work this tree yields to (tests look at its `mount_busy`).
    pub fn background(&self) -> Option<&crate::background::Background> {
        self.background.as_ref()
    }

    /// After a `ctl` write or flush appended on `ino`: if it is a session's `ctl`, the
    /// namespace's newest update moves, and the session and namespace folders' cached
    /// attributes (their mtimes) must go, so `ls -t` is right at once. The transcript
    /// needs nothing: its attributes are never cached, and the kernel drops its pages
    /// when it sees the size change.
    fn ctl_appended(&self, ino: u64) {
        if let Ok(Node::RootCtl) = self.node_of(ino) {
            // A new session: the root's mtime (and, for a new namespace, its listing)
            // moved, so its cached attributes go at once; and it is searchable at
            // once, not at the next look at every one.
            self.stale.mark(ROOT);
            if let Some(search) = &self.search {
                search.sweep_soon();
            }
        }
        if let Ok(Node::SessionCtl(ns, dir)) = self.node_of(ino) {
            if let Some(s) = self.sources.current().iter().find(|s| s.writable()) {
                s.appended(&ns);
            }
            if let Some(search) = &self.search {
                search.touched(&ns, &dir);
            }
            self.stale.mark(inodes::folder_of(ino));
            self.stale.mark(self.inodes.ino(&Node::Namespace(ns)));
        }
    }
}
