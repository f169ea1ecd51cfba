//! A search's answer as people and tools get it: one hit per session (`--json` lines
//! and `hits.jsonl`), and a first line saying how far the index is while it is built.

use serde::{Deserialize, Serialize};

/// One session found, through its best message (read back from a mount's
/// `hits.jsonl` by `fen-fs search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub id: String,
    pub agent: String,
    /// The machine the session was recorded on (§12).
    pub host: String,
    pub cwd: Option<String>,
    /// The namespace folder as the mount names it (`home-u-proj`).
    pub namespace: String,
    pub dir: String,
    /// The session's folder relative to the mount's root (`namespace/dir`); the CLI
    /// gives the absolute path when the store is mounted.
    pub path: String,
    pub title: Option<String>,
    pub preview: Option<String>,
    pub updated_at: Option<String>,
    /// The matching message's role (`title` when the title matched).
    pub role: String,
    pub timestamp: Option<String>,
    /// The entry (line) of the matching message, as its source identifies it.
    pub entry: Option<String>,
    /// Whether the message is still in `conversation.json` (false: a compaction,
    /// rewind or undo took it out).
    pub in_conversation: bool,
    /// One line around the match, matched words marked `**like this**`.
    pub snippet: String,
    pub score: f32,
    /// Shown from fen's kept copy (§11): `"kept": true`, and whether its source is
    /// gone (both left out for a session read from its agent's own files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_deleted: Option<bool>,
    /// Found in a subagent's session: its parent's folder, relative to the
    /// namespace's (the hit's `dir` is the subagent's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The namespace as the store names it (for the tree's links).
    #[serde(skip)]
    pub store_namespace: String,
}

/// How far an index being built is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Building {
    /// Sessions indexed so far, of all the sessions found.
    pub indexed: u64,
    pub sessions: u64,
}

impl Building {
    pub fn say(&self) -> String {
        if self.sessions == 0 {
            // A first build, or the index as the last mount left it, not yet checked
            // against the sessions by this one.
            return "the search index is being brought up to date (looking for new and changed sessions first): results may be incomplete".into();
        }
        format!(
            "the search index is being brought up to date ({} of {} sessions so far): results may be incomplete",
            self.indexed, self.sessions
        )
    }
}

/// A search's answer.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub hits: Vec<Hit>,
    /// Set while the index is being built.
    pub building: Option<Building>,
}

#[derive(Serialize)]
struct IndexLine<'a> {
    index: IndexState<'a>,
}

#[derive(Serialize)]
struct IndexState<'a> {
    complete: bool,
    indexed: u64,
    sessions: u64,
    note: &'a str,
}

impl Answer {
    /// An answer from its `--json` lines (a mount's `hits.jsonl`); `None` for a line
    /// that is neither the index line nor a hit.
    pub fn from_jsonl(bytes: &[u8]) -> Option<Answer> {
        #[derive(Deserialize)]
        struct Line {
            index: IndexRead,
        }
        #[derive(Deserialize)]
        struct IndexRead {
            complete: bool,
            indexed: u64,
            sessions: u64,
        }
        let mut answer = Answer::default();
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            if answer.hits.is_empty()
                && answer.building.is_none()
                && let Ok(l) = serde_json::from_slice::<Line>(line)
            {
                if !l.index.complete {
                    answer.building = Some(Building {
                        indexed: l.index.indexed,
                        sessions: l.index.sessions,
                    });
                }
                continue;
            }
            answer.hits.push(serde_json::from_slice(line).ok()?);
        }
        Some(answer)
    }

    /// The `--json` lines: while the index is built, a first line
    /// `{"index":{"complete":false,...}}`; then one hit per line, best first.
    pub fn jsonl(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(b) = &self.building {
            let note = b.say();
            let line = IndexLine {
                index: IndexState {
                    complete: false,
                    indexed: b.indexed,
                    sessions: b.sessions,
                    note: &note,
                },
            };
            out.extend(serde_json::to_vec(&line).expect("serializes"));
            out.push(b'\n');
        }
        for h in &self.hits {
            out.extend(serde_json::to_vec(h).expect("hit serializes"));
            out.push(b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(n: u32, kept: Option<bool>) -> Hit {
        Hit {
            id: format!("id-{n}"),
            agent: "claude".into(),
            host: "here".into(),
            cwd: Some("/w \"quoted\"".into()),
            namespace: "w".into(),
            dir: format!("d{n}"),
            path: format!("w/d{n}"),
            title: None,
            preview: Some("p\nq".into()),
            updated_at: Some("2026-01-01T00:00:00Z".into()),
            role: "user".into(),
            timestamp: None,
            entry: Some("e".into()),
            in_conversation: n.is_multiple_of(2),
            snippet: "a **b** c".into(),
            score: 1.0 / (n as f32 + 3.0),
            kept,
            source_deleted: kept,
            parent: None,
            store_namespace: String::new(),
        }
    }

    /// `fen-fs search` reads a mount's `hits.jsonl` back: the same lines again,
    /// scores to the last digit, the index line included.
    #[test]
    fn an_answer_read_back_from_its_lines_writes_the_same_lines() {
        for building in [
            None,
            Some(Building {
                indexed: 3,
                sessions: 9,
            }),
        ] {
            let a = Answer {
                hits: vec![hit(1, None), hit(2, Some(true))],
                building,
            };
            let lines = a.jsonl();
            let back = Answer::from_jsonl(&lines).expect("reads back");
            assert_eq!(back.hits, a.hits);
            assert_eq!(back.building, a.building);
            assert_eq!(back.jsonl(), lines);
        }
        assert!(Answer::from_jsonl(b"{\"not\":\"a hit\"}\n").is_none());
        assert!(Answer::from_jsonl(b"").is_some_and(|a| a.hits.is_empty()));
    }
}
