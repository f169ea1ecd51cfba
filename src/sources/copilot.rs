//! Reader of GitHub Copilot CLI session logs (`session-state/<id>/events.jsonl` since
//! 1.0.11, `session-state/<id>.jsonl` before), see AGENT-FORMATS-MORE.md §3. Copilot
//! CLI is closed source: the event shapes come from the schema its SDK is generated
//! from (CP-SDK `session-events.ts`), the failure modes from its issue tracker, and
//! how it rebuilds the model's history on resume is not public. fen-fs's rebuild is a
//! guess, marked `resume_rules: "best effort"` in meta.json:
//! - the history is the main agent's `user.message`, `assistant.message` and
//!   `tool.execution_complete` events in file order (sub-agent events left out);
//! - a successful `session.compaction_complete` restarts it, its event (holding
//!   `summaryContent`) first;
//! - `session.truncation` drops its `messagesRemovedDuringTruncation` oldest
//!   messages, `session.context_cleared` all of them (its `initialMessage`, if any,
//!   stays as its event), `session.snapshot_rewind` the events from `upToEventId` on.
//!
//! Each message of `conversation.json` is the event's own JSON object, byte for byte.
//! Copilot refuses a whole session on one line it cannot parse or validate ("Session
//! file is corrupted (line N: ...)") and needs `session.start` first: such a file is
//! not resumable. Lines of NUL bytes left by a crash are skipped, as Copilot does
//! since 1.0.57.

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::json::{RawObject, offset_in};
use crate::sources::foreign::{
    ConversationMark, ConversationUpdate, ForeignReader, ForeignSummary, MessagePieces, MessageRef,
    Piece,
};
use crate::sources::growth::{KeptCell, Resumed};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::MutexGuard;

/// The session id a file's place gives: `<id>/events.jsonl` or `<id>.jsonl`.
pub fn id_of_path(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let id = if name == "events.jsonl" {
        path.parent()?.file_name()?.to_str()?
    } else {
        name.strip_suffix(".jsonl")?
    };
    Some(id.to_string())
}

/// Fills in from the session's `workspace.yaml` what the events did not give: the
/// title (`name`, else `summary`), cwd, creation and update times.
pub fn complete_from_workspace(path: &Path, s: &mut ForeignSummary) {
    let dir = match path.file_name().and_then(|n| n.to_str()) {
        Some("events.jsonl") => path.parent().map(Path::to_path_buf),
        Some(name) => name
            .strip_suffix(".jsonl")
            .and_then(|id| path.parent().map(|p| p.join(id))),
        None => None,
    };
    let Some(bytes) =
        dir.and_then(|d| crate::store::open::read_small(&d.join("workspace.yaml"), 1 << 20))
    else {
        return;
    };
    let yaml = top_level_scalars(&String::from_utf8_lossy(&bytes));
    let get = |k: &str| yaml.get(k).filter(|v| !v.is_empty()).cloned();
    if s.title.is_none() {
        s.title = get("name").or_else(|| get("summary"));
    }
    if s.cwd.is_none() {
        s.cwd = get("cwd");
    }
    let time = |k: &str| get(k).filter(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok());
    if s.created_at.is_none() {
        s.created_at = time("created_at");
    }
    if s.updated_at.is_none() {
        s.updated_at = time("updated_at");
    }
}

/// The `key: value` pairs at the top level of a YAML mapping whose values are plain,
/// single- or double-quoted scalars on one line (all `workspace.yaml` holds that we
/// read); anything else is left out.
fn top_level_scalars(yaml: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in yaml.lines() {
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if let Some(v) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            v.replace("''", "'")
        } else if value.starts_with('"') {
            match serde_json::from_str::<String>(value) {
                Ok(v) => v,
                Err(_) => continue,
            }
        } else if value.starts_with(['|', '>', '[', '{', '&', '*', '!']) {
            continue;
        } else {
            // A plain scalar; a ` #` starts a comment.
            value.split(" #").next().unwrap_or("").trim().to_string()
        };
        out.insert(key.trim().to_string(), value);
    }
    out
}

/// One event of the history rebuild.
#[derive(Debug, Clone)]
enum Ev {
    /// A message: user, assistant or tool.
    Msg(Message),
    /// A successful compaction: the history restarts with its event.
    Compaction(Message),
    /// `session.truncation`: the oldest `n` messages go.
    Truncation(u64),
    /// `session.context_cleared`: everything goes; its event stays when it carries an
    /// `initialMessage`.
    Cleared(Option<Message>),
    /// `session.snapshot_rewind`: the events from this sequence number on go.
    Rewind(Option<u64>),
}

#[derive(Debug, Clone)]
struct Message {
    /// The event's place in the file (for rewinds).
    seq: u64,
    role: &'static str,
    piece: Piece,
    id: Option<String>,
    timestamp: Option<String>,
}

/// What one line holds.
struct Parsed {
    ty: String,
    ev: Option<Ev>,
    event_id: Option<String>,
    timestamp: Option<String>,
    /// `session.start`'s facts.
    start: Option<Start>,
    title: Option<String>,
    prompt: Option<String>,
    /// Why Copilot's schema check refuses this line, if it does.
    invalid: Option<&'static str>,
}

#[derive(Debug, Clone, Default)]
struct Start {
    id: Option<String>,
    cwd: Option<String>,
    time: Option<String>,
    /// `data.version`, the log's schema version (1 in every version seen).
    version: Option<String>,
}

/// The listing facts, cloneable so a tail can be judged without changing the reader.
#[derive(Debug, Clone, Default)]
struct Facts {
    /// 1-based number of the last line read.
    lines: u64,
    /// The first line that counts (not blank, not NUL padding) was `session.start`.
    first: Option<bool>,
    start: Option<Start>,
    title: Option<String>,
    prompt: Option<String>,
    first_time: Option<String>,
    last_time: Option<String>,
    entries: u64,
    malformed: u64,
    /// The first line Copilot's loader refuses, and why.
    refused: Option<(u64, String)>,
    /// Sequence numbers of the events with ids (for `snapshot_rewind`).
    seq: u64,
}

/// Reader of one Copilot session log.
pub struct CopilotReader {
    /// The id the file's place gives (used when the events give none).
    place_id: Option<String>,
    end: u64,
    facts: Facts,
    events: Vec<Ev>,
    ids: HashMap<String, u64>,
    /// The history as last given, extended by the messages read since.
    resumed: KeptCell<u32, u64>,
}

fn field<'a>(obj: &RawObject<'a>, key: &str) -> Option<&'a RawValue> {
    obj.fields
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
}

fn string(v: Option<&RawValue>) -> Option<String> {
    serde_json::from_str::<String>(v?.get()).ok()
}

fn object(v: Option<&RawValue>) -> Option<RawObject<'_>> {
    let v = v?;
    if !v.get().starts_with('{') {
        return None;
    }
    RawObject::parse(v.get()).ok()
}

fn rfc3339(t: Option<String>) -> Option<String> {
    t.filter(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok())
}

/// A line that is only NUL bytes (and whitespace): the padding a crash leaves.
fn is_padding(line: &[u8]) -> bool {
    line.contains(&0) && line.iter().all(|&b| b == 0 || b.is_ascii_whitespace())
}

impl CopilotReader {
    pub fn new(place_id: Option<&str>) -> CopilotReader {
        CopilotReader {
            place_id: place_id.map(str::to_string),
            end: 0,
            facts: Facts::default(),
            events: Vec::new(),
            ids: HashMap::new(),
            resumed: KeptCell::default(),
        }
    }

    /// One event object (its text is `t`, at absolute offset `base` when `ranges`).
    fn parse_event(t: &str, base: u64, ranges: bool, seq: u64) -> Option<Parsed> {
        let obj = RawObject::parse(t).ok()?;
        let ty = string(field(&obj, "type"))?;
        let data = object(field(&obj, "data"));
        let sub_agent = field(&obj, "agentId").is_some_and(|v| v.get() != "null")
            || data
                .as_ref()
                .and_then(|d| field(d, "parentToolCallId"))
                .is_some_and(|v| v.get() != "null");
        let dstr = |k: &str| data.as_ref().and_then(|d| string(field(d, k)));
        let piece = if ranges {
            Piece::Range {
                start: base,
                len: t.len() as u64,
            }
        } else {
            Piece::Text(t.to_string())
        };
        let event_id = string(field(&obj, "id"));
        let timestamp = string(field(&obj, "timestamp"));
        let message = |role: &'static str| Message {
            seq,
            role,
            piece: piece.clone(),
            id: event_id.clone(),
            timestamp: timestamp.clone(),
        };
        let mut p = Parsed {
            ty: ty.clone(),
            ev: None,
            event_id: event_id.clone(),
            timestamp: timestamp.clone(),
            start: None,
            title: None,
            prompt: None,
            invalid: None,
        };
        match ty.as_str() {
            "session.start" => {
                p.start = Some(Start {
                    id: dstr("sessionId"),
                    cwd: data
                        .as_ref()
                        .and_then(|d| object(field(d, "context")))
                        .and_then(|c| string(field(&c, "cwd"))),
                    time: dstr("startTime"),
                    version: data
                        .as_ref()
                        .and_then(|d| field(d, "version"))
                        .map(|v| v.get().to_string()),
                })
            }
            "session.title_changed" => p.title = dstr("title"),
            _ if sub_agent => {}
            "user.message" => {
                p.prompt = dstr("content");
                p.ev = Some(Ev::Msg(message("user")));
            }
            "assistant.message" => p.ev = Some(Ev::Msg(message("assistant"))),
            "tool.execution_complete" => p.ev = Some(Ev::Msg(message("tool"))),
            "session.compaction_complete" => {
                let success = data.as_ref().and_then(|d| field(d, "success"));
                match success.map(RawValue::get) {
                    Some("true") => p.ev = Some(Ev::Compaction(message("compaction"))),
                    Some("false") => {}
                    _ => {
                        p.invalid =
                            Some("a session.compaction_complete without its boolean success")
                    }
                }
            }
            "session.truncation" => {
                let n = data
                    .as_ref()
                    .and_then(|d| field(d, "messagesRemovedDuringTruncation"))
                    .and_then(|v| v.get().parse::<f64>().ok())
                    .filter(|n| *n >= 0.0);
                match n {
                    Some(n) => p.ev = Some(Ev::Truncation(n as u64)),
                    None => {
                        p.invalid =
                            Some("a session.truncation without messagesRemovedDuringTruncation")
                    }
                }
            }
            "session.context_cleared" => {
                let initial = data
                    .as_ref()
                    .and_then(|d| field(d, "initialMessage"))
                    .is_some_and(|v| v.get().starts_with('"'));
                p.ev = Some(Ev::Cleared(initial.then(|| message("user"))));
            }
            "session.snapshot_rewind" => {
                // Resolved against the ids seen so far when fed.
                p.ev = Some(Ev::Rewind(None));
            }
            _ => {}
        }
        Some(p)
    }

    /// Reads one line (no `\n`) at absolute offset `base` into `facts` (and, when
    /// `keep`, the history events into `events`).
    fn line(
        facts: &mut Facts,
        events: &mut Vec<Ev>,
        ids: &mut HashMap<String, u64>,
        bytes: &[u8],
        base: u64,
    ) {
        facts.lines += 1;
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(|b| b.is_ascii_whitespace()) || is_padding(bytes) {
            return;
        }
        let (text, ranges) = match simdutf8::basic::from_utf8(bytes) {
            Ok(s) => (Cow::Borrowed(s), true),
            Err(_) => (String::from_utf8_lossy(bytes), false),
        };
        let t = text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\0');
        let base = base + offset_in(&text, t) as u64;
        facts.seq += 1;
        let parsed = Self::parse_event(t, base, ranges, facts.seq);
        let parsed = match parsed {
            Some(p) => {
                facts.entries += 1;
                p
            }
            None => {
                facts.malformed += 1;
                let line = facts.lines;
                facts.refused.get_or_insert((
                    line,
                    format!("line {line} is not one JSON event, so Copilot refuses the session (\"Session file is corrupted\")"),
                ));
                facts.first.get_or_insert(false);
                // A torn write followed by a whole event (copilot-cli#4098): the event's
                // facts still count for the listing.
                let Some(p) = t
                    .match_indices("{\"type\":")
                    .filter(|(i, _)| *i > 0)
                    .find_map(|(i, _)| {
                        Self::parse_event(&t[i..], base + i as u64, false, facts.seq)
                    })
                else {
                    return;
                };
                Parsed { ev: None, ..p }
            }
        };
        facts.first.get_or_insert(parsed.ty == "session.start");
        if let Some(why) = parsed.invalid {
            let line = facts.lines;
            facts.refused.get_or_insert((
                line,
                format!("line {line} is {why}, which Copilot's schema check refuses (\"Session file is corrupted\")"),
            ));
        }
        if let Some(s) = parsed.start
            && facts.start.is_none()
        {
            facts.start = Some(s);
        }
        if parsed.title.is_some() {
            facts.title = parsed.title;
        }
        if facts.prompt.is_none() {
            facts.prompt = parsed.prompt.filter(|p| !p.trim().is_empty());
        }
        if let Some(ts) = rfc3339(parsed.timestamp) {
            facts.first_time.get_or_insert_with(|| ts.clone());
            facts.last_time = Some(ts);
        }
        let mut ev = parsed.ev;
        if parsed.ty == "session.snapshot_rewind" {
            let target = t
                .find("\"upToEventId\"")
                .and_then(|_| RawObject::parse(t).ok())
                .and_then(|o| {
                    object(field(&o, "data")).and_then(|d| string(field(&d, "upToEventId")))
                });
            ev = Some(Ev::Rewind(target.and_then(|id| ids.get(&id).copied())));
        }
        if let Some(id) = parsed.event_id {
            ids.insert(id, facts.seq);
        }
        events.extend(ev);
    }

    /// The facts and events with the unterminated tail read too (Copilot reads the
    /// whole file: a complete last line counts, a torn one is a bad line).
    fn with_tail(&self, tail: &[u8]) -> (Cow<'_, Facts>, Cow<'_, [Ev]>) {
        let tail = tail.strip_suffix(b"\r").unwrap_or(tail);
        if tail.iter().all(|b| b.is_ascii_whitespace()) || is_padding(tail) {
            // Nothing, or the NUL padding a crash leaves (the usual tail).
            return (Cow::Borrowed(&self.facts), Cow::Borrowed(&self.events));
        }
        let mut facts = self.facts.clone();
        let mut events = Vec::new();
        let mut ids = self.ids.clone();
        Self::line(&mut facts, &mut events, &mut ids, tail, self.end);
        if events.is_empty() {
            return (Cow::Owned(facts), Cow::Borrowed(&self.events));
        }
        let mut all = self.events.clone();
        all.extend(events);
        (Cow::Owned(facts), Cow::Owned(all))
    }
}

/// Why Copilot would not resume a file with these facts.
fn refusal(facts: &Facts) -> Option<String> {
    match facts.first {
        None => return Some("the file holds no event".into()),
        Some(false) => {
            return Some(
                "the file does not start with session.start, which Copilot requires".into(),
            );
        }
        Some(true) => {}
    }
    if let Some(v) = facts.start.as_ref().and_then(|s| s.version.as_deref())
        && v != "1"
    {
        return Some(format!(
            "session.start says version {v}, a log format fen-fs does not know, so it does not guess its rebuild"
        ));
    }
    facts.refused.as_ref().map(|(_, why)| why.clone())
}

/// The history rebuilt from the events (see the module's comment).
fn rebuild(events: &[Ev]) -> (Vec<&Message>, u64) {
    let (hist, compactions) = rebuild_at(events);
    let hist = hist
        .into_iter()
        .map(|i| message_of(&events[i as usize]))
        .collect();
    (hist, compactions)
}

/// The same as the events' numbers.
fn rebuild_at(events: &[Ev]) -> (Vec<u32>, u64) {
    let mut hist: Vec<u32> = Vec::new();
    let mut compactions = 0;
    for (i, ev) in events.iter().enumerate() {
        let i = i as u32;
        match ev {
            Ev::Msg(_) => hist.push(i),
            Ev::Compaction(_) => {
                compactions += 1;
                hist = vec![i];
            }
            Ev::Truncation(n) => {
                let n = (*n as usize).min(hist.len());
                hist.drain(..n);
            }
            Ev::Cleared(initial) => {
                hist.clear();
                hist.extend(initial.iter().map(|_| i));
            }
            Ev::Rewind(Some(from)) => hist.retain(|&h| message_of(&events[h as usize]).seq < *from),
            Ev::Rewind(None) => {}
        }
    }
    (hist, compactions)
}

/// The message an event of the history stands for.
fn message_of(ev: &Ev) -> &Message {
    match ev {
        Ev::Msg(m) | Ev::Compaction(m) | Ev::Cleared(Some(m)) => m,
        _ => unreachable!("only messages are in the history"),
    }
}

/// The history kept between reads (event numbers) and its compactions; the events
/// after it go to its end while they are messages (a compaction, truncation, clear
/// or rewind rebuilds it).
type Kept = Resumed<u32, u64>;

impl CopilotReader {
    /// The history of the events read so far, brought up to date.
    fn kept(&self) -> MutexGuard<'_, Option<Kept>> {
        let mut kept = self.resumed.lock();
        if let Some(k) = kept.as_mut() {
            let grows = self.events[k.covered.min(self.events.len())..]
                .iter()
                .all(|e| matches!(e, Ev::Msg(_) | Ev::Rewind(None)));
            if grows && k.covered <= self.events.len() {
                for (i, e) in self.events.iter().enumerate().skip(k.covered) {
                    if let Ev::Msg(_) = e {
                        k.order.push(i as u32);
                    }
                }
                k.covered = self.events.len();
            } else {
                *kept = None;
            }
        }
        if kept.is_none() {
            let (order, compactions) = rebuild_at(&self.events);
            *kept = Some(Resumed::new(self.events.len(), order, compactions));
        }
        kept
    }
}

impl ForeignReader for CopilotReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut pos = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
            Self::line(
                &mut self.facts,
                &mut self.events,
                &mut self.ids,
                &bytes[pos..pos + nl],
                offset + pos as u64,
            );
            pos += nl + 1;
        }
        self.end = offset + pos as u64;
        pos as u64
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let (facts, events) = self.with_tail(tail);
        let start = facts.start.clone().unwrap_or_default();
        let mut s = ForeignSummary {
            id: start
                .id
                .clone()
                .or_else(|| self.place_id.clone())
                .unwrap_or_default(),
            cwd: start.cwd.clone(),
            title: facts.title.clone().filter(|t| !t.trim().is_empty()),
            preview: facts
                .prompt
                .as_deref()
                .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ")),
            created_at: rfc3339(start.time.clone()).or_else(|| facts.first_time.clone()),
            updated_at: facts.last_time.clone(),
            listed: facts.first == Some(true),
            entries: facts.entries,
            malformed_lines: facts.malformed,
            ..ForeignSummary::default()
        };
        match refusal(&facts) {
            Some(why) => s.not_resumable_reason = Some(why),
            None => {
                let (hist, compactions) = rebuild(&events);
                s.resumable = true;
                s.resume_rules = Some("best effort".into());
                s.messages = hist.len() as u64;
                s.compactions = compactions;
                let mut roles = BTreeMap::new();
                for m in hist {
                    *roles.entry(m.role.to_string()).or_insert(0) += 1;
                }
                s.roles = roles;
            }
        }
        s
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn summary_and_conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ForeignSummary, ConversationUpdate, Option<ConversationMark>) {
        let (update, mark) = self.conversation_since(tail, since);
        (self.summary(tail), update, mark)
    }

    /// New message events given as the messages they added; anything else whole.
    fn conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        let (facts, events) = self.with_tail(tail);
        if refusal(&facts).is_some() {
            return (ConversationUpdate::Whole(Vec::new()), None);
        }
        if matches!(events, Cow::Owned(_)) {
            // The tail is an event of its own (a last line without its newline).
            let (hist, _) = rebuild(&events);
            let all = hist.into_iter().map(|m| vec![m.piece.clone()]).collect();
            return (ConversationUpdate::Whole(all), None);
        }
        let kept = self.kept();
        let k = kept.as_ref().expect("brought up to date");
        let update = k.update(since, |&i| {
            vec![message_of(&self.events[i as usize]).piece.clone()]
        });
        (update, Some(k.mark()))
    }

    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let (facts, events) = self.with_tail(tail);
        let resumable = refusal(&facts).is_none();
        let reference = |m: &Message, in_conversation: bool| MessageRef {
            pieces: vec![m.piece.clone()],
            entry: m.id.clone(),
            timestamp: m.timestamp.clone(),
            in_conversation,
            injected: false,
            summary: m.role == "compaction",
            model: None,
        };
        let kept: Vec<&Message> = if resumable {
            rebuild(&events).0
        } else {
            Vec::new()
        };
        if !history {
            return kept.into_iter().map(|m| reference(m, true)).collect();
        }
        // Every message event in file order, those outside the rebuild marked so.
        let in_hist: std::collections::HashSet<u64> = kept.iter().map(|m| m.seq).collect();
        events
            .iter()
            .filter_map(|e| match e {
                Ev::Msg(m) | Ev::Compaction(m) | Ev::Cleared(Some(m)) => Some(m),
                _ => None,
            })
            .map(|m| reference(m, in_hist.contains(&m.seq)))
            .collect()
    }
}
