//! `read_session`: a session's conversation, a page of messages at a time, as
//! `conversation.md` (SPEC §9) or as neutral JSON messages.

use super::super::tool::{MAX_ANSWER_BYTES, Tool, ToolError, cut_to};
use super::limit_arg;
use crate::history::History;
use crate::neutral::{Message, SessionFacts};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 200;
/// In the JSON view, a string longer than this is cut (a tool's output, a file).
const JSON_STRING_CHARS: usize = 8_000;

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum View {
    /// Markdown for reading: a heading per message, tool calls and results fenced
    /// (results cut after 40 lines), thinking left out.
    #[default]
    Md,
    /// The neutral messages as JSON: role, parts (text, tool_call, tool_result,
    /// reasoning, image), timestamp, entry, in_conversation.
    Json,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The session: its id (as search_sessions and list_sessions give it), a unique
    /// prefix of one, or its folder name (dir).
    pub id: String,
    /// md (default) or json.
    #[serde(default)]
    pub view: Option<View>,
    /// The first message to give, counting from 0 (the `next_offset` of the page
    /// before).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub offset: Option<i64>,
    /// At most this many messages (default 20, at most 200); a page is also cut at
    /// about 40 KB.
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<i64>,
}

pub struct ReadSession;

impl Tool for ReadSession {
    type Args = Args;
    const NAME: &'static str = "read_session";
    const TITLE: &'static str = "Read a past agent session";
    const DESCRIPTION: &'static str = "Read one past coding-agent session's conversation (the messages its agent would resume with), a page of messages at a time. view md (default): Markdown with the session's title, agent, id, cwd and dates, then a heading per message (role and time), text as written, tool calls and results in fenced blocks (results cut after 40 lines), thinking left out. view json: {session, offset, next_offset, total, messages}, each message with role, parts (text, tool_call, tool_result, reasoning, image), timestamp and entry. Pages: messages offset to offset+limit-1, counted from 0; the page ends with next_offset (md: a last line saying it) to ask for the next page, or says it is the end. Give the id from search_sessions or list_sessions.";

    fn call(history: &History, args: Args) -> Result<String, ToolError> {
        let spec = args.id.trim();
        if spec.is_empty() {
            return Err(ToolError::argument("id", "empty: give a session's id"));
        }
        let view = args.view.unwrap_or_default();
        let offset = match args.offset {
            None => 0,
            Some(n) if n >= 0 => n as usize,
            Some(n) => {
                return Err(ToolError::argument(
                    "offset",
                    format!("{n} is negative: messages count from 0"),
                ));
            }
        };
        let limit = limit_arg(args.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
        let found = history.find(spec)?;
        // Every message is read (one at a time), only the page is kept.
        let mut total = 0usize;
        let mut page = Vec::new();
        let facts = found
            .source
            .each_message(&found.ns, &found.dir, false, &mut |_, m| {
                if total >= offset && total < offset + limit {
                    page.push(m);
                }
                total += 1;
            })?;
        if offset > 0 && offset >= total {
            return Err(ToolError::argument(
                "offset",
                format!(
                    "{offset} is past the last message: session {} has {total} (offsets 0 to {})",
                    facts.id,
                    total.saturating_sub(1)
                ),
            ));
        }
        let whole = history.mount().map(|m| {
            m.join(crate::store::naming::mount_name(&found.ns))
                .join(&found.dir)
                .join("conversation.md")
        });
        Ok(match view {
            View::Md => markdown_page(&facts, &page, offset, total, whole.as_deref()),
            View::Json => json_page(&facts, page, offset, total),
        })
    }
}

/// How many of `rendered` fit in `budget` bytes (at least one, which `cut` shortens).
fn fit(rendered: &[String], budget: usize) -> usize {
    let mut used = 0;
    let mut n = 0;
    for r in rendered {
        if n > 0 && used + r.len() > budget {
            break;
        }
        used += r.len();
        n += 1;
    }
    n
}

fn markdown_page(
    facts: &SessionFacts,
    page: &[Message],
    offset: usize,
    total: usize,
    whole: Option<&std::path::Path>,
) -> String {
    let mut out = crate::views::markdown::head(facts);
    let rendered: Vec<String> = page
        .iter()
        .map(crate::views::markdown::one_message)
        .collect();
    let budget = MAX_ANSWER_BYTES.saturating_sub(out.len() + 400);
    let n = fit(&rendered, budget);
    for r in &rendered[..n] {
        out.push_str(&cut_to(r, budget));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if total == 0 {
        out.push_str("_(no messages)_\n");
        return out;
    }
    let end = offset + n;
    out.push_str(&format!(
        "---\nmessages {offset} to {} of {total} (counted from 0). ",
        end.saturating_sub(1)
    ));
    if end < total {
        out.push_str(&format!(
            "More: read_session with id {:?} and offset {end}.",
            facts.id
        ));
    } else {
        out.push_str("This is the end of the conversation.");
    }
    if let Some(w) = whole {
        out.push_str(&format!(" The whole of it: {}", w.display()));
    }
    out.push('\n');
    out
}

fn json_page(facts: &SessionFacts, page: Vec<Message>, offset: usize, total: usize) -> String {
    let mut messages: Vec<Value> = page
        .into_iter()
        .map(|m| {
            let mut v = serde_json::to_value(&m).expect("a message serializes");
            shorten(&mut v, JSON_STRING_CHARS);
            v
        })
        .collect();
    let session = json!({
        "agent": facts.agent, "id": facts.id, "namespace": facts.namespace, "dir": facts.dir,
        "cwd": facts.cwd, "title": facts.title, "created_at": facts.created_at,
        "updated_at": facts.updated_at, "resumable": facts.resumable,
    });
    let overhead = session.to_string().len() + 200;
    let budget = MAX_ANSWER_BYTES.saturating_sub(overhead);
    let rendered: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
    let n = fit(&rendered, budget);
    messages.truncate(n);
    if n == 1 && rendered[0].len() > budget {
        // One message larger than a page: its strings shorter still.
        shorten(&mut messages[0], 500);
        if messages[0].to_string().len() > budget {
            messages[0] = json!({"cut": format!(
                "message {offset} is {} bytes of JSON, more than one answer holds: read it with view md",
                rendered[0].len()
            )});
        }
    }
    let end = offset + n;
    let next = (end < total).then_some(end);
    let out = json!({
        "session": session,
        "offset": offset,
        "next_offset": next,
        "total": total,
        "messages": messages,
    });
    let mut s = serde_json::to_string(&out).expect("serializes");
    s.push('\n');
    s
}

/// Cuts every string of `v` longer than `max` characters, saying how much was left
/// out; an image's base64 data is left out whole.
fn shorten(v: &mut Value, max: usize) {
    match v {
        Value::Object(map) => {
            let image = map.get("type").and_then(Value::as_str) == Some("image");
            for (k, x) in map.iter_mut() {
                if image && k == "data" {
                    if let Value::String(s) = x {
                        *x = Value::String(format!("[base64 left out: {} characters]", s.len()));
                    }
                } else {
                    shorten(x, max);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| shorten(x, max)),
        Value::String(s) => {
            let chars = s.chars().count();
            if chars > max {
                let kept: String = s.chars().take(max).collect();
                *s = format!("{kept}… [cut: {} more characters]", chars - max);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neutral::{Part, Role};

    #[test]
    fn long_strings_and_image_data_are_cut() {
        let mut m = serde_json::to_value(Message::new(
            Role::User,
            vec![
                Part::Text {
                    text: "x".repeat(20),
                },
                Part::Image {
                    mime: "image/png".into(),
                    data: Some("QUJD".repeat(10)),
                    url: None,
                },
            ],
        ))
        .unwrap();
        shorten(&mut m, 5);
        assert_eq!(m["parts"][0]["text"], "xxxxx… [cut: 15 more characters]");
        assert_eq!(m["parts"][1]["data"], "[base64 left out: 40 characters]");
    }

    #[test]
    fn a_page_holds_what_fits_and_at_least_one() {
        let r = vec!["a".repeat(10), "b".repeat(10), "c".repeat(10)];
        assert_eq!(fit(&r, 25), 2);
        assert_eq!(fit(&r, 5), 1);
        assert_eq!(fit(&r, 100), 3);
    }
}
