//! The store's `.stignore` (§12): what Syncthing shares of it is the sessions
//! (`<namespace>/*.jsonl`) and the kept copies (`.kept/`), nothing else: not
//! `.fen-cache` (this machine's caches and locks), not `.trash`, not temporary files.
//! Syncthing never sends `.stignore` itself.

use crate::error::{Error, Result};
use crate::store::{layout, open};
use std::path::Path;

/// The patterns; the first that matches wins. Namespace folders (always `--…--`)
/// are shared themselves, not only the sessions in them: Syncthing's watcher drops
/// the events of an ignored path, and a session made in a new namespace folder just
/// before the watch on that folder is set would otherwise go unseen until the next
/// full rescan (an hour); the folder's own event makes Syncthing scan it whole.
pub const PATTERNS: &str = "\
// fen-fs: share only sessions and kept copies (written by `fen-fs sync init`)
/.fen-cache
/.trash
!/.kept
!/--*--/*.jsonl
/--*--/*
!/--*--
*
";

/// Writes `PATTERNS` to `<root>/.stignore` unless it already says exactly that;
/// returns whether it wrote. An existing file of other content is replaced (it is
/// fen-fs's to own: the store is fen-fs's folder).
pub fn write(root: &Path) -> Result<bool> {
    let dir = open::Dir::open_root(root).map_err(|e| Error::io(root.display(), &e))?;
    if dir
        .read_file(layout::STIGNORE, 1 << 20)
        .is_ok_and(|b| b == PATTERNS.as_bytes())
    {
        return Ok(false);
    }
    dir.replace_file(layout::STIGNORE, PATTERNS.as_bytes())
        .map_err(|e| Error::io(root.join(layout::STIGNORE).display(), &e))?;
    Ok(true)
}
