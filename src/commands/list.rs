//! `fen-fs list`: what it computes, apart from its options, so that it is testable.
//! The listing itself is the library's (`sources::all`), shared with `fen-fs mcp`.

use crate::error::Result;
use crate::sources::SessionSource;
use crate::sources::foreign_source::ForeignSource;

pub use crate::sources::all::{list, list_among, list_with, peer_sources};
pub use crate::store::naming::absolute_cwd as absolute_dir;

/// Other agents' sources, indexed now (a one-shot command waits for the index).
pub fn foreign_sources(
    options: &crate::sources::ForeignOptions,
    store: &crate::store::Store,
) -> Vec<std::sync::Arc<ForeignSource>> {
    crate::sources::all::foreign_indexed(options, store, false)
}

/// The foreign session `spec` names (id, unique prefix of one, or folder name):
/// its source, namespace and folder.
pub fn resolve_foreign<'a, S: SessionSource + ?Sized>(
    foreign: &'a [std::sync::Arc<S>],
    spec: &str,
) -> Result<Option<(&'a S, String, String)>> {
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
