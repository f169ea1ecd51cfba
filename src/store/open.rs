//! Opening files in a store: never through a symbolic link, never blocking on a FIFO,
//! and only what `fstat` of the open descriptor says is a regular file. Every read of
//! a transcript goes through here.

use crate::error::{Error, Result};
use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens `path` read-only if it is a regular file (checked on the descriptor, so a
/// file swapped for something else between a `stat` and the open is refused too).
pub fn open_regular(path: &Path) -> Result<(File, Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path.display(), &e))?;
    let meta = file.metadata().map_err(|e| Error::io(path.display(), &e))?;
    if !meta.file_type().is_file() {
        return Err(Error::not_found(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok((file, meta))
}
