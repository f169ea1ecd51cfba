//! The FUSE adapter, and the only module that names `fuser`: each callback translates
//! its arguments, calls the [`Tree`], and converts the value or errno into a reply.
//! [`mount`] starts a session with its notifier thread.

use crate::error::Error;
use crate::tree::attr::{Attr, CacheMode, FileKind};
use crate::tree::invalidate::Stale;
use crate::tree::{SetAttr, Tree};
use fuser::{
    BackingId, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    SessionACL, TimeOrNow, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

pub struct FenFuse {
    tree: Arc<Tree>,
    passthrough: Arc<Passthrough>,
    backing: Mutex<Backing>,
}

/// Whether transcripts are read by the kernel from their files (FUSE passthrough,
/// Linux 6.9+, needs CAP_SYS_ADMIN), or through the daemon as other views are.
pub struct Passthrough {
    state: Mutex<Result<bool, String>>,
    changed: Box<dyn Fn(&str) + Send + Sync>,
}

impl Passthrough {
    /// `changed` is told each new state (as `describe` words it).
    pub fn new(changed: impl Fn(&str) + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Passthrough {
            state: Mutex::new(Ok(false)),
            changed: Box::new(changed),
        })
    }

    /// `on`, `off (why)`, or `not negotiated` before the kernel's first request.
    pub fn describe(&self) -> String {
        match &*self.state.lock().unwrap() {
            Ok(true) => "on".into(),
            Ok(false) => "not negotiated".into(),
            Err(why) => format!("off ({why})"),
        }
    }

    fn enabled(&self) -> bool {
        matches!(*self.state.lock().unwrap(), Ok(true))
    }

    /// Turns it off before mounting (`why` says by whom).
    pub fn turn_off(&self, why: &str) {
        self.set(Err(why.to_string()));
    }

    fn set(&self, state: Result<bool, String>) {
        {
            let mut s = self.state.lock().unwrap();
            if *s == state || (s.is_err() && state.is_ok()) {
                return;
            }
            match &state {
                Err(why) => log::warn!(
                    "FUSE passthrough is off ({why}): transcripts are read through the daemon"
                ),
                Ok(_) => log::info!("FUSE passthrough is on: the kernel reads transcripts"),
            }
            *s = state;
        }
        (self.changed)(&self.describe());
    }
}

/// The kernel's backing files of open transcripts. An inode is served through one
/// backing file while any handle of it is open (the kernel refuses another), so
/// opens share it; the last release of an inode's handles closes it.
#[derive(Default)]
struct Backing {
    by_handle: HashMap<u64, Arc<BackingId>>,
    by_inode: HashMap<u64, Weak<BackingId>>,
}

fn errno(e: &Error) -> Errno {
    Errno::from_i32(e.errno)
}

fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::Directory => FileType::Directory,
        FileKind::RegularFile => FileType::RegularFile,
        FileKind::Symlink => FileType::Symlink,
    }
}

fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.blocks,
        atime: a.mtime,
        mtime: a.mtime,
        ctime: a.mtime,
        crtime: a.mtime,
        kind: file_type(a.kind),
        perm: a.perm,
        nlink: a.nlink(),
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn fopen_flags(cache: CacheMode) -> FopenFlags {
    match cache {
        CacheMode::DirectIo => FopenFlags::FOPEN_DIRECT_IO,
        CacheMode::KeepCache => FopenFlags::FOPEN_KEEP_CACHE,
        // Without KEEP_CACHE the kernel would drop every page at this open.
        CacheMode::Bypass => FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_KEEP_CACHE,
        // Without KEEP_CACHE the kernel empties the file's cache before the open returns.
        CacheMode::Refill => FopenFlags::empty(),
        CacheMode::Stream => {
            FopenFlags::FOPEN_DIRECT_IO
                | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES
                | FopenFlags::FOPEN_STREAM
        }
    }
}

fn reply_entry(reply: ReplyEntry, r: crate::Result<Attr>) {
    match r {
        Ok(a) => reply.entry_with_ttls(&a.ttl(), &a.entry_ttl(), &file_attr(&a), Generation(0)),
        Err(e) => reply.error(errno(&e)),
    }
}

fn reply_attr(reply: ReplyAttr, r: crate::Result<Attr>) {
    match r {
        Ok(a) => reply.attr(&a.ttl(), &file_attr(&a)),
        Err(e) => reply.error(errno(&e)),
    }
}

fn reply_empty(reply: ReplyEmpty, r: crate::Result<()>) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(errno(&e)),
    }
}

impl FenFuse {
    /// The backing file for a transcript handle `fh` of inode `ino`: the one its open
    /// handles share, else a new one; `None` to serve it through the daemon.
    fn backing_of(&self, ino: u64, fh: u64, reply: &ReplyOpen) -> Option<Arc<BackingId>> {
        let mut b = self.backing.lock().unwrap();
        // While handles of the inode are open, its backing file is the only one the
        // kernel accepts (a file replaced meanwhile is served from the old one
        // until they close), whatever passthrough's state now.
        let id = match b.by_inode.get(&ino).and_then(Weak::upgrade) {
            Some(id) => id,
            None => {
                if !self.passthrough.enabled() {
                    return None;
                }
                let file = self.tree.backing_file(fh)?;
                match reply.open_backing(&file) {
                    Ok(id) => {
                        let id = Arc::new(id);
                        b.by_inode.insert(ino, Arc::downgrade(&id));
                        id
                    }
                    Err(e) => {
                        // Off for every file from now on: an inode must not be served
                        // both ways at once, and what failed here fails elsewhere.
                        self.tree.set_kernel_reads_transcripts(false);
                        let meta = file.metadata().ok();
                        self.passthrough.set(Err(format!(
                            "the kernel refused the file (device {}, inode {}): {e}",
                            meta.as_ref().map_or(0, |m| m.dev()),
                            meta.as_ref().map_or(0, |m| m.ino()),
                        )));
                        return None;
                    }
                }
            }
        };
        b.by_handle.insert(fh, id.clone());
        Some(id)
    }

    fn release_backing(&self, ino: u64, fh: u64) {
        let mut b = self.backing.lock().unwrap();
        if b.by_handle.remove(&fh).is_some()
            && b.by_inode.get(&ino).is_some_and(|w| w.strong_count() == 0)
        {
            b.by_inode.remove(&ino);
        }
    }
}

impl Filesystem for FenFuse {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Transcripts are read by the kernel from their files where it can: reads cost
        // what they cost natively. Two levels: the store may sit on an overlay.
        let wanted = !self.passthrough.describe().starts_with("off");
        let passthrough = config
            .add_capabilities(InitFlags::FUSE_PASSTHROUGH)
            .map_err(|_| "the kernel does not offer it (Linux 6.9 or later)".to_string())
            .and_then(|()| {
                config
                    .set_max_stack_depth(2)
                    .map(|_| true)
                    .map_err(|_| "stacking depth 2 refused".to_string())
            });
        if wanted {
            self.passthrough.set(passthrough);
        }
        self.tree
            .set_kernel_reads_transcripts(self.passthrough.enabled());
        // The kernel drops a file's cached pages only when told, not at every change
        // of its size: views keep their unchanged prefix cached (tree::page_cache).
        let precise = config
            .add_capabilities(InitFlags::FUSE_EXPLICIT_INVAL_DATA)
            .is_ok();
        self.tree.invalidations().set_precise(precise);
        if !precise {
            log::info!("the kernel drops cached pages on its own: views bypass the page cache");
        }
        // Lets mmap readers use direct-I/O views (kernel 6.6+); harmless if refused.
        let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        // Attributes come with the listing: `ls -l` of 10,000 sessions is then a
        // handful of READDIRPLUS requests instead of 10,000 LOOKUPs.
        let _ = config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS);
        let _ = config.set_max_write(crate::ctl::MAX_WRITE as u32);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        reply_entry(reply, self.tree.lookup(parent.0, name));
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        reply_attr(
            reply,
            self.tree.getattr(ino.0, fh.map(|f| f.0), Some(req.pid())),
        );
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
        let change = SetAttr {
            mode: mode.is_some(),
            owner: uid.is_some() || gid.is_some(),
            size: size.is_some(),
        };
        reply_attr(reply, self.tree.setattr(ino.0, change));
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.tree.readlink(ino.0) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(errno(&e)),
        }
    }

    // Every change to the structure: one answer, from the tree.
    fn mknod(
        &self,
        _r: &Request,
        p: INodeNo,
        n: &OsStr,
        _m: u32,
        _u: u32,
        _d: u32,
        reply: ReplyEntry,
    ) {
        reply.error(errno(&self.tree.change_structure(p.0, n)));
    }

    fn mkdir(&self, _r: &Request, p: INodeNo, n: &OsStr, _m: u32, _u: u32, reply: ReplyEntry) {
        reply.error(errno(&self.tree.change_structure(p.0, n)));
    }

    fn unlink(&self, _r: &Request, p: INodeNo, n: &OsStr, reply: ReplyEmpty) {
        reply.error(errno(&self.tree.change_structure(p.0, n)));
    }

    fn rmdir(&self, _r: &Request, p: INodeNo, n: &OsStr, reply: ReplyEmpty) {
        reply_empty(reply, self.tree.rmdir(p.0, n));
    }

    fn symlink(
        &self,
        _r: &Request,
        p: INodeNo,
        n: &OsStr,
        _t: &std::path::Path,
        reply: ReplyEntry,
    ) {
        reply.error(errno(&self.tree.change_structure(p.0, n)));
    }

    fn rename(
        &self,
        _r: &Request,
        p: INodeNo,
        n: &OsStr,
        _np: INodeNo,
        _nn: &OsStr,
        _f: fuser::RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(errno(&self.tree.change_structure(p.0, n)));
    }

    fn link(&self, _r: &Request, _i: INodeNo, np: INodeNo, nn: &OsStr, reply: ReplyEntry) {
        reply.error(errno(&self.tree.change_structure(np.0, nn)));
    }

    fn create(
        &self,
        _r: &Request,
        p: INodeNo,
        n: &OsStr,
        _m: u32,
        _u: u32,
        _f: i32,
        reply: ReplyCreate,
    ) {
        reply.error(errno(&self.tree.change_structure(p.0, n)));
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.tree.open(ino.0, flags.0, req.pid()) {
            Ok(o) => match o
                .backing
                .then(|| self.backing_of(ino.0, o.fh, &reply))
                .flatten()
            {
                Some(id) => reply.opened_passthrough(FileHandle(o.fh), FopenFlags::empty(), &id),
                None if o.if_backed => {
                    let cache = self.tree.not_backed(ino.0, o.fh);
                    reply.opened(FileHandle(o.fh), fopen_flags(cache))
                }
                None => reply.opened(FileHandle(o.fh), fopen_flags(o.cache)),
            },
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
        READ_BUFFER.with_borrow_mut(|out| {
            match self.tree.read_into(fh.0, offset, size, out) {
                Ok(()) => reply.data(out),
                Err(e) => reply.error(errno(&e)),
            }
            // A reply larger than reads usually are is not held on to.
            if out.capacity() > READ_BUFFER_KEPT {
                *out = Vec::new();
            }
        })
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
        // Answered now, or by the thread that runs the sync covering this write.
        self.tree
            .write_then(ino.0, fh.0, data, lock.map(|l| l.0), move |r| match r {
                Ok(n) => reply.written(n as u32),
                Err(e) => reply.error(errno(&e)),
            });
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply_empty(reply, self.tree.flush(ino.0, fh.0, lock.0));
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.release_backing(ino.0, fh.0);
        self.tree.release(fh.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.tree.opendir(ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
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
        let entries = match self.tree.readdir(fh.0) {
            Ok(e) => e,
            Err(e) => return reply.error(errno(&e)),
        };
        for (i, e) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(e.ino), i as u64 + 1, file_type(e.kind), &e.name) {
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
        let entries = match self.tree.readdir(fh.0) {
            Ok(e) => e,
            Err(e) => return reply.error(errno(&e)),
        };
        for (i, e) in entries.iter().enumerate().skip(offset as usize) {
            let Some(attr) = self.tree.entry_attr(e) else {
                continue;
            };
            // One TTL serves name and attributes here: the shorter of the two.
            let ttl = attr.ttl().min(attr.entry_ttl());
            let fa = file_attr(&attr);
            if reply.add(
                INodeNo(e.ino),
                i as u64 + 1,
                &e.name,
                &ttl,
                &fa,
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
        self.tree.releasedir(fh.0);
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
        let s = self.tree.statfs();
        reply.statfs(
            s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.bsize, s.namelen, s.frsize,
        );
    }
}

/// How to mount.
pub struct MountConfig {
    pub allow_other: bool,
    pub threads: usize,
    /// Where passthrough's state is kept (and reported as it changes).
    pub passthrough: Arc<Passthrough>,
}

/// A running mount: its request loop's thread and a way to end it.
pub struct Mounted {
    unmounter: fuser::SessionUnmounter,
    requests: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Mounted {
    /// Unmounts; the request loop then ends.
    pub fn unmount(&mut self) -> std::io::Result<()> {
        self.unmounter.unmount()
    }

    /// Waits for the request loop to end (after an unmount, ours or `umount`'s).
    pub fn join(self) -> std::io::Result<()> {
        self.requests
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("fuse thread panicked")))
    }
}

/// Mounts `tree` at `mountpoint` and serves it from a thread; `on_end` runs on that
/// thread when the kernel ends the session. Also starts the notifier thread that
/// sends the tree's cache invalidations.
pub fn mount(
    tree: Arc<Tree>,
    mountpoint: &Path,
    options: &MountConfig,
    on_end: impl FnOnce() + Send + 'static,
) -> std::io::Result<Mounted> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("fen-fs".into()),
        MountOption::Subtype("fen-fs".into()),
        MountOption::DefaultPermissions,
        MountOption::NoSuid,
        MountOption::NoDev,
        MountOption::NoAtime,
    ];
    if options.allow_other {
        config.acl = SessionACL::All;
    }
    config.n_threads = Some(options.threads.max(1));
    config.clone_fd = true;
    let stale = tree.invalidations();
    let fs = FenFuse {
        tree,
        passthrough: options.passthrough.clone(),
        backing: Mutex::new(Backing::default()),
    };
    let mut session = fuser::Session::new(fs, mountpoint, &config)?;
    let unmounter = session.unmount_callable();
    let notifier = session.notifier();
    stale.attach();
    std::thread::Builder::new()
        .name("fen-notify".into())
        .spawn(move || {
            loop {
                let (ticket, batch) = stale.next_batch();
                for s in batch {
                    // ENOENT just means the kernel holds nothing for it. Each returns
                    // once the kernel has done it.
                    let _ = match s {
                        // Offset -1: the attributes only (a folder has no pages).
                        Stale::Inode(ino) => notifier.inval_inode(INodeNo(ino), -1, 0),
                        // Length 0: every page from `from` on.
                        Stale::Pages(ino, from) => {
                            notifier.inval_inode(INodeNo(ino), from as i64, 0)
                        }
                        Stale::Entry(parent, name) => {
                            notifier.inval_entry(INodeNo(parent), OsStr::new(&name))
                        }
                    };
                }
                stale.batch_sent(ticket);
            }
        })?;
    let requests = std::thread::Builder::new()
        .name("fen-fuse".into())
        .spawn(move || {
            let r = session.run();
            on_end();
            r
        })?;
    Ok(Mounted {
        unmounter,
        requests,
    })
}

thread_local! {
    /// Each request thread's reply buffer for `read`, reused: a fresh one per request
    /// was page faults for every byte a long read served.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The largest reply buffer a request thread keeps (reads are at most 1 MiB).
const READ_BUFFER_KEPT: usize = 1 << 20;
