//! The common half of every conversion (WRITING-FOR-RESUME §5.1): a session's
//! neutral messages become one clean list of turns that any target can write.
//! Injected context and system messages go; consecutive assistant messages are one
//! turn; every tool call gets exactly one result (a synthetic error result when none
//! was recorded) and every result its call (else it becomes user text); tool call ids
//! are made unique, and valid for the target; reasoning stays only where the target's
//! vendor can take it back; between Claude Code and Codex tool calls become text in
//! OpenAI's importer format.

use crate::agent::Agent;
use crate::neutral::{Message, ModelRef, Part, Role, Vendor};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The text of a result that was never recorded (the session ended, or was cut,
/// between a call and its result).
pub const NO_RESULT: &str = "[no result recorded]";

/// OpenAI's importer cuts a call's input at 2,000 characters and a result at 4,000
/// (codex-rs/external-agent-sessions `records.rs`).
const NOTE_MAX_LEN: usize = 2_000;
const TOOL_RESULT_MAX_LEN: usize = 4_000;

/// How tool calls and results are carried over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolMode {
    /// As the target's own call and result items.
    Structured,
    /// As text in the assistant's messages (`[external_agent_tool_call: NAME]`...), so
    /// nothing depends on the target's API accepting tools it does not declare.
    Text,
}

/// What shapes a conversion, from the source and target agents.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub source: Agent,
    pub target: Agent,
    pub tools: ToolMode,
}

impl Rules {
    /// WRITING-FOR-RESUME §5.3: text tool calls between Claude Code and Codex (as
    /// OpenAI's own importer does), structured everywhere else.
    pub fn new(source: Agent, target: Agent) -> Rules {
        let cross = matches!(
            (source, target),
            (Agent::Claude, Agent::Codex) | (Agent::Codex, Agent::Claude)
        );
        Rules {
            source,
            target,
            tools: if cross {
                ToolMode::Text
            } else {
                ToolMode::Structured
            },
        }
    }

    /// Whether a piece of reasoning signed by `vendor` (with its opaque form present
    /// or not) can go to the target: only back to the vendor that made it. pi keeps
    /// every signed form and decides per request itself (PIAI transform-messages);
    /// fen's own sessions hold no reasoning.
    fn keeps_reasoning(&self, vendor: Vendor, opaque: Option<&serde_json::Value>) -> bool {
        let signed = opaque.is_some_and(|o| signed_by(o) == Some(vendor));
        match self.target {
            Agent::Claude => signed && vendor == Vendor::Anthropic,
            Agent::Codex => signed && vendor == Vendor::OpenAi,
            Agent::Pi => signed || self.source == Agent::Pi,
            _ => false,
        }
    }
}

/// The vendor whose signature or encryption an opaque reasoning form carries:
/// Anthropic's `thinking` with a signature or `redacted_thinking`; OpenAI's
/// `reasoning` item with `encrypted_content`; pi's `thinking` block with its
/// `thinkingSignature` (OpenAI's item as JSON text, else Anthropic's signature).
pub fn signed_by(opaque: &serde_json::Value) -> Option<Vendor> {
    let s = |k: &str| {
        opaque
            .get(k)
            .and_then(|v| v.as_str())
            .filter(|v| !v.trim().is_empty())
    };
    match s("type")? {
        "redacted_thinking" => s("data").map(|_| Vendor::Anthropic),
        "reasoning" => s("encrypted_content").map(|_| Vendor::OpenAi),
        "thinking" => {
            if s("signature").is_some() {
                return Some(Vendor::Anthropic);
            }
            let sig = s("thinkingSignature")?;
            match serde_json::from_str::<serde_json::Value>(sig) {
                Ok(item) if item.is_object() => signed_by(&item),
                _ => Some(Vendor::Anthropic),
            }
        }
        _ => None,
    }
}

/// One tool call after pairing, under the id the target file uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub input: serde_json::Value,
}

/// One tool result after pairing, under its call's target id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    pub call_id: String,
    pub name: String,
    /// `Text` and `Image` parts only.
    pub content: Vec<Part>,
    pub is_error: bool,
}

/// One turn of the converted conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Item {
    /// `Text` and `Image` parts.
    User {
        parts: Vec<Part>,
        timestamp: Option<String>,
    },
    /// `Text`, kept `Reasoning` and `ToolCall` parts (with target ids). Tool calls
    /// are answered by the `Results` item right after.
    Assistant {
        parts: Vec<Part>,
        model: Option<ModelRef>,
        timestamp: Option<String>,
    },
    /// The results of the assistant turn before, in its calls' order.
    Results {
        results: Vec<ToolOutput>,
        timestamp: Option<String>,
    },
}

impl Item {
    pub fn timestamp(&self) -> Option<&str> {
        match self {
            Item::User { timestamp, .. }
            | Item::Assistant { timestamp, .. }
            | Item::Results { timestamp, .. } => timestamp.as_deref(),
        }
    }
}

/// What a conversion left out or changed, for the user to be told.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Injected context (environment blocks, reminders...) and system messages.
    pub dropped_context: usize,
    /// Thinking or reasoning the target's vendor cannot take back.
    pub dropped_reasoning: usize,
    /// Tool calls with no recorded result, given a synthetic error result.
    pub synthesized_results: usize,
    /// Results with no call before them, written as user text.
    pub orphan_results: usize,
    /// Tool calls written as text (Claude Code <-> Codex).
    pub calls_as_text: usize,
    /// Parts with no form in the target (images in the wrong place, documents,
    /// search results...), written as a text placeholder.
    pub placeholders: usize,
}

impl Report {
    /// One line per kind of loss, for people.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut say = |n: usize, what: &str| {
            if n > 0 {
                out.push(format!("{n} {what}"));
            }
        };
        say(
            self.dropped_context,
            "injected context or system message(s) left out (the target adds its own)",
        );
        say(
            self.dropped_reasoning,
            "thinking/reasoning block(s) left out (only the vendor that signed them takes them back)",
        );
        say(
            self.calls_as_text,
            "tool call(s) written as text (between Claude Code and Codex)",
        );
        say(
            self.synthesized_results,
            "tool call(s) without a recorded result, given \"[no result recorded]\"",
        );
        say(
            self.orphan_results,
            "tool result(s) without their call, written as user text",
        );
        say(
            self.placeholders,
            "part(s) with no form in the target, written as text placeholders",
        );
        out
    }
}

/// A conversation ready to write: an optional compaction summary standing for what
/// came before, then the turns.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Conversation {
    pub summary: Option<String>,
    pub items: Vec<Item>,
    pub report: Report,
}

impl Conversation {
    pub fn is_empty(&self) -> bool {
        self.summary.is_none() && self.items.is_empty()
    }

    /// The newest model that wrote an assistant turn, as the source names it.
    pub fn last_model(&self) -> Option<&ModelRef> {
        self.items.iter().rev().find_map(|i| match i {
            Item::Assistant { model, .. } => model.as_ref(),
            _ => None,
        })
    }
}

/// Converts the messages of `conversation.json` (neutral) for `rules.target`.
pub fn convert(messages: &[Message], rules: Rules) -> Conversation {
    let mut report = Report::default();
    let mut ids = IdMaker::new(rules.target);
    let kept: Vec<&Message> = messages
        .iter()
        .filter(|m| {
            let drop = m.injected || matches!(m.role, Role::System) || !m.in_conversation;
            if drop && m.in_conversation {
                report.dropped_context += 1;
            }
            !drop
        })
        .collect();

    // A summary at the start stands for the history a compaction took out.
    let mut start = 0;
    let mut summary: Option<String> = None;
    while start < kept.len() && kept[start].summary {
        let text = texts_of(&kept[start].parts);
        if !text.is_empty() {
            summary = Some(match summary {
                Some(s) => format!("{s}\n\n{text}"),
                None => text,
            });
        }
        start += 1;
    }

    let mut items: Vec<Item> = Vec::new();
    let mut i = start;
    while i < kept.len() {
        let m = kept[i];
        if m.role == Role::Assistant {
            // Consecutive assistant messages are one turn (Codex stores each item as
            // its own message; Claude Code one entry per content block).
            let mut parts = Vec::new();
            let mut model = None;
            let timestamp = m.timestamp.clone();
            while i < kept.len() && kept[i].role == Role::Assistant {
                parts.extend(kept[i].parts.iter().cloned());
                if kept[i].model.is_some() {
                    model = kept[i].model.clone();
                }
                i += 1;
            }
            let (parts, calls) = assistant_parts(parts, &rules, &mut ids, &mut report);
            // The results that follow: tool messages, and the results at the head
            // of user messages (Claude Code), until someone speaks.
            let mut answered: HashMap<usize, ToolOutput> = HashMap::new();
            let mut after: Vec<Item> = Vec::new();
            let mut results_time = None;
            while i < kept.len() && matches!(kept[i].role, Role::Tool | Role::User) {
                let m = kept[i];
                let has_results = m.parts.iter().any(|p| matches!(p, Part::ToolResult { .. }));
                if !has_results && m.role == Role::User {
                    break;
                }
                results_time = results_time.or(m.timestamp.clone());
                let mut rest = Vec::new();
                for p in &m.parts {
                    match p {
                        Part::ToolResult {
                            call_id,
                            content,
                            is_error,
                            ..
                        } => {
                            // The first call of this id not answered yet (ids
                            // may repeat within a turn).
                            let slot = calls.iter().enumerate().position(|(k, (src, _))| {
                                src == call_id && !answered.contains_key(&k)
                            });
                            match slot {
                                Some(k) => {
                                    let call = &calls[k].1;
                                    answered.insert(
                                        k,
                                        ToolOutput {
                                            call_id: call.id.clone(),
                                            name: call.name.clone(),
                                            content: result_content(content, &mut report),
                                            is_error: *is_error,
                                        },
                                    );
                                }
                                None => {
                                    report.orphan_results += 1;
                                    rest.push(Part::Text {
                                        text: result_note(content, *is_error),
                                    });
                                }
                            }
                        }
                        other => rest.extend(user_part(other, &mut report)),
                    }
                }
                i += 1;
                if !rest.is_empty() {
                    after.push(Item::User {
                        parts: rest,
                        timestamp: m.timestamp.clone(),
                    });
                    // Someone spoke: later results answer nothing of this turn.
                    break;
                }
            }
            let results: Vec<ToolOutput> = calls
                .iter()
                .enumerate()
                .map(|(k, (_, call))| {
                    answered.remove(&k).unwrap_or_else(|| {
                        report.synthesized_results += 1;
                        ToolOutput {
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            content: vec![Part::Text {
                                text: NO_RESULT.into(),
                            }],
                            is_error: true,
                        }
                    })
                })
                .collect();
            let results_time = results_time.or(timestamp.clone());
            push_turn(
                &mut items,
                parts,
                model,
                timestamp,
                results,
                results_time,
                &rules,
                &mut report,
            );
            items.extend(after);
            continue;
        }
        // A user message (or any other role a source kept: pi's bash executions and
        // custom messages are user text to the model), or a tool message with no
        // assistant turn before it.
        let mut parts = Vec::new();
        for p in &m.parts {
            match p {
                Part::ToolResult {
                    content, is_error, ..
                } => {
                    report.orphan_results += 1;
                    parts.push(Part::Text {
                        text: result_note(content, *is_error),
                    });
                }
                other => parts.extend(user_part(other, &mut report)),
            }
        }
        if !parts.is_empty() {
            items.push(Item::User {
                parts,
                timestamp: m.timestamp.clone(),
            });
        }
        i += 1;
    }
    Conversation {
        summary,
        items,
        report,
    }
}

/// The assistant turn and its results as the target takes them: structured, or
/// (text mode) the calls as notes in the assistant's text and the results as an
/// assistant message of notes, as OpenAI's importer writes them.
#[allow(clippy::too_many_arguments)]
fn push_turn(
    items: &mut Vec<Item>,
    parts: Vec<Part>,
    model: Option<ModelRef>,
    timestamp: Option<String>,
    results: Vec<ToolOutput>,
    results_time: Option<String>,
    rules: &Rules,
    report: &mut Report,
) {
    if rules.tools == ToolMode::Structured {
        if !parts.is_empty() {
            items.push(Item::Assistant {
                parts,
                model,
                timestamp,
            });
        }
        if !results.is_empty() {
            items.push(Item::Results {
                results,
                timestamp: results_time,
            });
        }
        return;
    }
    let parts: Vec<Part> = parts
        .into_iter()
        .map(|p| match p {
            Part::ToolCall { name, input, .. } => {
                report.calls_as_text += 1;
                Part::Text {
                    text: call_note(&name, &input),
                }
            }
            other => other,
        })
        .collect();
    if !parts.is_empty() {
        items.push(Item::Assistant {
            parts,
            model: model.clone(),
            timestamp,
        });
    }
    if !results.is_empty() {
        let notes = results
            .iter()
            .map(|r| Part::Text {
                text: result_note(&r.content, r.is_error),
            })
            .collect();
        items.push(Item::Assistant {
            parts: notes,
            model,
            timestamp: results_time,
        });
    }
}

/// An assistant turn's parts for the target, and its calls: (source id, call).
fn assistant_parts(
    parts: Vec<Part>,
    rules: &Rules,
    ids: &mut IdMaker,
    report: &mut Report,
) -> (Vec<Part>, Vec<(String, Call)>) {
    let mut out = Vec::new();
    let mut calls = Vec::new();
    for p in parts {
        match p {
            Part::Text { text } => {
                if !text.is_empty() {
                    out.push(Part::Text { text });
                }
            }
            Part::ToolCall { id, name, input } => {
                let call = Call {
                    id: ids.make(&id),
                    name,
                    input,
                };
                out.push(Part::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                });
                calls.push((id, call));
            }
            Part::Reasoning {
                vendor,
                text,
                opaque,
            } => {
                if rules.keeps_reasoning(vendor, opaque.as_ref()) {
                    out.push(Part::Reasoning {
                        vendor,
                        text,
                        opaque,
                    });
                } else {
                    report.dropped_reasoning += 1;
                }
            }
            Part::Image { mime, .. } => {
                // No assistant content of any target holds an image.
                report.placeholders += 1;
                out.push(Part::Text {
                    text: format!("[image: {mime}]"),
                });
            }
            Part::Other { what, text } => {
                report.placeholders += 1;
                out.push(Part::Text {
                    text: other_note(&what, &text),
                });
            }
            Part::ToolResult {
                content, is_error, ..
            } => {
                report.orphan_results += 1;
                out.push(Part::Text {
                    text: result_note(&content, is_error),
                });
            }
        }
    }
    (out, calls)
}

/// A user message's part for the target (`None`: nothing to keep).
fn user_part(p: &Part, report: &mut Report) -> Option<Part> {
    match p {
        Part::Text { text } if text.is_empty() => None,
        Part::Text { .. } | Part::Image { .. } => Some(p.clone()),
        Part::Other { what, text } => {
            report.placeholders += 1;
            Some(Part::Text {
                text: other_note(what, text),
            })
        }
        Part::ToolCall { name, input, .. } => {
            report.placeholders += 1;
            Some(Part::Text {
                text: call_note(name, input),
            })
        }
        // Reasoning in a user message is nothing a model said: left out.
        Part::Reasoning { .. } => {
            report.dropped_reasoning += 1;
            None
        }
        Part::ToolResult { .. } => None,
    }
}

/// A result's content: text and images; anything else as text.
fn result_content(content: &[Part], report: &mut Report) -> Vec<Part> {
    content
        .iter()
        .filter_map(|p| match p {
            Part::Text { .. } | Part::Image { .. } => Some(p.clone()),
            Part::Other { what, text } => {
                report.placeholders += 1;
                Some(Part::Text {
                    text: other_note(what, text),
                })
            }
            _ => None,
        })
        .collect()
}

fn other_note(what: &str, text: &str) -> String {
    if text.is_empty() {
        format!("[{what}]")
    } else {
        format!("[{what}]\n{text}")
    }
}

/// The text parts of `parts`, joined by blank lines.
pub fn texts_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `text` cut to `max` characters, the last three being `...` (the importer's rule).
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max.saturating_sub(3)).collect();
    format!("{head}...")
}

/// `[external_agent_tool_call: NAME]` with the input's description, command and file
/// (or the input JSON, cut), as OpenAI's importer writes a Claude Code call.
pub fn call_note(name: &str, input: &serde_json::Value) -> String {
    let mut lines = vec![format!("[external_agent_tool_call: {name}]")];
    match input {
        serde_json::Value::Object(o) => {
            let s = |k: &str| o.get(k).and_then(|v| v.as_str());
            if let Some(d) = s("description") {
                lines.push(format!("description: {d}"));
            }
            if let Some(c) = s("command").or_else(|| s("cmd")) {
                lines.push(format!("command: {c}"));
            }
            if let Some(f) = s("file_path").or_else(|| s("file")).or_else(|| s("path")) {
                lines.push(format!("file: {f}"));
            }
            if lines.len() == 1 {
                lines.push(format!(
                    "input: {}",
                    truncate(&input.to_string(), NOTE_MAX_LEN)
                ));
            }
        }
        serde_json::Value::String(s) => {
            lines.push(format!("input: {}", truncate(s, NOTE_MAX_LEN)));
        }
        serde_json::Value::Null => {}
        other => lines.push(format!(
            "input: {}",
            truncate(&other.to_string(), NOTE_MAX_LEN)
        )),
    }
    lines.push("[/external_agent_tool_call]".into());
    lines.join("\n")
}

/// `[external_agent_tool_result(: error)]` with the result's text, cut, as OpenAI's
/// importer writes a result; images as `[image: TYPE]`.
pub fn result_note(content: &[Part], is_error: bool) -> String {
    let label = if is_error {
        "[external_agent_tool_result: error]"
    } else {
        "[external_agent_tool_result]"
    };
    let text = content
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } if !text.is_empty() => Some(text.clone()),
            Part::Image { mime, .. } => Some(format!("[image: {mime}]")),
            Part::Other { what, text } => Some(other_note(what, text)),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if text.is_empty() {
        format!("{label}\n[/external_agent_tool_result]")
    } else {
        format!(
            "{label}\n{}\n[/external_agent_tool_result]",
            truncate(&text, TOOL_RESULT_MAX_LEN)
        )
    }
}

/// Tool call ids as the target takes them, one per call: unique in the file, and for
/// Claude Code (and fen, which writes Anthropic's shapes) `^[A-Za-z0-9_-]{1,64}$`,
/// mapped as Anthropic's own clients do (every other character `_`, cut at 64).
struct IdMaker {
    target: Agent,
    used: HashSet<String>,
    made: usize,
}

impl IdMaker {
    fn new(target: Agent) -> IdMaker {
        IdMaker {
            target,
            used: HashSet::new(),
            made: 0,
        }
    }

    fn make(&mut self, source: &str) -> String {
        self.made += 1;
        let base = match self.target {
            Agent::Claude | Agent::Fen => claude_id(source),
            // pi stores OpenAI ids as `call_id|item_id`: Codex takes the call id.
            Agent::Codex => source.split('|').next().unwrap_or(source).to_string(),
            _ => source.to_string(),
        };
        let base = if base.is_empty() {
            format!("call_fen_{}", self.made)
        } else {
            base
        };
        let mut id = base.clone();
        let mut n = 1;
        while self.used.contains(&id) {
            n += 1;
            let suffix = format!("_{n}");
            let keep = if matches!(self.target, Agent::Claude | Agent::Fen) {
                64 - suffix.len()
            } else {
                base.len()
            };
            let mut cut = keep.min(base.len());
            while !base.is_char_boundary(cut) {
                cut -= 1;
            }
            id = format!("{}{suffix}", &base[..cut]);
        }
        self.used.insert(id.clone());
        id
    }
}

/// `id` with every character outside `[A-Za-z0-9_-]` as `_`, cut at 64.
pub fn claude_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }
    fn call(id: &str, name: &str) -> Part {
        Part::ToolCall {
            id: id.into(),
            name: name.into(),
            input: json!({"command": "ls"}),
        }
    }
    fn result(id: &str, t: &str) -> Part {
        Part::ToolResult {
            call_id: id.into(),
            name: None,
            content: vec![text(t)],
            is_error: false,
        }
    }
    fn msg(role: Role, parts: Vec<Part>) -> Message {
        Message::new(role, parts)
    }

    #[test]
    fn every_call_gets_one_result_and_every_result_its_call() {
        let m = vec![
            msg(Role::User, vec![text("go")]),
            msg(
                Role::Assistant,
                vec![text("a"), call("c1", "Bash"), call("c2", "Read")],
            ),
            // c2 answered first, c1 never; a stray result for c9.
            msg(Role::Tool, vec![result("c2", "two")]),
            msg(Role::Tool, vec![result("c9", "stray")]),
            msg(Role::Tool, vec![result("c2", "twice")]),
            msg(Role::User, vec![text("next")]),
        ];
        let c = convert(&m, Rules::new(Agent::Pi, Agent::Pi));
        let Item::Results { results, .. } = &c.items[2] else {
            panic!("{:?}", c.items)
        };
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].call_id, "c1");
        assert!(results[0].is_error);
        assert_eq!(results[0].content, vec![text(NO_RESULT)]);
        assert_eq!(results[1].call_id, "c2");
        assert_eq!(results[1].content, vec![text("two")]);
        assert_eq!(c.report.synthesized_results, 1);
        assert_eq!(c.report.orphan_results, 2);
        let rest: Vec<String> = c.items[3..]
            .iter()
            .map(|i| match i {
                Item::User { parts, .. } => texts_of(parts),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(rest[0].contains("stray"), "{rest:?}");
        assert!(rest[1].contains("twice"), "{rest:?}");
        assert_eq!(rest[2], "next");
    }

    #[test]
    fn results_answer_calls_sharing_an_id_in_the_calls_order() {
        // Some servers give every call of a turn the same id (or none): each result
        // answers the first call of its id not yet answered.
        let m = vec![
            msg(Role::User, vec![text("go")]),
            msg(Role::Assistant, vec![call("", "A"), call("", "B")]),
            msg(Role::Tool, vec![result("", "one")]),
            msg(Role::Tool, vec![result("", "two")]),
        ];
        let c = convert(&m, Rules::new(Agent::Fen, Agent::Pi));
        let Item::Results { results, .. } = &c.items[2] else {
            panic!("{:?}", c.items)
        };
        let got: Vec<(&str, &str, Vec<Part>)> = results
            .iter()
            .map(|r| (r.call_id.as_str(), r.name.as_str(), r.content.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("call_fen_1", "A", vec![text("one")]),
                ("call_fen_2", "B", vec![text("two")])
            ]
        );
        assert_eq!(c.report, Report::default());
    }

    #[test]
    fn claude_style_results_in_user_messages_pair_and_the_text_after_stays_user() {
        let m = vec![
            msg(Role::Assistant, vec![call("toolu_1", "Bash")]),
            msg(Role::User, vec![result("toolu_1", "ok"), text("and now?")]),
        ];
        let c = convert(&m, Rules::new(Agent::Claude, Agent::Pi));
        assert_eq!(c.items.len(), 3);
        assert!(
            matches!(&c.items[1], Item::Results { results, .. } if results[0].content == vec![text("ok")])
        );
        assert!(matches!(&c.items[2], Item::User { parts, .. } if texts_of(parts) == "and now?"));
        assert_eq!(c.report, Report::default());
    }

    #[test]
    fn ids_are_normalised_identically_on_both_sides_and_kept_unique() {
        let long = "x".repeat(80);
        let m = vec![
            msg(
                Role::Assistant,
                vec![
                    call("call_a|fc.1", "A"),
                    call("call a|fc 1", "B"),
                    call(&long, "C"),
                ],
            ),
            msg(
                Role::Tool,
                vec![
                    result("call_a|fc.1", "1"),
                    result("call a|fc 1", "2"),
                    result(&long, "3"),
                ],
            ),
        ];
        let c = convert(&m, Rules::new(Agent::Pi, Agent::Claude));
        let Item::Assistant { parts, .. } = &c.items[0] else {
            panic!()
        };
        let ids: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids[0], "call_a_fc_1");
        assert_eq!(ids[1], "call_a_fc_1_2");
        assert_eq!(ids[2].len(), 64);
        let re = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        assert!(ids.iter().all(|i| re(i)));
        let Item::Results { results, .. } = &c.items[1] else {
            panic!()
        };
        let rids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, rids);
        assert_eq!(results[1].content, vec![text("2")]);
        // Codex takes the call id of pi's `call|item` pair.
        let c = convert(&m, Rules::new(Agent::Pi, Agent::Codex));
        let Item::Results { results, .. } = &c.items[1] else {
            panic!()
        };
        assert_eq!(results[0].call_id, "call_a");
    }

    #[test]
    fn reasoning_stays_only_with_its_vendor() {
        let anthropic = Part::Reasoning {
            vendor: Vendor::Anthropic,
            text: "hmm".into(),
            opaque: Some(json!({"type": "thinking", "thinking": "hmm", "signature": "sig"})),
        };
        let openai = Part::Reasoning {
            vendor: Vendor::OpenAi,
            text: "plan".into(),
            opaque: Some(json!({"type": "reasoning", "encrypted_content": "gAAA"})),
        };
        // Claude Code keeps an unsigned block as its opaque form: not signed.
        let unsigned = Part::Reasoning {
            vendor: Vendor::Anthropic,
            text: "loose".into(),
            opaque: Some(json!({"type": "thinking", "thinking": "loose"})),
        };
        let m = vec![msg(
            Role::Assistant,
            vec![
                anthropic.clone(),
                openai.clone(),
                unsigned.clone(),
                text("hi"),
            ],
        )];
        let kept = |src, tgt| {
            let c = convert(&m, Rules::new(src, tgt));
            let Item::Assistant { parts, .. } = &c.items[0] else {
                panic!()
            };
            (
                parts
                    .iter()
                    .filter(|p| matches!(p, Part::Reasoning { .. }))
                    .cloned()
                    .collect::<Vec<_>>(),
                c.report.dropped_reasoning,
            )
        };
        assert_eq!(
            kept(Agent::Claude, Agent::Claude),
            (vec![anthropic.clone()], 2)
        );
        assert_eq!(kept(Agent::Codex, Agent::Codex), (vec![openai.clone()], 2));
        assert_eq!(
            kept(Agent::Claude, Agent::Pi),
            (vec![anthropic.clone(), openai], 1)
        );
        assert_eq!(kept(Agent::Claude, Agent::Fen).0, vec![]);
        // pi keeps OpenAI's item as the signature of its thinking block.
        let pi_openai = json!({"type": "thinking", "thinking": "p",
            "thinkingSignature": "{\"type\":\"reasoning\",\"encrypted_content\":\"gA\"}"});
        assert_eq!(signed_by(&pi_openai), Some(Vendor::OpenAi));
        let pi_anthropic =
            json!({"type": "thinking", "thinking": "p", "thinkingSignature": "EqQB"});
        assert_eq!(signed_by(&pi_anthropic), Some(Vendor::Anthropic));
        assert_eq!(
            signed_by(&json!({"type": "reasoning", "encrypted_content": null})),
            None
        );
        // An assistant turn of reasoning alone leaves nothing behind.
        let only = vec![msg(Role::Assistant, vec![unsigned])];
        assert!(convert(&only, Rules::new(Agent::Claude, Agent::Codex)).is_empty());
    }

    #[test]
    fn injected_context_and_system_messages_are_dropped() {
        let mut env = msg(
            Role::User,
            vec![text("<environment_context>x</environment_context>")],
        );
        env.injected = true;
        let m = vec![
            msg(Role::System, vec![text("be nice")]),
            env,
            msg(Role::User, vec![text("real")]),
        ];
        let c = convert(&m, Rules::new(Agent::Codex, Agent::Claude));
        assert_eq!(c.items.len(), 1);
        assert_eq!(c.report.dropped_context, 2);
    }

    #[test]
    fn a_leading_summary_becomes_the_summary() {
        let mut s = msg(Role::User, vec![text("what happened")]);
        s.summary = true;
        let c = convert(
            &[s, msg(Role::User, vec![text("go on")])],
            Rules::new(Agent::Fen, Agent::Pi),
        );
        assert_eq!(c.summary.as_deref(), Some("what happened"));
        assert_eq!(c.items.len(), 1);
    }

    #[test]
    fn text_mode_writes_calls_and_results_as_the_importer_does() {
        let m = vec![
            msg(Role::User, vec![text("list")]),
            msg(
                Role::Assistant,
                vec![text("Listing."), call("toolu_1", "Bash")],
            ),
            msg(
                Role::User,
                vec![Part::ToolResult {
                    call_id: "toolu_1".into(),
                    name: None,
                    content: vec![text("a.txt")],
                    is_error: true,
                }],
            ),
        ];
        let c = convert(&m, Rules::new(Agent::Claude, Agent::Codex));
        assert_eq!(c.items.len(), 3);
        let Item::Assistant { parts, .. } = &c.items[1] else {
            panic!()
        };
        assert_eq!(
            texts_of(parts),
            "Listing.\n\n[external_agent_tool_call: Bash]\ncommand: ls\n[/external_agent_tool_call]"
        );
        let Item::Assistant { parts, .. } = &c.items[2] else {
            panic!()
        };
        assert_eq!(
            texts_of(parts),
            "[external_agent_tool_result: error]\na.txt\n[/external_agent_tool_result]"
        );
        assert_eq!(c.report.calls_as_text, 1);
        assert_eq!(
            Rules::new(Agent::Pi, Agent::Claude).tools,
            ToolMode::Structured
        );
        assert_eq!(
            Rules::new(Agent::Codex, Agent::Claude).tools,
            ToolMode::Text
        );
    }

    #[test]
    fn long_inputs_and_results_are_cut_as_the_importer_cuts_them() {
        let note = call_note("X", &json!({"q": "y".repeat(5000)}));
        assert!(note.starts_with("[external_agent_tool_call: X]\ninput: {\"q\":\"yyy"));
        let input_line = note.lines().nth(1).unwrap();
        assert_eq!(input_line.chars().count(), "input: ".len() + 2000);
        assert!(input_line.ends_with("..."));
        let r = result_note(&[text(&"z".repeat(9000))], false);
        assert_eq!(r.lines().nth(1).unwrap().chars().count(), 4000);
    }
}
