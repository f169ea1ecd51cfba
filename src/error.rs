//! The one error type of fen-fs. Every failure carries the errno it becomes at the
//! FUSE boundary (and in `err <ERRNO> <reason>` ctl replies) plus a reason for people.

use std::fmt;
use std::io;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub errno: i32,
    pub reason: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(errno: i32, reason: impl Into<String>) -> Self {
        Error {
            errno,
            reason: reason.into(),
        }
    }
    /// Bad input: not JSON, wrong field type, unknown id, reserved field, bad UTF-8.
    pub fn invalid(reason: impl Into<String>) -> Self {
        Self::new(libc::EINVAL, reason)
    }
    pub fn too_big(reason: impl Into<String>) -> Self {
        Self::new(libc::EFBIG, reason)
    }
    pub fn not_found(reason: impl Into<String>) -> Self {
        Self::new(libc::ENOENT, reason)
    }
    pub fn not_permitted(reason: impl Into<String>) -> Self {
        Self::new(libc::EPERM, reason)
    }
    pub fn access(reason: impl Into<String>) -> Self {
        Self::new(libc::EACCES, reason)
    }
    /// Wraps an I/O error, keeping ENOSPC/ENOENT/... and mapping the rest to EIO.
    pub fn io(context: impl fmt::Display, err: &io::Error) -> Self {
        let errno = match err.raw_os_error() {
            Some(e @ (libc::ENOSPC | libc::EDQUOT | libc::ENOENT | libc::EACCES | libc::EPERM)) => {
                if e == libc::EDQUOT {
                    libc::ENOSPC
                } else {
                    e
                }
            }
            _ => libc::EIO,
        };
        Self::new(errno, format!("{context}: {err}"))
    }
    /// The symbolic name used in ctl replies (`err EINVAL …`).
    pub fn errno_name(&self) -> &'static str {
        errno_name(self.errno)
    }
}

pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EINVAL => "EINVAL",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EEXIST => "EEXIST",
        libc::ECANCELED => "ECANCELED",
        libc::EBUSY => "EBUSY",
        libc::EROFS => "EROFS",
        libc::ENOTDIR => "ENOTDIR",
        libc::EOVERFLOW => "EOVERFLOW",
        _ => "EIO",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.errno_name(), self.reason)
    }
}

impl std::error::Error for Error {}
