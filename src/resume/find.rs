//! Finding the session `fen-fs resume SESSION` names, among fen's store and every
//! other agent's: by id, unique prefix of an id or folder name, folder name, or the
//! path of its file.

use crate::error::{Error, Result};
use crate::sources::SessionSource;
use crate::sources::fen::FenSource;
use crate::sources::foreign_source::ForeignSource;
use crate::store::Store;
use std::path::Path;
use std::sync::Arc;

/// A session and the source that reads it.
pub struct Found {
    pub source: Arc<dyn SessionSource>,
    pub ns: String,
    pub dir: String,
}

struct Candidate {
    source: Arc<dyn SessionSource>,
    ns: String,
    dir: String,
    id: String,
}

/// The session `spec` names.
pub fn find(store: &Arc<Store>, foreign: &[Arc<ForeignSource>], spec: &str) -> Result<Found> {
    find_among(store, foreign, &[], spec)
}

/// The session `spec` names, also among `others` (other machines' sessions, §12:
/// by id, prefix or folder name only).
pub fn find_among(
    store: &Arc<Store>,
    foreign: &[Arc<ForeignSource>],
    others: &[Arc<dyn SessionSource>],
    spec: &str,
) -> Result<Found> {
    let fen: Arc<dyn SessionSource> = Arc::new(FenSource::new(store.clone()));
    if spec.contains('/') || spec.ends_with(".jsonl") {
        return by_path(store, fen, foreign, spec);
    }
    let mut all: Vec<Candidate> = Vec::new();
    if store.root.is_dir() {
        for s in store.all_sessions()? {
            all.push(Candidate {
                source: fen.clone(),
                ns: s.namespace.clone(),
                dir: s.dir.clone(),
                id: s.session_id().to_string(),
            });
        }
    }
    let foreign_dyn = foreign.iter().map(|s| s.clone() as Arc<dyn SessionSource>);
    for dynamic in foreign_dyn.chain(others.iter().cloned()) {
        let source = dynamic.clone();
        for ns in source.namespaces()? {
            for l in source.listings(&ns)? {
                // An earlier version of a kept session (`<dir>.v<N>`) is named by its
                // folder, not by the session's id.
                if l.version.is_some() && l.dir != spec && !spec.contains(".v") {
                    continue;
                }
                all.push(Candidate {
                    source: dynamic.clone(),
                    ns: ns.clone(),
                    dir: l.dir,
                    id: l.id,
                });
            }
        }
    }
    let mut exact: Vec<&Candidate> = all
        .iter()
        .filter(|c| c.id == spec || c.dir == spec)
        .collect();
    // A Syncthing conflict copy shares its session's id (§12): the id names the
    // session, the copy's folder name names the copy.
    if exact.len() > 1 {
        let is_copy = |c: &Candidate| {
            let base = c.dir.rsplit_once('@').map_or(c.dir.as_str(), |(d, _)| d);
            crate::sources::peers::conflict_original(base).is_some() && c.dir != spec
        };
        if exact.iter().any(|c| !is_copy(c)) {
            exact.retain(|c| !is_copy(c));
        }
    }
    let matches = if exact.is_empty() {
        all.iter()
            .filter(|c| c.id.starts_with(spec) || c.dir.starts_with(spec))
            .collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [] => Err(Error::not_found(format!(
            "no session matches {spec} (in fen's store{})",
            foreign
                .iter()
                .map(|s| format!(", {}", s.agent().name()))
                .collect::<String>()
        ))),
        [one] => Ok(Found {
            source: one.source.clone(),
            ns: one.ns.clone(),
            dir: one.dir.clone(),
        }),
        many => {
            let names: Vec<String> = many
                .iter()
                .take(5)
                .map(|c| {
                    let host = c
                        .source
                        .host()
                        .map(|h| format!(" on {h}"))
                        .unwrap_or_default();
                    format!("{} ({}{host})", c.dir, c.source.agent().name())
                })
                .collect();
            Err(Error::invalid(format!(
                "{spec} matches {} sessions: {}{}; give more of the id",
                many.len(),
                names.join(", "),
                if many.len() > 5 { ", ..." } else { "" }
            )))
        }
    }
}

fn by_path(
    store: &Arc<Store>,
    fen: Arc<dyn SessionSource>,
    foreign: &[Arc<ForeignSource>],
    spec: &str,
) -> Result<Found> {
    let path = std::fs::canonicalize(spec).map_err(|e| Error::io(spec, &e))?;
    if !path.is_file() {
        return Err(Error::not_found(format!("{spec} is not a session file")));
    }
    let store_root = std::fs::canonicalize(&store.root).ok();
    let ns_dir = path.parent();
    if store_root.is_some() && ns_dir.and_then(Path::parent) == store_root.as_deref() {
        let ns = ns_dir
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let dir = crate::store::layout::session_dir_of(
            path.file_name().and_then(|n| n.to_str()).unwrap_or(""),
        );
        if let Some(dir) = dir
            && store.session(ns, dir).is_ok()
        {
            return Ok(Found {
                source: fen,
                ns: ns.to_string(),
                dir: dir.to_string(),
            });
        }
    }
    for source in foreign {
        if let Some((ns, dir)) = source.session_of_file(&path) {
            return Ok(Found {
                source: source.clone(),
                ns,
                dir,
            });
        }
    }
    Err(Error::not_found(format!(
        "{spec} is not a session of fen's store nor of any agent root fen-fs reads (name its agent's root with --source KIND=DIR)"
    )))
}
