//! Reader of Cursor agent CLI transcripts (`~/.cursor/projects/<slug>/agent-transcripts/
//! <id>/<id>.jsonl` or `<id>.jsonl`), see AGENT-FORMATS-MORE.md §4. Cursor is closed
//! source; the facts come from the readers cited there (CX-IMP = Codex's importer
//! `detect_cursor.rs`, SS, AS).
//!
//! A transcript is a readable log, `{role, message: {content: [blocks]}}` per line
//! (and, since 2026.06, roleless `{type: "turn_ended"}` lines): no timestamps, no cwd.
//! Cursor resumes from the session's `store.db` (`chats/<md5 of cwd>/<id>/store.db`),
//! not from this file, so a transcript alone is not resumable: its `conversation.json`
//! is `[]` and meta.json says why; its messages still reach search (as history).
//!
//! The `cursor` source kind holds both kinds of files. When a `store.db` and a
//! transcript carry the same session id, one session is shown, the `store.db`'s
//! (`agents::prefer`): its conversation is what Cursor resumes, and the transcript
//! found by [`transcript_path`] is its `transcript.jsonl`. The `store.db` reader is
//! not this module's.

pub mod kind;
mod neutral;
pub use neutral::to_neutral;

use crate::json::{RawObject, offset_in};
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

const NOT_RESUMABLE: &str = "Cursor resumes a session from its store.db (chats/<md5 of cwd>/<id>/store.db), not from this transcript, and no store.db of this session is here";

/// The transcript of session `id` under the Cursor root, if there is one.
pub fn transcript_path(root: &Path, id: &str) -> Option<PathBuf> {
    let rd = std::fs::read_dir(root.join("projects")).ok()?;
    for project in rd.flatten() {
        let dir = project.path().join("agent-transcripts");
        for candidate in [
            dir.join(id).join(format!("{id}.jsonl")),
            dir.join(format!("{id}.jsonl")),
        ] {
            if std::fs::symlink_metadata(&candidate).is_ok_and(|m| m.is_file()) {
                return Some(candidate);
            }
        }
    }
    None
}

/// The cwd of a transcript: its project folder's name (`projects/<slug>/`) decoded.
pub fn cwd_of_path(path: &Path) -> Option<String> {
    let transcripts = path
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "agent-transcripts"))?;
    let slug = transcripts.parent()?.file_name()?.to_str()?;
    decode_slug(slug).map(|p| p.to_string_lossy().into_owned())
}

/// A project folder name back to the folder it names: the slug is the path with its
/// separators as `-` (lossy: `-` in a name looks the same), so the folders are found
/// by probing the filesystem from `/`, longest existing name first at each level
/// (CX-IMP `decode_cursor_project_path`). `None` when no existing folder fits.
pub fn decode_slug(slug: &str) -> Option<PathBuf> {
    decode_from(slug, Path::new("/"), 0).or_else(|| {
        slug.strip_prefix('-')
            .and_then(|s| decode_from(s, Path::new("/"), 0))
    })
}

fn decode_from(encoded: &str, base: &Path, depth: usize) -> Option<PathBuf> {
    if encoded.is_empty() || depth > 32 {
        return None;
    }
    let is_dir = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_dir());
    let whole = base.join(encoded);
    if is_dir(&whole) {
        return Some(whole);
    }
    for (i, _) in encoded.match_indices('-') {
        let segment = &encoded[..i];
        if segment.is_empty() {
            continue;
        }
        let candidate = base.join(segment);
        if is_dir(&candidate)
            && let Some(p) = decode_from(&encoded[i + 1..], &candidate, depth + 1)
        {
            return Some(p);
        }
    }
    None
}

/// What the transcript's place tells: the cwd (decoded from the project folder) and
/// the creation time (the file's birth time; the file holds none).
pub fn complete_from_path(path: &Path, s: &mut ForeignSummary) {
    s.cwd = cwd_of_path(path);
    if s.created_at.is_none()
        && let Ok(born) = std::fs::symlink_metadata(path).and_then(|m| m.created())
    {
        s.created_at = Some(crate::store::naming::timestamp(born.into()));
    }
}

/// One message line: where its role and content are.
#[derive(Debug, Clone)]
struct Line {
    role: Piece,
    content: Piece,
}

/// Reader of one Cursor transcript.
pub struct CursorReader {
    id: String,
    end: u64,
    lines: Vec<Line>,
    entries: u64,
    malformed: u64,
    first_prompt: Option<String>,
}

impl CursorReader {
    /// `file_name` is `<id>.jsonl`: the id is the session's (the agent id).
    pub fn new(file_name: &str) -> CursorReader {
        CursorReader {
            id: file_name
                .strip_suffix(".jsonl")
                .unwrap_or(file_name)
                .to_string(),
            end: 0,
            lines: Vec::new(),
            entries: 0,
            malformed: 0,
            first_prompt: None,
        }
    }

    /// Reads one line (no `\n`) at absolute offset `base`: `None` when blank, else
    /// whether it was a JSON object, and the message it holds.
    fn read(bytes: &[u8], base: u64) -> Option<(bool, Option<Line>, Option<String>)> {
        let (text, ranges) = match std::str::from_utf8(bytes) {
            Ok(s) => (Cow::Borrowed(s), true),
            Err(_) => (String::from_utf8_lossy(bytes), false),
        };
        let t = text.trim();
        if t.is_empty() {
            return None;
        }
        let Ok(obj) = RawObject::parse(t) else {
            return Some((false, None, None));
        };
        let piece = |v: &RawValue| {
            if ranges {
                Piece::Range {
                    start: base + offset_in(&text, v.get()) as u64,
                    len: v.get().len() as u64,
                }
            } else {
                Piece::Text(v.get().to_string())
            }
        };
        let role = field(&obj, "role");
        let content = field(&obj, "message")
            .filter(|m| m.get().starts_with('{'))
            .and_then(|m| RawObject::parse(m.get()).ok())
            .and_then(|m| field(&m, "content"));
        let (Some(role), Some(content)) = (role, content) else {
            // `turn_ended` and other roleless lines.
            return Some((true, None, None));
        };
        let prompt = (role.get() == "\"user\"")
            .then(|| prompt_text(content))
            .flatten();
        Some((
            true,
            Some(Line {
                role: piece(role),
                content: piece(content),
            }),
            prompt,
        ))
    }

    fn with_tail(&self, tail: &[u8]) -> (Option<Line>, bool) {
        match Self::read(tail, self.end) {
            None => (None, false),
            Some((true, line, _)) => (line, false),
            Some((false, _, _)) => (None, true),
        }
    }
}

/// Duplicate keys: the last wins.
fn field<'a>(obj: &RawObject<'a>, key: &str) -> Option<&'a RawValue> {
    obj.fields
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
}

/// A user line's typed text: its text blocks, without the `<user_query>` wrapper
/// Cursor puts around prompts; `None` for a tool result.
fn prompt_text(content: &RawValue) -> Option<String> {
    let blocks: Vec<serde_json::Value> = serde_json::from_str(content.get()).ok()?;
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
        .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
        .collect();
    let text = text.join("\n");
    let text = strip_user_query(&text);
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!one_line.is_empty()).then_some(one_line)
}

/// The text inside `<user_query>…</user_query>`, else the text as it is.
pub fn strip_user_query(text: &str) -> &str {
    let t = text.trim();
    t.strip_prefix("<user_query>")
        .and_then(|r| r.strip_suffix("</user_query>"))
        .map(str::trim)
        .unwrap_or(t)
}

impl ForeignReader for CursorReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut pos = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
            if let Some((ok, line, prompt)) = Self::read(&bytes[pos..pos + nl], offset + pos as u64)
            {
                if ok {
                    self.entries += 1;
                } else {
                    self.malformed += 1;
                }
                if self.first_prompt.is_none() {
                    self.first_prompt = prompt;
                }
                self.lines.extend(line);
            }
            pos += nl + 1;
        }
        self.end = offset + pos as u64;
        pos as u64
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let (extra, bad) = self.with_tail(tail);
        let tail_prompt = match (&self.first_prompt, Self::read(tail, self.end)) {
            (None, Some((_, _, p))) => p,
            _ => None,
        };
        ForeignSummary {
            id: self.id.clone(),
            preview: self.first_prompt.clone().or(tail_prompt),
            entries: self.entries + u64::from(extra.is_some()),
            malformed_lines: self.malformed + u64::from(bad),
            not_resumable_reason: Some(NOT_RESUMABLE.into()),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        Vec::new()
    }

    /// The transcript's messages as `{"role", "content"}`, all outside the
    /// conversation (nothing is resumed from this file).
    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        if !history {
            return Vec::new();
        }
        let (extra, _) = self.with_tail(tail);
        self.lines
            .iter()
            .chain(extra.iter())
            .map(|l| MessageRef {
                pieces: vec![
                    Piece::Text("{\"role\":".into()),
                    l.role.clone(),
                    Piece::Text(",\"content\":".into()),
                    l.content.clone(),
                    Piece::Text("}".into()),
                ],
                entry: None,
                timestamp: None,
                in_conversation: false,
                injected: false,
                summary: false,
                model: None,
            })
            .collect()
    }
}
