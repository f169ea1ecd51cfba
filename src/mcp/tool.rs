//! What one tool of `fen-fs mcp` is: a name, a description an agent can act on, its
//! arguments (a type whose JSON schema is the tool's input schema) and a call that
//! returns text or an error the agent reads. A tool is one file of `tools/` that
//! implements [`Tool`], listed once in `tools::all`.

use crate::history::History;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The most text one answer holds (about 10,000 tokens: Claude Code warns past that
/// and other clients cut longer tool output). A longer answer is cut at a line or a
/// message, with a note saying how to ask for the rest.
pub const MAX_ANSWER_BYTES: usize = 40_000;

/// One tool.
pub trait Tool {
    /// Its arguments; unknown ones are refused (`deny_unknown_fields`), so a
    /// misspelt argument is an error the agent reads, not silently ignored.
    type Args: DeserializeOwned + JsonSchema + 'static;
    const NAME: &'static str;
    const TITLE: &'static str;
    const DESCRIPTION: &'static str;
    fn call(history: &History, args: Self::Args) -> Result<String, ToolError>;
}

/// A failure the agent reads (an MCP tool result with `isError`): a bad argument, an
/// unknown session, a query that does not parse. The server goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(why: impl Into<String>) -> ToolError {
        ToolError(why.into())
    }

    /// A bad value of argument `name`.
    pub fn argument(name: &str, why: impl std::fmt::Display) -> ToolError {
        ToolError(format!("argument {name}: {why}"))
    }
}

impl From<crate::Error> for ToolError {
    fn from(e: crate::Error) -> ToolError {
        ToolError(e.reason)
    }
}

type Call = dyn Fn(&History, serde_json::Map<String, serde_json::Value>) -> Result<String, ToolError>
    + Send
    + Sync;

/// A tool as the server lists and calls it.
#[derive(Clone)]
pub struct Entry {
    pub spec: rmcp::model::Tool,
    call: Arc<Call>,
}

impl Entry {
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Parses `args` against the tool's type and calls it.
    pub fn call(
        &self,
        history: &History,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, ToolError> {
        (self.call)(history, args)
    }
}

/// `T` as the server lists and calls it: its schema from `T::Args`, marked
/// read-only (nothing a tool does changes a file).
pub fn entry<T: Tool + 'static>() -> Entry {
    let schema = rmcp::handler::server::common::schema_for_input::<T::Args>().unwrap_or_else(|e| {
        panic!(
            "the arguments of tool {} have no object schema: {e}",
            T::NAME
        )
    });
    let mut schema = (*schema).clone();
    for v in schema.values_mut() {
        one_line_descriptions(v);
    }
    let mut spec = rmcp::model::Tool::new(T::NAME, T::DESCRIPTION, Arc::new(schema));
    spec.title = Some(T::TITLE.into());
    spec.annotations = Some(
        rmcp::model::ToolAnnotations::with_title(T::TITLE)
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    Entry {
        spec,
        call: Arc::new(|history, args| {
            let args: T::Args = serde_json::from_value(serde_json::Value::Object(args))
                .map_err(|e| ToolError::new(format!("bad arguments for {}: {e}", T::NAME)))?;
            T::call(history, args)
        }),
    }
}

/// Descriptions taken from doc comments keep their line breaks: one line each.
fn one_line_descriptions(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                match x {
                    serde_json::Value::String(s) if k == "description" => {
                        *s = s.split_whitespace().collect::<Vec<_>>().join(" ");
                    }
                    _ => one_line_descriptions(x),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(one_line_descriptions),
        _ => {}
    }
}

/// Lines joined into one answer of at most `MAX_ANSWER_BYTES`, with `notes` after
/// them; when lines had to be left out (the last ones), a note says how many and
/// `cut_hint` how to ask for them.
pub fn lines_answer(lines: &[String], notes: &[String], cut_hint: &str) -> String {
    fit_lines(lines, notes, cut_hint, false)
}

/// `lines_answer` that leaves out the first lines instead (lines in time order, of
/// which the latest matter most).
pub fn last_lines_answer(lines: &[String], notes: &[String], cut_hint: &str) -> String {
    fit_lines(lines, notes, cut_hint, true)
}

fn fit_lines(lines: &[String], notes: &[String], cut_hint: &str, keep_last: bool) -> String {
    let notes_len: usize = notes.iter().map(|n| n.len() + 8).sum::<usize>() + 200;
    let budget = MAX_ANSWER_BYTES.saturating_sub(notes_len);
    // How many lines fit, counted from the end that is kept (a line longer than the
    // budget is cut to it, and comes alone).
    let (mut used, mut shown) = (0, 0);
    let mut order: Box<dyn Iterator<Item = &String>> = if keep_last {
        Box::new(lines.iter().rev())
    } else {
        Box::new(lines.iter())
    };
    for l in &mut order {
        let len = l.len().min(budget) + 1;
        if shown > 0 && used + len > budget {
            break;
        }
        used += len;
        shown += 1;
    }
    let kept = if keep_last {
        &lines[lines.len() - shown..]
    } else {
        &lines[..shown]
    };
    let mut out = String::with_capacity(used + notes_len);
    for l in kept {
        out.push_str(&cut_to(l, budget));
        out.push('\n');
    }
    for n in notes {
        out.push_str("note: ");
        out.push_str(n);
        out.push('\n');
    }
    if shown < lines.len() {
        out.push_str(&format!(
            "note: {} of {} lines shown{}: the answer is cut at {} bytes; {cut_hint}\n",
            shown,
            lines.len(),
            if keep_last { " (the last ones)" } else { "" },
            MAX_ANSWER_BYTES
        ));
    }
    out
}

/// `s` cut to at most `max` bytes (at a character boundary), saying so.
pub fn cut_to(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(60);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [cut: {} more bytes]", &s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_are_cut_at_a_line_with_a_note() {
        let lines: Vec<String> = (0..2000).map(|i| format!("{i:0>40}")).collect();
        let out = lines_answer(&lines, &["said".into()], "ask for fewer");
        assert!(out.len() <= MAX_ANSWER_BYTES, "{}", out.len());
        assert!(out.contains("note: said\n"));
        assert!(out.contains("lines shown: the answer is cut"));
        assert!(out.ends_with("ask for fewer\n"));
        let short = lines_answer(&lines[..2], &[], "x");
        assert_eq!(short.lines().count(), 2);
        // Keeping the last lines: the first ones are left out.
        let last = last_lines_answer(&lines, &[], "ask for fewer");
        assert!(last.len() <= MAX_ANSWER_BYTES, "{}", last.len());
        assert!(last.contains(&lines[1999]) && !last.contains(&lines[0]));
        assert!(last.contains("lines shown (the last ones): the answer is cut"));
        let first_kept = last.lines().next().unwrap();
        let at = lines.iter().position(|l| l == first_kept).unwrap();
        assert_eq!(
            last.lines().count() - 1,
            2000 - at,
            "every line from the first kept on"
        );
        // One line over the budget comes alone, cut.
        let huge = vec!["x".repeat(100_000), "y".into()];
        let one = lines_answer(&huge, &[], "h");
        assert!(one.len() <= MAX_ANSWER_BYTES && one.contains("[cut: "));
        assert!(one.contains("1 of 2 lines shown"));
    }

    #[test]
    fn a_cut_keeps_characters_whole() {
        let s = "é".repeat(100);
        let c = cut_to(&s, 81);
        assert!(c.starts_with("éééééééééé"));
        assert!(c.contains("more bytes]"));
        assert_eq!(cut_to("short", 10), "short");
    }
}
