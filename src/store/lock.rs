//! The one `flock` guard: writers append under an exclusive lock (§1.1), readers
//! that must not see an append half-way (fsck) take a shared one.

use crate::error::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// A `flock` held on a descriptor for as long as this value lives.
pub struct FileLock<'a>(&'a File);

impl<'a> FileLock<'a> {
    /// Blocks until `file` holds an exclusive lock.
    pub fn exclusive(file: &'a File) -> Result<Self> {
        loop {
            if flock(file, libc::LOCK_EX) == 0 {
                return Ok(FileLock(file));
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(Error::io("flock", &e));
            }
        }
    }

    /// A shared lock, waiting at most `wait`; `None` when a writer held it longer
    /// (the caller goes on unlocked and may see an append in progress).
    pub fn shared_within(file: &'a File, wait: Duration) -> Option<Self> {
        let start = Instant::now();
        loop {
            if flock(file, libc::LOCK_SH | libc::LOCK_NB) == 0 {
                return Some(FileLock(file));
            }
            let e = std::io::Error::last_os_error();
            let busy = matches!(e.raw_os_error(), Some(libc::EWOULDBLOCK | libc::EINTR));
            if !busy || start.elapsed() >= wait {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// An exclusive `flock` on a file this value owns: released when it drops (the file
/// closes), for a lock held across calls.
pub struct HeldFile {
    _file: File,
}

impl HeldFile {
    /// Blocks until `file` holds an exclusive lock.
    pub fn exclusive(file: File) -> Result<Self> {
        loop {
            if flock(&file, libc::LOCK_EX) == 0 {
                return Ok(HeldFile { _file: file });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(Error::io("flock", &e));
            }
        }
    }
}

impl HeldFile {
    /// An exclusive lock if no one else holds one now (`None`: someone does).
    pub fn try_exclusive(file: File) -> Result<Option<Self>> {
        loop {
            if flock(&file, libc::LOCK_EX | libc::LOCK_NB) == 0 {
                return Ok(Some(HeldFile { _file: file }));
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EWOULDBLOCK) => return Ok(None),
                Some(libc::EINTR) => continue,
                _ => return Err(Error::io("flock", &e)),
            }
        }
    }
}

fn flock(file: &File, op: i32) -> i32 {
    // SAFETY: a valid descriptor; flock has no memory effects.
    unsafe { libc::flock(file.as_raw_fd(), op) }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        flock(self.0, libc::LOCK_UN);
    }
}
