//! Every open, create and rename inside a store goes through here: relative to a held
//! folder descriptor, never through a symbolic link (`O_NOFOLLOW` on every component),
//! never blocking on a FIFO (`O_NONBLOCK`), and only what `fstat` of the descriptor
//! says is a regular file or a folder. A store can be changed by anyone while we
//! look at it; a name swapped between a check and an open is refused, not followed.

use super::write_gate;
use crate::error::{Error, Result};
use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn cstr(name: &OsStr) -> std::io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: i32) -> std::io::Result<i32> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// A single path component: no `/`, not `.` or `..` (nothing that walks elsewhere).
fn component(name: &OsStr) -> std::io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    cstr(name)
}

/// An open folder of the store.
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens the store root itself (the one path given by the user, so the only one
    /// that may be reached through a link).
    pub fn open_root(path: &Path) -> std::io::Result<Dir> {
        let c = cstr(path.as_os_str())?;
        // SAFETY: valid C string; the fd is owned below.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        Ok(Dir {
            // SAFETY: a descriptor we just opened.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    /// The same folder, through a descriptor of its own.
    pub fn try_clone(&self) -> std::io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sub-folder `name` (ELOOP/ENOTDIR if it is a link or anything else).
    pub fn open_dir(&self, name: impl AsRef<OsStr>) -> std::io::Result<Dir> {
        let name = name.as_ref();
        let c = component(name)?;
        // SAFETY: valid fd and C string.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        Ok(Dir {
            // SAFETY: a descriptor we just opened.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: self.path.join(name),
        })
    }

    /// The sub-folder `name`, created with mode 0700 if missing.
    pub fn create_dir(&self, name: impl AsRef<OsStr>) -> std::io::Result<Dir> {
        let name = name.as_ref();
        let c = component(name)?;
        write_gate::pass(|| {
            // SAFETY: valid fd and C string.
            let rc = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o700) };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EEXIST) {
                    return Err(e);
                }
            }
            Ok(())
        })?;
        self.open_dir(name)
    }

    /// Opens `name` with `flags` (plus O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC) and checks
    /// on the descriptor that it is a regular file.
    pub fn open_file_with(
        &self,
        name: impl AsRef<OsStr>,
        flags: i32,
        mode: libc::mode_t,
    ) -> std::io::Result<(File, Metadata)> {
        let c = component(name.as_ref())?;
        let open = || {
            // SAFETY: valid fd and C string.
            check(unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
                    mode as libc::c_uint,
                )
            })
        };
        // Creating or truncating changes the store (opening to write alone does not).
        let fd = if flags & (libc::O_CREAT | libc::O_TRUNC) != 0 {
            write_gate::pass(open)?
        } else {
            open()?
        };
        regular_file(fd)
    }

    /// `name` read-only, if it is a regular file.
    pub fn open_file(&self, name: impl AsRef<OsStr>) -> std::io::Result<(File, Metadata)> {
        self.open_file_with(name, libc::O_RDONLY, 0)
    }

    /// `lstat` of `name` relative to this folder.
    pub fn stat(&self, name: impl AsRef<OsStr>) -> std::io::Result<libc::stat> {
        let c = component(name.as_ref())?;
        // SAFETY: zeroed stat is a valid out-buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid fd, C string and out-pointer.
        check(unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        Ok(st)
    }

    pub fn rename(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> std::io::Result<()> {
        let (a, b) = (component(from.as_ref())?, component(to.as_ref())?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid fds and C strings.
        write_gate::pass(|| check(unsafe { libc::renameat(fd, a.as_ptr(), fd, b.as_ptr()) }))
            .map(|_| ())
    }

    pub fn unlink(&self, name: impl AsRef<OsStr>) -> std::io::Result<()> {
        let c = component(name.as_ref())?;
        // SAFETY: valid fd and C string.
        write_gate::pass(|| check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }))
            .map(|_| ())
    }

    /// The names in this folder with their `d_type`-based kind (links not followed).
    pub fn read_dir(&self) -> std::io::Result<Vec<(OsString, std::fs::FileType)>> {
        Ok(self
            .entries()?
            .flatten()
            .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
            .collect())
    }

    /// This folder's entries as `std::fs::ReadDir` (its `DirEntry::metadata` stats
    /// relative to the folder, links not followed).
    pub fn entries(&self) -> std::io::Result<std::fs::ReadDir> {
        // /proc/self/fd/N names exactly the folder we hold, whatever its path now.
        std::fs::read_dir(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// An unnamed regular file in this folder (O_TMPFILE), to be linked in by `link_as`.
    pub fn tmpfile(&self) -> std::io::Result<File> {
        self.tmpfile_with(libc::O_WRONLY)
    }

    /// `tmpfile`, open for reading too (to read back what was written before it gets
    /// a name).
    pub fn tmpfile_rw(&self) -> std::io::Result<File> {
        self.tmpfile_with(libc::O_RDWR)
    }

    fn tmpfile_with(&self, access: i32) -> std::io::Result<File> {
        let dot = c".";
        // SAFETY: valid fd and C string.
        let fd = write_gate::pass(|| {
            check(unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    dot.as_ptr(),
                    libc::O_TMPFILE | access | libc::O_CLOEXEC,
                    0o600 as libc::c_uint,
                )
            })
        })?;
        // SAFETY: a descriptor we just opened.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Removes the empty sub-folder `name`.
    pub fn rmdir(&self, name: impl AsRef<OsStr>) -> std::io::Result<()> {
        let c = component(name.as_ref())?;
        // SAFETY: valid fd and C string.
        write_gate::pass(|| {
            check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
        })
        .map(|_| ())
    }

    /// Gives the unnamed `file` the name `name` here; EEXIST if taken.
    pub fn link_as(&self, file: &File, name: impl AsRef<OsStr>) -> std::io::Result<()> {
        let c = component(name.as_ref())?;
        let proc = cstr(OsStr::new(&format!("/proc/self/fd/{}", file.as_raw_fd())))?;
        // SAFETY: valid fds and C strings.
        write_gate::pass(|| {
            check(unsafe {
                libc::linkat(
                    libc::AT_FDCWD,
                    proc.as_ptr(),
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            })
        })
        .map(|_| ())
    }

    /// Hard-links `from` to `to`, both in this folder (EEXIST if `to` is taken).
    pub fn link(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> std::io::Result<()> {
        let (a, b) = (component(from.as_ref())?, component(to.as_ref())?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid fds and C strings.
        write_gate::pass(|| check(unsafe { libc::linkat(fd, a.as_ptr(), fd, b.as_ptr(), 0) }))
            .map(|_| ())
    }

    /// This folder's descriptor, duplicated, as a file (for `syncfs`, `renameat2`).
    pub fn open_self(&self) -> std::io::Result<File> {
        // SAFETY: a valid descriptor; the duplicate is owned below.
        let fd = check(unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
        // SAFETY: a descriptor we just made.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    pub fn sync(&self) -> std::io::Result<()> {
        // SAFETY: valid fd.
        check(unsafe { libc::fsync(self.fd.as_raw_fd()) }).map(|_| ())
    }

    /// Walks `names` down from here, every step a folder and never a link.
    pub fn walk(&self, names: &[&str]) -> std::io::Result<Dir> {
        let mut d = self.open_dir(names.first().copied().unwrap_or("."))?;
        for n in names.iter().skip(1) {
            d = d.open_dir(n)?;
        }
        Ok(d)
    }

    /// As `walk`, creating missing folders (mode 0700).
    pub fn walk_create(&self, names: &[&str]) -> std::io::Result<Dir> {
        let Some((first, rest)) = names.split_first() else {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        };
        let mut d = self.create_dir(first)?;
        for n in rest {
            d = d.create_dir(n)?;
        }
        Ok(d)
    }

    /// Replaces `name` atomically with `bytes` (temp file, then rename): readers see
    /// the old file or the new one, whole. The temp file is created O_EXCL, so no
    /// planted link or FIFO is ever opened.
    pub fn replace_file(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.replace_file_with(name, |f| f.write_all(bytes))
    }

    /// `replace_file` of what `write` writes to the new file: a large cache is
    /// streamed to disk, not built whole in memory first.
    pub fn replace_file_with(
        &self,
        name: &str,
        write: impl FnOnce(&mut File) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        // Unique per call: two threads replacing one file must not share a temp file.
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = format!(".{name}.{}.{seq}.tmp", std::process::id());
        // Whole inside the gate: a temp file is part of the store too.
        let written = write_gate::pass(|| {
            let (mut f, _) =
                self.open_file_with(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600)?;
            write(&mut f)?;
            self.rename(&tmp, name)
        });
        if written.is_err() {
            let _ = self.unlink(&tmp);
        }
        written
    }

    /// The whole of regular file `name`, if it is one and at most `max` bytes long.
    pub fn read_file(&self, name: &str, max: u64) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let (f, meta) = self.open_file(name)?;
        if meta.len() > max {
            return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
        }
        let mut out = Vec::with_capacity(meta.len() as usize);
        f.take(max + 1).read_to_end(&mut out)?;
        if out.len() as u64 > max {
            return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
        }
        Ok(out)
    }
}

/// Gives the kernel `advice` (`POSIX_FADV_*`) about how `f[at..at + len]` will be
/// read (`len` 0: to the end). Advice only: an error just means none was taken.
pub fn advise(f: &File, at: u64, len: u64, advice: libc::c_int) {
    // SAFETY: a valid descriptor; the call only changes how the kernel reads ahead.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), at as libc::off_t, len as libc::off_t, advice) };
}

/// Opens `path` read-only if it is a regular file (checked on the descriptor, so a
/// file swapped for something else between a `stat` and the open is refused too).
/// For a file named by the user (outside a store); store files use `Dir`.
pub fn open_regular(path: &Path) -> Result<(File, Metadata)> {
    open_path(path, libc::O_RDONLY).map_err(|e| match e.raw_os_error() {
        // What `regular_file` answers for anything but a regular file.
        Some(libc::EINVAL) => Error::not_found(format!("{} is not a regular file", path.display())),
        _ => Error::io(path.display(), &e),
    })
}

/// Opens `path` with `flags` (plus O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC) if it is a
/// regular file: a transcript named by the user, outside a store.
pub fn open_path(path: &Path, flags: i32) -> std::io::Result<(File, Metadata)> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: valid C string; the fd is owned below.
    let fd = check(unsafe {
        libc::open(
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    regular_file(fd)
}

/// Opens `root/ns/name` without following any link below `root`.
pub fn open_in_store(
    root: &Path,
    ns: &str,
    name: &str,
    flags: i32,
) -> std::io::Result<(File, Metadata)> {
    Dir::open_root(root)?
        .open_dir(ns)?
        .open_file_with(name, flags, 0)
}

/// A descriptor just opened, kept only if `fstat` says it is a regular file (what
/// was opened, not what a path named a moment before).
fn regular_file(fd: i32) -> std::io::Result<(File, std::fs::Metadata)> {
    // SAFETY: a descriptor we just opened and own.
    let file = unsafe { File::from_raw_fd(fd) };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok((file, meta))
}

/// A file holding `bytes` that lives only in memory (`memfd_create`): no folder, no
/// name, gone when the last descriptor closes. Generated session bytes (a database's
/// rows as JSON Lines) are served from one, so they are read like any session file.
pub fn anonymous_file(bytes: &[u8]) -> Result<File> {
    // SAFETY: a valid C string; the fd is owned below.
    let fd = unsafe { libc::memfd_create(c"fen-fs-unit".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::io("memfd_create", &std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor we just created and own.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes)
        .map_err(|e| Error::io("write to an anonymous file", &e))?;
    std::io::Seek::rewind(&mut file).map_err(|e| Error::io("rewind an anonymous file", &e))?;
    Ok(file)
}

/// Up to `max` bytes of a small file beside an agent's sessions (an index, a
/// marker), read-only; `None` when it is missing, not a regular file or larger.
pub fn read_small(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let (file, meta) = open_regular(path).ok()?;
    if meta.len() > max {
        return None;
    }
    let mut out = Vec::new();
    file.take(max).read_to_end(&mut out).ok()?;
    Some(out)
}
