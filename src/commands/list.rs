//! `fen-fs list`: what it computes, apart from its options, so that it is testable.

use crate::error::Result;
use crate::store::Store;
use crate::views::listing::{Listing, sort_newest_first};

/// `dir` as the absolute path a session's header would record: relative to the
/// current directory, without a trailing `/` (the slug and the cwd match compare it).
pub fn absolute_dir(dir: &std::path::Path) -> String {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let s = abs.to_string_lossy();
    let trimmed = s.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_string()
    } else {
        trimmed.to_string()
    }
}

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
    let catalog = crate::sources::fen::catalog::Catalog::default();
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
