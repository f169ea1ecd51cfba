//! The fen writer: a new fen session whose first entry is a compaction holding the
//! conversation as its `messages` (§3: they replace the history), so that any
//! session goes on through `ctl`. The messages take Anthropic's Messages API shapes
//! (content blocks, `tool_use`, `tool_result`); a summary is the first user message,
//! as §3's synthetic summary message.
//! Then a `metadata` entry saying where it came from, and its title.

use super::anthropic;
use super::convert::Conversation;
use super::draft::{Context, Obj, value};
use serde_json::Value;

/// The new session's entries as ctl lines, and the `conversation.json` they make.
pub fn entries(conv: &Conversation, ctx: &Context) -> (Vec<String>, Vec<Value>) {
    let mut messages: Vec<String> = Vec::new();
    if let Some(summary) = &conv.summary {
        // The message §3 puts in place of compacted history: the model reads it as a
        // summary, and fen-fs reads it back as one when the session is carried on.
        messages.push(crate::store::index::synthetic_summary_message(summary));
    }
    // fen's own sessions keep no reasoning (no vendor takes it back through ctl).
    messages.extend(
        conv.items
            .iter()
            .filter_map(|i| anthropic::message(i, false)),
    );
    let expected = messages.iter().map(|m| value(m)).collect();
    let summary = conv.summary.clone().unwrap_or_else(|| {
        format!(
            "Continued from {} session {}: {}",
            ctx.source_agent.name(),
            ctx.source_id,
            ctx.title
        )
    });
    let list = format!("[{}]", messages.join(","));
    let compaction = Obj::new()
        .put("type", "compaction")
        .put("summary", &summary)
        .put_raw("messages", &list)
        .text();
    let metadata = Obj::new()
        .put("type", "metadata")
        .put(
            "data",
            serde_json::json!({ "resumed_from": ctx.provenance() }),
        )
        .text();
    let title = Obj::new()
        .put("type", "title")
        .put("title", &ctx.title)
        .text();
    (vec![compaction, metadata, title], expected)
}
