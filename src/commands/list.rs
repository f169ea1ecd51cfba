//! `fen-fs list`: what it computes, apart from its options, so that it is testable.

use crate::error::Result;
use crate::sources::SessionSource;
use crate::sources::foreign_source::ForeignSource;
use crate::store::Store;
use crate::views::listing::{Listing, sort_newest_first};

/// `dir` as the absolute path a session's header would record: relative to the
/// current directory, normalized lexically (no trailing `/`, no `.` or `..`).
pub fn absolute_dir(dir: &std::path::Path) -> String {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    crate::store::naming::normalize_cwd(&abs.to_string_lossy())
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

/// Other agents' sources, indexed now (a one-shot command waits for the index).
pub fn foreign_sources(
    options: &crate::sources::ForeignOptions,
    store: &Store,
) -> Vec<std::sync::Arc<ForeignSource>> {
    let sources = crate::sources::foreign_sources(options, &store.root, false);
    crate::sources::build_indexes(&sources);
    sources
}

/// `list` over fen's store and other agents' sources together, newest first.
pub fn list_with(
    store: &Store,
    foreign: &[std::sync::Arc<ForeignSource>],
    cwd: Option<&str>,
) -> Result<Vec<Listing>> {
    let mut out = list(store, cwd)?;
    for source in foreign {
        let namespaces = match cwd {
            Some(cwd) => vec![crate::store::naming::slug(cwd)],
            None => source.namespaces()?,
        };
        for ns in namespaces {
            if !source.has_namespace(&ns) {
                continue;
            }
            out.extend(
                source
                    .listings(&ns)?
                    .into_iter()
                    .filter(|l| cwd.is_none_or(|c| l.cwd.as_deref() == Some(c))),
            );
        }
    }
    sort_newest_first(&mut out);
    Ok(out)
}

/// The foreign session `spec` names (id, unique prefix of one, or folder name):
/// its source, namespace and folder.
pub fn resolve_foreign<'a>(
    foreign: &'a [std::sync::Arc<ForeignSource>],
    spec: &str,
) -> Result<Option<(&'a ForeignSource, String, String)>> {
    let mut matches = Vec::new();
    for source in foreign {
        for ns in source.namespaces()? {
            for l in source.listings(&ns)? {
                // An earlier version of a kept session (`<dir>.v<N>`) is named by its
                // folder, not by the session's id.
                if l.version.is_some() && l.dir != spec && !spec.contains(".v") {
                    continue;
                }
                let exact = l.id == spec || l.dir == spec;
                if exact || l.id.starts_with(spec) || l.dir.starts_with(spec) {
                    if exact {
                        return Ok(Some((source.as_ref(), ns, l.dir)));
                    }
                    matches.push((source.as_ref(), ns.clone(), l.dir));
                }
            }
        }
    }
    match matches.len() {
        0 => Ok(None),
        1 => Ok(matches.pop()),
        n => Err(crate::Error::invalid(format!(
            "{spec} matches {n} sessions; give more of the id"
        ))),
    }
}
