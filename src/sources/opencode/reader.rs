//! Reader of one OpenCode session's dump (see `opencode.rs`): line 1 the session, then
//! each message followed by its parts (V1 and the JSON files), or each `session_message`
//! row (OpenCode 2). It rebuilds what OpenCode loads when the session is resumed
//! (AGENT-FORMATS-MORE.md §1.4): a pending `/undo` applied as `revert.cleanup` would,
//! then `filterCompacted` from the newest finished compaction, as `{info, parts}` per
//! message with the dump's bytes kept.

use super::Generation;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// The fields of a dump line the rules need; everything else is skipped unread, and
/// the fields that can be large (texts, contents, errors) are looked at in place.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields<'a> {
    id: Option<Value>,
    #[serde(rename = "messageID")]
    message_id: Option<Value>,
    role: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(rename = "parentID")]
    parent_id: Option<Value>,
    #[serde(borrow)]
    summary: Option<&'a RawValue>,
    #[serde(borrow)]
    finish: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(deserialize_with = "present")]
    tail_start_id: Option<Value>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    synthetic: Option<&'a RawValue>,
    #[serde(borrow)]
    ignored: Option<&'a RawValue>,
    time: Option<Value>,
    directory: Option<Value>,
    title: Option<Value>,
    revert: Option<Value>,
    status: Option<Value>,
    #[serde(rename = "providerContext", borrow)]
    provider_context: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    /// A line fen-fs writes instead of rows it could not read (why, for people).
    fen_unreadable: Option<Value>,
}

/// A key that is there, even with `null` (JavaScript's `!== undefined`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Some(Value::deserialize(d)?))
}

/// JavaScript truthiness of a JSON value (`None`: undefined).
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// The same of a raw value, without parsing what it holds.
fn truthy_raw(v: Option<&RawValue>) -> bool {
    match v.map(|r| r.get().trim()) {
        None | Some("null" | "false" | "\"\"") => false,
        Some(t) if t.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) => {
            t.parse::<f64>().is_ok_and(|f| f != 0.0)
        }
        Some(_) => true,
    }
}

fn raw_string(v: Option<&RawValue>) -> Option<String> {
    v.and_then(crate::json::as_string)
}

fn string(v: &Option<Value>) -> Option<String> {
    v.as_ref().and_then(Value::as_str).map(str::to_string)
}

/// The session line.
#[derive(Debug, Default, Clone)]
struct Session {
    id: String,
    directory: Option<String>,
    title: Option<String>,
    parent_id: Option<String>,
    created_ms: Option<f64>,
    updated_ms: Option<f64>,
    archived: bool,
    /// `revert.messageID`, `revert.partID`: an `/undo` not yet cleaned up.
    revert: Option<(String, Option<String>)>,
}

/// A compaction part's `tail_start_id`, as the rules read it.
#[derive(Debug, Clone, PartialEq)]
enum Tail {
    /// No such key (`=== undefined`).
    Absent,
    /// There, but falsy (`null`, `""`): the compaction keeps no tail.
    Falsy,
    /// The first kept message's id (any other truthy value never matches an id).
    Id(String),
}

#[derive(Debug, Clone)]
struct PartRec {
    id: String,
    start: u64,
    len: u64,
    /// `Some` for a `compaction` part.
    compaction: Option<Tail>,
    /// A user's own text (not synthetic, not ignored), for the preview.
    user_text: Option<String>,
}

#[derive(Debug, Clone)]
struct Msg {
    id: String,
    start: u64,
    len: u64,
    role: String,
    parent_id: Option<String>,
    /// `summary && finish && !error`: a finished compaction summary (V1 rules).
    summary_done: bool,
    /// `summary && finish`: the same by the JSON-storage generation's rule.
    summary_finished: bool,
    summary: bool,
    created_ms: Option<f64>,
    parts: Vec<PartRec>,
    /// OpenCode 2: a `compaction` row with `status: "completed"`, and whether it
    /// carries a provider checkpoint (skipped when no target provider is known).
    v2_compaction: Option<bool>,
}

pub struct OpencodeReader {
    generation: Generation,
    lines: u64,
    malformed: u64,
    session: Option<Session>,
    /// Why the dump holds no rows (the database or a file could not be read).
    unreadable: Option<String>,
    messages: Vec<Msg>,
    /// Parts whose message is not the line before them (the dump never writes
    /// these; a damaged or foreign file could).
    stray_parts: u64,
}

impl OpencodeReader {
    pub fn new(generation: Generation) -> Self {
        OpencodeReader {
            generation,
            lines: 0,
            malformed: 0,
            session: None,
            unreadable: None,
            messages: Vec::new(),
            stray_parts: 0,
        }
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        let len = bytes.len() as u64;
        let first = self.lines == 0;
        self.lines += 1;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(f) = serde_json::from_slice::<Fields>(bytes) else {
            self.malformed += 1;
            return;
        };
        if let Some(why) = &f.fen_unreadable {
            self.unreadable = Some(why.as_str().unwrap_or("unreadable").to_string());
            return;
        }
        if first {
            self.session = Some(session_of(&f));
            return;
        }
        let id = f.id.as_ref().and_then(Value::as_str).map(str::to_string);
        if self.generation == Generation::V2 {
            let Some(id) = id else {
                self.malformed += 1;
                return;
            };
            let kind = f.kind.clone().unwrap_or_default();
            let v2_compaction = (kind == "compaction"
                && f.status.as_ref().and_then(Value::as_str) == Some("completed"))
            .then(|| f.provider_context.is_some_and(|p| p.get().trim() != "null"));
            self.messages.push(Msg {
                id,
                start,
                len,
                role: kind,
                parent_id: None,
                summary_done: false,
                summary_finished: false,
                summary: false,
                created_ms: time_field(&f.time, "created"),
                parts: Vec::new(),
                v2_compaction,
            });
            if let Some(text) = v2_user_text(&f) {
                let m = self.messages.last_mut().expect("just pushed");
                m.parts.push(PartRec {
                    id: String::new(),
                    start,
                    len: 0,
                    compaction: None,
                    user_text: Some(text),
                });
            }
            return;
        }
        if let Some(message_id) = f.message_id.as_ref() {
            // A part: it follows its message.
            let owner = self
                .messages
                .last_mut()
                .filter(|m| Some(m.id.as_str()) == message_id.as_str());
            let (Some(m), Some(id)) = (owner, id) else {
                self.stray_parts += 1;
                return;
            };
            let kind = f.kind.as_deref().unwrap_or("");
            let compaction = (kind == "compaction").then(|| match &f.tail_start_id {
                None => Tail::Absent,
                Some(v) if !truthy(Some(v)) => Tail::Falsy,
                Some(Value::String(s)) => Tail::Id(s.clone()),
                Some(_) => Tail::Id("\0never an id".into()),
            });
            let user_text = (m.role == "user"
                && kind == "text"
                && !truthy_raw(f.synthetic)
                && !truthy_raw(f.ignored))
            .then(|| raw_string(f.text))
            .flatten();
            m.parts.push(PartRec {
                id,
                start,
                len,
                compaction,
                user_text,
            });
            return;
        }
        let (Some(id), Some(role)) = (id, f.role.clone()) else {
            self.malformed += 1;
            return;
        };
        let summary = truthy_raw(f.summary);
        let finish = truthy_raw(f.finish);
        self.messages.push(Msg {
            id,
            start,
            len,
            role,
            parent_id: string(&f.parent_id),
            summary_done: summary && finish && !truthy_raw(f.error),
            summary_finished: summary && finish,
            summary,
            created_ms: time_field(&f.time, "created"),
            parts: Vec::new(),
            v2_compaction: None,
        });
    }

    /// Why OpenCode could not resume this session, if it could not.
    fn not_resumable(&self, conversation: &[&Msg]) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(why.clone());
        }
        if self.session.as_ref().is_none_or(|s| s.id.is_empty()) {
            return Some("the session's row or file is missing or has no id".into());
        }
        if self.malformed > 0 {
            return Some(format!(
                "{} stored row(s) are not valid JSON: OpenCode fails to load the session",
                self.malformed
            ));
        }
        if self.generation != Generation::V2 && !conversation.iter().any(|m| m.role == "user") {
            return Some(
                "no user message to continue from (OpenCode: \"No user message found in stream\")"
                    .into(),
            );
        }
        if self.generation == Generation::V2 && conversation.is_empty() {
            return Some("no messages".into());
        }
        None
    }

    /// The messages OpenCode resumes with, in order (each with the parts it keeps).
    fn resumed(&self) -> Vec<Msg> {
        if self.unreadable.is_some() || self.malformed > 0 {
            return Vec::new();
        }
        match self.generation {
            Generation::V2 => v2_history(&self.messages),
            Generation::V1 => {
                let kept = revert_cleanup_v1(&self.messages, self.revert());
                filter_compacted(kept, true)
            }
            Generation::Storage => {
                let kept = revert_cleanup_storage(&self.messages, self.revert());
                filter_compacted(kept, false)
            }
        }
    }

    fn revert(&self) -> Option<&(String, Option<String>)> {
        self.session.as_ref().and_then(|s| s.revert.as_ref())
    }

    fn pieces(&self, m: &Msg) -> MessagePieces {
        if self.generation == Generation::V2 {
            return vec![Piece::Range {
                start: m.start,
                len: m.len,
            }];
        }
        let mut out = vec![
            Piece::Text("{\"info\":".into()),
            Piece::Range {
                start: m.start,
                len: m.len,
            },
            Piece::Text(",\"parts\":[".into()),
        ];
        for (i, p) in m.parts.iter().enumerate() {
            if i > 0 {
                out.push(Piece::Text(",".into()));
            }
            out.push(Piece::Range {
                start: p.start,
                len: p.len,
            });
        }
        out.push(Piece::Text("]}".into()));
        out
    }
}

fn time_field(time: &Option<Value>, key: &str) -> Option<f64> {
    time.as_ref()?.get(key)?.as_f64()
}

fn session_of(f: &Fields) -> Session {
    let revert = f.revert.as_ref().and_then(|r| {
        let message = r.get("messageID")?.as_str()?.to_string();
        let part = r
            .get("partID")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string);
        Some((message, part))
    });
    Session {
        id: string(&f.id).unwrap_or_default(),
        directory: string(&f.directory),
        title: string(&f.title),
        parent_id: string(&f.parent_id),
        created_ms: time_field(&f.time, "created"),
        updated_ms: time_field(&f.time, "updated"),
        archived: f
            .time
            .as_ref()
            .and_then(|t| t.get("archived"))
            .is_some_and(|a| !a.is_null()),
        revert,
    }
}

/// OpenCode 2 user text, for the preview (`data.text`, or text items of `content`).
fn v2_user_text(f: &Fields) -> Option<String> {
    if f.kind.as_deref() != Some("user") {
        return None;
    }
    if let Some(t) = raw_string(f.text) {
        return Some(t);
    }
    let content: Value = serde_json::from_str(f.content?.get()).ok()?;
    content.as_array()?.iter().find_map(|c| {
        (c.get("type")?.as_str()? == "text")
            .then(|| c.get("text")?.as_str().map(str::to_string))
            .flatten()
    })
}

/// `SessionRevert.cleanup` of 1.2 – 1.18 (OC-BIN 1.18.33): the messages from the
/// reverted one on are removed (from the one after it, when a part is named, and
/// then that message's parts from the named part on); nothing if it is not found.
fn revert_cleanup_v1(messages: &[Msg], revert: Option<&(String, Option<String>)>) -> Vec<Msg> {
    let mut kept = messages.to_vec();
    let Some((message_id, part_id)) = revert else {
        return kept;
    };
    let Some(b) = kept.iter().position(|m| &m.id == message_id) else {
        return kept;
    };
    kept.truncate(b + usize::from(part_id.is_some()));
    if let Some(part) = part_id
        && let Some(at) = kept[b].parts.iter().position(|p| &p.id == part)
    {
        kept[b].parts.truncate(at);
    }
    kept
}

/// The same in 1.1.x (JSON files): the reverted message and every later one go; with
/// a part named, the parts of the last kept message from that part on go too.
fn revert_cleanup_storage(messages: &[Msg], revert: Option<&(String, Option<String>)>) -> Vec<Msg> {
    let mut kept = messages.to_vec();
    let Some((message_id, part_id)) = revert else {
        return kept;
    };
    if let Some(b) = kept.iter().position(|m| &m.id == message_id) {
        kept.truncate(b);
    }
    if let Some(part) = part_id
        && let Some(last) = kept.last_mut()
        && let Some(at) = last.parts.iter().position(|p| &p.id == part)
    {
        last.parts.truncate(at);
    }
    kept
}

/// `MessageV2.filterCompacted` over messages in stored order. `tails` selects the
/// 1.2+ rule (an errored summary does not count; a compaction may keep a tail of
/// messages from `tail_start_id`, moved after the summary) over 1.1's.
fn filter_compacted(chronological: Vec<Msg>, tails: bool) -> Vec<Msg> {
    // Walk newest first, as OpenCode streams them.
    let mut out: Vec<Msg> = Vec::new();
    let mut done: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut until: Option<String> = None;
    for m in chronological.into_iter().rev() {
        let (id, role) = (m.id.clone(), m.role.clone());
        let compaction = m.parts.iter().find_map(|p| p.compaction.clone());
        let finished = if tails {
            m.summary_done
        } else {
            m.summary_finished
        };
        let parent = m.parent_id.clone();
        out.push(m);
        if let Some(target) = &until {
            if &id == target {
                break;
            }
            continue;
        }
        if role == "user" && done.contains(&id) {
            let Some(tail) = compaction else { continue };
            match tail {
                Tail::Id(target) if tails => {
                    if target == id {
                        break;
                    }
                    until = Some(target);
                    continue;
                }
                _ => break,
            }
        }
        if role == "assistant"
            && finished
            && let Some(p) = parent
        {
            done.insert(p);
        }
    }
    out.reverse();
    if !tails {
        return out;
    }
    // The newest compaction that names a tail: [compaction … summary] + [tail …
    // compaction) + [after the summary], when the tail lies before it.
    let Some(w) = out.iter().rposition(|m| {
        m.role == "user"
            && m.parts
                .iter()
                .any(|p| p.compaction.as_ref().is_some_and(|t| *t != Tail::Absent))
    }) else {
        return out;
    };
    let tail = out[w]
        .parts
        .iter()
        .find_map(|p| p.compaction.clone().filter(|t| *t != Tail::Absent));
    let user_id = out[w].id.clone();
    let j = out.iter().enumerate().position(|(i, m)| {
        i > w && m.role == "assistant" && m.summary && m.parent_id.as_deref() == Some(&user_id)
    });
    let v = match tail {
        Some(Tail::Id(t)) => out.iter().position(|m| m.id == t),
        _ => None,
    };
    if let (Some(v), Some(j)) = (v, j)
        && v < w
    {
        let mut reordered = Vec::with_capacity(out.len());
        reordered.extend_from_slice(&out[w..=j]);
        reordered.extend_from_slice(&out[v..w]);
        reordered.extend_from_slice(&out[j + 1..]);
        return reordered;
    }
    out
}

/// OpenCode 2's history (`SessionHistory.load`, OC-V2): from the newest completed
/// compaction that carries no provider checkpoint (those need the target provider,
/// unknown here, and are skipped), in `seq` order; completed compactions with a
/// checkpoint are left out.
fn v2_history(rows: &[Msg]) -> Vec<Msg> {
    let from = rows
        .iter()
        .rposition(|m| m.v2_compaction == Some(false))
        .unwrap_or(0);
    rows[from..]
        .iter()
        .filter(|m| m.v2_compaction != Some(true))
        .cloned()
        .collect()
}

fn rfc3339_ms(ms: f64) -> Option<String> {
    let t = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms as i64)?;
    Some(crate::store::naming::timestamp(t))
}

impl ForeignReader for OpencodeReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            let line = &bytes[consumed..consumed + nl];
            self.line(offset + consumed as u64, line);
            consumed += nl + 1;
        }
        consumed as u64
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let resumed = self.resumed();
        let refs: Vec<&Msg> = resumed.iter().collect();
        let reason = self.not_resumable(&refs);
        let mut roles = BTreeMap::new();
        let conversation = if reason.is_some() { &[][..] } else { &refs[..] };
        for m in conversation {
            *roles.entry(m.role.clone()).or_insert(0) += 1;
        }
        let s = self.session.clone().unwrap_or_default();
        let preview = self
            .messages
            .iter()
            .filter(|m| m.role == "user")
            .flat_map(|m| m.parts.iter())
            .find_map(|p| p.user_text.as_deref())
            .map(|t| crate::store::index::one_line(t, 200));
        let compactions = self
            .messages
            .iter()
            .filter(|m| m.v2_compaction.is_some() || m.parts.iter().any(|p| p.compaction.is_some()))
            .count() as u64;
        ForeignSummary {
            id: s.id.clone(),
            cwd: s.directory.clone(),
            title: s.title.clone(),
            preview,
            created_at: s.created_ms.and_then(rfc3339_ms),
            updated_at: s.updated_ms.and_then(rfc3339_ms),
            // The session list shows root sessions that are not archived.
            listed: self.session.is_some() && s.parent_id.is_none() && !s.archived,
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: self.lines - self.malformed,
            malformed_lines: self.malformed,
            messages: conversation.len() as u64,
            roles,
            compactions,
            archived: s.archived,
            parent_id: s.parent_id.clone(),
            resume_rules: (self.generation == Generation::V2).then(|| "best effort".into()),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        let resumed = self.resumed();
        let refs: Vec<&Msg> = resumed.iter().collect();
        if self.not_resumable(&refs).is_some() {
            return Vec::new();
        }
        resumed.iter().map(|m| self.pieces(m)).collect()
    }

    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let resumed = self.resumed();
        let refs: Vec<&Msg> = resumed.iter().collect();
        let ok = self.not_resumable(&refs).is_none();
        let in_conv: std::collections::HashSet<&str> = if ok {
            resumed.iter().map(|m| m.id.as_str()).collect()
        } else {
            Default::default()
        };
        let time = |m: &Msg| m.created_ms.and_then(rfc3339_ms);
        let reference = |m: &Msg, in_conversation: bool| MessageRef {
            pieces: self.pieces(m),
            entry: Some(m.id.clone()),
            timestamp: time(m),
            in_conversation,
            // A compaction's summary (a user message's `summary` is its diff digest).
            summary: m.summary && m.role == "assistant",
            ..MessageRef::default()
        };
        if !history {
            let _ = tail;
            return if ok {
                resumed.iter().map(|m| reference(m, true)).collect()
            } else {
                Vec::new()
            };
        }
        // Every stored message, in stored order; those the resume leaves out marked.
        // (A reordered tail keeps stored order here: this list is for search.)
        self.messages
            .iter()
            .map(|m| reference(m, in_conv.contains(m.id.as_str())))
            .collect()
    }
}
