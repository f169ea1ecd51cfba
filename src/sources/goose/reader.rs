//! Reader of one Goose session: a database dump (`db.rs`) or a pre-database JSONL
//! file, which share their shape: a first line that says what the session is (the
//! `sessions` row, or the file's `SessionMetadata`), then one Goose `Message` per line
//! (`{id, role, created, content, metadata}`); a dump then has its `usage_ledger`
//! rows, which only the usage reader reads.
//!
//! What Goose resumes with (`SessionManager::get_session(id, true)` then the agent's
//! `Conversation::agent_visible_messages`): the messages whose role is `user` or
//! `assistant` (any other role is skipped on load), in stored order, without those
//! whose `metadata.agentVisible` is false (what a compaction took out of the
//! context, and notifications shown only to the user). Those stay in the history,
//! marked out of the conversation.

use crate::sources::db_units::rfc3339_ms;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    id: Option<Value>,
    role: Option<Value>,
    created: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    metadata: Option<Value>,
    #[serde(borrow)]
    fen_unparsed_content: Option<&'a RawValue>,
    #[serde(borrow)]
    usage_ledger: Option<&'a RawValue>,
    fen_unreadable: Option<Value>,
    // The session row (a dump) or `SessionMetadata` (a legacy file).
    working_dir: Option<Value>,
    name: Option<Value>,
    description: Option<Value>,
    session_type: Option<Value>,
    created_at: Option<Value>,
    updated_at: Option<Value>,
    parent_session_id: Option<Value>,
    archived_at: Option<Value>,
    provider_name: Option<Value>,
    model_config_json: Option<Value>,
    schema_version: Option<Value>,
    message_count: Option<Value>,
}

fn string(v: &Option<Value>) -> Option<String> {
    v.as_ref()
        .and_then(Value::as_str)
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

#[derive(Debug, Default, Clone)]
struct Session {
    id: String,
    working_dir: Option<String>,
    title: Option<String>,
    session_type: Option<String>,
    created_ms: Option<i64>,
    updated_ms: Option<i64>,
    parent_id: Option<String>,
    archived: bool,
    /// `provider_name` and `model_config_json.model_name`.
    provider: Option<String>,
    model: Option<String>,
    schema_version: Option<i64>,
}

#[derive(Debug, Clone)]
struct Msg {
    id: String,
    start: u64,
    len: u64,
    role: String,
    created: Option<i64>,
    agent_visible: bool,
    user_visible: bool,
    /// The first text block of a user message, for the preview.
    text: Option<String>,
    /// `metadata.inference`: the model that wrote an assistant message.
    model: Option<(Option<String>, String)>,
}

pub struct GooseReader {
    /// A legacy JSONL file (its id is its name), not a database dump.
    legacy: bool,
    file_id: String,
    lines: u64,
    blank: u64,
    malformed: u64,
    first_malformed: Option<String>,
    session: Option<Session>,
    unreadable: Option<String>,
    messages: Vec<Msg>,
}

impl GooseReader {
    /// A reader of the unit named `name`: `<id>.jsonl` (a legacy file) or `<id>` (a
    /// database session).
    pub fn new(name: &str) -> Self {
        let legacy = super::is_legacy_name(name);
        GooseReader {
            legacy,
            file_id: name.strip_suffix(".jsonl").unwrap_or(name).to_string(),
            lines: 0,
            blank: 0,
            malformed: 0,
            first_malformed: None,
            session: None,
            unreadable: None,
            messages: Vec::new(),
        }
    }

    fn bad(&mut self, why: String) {
        self.malformed += 1;
        if self.first_malformed.is_none() {
            self.first_malformed = Some(why);
        }
    }

    fn line(&mut self, start: u64, bytes: &[u8]) {
        let n = self.lines;
        self.lines += 1;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            self.blank += 1;
            return;
        }
        let Ok(f) = serde_json::from_slice::<Line>(bytes) else {
            self.bad(format!("line {} is not a JSON object", n + 1));
            return;
        };
        if let Some(why) = &f.fen_unreadable {
            self.unreadable = Some(why.as_str().unwrap_or("unreadable").to_string());
            return;
        }
        if f.usage_ledger.is_some() {
            return;
        }
        let is_message =
            f.role.is_some() && (f.content.is_some() || f.fen_unparsed_content.is_some());
        if n == 0 && !is_message {
            self.session = Some(self.session_of(&f));
            return;
        }
        if !is_message {
            self.bad(format!(
                "line {} is neither a message nor the session",
                n + 1
            ));
            return;
        }
        let role = f
            .role
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let content: Option<Value> = f
            .content
            .and_then(|c| serde_json::from_str::<Value>(c.get()).ok())
            .filter(Value::is_array);
        if content.is_none() {
            // `serde_json::from_str(&content_json)?` fails the whole load in Goose.
            self.bad(format!(
                "message on line {} has content that is not a JSON array",
                n + 1
            ));
        }
        let metadata = f.metadata.as_ref();
        let flag = |key: &str| {
            metadata
                .and_then(|m| m.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(true)
        };
        let text = (role == "user")
            .then(|| {
                content.as_ref()?.as_array()?.iter().find_map(|b| {
                    (b.get("type")?.as_str()? == "text")
                        .then(|| b.get("text")?.as_str().map(str::to_string))
                        .flatten()
                })
            })
            .flatten();
        let model = metadata.and_then(|m| m.get("inference")).and_then(|i| {
            let model = i
                .get("resolvedModel")
                .or_else(|| i.get("requestedModel"))
                .and_then(Value::as_str)?;
            let provider = i
                .get("provider")
                .and_then(Value::as_str)
                .map(str::to_string);
            Some((provider, model.to_string()))
        });
        let id = match &f.id {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => format!("line {}", n + 1),
        };
        self.messages.push(Msg {
            id,
            start,
            len: bytes.len() as u64,
            role,
            created: f.created.as_ref().and_then(Value::as_i64),
            agent_visible: flag("agentVisible"),
            user_visible: flag("userVisible"),
            text,
            model,
        });
    }

    fn session_of(&self, f: &Line) -> Session {
        let time = |v: &Option<Value>| {
            v.as_ref()
                .and_then(Value::as_str)
                .and_then(crate::sources::db_units::sqlite_time_ms)
        };
        let model_config: Option<Value> = f
            .model_config_json
            .as_ref()
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str(t).ok());
        let id = if self.legacy {
            self.file_id.clone()
        } else {
            string(&f.id).unwrap_or_else(|| self.file_id.clone())
        };
        Session {
            id,
            working_dir: string(&f.working_dir),
            // `name`, else (older rows and files) `description`.
            title: string(&f.name).or_else(|| string(&f.description)),
            session_type: string(&f.session_type),
            created_ms: time(&f.created_at),
            updated_ms: time(&f.updated_at),
            parent_id: string(&f.parent_session_id),
            archived: f.archived_at.as_ref().is_some_and(|a| !a.is_null()),
            provider: string(&f.provider_name),
            model: model_config
                .as_ref()
                .and_then(|m| m.get("model_name"))
                .and_then(Value::as_str)
                .map(str::to_string),
            schema_version: f.schema_version.as_ref().and_then(Value::as_i64),
        }
        .with_legacy_defaults(f.message_count.is_some())
    }

    /// Why Goose could not resume this session, if it could not.
    fn not_resumable(&self) -> Option<String> {
        if let Some(why) = &self.unreadable {
            return Some(why.clone());
        }
        let s = self.session.as_ref();
        if !self.legacy && s.is_none_or(|s| s.id.is_empty()) {
            return Some("the session's row is missing or has no id".into());
        }
        if self.malformed > 0 {
            return Some(format!(
                "{} stored line(s) Goose cannot load ({}): it fails to load the session",
                self.malformed,
                self.first_malformed.as_deref().unwrap_or("malformed")
            ));
        }
        if let Some(v) = s.and_then(|s| s.schema_version)
            && v > super::KNOWN_SCHEMA_VERSION
        {
            return Some(format!(
                "unknown schema version {v} (this reader was built from Goose's version {})",
                super::KNOWN_SCHEMA_VERSION
            ));
        }
        None
    }

    /// The messages Goose resumes with.
    fn resumed(&self) -> impl Iterator<Item = &Msg> {
        self.messages
            .iter()
            .filter(|m| (m.role == "user" || m.role == "assistant") && m.agent_visible)
    }

    fn pieces(m: &Msg) -> MessagePieces {
        vec![Piece::Range {
            start: m.start,
            len: m.len,
        }]
    }

    fn model_of(&self, m: &Msg) -> Option<crate::neutral::ModelRef> {
        if m.role != "assistant" {
            return None;
        }
        let (provider, model) = match &m.model {
            Some((p, model)) => (p.clone(), model.clone()),
            None => {
                let s = self.session.as_ref()?;
                (s.provider.clone(), s.model.clone()?)
            }
        };
        Some(crate::neutral::ModelRef {
            provider,
            api: None,
            model,
        })
    }
}

impl Session {
    /// A legacy file's metadata line names no session type: its sessions are the
    /// user's own.
    fn with_legacy_defaults(mut self, legacy: bool) -> Self {
        if legacy && self.session_type.is_none() {
            self.session_type = Some("user".into());
        }
        self
    }
}

impl ForeignReader for GooseReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut consumed = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[consumed..]) {
            let line = &bytes[consumed..consumed + nl];
            self.line(offset + consumed as u64, line);
            consumed += nl + 1;
        }
        consumed as u64
    }

    fn follows_appends(&self) -> bool {
        // A dump is made anew when its rows change; a legacy file is no longer
        // written by Goose (its database replaced them).
        false
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let reason = if tail.iter().all(u8::is_ascii_whitespace) {
            self.not_resumable()
        } else {
            self.not_resumable().or_else(|| {
                Some("the last line is cut short: Goose fails to load the session".into())
            })
        };
        let mut roles = BTreeMap::new();
        let mut count = 0u64;
        if reason.is_none() {
            for m in self.resumed() {
                *roles.entry(m.role.clone()).or_insert(0) += 1;
                count += 1;
            }
        }
        let s = self.session.clone().unwrap_or_else(|| Session {
            id: self.file_id.clone(),
            ..Session::default()
        });
        let preview = self
            .messages
            .iter()
            .filter(|m| m.role == "user" && m.user_visible)
            .find_map(|m| m.text.as_deref())
            .map(|t| crate::store::index::one_line(t, 200));
        let first = self.messages.iter().find_map(|m| m.created);
        let last = self.messages.iter().filter_map(|m| m.created).max();
        let ms = super::db::message_ms;
        let created = s.created_ms.or(first.map(ms));
        let updated = s.updated_ms.max(last.map(ms)).or(created);
        // `goose session list` shows the user's and the scheduler's sessions.
        let listed = self.session.is_some()
            && matches!(s.session_type.as_deref(), Some("user" | "scheduled") | None);
        ForeignSummary {
            id: s.id.clone(),
            cwd: s.working_dir.clone(),
            title: s.title.clone(),
            preview,
            created_at: created.and_then(rfc3339_ms),
            updated_at: updated.and_then(rfc3339_ms),
            listed,
            resumable: reason.is_none(),
            not_resumable_reason: reason,
            entries: self.lines - self.malformed - self.blank,
            malformed_lines: self.malformed,
            messages: count,
            roles,
            compactions: 0,
            archived: s.archived,
            parent_id: s.parent_id.clone(),
            resume_rules: None,
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        if self.summary(tail).not_resumable_reason.is_some() {
            return Vec::new();
        }
        self.resumed().map(Self::pieces).collect()
    }

    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let ok = self.summary(tail).not_resumable_reason.is_none();
        let reference = |m: &Msg, in_conversation: bool| MessageRef {
            pieces: Self::pieces(m),
            entry: Some(m.id.clone()),
            timestamp: m.created.map(super::db::message_ms).and_then(rfc3339_ms),
            in_conversation,
            injected: m.role == "user" && !m.user_visible && m.agent_visible,
            model: self.model_of(m),
            ..MessageRef::default()
        };
        if !history {
            return if ok {
                self.resumed().map(|m| reference(m, true)).collect()
            } else {
                Vec::new()
            };
        }
        self.messages
            .iter()
            .filter(|m| m.role == "user" || m.role == "assistant")
            .map(|m| reference(m, ok && m.agent_visible))
            .collect()
    }
}
