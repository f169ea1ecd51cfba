//! The Codex writer (WRITING-FOR-RESUME §2, §5.2): `sessions/YYYY/MM/DD/rollout-<local
//! time>-<uuidv7>.jsonl`, line 1 a `session_meta` with only the required fields,
//! `source: "cli"`, `originator: "fen-fs"` and a `fen_source` field (no
//! `model_provider`: the user's configured one is used; no `base_instructions`, no
//! `turn_context`), then per turn what OpenAI's own importer writes: a turn start, the
//! user's `response_item` and its `user_message` event, the assistant's items with
//! `agent_message` events, and a turn end. `state_5.sqlite` is never touched.

use super::convert::{Conversation, Item, ToolOutput, texts_of};
use super::draft::{Clock, Context, Draft, Obj, VERSION, iso, text, uuid_v7};
use crate::neutral::Part;
use chrono::{DateTime, Local, Utc};
use serde_json::{Value, json};
use std::collections::HashSet;

/// CX `core/templates/compact/summary_prefix.md`: Codex reads a user message starting
/// with it as a compaction summary.
pub const SUMMARY_PREFIX: &str = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:";

fn image_url(mime: &str, data: Option<&str>, url: Option<&str>) -> Option<String> {
    match (data, url) {
        (Some(d), _) => Some(format!("data:{mime};base64,{d}")),
        (None, Some(u)) => Some(u.to_string()),
        _ => None,
    }
}

/// User content items (`input_text`, `input_image`).
fn user_items(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(json!({"type": "input_text", "text": text})),
            Part::Image { mime, data, url } => image_url(mime, data.as_deref(), url.as_deref())
                .map(|u| json!({"type": "input_image", "image_url": u})),
            _ => None,
        })
        .collect()
}

/// A tool output: a string for one text, else `input_text`/`input_image` items.
fn output(r: &ToolOutput) -> Value {
    match r.content.as_slice() {
        [Part::Text { text }] => Value::String(text.clone()),
        [] => Value::String(String::new()),
        parts => Value::Array(user_items(parts)),
    }
}

/// The OpenAI reasoning item kept for Codex: Codex's own item, or the one pi keeps as
/// a thinking block's signature (`JSON.stringify(item)`).
fn reasoning_item(opaque: Option<&Value>) -> Option<Value> {
    let o = opaque?;
    if o.get("type").and_then(Value::as_str) == Some("reasoning") {
        return Some(o.clone());
    }
    let sig = o.get("thinkingSignature").and_then(Value::as_str)?;
    let item: Value = serde_json::from_str(sig).ok()?;
    (item.get("type").and_then(Value::as_str) == Some("reasoning")).then_some(item)
}

/// The rollout's file name part for `t` in local time (Codex names files so).
fn local_stamp(t: DateTime<Utc>) -> (Vec<String>, String) {
    let l = t.with_timezone(&Local);
    (
        vec![
            l.format("%Y").to_string(),
            l.format("%m").to_string(),
            l.format("%d").to_string(),
        ],
        l.format("%Y-%m-%dT%H-%M-%S").to_string(),
    )
}

struct Rollout {
    out: String,
    expected: Vec<Value>,
    turn: usize,
    open: bool,
    turn_has_user: bool,
    last_agent_message: Option<String>,
    /// Calls written as `custom_tool_call` (free-form input): their outputs follow suit.
    custom: HashSet<String>,
}

impl Rollout {
    fn line(&mut self, t: &str, kind: &str, payload: &str) {
        self.out.push_str(
            &Obj::new()
                .put("timestamp", t)
                .put("type", kind)
                .put_raw("payload", payload)
                .line(),
        );
    }

    fn event(&mut self, t: &str, payload: Value) {
        self.line(t, "event_msg", &text(&payload));
    }

    /// A history item, and what fen-fs's Codex reader makes of it in
    /// `conversation.json` (AGENT-FORMATS §0).
    fn item(&mut self, t: &str, payload: Value) {
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
        let shown = match kind {
            "message" => {
                let mut m = payload.clone();
                m.as_object_mut().map(|o| o.remove("type"));
                m
            }
            k if k.ends_with("_output") => json!({"role": "tool", "content": [payload]}),
            _ => json!({"role": "assistant", "content": [payload]}),
        };
        self.expected.push(shown);
        self.line(t, "response_item", &text(&payload));
    }

    fn start_turn(&mut self, t: &str, secs: i64) {
        self.turn += 1;
        self.open = true;
        self.turn_has_user = false;
        self.last_agent_message = None;
        // codex-cli 0.169 writes a turn start as `task_started`.
        let id = format!("fen-import-turn-{}", self.turn);
        self.event(
            t,
            json!({"type": "task_started", "turn_id": id, "started_at": secs}),
        );
    }

    fn end_turn(&mut self, t: &str) {
        if !self.open {
            return;
        }
        let id = format!("fen-import-turn-{}", self.turn);
        let last = self.last_agent_message.take();
        self.event(
            t,
            json!({"type": "task_complete", "turn_id": id, "last_agent_message": last}),
        );
        self.open = false;
    }

    fn user_message(&mut self, t: &str, text: &str, images: Vec<String>) {
        let mut e = json!({"type": "user_message", "message": text,
                           "local_images": [], "text_elements": []});
        if !images.is_empty() {
            e["images"] = json!(images);
        }
        self.event(t, e);
    }

    fn agent_text(&mut self, t: &str, texts: &mut Vec<String>) {
        if texts.is_empty() {
            return;
        }
        // One text, as OpenAI's importer joins a message's parts.
        let joined = texts.join("\n\n");
        self.item(
            t,
            json!({"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": joined}]}),
        );
        self.event(t, json!({"type": "agent_message", "message": joined}));
        self.last_agent_message = Some(joined);
        texts.clear();
    }
}

/// The new rollout.
pub fn write(conv: &Conversation, ctx: &Context) -> Draft {
    let id = uuid_v7();
    let now = iso(ctx.now);
    let mut clock = Clock::new(ctx.now);
    let mut r = Rollout {
        out: String::new(),
        expected: Vec::new(),
        turn: 0,
        open: false,
        turn_has_user: false,
        last_agent_message: None,
        custom: HashSet::new(),
    };
    let meta = Obj::new()
        .put("id", &id)
        .put("timestamp", &now)
        .put("cwd", &ctx.cwd)
        .put("originator", "fen-fs")
        .put("cli_version", VERSION)
        .put("source", "cli")
        .put("fen_source", ctx.provenance())
        .text();
    r.line(&now, "session_meta", &meta);

    let first_time = conv.items.first().and_then(Item::timestamp);
    if let Some(summary) = &conv.summary {
        let at = clock.at(first_time);
        let t = iso(at);
        r.start_turn(&t, at.timestamp());
        let text = format!("{SUMMARY_PREFIX}\n{summary}");
        r.item(
            &t,
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": text}]}),
        );
        // The picker lists a rollout only with a user_message event in its head.
        if !matches!(conv.items.first(), Some(Item::User { .. })) {
            r.user_message(&t, &text, Vec::new());
            r.turn_has_user = true;
        }
    }
    for item in &conv.items {
        let at = clock.at(item.timestamp());
        let t = iso(at);
        match item {
            Item::User { parts, .. } => {
                if r.open && r.turn_has_user {
                    r.end_turn(&t);
                }
                if !r.open {
                    r.start_turn(&t, at.timestamp());
                }
                r.turn_has_user = true;
                let content = user_items(parts);
                if content.is_empty() {
                    continue;
                }
                r.item(
                    &t,
                    json!({"type": "message", "role": "user", "content": content}),
                );
                let images = parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Image { mime, data, url } => {
                            image_url(mime, data.as_deref(), url.as_deref())
                        }
                        _ => None,
                    })
                    .collect();
                r.user_message(&t, &texts_of(parts), images);
            }
            Item::Assistant { parts, .. } => {
                if !r.open {
                    r.start_turn(&t, at.timestamp());
                }
                let mut texts = Vec::new();
                for p in parts {
                    match p {
                        Part::Text { text } => texts.push(text.clone()),
                        Part::Reasoning { opaque, .. } => {
                            if let Some(item) = reasoning_item(opaque.as_ref()) {
                                r.agent_text(&t, &mut texts);
                                r.item(&t, item);
                            }
                        }
                        Part::ToolCall { id, name, input } => {
                            r.agent_text(&t, &mut texts);
                            let call = match input {
                                // A free-form tool (Codex's apply_patch and the like).
                                Value::String(s) => {
                                    r.custom.insert(id.clone());
                                    json!({"type": "custom_tool_call", "call_id": id,
                                           "name": name, "input": s})
                                }
                                other => {
                                    let args = match other {
                                        Value::Null => "{}".to_string(),
                                        v => v.to_string(),
                                    };
                                    json!({"type": "function_call", "name": name,
                                           "arguments": args, "call_id": id})
                                }
                            };
                            r.item(&t, call);
                        }
                        _ => {}
                    }
                }
                r.agent_text(&t, &mut texts);
            }
            Item::Results { results, .. } => {
                if !r.open {
                    r.start_turn(&t, at.timestamp());
                }
                for res in results {
                    let kind = if r.custom.contains(&res.call_id) {
                        "custom_tool_call_output"
                    } else {
                        "function_call_output"
                    };
                    r.item(
                        &t,
                        json!({"type": kind, "call_id": res.call_id, "output": output(res)}),
                    );
                }
            }
        }
    }
    let end = iso(clock.at(None));
    r.end_turn(&end);
    let (folders, stamp) = local_stamp(ctx.now);
    let mut all = vec!["sessions".to_string()];
    all.extend(folders);
    Draft {
        file_name: format!("rollout-{stamp}-{id}.jsonl"),
        id,
        folders: all,
        bytes: r.out.into_bytes(),
        expected: r.expected,
    }
}
