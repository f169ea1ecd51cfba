//! The FUSE adapter: maps inodes to store objects, calls the core, replies, and turns
//! `fen_fs::Error` into an errno. No business logic lives here.

pub mod inodes;
pub mod invalidate;

use crate::catalog::Catalog;
use crate::ctl::{CtlHandle, CtlService, CtlTarget};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::projection::Projection;
use crate::views::{self, Snapshot, ViewKind};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use inodes::{InodeTable, Node, SESSION_FILES};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Files' attributes are never cached by the kernel: sizes come from store files that
/// other processes append to behind our back, the spec wants that visible on the next
/// access, and a `getattr` is one cheap request (a `stat` plus O(1) arithmetic).
const FILE_ATTR_TTL: Duration = Duration::ZERO;
/// Folders' attributes are cached for a second. With `default_permissions` the kernel
/// re-checks every ancestor on every path walk: with TTL 0 one `ls -l` of a 10,000-
/// session folder cost 70,000 GETATTRs. A folder's only changing attribute is its
/// mtime; our own appends invalidate it at once (notifier), other writers' within 1 s.
const DIR_ATTR_TTL: Duration = Duration::from_secs(1);
/// Names may be cached for a second: a removed session leaves `readdir` at once, and
/// a stale cached name only leads to ENOENT from `getattr`/`open`. New names are never
/// negatively cached (ENOENT replies carry no TTL), so they show up immediately.
const ENTRY_TTL: Duration = Duration::from_secs(1);

/// The size a `ctl` reports. The kernel serializes direct writes that end past a
/// file's size (and all O_APPEND writes); below this size, writers on separate
/// descriptors of one `ctl` reach the daemon concurrently and share `fdatasync`s
/// (group commit). Small on purpose: readers such as `read_to_string` or Python's
/// `read()` preallocate `st_size`. Reads ignore offsets (a control file is a stream).
const CTL_SIZE: u64 = 1 << 20;

fn attr_ttl(attr: &FileAttr) -> Duration {
    if attr.kind == FileType::Directory {
        DIR_ATTR_TTL
    } else {
        FILE_ATTR_TTL
    }
}

enum OpenFile {
    View(Snapshot),
    Ctl(Mutex<CtlHandle>),
    Dir(Vec<(u64, FileType, String)>),
}

pub struct FenFs {
    store: Arc<Store>,
    catalog: Catalog,
    ctl: Arc<CtlService>,
    inodes: InodeTable,
    handles: Mutex<HashMap<u64, Arc<OpenFile>>>,
    next_fh: AtomicU64,
    uid: u32,
    gid: u32,
    /// Inodes whose cached attributes must go, sent by the notifier thread.
    stale: Arc<invalidate::Invalidations>,
}

fn errno(e: &Error) -> Errno {
    Errno::from_i32(e.errno)
}

fn mtime_of(meta: &std::fs::Metadata) -> SystemTime {
    meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)
}

impl FenFs {
    pub fn new(
        store: Arc<Store>,
        ctl: Arc<CtlService>,
        stale: Arc<invalidate::Invalidations>,
    ) -> Self {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        FenFs {
            store,
            catalog: Catalog::watching(),
            ctl,
            inodes: InodeTable::default(),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            uid,
            gid,
            stale,
        }
    }

    fn attr(&self, ino: u64, kind: FileType, perm: u16, size: u64, mtime: SystemTime) -> FileAttr {
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn namespace_meta(&self, ns: &str) -> Result<std::fs::Metadata> {
        let path = self.store.root.join(ns);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => Ok(m),
            _ => Err(Error::not_found(format!("no namespace {ns}"))),
        }
    }

    fn latest(&self, ns: &str) -> Result<String> {
        self.catalog
            .rendered(&self.store, ns)?
            .latest
            .ok_or_else(|| Error::not_found(format!("no sessions in {ns}")))
    }

    /// Attributes of `node` as the store is now; `snapshot` is an open handle's view.
    fn node_attr(&self, ino: u64, node: &Node, snapshot: Option<&Snapshot>) -> Result<FileAttr> {
        Ok(match node {
            Node::Root => {
                let m = std::fs::metadata(&self.store.root).map_err(|e| Error::io("store", &e))?;
                self.attr(ino, FileType::Directory, 0o755, 0, mtime_of(&m))
            }
            Node::RootCtl => {
                let m = std::fs::metadata(&self.store.root).map_err(|e| Error::io("store", &e))?;
                FileAttr {
                    blocks: 0,
                    ..self.attr(ino, FileType::RegularFile, 0o600, CTL_SIZE, mtime_of(&m))
                }
            }
            Node::Namespace(ns) => {
                // The newest session update seen (by any access or append), else the
                // backing folder's mtime: O(1), so `ls -t` of the root sorts by activity
                // without a stat per session on every path walk.
                let m = self.namespace_meta(ns)?;
                let mtime = self
                    .catalog
                    .last_update(ns)
                    .map_or(mtime_of(&m), |t| t.max(mtime_of(&m)));
                self.attr(ino, FileType::Directory, 0o755, 0, mtime)
            }
            Node::Latest(ns) => {
                let m = self.namespace_meta(ns)?;
                let target = self.latest(ns)?;
                self.attr(
                    ino,
                    FileType::Symlink,
                    0o777,
                    target.len() as u64,
                    mtime_of(&m),
                )
            }
            Node::IndexJson(ns) => {
                let m = self.namespace_meta(ns)?;
                let size = match snapshot {
                    Some(s) => s.size(),
                    None => self.catalog.rendered(&self.store, ns)?.index_json.len() as u64,
                };
                self.attr(ino, FileType::RegularFile, 0o444, size, mtime_of(&m))
            }
            Node::SessionDir(ns, dir) | Node::SessionCtl(ns, dir) | Node::View(ns, dir, _) => {
                // One stat decides existence, size and mtime; most nodes need no more.
                let m = match std::fs::symlink_metadata(self.store.session_path(ns, dir)) {
                    Ok(m) if m.is_file() => m,
                    _ => return Err(Error::not_found(format!("no session {ns}/{dir}"))),
                };
                let mtime = mtime_of(&m);
                self.catalog.observe(ns, mtime);
                let session = || self.store.session_unchecked(ns, dir);
                match node {
                    Node::SessionDir(..) => self.attr(ino, FileType::Directory, 0o755, 0, mtime),
                    Node::SessionCtl(..) => {
                        // A stream, not stored data: `du` and `ls -s` say 0.
                        FileAttr {
                            blocks: 0,
                            ..self.attr(ino, FileType::RegularFile, 0o600, CTL_SIZE, mtime)
                        }
                    }
                    Node::View(_, _, kind) => {
                        let size = match (snapshot, kind) {
                            (Some(s), _) => s.size(),
                            (None, ViewKind::Transcript) => m.len(),
                            (None, ViewKind::Conversation) => {
                                let session = session();
                                let idx = session.current()?;
                                let table = idx.messages.read().unwrap();
                                Projection::of(&idx).size(&table)
                            }
                            (None, k) => {
                                let session = session();
                                views::snapshot(&session, *k, self.ctl.writers(&session))?.size()
                            }
                        };
                        self.attr(ino, FileType::RegularFile, 0o444, size, mtime)
                    }
                    _ => unreachable!("matched above"),
                }
            }
        })
    }

    fn child(&self, parent: &Node, name: &str) -> Result<Node> {
        let missing = || Error::not_found(format!("no {name}"));
        Ok(match parent {
            Node::Root if name == "ctl" => Node::RootCtl,
            Node::Root => {
                if self
                    .store
                    .session_dirs(name)
                    .map_err(|_| missing())?
                    .is_empty()
                {
                    return Err(missing());
                }
                Node::Namespace(name.to_string())
            }
            Node::Namespace(ns) => match name {
                "latest" => Node::Latest(ns.clone()),
                "index.json" => Node::IndexJson(ns.clone()),
                dir => {
                    // Checked before an inode slot is allocated for the name: a lookup
                    // of a name that does not exist must not cost memory forever.
                    let path = self.store.session_path(ns, dir);
                    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
                        return Err(missing());
                    }
                    Node::SessionDir(ns.clone(), dir.to_string())
                }
            },
            Node::SessionDir(ns, dir) => inodes::session_file(ns, dir, name).ok_or_else(missing)?,
            _ => return Err(Error::new(libc::ENOTDIR, "not a folder")),
        })
    }

    fn list_dir(&self, node: &Node) -> Result<Vec<(u64, FileType, String)>> {
        let mut out = vec![];
        let ino = self.inodes.ino(node);
        out.push((ino, FileType::Directory, ".".to_string()));
        out.push((inodes::ROOT, FileType::Directory, "..".to_string()));
        match node {
            Node::Root => {
                out.push((inodes::ROOT_CTL, FileType::RegularFile, "ctl".into()));
                for ns in self.store.namespaces()? {
                    out.push((
                        self.inodes.ino(&Node::Namespace(ns.clone())),
                        FileType::Directory,
                        ns,
                    ));
                }
            }
            Node::Namespace(ns) => {
                let dirs = self.store.session_dirs(ns)?;
                if dirs.is_empty() {
                    // Its last session is gone: so is the namespace.
                    return Err(Error::not_found(format!("no sessions in {ns}")));
                }
                out.push((
                    self.inodes.ino(&Node::Latest(ns.clone())),
                    FileType::Symlink,
                    "latest".into(),
                ));
                out.push((
                    self.inodes.ino(&Node::IndexJson(ns.clone())),
                    FileType::RegularFile,
                    "index.json".into(),
                ));
                for dir in dirs {
                    let n = Node::SessionDir(ns.clone(), dir.clone());
                    out.push((self.inodes.ino(&n), FileType::Directory, dir));
                }
            }
            Node::SessionDir(ns, dir) => {
                self.store.session(ns, dir)?;
                for (name, _) in SESSION_FILES {
                    let n = inodes::session_file(ns, dir, name).expect("listed names resolve");
                    out.push((self.inodes.ino(&n), FileType::RegularFile, name.to_string()));
                }
            }
            _ => return Err(Error::new(libc::ENOTDIR, "not a folder")),
        }
        Ok(out)
    }

    fn add_handle(&self, f: OpenFile) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles.lock().unwrap().insert(fh, Arc::new(f));
        fh
    }

    fn handle(&self, fh: FileHandle) -> Option<Arc<OpenFile>> {
        self.handles.lock().unwrap().get(&fh.0).cloned()
    }

    fn open_node(
        &self,
        req: &Request,
        node: &Node,
        flags: OpenFlags,
    ) -> Result<(OpenFile, FopenFlags)> {
        let writing = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
        let ctl_target = match node {
            Node::RootCtl => Some(CtlTarget::Root),
            Node::SessionCtl(ns, dir) => Some(CtlTarget::Session(self.store.session(ns, dir)?)),
            _ => None,
        };
        if let Some(target) = ctl_target {
            // A stream: replies are read regardless of offsets, so no page cache.
            let h = self.ctl.open(target, req.pid(), writing);
            let flags = FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES;
            return Ok((OpenFile::Ctl(Mutex::new(h)), flags));
        }
        if writing || flags.0 & libc::O_TRUNC != 0 {
            return Err(Error::access("views are read-only; write to ctl instead"));
        }
        match node {
            Node::IndexJson(ns) => {
                let bytes = self.catalog.rendered(&self.store, ns)?.index_json;
                Ok((
                    OpenFile::View(Snapshot::Bytes(bytes)),
                    FopenFlags::FOPEN_DIRECT_IO,
                ))
            }
            Node::View(ns, dir, kind) => {
                let session = self.store.session(ns, dir)?;
                let snap = views::snapshot(&session, *kind, self.ctl.writers(&session))?;
                // The transcript is append-only, so the page cache can keep its pages
                // (growth is seen through getattr, and our own appends invalidate).
                // Generated views are per-handle snapshots: direct I/O, so one handle's
                // bytes never land in another's reads through the shared page cache.
                let flags = if *kind == ViewKind::Transcript {
                    FopenFlags::FOPEN_KEEP_CACHE
                } else {
                    FopenFlags::FOPEN_DIRECT_IO
                };
                Ok((OpenFile::View(snap), flags))
            }
            _ => Err(Error::new(libc::EISDIR, "is a folder")),
        }
    }

    fn node_of(&self, ino: INodeNo) -> Result<Node> {
        self.inodes
            .node(ino.0)
            .ok_or_else(|| Error::not_found("stale inode"))
    }

    /// After a `ctl` write or flush succeeded on `ino`: if it is a session's `ctl`, the
    /// namespace's newest update moves, and the session and namespace folders' cached
    /// attributes (their mtimes) must go, so `ls -t` is right at once. The transcript
    /// needs nothing: its attributes are never cached, and the kernel drops its pages
    /// when it sees the size change.
    fn ctl_appended(&self, ino: INodeNo) {
        if let Ok(Node::SessionCtl(ns, dir)) = self.node_of(ino) {
            self.catalog.observe(&ns, SystemTime::now());
            self.stale
                .mark(self.inodes.ino(&Node::SessionDir(ns.clone(), dir)));
            self.stale.mark(self.inodes.ino(&Node::Namespace(ns)));
        }
    }
}

impl Filesystem for FenFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Lets mmap readers use direct-I/O views (kernel 6.6+); harmless if refused.
        let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        // Attributes come with the listing: `ls -l` of 10,000 sessions is then a
        // handful of READDIRPLUS requests instead of 10,000 LOOKUPs.
        let _ = config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS);
        let _ = config.set_max_write(1 << 20);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = (|| {
            let parent = self.node_of(parent)?;
            let name = name.to_str().ok_or_else(|| Error::not_found("not UTF-8"))?;
            let node = self.child(&parent, name)?;
            let ino = self.inodes.ino(&node);
            self.node_attr(ino, &node, None)
        })();
        match result {
            Ok(attr) => reply.entry_with_ttls(&attr_ttl(&attr), &ENTRY_TTL, &attr, Generation(0)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let handle = fh.and_then(|fh| self.handle(fh));
        let snapshot = match handle.as_deref() {
            Some(OpenFile::View(s)) => Some(s),
            _ => None,
        };
        match self
            .node_of(ino)
            .and_then(|n| self.node_attr(ino.0, &n, snapshot))
        {
            Ok(attr) => reply.attr(&attr_ttl(&attr), &attr),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = (|| {
            let node = self.node_of(ino)?;
            let is_ctl = matches!(node, Node::RootCtl | Node::SessionCtl(..));
            if mode.is_some() || uid.is_some() || gid.is_some() {
                return Err(Error::not_permitted(
                    "the tree's owners and modes are fixed",
                ));
            }
            if size.is_some() && !is_ctl {
                return Err(Error::access("views are read-only"));
            }
            // `echo … > ctl` truncates first: accepted and ignored, as are times.
            self.node_attr(ino.0, &node, None)
        })();
        match result {
            Ok(attr) => reply.attr(&attr_ttl(&attr), &attr),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.node_of(ino) {
            Ok(Node::Latest(ns)) => match self.latest(&ns) {
                Ok(target) => reply.data(target.as_bytes()),
                Err(e) => reply.error(errno(&e)),
            },
            Ok(_) => reply.error(Errno::EINVAL),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn mknod(
        &self,
        _r: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _m: u32,
        _u: u32,
        _d: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn mkdir(&self, _r: &Request, _p: INodeNo, _n: &OsStr, _m: u32, _u: u32, reply: ReplyEntry) {
        reply.error(Errno::EPERM);
    }

    fn unlink(&self, _r: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }

    fn rmdir(&self, _r: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }

    fn symlink(
        &self,
        _r: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _t: &std::path::Path,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn rename(
        &self,
        _r: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _np: INodeNo,
        _nn: &OsStr,
        _f: fuser::RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EPERM);
    }

    fn link(&self, _r: &Request, _i: INodeNo, _np: INodeNo, _nn: &OsStr, reply: ReplyEntry) {
        reply.error(Errno::EPERM);
    }

    fn create(
        &self,
        _r: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _m: u32,
        _u: u32,
        _f: i32,
        reply: ReplyCreate,
    ) {
        reply.error(Errno::EPERM);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self
            .node_of(ino)
            .and_then(|n| self.open_node(req, &n, flags))
        {
            Ok((file, fopen)) => reply.opened(FileHandle(self.add_handle(file)), fopen),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.handle(fh).as_deref() {
            Some(OpenFile::View(s)) => match s.read_at(offset, size as usize) {
                Ok(bytes) => reply.data(&bytes),
                Err(e) => reply.error(errno(&e)),
            },
            Some(OpenFile::Ctl(h)) => {
                reply.data(&self.ctl.read(&mut h.lock().unwrap(), size as usize))
            }
            Some(OpenFile::Dir(_)) => reply.error(Errno::EISDIR),
            None => reply.error(Errno::EBADF),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _offset: u64,
        data: &[u8],
        _wf: WriteFlags,
        _flags: OpenFlags,
        lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let handle = self.handle(fh);
        let Some(OpenFile::Ctl(h)) = handle.as_deref() else {
            reply.error(Errno::EBADF);
            return;
        };
        let result = self
            .ctl
            .write(&mut h.lock().unwrap(), data, lock.map(|l| l.0));
        match result {
            Ok(()) => {
                self.ctl_appended(ino);
                reply.written(data.len() as u32)
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock: LockOwner,
        reply: ReplyEmpty,
    ) {
        let handle = self.handle(fh);
        let Some(OpenFile::Ctl(h)) = handle.as_deref() else {
            reply.ok();
            return;
        };
        let result = self.ctl.flush(&mut h.lock().unwrap(), Some(lock.0));
        match result {
            Ok(()) => {
                self.ctl_appended(ino);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let removed = self.handles.lock().unwrap().remove(&fh.0);
        if let Some(OpenFile::Ctl(h)) = removed.as_deref() {
            let mut h = h.lock().unwrap();
            // Normally flushed already; a leftover line is still processed (and logged).
            let _ = self.ctl.flush(&mut h, None);
            self.ctl.release(&h);
        }
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // The listing is taken once per open, so paging through a big folder does
        // not re-list it for every readdir call.
        match self.node_of(ino).and_then(|n| self.list_dir(&n)) {
            Ok(entries) => reply.opened(
                FileHandle(self.add_handle(OpenFile::Dir(entries))),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let handle = self.handle(fh);
        let Some(OpenFile::Dir(entries)) = handle.as_deref() else {
            reply.error(Errno::EBADF);
            return;
        };
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: fuser::ReplyDirectoryPlus,
    ) {
        let handle = self.handle(fh);
        let Some(OpenFile::Dir(entries)) = handle.as_deref() else {
            reply.error(Errno::EBADF);
            return;
        };
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            let Some(node) = self.inodes.node(*ino) else {
                continue;
            };
            // `latest` and `index.json` cost a pass over the whole namespace, and their
            // attributes have TTL 0: the kernel asks again (LOOKUP/GETATTR) before any
            // use, so the listing carries only their type and permissions.
            let attr = match node {
                Node::Latest(_) => self.attr(*ino, *kind, 0o777, 0, SystemTime::UNIX_EPOCH),
                Node::IndexJson(_) => self.attr(*ino, *kind, 0o444, 0, SystemTime::UNIX_EPOCH),
                // An entry that vanished since opendir is left out.
                _ => match self.node_attr(*ino, &node, None) {
                    Ok(a) => a,
                    Err(_) => continue,
                },
            };
            // One TTL serves name and attributes here: the shorter of the two.
            let ttl = attr_ttl(&attr).min(ENTRY_TTL);
            if reply.add(
                INodeNo(*ino),
                i as u64 + 1,
                name,
                &ttl,
                &attr,
                Generation(0),
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.handles.lock().unwrap().remove(&fh.0);
        reply.ok();
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: fuser::ReplyXattr,
    ) {
        // ENOSYS (not ENODATA): the kernel then stops asking, instead of sending a
        // getxattr per file on every `ls -l`.
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: fuser::ReplyXattr) {
        if size == 0 {
            reply.size(0)
        } else {
            reply.data(&[])
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // The backing filesystem's space, so `df` on the mount says something true.
        let path = std::ffi::CString::new(self.store.root.as_os_str().as_encoded_bytes())
            .unwrap_or_default();
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid C string and out-pointer.
        if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
            reply.statfs(0, 0, 0, 0, 0, 4096, 255, 4096);
            return;
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            255,
            s.f_frsize as u32,
        );
    }
}
