//! Replacing a small file atomically (temp file in the same folder, then rename), for
//! the caches in `.fen-cache`: a reader sees the old file or the new one, whole.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Best effort, as befits a cache: failures are logged, never raised.
pub fn replace_file(path: &Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // Unique per call: two threads replacing one file must not share a temp file.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{seq}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        log::warn!("cache file {}: {e}", path.display());
        let _ = std::fs::remove_file(&tmp);
    }
}
