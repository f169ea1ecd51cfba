//! One line per session for pickers: `index.json` (§2.2), `fen-fs list` and its table.

use crate::store::index::SessionIndex;
use crate::store::session::Session;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Listing {
    pub dir: String,
    pub id: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub preview: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub messages: usize,
    /// Who wrote it (`fen` for fen's own sessions).
    #[serde(default)]
    pub agent: crate::agent::Agent,
    /// Shown from fen's kept copy of another agent's session (§11); then whether its
    /// source is gone, and for an earlier version of it, which (1: the oldest).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_deleted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The agent keeps it archived (Codex `archived_sessions/`, OpenCode's archived
    /// sessions): shown all the same.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
    /// The session this one was spawned from (a subagent's parent: OpenCode's child
    /// sessions), by its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The machine it was recorded on (§12): this one's name, or a peer's.
    #[serde(default)]
    pub host: Option<String>,
    /// The cwd as recorded on that machine (`cwd` is after the path map).
    #[serde(default)]
    pub cwd_on_host: Option<String>,
    /// A Syncthing conflict copy (`*.sync-conflict-*`) is a version of this session
    /// (its folder name), shown beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_of: Option<String>,
    /// A subagent's (child) session: its parent's folder relative to this
    /// namespace's folder (`<dir>`, or `../<namespace>/<dir>`) when that is shown
    /// (its id is `parent_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

impl Listing {
    pub fn of(session: &Session, idx: &SessionIndex) -> Self {
        Listing {
            dir: session.dir.clone(),
            id: super::meta::session_id(session, idx),
            cwd: idx.cwd().map(String::from),
            title: idx.title.clone(),
            preview: idx.preview.clone(),
            created_at: idx.created_at().map(String::from),
            updated_at: idx
                .updated_at
                .clone()
                .or_else(|| idx.created_at().map(String::from)),
            messages: idx.message_count(),
            agent: crate::agent::Agent::Fen,
            host: Some(crate::host::this_host().to_string()),
            cwd_on_host: idx.cwd().map(String::from),
            version_of: None,
            ..Listing::default()
        }
    }
}

/// Newest first by `updated_at` (RFC 3339 UTC strings sort as times), then by folder.
pub fn sort_newest_first(list: &mut [Listing]) {
    list.sort_by(|a, b| {
        newest_first(
            (a.updated_at.as_deref(), &a.dir),
            (b.updated_at.as_deref(), &b.dir),
        )
    });
}

/// The order of `sort_newest_first` of two sessions by (last updated, folder): for
/// a caller that sorts before it makes the listings.
pub fn newest_first(a: (Option<&str>, &str), b: (Option<&str>, &str)) -> std::cmp::Ordering {
    b.0.cmp(&a.0).then_with(|| b.1.cmp(a.1))
}

/// A JSON array with one object per line (grep- and jq-friendly), like conversation.json.
pub fn render_json<T: Serialize>(list: &[T]) -> Vec<u8> {
    render_json_each(list.iter(), list.len(), 0)
}

/// `render_json` of what `items` yields, each made only when it is written (a
/// namespace's 10,000 listings were 10 MB held beside their JSON). `count` and
/// `bytes` say about how many items and how long the JSON (0: not known; the last
/// render's length is a good guess), so that it is written into one buffer of about
/// its size, not one grown by doubling (an 8.75 MB `index.json` held 16 MB and was
/// copied on the way).
pub fn render_json_each<T: Serialize>(
    items: impl Iterator<Item = T>,
    count: usize,
    bytes: usize,
) -> Vec<u8> {
    let mut out = b"[\n".to_vec();
    let mut any = false;
    for l in items {
        if any {
            out.extend_from_slice(b",\n");
        }
        serde_json::to_writer(&mut out, &l).expect("listing serializes");
        if !any {
            // Without a guess, the first line's length times the count, and an eighth.
            let want = if bytes > 0 { bytes } else { out.len() * count };
            out.reserve_exact((want + want / 8).saturating_sub(out.len()));
            any = true;
        }
    }
    if !any {
        return b"[]\n".to_vec();
    }
    out.extend_from_slice(b"\n]\n");
    out.shrink_to_fit();
    out
}

/// What the table says first of a session shown from its kept copy (§11), and of a
/// subagent's session.
fn kept_mark(l: &Listing) -> String {
    let kept = match (l.kept, l.version, l.source_deleted) {
        (false, ..) => String::new(),
        (true, Some(n), _) => format!("[version {n}] "),
        (true, None, Some(true)) => "[deleted] ".into(),
        (true, None, _) => "[kept] ".into(),
    };
    match l.parent_id {
        Some(_) => format!("{kept}[subagent] "),
        None => kept,
    }
}

/// The aligned table of `fen-fs list`: updated (local time), messages, title or
/// preview, dir; with `agents`, an AGENT column first.
pub fn render_table(list: &[Listing], agents: bool) -> String {
    render_table_with(list, agents, false)
}

/// `render_table`, with a HOST column first when `hosts` (§12: more than one
/// machine's sessions show).
pub fn render_table_with(list: &[Listing], agents: bool, hosts: bool) -> String {
    let rows: Vec<[String; 6]> = list
        .iter()
        .map(|l| {
            [
                l.host.clone().unwrap_or_default(),
                l.agent.name().to_string(),
                l.updated_at
                    .as_deref()
                    .map(super::local_time)
                    .unwrap_or_default(),
                l.messages.to_string(),
                crate::store::index::one_line(
                    &format!(
                        "{}{}",
                        kept_mark(l),
                        l.title
                            .as_deref()
                            .or(l.preview.as_deref())
                            .unwrap_or("(empty)")
                    ),
                    50,
                ),
                l.dir.clone(),
            ]
        })
        .collect();
    let header = ["HOST", "AGENT", "UPDATED", "MSGS", "TITLE", "DIR"].map(String::from);
    let mut widths = [0usize; 6];
    for r in std::iter::once(&header).chain(rows.iter()) {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&header).chain(rows.iter()) {
        let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w - s.chars().count()));
        if hosts {
            out.push_str(&pad(&r[0], widths[0]));
            out.push_str("  ");
        }
        if agents {
            out.push_str(&pad(&r[1], widths[1]));
            out.push_str("  ");
        }
        out.push_str(&format!(
            "{}  {:>w3$}  {}  {}\n",
            pad(&r[2], widths[2]),
            r[3],
            pad(&r[4], widths[4]),
            r[5],
            w3 = widths[3]
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made one by one, the JSON is the same bytes whatever the guesses say.
    #[test]
    fn render_json_each_is_render_json() {
        let items: Vec<serde_json::Value> = (0..50)
            .map(|i| serde_json::json!({"dir": format!("d{i}"), "title": "x\"y\n", "n": i}))
            .collect();
        let whole = render_json(&items);
        assert!(whole.starts_with(b"[\n{") && whole.ends_with(b"}\n]\n"));
        assert_eq!(whole.iter().filter(|&&b| b == b'\n').count(), 52);
        let parsed: Vec<serde_json::Value> = serde_json::from_slice(&whole).unwrap();
        assert_eq!(parsed, items);
        for (count, bytes) in [(0, 0), (50, 0), (1, 0), (50, 10), (50, 1 << 20)] {
            assert_eq!(render_json_each(items.iter(), count, bytes), whole);
        }
        let one = render_json(&items[..1]);
        assert_eq!(
            one,
            [
                b"[\n".as_slice(),
                &serde_json::to_vec(&items[0]).unwrap(),
                b"\n]\n"
            ]
            .concat()
        );
        assert_eq!(render_json::<serde_json::Value>(&[]), b"[]\n");
        assert_eq!(render_json_each(std::iter::empty::<u8>(), 10, 100), b"[]\n");
    }
}
