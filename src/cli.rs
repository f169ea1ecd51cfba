//! What the read-only subcommands compute, kept out of `main.rs` so it is testable.

use crate::error::Result;
use crate::store::Store;
use crate::views::listing::{Listing, sort_newest_first};

/// Sessions newest first: all of them, or those whose header `cwd` is `cwd` (the slug
/// is lossy, so the namespace only narrows the search).
pub fn list(store: &Store, cwd: Option<&str>) -> Result<Vec<Listing>> {
    let namespaces = match cwd {
        Some(cwd) => {
            let ns = crate::store::naming::slug(cwd);
            // symlink_metadata: a symlinked namespace is not followed (it lists nothing).
            let is_dir = std::fs::symlink_metadata(store.root.join(&ns)).is_ok_and(|m| m.is_dir());
            if is_dir { vec![ns] } else { Vec::new() }
        }
        None => store.namespaces()?,
    };
    let catalog = crate::catalog::Catalog::default();
    let mut out = Vec::new();
    for ns in namespaces {
        out.extend(
            catalog
                .namespace(store, &ns)?
                .into_iter()
                .filter(|l| cwd.is_none_or(|c| l.cwd.as_deref() == Some(c))),
        );
    }
    sort_newest_first(&mut out);
    Ok(out)
}
