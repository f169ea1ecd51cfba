//! The pi writer (WRITING-FOR-RESUME §3, §5.2): `sessions/--<cwd>--/<ISO>_<uuidv7>.jsonl`
//! with a version 3 header whose `parentSession` is the source file (as pi's own
//! fork writes it), `message` entries chained by `parentId`, assistant messages naming
//! the source's real provider, API and model (pi restores that model when it can),
//! zero usage, timestamps in milliseconds, a `compaction` entry for a summary, and a
//! trailing `session_info` with the title.

use super::convert::{Conversation, Item};
use super::draft::{Clock, Context, Draft, Obj, iso, uuid_v7, value};
use crate::agent::Agent;
use crate::neutral::{ModelRef, Part};
use serde_json::{Value, json};
use std::collections::HashSet;

/// `pi --continue` reads only this much of line 1 (`isValidSessionFile`).
const HEADER_MAX: usize = 512;

/// pi's folder for `cwd`: without its leading `/`, every `/`, `\` and `:` as `-`,
/// wrapped in `--` (`getDefaultSessionDir`; no cut for long names). pi passes it
/// `process.cwd()`, the real path: give it one.
pub fn session_folder(cwd: &str) -> String {
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    let body: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// The provider, API and model pi records for an assistant message: the source's
/// own when known, else what the source agent runs (a guess pi only uses to restore
/// the model; it falls back to its default when it cannot).
fn model_of(model: Option<&ModelRef>, source: Agent) -> (String, String, String) {
    let provider = model.and_then(|m| m.provider.clone()).unwrap_or_else(|| {
        match source {
            Agent::Claude => "anthropic",
            Agent::Codex => "openai-codex",
            _ => "unknown",
        }
        .to_string()
    });
    let api = model.and_then(|m| m.api.clone()).unwrap_or_else(|| {
        match provider.as_str() {
            "anthropic" => "anthropic-messages",
            "openai-codex" => "openai-codex-responses",
            "openai" => "openai-responses",
            "google" => "google-generative-ai",
            _ => "unknown",
        }
        .to_string()
    });
    let name = model
        .map(|m| m.model.clone())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".into());
    (provider, api, name)
}

/// pi's thinking block for a kept piece of reasoning: pi's own as it was; Anthropic's
/// signed block with its signature under `thinkingSignature`; OpenAI's reasoning item
/// as its summary text with the item itself as the signature (PIAI
/// `openai-responses-shared.js`).
fn thinking(text: &str, opaque: Option<&Value>) -> Option<Value> {
    let o = opaque?;
    match o.get("type").and_then(Value::as_str) {
        Some("thinking") if o.get("thinkingSignature").is_some() => Some(o.clone()),
        Some("thinking") => Some(json!({"type": "thinking",
            "thinking": o.get("thinking").and_then(Value::as_str).unwrap_or(text),
            "thinkingSignature": o.get("signature").cloned().unwrap_or(Value::Null)})),
        Some("redacted_thinking") => Some(json!({"type": "thinking", "thinking": "",
            "thinkingSignature": o.get("data").cloned().unwrap_or(Value::Null), "redacted": true})),
        Some("reasoning") => Some(json!({"type": "thinking", "thinking": text,
            "thinkingSignature": o.to_string()})),
        _ => None,
    }
}

fn image(mime: &str, data: Option<&str>, url: Option<&str>) -> Value {
    match data {
        Some(d) => json!({"type": "image", "data": d, "mimeType": mime}),
        // pi holds images as base64 only.
        None => json!({"type": "text", "text": format!("[image: {}]", url.unwrap_or(mime))}),
    }
}

fn content_items(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            Part::Image { mime, data, url } => Some(image(mime, data.as_deref(), url.as_deref())),
            _ => None,
        })
        .collect()
}

const ZERO_USAGE: &str = r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;

/// Entry ids: 8 hex characters, as pi makes them, unique in the file.
struct Ids(HashSet<String>);

impl Ids {
    fn next(&mut self) -> String {
        loop {
            let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
            if self.0.insert(id.clone()) {
                return id;
            }
        }
    }
}

/// Entries chained by `parentId`, in file order.
struct Chain {
    out: String,
    ids: Ids,
    parent: Option<String>,
}

impl Chain {
    /// Appends an entry of `kind` whose other fields `fields` adds; returns its id.
    fn entry(&mut self, kind: &str, t: &str, fields: impl FnOnce(Obj) -> Obj) -> String {
        let id = self.ids.next();
        let head = Obj::new()
            .put("type", kind)
            .put("id", &id)
            .put("parentId", &self.parent)
            .put("timestamp", t);
        self.out.push_str(&fields(head).line());
        self.parent = Some(id.clone());
        id
    }
}

/// The new session: `folder` is the folder of its cwd's real path (`session_folder`).
pub fn write(conv: &Conversation, ctx: &Context, folder: String) -> Draft {
    let id = uuid_v7();
    let now = iso(ctx.now);
    let header = |with_parent: bool| {
        Obj::new()
            .put("type", "session")
            .put("version", 3)
            .put("id", &id)
            .put("timestamp", &now)
            .put("cwd", &ctx.cwd)
            .put_some(
                "parentSession",
                with_parent.then(|| ctx.source_path.to_string_lossy().into_owned()),
            )
            .line()
    };
    let mut out = header(true);
    let long_header = out.len() > HEADER_MAX;
    if long_header {
        out = header(false);
    }
    let mut chain = Chain {
        out,
        ids: Ids(HashSet::new()),
        parent: None,
    };
    if long_header {
        // pi reads only the first 512 bytes of line 1 for `--continue`: a source path
        // that long goes into a custom entry (context builders ignore those).
        chain.entry("custom", &now, |o| {
            o.put("customType", "fen-fs-source")
                .put("data", ctx.provenance())
        });
    }
    let mut clock = Clock::new(ctx.now);
    let mut expected = Vec::new();
    let mut first_message: Option<String> = None;
    let mut message = |chain: &mut Chain, t: &str, text: String| {
        let id = chain.entry("message", t, |o| o.put_raw("message", &text));
        first_message.get_or_insert(id);
        expected.push(value(&text));
    };
    for item in &conv.items {
        let at = clock.at(item.timestamp());
        let (t, ms) = (iso(at), at.timestamp_millis());
        match item {
            Item::User { parts, .. } => {
                let content = match parts.as_slice() {
                    [Part::Text { text }] => Value::String(text.clone()),
                    parts => Value::Array(content_items(parts)),
                };
                let m = Obj::new()
                    .put("role", "user")
                    .put("content", content)
                    .put("timestamp", ms)
                    .text();
                message(&mut chain, &t, m);
            }
            Item::Assistant { parts, model, .. } => {
                let mut content = Vec::new();
                let mut calls = false;
                for p in parts {
                    match p {
                        Part::Text { text } => content.push(json!({"type": "text", "text": text})),
                        Part::Reasoning { text, opaque, .. } => {
                            content.extend(thinking(text, opaque.as_ref()));
                        }
                        Part::ToolCall { id, name, input } => {
                            calls = true;
                            let args = match input {
                                Value::Object(_) => input.clone(),
                                Value::Null => json!({}),
                                other => json!({"input": other}),
                            };
                            content.push(
                                json!({"type": "toolCall", "id": id, "name": name, "arguments": args}),
                            );
                        }
                        _ => {}
                    }
                }
                if content.is_empty() {
                    continue;
                }
                let (provider, api, name) = model_of(model.as_ref(), ctx.source_agent);
                let m = Obj::new()
                    .put("role", "assistant")
                    .put("content", content)
                    .put("api", api)
                    .put("provider", provider)
                    .put("model", name)
                    .put_raw("usage", ZERO_USAGE)
                    .put("stopReason", if calls { "toolUse" } else { "stop" })
                    .put("timestamp", ms)
                    .text();
                message(&mut chain, &t, m);
            }
            Item::Results { results, .. } => {
                for r in results {
                    let m = Obj::new()
                        .put("role", "toolResult")
                        .put("toolCallId", &r.call_id)
                        .put("toolName", &r.name)
                        .put("content", content_items(&r.content))
                        .put("isError", r.is_error)
                        .put("timestamp", ms)
                        .text();
                    message(&mut chain, &t, m);
                }
            }
        }
    }
    let end = iso(clock.at(None));
    if let Some(summary) = &conv.summary {
        // After the kept messages, keeping them all: pi sends the summary first.
        chain.entry("compaction", &end, |o| {
            o.put("summary", summary)
                .put("firstKeptEntryId", &first_message)
                .put("tokensBefore", 0)
        });
        expected.insert(0, json!({"role": "compactionSummary", "summary": summary}));
    }
    chain.entry("session_info", &end, |o| o.put("name", &ctx.title));
    let stamp = now.replace([':', '.'], "-");
    Draft {
        file_name: format!("{stamp}_{id}.jsonl"),
        id,
        folders: vec!["sessions".into(), folder],
        bytes: chain.out.into_bytes(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_named_as_pi_names_them() {
        assert_eq!(session_folder("/home/u/proj"), "--home-u-proj--");
        assert_eq!(session_folder("/"), "----");
        assert_eq!(session_folder("/a:b\\c"), "--a-b-c--");
    }

    #[test]
    fn the_model_is_the_sources_own_or_what_its_agent_runs() {
        let m = ModelRef {
            provider: Some("anthropic".into()),
            api: None,
            model: "claude-sonnet-4-5".into(),
        };
        assert_eq!(
            model_of(Some(&m), Agent::Fen),
            (
                "anthropic".into(),
                "anthropic-messages".into(),
                "claude-sonnet-4-5".into()
            )
        );
        assert_eq!(
            model_of(None, Agent::Codex),
            (
                "openai-codex".into(),
                "openai-codex-responses".into(),
                "unknown".into()
            )
        );
    }
}
