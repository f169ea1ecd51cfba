//! Reader of Codex CLI rollout files (`sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`),
//! following codex-cli 0.169 / openai/codex@4e7399c6b987 (AGENT-FORMATS.md section 2):
//! which lines deserialize, how the resumed history is rebuilt, and what the picker lists.

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use super::foreign::{
    ConversationMark, ConversationUpdate, ForeignReader, ForeignSummary, MessagePieces, MessageRef,
    Piece,
};
use crate::json::{RawObject, as_string, offset_in, quote};
use crate::sources::growth::{KeptCell, Resumed};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::MutexGuard;

/// Head scan of the picker (CX `rollout/src/list.rs:105-106`).
const HEAD_RECORD_LIMIT: u64 = 10;
const USER_EVENT_SCAN_LIMIT: u64 = 200;
/// Legacy compaction keeps user messages up to this many tokens (CX `compact.rs:44`).
const COMPACT_USER_MESSAGE_MAX_TOKENS: usize = 20_000;
const BYTES_PER_TOKEN: usize = 4;
/// CX `core/templates/compact/summary_prefix.md`: marks a compaction summary message.
const SUMMARY_PREFIX: &str = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:";
/// Legacy request prefix stripped from the preview (CX `protocol.rs:104`).
const USER_MESSAGE_BEGIN: &str = "## My request for Codex:";

/// `EventMsg` variant tags (CX `protocol.rs`); any other tag fails the line.
const EVENT_TYPES: &[&str] = &[
    "error",
    "warning",
    "realtime_conversation_started",
    "realtime_conversation_realtime",
    "realtime_conversation_closed",
    "realtime_conversation_sdp",
    "model_reroute",
    "context_compacted",
    "thread_rolled_back",
    "task_started",
    "turn_started",
    "task_complete",
    "turn_complete",
    "token_count",
    "agent_message",
    "user_message",
    "agent_message_delta",
    "agent_reasoning",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content",
    "agent_reasoning_raw_content_delta",
    "agent_reasoning_section_break",
    "session_configured",
    "thread_name_updated",
    "mcp_startup_update",
    "mcp_startup_complete",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "image_generation_begin",
    "image_generation_end",
    "exec_command_begin",
    "exec_command_output_delta",
    "terminal_interaction",
    "exec_command_end",
    "view_image_tool_call",
    "exec_approval_request",
    "request_permissions",
    "request_user_input",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
    "elicitation_request",
    "apply_patch_approval_request",
    "guardian_assessment",
    "deprecation_notice",
    "background_event",
    "undo_started",
    "undo_completed",
    "stream_error",
    "patch_apply_begin",
    "patch_apply_updated",
    "patch_apply_end",
    "turn_diff",
    "get_history_entry_response",
    "mcp_list_tools_response",
    "list_skills_response",
    "realtime_conversation_list_voices_response",
    "skills_update_available",
    "plan_update",
    "turn_aborted",
    "shutdown_complete",
    "entered_review_mode",
    "exited_review_mode",
    "raw_response_item",
    "item_started",
    "item_completed",
    "hook_started",
    "hook_completed",
    "agent_message_content_delta",
    "plan_delta",
    "reasoning_content_delta",
    "reasoning_raw_content_delta",
    "collab_agent_spawn_begin",
    "collab_agent_spawn_end",
    "collab_agent_interaction_begin",
    "collab_agent_interaction_end",
    "collab_waiting_begin",
    "collab_waiting_end",
    "collab_close_begin",
    "collab_close_end",
    "collab_resume_begin",
    "collab_resume_end",
];

/// Contextual user fragments: (start, end) markers (CX `context/*.rs`).
const CONTEXTUAL_USER_MARKERS: &[(&str, &str)] = &[
    ("# AGENTS.md instructions for ", "</INSTRUCTIONS>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
];
const CONTEXTUAL_DEVELOPER_PREFIXES: &[&str] = &[
    "<permissions instructions>",
    "<model_switch>",
    "<collaboration_mode>",
    "<realtime_conversation>",
    "<personality_spec>",
];

/// One history item: its `conversation.json` pieces plus what the history rules need.
#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Item {
    pieces: MessagePieces,
    role: String,
    ghost: bool,
    /// A user message that starts a user turn (not contextual).
    turn_boundary: bool,
    /// A contextual developer/user message, trimmed with a rolled-back turn.
    contextual: bool,
    /// The text legacy compaction keeps, for real user messages that are not a summary
    /// (`None` once older than the compaction budget: see `prune_user_texts`).
    user_text: Option<String>,
    /// Where the item came from, for `messages`.
    at: At,
}

/// The line an item came from and what it says of the item beyond its JSON.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct At {
    /// Byte offset of the line (a `compacted` line for the items it holds).
    line: u64,
    /// Creation order among every item the file made.
    seq: u64,
    timestamp: Option<Box<str>>,
    /// A legacy compaction's summary message.
    summary: bool,
    /// The model of the turn (the latest `turn_context`), for assistant items.
    model: Option<std::sync::Arc<str>>,
}

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Meta {
    id: String,
    cwd: String,
    timestamp: String,
    model_provider: Option<String>,
}

/// Reader of one rollout file (see `ForeignReader`).
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct CodexReader {
    /// Non-blank lines seen.
    lines: u64,
    first_line_is_meta: bool,
    invalid_utf8: bool,
    entries: u64,
    malformed: u64,
    meta: Option<Meta>,
    loose_id: Option<String>,
    loose_cwd: Option<String>,
    first_item_time: Option<String>,
    preview: Option<String>,
    title: Option<String>,
    head_scanned: u64,
    head_done: bool,
    head_meta: bool,
    head_user: bool,
    head_failed: bool,
    history: Vec<Item>,
    /// Items a compaction or a rollback took out of `history` (for `messages`).
    past: Vec<Item>,
    /// Items made so far.
    made: u64,
    /// The latest `turn_context`'s model.
    model: Option<std::sync::Arc<str>>,
    compactions: u64,
    /// Absolute offset where the consumed lines end.
    end: u64,
    /// The last rollout line's timestamp: the session's last update (§12: times come
    /// from the content, not from the file's mtime).
    last_time: Option<String>,
    /// Times `history` lost items or was replaced (a compaction, a rollback): while
    /// it is unchanged the history only grew.
    #[borsh(skip)]
    rewrites: u64,
    /// The conversation as last given, extended by the items pushed since.
    #[borsh(skip)]
    resumed: KeptCell<u32, Roles>,
}

/// Messages per role of a kept conversation (what the summary counts).
type Roles = (u64, BTreeMap<String, u64>);

impl CodexReader {
    pub fn new() -> CodexReader {
        CodexReader::default()
    }

    /// Whether `name` is a rollout file name: `rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl`.
    pub fn is_rollout_file_name(name: &str) -> bool {
        let Some(rest) = name
            .strip_prefix("rollout-")
            .and_then(|r| r.strip_suffix(".jsonl"))
        else {
            return false;
        };
        // The uuid is the last 36 chars, after a `-`.
        if rest.len() < 36 + 1 + 19 || !rest.is_char_boundary(rest.len() - 36) {
            return false;
        }
        let (time, id) = rest.split_at(rest.len() - 36);
        let Some(time) = time.strip_suffix('-') else {
            return false;
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let time_ok = time.len() == 19
            && time.as_bytes()[10] == b'T'
            && time[..10].split('-').all(digits)
            && time[11..].split('-').all(digits)
            && time[..10].split('-').count() == 3
            && time[11..].split('-').count() == 3;
        time_ok && uuid::Uuid::try_parse(id).is_ok()
    }

    /// Parses `$CODEX_HOME/session_index.jsonl`: id → thread name, the latest line for
    /// an id wins (CX `rollout/src/session_index.rs`). Bad lines are skipped.
    pub fn read_session_index(bytes: &[u8]) -> HashMap<String, String> {
        let mut out = HashMap::new();
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(text) = std::str::from_utf8(line) else {
                continue;
            };
            let Ok(obj) = RawObject::parse(text) else {
                continue;
            };
            let Some(id) = obj.get("id").and_then(as_string) else {
                continue;
            };
            let Some(name) = obj.get("thread_name").and_then(as_string) else {
                continue;
            };
            out.insert(id, name);
        }
        out
    }

    fn line(&mut self, start: u64, raw: &[u8]) {
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            // `read_to_string` fails the whole file; the picker's line reader fails
            // too if this is within the head.
            self.invalid_utf8 = true;
            if raw.iter().all(|b| b.is_ascii_whitespace()) {
                return;
            }
            self.lines += 1;
            self.malformed += 1;
            if self.head_open() {
                self.head_failed = true;
                self.head_done = true;
            }
            return;
        };
        if text.trim().is_empty() {
            return;
        }
        self.lines += 1;
        let first = self.lines == 1;
        let in_head = self.head_open();
        if in_head {
            self.head_scanned += 1;
        }
        let parsed = RawObject::parse(text).ok();
        if first {
            self.loose_first_line(parsed.as_ref());
        }
        let ok = match parsed {
            Some(obj) => self.rollout_line(start, text, &obj, first, in_head),
            None => false,
        };
        if ok {
            self.entries += 1;
        } else {
            self.malformed += 1;
        }
        if in_head && self.head_meta && self.head_user {
            self.head_done = true;
        }
    }

    fn head_open(&self) -> bool {
        !self.head_done
            && (self.head_scanned < HEAD_RECORD_LIMIT
                || (self.head_meta
                    && !self.head_user
                    && self.head_scanned < HEAD_RECORD_LIMIT + USER_EVENT_SCAN_LIMIT))
    }

    /// An id and cwd for a file whose metadata does not deserialize (fen-fs still shows
    /// it, as not resumable): a loose `session_meta` payload or a legacy `{id}` header.
    fn loose_first_line(&mut self, obj: Option<&RawObject>) {
        let Some(obj) = obj else { return };
        let payload = obj
            .get("payload")
            .and_then(|p| RawObject::parse(p.get()).ok());
        let get = |k: &str| match &payload {
            Some(p) => p.get(k).and_then(as_string),
            None => obj.get(k).and_then(as_string),
        };
        self.loose_id = get("id");
        self.loose_cwd = get("cwd");
    }

    /// One non-blank line that parsed as a JSON object; false when it does not
    /// deserialize as a `RolloutLine`.
    fn rollout_line(
        &mut self,
        start: u64,
        text: &str,
        obj: &RawObject,
        first: bool,
        in_head: bool,
    ) -> bool {
        if !obj.get("timestamp").is_some_and(is_str) {
            return false;
        }
        let (Some(kind), Some(payload)) = (obj.get("type").and_then(as_string), obj.get("payload"))
        else {
            return false;
        };
        let Ok(p) = RawObject::parse(payload.get()) else {
            return false;
        };
        let base = start + offset_in(text, payload.get()) as u64;
        let ts = obj.get("timestamp").and_then(as_string);
        if let Some(t) = ts
            .as_ref()
            .filter(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok())
        {
            self.last_time = Some(t.clone());
        }
        match kind.as_str() {
            "session_meta" => {
                let Some(meta) = session_meta(&p) else {
                    return false;
                };
                if first {
                    self.first_line_is_meta = true;
                }
                if in_head {
                    self.head_meta = true;
                }
                if self.meta.is_none() {
                    self.meta = Some(meta);
                }
                true
            }
            "response_item" => {
                let Some(item) = response_item(base, payload.get(), &p) else {
                    return false;
                };
                if self.first_item_time.is_none() {
                    self.first_item_time = obj.get("timestamp").and_then(as_string);
                }
                if let Some(mut item) = item {
                    self.stamp(&mut item, start, ts.as_deref());
                    self.push(item);
                }
                true
            }
            "compacted" => {
                if !p.get("message").is_some_and(is_str) {
                    return false;
                }
                match p.get("replacement_history") {
                    Some(r) if !crate::json::is_null(r) => {
                        let Ok(list) = serde_json::from_str::<Vec<&RawValue>>(r.get()) else {
                            return false;
                        };
                        let mut items = Vec::new();
                        for v in list {
                            let Ok(o) = RawObject::parse(v.get()) else {
                                return false;
                            };
                            let at = start + offset_in(text, v.get()) as u64;
                            match response_item(at, v.get(), &o) {
                                None => return false,
                                // `replace` takes the list as is, `Other` included: it
                                // is shown like any other non-tool item.
                                Some(item) => {
                                    items.push(item.unwrap_or_else(|| other_item(at, v.get(), &o)))
                                }
                            }
                        }
                        for item in &mut items {
                            self.stamp(item, start, ts.as_deref());
                        }
                        let old = std::mem::replace(&mut self.history, items);
                        self.retire(old);
                    }
                    _ => {
                        let message = p.get("message").and_then(as_string).unwrap_or_default();
                        self.legacy_compaction(&message, start, ts.as_deref());
                    }
                }
                self.compactions += 1;
                true
            }
            "turn_context" => {
                let ok = [
                    "cwd",
                    "approval_policy",
                    "sandbox_policy",
                    "model",
                    "summary",
                ]
                .iter()
                .all(|k| p.get(k).is_some_and(|v| !crate::json::is_null(v)));
                if ok && let Some(model) = p.get("model").and_then(as_string) {
                    self.model = Some(model.into());
                }
                ok
            }
            "event_msg" => self.event(&p, in_head),
            _ => false,
        }
    }

    fn event(&mut self, p: &RawObject, in_head: bool) -> bool {
        let Some(kind) = p.get("type").and_then(as_string) else {
            return false;
        };
        if !EVENT_TYPES.contains(&kind.as_str()) {
            return false;
        }
        match kind.as_str() {
            "user_message" => {
                let Some(message) = p.get("message").and_then(as_string) else {
                    return false;
                };
                let text = match message.find(USER_MESSAGE_BEGIN) {
                    Some(i) => &message[i + USER_MESSAGE_BEGIN.len()..],
                    None => &message,
                };
                self.user_event(text.trim(), in_head);
            }
            "item_completed" => {
                let Some(item) = p.get("item").map(|i| RawObject::parse(i.get())) else {
                    return false;
                };
                let Ok(item) = item else { return false };
                if item.get("type").and_then(as_string).as_deref() == Some("UserMessage") {
                    // codex-cli 0.169 writes the prompt only here (AGENT-FORMATS.md §2).
                    let text = item
                        .get("content")
                        .and_then(|c| serde_json::from_str::<Vec<&RawValue>>(c.get()).ok())
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|c| RawObject::parse(c.get()).ok())
                        .filter(|c| c.get("type").and_then(as_string).as_deref() == Some("text"))
                        .filter_map(|c| c.get("text").and_then(as_string))
                        .collect::<String>();
                    self.user_event(&text, in_head);
                }
            }
            "thread_rolled_back" => {
                let Some(n) = p
                    .get("num_turns")
                    .and_then(|v| serde_json::from_str::<u32>(v.get()).ok())
                else {
                    return false;
                };
                self.rollback(n as usize);
            }
            "thread_name_updated" => {
                if !p.get("thread_id").is_some_and(is_uuid) {
                    return false;
                }
                match p.get("thread_name") {
                    None => {}
                    Some(v) if crate::json::is_null(v) => {}
                    Some(v) => match as_string(v) {
                        Some(name) => {
                            let name = name.trim();
                            if !name.is_empty() {
                                self.title = Some(name.to_string());
                            }
                        }
                        None => return false,
                    },
                }
            }
            _ => {}
        }
        true
    }

    fn user_event(&mut self, text: &str, in_head: bool) {
        if in_head {
            self.head_user = true;
        }
        if self.preview.is_none() && !text.is_empty() {
            self.preview = Some(text.to_string());
        }
    }

    /// Records where `item` came from (the line at `line`, written at `ts`).
    fn stamp(&mut self, item: &mut Item, line: u64, ts: Option<&str>) {
        self.made += 1;
        item.at = At {
            line,
            seq: self.made,
            timestamp: ts.map(Into::into),
            summary: item.at.summary,
            model: (item.role == "assistant")
                .then(|| self.model.clone())
                .flatten(),
        };
    }

    /// Keeps items taken out of the history, for `messages` (their texts for legacy
    /// compaction are no longer needed).
    fn retire(&mut self, items: Vec<Item>) {
        self.rewrites += 1;
        self.past
            .extend(items.into_iter().filter(|i| !i.ghost).map(|mut i| {
                i.user_text = None;
                i
            }));
    }

    fn push(&mut self, item: Item) {
        let has_text = item.user_text.is_some();
        self.history.push(item);
        if has_text {
            self.prune_user_texts();
        }
    }

    /// Legacy compaction only keeps the newest user messages up to its budget, so older
    /// texts are dropped (a later rollback past them then loses them: rare enough).
    fn prune_user_texts(&mut self) {
        let mut budget = COMPACT_USER_MESSAGE_MAX_TOKENS * BYTES_PER_TOKEN * 2;
        for item in self.history.iter_mut().rev() {
            if let Some(t) = &item.user_text {
                if budget == 0 {
                    item.user_text = None;
                } else {
                    budget = budget.saturating_sub(t.len().max(1));
                }
            }
        }
    }

    /// CX `compact.rs` `build_compacted_history`: the newest user messages within 20 000
    /// tokens (the oldest kept one cut in the middle), then the summary.
    fn legacy_compaction(&mut self, summary: &str, line: u64, ts: Option<&str>) {
        let mut remaining = COMPACT_USER_MESSAGE_MAX_TOKENS;
        let mut selected = Vec::new();
        for text in self
            .history
            .iter()
            .rev()
            .filter_map(|i| i.user_text.as_ref())
        {
            if remaining == 0 {
                break;
            }
            let tokens = approx_token_count(text);
            if tokens <= remaining {
                selected.push(text.clone());
                remaining -= tokens;
            } else {
                selected.push(truncate_middle_tokens(text, remaining));
                break;
            }
        }
        selected.reverse();
        let summary = if summary.is_empty() {
            "(no summary available)"
        } else {
            summary
        };
        let mut history: Vec<Item> = selected
            .into_iter()
            .map(|t| synthesized_user(t, true))
            .collect();
        let mut summary = synthesized_user(summary.to_string(), false);
        summary.at.summary = true;
        history.push(summary);
        for item in &mut history {
            self.stamp(item, line, ts);
        }
        let old = std::mem::replace(&mut self.history, history);
        self.retire(old);
    }

    /// CX `history.rs` `drop_last_n_user_turns`.
    fn rollback(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let users: Vec<usize> = (0..self.history.len())
            .filter(|&i| self.history[i].turn_boundary)
            .collect();
        let Some(&first) = users.first() else { return };
        let mut cut = if n >= users.len() {
            first
        } else {
            users[users.len() - n]
        };
        while cut > first && self.history[cut - 1].contextual {
            cut -= 1;
        }
        let dropped = self.history.split_off(cut);
        self.retire(dropped);
    }

    /// This reader with the unterminated tail read as one more line, as
    /// `read_to_string` + `lines()` would.
    fn with_tail(&self, tail: &[u8], tail_start: u64) -> Cow<'_, CodexReader> {
        if tail.is_empty() {
            return Cow::Borrowed(self);
        }
        let mut r = self.clone();
        let line = tail.strip_suffix(b"\r").unwrap_or(tail);
        r.line(tail_start, line);
        Cow::Owned(r)
    }

    /// Why codex-cli 0.169 would refuse to resume, if it would.
    fn not_resumable(&self) -> Option<&'static str> {
        if self.invalid_utf8 {
            Some("the file is not valid UTF-8")
        } else if self.lines == 0 {
            Some("the rollout file is empty")
        } else if !self.first_line_is_meta {
            Some("the rollout file does not start with session metadata")
        } else {
            None
        }
    }

    /// Where the consumed bytes end (the tail's absolute offset).
    fn consumed_end(&self) -> u64 {
        self.end
    }

    /// The conversation kept between reads (history positions of its items, ghosts
    /// left out), brought up to date: the items pushed since go to its end while the
    /// history was not rewritten, else it is taken again.
    fn kept(&self) -> MutexGuard<'_, Option<Resumed<u32, Roles>>> {
        let mut kept = self.resumed.lock();
        let current = kept
            .as_ref()
            .is_some_and(|k| k.state.0 == self.rewrites && k.covered <= self.history.len());
        if !current {
            *kept = Some(Resumed::new(
                0,
                Vec::new(),
                (self.rewrites, BTreeMap::new()),
            ));
        }
        let k = kept.as_mut().expect("just made");
        for (i, item) in self.history.iter().enumerate().skip(k.covered) {
            if !item.ghost {
                k.order.push(i as u32);
                *k.state.1.entry(item.role.clone()).or_insert(0) += 1;
            }
        }
        k.covered = self.history.len();
        kept
    }

    /// The conversation, as what it added to the one `since` marks when that is an
    /// earlier state of the kept one (the tail holds no line), with the roles.
    fn conversation_of(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (
        ConversationUpdate,
        Option<ConversationMark>,
        BTreeMap<String, u64>,
    ) {
        if !tail.is_empty() {
            let r = self.with_tail(tail, self.consumed_end());
            let items: Vec<&Item> = match r.not_resumable() {
                Some(_) => Vec::new(),
                None => r.history.iter().filter(|i| !i.ghost).collect(),
            };
            let mut roles = BTreeMap::new();
            for i in &items {
                *roles.entry(i.role.clone()).or_insert(0) += 1;
            }
            let all = items.into_iter().map(|i| i.pieces.clone()).collect();
            return (ConversationUpdate::Whole(all), None, roles);
        }
        if self.not_resumable().is_some() {
            return (ConversationUpdate::Whole(Vec::new()), None, BTreeMap::new());
        }
        let kept = self.kept();
        let k = kept.as_ref().expect("brought up to date");
        let update = k.update(since, |&i| self.history[i as usize].pieces.clone());
        (update, Some(k.mark()), k.state.1.clone())
    }
}

impl ForeignReader for CodexReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let Some(last_nl) = memchr::memrchr(b'\n', bytes) else {
            return 0;
        };
        let mut pos = 0usize;
        for nl in memchr::memchr_iter(b'\n', &bytes[..=last_nl]) {
            let line = &bytes[pos..nl];
            let raw = line.strip_suffix(b"\r").unwrap_or(line);
            self.line(offset + pos as u64, raw);
            pos = nl + 1;
        }
        self.end = offset + last_nl as u64 + 1;
        last_nl as u64 + 1
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let (_, _, roles) = self.conversation_of(tail, None);
        self.summary_of(tail, roles)
    }

    fn summary_and_conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ForeignSummary, ConversationUpdate, Option<ConversationMark>) {
        let (update, mark, roles) = self.conversation_of(tail, since);
        (self.summary_of(tail, roles), update, mark)
    }

    fn conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        let (update, mark, _) = self.conversation_of(tail, since);
        (update, mark)
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        let r = self.with_tail(tail, self.consumed_end());
        if r.not_resumable().is_some() {
            return Vec::new();
        }
        r.history
            .iter()
            .filter(|i| !i.ghost)
            .map(|i| i.pieces.clone())
            .collect()
    }

    /// Entry ids are the byte offsets of the lines the items came from (decimal; the
    /// items a `compacted` line holds share its offset), times the lines'. With
    /// `history`: every item the file made, in the order it made them, those a
    /// compaction or a rollback took out included.
    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let r = self.with_tail(tail, self.consumed_end());
        let resumable = r.not_resumable().is_none();
        let provider = r.meta.as_ref().and_then(|m| m.model_provider.clone());
        let refer = |i: &Item, in_conversation: bool| MessageRef {
            pieces: i.pieces.clone(),
            entry: Some(i.at.line.to_string()),
            timestamp: i.at.timestamp.as_deref().map(str::to_string),
            in_conversation,
            injected: false,
            summary: i.at.summary,
            model: i.at.model.as_deref().map(|m| crate::neutral::ModelRef {
                provider: provider.clone(),
                api: None,
                model: m.to_string(),
            }),
        };
        let current = r.history.iter().filter(|i| !i.ghost);
        if !history {
            return if resumable {
                current.map(|i| refer(i, true)).collect()
            } else {
                Vec::new()
            };
        }
        let mut all: Vec<(u64, MessageRef)> = current
            .map(|i| (i.at.seq, refer(i, resumable)))
            .chain(r.past.iter().map(|i| (i.at.seq, refer(i, false))))
            .collect();
        all.sort_by_key(|(seq, _)| *seq);
        all.into_iter().map(|(_, m)| m).collect()
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        crate::sources::foreign::save_borsh(self)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        crate::sources::foreign::restore_borsh(self, state)
    }
}

impl CodexReader {
    /// The summary, given the conversation's messages per role.
    fn summary_of(&self, tail: &[u8], roles: BTreeMap<String, u64>) -> ForeignSummary {
        let r = self.with_tail(tail, self.consumed_end());
        let reason = r.not_resumable();
        let listed = !r.head_failed && r.head_meta && r.head_user;
        let messages = roles.values().sum();
        ForeignSummary {
            id: r
                .meta
                .as_ref()
                .map(|m| m.id.clone())
                .or_else(|| r.loose_id.clone())
                .unwrap_or_default(),
            cwd: r
                .meta
                .as_ref()
                .map(|m| m.cwd.clone())
                .or_else(|| r.loose_cwd.clone()),
            title: r.title.clone(),
            preview: r.preview.clone(),
            created_at: r
                .meta
                .as_ref()
                .map(|m| m.timestamp.clone())
                .or_else(|| r.first_item_time.clone()),
            updated_at: r.last_time.clone(),
            listed,
            resumable: reason.is_none(),
            not_resumable_reason: reason.map(str::to_string),
            entries: r.entries,
            malformed_lines: r.malformed,
            messages,
            roles,
            compactions: r.compactions,
            ..ForeignSummary::default()
        }
    }
}

/// A JSON string that Rust's `String` deserializes. The value was validated with
/// its line, so only a `\u` escape (a lone surrogate) can still fail: without one
/// the (often huge) text is not decoded at all.
fn is_str(v: &RawValue) -> bool {
    let t = v.get();
    t.starts_with('"')
        && (memchr::memmem::find(t.as_bytes(), b"\\u").is_none() || as_string(v).is_some())
}

fn is_uuid(v: &RawValue) -> bool {
    as_string(v).is_some_and(|s| uuid::Uuid::try_parse(&s).is_ok())
}

fn is_null_or(v: Option<&RawValue>, ok: impl Fn(&RawValue) -> bool) -> bool {
    match v {
        None => true,
        Some(v) if crate::json::is_null(v) => true,
        Some(v) => ok(v),
    }
}

fn array(v: &RawValue) -> Option<Vec<&RawValue>> {
    serde_json::from_str::<Vec<&RawValue>>(v.get()).ok()
}

fn range(base: u64, outer: &str, inner: &RawValue) -> Piece {
    Piece::Range {
        start: base + offset_in(outer, inner.get()) as u64,
        len: inner.get().len() as u64,
    }
}

/// `SessionMeta` (CX `protocol.rs:2802-2830`): the required fields, and a subagent
/// source's `parent_thread_id`/`depth`.
fn session_meta(p: &RawObject) -> Option<Meta> {
    let id = p.get("id").filter(|v| is_uuid(v)).and_then(as_string)?;
    let timestamp = p.get("timestamp").and_then(as_string)?;
    let cwd = p.get("cwd").and_then(as_string)?;
    p.get("originator").filter(|v| is_str(v))?;
    p.get("cli_version").filter(|v| is_str(v))?;
    if !is_null_or(p.get("forked_from_id"), is_uuid) || !is_null_or(p.get("source"), source_ok) {
        return None;
    }
    Some(Meta {
        id,
        cwd,
        timestamp,
        model_provider: p.get("model_provider").and_then(as_string),
    })
}

fn source_ok(v: &RawValue) -> bool {
    if is_str(v) {
        return true;
    }
    let Ok(o) = RawObject::parse(v.get()) else {
        return false;
    };
    if o.fields.len() != 1 {
        return false;
    }
    let (k, v) = &o.fields[0];
    match k.as_ref() {
        "custom" => is_str(v),
        "subagent" => {
            if let Some(s) = as_string(v) {
                return matches!(s.as_str(), "review" | "compact" | "memory_consolidation");
            }
            let Ok(o) = RawObject::parse(v.get()) else {
                return false;
            };
            if o.fields.len() != 1 {
                return false;
            }
            let (k, v) = &o.fields[0];
            match k.as_ref() {
                "other" => is_str(v),
                "thread_spawn" => RawObject::parse(v.get()).is_ok_and(|t| {
                    t.get("parent_thread_id").is_some_and(is_uuid)
                        && t.get("depth")
                            .is_some_and(|d| serde_json::from_str::<i32>(d.get()).is_ok())
                }),
                _ => false,
            }
        }
        _ => false,
    }
}

/// A message content item: `input_text | output_text | input_image` (CX `models.rs:396`).
fn content_item_ok(o: &RawObject, output: bool) -> bool {
    match o.get("type").and_then(as_string).as_deref() {
        Some("input_text") => o.get("text").is_some_and(is_str),
        Some("output_text") if !output => o.get("text").is_some_and(is_str),
        Some("input_image") => {
            o.get("image_url").is_some_and(is_str)
                && is_null_or(o.get("detail"), |d| {
                    matches!(
                        as_string(d).as_deref(),
                        Some("auto" | "low" | "high" | "original")
                    )
                })
        }
        _ => false,
    }
}

/// A tool output: a string or `input_text|input_image` items (CX `models.rs:1084`).
fn tool_output_ok(v: Option<&RawValue>) -> bool {
    let Some(v) = v else { return false };
    if is_str(v) {
        return true;
    }
    array(v).is_some_and(|items| {
        items
            .iter()
            .all(|i| RawObject::parse(i.get()).is_ok_and(|o| content_item_ok(&o, true)))
    })
}

/// Validates one `ResponseItem` payload (`text` is its JSON, starting at absolute
/// offset `base`): `None` when it does not deserialize, `Some(None)` when it does but
/// never enters history (`Other`, a `system` message), else the history item.
fn response_item(base: u64, text: &str, p: &RawObject) -> Option<Option<Item>> {
    let kind = p.get("type").and_then(as_string)?;
    let s = |k: &str| p.get(k).is_some_and(is_str);
    let opt_s = |k: &str| is_null_or(p.get(k), is_str);
    let present = |k: &str| p.get(k).is_some_and(|v| !crate::json::is_null(v));
    let ok = match kind.as_str() {
        "message" => return message_item(base, text, p),
        "reasoning" => {
            let summary = p.get("summary").and_then(array).is_some_and(|a| {
                a.iter().all(|i| {
                    RawObject::parse(i.get()).is_ok_and(|o| {
                        o.get("type").and_then(as_string).as_deref() == Some("summary_text")
                            && o.get("text").is_some_and(is_str)
                    })
                })
            });
            let content = is_null_or(p.get("content"), |c| {
                array(c).is_some_and(|a| {
                    a.iter().all(|i| {
                        RawObject::parse(i.get()).is_ok_and(|o| {
                            matches!(
                                o.get("type").and_then(as_string).as_deref(),
                                Some("reasoning_text" | "text")
                            ) && o.get("text").is_some_and(is_str)
                        })
                    })
                })
            });
            summary && content && opt_s("encrypted_content")
        }
        "local_shell_call" => opt_s("call_id") && present("status") && present("action"),
        "function_call" => s("name") && s("arguments") && s("call_id") && opt_s("namespace"),
        "tool_search_call" => opt_s("call_id") && s("execution") && p.has("arguments"),
        "function_call_output" => s("call_id") && tool_output_ok(p.get("output")),
        "custom_tool_call" => s("call_id") && s("name") && s("input"),
        "custom_tool_call_output" => {
            s("call_id") && opt_s("name") && tool_output_ok(p.get("output"))
        }
        "tool_search_output" => {
            opt_s("call_id")
                && s("status")
                && s("execution")
                && p.get("tools").and_then(array).is_some()
        }
        "web_search_call" => opt_s("status"),
        "image_generation_call" => s("id") && s("status") && s("result"),
        "ghost_snapshot" => {
            if !present("ghost_commit") {
                return None;
            }
            let mut item = other_item(base, text, p);
            item.ghost = true;
            return Some(Some(item));
        }
        "compaction" | "compaction_summary" => s("encrypted_content"),
        // An unknown type is `Other`: it deserializes and is dropped from history.
        _ => return Some(None),
    };
    if !ok {
        return None;
    }
    Some(Some(other_item(base, text, p)))
}

/// A non-message item, shown whole inside a `tool` (outputs) or `assistant` message.
fn other_item(base: u64, text: &str, p: &RawObject) -> Item {
    let kind = p.get("type").and_then(as_string).unwrap_or_default();
    let role = if kind.ends_with("_output") {
        "tool"
    } else {
        "assistant"
    };
    Item {
        pieces: vec![
            Piece::Text(format!("{{\"role\":\"{role}\",\"content\":[")),
            Piece::Range {
                start: base,
                len: text.len() as u64,
            },
            Piece::Text("]}".into()),
        ],
        role: role.into(),
        ghost: false,
        turn_boundary: false,
        contextual: false,
        user_text: None,
        at: At::default(),
    }
}

fn message_item(base: u64, text: &str, p: &RawObject) -> Option<Option<Item>> {
    let role_v = p.get("role")?;
    let role = as_string(role_v)?;
    let content_v = p.get("content")?;
    let content: Vec<RawObject> = array(content_v)?
        .into_iter()
        .map(|c| RawObject::parse(c.get()).ok())
        .collect::<Option<_>>()?;
    if !content.iter().all(|c| content_item_ok(c, false))
        || !is_null_or(p.get("id"), is_str)
        || !is_null_or(p.get("end_turn"), |v| matches!(v.get(), "true" | "false"))
        || !is_null_or(p.get("phase"), |v| {
            matches!(as_string(v).as_deref(), Some("commentary" | "final_answer"))
        })
    {
        return None;
    }
    if role == "system" {
        return Some(None);
    }
    let texts: Vec<String> = content
        .iter()
        .filter(|c| c.get("type").and_then(as_string).as_deref() == Some("input_text"))
        .filter_map(|c| c.get("text").and_then(as_string))
        .collect();
    let contextual = match role.as_str() {
        "user" => texts.iter().any(|t| is_contextual_user_text(t)),
        "developer" => texts.iter().any(|t| {
            let t = t.trim_start();
            CONTEXTUAL_DEVELOPER_PREFIXES
                .iter()
                .any(|m| starts_with_ignore_case(t, m))
        }),
        _ => false,
    };
    let turn_boundary = role == "user" && !contextual;
    let user_text = if turn_boundary {
        let t = texts.concat();
        (!t.starts_with(&format!("{SUMMARY_PREFIX}\n"))).then_some(t)
    } else {
        None
    };
    let mut pieces = vec![
        Piece::Text("{\"role\":".into()),
        range(base, text, role_v),
        Piece::Text(",\"content\":".into()),
        range(base, text, content_v),
    ];
    for (k, v) in &p.fields {
        if matches!(k.as_ref(), "type" | "role" | "content") {
            continue;
        }
        pieces.push(Piece::Text(format!(",{}:", quote(k))));
        pieces.push(range(base, text, v));
    }
    pieces.push(Piece::Text("}".into()));
    Some(Some(Item {
        pieces,
        role,
        ghost: false,
        turn_boundary,
        contextual,
        user_text,
        at: At::default(),
    }))
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.get(..prefix.len())
        .is_some_and(|c| c.eq_ignore_ascii_case(prefix))
}

/// CX `fragment.rs:47-64` (markers at both ends, case-insensitive), plus hook prompts.
fn is_contextual_user_text(text: &str) -> bool {
    let t = text.trim();
    if starts_with_ignore_case(t, "<hook_prompt") {
        return true;
    }
    CONTEXTUAL_USER_MARKERS.iter().any(|(start, end)| {
        starts_with_ignore_case(t, start)
            && t.get(t.len().saturating_sub(end.len())..)
                .is_some_and(|c| c.eq_ignore_ascii_case(end))
    })
}

fn synthesized_user(text: String, keep: bool) -> Item {
    Item {
        pieces: vec![Piece::Text(format!(
            "{{\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":{}}}]}}",
            quote(&text)
        ))],
        role: "user".into(),
        ghost: false,
        turn_boundary: true,
        contextual: false,
        user_text: keep.then_some(text),
        at: At::default(),
    }
}

fn approx_token_count(text: &str) -> usize {
    text.len().saturating_add(BYTES_PER_TOKEN - 1) / BYTES_PER_TOKEN
}

/// CX `utils/string/src/truncate.rs` `truncate_middle_with_token_budget`.
fn truncate_middle_tokens(s: &str, max_tokens: usize) -> String {
    let max_bytes = max_tokens.saturating_mul(BYTES_PER_TOKEN);
    if s.is_empty() || s.len() <= max_bytes {
        return s.to_string();
    }
    let marker = |removed_bytes: usize| {
        format!(
            "…{} tokens truncated…",
            removed_bytes.saturating_add(BYTES_PER_TOKEN - 1) / BYTES_PER_TOKEN
        )
    };
    if max_bytes == 0 {
        return marker(s.len());
    }
    let left = max_bytes / 2;
    let right = max_bytes - left;
    let tail_target = s.len().saturating_sub(right);
    let mut prefix_end = 0;
    let mut suffix_start = s.len();
    let mut started = false;
    for (idx, ch) in s.char_indices() {
        let end = idx + ch.len_utf8();
        if end <= left {
            prefix_end = end;
            continue;
        }
        if idx >= tail_target && !started {
            suffix_start = idx;
            started = true;
        }
    }
    suffix_start = suffix_start.max(prefix_end);
    format!(
        "{}{}{}",
        &s[..prefix_end],
        marker(s.len() - max_bytes),
        &s[suffix_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `is_str` decodes only texts with a `\u` escape, and answers as decoding does.
    #[test]
    fn is_str_is_what_string_deserialization_accepts() {
        for (text, want) in [
            (r#""plain\n text \"quoted\"""#, true),
            (r#""\u00e9 ok""#, true),
            (r#""\ud83d\ude00""#, true),
            (r#""lone \ud800 surrogate""#, false),
            (r#""\\u not an escape""#, true),
            ("42", false),
            ("null", false),
        ] {
            let v: &RawValue = serde_json::from_str(text).unwrap();
            assert_eq!(is_str(v), want, "{text}");
            assert_eq!(is_str(v), text.starts_with('"') && as_string(v).is_some());
        }
    }
}
