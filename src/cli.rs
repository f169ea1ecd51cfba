//! What the read-only subcommands compute, kept out of `main.rs` so it is testable.

use crate::error::Result;
use crate::store::Store;
use crate::views::listing::{Listing, sort_newest_first};

/// Sessions newest first: all of them, or those whose header `cwd` is `cwd` (the slug
/// is lossy, so the namespace only narrows the search).
pub fn list(store: &Store, cwd: Option<&str>) -> Result<Vec<Listing>> {
    let sessions = match cwd {
        Some(cwd) => {
            let ns = crate::store::naming::slug(cwd);
            if store.root.join(&ns).is_dir() {
                store.sessions_in(&ns)?
            } else {
                Vec::new()
            }
        }
        None => store.all_sessions()?,
    };
    let mut out = Vec::new();
    for s in sessions {
        let Ok(idx) = s.current() else { continue };
        if cwd.is_none_or(|c| idx.cwd() == Some(c)) {
            out.push(Listing::of(&s, &idx));
        }
    }
    sort_newest_first(&mut out);
    Ok(out)
}
