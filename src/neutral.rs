//! The neutral message model: what every source's messages become, whatever agent
//! wrote them. `conversation.md`, search and `fen-fs resume` work on these values
//! only, never on an agent's own format: each source converts its agent's messages
//! (`sources::agents::to_neutral`), and `resume` converts them to the target agent's.
//!
//! One message of `conversation.json` (or of the history a compaction left behind)
//! is one [`Message`]; tool results may sit in a message of their own (`Role::Tool`:
//! Codex, pi, OpenAI chat) or inside a user message (Claude), as the source had them.

use crate::agent::Agent;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Who speaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// A message that carries tool results only.
    Tool,
    /// Instructions to the model (system, developer).
    System,
    /// Any other role a source keeps, by its own name.
    Other(String),
}

impl Role {
    pub fn name(&self) -> &str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
            Role::Other(name) => name,
        }
    }
}

/// The company whose model made (and signed) a piece of reasoning: a signed or
/// encrypted reasoning item can only go back to that vendor's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Anthropic,
    OpenAi,
    Google,
    Other,
}

/// The model behind an assistant message, as the source names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    /// `anthropic`, `openai`, `openai-codex`, `google`, ... (pi's provider names).
    pub provider: Option<String>,
    /// The wire API (`anthropic-messages`, `openai-responses`, ...), when known.
    pub api: Option<String>,
    pub model: String,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// Base64 `data`, or a `url` (an image the source only links to).
    Image {
        mime: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// `input` is the call's arguments: an object, or a string for a free-form tool
    /// (Codex `custom_tool_call`); a source that stores them as a JSON string parses it.
    ToolCall {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    /// `content` holds `Text` and `Image` parts only.
    ToolResult {
        call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        content: Vec<Part>,
        #[serde(default)]
        is_error: bool,
    },
    /// Thinking or reasoning. `text` is what a person may read (Claude's thinking,
    /// Codex's summary; empty when only an opaque form exists); `opaque` is the
    /// vendor's own signed or encrypted form, kept byte-for-byte as a JSON value
    /// (Anthropic's `thinking`/`redacted_thinking` block, OpenAI's `reasoning` item),
    /// which only `vendor`'s API accepts back.
    Reasoning {
        vendor: Vendor,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        opaque: Option<serde_json::Value>,
    },
    /// Something the model saw that has no neutral form (a PDF document, a web search
    /// result, a shell call of a kind only its agent runs): `what` says what it was,
    /// `text` is its readable part (may be empty).
    Other {
        what: String,
        text: String,
    },
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
    /// When it was written (RFC 3339), when the source records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The source's id of the entry or line it came from (a search hit's `entry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Whether it is one of `conversation.json`'s messages; false for history that a
    /// compaction, a rewind or an undo took out of the conversation.
    pub in_conversation: bool,
    /// A compaction's summary standing in for what came before it.
    #[serde(default)]
    pub summary: bool,
    /// Context the agent injected rather than a person or the model wrote
    /// (environment and instruction blocks, reminders, command caveats): a target
    /// agent injects its own, so continuing elsewhere drops these.
    #[serde(default)]
    pub injected: bool,
    /// The model that wrote an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
}

impl Message {
    /// A message with only `parts`, in the conversation, with nothing else known.
    pub fn new(role: Role, parts: Vec<Part>) -> Message {
        Message {
            role,
            parts,
            timestamp: None,
            entry: None,
            in_conversation: true,
            summary: false,
            injected: false,
            model: None,
        }
    }

    /// The readable text of the message: its text parts, tool names, inputs and
    /// outputs, reasoning text (not images, not opaque forms), joined by newlines.
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            push_part_text(&mut out, p);
        }
        out
    }
}

fn push_part_text(out: &mut String, p: &Part) {
    let mut line = |s: &str| {
        if s.is_empty() {
            return;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(s);
    };
    match p {
        Part::Text { text } => line(text),
        Part::Image { .. } => {}
        Part::ToolCall { name, input, .. } => {
            line(name);
            match input {
                serde_json::Value::String(s) => line(s),
                serde_json::Value::Null => {}
                other => line(&other.to_string()),
            }
        }
        Part::ToolResult { content, .. } => {
            for c in content {
                push_part_text(out, c);
            }
        }
        Part::Reasoning { text, .. } => line(text),
        Part::Other { text, .. } => line(text),
    }
}

/// What a session is, for headings and hits: the facts its listing shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionFacts {
    pub agent: Agent,
    pub id: String,
    /// The namespace as the store names it (`--home-u-proj--`).
    pub namespace: String,
    /// The session folder's name in the mount.
    pub dir: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub preview: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    /// The file the session lives in (fen's transcript, or the agent's own file).
    pub source_path: PathBuf,
    pub resumable: bool,
    pub not_resumable_reason: Option<String>,
    /// Shown from fen's kept copy (§11), and whether its source is gone.
    #[serde(default)]
    pub kept: bool,
    #[serde(default)]
    pub source_deleted: bool,
    /// Another machine's name, for a session recorded there (§12); `None`: this one.
    #[serde(default)]
    pub host: Option<String>,
    /// The cwd as recorded there, when a path map changed it into `cwd`.
    #[serde(default)]
    pub cwd_on_host: Option<String>,
    /// The session this one was spawned from (a subagent's parent), by id, and its
    /// folder relative to this session's namespace folder when it is shown
    /// (`<dir>`, or `../<namespace>/<dir>` in another namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// This session's id among its parent's subagents, for a subagent's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The subagents this session started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentLink>,
}

/// A subagent a session started: its id, the tool call that started it (when known)
/// and its session's folder relative to the parent's namespace folder (when shown).
/// `inline`: its messages are in the session's own history (Claude Code 1.0's
/// sidechain lines), from entry `id`; it is no session of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentLink {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inline: bool,
}

/// A session's messages as neutral values, with its facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionMessages {
    pub facts: SessionFacts,
    pub messages: Vec<Message>,
}

/// Names each tool result that names no tool (Claude's and Codex's do not) after the
/// call it answers, when an earlier message holds that call.
pub fn fill_tool_names(messages: &mut [Message]) {
    fill_tool_names_with(&mut std::collections::HashMap::new(), messages);
}

/// `fill_tool_names` over messages that come in several slices, in order: `names`
/// carries the calls seen so far (call id → tool name) from one slice to the next.
pub fn fill_tool_names_with(
    names: &mut std::collections::HashMap<String, String>,
    messages: &mut [Message],
) {
    for m in messages.iter_mut() {
        for p in m.parts.iter_mut() {
            match p {
                Part::ToolCall { id, name, .. } => {
                    names.insert(id.clone(), name.clone());
                }
                Part::ToolResult {
                    call_id,
                    name: name @ None,
                    ..
                } => *name = names.get(call_id.as_str()).cloned(),
                _ => {}
            }
        }
    }
}
