//! Reader of OpenHands CLI conversations (PyPI `openhands`, its SDK `openhands-sdk`):
//! `~/.openhands/conversations/<id>/` holds `base_state.json` (the conversation's
//! state, rewritten: `workspace.working_dir`, the agent's LLM, `stats` with every
//! response's token usage) and `events/event-<nnnnn>-<event id>.json`, one JSON file
//! per event, written once each (`openhands/sdk/conversation/event_store.py`,
//! `persistence_const.py`). Checked against OpenHands CLI 1.16.0 (SDK 1.21.0) run here
//! against a mock model.
//!
//! A conversation is a unit (`sources/units.rs`): its dump is `base_state.json`'s
//! header line, then one line per event file in order (`whole_json::dump_file`, each
//! event's fields on its header line). What OpenHands resumes with is its *view*
//! (`context/view/view.py`): the LLM-convertible events, with each `Condensation`
//! applied (its `forgotten_event_ids` dropped, its `summary` put in as a user message
//! at `summary_offset`), then `events_to_messages` (`event/base.py`): the
//! `ActionEvent`s of one `llm_response_id` are one assistant message (the first's
//! `thought` as content, each `tool_call`), an `ObservationEvent` a `tool` message,
//! an `AgentErrorEvent` a `tool` message of its error, a `MessageEvent` its
//! `llm_message`, the `SystemPromptEvent` the system message. `conversation.json` is
//! those messages in Chat Completions' shape, made of byte ranges of the dump.

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::json::offset_in;
use crate::sources::foreign::{
    ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece, restore_borsh, save_borsh,
};
use crate::sources::units::{Dump, Signature, UnitInfo, UnitSource};
use crate::sources::whole_json;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The state file of a conversation folder.
pub const BASE_STATE: &str = "base_state.json";
/// Its events' folder.
pub const EVENTS: &str = "events";

/// Event kinds OpenHands writes that are not sent to the model.
const OTHER_KINDS: &[&str] = &[
    "ConversationStateUpdateEvent",
    "PauseEvent",
    "ConversationErrorEvent",
    "CondensationRequest",
    "HookExecutionEvent",
    "TokenEvent",
    "LLMCompletionLogEvent",
    "StreamingDeltaEvent",
    "ACPToolCallEvent",
];

/// Whether `name` is an event file's name (`event-00012-<id>.json`).
pub fn is_event_file(name: &str) -> bool {
    name.strip_prefix("event-")
        .and_then(|r| r.strip_suffix(".json"))
        .is_some_and(|r| r.len() > 6 && r.as_bytes()[..5].iter().all(u8::is_ascii_digit))
}

/// A conversation's event files, in order.
pub fn event_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir.join(EVENTS)) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| is_event_file(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The conversations under a root (`conversations/<id>/`) as units.
pub struct ConversationUnits {
    root: PathBuf,
}

impl ConversationUnits {
    pub fn new(root: &Path) -> Self {
        ConversationUnits {
            root: root.to_path_buf(),
        }
    }

    fn files(key: &Path) -> Vec<PathBuf> {
        let mut files = vec![key.join(BASE_STATE)];
        files.extend(event_files(key));
        files
    }
}

impl UnitSource for ConversationUnits {
    /// The root, `conversations/`, and each conversation's folder and its events.
    fn watched(&self) -> Vec<PathBuf> {
        let conversations = self.root.join("conversations");
        let mut out = vec![self.root.clone()];
        for dir in crate::sources::units::subfolders(&conversations) {
            out.push(dir.join(EVENTS));
            out.push(dir);
        }
        out.push(conversations);
        out
    }

    fn list(&self) -> Vec<UnitInfo> {
        let Ok(rd) = std::fs::read_dir(self.root.join("conversations")) else {
            return Vec::new();
        };
        let mut out: Vec<UnitInfo> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|d| d.join(BASE_STATE).is_file() || d.join(EVENTS).is_dir())
            .map(|key| UnitInfo { key, cwd: None })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        whole_json::signature(&Self::files(key), b"")
    }

    /// Every event file is read again on a change: OpenHands adds a file per event and
    /// rewrites `base_state.json`, so the dump is made anew (a changed stamp).
    fn dump(&self, key: &Path) -> Option<Dump> {
        let signature = self.signature(key)?;
        let mut out = Vec::new();
        let state = key.join(BASE_STATE);
        match whole_json::read(&state, "OpenHands") {
            whole_json::FileRead::Absent => {
                whole_json::push_unreadable(&mut out, BASE_STATE, "there is no base_state.json")
            }
            read => whole_json::dump_file(&mut out, BASE_STATE, &read, None),
        }
        for f in event_files(key) {
            let name = format!("{EVENTS}/{}", f.file_name().unwrap().to_string_lossy());
            whole_json::dump_file(&mut out, &name, &whole_json::read(&f, "OpenHands"), None);
        }
        Some(Dump {
            bytes: out,
            signature,
            transient: false,
        })
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        key.to_path_buf()
    }
}

type Span = (u64, u64);

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct ToolCall {
    id: Span,
    name: Span,
    arguments: Span,
}

/// One event the model may see, as byte ranges of the dump.
#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Shape {
    /// `system_prompt` and `dynamic_context` (content blocks).
    System(Span, Option<Span>),
    /// `llm_message` as stored.
    Message(Span, String),
    /// `thought` (content blocks), the call, the response it came in.
    Action {
        thought: Option<Span>,
        call: ToolCall,
        response: Option<String>,
    },
    /// `tool_name`, `tool_call_id`, the content blocks.
    Observation(Option<Span>, Span, Span),
    /// `tool_name`, `tool_call_id`, a string put in a text block after `prefix`.
    ToolText(Option<Span>, Span, String, Span),
    /// A condensation's summary, a user message.
    Summary(Span),
}

#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Event {
    id: String,
    timestamp: Option<String>,
    shape: Shape,
}

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct State {
    id: Option<String>,
    cwd: Option<String>,
    model: Option<String>,
    /// The view: events the model sees, condensations applied.
    view: Vec<Event>,
    first_time: Option<String>,
    last_time: Option<String>,
    preview: Option<String>,
    compactions: u64,
    entries: u64,
    /// Why the conversation cannot be loaded as it is (a file unreadable now, an
    /// event kind this reader does not know).
    broken: Option<String>,
}

/// Reader of one conversation's dump.
#[derive(Default)]
pub struct OpenhandsReader {
    state: State,
}

/// A naive local time as OpenHands writes it (`datetime.now().isoformat()`), read as
/// UTC; a time with a zone as it is.
pub fn rfc3339(t: &str) -> String {
    let has_zone = t.ends_with('Z') || t.get(19..).is_some_and(|r| r.contains(['+', '-']));
    if has_zone {
        t.to_string()
    } else {
        format!("{t}Z")
    }
}

impl OpenhandsReader {
    pub fn new() -> Self {
        Self::default()
    }

    fn line(&mut self, bytes: &[u8], at: u64) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        if text.trim().is_empty() {
            return;
        }
        let Ok(fields) = serde_json::from_str::<HashMap<&str, &RawValue>>(text) else {
            return;
        };
        self.state.entries += 1;
        let span =
            |v: &RawValue| -> Span { (at + offset_in(text, v.get()) as u64, v.get().len() as u64) };
        let string = |k: &str| fields.get(k).and_then(|v| crate::json::as_string(v));
        let name = string("fen_file").unwrap_or_default();
        if let Some(why) = string("fen_unreadable") {
            self.state.broken.get_or_insert(format!("{name}: {why}"));
            return;
        }
        let s = &mut self.state;
        if name == BASE_STATE {
            s.id = string("id").map(|i| i.replace('-', ""));
            let v = |k: &str| -> Option<serde_json::Value> {
                fields
                    .get(k)
                    .and_then(|r| serde_json::from_str(r.get()).ok())
            };
            s.cwd = v("workspace").and_then(|w| w["working_dir"].as_str().map(str::to_string));
            s.model = v("agent").and_then(|a| a["llm"]["model"].as_str().map(str::to_string));
            return;
        }
        let kind = string("kind").unwrap_or_default();
        let id = string("id").unwrap_or_default();
        let timestamp = string("timestamp").map(|t| rfc3339(&t));
        if let Some(t) = &timestamp {
            s.first_time.get_or_insert_with(|| t.clone());
            s.last_time = Some(t.clone());
        }
        let shape = match kind.as_str() {
            "SystemPromptEvent" => match fields.get("system_prompt") {
                Some(p) => Shape::System(span(p), fields.get("dynamic_context").map(|d| span(d))),
                None => return,
            },
            "MessageEvent" => {
                let Some(m) = fields.get("llm_message") else {
                    return;
                };
                let msg: serde_json::Value = serde_json::from_str(m.get()).unwrap_or_default();
                let role = msg["role"].as_str().unwrap_or("user").to_string();
                if role == "user" && s.preview.is_none() {
                    s.preview = msg["content"]
                        .as_array()
                        .and_then(|c| c.iter().find_map(|b| b["text"].as_str()))
                        .and_then(|t| t.trim().lines().next())
                        .map(|l| l.trim().to_string())
                        .filter(|l| !l.is_empty());
                }
                Shape::Message(span(m), role)
            }
            "ActionEvent" => {
                #[derive(serde::Deserialize)]
                struct Call<'a> {
                    #[serde(borrow)]
                    id: &'a RawValue,
                    #[serde(borrow)]
                    name: &'a RawValue,
                    #[serde(borrow)]
                    arguments: &'a RawValue,
                }
                let Some(call) = fields
                    .get("tool_call")
                    .and_then(|c| serde_json::from_str::<Call>(c.get()).ok())
                else {
                    return;
                };
                Shape::Action {
                    thought: fields.get("thought").map(|t| span(t)),
                    call: ToolCall {
                        id: span(call.id),
                        name: span(call.name),
                        arguments: span(call.arguments),
                    },
                    response: string("llm_response_id"),
                }
            }
            "ObservationEvent" => {
                #[derive(serde::Deserialize)]
                struct Obs<'a> {
                    #[serde(borrow)]
                    content: &'a RawValue,
                }
                let (Some(call), Some(obs)) = (
                    fields.get("tool_call_id"),
                    fields
                        .get("observation")
                        .and_then(|o| serde_json::from_str::<Obs>(o.get()).ok()),
                ) else {
                    return;
                };
                Shape::Observation(
                    fields.get("tool_name").map(|n| span(n)),
                    span(call),
                    span(obs.content),
                )
            }
            "AgentErrorEvent" | "UserRejectObservation" => {
                let (key, prefix) = if kind == "AgentErrorEvent" {
                    ("error", "")
                } else {
                    ("rejection_reason", "Action rejected: ")
                };
                let (Some(call), Some(text)) = (fields.get("tool_call_id"), fields.get(key)) else {
                    return;
                };
                Shape::ToolText(
                    fields.get("tool_name").map(|n| span(n)),
                    span(call),
                    prefix.to_string(),
                    span(text),
                )
            }
            "CondensationSummaryEvent" => match fields.get("summary") {
                Some(t) => Shape::Summary(span(t)),
                None => return,
            },
            "Condensation" => {
                let forgotten: Vec<String> = fields
                    .get("forgotten_event_ids")
                    .and_then(|f| serde_json::from_str(f.get()).ok())
                    .unwrap_or_default();
                s.view.retain(|e| !forgotten.contains(&e.id));
                let offset = fields
                    .get("summary_offset")
                    .and_then(|o| serde_json::from_str::<usize>(o.get()).ok());
                if let (Some(summary), Some(offset)) = (fields.get("summary"), offset)
                    && summary.get() != "null"
                {
                    let at = offset.min(s.view.len());
                    s.view.insert(
                        at,
                        Event {
                            id: id.clone(),
                            timestamp,
                            shape: Shape::Summary(span(summary)),
                        },
                    );
                }
                s.compactions += 1;
                return;
            }
            k if OTHER_KINDS.contains(&k) => return,
            other => {
                s.broken.get_or_insert(format!(
                    "{name}: an event of kind {other:?} this reader does not know (a newer OpenHands?)"
                ));
                return;
            }
        };
        s.view.push(Event {
            id,
            timestamp,
            shape,
        });
    }

    fn not_resumable(&self) -> Option<String> {
        let s = &self.state;
        if let Some(why) = &s.broken {
            return Some(why.clone());
        }
        if s.id.is_none() {
            return Some("no base_state.json names the conversation".into());
        }
        if s.view.is_empty() {
            return Some("no message to resume".into());
        }
        None
    }
}

fn range(s: Span) -> Piece {
    Piece::Range {
        start: s.0,
        len: s.1,
    }
}

fn text(t: &str) -> Piece {
    Piece::Text(t.to_string())
}

/// The `"name":…,"tool_call_id":…` of a tool message.
fn tool_head(out: &mut MessagePieces, name: Option<Span>, call: Span) {
    out.push(text("{\"role\":\"tool\","));
    if let Some(n) = name {
        out.extend([text("\"name\":"), range(n), text(",")]);
    }
    out.extend([text("\"tool_call_id\":"), range(call)]);
}

impl ForeignReader for OpenhandsReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        crate::usage_record::each_line(offset, bytes, |at, line| self.line(line, at))
    }

    fn follows_appends(&self) -> bool {
        false
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let s = &self.state;
        let mut out = ForeignSummary {
            id: s.id.clone().unwrap_or_default(),
            cwd: s.cwd.clone(),
            preview: s.preview.clone(),
            // The CLI's list titles a conversation by its first prompt
            // (`conversations/store/local.py`).
            title: s.preview.clone(),
            created_at: s.first_time.clone(),
            updated_at: s.last_time.clone(),
            entries: s.entries,
            listed: s.id.is_some(),
            compactions: s.compactions,
            ..ForeignSummary::default()
        };
        match self.not_resumable() {
            Some(why) => out.not_resumable_reason = Some(why),
            None => out.resumable = true,
        }
        let _ = tail;
        for (_, role) in self.build() {
            out.messages += 1;
            *out.roles.entry(role.to_string()).or_insert(0) += 1;
        }
        out
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn messages(&self, _tail: &[u8], _history: bool) -> Vec<MessageRef> {
        self.build().into_iter().map(|(m, _)| m).collect()
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        save_borsh(&self.state)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        restore_borsh(&mut self.state, state)
    }
}

impl OpenhandsReader {
    /// The messages OpenHands sends from its view, each with its role.
    fn build(&self) -> Vec<(MessageRef, &str)> {
        let s = &self.state;
        let model = s.model.clone().map(|model| crate::neutral::ModelRef {
            provider: None,
            api: None,
            model,
        });
        let refer = |pieces, e: &Event, injected, summary, model| MessageRef {
            pieces,
            entry: Some(e.id.clone()),
            timestamp: e.timestamp.clone(),
            in_conversation: true,
            injected,
            summary,
            model,
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.view.len() {
            let e = &s.view[i];
            let mut p: MessagePieces = Vec::new();
            match &e.shape {
                Shape::System(prompt, dynamic) => {
                    p.extend([text("{\"role\":\"system\",\"content\":["), range(*prompt)]);
                    if let Some(d) = dynamic {
                        p.extend([text(","), range(*d)]);
                    }
                    p.push(text("]}"));
                    out.push((refer(p, e, true, false, None), "system"));
                }
                Shape::Message(m, role) => {
                    p.push(range(*m));
                    let model = (role == "assistant").then(|| model.clone()).flatten();
                    out.push((refer(p, e, false, false, model), role.as_str()));
                }
                Shape::Action {
                    thought, response, ..
                } => {
                    // The actions of one response are one assistant message.
                    let mut j = i;
                    let mut calls = Vec::new();
                    while let Some(Event {
                        shape:
                            Shape::Action {
                                call, response: r, ..
                            },
                        ..
                    }) = s.view.get(j)
                    {
                        if j > i && (r != response || response.is_none()) {
                            break;
                        }
                        calls.push(call.clone());
                        j += 1;
                    }
                    p.push(text("{\"role\":\"assistant\",\"content\":"));
                    match thought {
                        Some(t) => p.push(range(*t)),
                        None => p.push(text("[]")),
                    }
                    p.push(text(",\"tool_calls\":["));
                    for (k, c) in calls.iter().enumerate() {
                        if k > 0 {
                            p.push(text(","));
                        }
                        p.extend([
                            text("{\"id\":"),
                            range(c.id),
                            text(",\"type\":\"function\",\"function\":{\"name\":"),
                            range(c.name),
                            text(",\"arguments\":"),
                            range(c.arguments),
                            text("}}"),
                        ]);
                    }
                    p.push(text("]}"));
                    out.push((refer(p, e, false, false, model.clone()), "assistant"));
                    i = j;
                    continue;
                }
                Shape::Observation(name, call, content) => {
                    tool_head(&mut p, *name, *call);
                    p.extend([text(",\"content\":"), range(*content), text("}")]);
                    out.push((refer(p, e, false, false, None), "tool"));
                }
                Shape::ToolText(name, call, prefix, t) => {
                    tool_head(&mut p, *name, *call);
                    // The string's text without its quotes, after the prefix.
                    p.extend([
                        text(&format!(
                            ",\"content\":[{{\"type\":\"text\",\"text\":\"{prefix}"
                        )),
                        range((t.0 + 1, t.1.saturating_sub(2))),
                        text("\"}]}"),
                    ]);
                    out.push((refer(p, e, false, false, None), "tool"));
                }
                Shape::Summary(t) => {
                    p.extend([
                        text("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"),
                        range(*t),
                        text("}]}"),
                    ]);
                    out.push((refer(p, e, true, true, None), "user"));
                }
            }
            i += 1;
        }
        out
    }
}
