//! Every source together: fen's store, the other agents' stores and other machines'
//! (§12), listed newest first as `fen-fs list` and `fen-fs mcp` show them. What a
//! reader of the whole history reads is gathered here, in [`every`] and [`others`]:
//! a new kind of source joins there.

use super::SessionSource;
use super::foreign_source::ForeignSource;
use crate::error::Result;
use crate::store::Store;
use crate::views::listing::{Listing, sort_newest_first};
use std::sync::Arc;

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

/// Other agents' sources, indexed now (a caller that lists or searches waits for the
/// index; `watching` for a long-lived process, as `sources::foreign_sources`).
pub fn foreign_indexed(
    options: &super::ForeignOptions,
    store: &Store,
    watching: bool,
) -> Vec<Arc<ForeignSource>> {
    let sources = super::foreign_sources(options, &store.root, watching);
    super::build_indexes(&sources);
    sources
}

/// `list` over fen's store and other agents' sources together, newest first.
pub fn list_with(
    store: &Store,
    foreign: &[Arc<ForeignSource>],
    cwd: Option<&str>,
) -> Result<Vec<Listing>> {
    list_among(store, &others(foreign, &[]), cwd)
}

/// Other machines' sources (§12): one per peer of `options`, caches in `store`'s.
pub fn peer_sources(
    options: &super::peers::PeerOptions,
    store: &Store,
) -> Result<Vec<Arc<dyn SessionSource>>> {
    Ok(super::peers::peer_sources(options, &store.root, false)?
        .into_iter()
        .map(|p| p as Arc<dyn SessionSource>)
        .collect())
}

/// Every source besides fen's store, in the order they are read: the other agents'
/// (`foreign`), then other machines' (`peers`, from [`peer_sources`]).
pub fn others(
    foreign: &[Arc<ForeignSource>],
    peers: &[Arc<dyn SessionSource>],
) -> Vec<Arc<dyn SessionSource>> {
    foreign
        .iter()
        .map(|f| f.clone() as Arc<dyn SessionSource>)
        .chain(peers.iter().cloned())
        .collect()
}

/// Every source of the history: fen's store at `store`, then [`others`].
pub fn every(
    store: &Arc<Store>,
    foreign: &[Arc<ForeignSource>],
    peers: &[Arc<dyn SessionSource>],
) -> Vec<Arc<dyn SessionSource>> {
    let fen: Arc<dyn SessionSource> = Arc::new(super::fen::FenSource::new(store.clone()));
    std::iter::once(fen).chain(others(foreign, peers)).collect()
}

/// `list` over fen's store and `sources` (other agents', other machines'), newest
/// first.
pub fn list_among(
    store: &Store,
    sources: &[Arc<dyn SessionSource>],
    cwd: Option<&str>,
) -> Result<Vec<Listing>> {
    let mut out = list(store, cwd)?;
    for source in sources {
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
