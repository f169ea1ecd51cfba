//! Reader of one Cline (or Roo Code) session's dump (`sources/whole_json.rs`: a
//! section per file, a header line naming it, then its array one element a line). It
//! rebuilds what the agent sends when the session is resumed:
//!
//! - Cline 3.x (`<id>.json`, `<id>.compaction.json`, `<id>.messages.json`): the
//!   messages not marked `displayOnly`, and when a compaction applies to them
//!   (`projectSessionCompactionState`: its recorded SHA-256 of the first messages
//!   matches, or, without one, the message at its boundary has its key) its compacted
//!   messages followed by the messages after its boundary.
//! - Cline's task folders (2.x CLI, the VS Code extension before 3.x:
//!   `api_conversation_history.json`, with `state/taskHistory.json`'s entry): the API
//!   history with the truncation it records applied (the first two messages, then
//!   those after `conversationHistoryDeletedRange[1]`, tool results at the cut
//!   dropped).
//! - Roo Code's task folders (`history_item.json`, `api_conversation_history.json`):
//!   `getEffectiveApiHistory` (from the newest summary on, orphaned tool results
//!   dropped; messages condensed or truncated away by a marker that exists left out).
//!
//! Messages are byte ranges of the dump; a message whose content a rule changes is
//! its own bytes around the kept blocks' ranges.

use super::format;
use crate::json::RawObject;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// Which file a section of the dump is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    /// Cline 3.x `<id>.json`.
    Session,
    Compaction,
    Messages,
    /// Cline's `task_metadata.json`.
    TaskMetadata,
    /// Cline's `state/taskHistory.json` entry of this task.
    HistoryEntry,
    /// Roo Code's `history_item.json`.
    RooItem,
    Api,
    Ui,
    Other,
}

fn section_of(name: &str) -> Section {
    match name {
        "task_metadata.json" => Section::TaskMetadata,
        "state/taskHistory.json" => Section::HistoryEntry,
        "history_item.json" => Section::RooItem,
        "api_conversation_history.json" => Section::Api,
        "ui_messages.json" => Section::Ui,
        n if n.ends_with(".compaction.json") => Section::Compaction,
        n if n.ends_with(".messages.json") => Section::Messages,
        n if n.ends_with(".json") => Section::Session,
        _ => Section::Other,
    }
}

/// One content block of a message, where a rule may drop it.
#[derive(Debug, Clone)]
struct Block {
    start: u64,
    len: u64,
    /// `tool_use_id` of a `tool_result` block.
    result_of: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Msg {
    start: u64,
    len: u64,
    role: String,
    id: Option<String>,
    ts: Option<i64>,
    display_only: bool,
    /// 3.x: `metadata.kind == "compaction_summary"`; Roo: `isSummary`.
    summary: bool,
    /// The `content` array's place in the line and its blocks (when an array).
    content: Option<(u64, u64)>,
    blocks: Vec<Block>,
    /// `tool_use` ids of its blocks.
    tool_uses: Vec<String>,
    /// Roo Code's condense and truncation tags.
    condense_id: Option<String>,
    condense_parent: Option<String>,
    truncation_id: Option<String>,
    truncation_parent: Option<String>,
    truncation_marker: bool,
    /// A user's first text as the agent shows it (for the preview).
    text: Option<String>,
}

impl Msg {
    fn has_results(&self) -> bool {
        self.blocks.iter().any(|b| b.result_of.is_some())
    }
}

/// A message as `conversation.json` gives it: whole, or with only some blocks.
#[derive(Debug, Clone)]
struct Sent<'a> {
    msg: &'a Msg,
    /// `Some`: the content is these blocks only.
    keep: Option<Vec<&'a Block>>,
}

#[derive(Debug, Default)]
struct Compaction {
    count: usize,
    hash: Option<String>,
    last_key: Option<String>,
    messages: Vec<Msg>,
}

#[derive(Default)]
pub struct ClineReader {
    section: Option<Section>,
    /// The section's file could not be read (why), by file name.
    unreadable: Vec<(String, String)>,
    lines: u64,
    malformed: u64,
    // Cline 3.x.
    session_id: Option<String>,
    cwd: Option<String>,
    title: Option<String>,
    prompt: Option<String>,
    started_at: Option<String>,
    updated_at: Option<String>,
    ended_at: Option<String>,
    parent_id: Option<String>,
    compaction: Option<Compaction>,
    /// Hash inputs of the first messages (while a compaction's count is not reached).
    hash_inputs: Vec<String>,
    /// The boundary message's key, once met.
    boundary_key: Option<String>,
    messages: Vec<Msg>,
    messages_seen: bool,
    // Task folders.
    task_id: Option<String>,
    deleted_end: Option<i64>,
    roo: bool,
    task_text: Option<String>,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    api: Vec<Msg>,
    api_seen: bool,
    archived: bool,
}

fn string_of(o: &RawObject, k: &str) -> Option<String> {
    o.get(k).and_then(crate::json::as_string)
}

fn ms_of(o: &RawObject, k: &str) -> Option<i64> {
    o.get(k)
        .and_then(|v| v.get().parse::<f64>().ok())
        .filter(|f| f.is_finite())
        .map(|f| f as i64)
}

fn rfc3339_ms(ms: i64) -> Option<String> {
    let t = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)?;
    Some(crate::store::naming::timestamp(t))
}

/// An RFC 3339 time as stored, normalized to fen's form.
fn rfc3339(s: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    Some(crate::store::naming::timestamp(
        t.with_timezone(&chrono::Utc),
    ))
}

/// Where `inner` (a slice of `outer`) starts in it.
fn at(outer: &str, inner: &str) -> u64 {
    crate::json::offset_in(outer, inner) as u64
}

/// One stored message line: its facts and its blocks' places.
fn message(start: u64, text: &str) -> Option<Msg> {
    let o = RawObject::parse(text).ok()?;
    let role = string_of(&o, "role")?;
    let mut m = Msg {
        start,
        len: text.len() as u64,
        id: string_of(&o, "id"),
        ts: ms_of(&o, "ts"),
        condense_id: string_of(&o, "condenseId"),
        condense_parent: string_of(&o, "condenseParent"),
        truncation_id: string_of(&o, "truncationId"),
        truncation_parent: string_of(&o, "truncationParent"),
        truncation_marker: o
            .get("isTruncationMarker")
            .is_some_and(|v| v.get() == "true"),
        ..Msg::default()
    };
    if let Some(meta) = o.get("metadata")
        && let Ok(meta) = RawObject::parse(meta.get())
    {
        m.display_only = meta.get("displayOnly").is_some_and(|v| v.get() == "true");
        m.summary = string_of(&meta, "kind").as_deref() == Some("compaction_summary");
    }
    m.summary |= o.get("isSummary").is_some_and(|v| v.get() == "true");
    match o.get("content") {
        Some(c) if c.get().starts_with('[') => {
            m.content = Some((start + at(text, c.get()), c.get().len() as u64));
            let blocks: Vec<&serde_json::value::RawValue> =
                serde_json::from_str(c.get()).unwrap_or_default();
            for b in blocks {
                let bo = RawObject::parse(b.get()).ok();
                let ty = bo.as_ref().and_then(|o| string_of(o, "type"));
                let result_of = match ty.as_deref() {
                    Some("tool_result") => Some(
                        bo.as_ref()
                            .and_then(|o| string_of(o, "tool_use_id"))
                            .unwrap_or_default(),
                    ),
                    Some("tool_use") => {
                        if let Some(id) = bo.as_ref().and_then(|o| string_of(o, "id")) {
                            m.tool_uses.push(id);
                        }
                        None
                    }
                    Some("text") if role == "user" && m.text.is_none() => {
                        m.text = bo.as_ref().and_then(|o| string_of(o, "text"));
                        None
                    }
                    _ => None,
                };
                m.blocks.push(Block {
                    start: start + at(text, b.get()),
                    len: b.get().len() as u64,
                    result_of,
                });
            }
        }
        Some(c) if role == "user" => m.text = crate::json::as_string(c),
        _ => {}
    }
    m.role = role;
    Some(m)
}

impl ClineReader {
    pub fn new() -> Self {
        ClineReader::default()
    }

    /// A reader of Roo Code's task folders (its resume rules, whatever files exist).
    pub fn roo() -> Self {
        ClineReader {
            roo: true,
            ..ClineReader::default()
        }
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        self.lines += 1;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.malformed += 1;
            return;
        };
        let Ok(o) = RawObject::parse(text) else {
            self.malformed += 1;
            return;
        };
        if let Some(name) = string_of(&o, "fen_file") {
            let section = section_of(&name);
            self.section = Some(section);
            if let Some(why) = string_of(&o, "fen_unreadable") {
                self.unreadable.push((name, why));
                return;
            }
            self.header(section, &o);
            return;
        }
        match self.section {
            Some(Section::Compaction) => {
                if let Some(m) = message(start, text)
                    && let Some(c) = &mut self.compaction
                {
                    c.messages.push(m);
                }
            }
            Some(Section::Messages) => {
                let Some(m) = message(start, text) else {
                    self.malformed += 1;
                    return;
                };
                if !m.display_only
                    && let Some(c) = &self.compaction
                {
                    let n = self.messages.iter().filter(|m| !m.display_only).count() + 1;
                    if c.hash.is_some() && n <= c.count {
                        self.hash_inputs
                            .push(format::hash_input(text).unwrap_or_default());
                    }
                    if n == c.count {
                        self.boundary_key = format::boundary_key(text);
                    }
                }
                self.messages.push(m);
            }
            Some(Section::Api) => {
                let Some(m) = message(start, text) else {
                    self.malformed += 1;
                    return;
                };
                self.api.push(m);
            }
            Some(Section::Ui) => {
                let ts = ms_of(&o, "ts");
                if let Some(ts) = ts {
                    self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
                    self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
                }
                if self.task_text.is_none() && string_of(&o, "say").as_deref() == Some("task") {
                    self.task_text = string_of(&o, "text");
                }
            }
            _ => {}
        }
    }

    fn header(&mut self, section: Section, o: &RawObject) {
        match section {
            Section::Session => {
                self.session_id = string_of(o, "session_id");
                self.cwd = string_of(o, "cwd").or_else(|| string_of(o, "workspace_root"));
                self.started_at = string_of(o, "started_at");
                self.ended_at = string_of(o, "ended_at");
                self.parent_id = string_of(o, "parent_session_id");
                self.prompt = string_of(o, "prompt");
                if let Some(meta) = o.get("metadata")
                    && let Ok(meta) = RawObject::parse(meta.get())
                {
                    self.title = string_of(&meta, "title");
                }
            }
            Section::Compaction => {
                self.compaction = Some(Compaction {
                    count: ms_of(o, "source_message_count").unwrap_or(0).max(0) as usize,
                    hash: string_of(o, "source_prefix_hash"),
                    last_key: string_of(o, "source_last_message_key"),
                    messages: Vec::new(),
                });
            }
            Section::Messages => {
                self.messages_seen = true;
                self.updated_at = string_of(o, "updated_at");
                if self.session_id.is_none() {
                    self.session_id = string_of(o, "sessionId");
                }
            }
            Section::HistoryEntry => {
                self.task_id = string_of(o, "id");
                self.cwd = string_of(o, "cwdOnTaskInitialization");
                self.title = string_of(o, "task");
                self.deleted_end = o
                    .get("conversationHistoryDeletedRange")
                    .and_then(|r| serde_json::from_str::<Vec<Value>>(r.get()).ok())
                    .and_then(|r| r.get(1).and_then(Value::as_i64));
            }
            Section::RooItem => {
                self.roo = true;
                self.task_id = string_of(o, "id");
                self.cwd = string_of(o, "workspace");
                self.title = string_of(o, "task");
                self.parent_id = string_of(o, "parentTaskId");
                self.first_ts = ms_of(o, "ts");
            }
            Section::Api => self.api_seen = true,
            _ => {}
        }
    }

    fn is_task(&self) -> bool {
        self.api_seen || self.roo || self.task_id.is_some()
    }

    /// Why the agent could not resume the session, if it could not.
    fn not_resumable(&self) -> Option<String> {
        let file = if self.is_task() {
            "api_conversation_history.json"
        } else {
            ".messages.json"
        };
        if let Some((name, why)) = self
            .unreadable
            .iter()
            .find(|(n, _)| n.ends_with(file) || n.ends_with(".compaction.json"))
        {
            return Some(format!("{name} cannot be read now: {why}"));
        }
        let (seen, messages) = if self.is_task() {
            (self.api_seen, &self.api)
        } else {
            (self.messages_seen, &self.messages)
        };
        if !seen {
            return Some(format!("the session has no {file} file"));
        }
        if messages.is_empty() {
            return Some("the session holds no messages".into());
        }
        None
    }

    /// Whether the 3.x compaction applies to the stored messages.
    fn compaction_applies(&self) -> bool {
        let Some(c) = &self.compaction else {
            return false;
        };
        let kept = self.messages.iter().filter(|m| !m.display_only).count();
        if c.count > kept {
            return false;
        }
        match &c.hash {
            Some(h) => format::prefix_hash(&self.hash_inputs, c.count) == *h,
            None => c.count > 0 && c.last_key.is_some() && self.boundary_key == c.last_key,
        }
    }

    /// The messages the agent resumes with.
    fn resumed(&self) -> Vec<Sent<'_>> {
        fn whole(msg: &Msg) -> Sent<'_> {
            Sent { msg, keep: None }
        }
        if !self.is_task() {
            let kept: Vec<&Msg> = self.messages.iter().filter(|m| !m.display_only).collect();
            if self.compaction_applies() {
                let c = self.compaction.as_ref().unwrap();
                return c
                    .messages
                    .iter()
                    .chain(kept[c.count..].iter().copied())
                    .map(whole)
                    .collect();
            }
            return kept.into_iter().map(whole).collect();
        }
        if self.roo {
            return roo_effective(&self.api);
        }
        // Cline's classic truncation.
        let n = self.api.len() as i64;
        match self.deleted_end {
            Some(end) if end >= 2 && end < n - 1 => {
                let mut out: Vec<Sent> = self.api[..2].iter().map(whole).collect();
                for (i, m) in self.api[(end + 1) as usize..].iter().enumerate() {
                    if i == 0 && m.role == "user" && m.content.is_some() && m.has_results() {
                        let keep = m.blocks.iter().filter(|b| b.result_of.is_none()).collect();
                        out.push(Sent {
                            msg: m,
                            keep: Some(keep),
                        });
                    } else {
                        out.push(whole(m));
                    }
                }
                out
            }
            _ => self.api.iter().map(whole).collect(),
        }
    }

    fn all_messages(&self) -> Vec<&Msg> {
        let mut out: Vec<&Msg> = Vec::new();
        if let Some(c) = &self.compaction {
            out.extend(c.messages.iter());
        }
        out.extend(self.messages.iter());
        out.extend(self.api.iter());
        out
    }
}

/// Roo Code's `getEffectiveApiHistory` (Roo-Code cb836567,
/// `src/core/condense/index.ts`).
fn roo_effective(messages: &[Msg]) -> Vec<Sent<'_>> {
    fn whole(msg: &Msg) -> Sent<'_> {
        Sent { msg, keep: None }
    }
    if let Some(from) = messages.iter().rposition(|m| m.summary) {
        let after = &messages[from..];
        let uses: HashSet<&str> = after
            .iter()
            .filter(|m| m.role == "assistant")
            .flat_map(|m| m.tool_uses.iter().map(String::as_str))
            .collect();
        let mut out: Vec<Sent> = Vec::new();
        for m in after {
            if m.role == "user" && m.content.is_some() && m.has_results() {
                let keep: Vec<&Block> = m
                    .blocks
                    .iter()
                    .filter(|b| b.result_of.as_deref().is_none_or(|id| uses.contains(id)))
                    .collect();
                if keep.is_empty() {
                    continue;
                }
                if keep.len() != m.blocks.len() {
                    out.push(Sent {
                        msg: m,
                        keep: Some(keep),
                    });
                    continue;
                }
            }
            out.push(whole(m));
        }
        let markers: HashSet<&str> = out
            .iter()
            .filter(|s| s.msg.truncation_marker)
            .filter_map(|s| s.msg.truncation_id.as_deref())
            .collect();
        return out
            .into_iter()
            .filter(|s| {
                s.msg
                    .truncation_parent
                    .as_deref()
                    .is_none_or(|p| !markers.contains(p))
            })
            .collect();
    }
    let summaries: HashSet<&str> = messages
        .iter()
        .filter(|m| m.summary)
        .filter_map(|m| m.condense_id.as_deref())
        .collect();
    let markers: HashSet<&str> = messages
        .iter()
        .filter(|m| m.truncation_marker)
        .filter_map(|m| m.truncation_id.as_deref())
        .collect();
    messages
        .iter()
        .filter(|m| {
            m.condense_parent
                .as_deref()
                .is_none_or(|p| !summaries.contains(p))
                && m.truncation_parent
                    .as_deref()
                    .is_none_or(|p| !markers.contains(p))
        })
        .map(whole)
        .collect()
}

fn pieces(s: &Sent) -> MessagePieces {
    let m = s.msg;
    let (Some(keep), Some((cstart, clen))) = (&s.keep, m.content) else {
        return vec![Piece::Range {
            start: m.start,
            len: m.len,
        }];
    };
    let mut out = vec![
        Piece::Range {
            start: m.start,
            len: cstart - m.start,
        },
        Piece::Text("[".into()),
    ];
    for (i, b) in keep.iter().enumerate() {
        if i > 0 {
            out.push(Piece::Text(",".into()));
        }
        out.push(Piece::Range {
            start: b.start,
            len: b.len,
        });
    }
    out.push(Piece::Text("]".into()));
    let end = cstart + clen;
    out.push(Piece::Range {
        start: end,
        len: m.start + m.len - end,
    });
    out
}

impl ForeignReader for ClineReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            self.line(offset + consumed as u64, &bytes[consumed..consumed + nl]);
            consumed += nl + 1;
        }
        consumed as u64
    }

    /// A dump is made anew whenever a file of the session changes.
    fn follows_appends(&self) -> bool {
        false
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let reason = self.not_resumable();
        let resumed = if reason.is_none() {
            self.resumed()
        } else {
            Vec::new()
        };
        let mut roles = BTreeMap::new();
        for s in &resumed {
            *roles.entry(s.msg.role.clone()).or_insert(0) += 1;
        }
        let first_user = if self.is_task() {
            self.task_text
                .clone()
                .or_else(|| self.api.iter().find(|m| m.role == "user")?.text.clone())
        } else {
            self.messages
                .iter()
                .find(|m| m.role == "user" && !m.display_only)
                .and_then(|m| m.text.clone())
                .or_else(|| self.prompt.clone())
        };
        let preview = first_user
            .map(|t| format::display_user_input(&t))
            .filter(|t| !t.is_empty())
            .map(|t| crate::store::index::one_line(&t, 200));
        let (created_at, updated_at) = if self.is_task() {
            (
                self.first_ts.and_then(rfc3339_ms),
                self.last_ts
                    .or_else(|| self.api.iter().filter_map(|m| m.ts).max())
                    .and_then(rfc3339_ms),
            )
        } else {
            (
                self.started_at.as_deref().and_then(rfc3339),
                self.updated_at
                    .as_deref()
                    .or(self.ended_at.as_deref())
                    .and_then(rfc3339),
            )
        };
        let compactions = if self.is_task() {
            self.api.iter().filter(|m| m.summary).count() as u64
        } else {
            self.compaction.is_some() as u64
        };
        ForeignSummary {
            id: self
                .session_id
                .clone()
                .or_else(|| self.task_id.clone())
                .unwrap_or_default(),
            cwd: self.cwd.clone(),
            title: self
                .title
                .clone()
                .map(|t| crate::store::index::one_line(&format::display_user_input(&t), 200))
                .filter(|t| !t.is_empty()),
            preview,
            created_at,
            updated_at,
            listed: self.parent_id.is_none(),
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages: resumed.len() as u64,
            roles,
            compactions,
            archived: self.archived,
            parent_id: self.parent_id.clone(),
            resume_rules: None,
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        if self.not_resumable().is_some() {
            return Vec::new();
        }
        self.resumed().iter().map(pieces).collect()
    }

    fn messages(&self, _tail: &[u8], history: bool) -> Vec<MessageRef> {
        let ok = self.not_resumable().is_none();
        let resumed = if ok { self.resumed() } else { Vec::new() };
        let reference = |s: &Sent, in_conversation: bool| MessageRef {
            pieces: pieces(s),
            entry: s.msg.id.clone(),
            timestamp: s.msg.ts.and_then(rfc3339_ms),
            in_conversation,
            summary: s.msg.summary,
            ..MessageRef::default()
        };
        if !history {
            return resumed.iter().map(|s| reference(s, true)).collect();
        }
        let sent: HashSet<u64> = resumed.iter().map(|s| s.msg.start).collect();
        let mut out: Vec<MessageRef> = resumed.iter().map(|s| reference(s, true)).collect();
        for m in self.all_messages() {
            if !sent.contains(&m.start) {
                out.push(reference(&Sent { msg: m, keep: None }, false));
            }
        }
        out
    }
}
