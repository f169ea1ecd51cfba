//! Reader of Qwen Code chat files (`projects/<sanitized cwd>/chats/<sessionId>.jsonl`,
//! archived ones in `chats/archive/`), checked against Qwen Code 0.24.4 itself: its
//! bundle's `SessionService` (`loadSession`, `listSessions`), `transcript-records.ts`
//! (`prepareTranscriptRecords`), `session-api-history.ts`
//! (`SessionApiHistoryAccumulator`) and `jsonl-utils.ts` (`read`,
//! `parseLineTolerant`), and sessions it wrote against a mock model
//! (`tests/agent_qwen.rs`).
//!
//! A file is a tree of records (`uuid`, `parentUuid`), one JSON object per line; a
//! line that does not parse gives the balanced `{…}` objects it holds (Qwen's
//! recovery of glued lines). Records of one `uuid` are fragments of one record, their
//! message parts concatenated. On resume Qwen walks the chain from the last
//! conversation record back to the root and turns it into the model's history: each
//! user, assistant and tool-result record's `message` (`{role, parts}`, the Gemini
//! API's `Content`) in order, a `chat_compression` record's `compressedHistory`
//! replacing everything before it, a slash command's echoed prompt taken back, and a
//! mid-turn user message merged into the user turn before it. `conversation.json` is
//! that history, one `{role, parts}` per line, byte ranges of the file.
//!
//! The listing: the id and cwd are the first record's, the title the last
//! `custom_title` record's, the preview the first user prompt among the first ten
//! records (its `displayText` when it has one), cut at 200 characters as Qwen's
//! picker cuts it.

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::json::{RawObject, offset_in};
use crate::sources::foreign::{
    ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece, restore_borsh, save_borsh,
};
use crate::sources::json_text::is_js_ws;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Whether Qwen lists a file of `chats/` as a session (`SESSION_FILE_PATTERN`:
/// `^[0-9a-fA-F-]{32,36}\.jsonl$`).
pub fn is_session_file_name(name: &str) -> bool {
    name.strip_suffix(".jsonl").is_some_and(|id| {
        (32..=36).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
    })
}

/// Whether the session file at `path` is one Qwen archived (`chats/archive/<id>.jsonl`).
pub fn is_archived_path(path: &Path) -> bool {
    path.parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "archive")
}

/// How many records the picker reads for a session's first prompt
/// (`MAX_PROMPT_SCAN_LINES`).
const PROMPT_SCAN_LINES: u32 = 10;
/// The picker's cut of a prompt, in code points (`truncatePromptForDisplay`).
const PROMPT_MAX: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Kind {
    User,
    Assistant,
    ToolResult,
    System,
}

/// A record's `message` as Qwen validates it: the `role` when a string, the `parts`
/// when an array (each element a piece).
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Msg {
    role: Option<Piece>,
    role_user: bool,
    parts: Option<Vec<Piece>>,
    /// A part is not an object: copying the history throws (`"functionCall" in part`).
    bad_part: bool,
}

/// A `chat_compression` record's `compressedHistory`.
#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Compressed {
    /// Its items, each kept as stored; whether each one is a user turn.
    Items {
        items: Vec<(Piece, bool)>,
        /// An item Qwen's copy throws on (not an object, `parts` not an array, a part
        /// not an object).
        bad: bool,
    },
    /// Truthy but not an array: Qwen's `finishSession` throws on it.
    NotArray,
}

/// One valid record: what the resume rules and the listing need of it.
#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Rec {
    uuid: String,
    parent: Option<String>,
    session: String,
    kind: Kind,
    subtype: Option<String>,
    timestamp: Option<String>,
    model: Option<String>,
    message: Option<Msg>,
    compressed: Option<Compressed>,
    /// A user record's one part when it is `{text}` alone: a hash of the text (a slash
    /// command's result takes such a prompt back when it echoes it).
    sole_text: Option<u64>,
    /// A `slash_command` result not sent to the model whose output is the assistant's
    /// alone: a hash of its `rawCommand`.
    unsent_command: Option<u64>,
}

impl Rec {
    /// `isTranscriptConversationRecord`: not an artifact or managed-session record.
    fn is_conversation(&self) -> bool {
        !(self.kind == Kind::System
            && matches!(
                self.subtype.as_deref(),
                Some(
                    "session_artifact_event"
                        | "session_artifact_snapshot"
                        | "session_sources_snapshot"
                        | "managed_session_header_v1"
                        | "managed_session_event_v1"
                        | "managed_session_commit_v1"
                )
            ))
    }
}

/// What the listing reads of the file: the first record, the first prompt, the title.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Scan {
    /// The first parsed object's `sessionId`, `cwd` and `timestamp` (when strings).
    first: Option<(Option<String>, Option<String>, Option<String>)>,
    /// Objects seen among the first `PROMPT_SCAN_LINES` lines, and the prompt found.
    scanned: u32,
    preview: Option<String>,
    title: Option<String>,
    /// The latest valid record time.
    last_time: Option<String>,
    entries: u64,
    malformed: u64,
    /// The first valid record's session id, and whether another one differs.
    session: Option<String>,
    mixed: bool,
}

#[derive(Debug, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    scan: Scan,
    records: Vec<Rec>,
    /// Non-blank lines read (the picker's scan counts lines).
    lines: u32,
    /// Where the consumed lines end.
    end: u64,
}

/// Reader of one Qwen Code chat file.
#[derive(Default)]
pub struct QwenReader {
    state: State,
}

impl QwenReader {
    pub fn new() -> QwenReader {
        QwenReader::default()
    }
}

/// Where the raw values of a record come from: byte ranges of the file when the line
/// is valid UTF-8, else the text as read.
struct Ctx<'a> {
    text: &'a str,
    base: u64,
    ranges: bool,
}

impl Ctx<'_> {
    fn piece(&self, v: &RawValue) -> Piece {
        if self.ranges {
            Piece::Range {
                start: self.base + offset_in(self.text, v.get()) as u64,
                len: v.get().len() as u64,
            }
        } else {
            Piece::Text(v.get().to_string())
        }
    }
}

/// JSON.parse keeps the last of duplicate keys.
fn field<'a>(obj: &RawObject<'a>, key: &str) -> Option<&'a RawValue> {
    obj.fields
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
}

fn first_byte(v: &RawValue) -> u8 {
    v.get().as_bytes().first().copied().unwrap_or(b'n')
}

fn string(v: Option<&RawValue>) -> Option<String> {
    let v = v?;
    (first_byte(v) == b'"')
        .then(|| serde_json::from_str::<String>(v.get()).ok())
        .flatten()
}

fn elements(v: &RawValue) -> Option<Vec<&RawValue>> {
    if first_byte(v) != b'[' {
        return None;
    }
    serde_json::from_str::<Vec<&RawValue>>(v.get()).ok()
}

fn object(v: &RawValue) -> Option<RawObject<'_>> {
    if first_byte(v) != b'{' {
        return None;
    }
    RawObject::parse(v.get()).ok()
}

/// JavaScript truthiness of a JSON value (`None`: undefined).
fn truthy(v: Option<&RawValue>) -> bool {
    let Some(v) = v else { return false };
    match first_byte(v) {
        b'n' | b'f' => false,
        b't' | b'{' | b'[' => true,
        b'"' => v.get().len() > 2,
        _ => v.get().parse::<f64>().map(|n| n != 0.0).unwrap_or(true),
    }
}

fn hash(text: &str) -> u64 {
    crate::usage_record::key_of(&[text.as_bytes()])
}

/// A time Qwen keeps (`new Date(t)` finite; RFC 3339 is what it writes).
fn valid_time(t: Option<String>) -> Option<String> {
    t.filter(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok())
}

/// The picker's cut: 200 code points, then `...`.
fn cut_prompt(text: &str) -> String {
    match text.char_indices().nth(PROMPT_MAX) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// The objects one trimmed line holds (`parseLineTolerantWithIntegrity`): the line
/// itself when it is one JSON object, else the balanced `{…}` objects in it that parse
/// (`recoverObjectsFromLine`); and whether the line was read whole.
fn objects_of(line: &str) -> (Vec<&str>, bool) {
    match serde_json::from_str::<&RawValue>(line) {
        Ok(v) if first_byte(v) == b'{' => return (vec![line], true),
        Ok(_) => return (Vec::new(), false),
        Err(_) => {}
    }
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut esc, mut start) = (0i64, false, false, None);
    let mut complete = true;
    for (i, c) in line.char_indices() {
        if esc {
            esc = false;
            continue;
        }
        if in_str {
            match c {
                '\\' => esc = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                if depth == 0 {
                    complete = false;
                }
                in_str = true;
            }
            '{' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    if let Some(s) = start.take() {
                        let fragment = &line[s..=i];
                        if serde_json::from_str::<serde::de::IgnoredAny>(fragment).is_ok() {
                            out.push(fragment);
                        } else {
                            complete = false;
                        }
                    }
                } else if depth < 0 {
                    complete = false;
                    depth = 0;
                    start = None;
                }
            }
            c if depth == 0 && !c.is_whitespace() => complete = false,
            _ => {}
        }
    }
    let complete = complete && !out.is_empty() && depth == 0 && !in_str && start.is_none();
    (out, complete)
}

/// A record's `message` as `validateTranscriptRecord` keeps it.
fn message_of(ctx: &Ctx, v: &RawValue) -> Option<Msg> {
    let o = object(v)?;
    let role = field(&o, "role").filter(|r| first_byte(r) == b'"');
    let parts = field(&o, "parts").and_then(elements);
    Some(Msg {
        role: role.map(|r| ctx.piece(r)),
        role_user: role.and_then(|r| string(Some(r))).as_deref() == Some("user"),
        bad_part: parts.as_ref().is_some_and(|ps| {
            ps.iter()
                .any(|p| first_byte(p) != b'{' && first_byte(p) != b'[')
        }),
        parts: parts.map(|ps| ps.into_iter().map(|p| ctx.piece(p)).collect()),
    })
}

/// A `compressedHistory` value (already known truthy).
fn compressed_of(ctx: &Ctx, v: &RawValue) -> Compressed {
    let Some(items) = elements(v) else {
        return Compressed::NotArray;
    };
    let mut bad = false;
    let items = items
        .into_iter()
        .map(|item| {
            let o = object(item);
            match &o {
                None => bad = true,
                Some(o) => match field(o, "parts") {
                    None => {}
                    Some(p) if first_byte(p) == b'n' => {}
                    Some(p) => match elements(p) {
                        Some(ps) => {
                            bad |= ps
                                .iter()
                                .any(|p| first_byte(p) != b'{' && first_byte(p) != b'[')
                        }
                        None => bad = true,
                    },
                },
            }
            let user = o.as_ref().and_then(|o| string(field(o, "role"))).as_deref() == Some("user");
            (ctx.piece(item), user)
        })
        .collect();
    Compressed::Items { items, bad }
}

/// `validateTranscriptRecord`: the record when its identity fields and type are valid.
fn validate(ctx: &Ctx, obj: &RawObject) -> Option<Rec> {
    let uuid = string(field(obj, "uuid")).filter(|u| !u.is_empty())?;
    let parent = match field(obj, "parentUuid") {
        Some(v) if first_byte(v) == b'n' => None,
        v => Some(string(v)?),
    };
    let session = string(field(obj, "sessionId")).filter(|s| !s.is_empty())?;
    let kind = match string(field(obj, "type"))?.as_str() {
        "user" => Kind::User,
        "assistant" => Kind::Assistant,
        "tool_result" => Kind::ToolResult,
        "system" => Kind::System,
        _ => return None,
    };
    let subtype = string(field(obj, "subtype"));
    let message = field(obj, "message").and_then(|m| message_of(ctx, m));
    let payload = field(obj, "systemPayload").and_then(object);
    let from_payload = |key: &str| payload.as_ref().and_then(|p| field(p, key));
    let mut compressed = None;
    let mut unsent_command = None;
    if kind == Kind::System {
        match subtype.as_deref() {
            Some("chat_compression") => {
                let history = from_payload("compressedHistory");
                if truthy(history) {
                    compressed = history.map(|h| compressed_of(ctx, h));
                }
            }
            Some("slash_command") => {
                let phase = string(from_payload("phase"));
                let sent = from_payload("sentToModel").is_some_and(|v| v.get() == "true");
                let items = from_payload("outputHistoryItems").and_then(elements);
                let all_assistant = items.as_ref().is_some_and(|items| {
                    !items.is_empty()
                        && items.iter().all(|i| {
                            object(i).and_then(|o| string(field(&o, "type"))).as_deref()
                                == Some("assistant")
                        })
                });
                if phase.as_deref() == Some("result") && !sent && all_assistant {
                    unsent_command = string(from_payload("rawCommand")).map(|c| hash(&c));
                }
            }
            _ => {}
        }
    }
    let sole_text = (kind == Kind::User)
        .then(|| {
            let m = object(field(obj, "message")?)?;
            let parts = elements(field(&m, "parts")?)?;
            let [only] = parts.as_slice() else {
                return None;
            };
            let p = object(only)?;
            if p.fields.iter().any(|(k, _)| k != "text") {
                return None;
            }
            string(field(&p, "text")).map(|t| hash(&t))
        })
        .flatten();
    Some(Rec {
        uuid,
        parent,
        session,
        kind,
        subtype,
        timestamp: valid_time(string(field(obj, "timestamp"))),
        model: string(field(obj, "model")),
        message,
        compressed,
        sole_text,
        unsent_command,
    })
}

impl Scan {
    /// One parsed object of the file (valid record or not), in order; `line` is the
    /// number of the non-blank line holding it (from 1).
    fn object(&mut self, obj: &RawObject, line: u32) {
        self.entries += 1;
        if self.first.is_none() {
            self.first = Some((
                string(field(obj, "sessionId")),
                string(field(obj, "cwd")),
                string(field(obj, "timestamp")),
            ));
        }
        if line <= PROMPT_SCAN_LINES && self.scanned < PROMPT_SCAN_LINES {
            self.scanned += 1;
            if self.preview.is_none() {
                self.preview = first_prompt(obj);
            }
        }
        if string(field(obj, "subtype")).as_deref() == Some("custom_title") {
            let payload = field(obj, "systemPayload").and_then(object);
            self.title = payload
                .and_then(|p| string(field(&p, "customTitle")))
                .filter(|t| !t.is_empty());
        }
    }

    fn record(&mut self, rec: &Rec) {
        if let Some(t) = &rec.timestamp {
            let later = |a: &str, b: &str| match (
                chrono::DateTime::parse_from_rfc3339(a),
                chrono::DateTime::parse_from_rfc3339(b),
            ) {
                (Ok(a), Ok(b)) => a > b,
                _ => false,
            };
            if self.last_time.as_deref().is_none_or(|l| later(t, l)) {
                self.last_time = Some(t.clone());
            }
        }
        match &self.session {
            None => self.session = Some(rec.session.clone()),
            Some(s) if *s != rec.session => self.mixed = true,
            Some(_) => {}
        }
    }
}

/// `extractFirstPromptFromRecords` for one record: a plain user record's
/// `systemPayload.displayText` when it has one, else its first text part.
fn first_prompt(obj: &RawObject) -> Option<String> {
    if string(field(obj, "type")).as_deref() != Some("user") || field(obj, "subtype").is_some() {
        return None;
    }
    let payload = field(obj, "systemPayload").and_then(object);
    if let Some(shown) = payload.as_ref().and_then(|p| field(p, "displayText")) {
        return string(Some(shown))
            .filter(|t| !t.is_empty())
            .map(|t| cut_prompt(&t));
    }
    let m = object(field(obj, "message")?)?;
    let parts = elements(field(&m, "parts")?)?;
    let first = parts
        .iter()
        .filter_map(|p| object(p))
        .find(|p| p.fields.iter().any(|(k, _)| k == "text"))?;
    string(field(&first, "text"))
        .filter(|t| !t.is_empty())
        .map(|t| cut_prompt(&t))
}

/// Reads one line (no `\n`) at absolute offset `base` into `scan` and `records`;
/// `line` is its number among non-blank lines. Returns false for a blank line.
fn read_line(bytes: &[u8], base: u64, line: u32, scan: &mut Scan, records: &mut Vec<Rec>) -> bool {
    let (text, ranges) = match std::str::from_utf8(bytes) {
        Ok(s) => (Cow::Borrowed(s), true),
        Err(_) => (String::from_utf8_lossy(bytes), false),
    };
    let trimmed = text.trim_matches(is_js_ws);
    if trimmed.is_empty() {
        return false;
    }
    let (objects, complete) = objects_of(trimmed);
    if !complete {
        scan.malformed += 1;
    }
    for o in objects {
        let Ok(obj) = RawObject::parse(o) else {
            continue;
        };
        scan.object(&obj, line);
        let ctx = Ctx {
            text: &text,
            base,
            ranges,
        };
        if let Some(rec) = validate(&ctx, &obj) {
            scan.record(&rec);
            records.push(rec);
        }
    }
    true
}

/// One item of the model's history Qwen rebuilds.
#[derive(Debug, Clone)]
enum Entry {
    /// A record's (aggregated) message: `{role?, parts}`.
    Message {
        role: Option<Piece>,
        user: bool,
        parts: Vec<Piece>,
        /// The record it came from.
        rec: usize,
    },
    /// An item of a compression's `compressedHistory`, as stored.
    Compressed {
        item: Piece,
        user: bool,
        rec: usize,
        first: bool,
    },
}

impl Entry {
    fn user(&self) -> bool {
        match self {
            Entry::Message { user, .. } | Entry::Compressed { user, .. } => *user,
        }
    }

    fn rec(&self) -> usize {
        match self {
            Entry::Message { rec, .. } | Entry::Compressed { rec, .. } => *rec,
        }
    }

    fn pieces(&self) -> MessagePieces {
        match self {
            Entry::Compressed { item, .. } => vec![item.clone()],
            Entry::Message { role, parts, .. } => {
                let mut out = Vec::with_capacity(parts.len() * 2 + 3);
                match role {
                    Some(r) => {
                        out.push(Piece::Text("{\"role\":".into()));
                        out.push(r.clone());
                        out.push(Piece::Text(",\"parts\":[".into()));
                    }
                    None => out.push(Piece::Text("{\"parts\":[".into())),
                }
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push(Piece::Text(",".into()));
                    }
                    out.push(p.clone());
                }
                out.push(Piece::Text("]}".into()));
                // Adjacent literals joined.
                let mut merged: MessagePieces = Vec::with_capacity(out.len());
                for p in out {
                    match (merged.last_mut(), p) {
                        (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
                        (_, p) => merged.push(p),
                    }
                }
                merged
            }
        }
    }
}

/// What a file loads as on resume.
struct Resume {
    history: Vec<Entry>,
    /// Records on the chain (each uuid once, aggregated at its first fragment).
    chain: Vec<usize>,
}

/// `loadSession` + `buildSessionHistoryFromConversation` over `recs`; `Err`: why Qwen
/// cannot resume the file.
fn resume(scan: &Scan, recs: &[&Rec]) -> Result<Resume, String> {
    let Some((_, cwd, _)) = &scan.first else {
        return Err(if scan.malformed > 0 {
            "no line of the file is a record Qwen Code can read".into()
        } else {
            "the file is empty".into()
        });
    };
    if cwd.is_none() {
        return Err(
            "the first record names no cwd, so Qwen Code cannot tell which project it belongs to"
                .into(),
        );
    }
    if scan.mixed {
        return Err(
            "the records name more than one session id, which Qwen Code refuses to load".into(),
        );
    }
    // The leaf: the last conversation record.
    let Some(leaf) = recs.iter().rposition(|r| r.is_conversation()) else {
        return Err("no conversation record, so Qwen Code finds nothing to resume".into());
    };
    let mut fragments: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, r) in recs.iter().enumerate() {
        if r.is_conversation() {
            fragments.entry(r.uuid.as_str()).or_default().push(i);
        }
    }
    let mut chain = Vec::new();
    let mut visited = HashSet::new();
    let mut current = Some(recs[leaf].uuid.as_str());
    while let Some(uuid) = current {
        if !visited.insert(uuid) {
            break;
        }
        let Some(&first) = fragments.get(uuid).and_then(|f| f.first()) else {
            break;
        };
        chain.push(first);
        current = match recs[first].parent.as_deref() {
            Some(p) if fragments.contains_key(p) => Some(p),
            _ => None,
        };
    }
    chain.reverse();
    if chain.is_empty() {
        return Err("no conversation record, so Qwen Code finds nothing to resume".into());
    }
    // SessionApiHistoryAccumulator.
    let mut history: Vec<Entry> = Vec::new();
    let mut last_material: Option<usize> = None;
    let mut not_array = false;
    for &i in &chain {
        let r = recs[i];
        if r.kind == Kind::System {
            if let Some(command) = r.unsent_command
                && let Some(prev) = last_material
                && recs[prev].kind == Kind::User
                && recs[prev].subtype.is_none()
                && recs[prev].message.as_ref().is_some_and(|m| m.role_user)
                && recs[prev].sole_text == Some(command)
            {
                history.pop();
            }
            if r.subtype.as_deref() == Some("slash_command") {
                if last_material.is_some_and(|p| recs[p].kind == Kind::User) {
                    last_material = None;
                }
                continue;
            }
            if let Some(c) = &r.compressed {
                history.clear();
                match c {
                    Compressed::Items { items, bad } => {
                        if *bad {
                            return Err("a compression's saved history holds an item Qwen Code cannot copy, on which its history rebuild throws".into());
                        }
                        not_array = false;
                        history.extend(items.iter().enumerate().map(|(n, (item, user))| {
                            Entry::Compressed {
                                item: item.clone(),
                                user: *user,
                                rec: i,
                                first: n == 0,
                            }
                        }));
                    }
                    Compressed::NotArray => not_array = true,
                }
                last_material = None;
            }
            continue;
        }
        if not_array {
            continue;
        }
        // The record's fragments, aggregated (`aggregateTranscriptRecordFragments`).
        let frags = &fragments[r.uuid.as_str()];
        let mut msg: Option<(Option<Piece>, bool, Vec<Piece>)> = None;
        let mut bad = false;
        for &f in frags {
            let Some(m) = &recs[f].message else { continue };
            bad |= m.bad_part;
            let parts = m.parts.clone().unwrap_or_default();
            match &mut msg {
                Some((_, _, all)) => all.extend(parts),
                None => msg = Some((m.role.clone(), m.role_user, parts)),
            }
        }
        let Some((role, user, parts)) = msg else {
            continue;
        };
        if r.subtype.as_deref() == Some("realtime_message") {
            continue;
        }
        if bad {
            return Err(
                "a message part is not an object, on which Qwen Code's history copy throws".into(),
            );
        }
        let merged = r.subtype.as_deref() == Some("mid_turn_user_message")
            && match history.last_mut() {
                Some(Entry::Message {
                    user: true,
                    parts: prev,
                    ..
                }) => {
                    prev.extend(parts.iter().cloned());
                    true
                }
                _ => false,
            };
        if !merged {
            history.push(Entry::Message {
                role,
                user,
                parts,
                rec: i,
            });
        }
        last_material = Some(i);
    }
    if not_array {
        return Err("a compression's saved history is not a list, on which Qwen Code's history rebuild throws".into());
    }
    Ok(Resume { history, chain })
}

impl QwenReader {
    /// The state with the unterminated tail read as the last line (readline gives it
    /// too): the scan and the tail's records.
    fn with_tail(&self, tail: &[u8]) -> (Cow<'_, Scan>, Vec<Rec>) {
        if tail.iter().all(|b| b.is_ascii_whitespace()) {
            return (Cow::Borrowed(&self.state.scan), Vec::new());
        }
        let mut scan = self.state.scan.clone();
        let mut recs = Vec::new();
        read_line(
            tail,
            self.state.end,
            self.state.lines + 1,
            &mut scan,
            &mut recs,
        );
        (Cow::Owned(scan), recs)
    }
}

impl ForeignReader for QwenReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut pos = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
            let line = &bytes[pos..pos + nl];
            let n = self.state.lines + 1;
            let s = &mut self.state;
            if read_line(line, offset + pos as u64, n, &mut s.scan, &mut s.records) {
                s.lines += 1;
            }
            pos += nl + 1;
        }
        self.state.end = offset + pos as u64;
        pos as u64
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let (scan, tail_recs) = self.with_tail(tail);
        let recs: Vec<&Rec> = self.state.records.iter().chain(&tail_recs).collect();
        let mut s = ForeignSummary {
            entries: scan.entries,
            malformed_lines: scan.malformed,
            title: scan.title.clone(),
            preview: scan.preview.clone(),
            updated_at: scan.last_time.clone(),
            ..ForeignSummary::default()
        };
        if let Some((id, cwd, time)) = &scan.first {
            s.id = id.clone().unwrap_or_default();
            s.cwd = cwd.clone();
            s.created_at = valid_time(time.clone());
            // The picker lists every file with a first record (of its project).
            s.listed = cwd.is_some();
        }
        match resume(&scan, &recs) {
            Ok(r) => {
                s.resumable = true;
                s.messages = r.history.len() as u64;
                for e in &r.history {
                    let role = match e {
                        Entry::Compressed { .. } | Entry::Message { .. } if e.user() => "user",
                        _ => "model",
                    };
                    *s.roles.entry(role.to_string()).or_insert(0) += 1;
                }
                s.compactions = r
                    .chain
                    .iter()
                    .filter(|&&i| recs[i].compressed.is_some())
                    .count() as u64;
            }
            Err(why) => s.not_resumable_reason = Some(why),
        }
        s
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let (scan, tail_recs) = self.with_tail(tail);
        let recs: Vec<&Rec> = self.state.records.iter().chain(&tail_recs).collect();
        let Ok(r) = resume(&scan, &recs) else {
            return Vec::new();
        };
        let model = |rec: &Rec| {
            (rec.kind == Kind::Assistant)
                .then(|| rec.model.clone())
                .flatten()
                .map(|model| crate::neutral::ModelRef {
                    provider: None,
                    api: None,
                    model,
                })
        };
        let mut out = Vec::new();
        if history {
            // Every message the conversation does not hold (a rewound branch, turns a
            // compression replaced), each uuid once, in file order.
            let used: HashSet<&str> = r
                .history
                .iter()
                .filter(|e| matches!(e, Entry::Message { .. }))
                .map(|e| recs[e.rec()].uuid.as_str())
                .collect();
            let mut seen = HashSet::new();
            for rec in &recs {
                let Some(m) = &rec.message else { continue };
                if rec.kind == Kind::System
                    || used.contains(rec.uuid.as_str())
                    || !seen.insert(rec.uuid.as_str())
                {
                    continue;
                }
                let e = Entry::Message {
                    role: m.role.clone(),
                    user: m.role_user,
                    parts: m.parts.clone().unwrap_or_default(),
                    rec: 0,
                };
                out.push(MessageRef {
                    pieces: e.pieces(),
                    entry: Some(rec.uuid.clone()),
                    timestamp: rec.timestamp.clone(),
                    in_conversation: false,
                    model: model(rec),
                    ..MessageRef::default()
                });
            }
        }
        for e in &r.history {
            let rec = recs[e.rec()];
            out.push(MessageRef {
                pieces: e.pieces(),
                entry: Some(rec.uuid.clone()),
                timestamp: rec.timestamp.clone(),
                in_conversation: true,
                summary: matches!(e, Entry::Compressed { first: true, .. }),
                injected: false,
                model: model(rec),
            });
        }
        out
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        save_borsh(&self.state)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        restore_borsh(&mut self.state, state)
    }
}
