//! `fen-fs rm`, `restore` and `trash list|empty` (§6): what they compute and print,
//! apart from their options. The moves themselves are `store::trash`'s.

use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::trash::Trashed;
use crate::views::listing::Listing;
use serde::Serialize;
use std::path::Path;

pub use crate::dates::parse_duration;

/// The session `fen-fs rm SPEC` names, as (namespace, dir). A path must be a session
/// file of this store: another agent's file (or another store's) is refused, EROFS.
pub fn resolve_live(store: &Store, spec: &str) -> Result<(String, String)> {
    let session = store.resolve(spec)?;
    let (ns, dir) = (session.namespace.clone(), session.dir.clone());
    if spec.contains('/') || spec.ends_with(".jsonl") {
        let ours = !ns.starts_with('.')
            && std::fs::canonicalize(&session.path).ok()
                == std::fs::canonicalize(store.session_path(&ns, &dir)).ok();
        if !ours {
            return Err(Error::new(
                libc::EROFS,
                format!(
                    "{spec} is not a session of the store {}; fen-fs deletes only its own \
                     sessions, never another agent's",
                    store.root.display()
                ),
            ));
        }
    }
    Ok((ns, dir))
}

/// One line of `fen-fs trash list --json`.
#[derive(Serialize)]
pub struct TrashListing {
    pub id: String,
    pub dir: String,
    pub namespace: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub preview: Option<String>,
    pub deleted_at: String,
    pub size_bytes: u64,
    pub path: String,
    /// Another agent's session whose kept copy is in the trash (§11).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl TrashListing {
    pub fn of(t: &Trashed) -> Self {
        let session = t.session();
        let listing = session
            .current()
            .ok()
            .map(|idx| Listing::of(&session, &idx));
        TrashListing {
            id: listing
                .as_ref()
                .map_or_else(|| t.session_id().to_string(), |l| l.id.clone()),
            dir: t.dir.clone(),
            namespace: t.namespace.clone(),
            cwd: listing.as_ref().and_then(|l| l.cwd.clone()),
            title: listing.as_ref().and_then(|l| l.title.clone()),
            preview: listing.and_then(|l| l.preview),
            deleted_at: crate::store::naming::timestamp(t.deleted_at),
            size_bytes: t.size,
            path: t.path.display().to_string(),
            agent: None,
        }
    }

    /// A kept copy in the trash.
    pub fn of_copy(t: &crate::keep::restore::TrashedCopy) -> Self {
        let f = &t.record.facts;
        TrashListing {
            id: t.record.id.clone(),
            dir: t.dir(),
            namespace: f.namespace.clone().unwrap_or_default(),
            cwd: f.cwd.clone(),
            title: f.title.clone(),
            preview: None,
            deleted_at: crate::store::naming::timestamp(t.deleted_at),
            size_bytes: t.size,
            path: t.path.display().to_string(),
            agent: Some(t.agent.clone()),
        }
    }
}

/// A JSON array with one object per line, as `index.json`.
pub fn render_json(list: &[TrashListing]) -> Vec<u8> {
    crate::views::listing::render_json(list)
}

pub fn human_size(n: u64) -> String {
    match n {
        n if n < 1 << 10 => format!("{n} B"),
        n if n < 1 << 20 => format!("{:.1} KiB", n as f64 / 1024.0),
        n if n < 1 << 30 => format!("{:.1} MiB", n as f64 / (1 << 20) as f64),
        n => format!("{:.1} GiB", n as f64 / (1 << 30) as f64),
    }
}

/// The aligned table: deleted (local time), size, id, title or preview, cwd.
pub fn render_table(list: &[TrashListing]) -> String {
    let header = ["DELETED", "SIZE", "ID", "TITLE", "CWD"].map(String::from);
    let rows: Vec<[String; 5]> = std::iter::once(header)
        .chain(list.iter().map(|l| {
            [
                crate::views::local_time(&l.deleted_at),
                human_size(l.size_bytes),
                l.id.clone(),
                crate::store::index::one_line(
                    l.title
                        .as_deref()
                        .or(l.preview.as_deref())
                        .unwrap_or("(empty)"),
                    40,
                ),
                l.cwd.clone().unwrap_or_default(),
            ]
        }))
        .collect();
    let mut widths = [0usize; 5];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                let pad = w - c.chars().count();
                line.push_str(c);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What `fen-fs rm SPEC` prints for one moved session.
pub fn describe(t: &Trashed) -> String {
    format!(
        "trashed {}/{} (fen-fs restore {})",
        t.namespace,
        t.dir,
        t.session_id()
    )
}

/// What `fen-fs rm` of a kept session (its source gone) says.
pub fn describe_copy(store: &Store, t: &crate::keep::restore::TrashedCopy) -> String {
    format!(
        "trashed the kept copy of {} ({}), in {} (fen-fs restore {})",
        t.dir(),
        t.agent,
        relative(store, &t.path),
        t.record.id
    )
}

/// The total size of `list`, for `trash empty`'s summary.
pub fn total_size(list: &[Trashed]) -> String {
    human_size(list.iter().map(|t| t.size).sum())
}

/// A restored session's path relative to the store, for messages.
pub fn relative(store: &Store, p: &Path) -> String {
    p.strip_prefix(&store.root)
        .unwrap_or(p)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_duration("1d12h"), Ok(Duration::from_secs(36 * 3600)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in ["", "30", "d", "3x", "-1d", "1.5h", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
