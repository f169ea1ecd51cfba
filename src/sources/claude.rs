//! Reader of Claude Code session files (`projects/<slug>/<uuid>.jsonl`), see
//! `ForeignReader` and AGENT-FORMATS.md section 1. Sources cited as in that file:
//! SDK = claude-agent-sdk 0.2.187 `_internal/sessions.py`, BB-C = the CLI observed.
//!
//! Feeding keeps one small record per conversation line (ids, flags, byte ranges of
//! `message.role`/`message.content`) plus the listing facts; the chain is computed
//! from the records once and then extended by the records appended after it
//! (`chain.rs`), so an append only parses and walks the new lines.

mod chain;
mod helper;
pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::{is_injected_text, to_neutral};

use crate::json::offset_in;
use crate::json::strict::{valid_array_items, valid_object_fields};
use crate::sources::foreign::{
    ConversationMark, ConversationUpdate, ForeignReader, ForeignSummary, MessagePieces, MessageRef,
    Piece, Spawned, SubagentFacts,
};
use crate::sources::growth::{KeptCell, Resumed};
use chain::{Growth, chain, walk};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::MutexGuard;

/// The SDK's listing reads only this much of the file's head and tail (SDK `:33`).
const LITE: u64 = 65536;

/// Whether Claude Code treats `name` as a session file: `<uuid>.jsonl` only (SDK
/// `:538`); `agent-*.jsonl` are subagent transcripts.
pub fn is_session_file_name(name: &str) -> bool {
    name.strip_suffix(".jsonl").is_some_and(is_uuid)
}

/// The agent id of a subagent transcript's name, `agent-<id>.jsonl`.
pub fn subagent_file_id(name: &str) -> Option<&str> {
    name.strip_prefix("agent-")?
        .strip_suffix(".jsonl")
        .filter(|id| !id.is_empty())
}

/// Whether the agent id names a forked helper run rather than a subagent: Claude Code
/// 2.1.330's agent ids are `a(<label>-)?<16 hex>` (`^a(?:[\w-]{1,63}-)?[0-9a-f]{16}$`
/// in its code), the label naming the fork (`side_question` for a `/btw` side
/// question, `compact`, `prompt_suggestion`, ...). Such a run (where a version
/// recorded one: 2.1.330 runs side questions and compactions with `skipTranscript`)
/// replays the parent's messages before its one request, so it is not a session of
/// its own. An Agent tool subagent's id has no label (`a` and 16 hex digits; 7 in
/// older versions).
pub fn is_forked_helper_id(id: &str) -> bool {
    let b = id.as_bytes();
    if b.len() < 19 || b[0] != b'a' {
        return false;
    }
    let (head, hex) = b.split_at(b.len() - 16);
    let label = &head[1..head.len() - 1];
    hex.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        && head[head.len() - 1] == b'-'
        && (1..=63).contains(&label.len())
        && label
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
}

/// Whether `name` is a subagent's transcript shown as a session: `agent-<id>.jsonl`,
/// not a forked helper's.
pub fn is_subagent_file_name(name: &str) -> bool {
    subagent_file_id(name).is_some_and(|id| !is_forked_helper_id(id))
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Kind {
    User,
    Assistant,
    Progress,
    LocalCommand,
    CompactBoundary,
    OtherSystem,
    Attachment,
}

/// How an entry appears in `conversation.json` (byte ranges of the file).
#[derive(Debug, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Render {
    None,
    /// `{"role": <role>, "content": <content>}`; `role` None means "use the type".
    Message {
        role: Option<(u64, u64)>,
        role_name: Box<str>,
        content: (u64, u64),
    },
    /// A `system/local_command` entry's `content` string, sent as a user message.
    Local((u64, u64)),
    /// An attachment's `rendered[].content` strings, sent as user text blocks.
    Attachment(Vec<(u64, u64)>),
}

/// One line of the conversation graph: a `user/assistant/progress/system/attachment`
/// object with a string `uuid` (SDK `:897-928`).
#[derive(Debug, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Entry {
    uuid: Box<str>,
    parent: Option<Box<str>>,
    /// `uuid`, `parent` and `source_tool_assistant` interned (`Ids`): the chain is
    /// rebuilt after every append, with arrays instead of hashing 36-byte strings.
    uid: u32,
    pid: Option<u32>,
    stid: Option<u32>,
    kind: Kind,
    sidechain: bool,
    /// Raw JSON of `agentId` (only compared, SDK `_same_writer`).
    agent_id: Option<Box<str>>,
    timestamp: Option<Box<str>>,
    source_tool_assistant: Option<Box<str>>,
    /// Assistant `message.id`: entries sharing it are one API response.
    message_id: Option<Box<str>>,
    tool_use_ids: Vec<Box<str>>,
    tool_result_ids: Vec<Box<str>>,
    has_tool_result: bool,
    /// `isCompactSummary`: the summary a compaction starts the chain with.
    compact_summary: bool,
    /// An assistant's `message.model`.
    model: Option<Box<str>>,
    /// A compact boundary's `compactMetadata.preservedMessages`: (anchor, uuids).
    preserved: Option<Box<Preserved>>,
    render: Render,
}

/// A string field's last (or first) value, with the absolute offset where its value
/// ends, so the SDK's head/tail windows can be applied once the size is known.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Seen {
    value: String,
    end: u64,
}

/// The listing facts (SDK `_parse_session_info_from_lite`), small and cloneable so a
/// torn tail can be judged without changing the reader.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Listing {
    first_line_done: bool,
    first_line_sidechain: bool,
    custom_title: Option<Seen>,
    custom_title_head: Option<Seen>,
    ai_title: Option<Seen>,
    ai_title_head: Option<Seen>,
    last_prompt: Option<Seen>,
    summary: Option<Seen>,
    cwd: Option<Seen>,
    timestamp: Option<Seen>,
    /// The last entry's timestamp: the session's last update (§12: from the content,
    /// not from the file's mtime).
    last_timestamp: Option<String>,
    first_prompt: Option<String>,
    command_fallback: Option<String>,
    entries: u64,
    malformed: u64,
    compactions: u64,
    non_utf8: bool,
    /// The first `sessionId` (a subagent's lines carry their parent's).
    session_id: Option<String>,
    /// `(tool_use_id, agentId)` of each tool result whose `toolUseResult` names an
    /// `agentId` (the subagent that call started), the first per agent.
    spawned: Vec<(String, String)>,
    /// Each Task/Agent call's id and a hash of its prompt, and each inline sidechain
    /// root's uuid and a hash of its text (Claude Code 1.0 wrote a subagent's lines
    /// into the session's file): a root whose text is a call's prompt is that call's.
    task_calls: Vec<(String, u64)>,
    sidechain_roots: Vec<(String, u64)>,
}

/// A subagent's transcript, as its name and place say: `agent-<agent_id>.jsonl`, in
/// `<parent_id>/subagents/` (or `<parent_id>/subagents/workflows/<workflow>/`), or
/// beside its parent's file in older versions (the parent then named by the lines'
/// `sessionId`).
#[derive(Debug, Clone, Default, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct SubagentFile {
    pub agent_id: String,
    pub parent_id: Option<String>,
    pub workflow: Option<String>,
}

#[derive(borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct ClaudeReader {
    id: String,
    session_file: bool,
    /// A subagent's transcript: its own lines (sidechain lines carrying its
    /// `agentId`) are its conversation.
    subagent: Option<SubagentFile>,
    /// Absolute offset just past the last consumed line.
    end: u64,
    list: Listing,
    records: Vec<Entry>,
    /// Rebuilt from `records` when a saved state is restored.
    #[borsh(skip)]
    ids: Ids,
    /// The resumed chain of `records` as last computed, extended by the records
    /// read since while they only extend it (not saved: computed again after a
    /// restore).
    #[borsh(skip)]
    resumed: KeptCell<u32, Option<Growth>>,
    /// Restored from a saved state: the daemon follows this file as it grows.
    #[borsh(skip)]
    followed: bool,
}

/// The conversation kept between reads: record numbers of its messages, and what
/// taking the next record in needs (none when the chain is empty).
type Kept = Resumed<u32, Option<Growth>>;

/// The resumed conversation of the records and the tail, as record numbers (the
/// tail's entry is the number after the records').
enum Resolved<'a> {
    /// Claude Code cannot resume the file.
    Refused,
    /// The chain kept over the records (the tail holds no entry).
    Kept(MutexGuard<'a, Option<Kept>>),
    /// Walked again with the tail's entry.
    Walked(Vec<u32>),
}

impl Resolved<'_> {
    fn order(&self) -> &[u32] {
        match self {
            Resolved::Refused => &[],
            Resolved::Kept(k) => k.as_ref().map_or(&[], |k| &k.order),
            Resolved::Walked(order) => order,
        }
    }
}

/// Each distinct uuid string a record names gets the next number, in feeding order.
#[derive(Default)]
struct Ids(Map<Box<str>, u32>);

impl Ids {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.0.get(s) {
            return id;
        }
        let id = self.0.len() as u32;
        self.0.insert(s.into(), id);
        id
    }

    /// Gives `e` its ids; each record once, in file order (a restore replays it).
    fn assign(&mut self, e: &mut Entry) {
        e.uid = self.intern(&e.uuid);
        e.pid = e.parent.as_deref().map(|p| self.intern(p));
        e.stid = e.source_tool_assistant.as_deref().map(|s| self.intern(s));
    }

    /// The same for the unterminated tail's entry, without keeping its new strings.
    fn assign_temporarily(&self, e: &mut Entry) {
        let mut fresh = Vec::new();
        e.uid = self.temporary(&e.uuid, &mut fresh);
        e.pid = e.parent.as_deref().map(|p| self.temporary(p, &mut fresh));
        e.stid = (e.source_tool_assistant.as_deref()).map(|s| self.temporary(s, &mut fresh));
    }

    fn temporary(&self, s: &str, fresh: &mut Vec<Box<str>>) -> u32 {
        if let Some(&id) = self.0.get(s) {
            return id;
        }
        let at = fresh.iter().position(|f| &**f == s).unwrap_or_else(|| {
            fresh.push(s.into());
            fresh.len() - 1
        });
        (self.0.len() + at) as u32
    }
}

impl ClaudeReader {
    /// See the free function [`is_session_file_name`].
    pub fn is_session_file_name(name: &str) -> bool {
        is_session_file_name(name)
    }

    /// `file_name` is the file's base name: its uuid is the session id (the
    /// `sessionId` fields inside may differ).
    pub fn new(file_name: &str) -> ClaudeReader {
        let id = file_name.strip_suffix(".jsonl").unwrap_or(file_name);
        ClaudeReader {
            id: id.to_string(),
            session_file: is_session_file_name(file_name),
            subagent: None,
            end: 0,
            list: Listing::default(),
            records: Vec::new(),
            ids: Ids::default(),
            resumed: KeptCell::default(),
            followed: false,
        }
    }

    /// A reader of a subagent's transcript (`agent-<id>.jsonl`).
    pub fn subagent(file: SubagentFile) -> ClaudeReader {
        let mut r = ClaudeReader::new(&format!("agent-{}.jsonl", file.agent_id));
        r.subagent = Some(file);
        r
    }

    /// Whether the reader keeps entry `e`. A subagent's file holds its lines as
    /// sidechain lines: those carrying its `agentId` (or none, as older versions
    /// wrote) are its own, taken as a session's main line; any other is left out, as
    /// Claude Code loads an agent's transcript from its own lines only (2.1.330:
    /// `agentId === id && isSidechain`, the leaf the last of them no other names).
    fn adopt(&self, e: &mut Entry) -> bool {
        let Some(sub) = &self.subagent else {
            return true;
        };
        let own = e.sidechain
            && e.agent_id
                .as_deref()
                .is_none_or(|raw| string(Some(raw)).as_deref() == Some(&sub.agent_id));
        e.sidechain = false;
        own
    }

    /// The unterminated tail as the agent sees it: the SDK splits on `\n` and parses
    /// the last piece too, so a complete object without its newline still counts, and
    /// a torn one is bad JSON, skipped. Its bytes still go through the strict UTF-8
    /// read of `get_session_messages`, so a tail cut inside a character makes the
    /// file unreadable to the agent until the writer finishes the line.
    fn with_tail(&self, tail: &[u8]) -> (Listing, Option<Entry>) {
        let mut list = self.list.clone();
        let mut entry = if tail.is_empty() {
            None
        } else {
            read_line(&mut list, self.end, tail)
        };
        if entry.as_mut().is_some_and(|e| !self.adopt(e)) {
            entry = None;
        }
        if let Some(e) = entry.as_mut() {
            self.ids.assign_temporarily(e);
        }
        (list, entry)
    }

    fn all<'a>(&'a self, extra: &'a Option<Entry>) -> Vec<&'a Entry> {
        self.records.iter().chain(extra.iter()).collect()
    }

    /// Record `i`, the tail's entry after the records.
    fn entry<'a>(&'a self, extra: &'a Option<Entry>, i: u32) -> &'a Entry {
        match self.records.get(i as usize) {
            Some(e) => e,
            None => extra
                .as_ref()
                .expect("a number within the records and the tail"),
        }
    }

    /// The resumed conversation: the kept chain brought up to date when the tail
    /// holds no entry (the usual case), else a walk of every entry.
    fn resolve(&self, list: &Listing, extra: &Option<Entry>) -> Resolved<'_> {
        if self.refusal(list, extra).is_some() {
            return Resolved::Refused;
        }
        if extra.is_some() {
            let all = self.all(extra);
            let order = chain(&all)
                .into_iter()
                .filter(|&i| role_of(all[i]).is_some())
                .map(|i| i as u32)
                .collect();
            return Resolved::Walked(order);
        }
        Resolved::Kept(self.kept())
    }

    /// The kept chain of the records, brought up to date: the records read since are
    /// taken in while they only extend it (`Growth::take`), else it is walked again.
    fn kept(&self) -> MutexGuard<'_, Option<Kept>> {
        let mut kept = self.resumed.lock();
        let again = kept.is_some();
        if let Some(k) = kept.as_mut() {
            let Resumed {
                covered,
                order,
                state,
                ..
            } = k;
            while *covered < self.records.len() {
                let taken = state
                    .as_mut()
                    .is_some_and(|g| g.take(&self.records, *covered, order));
                if !taken {
                    *kept = None;
                    break;
                }
                *covered += 1;
            }
        }
        if kept.is_none() {
            let all: Vec<&Entry> = self.records.iter().collect();
            // What taking appends in needs (every id, call and response) is made
            // when the file is seen to grow: from a reader's second walk, or its first
            // after a restore. A first index walks most files once, and making it
            // there cost the walk about half again.
            let (chain, growth) = walk(&all, again || self.followed);
            let order = chain
                .into_iter()
                .filter(|&i| role_of(all[i]).is_some())
                .map(|i| i as u32)
                .collect();
            *kept = Some(Resumed::new(self.records.len(), order, growth));
        }
        kept
    }

    /// The conversation `resolved` holds, as what it added to the one `since` marks
    /// when it is the kept chain and `since` an earlier state of it.
    fn update_of(
        &self,
        resolved: &Resolved,
        extra: &Option<Entry>,
        since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        let render = |&i: &u32| render(self.entry(extra, i)).unwrap_or_default();
        match resolved {
            Resolved::Kept(k) => {
                let k = k.as_ref().expect("brought up to date");
                (k.update(since, render), Some(k.mark()))
            }
            _ => (
                ConversationUpdate::Whole(resolved.order().iter().map(render).collect()),
                None,
            ),
        }
    }

    /// Why `claude --resume` cannot resume the file, if it cannot.
    fn not_resumable(&self, list: &Listing, extra: &Option<Entry>) -> Option<String> {
        self.refusal(list, extra).or_else(|| {
            self.subagent.as_ref().map(|s| {
                format!(
                    "A subagent's transcript: Claude Code continues a subagent only from its parent session (SendMessage to {}), never with claude --resume.",
                    s.agent_id
                )
            })
        })
    }

    /// Why the file holds no conversation Claude Code would load, if it holds none
    /// (a subagent's transcript holds one: what continuing the subagent loads).
    fn refusal(&self, list: &Listing, extra: &Option<Entry>) -> Option<String> {
        if !self.session_file && self.subagent.is_none() {
            return Some("Claude Code resumes only <uuid>.jsonl session files.".into());
        }
        if list.non_utf8 {
            // get_session_messages reads the file as strict UTF-8 (SDK `:839`).
            return Some("The file is not valid UTF-8, which Claude Code cannot read.".into());
        }
        if self.records.is_empty() && extra.is_none() {
            // BB-C on the ccusage fixture.
            return Some(format!(
                "No conversation found with session ID: {}",
                self.id
            ));
        }
        None
    }
}

impl ForeignReader for ClaudeReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut pos = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
            let line = &bytes[pos..pos + nl];
            let start = offset + pos as u64;
            if let Some(mut e) = read_line(&mut self.list, start, line)
                && self.adopt(&mut e)
            {
                self.ids.assign(&mut e);
                self.records.push(e);
            }
            pos += nl + 1;
        }
        self.end = offset + pos as u64;
        pos as u64
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let (list, extra) = self.with_tail(tail);
        let resolved = self.resolve(&list, &extra);
        self.summary_of(&list, &extra, &resolved, tail)
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.conversation_since(tail, None).0.apply(&[])
    }

    /// Both from one chain (computing it is most of either).
    fn summary_and_conversation(&self, tail: &[u8]) -> (ForeignSummary, Vec<MessagePieces>) {
        let (summary, update, _) = self.summary_and_conversation_since(tail, None);
        (summary, update.apply(&[]))
    }

    fn summary_and_conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ForeignSummary, ConversationUpdate, Option<ConversationMark>) {
        let (list, extra) = self.with_tail(tail);
        let resolved = self.resolve(&list, &extra);
        let summary = self.summary_of(&list, &extra, &resolved, tail);
        let (update, mark) = self.update_of(&resolved, &extra, since);
        (summary, update, mark)
    }

    fn conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        let (list, extra) = self.with_tail(tail);
        let resolved = self.resolve(&list, &extra);
        self.update_of(&resolved, &extra, since)
    }

    /// Entry ids are the entries' `uuid`s. With `history`: every entry with a message
    /// in file order, sidechains and other branches included (not in the
    /// conversation).
    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let (list, extra) = self.with_tail(tail);
        let resolved = self.resolve(&list, &extra);
        let order = resolved.order();
        let refer = |e: &Entry, pieces: MessagePieces, in_conversation: bool| MessageRef {
            pieces,
            entry: Some(e.uuid.to_string()),
            timestamp: e.timestamp.as_deref().map(str::to_string),
            in_conversation,
            injected: matches!(e.kind, Kind::Attachment | Kind::LocalCommand),
            summary: e.compact_summary,
            model: e.model.as_deref().map(|m| crate::neutral::ModelRef {
                provider: Some("anthropic".into()),
                api: Some("anthropic-messages".into()),
                model: m.to_string(),
            }),
        };
        if !history {
            return order
                .iter()
                .map(|&i| {
                    let e = self.entry(&extra, i);
                    refer(e, render(e).unwrap_or_default(), true)
                })
                .collect();
        }
        // The conversation's entries are those of the chain that render (not on a
        // sidechain): exactly the history's entries in the conversation.
        let mut in_conversation = vec![false; self.records.len() + usize::from(extra.is_some())];
        for &i in order {
            in_conversation[i as usize] = true;
        }
        let all = self.all(&extra);
        all.iter()
            .enumerate()
            .filter_map(|(i, e)| render_entry(e).map(|p| refer(e, p, in_conversation[i])))
            .collect()
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        crate::sources::foreign::save_borsh(self)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        if !crate::sources::foreign::restore_borsh(self, state) {
            return false;
        }
        // The ids again, as feeding gave them: a state whose ids differ is refused.
        let mut ids = Ids::default();
        for e in &self.records {
            let uid = ids.intern(&e.uuid);
            let pid = e.parent.as_deref().map(|p| ids.intern(p));
            let stid = e.source_tool_assistant.as_deref().map(|s| ids.intern(s));
            if (uid, pid, stid) != (e.uid, e.pid, e.stid) {
                return false;
            }
        }
        self.ids = ids;
        self.resumed.clear();
        self.followed = true;
        true
    }
}

impl ClaudeReader {
    /// The summary, given the resumed conversation.
    fn summary_of(
        &self,
        list: &Listing,
        extra: &Option<Entry>,
        resolved: &Resolved,
        tail: &[u8],
    ) -> ForeignSummary {
        let size = self.end + tail.len() as u64;
        let reason = self.not_resumable(list, extra);
        // Counted without rendering: the same entries `conversation` renders.
        let order = resolved.order();
        let messages = order.len() as u64;
        let kept_roles = match resolved {
            Resolved::Kept(k) => k
                .as_ref()
                .and_then(|k| k.state.as_ref())
                .map(|g| g.roles.clone()),
            _ => None,
        };
        // A chain walked without what growth needs is counted here.
        let roles = kept_roles.unwrap_or_else(|| {
            let mut roles = BTreeMap::new();
            for &i in order {
                if let Some(role) = role_of(self.entry(extra, i)) {
                    *roles.entry(role.to_string()).or_insert(0u64) += 1;
                }
            }
            roles
        });
        let in_tail = |s: &Option<Seen>| {
            s.as_ref()
                .filter(|s| s.end + LITE >= size && !s.value.is_empty())
                .map(|s| s.value.clone())
        };
        let head = |s: &Option<Seen>| {
            s.as_ref()
                .filter(|s| !s.value.is_empty())
                .map(|s| s.value.clone())
        };
        // SDK `:443-449`: last customTitle (tail, then head), else last aiTitle.
        let title = in_tail(&list.custom_title)
            .or_else(|| head(&list.custom_title_head))
            .or_else(|| in_tail(&list.ai_title))
            .or_else(|| head(&list.ai_title_head));
        // SDK `:452-457`: the picker shows title, else lastPrompt, else summary, else
        // the first prompt. `title` holds the first; `preview` the rest of the rule,
        // so "title, else preview" is what the picker shows.
        let first_prompt = list.first_prompt.clone().or(list.command_fallback.clone());
        let preview = in_tail(&list.last_prompt)
            .or_else(|| in_tail(&list.summary))
            .or(first_prompt);
        let sub = self.subagent.as_ref();
        let listed = self.session_file
            && size > 0
            && !list.first_line_sidechain
            && (title.is_some() || preview.is_some());
        ForeignSummary {
            id: sub.map_or_else(|| self.id.clone(), |s| s.agent_id.clone()),
            parent_id: sub.and_then(|s| s.parent_id.clone().or_else(|| list.session_id.clone())),
            subagent: sub.map(|s| SubagentFacts {
                agent_id: s.agent_id.clone(),
                workflow: s.workflow.clone(),
                ..SubagentFacts::default()
            }),
            spawned: list
                .spawned
                .iter()
                .map(|(call_id, agent_id)| Spawned {
                    call_id: call_id.clone(),
                    agent_id: agent_id.clone(),
                    entry: None,
                })
                .chain(
                    (sub.is_none())
                        .then(|| inline_spawned(list, &list.spawned))
                        .into_iter()
                        .flatten(),
                )
                .collect(),
            cwd: head(&list.cwd),
            title,
            preview,
            created_at: list
                .timestamp
                .as_ref()
                .filter(|t| chrono::DateTime::parse_from_rfc3339(&t.value).is_ok())
                .map(|t| t.value.clone()),
            updated_at: list.last_timestamp.clone(),
            listed,
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: list.entries,
            malformed_lines: list.malformed,
            messages,
            roles,
            compactions: list.compactions,
            ..ForeignSummary::default()
        }
    }
}

// ---------------------------------------------------------------------------
// One line
// ---------------------------------------------------------------------------

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// Python truthiness of a JSON value (`entry.get("isSidechain")` and the like).
fn truthy(v: Option<&str>) -> bool {
    match v.map(str::trim) {
        None => false,
        Some(t) => !matches!(t, "null" | "false" | "\"\"" | "[]" | "{}") && !is_zero(t),
    }
}

fn is_zero(t: &str) -> bool {
    t.parse::<f64>().is_ok_and(|f| f == 0.0)
}

fn string(v: Option<&str>) -> Option<String> {
    v.and_then(|v| serde_json::from_str::<String>(v).ok())
}

/// An object's fields in order, values as raw JSON text.
type Fields<'a> = Vec<(Cow<'a, str>, &'a str)>;

/// The fields of `value`, an object inside a line that `json::object_fields` accepted,
/// read without validating again (`None` if it is not an object): most of a tool
/// result's bytes are in its message, and a second validating pass over them was a
/// fifth of a first index.
fn object_fields(value: &str) -> Option<Fields<'_>> {
    value
        .starts_with('{')
        .then(|| valid_object_fields(value).collect())
}

/// The items of `value`, an array inside an accepted line (`None`: not an array).
fn array_items(value: &str) -> Option<Vec<&str>> {
    value
        .starts_with('[')
        .then(|| valid_array_items(value).collect())
}

/// The last value of `key` (Python's `json.loads` keeps the last duplicate).
fn last<'a>(o: &Fields<'a>, key: &str) -> Option<&'a str> {
    o.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// Reads one line (without its `\n`) starting at absolute offset `start`: updates the
/// listing facts and returns the conversation record, if the line is one.
fn read_line(list: &mut Listing, start: u64, raw: &[u8]) -> Option<Entry> {
    let first = !list.first_line_done;
    list.first_line_done = true;
    if first {
        // SDK `:438` tests the first line's text.
        let f = memchr::memmem::find;
        list.first_line_sidechain =
            f(raw, b"\"isSidechain\":true").is_some() || f(raw, b"\"isSidechain\": true").is_some();
    }
    let line = trim_ascii(raw);
    if line.is_empty() {
        return None;
    }
    let start = start + offset_of(raw, line);
    match simdutf8::basic::from_utf8(line) {
        Ok(text) => read_object(list, start, text, true),
        Err(_) => {
            // The listing decodes with replacement (SDK `:353-385`); the resume
            // cannot read the file at all, so no record is kept.
            list.non_utf8 = true;
            let lossy = String::from_utf8_lossy(line);
            read_object(list, start, &lossy, false);
            None
        }
    }
}

fn offset_of(outer: &[u8], inner: &[u8]) -> u64 {
    (inner.as_ptr() as usize - outer.as_ptr() as usize) as u64
}

/// `exact` is false for a lossy-decoded line, whose offsets do not match the file.
fn read_object(list: &mut Listing, start: u64, text: &str, exact: bool) -> Option<Entry> {
    let Some(obj) = crate::json::object_fields(text) else {
        list.malformed += 1;
        return None;
    };
    list.entries += 1;
    let end_of = |v: &str| start + (offset_in(text, v) + v.len()) as u64;
    let seen = |key: &str| {
        let v = last(&obj, key)?;
        Some(Seen {
            value: string(Some(v))?,
            end: end_of(v),
        })
    };
    let head_too = |s: &Option<Seen>, head: &mut Option<Seen>| {
        if let Some(s) = s.as_ref().filter(|s| s.end <= LITE) {
            *head = Some(s.clone());
        }
    };
    if let Some(s) = seen("customTitle") {
        list.custom_title = Some(s);
        head_too(&list.custom_title, &mut list.custom_title_head);
    }
    if let Some(s) = seen("aiTitle") {
        list.ai_title = Some(s);
        head_too(&list.ai_title, &mut list.ai_title_head);
    }
    if let Some(s) = seen("lastPrompt") {
        list.last_prompt = Some(s);
    }
    if let Some(s) = seen("summary") {
        list.summary = Some(s);
    }
    // cwd and created come from the first occurrence in the head (SDK `:468`, `:487`).
    if list.cwd.is_none()
        && let Some(s) = seen("cwd").filter(|s| s.end <= LITE)
    {
        list.cwd = Some(s);
    }
    if list.timestamp.is_none()
        && let Some(s) = seen("timestamp").filter(|s| s.end <= LITE)
    {
        list.timestamp = Some(s);
    }
    if let Some(s) =
        seen("timestamp").filter(|s| chrono::DateTime::parse_from_rfc3339(&s.value).is_ok())
    {
        list.last_timestamp = Some(s.value);
    }
    if list.session_id.is_none() {
        list.session_id = string(last(&obj, "sessionId")).filter(|s| !s.is_empty());
    }
    let ty = string(last(&obj, "type"));
    if list.first_prompt.is_none()
        && ty.as_deref() == Some("user")
        && start + text.len() as u64 <= LITE
    {
        first_prompt(list, &obj, text);
    }

    let kind = match ty.as_deref()? {
        "user" => Kind::User,
        "assistant" => Kind::Assistant,
        "progress" => Kind::Progress,
        "attachment" => Kind::Attachment,
        "system" => match string(last(&obj, "subtype")).as_deref() {
            Some("local_command") => Kind::LocalCommand,
            Some("compact_boundary") => Kind::CompactBoundary,
            _ => Kind::OtherSystem,
        },
        _ => return None,
    };
    let uuid = string(last(&obj, "uuid"))?;
    if kind == Kind::CompactBoundary {
        list.compactions += 1;
    }
    if !exact {
        return None;
    }
    let range = |v: &str| (start + offset_in(text, v) as u64, v.len() as u64);
    let boxed = |s: Option<String>| s.map(String::into_boxed_str);
    let mut e = Entry {
        uuid: uuid.into(),
        parent: boxed(string(last(&obj, "parentUuid")).filter(|p| !p.is_empty())),
        uid: 0,
        pid: None,
        stid: None,
        kind,
        sidechain: truthy(last(&obj, "isSidechain")),
        agent_id: last(&obj, "agentId").map(Into::into),
        timestamp: boxed(string(last(&obj, "timestamp"))),
        source_tool_assistant: boxed(string(last(&obj, "sourceToolAssistantUUID"))),
        message_id: None,
        tool_use_ids: Vec::new(),
        tool_result_ids: Vec::new(),
        has_tool_result: false,
        compact_summary: truthy(last(&obj, "isCompactSummary")),
        model: None,
        preserved: None,
        render: Render::None,
    };
    match kind {
        Kind::User | Kind::Assistant => {
            let Some(msg) = last(&obj, "message").and_then(object_fields) else {
                return Some(e);
            };
            if kind == Kind::Assistant {
                e.message_id = boxed(string(last(&msg, "id")).filter(|s| !s.is_empty()));
                e.model = boxed(string(last(&msg, "model")).filter(|s| !s.is_empty()));
            }
            let content = last(&msg, "content");
            if let Some(c) = content {
                let uid = e.uuid.clone();
                note_subagent_prompts(list, &obj, kind, &uid, c);
            }
            for b in content.map(blocks).unwrap_or_default() {
                match b.ty.as_deref() {
                    Some("tool_use") if kind == Kind::Assistant => {
                        e.tool_use_ids.extend(boxed(string(b.id)));
                    }
                    Some("tool_result") => {
                        e.has_tool_result = true;
                        e.tool_result_ids.extend(boxed(string(b.tool_use_id)));
                    }
                    _ => {}
                }
            }
            if let Some(content) = content {
                let role = last(&msg, "role");
                let default = if kind == Kind::User {
                    "user"
                } else {
                    "assistant"
                };
                e.render = Render::Message {
                    role: role.map(range),
                    role_name: string(role)
                        .unwrap_or_else(|| role.unwrap_or(default).to_string())
                        .into(),
                    content: range(content),
                };
            }
        }
        Kind::LocalCommand => {
            if let Some(c) = last(&obj, "content").filter(|c| string(Some(c)).is_some()) {
                e.render = Render::Local(range(c));
            }
        }
        Kind::Attachment => {
            // `rendered` is read at the top level, else inside `attachment`.
            let rendered = last(&obj, "rendered").or_else(|| {
                let a = object_fields(last(&obj, "attachment")?)?;
                last(&a, "rendered")
            });
            let items = rendered.and_then(array_items).unwrap_or_default();
            let texts: Vec<(u64, u64)> = items
                .into_iter()
                .filter_map(object_fields)
                .filter_map(|o| last(&o, "content").filter(|c| string(Some(c)).is_some()))
                .map(range)
                .collect();
            if !texts.is_empty() {
                e.render = Render::Attachment(texts);
            }
        }
        Kind::CompactBoundary => e.preserved = preserved(&obj),
        Kind::Progress | Kind::OtherSystem => {}
    }
    if kind == Kind::User
        && let Some(call) = e.tool_result_ids.first()
        && let Some(agent) = spawned_agent(&obj)
        && !list.spawned.iter().any(|(_, a)| *a == agent)
    {
        list.spawned.push((call.to_string(), agent));
    }
    Some(e)
}

/// Notes a Task/Agent call's prompt (an assistant line) or an inline sidechain's
/// first text (a user line starting a sidechain), as hashes.
fn note_subagent_prompts(list: &mut Listing, obj: &Fields, kind: Kind, uuid: &str, content: &str) {
    let hash = |t: &str| crate::store::atomic::checksum(&[t.trim().as_bytes()]);
    let finder = memchr::memmem::find;
    if kind == Kind::Assistant {
        let b = content.as_bytes();
        if finder(b, b"\"Task\"").is_none() && finder(b, b"\"Agent\"").is_none() {
            return;
        }
        for item in array_items(content).unwrap_or_default() {
            let Some(f) = object_fields(item) else {
                continue;
            };
            let named = matches!(string(last(&f, "name")).as_deref(), Some("Task" | "Agent"));
            if string(last(&f, "type")).as_deref() != Some("tool_use") || !named {
                continue;
            }
            let prompt = last(&f, "input")
                .and_then(object_fields)
                .and_then(|i| string(last(&i, "prompt")));
            if let (Some(id), Some(p)) = (string(last(&f, "id")), prompt) {
                list.task_calls.push((id, hash(&p)));
            }
        }
    } else if truthy(last(obj, "isSidechain"))
        && string(last(obj, "parentUuid")).is_none_or(|p| p.is_empty())
    {
        let text = string(Some(content)).or_else(|| {
            let texts: Vec<String> = blocks(content)
                .into_iter()
                .filter(|b| b.ty.as_deref() == Some("text"))
                .filter_map(|b| string(b.text))
                .collect();
            (texts.len() == 1).then(|| texts.concat())
        });
        if let Some(t) = text {
            list.sidechain_roots.push((uuid.to_string(), hash(&t)));
        }
    }
}

/// The subagents whose lines are inline in the file: each Task/Agent call paired,
/// in order, with the first unpaired sidechain root whose text is its prompt.
fn inline_spawned(list: &Listing, known: &[(String, String)]) -> Vec<Spawned> {
    let mut used = vec![false; list.sidechain_roots.len()];
    let mut out = Vec::new();
    for (call, h) in &list.task_calls {
        if known.iter().any(|(c, _)| c == call) {
            continue;
        }
        let found = list
            .sidechain_roots
            .iter()
            .enumerate()
            .find(|(i, (_, r))| !used[*i] && r == h);
        if let Some((i, (root, _))) = found {
            used[i] = true;
            out.push(Spawned {
                call_id: call.clone(),
                agent_id: String::new(),
                entry: Some(root.clone()),
            });
        }
    }
    out
}

/// The `agentId` a tool result's `toolUseResult` names: the subagent its call
/// started (the Agent/Task tool's result, synchronous or `async_launched`).
fn spawned_agent(obj: &Fields) -> Option<String> {
    let result = object_fields(last(obj, "toolUseResult")?)?;
    string(last(&result, "agentId")).filter(|a| !a.is_empty())
}

/// `compactMetadata.preservedMessages = {anchorUuid, uuids}` (partial compaction).
type Preserved = (Box<str>, Vec<Box<str>>);

fn preserved(obj: &Fields) -> Option<Box<Preserved>> {
    let meta = object_fields(last(obj, "compactMetadata")?)?;
    let pm = object_fields(last(&meta, "preservedMessages")?)?;
    let anchor = string(last(&pm, "anchorUuid"))?;
    let uuids = array_items(last(&pm, "uuids")?)?;
    let uuids = uuids
        .into_iter()
        .filter_map(|u| string(Some(u)))
        .map(String::into_boxed_str)
        .collect();
    Some(Box::new((anchor.into(), uuids)))
}

/// What the rules read of a content block: its type, and raw `id`, `tool_use_id`
/// and `text` (`null` counts as absent).
#[derive(Default)]
struct Block<'a> {
    ty: Option<String>,
    id: Option<&'a str>,
    tool_use_id: Option<&'a str>,
    text: Option<&'a str>,
}

/// A block as serde reads it: an object, or an array filling the fields in order.
#[derive(Deserialize)]
struct SerdeBlock<'a> {
    #[serde(rename = "type", default)]
    ty: Option<String>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

/// A content array's blocks (anything that is not one is skipped, as the SDK does).
fn blocks(content: &str) -> Vec<Block<'_>> {
    array_items(content)
        .unwrap_or_default()
        .into_iter()
        .filter_map(block)
        .collect()
}

/// One item as `serde_json::from_str::<Block>` reads it, an object without a second
/// validating pass: a repeated known field or a `type` that is not a string (or
/// null) makes it no block.
fn block(item: &str) -> Option<Block<'_>> {
    if !item.starts_with('{') {
        // Arrays fill the fields in order; anything else is no block.
        let b = serde_json::from_str::<SerdeBlock>(item).ok()?;
        return Some(Block {
            ty: b.ty,
            id: b.id.map(RawValue::get),
            tool_use_id: b.tool_use_id.map(RawValue::get),
            text: b.text.map(RawValue::get),
        });
    }
    let mut b = Block::default();
    let mut seen = [false; 4];
    for (k, v) in valid_object_fields(item) {
        let i = match k.as_ref() {
            "type" => 0,
            "id" => 1,
            "tool_use_id" => 2,
            "text" => 3,
            _ => continue,
        };
        if std::mem::replace(&mut seen[i], true) {
            return None;
        }
        if v == "null" {
            continue;
        }
        match i {
            0 => b.ty = Some(string(Some(v))?),
            1 => b.id = Some(v),
            2 => b.tool_use_id = Some(v),
            _ => b.text = Some(v),
        }
    }
    Some(b)
}

/// SDK `_extract_first_prompt_from_head` (`:259-338`) for one user line.
fn first_prompt(list: &mut Listing, obj: &Fields, text: &str) {
    if text.contains("\"tool_result\"")
        || last(obj, "isMeta") == Some("true")
        || last(obj, "isCompactSummary") == Some("true")
    {
        return;
    }
    let Some(msg) = last(obj, "message").and_then(object_fields) else {
        return;
    };
    let Some(content) = last(&msg, "content") else {
        return;
    };
    let texts: Vec<String> = match string(Some(content)) {
        Some(s) => vec![s],
        None => blocks(content)
            .into_iter()
            .filter(|b| b.ty.as_deref() == Some("text"))
            .filter_map(|b| string(b.text))
            .collect(),
    };
    for raw in texts {
        let folded = raw.replace('\n', " ");
        let result = folded.trim();
        if result.is_empty() {
            continue;
        }
        if let Some(name) = command_name(result) {
            if list.command_fallback.is_none() {
                list.command_fallback = Some(name.to_string());
            }
            continue;
        }
        if skipped_prompt(result) {
            continue;
        }
        let mut shown: String = result.chars().take(200).collect();
        if result.chars().nth(200).is_some() {
            shown = shown.trim_end().to_string();
            shown.push('\u{2026}');
        }
        list.first_prompt = Some(shown);
        return;
    }
}

/// `<command-name>(.*?)</command-name>` anywhere in the text.
fn command_name(s: &str) -> Option<&str> {
    let open = "<command-name>";
    let at = s.find(open)? + open.len();
    let len = s[at..].find("</command-name>")?;
    Some(&s[at..at + len])
}

/// `_SKIP_FIRST_PROMPT_PATTERN`: hook, stdout, interrupt and IDE-context texts.
fn skipped_prompt(s: &str) -> bool {
    let whole = |tag: &str| {
        s.starts_with(&format!("<{tag}>")) && s.trim_end().ends_with(&format!("</{tag}>"))
    };
    [
        "<local-command-stdout>",
        "<session-start-hook>",
        "<tick>",
        "<goal>",
    ]
    .iter()
    .any(|p| s.starts_with(p))
        || s.strip_prefix("[Request interrupted by user")
            .is_some_and(|r| r.contains(']'))
        || whole("ide_opened_file")
        || whole("ide_selection")
}

/// Maps over a file's uuids and ids, built on every read of the chain: foldhash (seeded
/// per process) rather than SipHash, which was a third of rebuilding a 25,000-entry
/// chain after an append.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type Set<K> = HashSet<K, foldhash::fast::RandomState>;

fn role_of(e: &Entry) -> Option<&str> {
    if e.sidechain {
        return None;
    }
    match &e.render {
        Render::None => None,
        Render::Message { role_name, .. } => Some(role_name),
        Render::Local(_) | Render::Attachment(_) => Some("user"),
    }
}

/// One `conversation.json` line: glue as text, the stored values as ranges.
fn render(e: &Entry) -> Option<MessagePieces> {
    if e.sidechain {
        return None;
    }
    render_entry(e)
}

/// An entry's message as `conversation.json` would show it, sidechain or not.
fn render_entry(e: &Entry) -> Option<MessagePieces> {
    let text = |s: &str| Piece::Text(s.to_string());
    let range = |(start, len): (u64, u64)| Piece::Range { start, len };
    Some(match &e.render {
        Render::None => return None,
        Render::Message {
            role,
            role_name,
            content,
        } => vec![
            text("{\"role\":"),
            match role {
                Some(r) => range(*r),
                None => Piece::Text(crate::json::quote(role_name)),
            },
            text(",\"content\":"),
            range(*content),
            text("}"),
        ],
        Render::Local(c) => vec![
            text("{\"role\":\"user\",\"content\":"),
            range(*c),
            text("}"),
        ],
        Render::Attachment(texts) => {
            let mut p = vec![text("{\"role\":\"user\",\"content\":[")];
            for (k, t) in texts.iter().enumerate() {
                p.push(text(if k == 0 {
                    "{\"type\":\"text\",\"text\":"
                } else {
                    ",{\"type\":\"text\",\"text\":"
                }));
                p.push(range(*t));
                p.push(text("}"));
            }
            p.push(text("]}"));
            p
        }
    })
}
