//! What a reader of another agent's session file produces, whatever the agent: the
//! facts its own picker lists, whether and why it could resume the file, and the
//! messages it would resume with. Messages are pieces (literal text or byte ranges of
//! the file kept verbatim), so a large transcript's conversation is served from the
//! file itself instead of a copy in memory.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::agent::Agent;
pub use crate::sources::growth::{ConversationMark, ConversationUpdate};
pub use crate::views::pieces::{MessagePieces, Piece};

/// What the agent's own listing and resume rules say about one file, from the lines
/// fed so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ForeignSummary {
    /// The session id by the agent's rule (empty when the file gives none).
    pub id: String,
    /// The session's real working directory, by the agent's rule.
    pub cwd: Option<String>,
    /// The title the agent's picker shows (a rename, an AI title...), if any.
    pub title: Option<String>,
    /// The first user request, one line, as the agent's picker cuts it.
    pub preview: Option<String>,
    /// Creation time, RFC 3339, by the agent's rule.
    pub created_at: Option<String>,
    /// Last update, RFC 3339, from the file's content (its last entry's time, §12: a
    /// synced or copied file's mtime says when it arrived); `None` only when the
    /// content has no time, and then the source falls back to the file's mtime.
    pub updated_at: Option<String>,
    /// Whether the agent's own picker would list this file.
    pub listed: bool,
    /// Whether the agent could resume this file.
    pub resumable: bool,
    /// Why not, when `resumable` is false (one short sentence).
    pub not_resumable_reason: Option<String>,
    /// Lines that are entries of the file (valid JSON objects).
    pub entries: u64,
    /// Lines that are not valid JSON objects (or that the agent cannot deserialize).
    pub malformed_lines: u64,
    /// Messages in the resumed conversation, and how many per `role`.
    pub messages: u64,
    pub roles: BTreeMap<String, u64>,
    /// Compactions on the resumed path (or in the history), for meta.json.
    pub compactions: u64,
    /// The agent keeps the session archived (Codex `archived_sessions/`, OpenCode
    /// `time_archived`...): shown all the same, marked in meta.json.
    #[serde(default)]
    pub archived: bool,
    /// The session this one was spawned from (OpenCode's child sessions, Claude Code's
    /// subagents), if any: its id (for a subagent spawned by another subagent, that
    /// subagent's session id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// This session is a subagent's run (Claude Code's `subagents/agent-<id>.jsonl`):
    /// shown beside its parent, in the parent's namespace, under a folder named after
    /// the parent's (see `foreign_source/index.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<SubagentFacts>,
    /// Not shown as a session, only kept (§11) and its usage counted: a forked
    /// helper run that replays its parent's messages before its one request (Claude
    /// Code's side questions and compactions, where a version recorded them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The subagents this session started, as its own file records them (Claude
    /// Code: a tool result whose `toolUseResult` names an `agentId`), in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spawned: Vec<Spawned>,
    /// How far `conversation.json` is the agent's own rebuild: `None` when it follows
    /// the agent's code or observed behaviour, else a short note (`"best effort"`)
    /// for an agent whose resume rules are not public.
    #[serde(default)]
    pub resume_rules: Option<String>,
}

/// What a subagent's session says of its place under its parent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubagentFacts {
    /// Its id among its parent's subagents (Claude Code's `agentId`).
    pub agent_id: String,
    /// The kind of subagent (`general-purpose`, `Explore`, ...), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The tool call of the parent that started it, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// How deep it was spawned (1: by the parent session itself), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Whether its agent recorded it as finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<bool>,
    /// The workflow run it ran in (Claude Code's `subagents/workflows/<run>/`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
}

/// A subagent a session started: the tool call, and the subagent's id (its transcript
/// a session of its own) or, for a subagent whose lines are inline in the session's
/// own file (Claude Code 1.0's sidechain lines), the entry they start at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spawned {
    pub call_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// A reader of one agent's session file, fed the file from its start in order, whole
/// lines at a time; it keeps only what the agent's rules need (ids, parents, offsets),
/// never the file's contents, so following an append parses only the new bytes.
pub trait ForeignReader: Send {
    /// Reads `bytes`, the file's content from absolute offset `offset` (which is where
    /// the previous feed's consumed bytes ended). Consumes complete `\n`-terminated
    /// lines only and returns how many bytes it consumed; the rest is fed again later.
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64;

    /// The listing facts from everything fed so far; `tail` is the file's unterminated
    /// rest after the last consumed line (usually empty: a torn line from a crash or a
    /// writer caught mid-append), judged as the agent itself would.
    fn summary(&self, tail: &[u8]) -> ForeignSummary;

    /// The messages the agent would resume with (empty when it cannot resume).
    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces>;

    /// Whether the agent only ever appends to the file, so that a file that grew can
    /// be read on from where the reader stopped. False for a file the agent rewrites
    /// in place (Gemini's legacy `.json`): any change means a fresh read.
    fn follows_appends(&self) -> bool {
        true
    }

    /// `summary` and `conversation` together (a reader whose two share most of their
    /// work computes it once).
    fn summary_and_conversation(&self, tail: &[u8]) -> (ForeignSummary, Vec<MessagePieces>) {
        (self.summary(tail), self.conversation(tail))
    }

    /// `summary_and_conversation`, the conversation as what it added to the one
    /// `since` marks when the reader shows that is all that changed (messages after
    /// the old ones: the usual append), else whole; with the mark of this
    /// conversation, when a later one can be told against it. The default gives it
    /// whole and no mark.
    fn summary_and_conversation_since(
        &self,
        tail: &[u8],
        _since: Option<ConversationMark>,
    ) -> (ForeignSummary, ConversationUpdate, Option<ConversationMark>) {
        let (summary, messages) = self.summary_and_conversation(tail);
        (summary, ConversationUpdate::Whole(messages), None)
    }

    /// `conversation` as `summary_and_conversation_since` gives it.
    fn conversation_since(
        &self,
        tail: &[u8],
        _since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        (ConversationUpdate::Whole(self.conversation(tail)), None)
    }

    /// The messages with what the file says of each (entry id, time). `history`
    /// false: exactly `conversation`'s messages, in order. `history` true: every
    /// message the file holds, those outside the conversation marked so (search
    /// finds them too). The default knows only the conversation.
    fn messages(&self, tail: &[u8], _history: bool) -> Vec<MessageRef> {
        self.conversation(tail)
            .into_iter()
            .map(|pieces| MessageRef {
                pieces,
                in_conversation: true,
                ..MessageRef::default()
            })
            .collect()
    }

    /// Everything fed so far, as bytes [`restore_state`](Self::restore_state) takes
    /// back, so that a file that grew after this reader left memory is read from where
    /// it stopped. `None` (the default): this reader cannot; such a file is then read
    /// again from its start.
    fn save_state(&self) -> Option<Vec<u8>> {
        None
    }

    /// Takes back, on a fresh reader of the same file, what `save_state` gave; false
    /// (the default, or for bytes it does not understand) and the file is read from
    /// its start.
    fn restore_state(&mut self, _state: &[u8]) -> bool {
        false
    }
}

/// `save_state` for a reader whose state is one borsh value (the built-in readers).
pub fn save_borsh<T: borsh::BorshSerialize>(state: &T) -> Option<Vec<u8>> {
    crate::usage_record::exact_borsh(state)
}

/// `restore_state` for a reader whose state is one borsh value: the whole of `bytes`
/// must be one value of `T`.
pub fn restore_borsh<T: borsh::BorshSerialize + borsh::BorshDeserialize>(
    into: &mut T,
    bytes: &[u8],
) -> bool {
    crate::usage_record::SavedState::restore(into, bytes)
}

/// One message a reader found: its JSON object as pieces, and what the file says of
/// it beyond the message itself (the neutral message takes these over what its JSON
/// alone tells).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageRef {
    pub pieces: MessagePieces,
    /// The id of the entry (line) it came from, by the agent's rule.
    pub entry: Option<String>,
    /// When it was written (RFC 3339).
    pub timestamp: Option<String>,
    /// Whether it is one of the conversation's messages.
    pub in_conversation: bool,
    /// The entry says it is context the agent injected (Claude Code's attachments,
    /// local commands and `isMeta` caveats).
    pub injected: bool,
    /// The entry says it is a compaction's summary (Claude Code's `isCompactSummary`,
    /// Codex's summary message).
    pub summary: bool,
    /// The model the entry names, when the message itself does not (Claude Code's
    /// `message.model`, Codex's `turn_context.model`).
    pub model: Option<crate::neutral::ModelRef>,
}

/// Joins one message's pieces against the file's bytes (`file` from offset 0).
pub use crate::views::pieces::render as render_message;

/// Reads a whole file's bytes through `reader` (tests and one-shot tools): feeds the
/// complete lines, returns the unterminated tail.
pub fn feed_all<'a>(reader: &mut dyn ForeignReader, file: &'a [u8]) -> &'a [u8] {
    let consumed = reader.feed(0, file) as usize;
    &file[consumed.min(file.len())..]
}
