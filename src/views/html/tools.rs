//! Tool calls for people: the one line a folded call shows (its key argument) and
//! file edits as diffs, whatever agent made them: Claude Code's `Edit`, `MultiEdit`
//! and `Write`, Gemini CLI's `replace` and `write_file`, OpenCode's `edit`/`write`
//! (camelCase fields), Copilot's and Anthropic's `str_replace_editor` family
//! (`command`: `str_replace`, `create`, `insert`), and Codex's `apply_patch` (a patch
//! text, as the tool's input or inside a shell call).

use super::escape_text_into as escape_into;
use super::highlight::diff_lines;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use std::time::Duration;

/// The argument a folded call shows, in order of preference.
const KEY_FIELDS: &[&str] = &[
    "command",
    "cmd",
    "file_path",
    "filePath",
    "path",
    "notebook_path",
    "target_file",
    "absolute_path",
    "pattern",
    "query",
    "url",
    "prompt",
    "description",
    "skill",
    "subject",
    "name",
    "input",
];

/// Characters of the key argument shown in a folded call's line.
const KEY_CHARS: usize = 120;

/// Edits larger than this are shown as removed and added text, not diffed.
const MAX_DIFF_BYTES: usize = 1 << 20;

/// The one-line key argument of a call, if it has one.
pub fn key_argument(input: &Value) -> Option<String> {
    let text = match input {
        Value::String(s) => s.clone(),
        Value::Object(o) => KEY_FIELDS
            .iter()
            .filter_map(|k| o.get(*k))
            .find_map(argument_text)
            .or_else(|| o.values().find_map(|v| v.as_str().map(str::to_string)))?,
        _ => return None,
    };
    let line = text.lines().find(|l| !l.trim().is_empty())?.trim();
    Some(cut_chars(line, KEY_CHARS))
}

/// A field as text: a string, or an argv (`["bash", "-lc", "ls"]` shows `ls`).
fn argument_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(a) => {
            let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [] => None,
                [sh, flag, script, ..]
                    if matches!(*sh, "bash" | "sh" | "zsh" | "/bin/bash" | "/bin/sh")
                        && flag.starts_with('-')
                        && flag.ends_with('c') =>
                {
                    Some(script.to_string())
                }
                w => Some(w.join(" ")),
            }
        }
        _ => None,
    }
}

/// `s` cut to `n` characters, with `…` when cut.
pub fn cut_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        None => s.to_string(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

fn field<'a>(o: &'a serde_json::Map<String, Value>, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| o.get(*n).and_then(Value::as_str))
}

const PATH: &[&str] = &[
    "file_path",
    "filePath",
    "path",
    "target_file",
    "absolute_path",
    "notebook_path",
];
const OLD: &[&str] = &["old_string", "oldString", "old_str"];
const NEW: &[&str] = &["new_string", "newString", "new_str"];
const CONTENT: &[&str] = &["content", "file_text", "contents", "new_source"];

/// One change to one file, as a call describes it.
enum Edit<'a> {
    /// Text replaced by other text.
    Replace { old: &'a str, new: &'a str },
    /// A whole file written (or text inserted): every line added.
    Write(&'a str),
    /// A patch text (`apply_patch`, a unified diff).
    Patch(&'a str),
}

/// A patch text within a call: the input itself, a field of it, or the argument
/// after `apply_patch` in a shell call's argv.
fn patch_text<'a>(name: &str, input: &'a Value) -> Option<&'a str> {
    let looks = |s: &str| s.trim_start().starts_with("*** Begin Patch");
    match input {
        Value::String(s) if looks(s) || name == "apply_patch" => Some(s),
        Value::Object(o) => {
            if let Some(s) =
                field(o, &["patch", "input"]).filter(|s| looks(s) || name == "apply_patch")
            {
                return Some(s);
            }
            let argv = o.get("command").and_then(Value::as_array)?;
            argv.iter().filter_map(Value::as_str).find(|s| looks(s))
        }
        _ => None,
    }
}

/// The file and edits a call makes, when it edits files.
fn edits<'a>(name: &str, input: &'a Value) -> Option<(Option<&'a str>, Vec<Edit<'a>>)> {
    if let Some(p) = patch_text(name, input) {
        return Some((None, vec![Edit::Patch(p)]));
    }
    let o = input.as_object()?;
    let path = field(o, PATH);
    if let (Some(old), Some(new)) = (field(o, OLD), field(o, NEW)) {
        return Some((path, vec![Edit::Replace { old, new }]));
    }
    if let Some(list) = o.get("edits").and_then(Value::as_array) {
        let all: Vec<Edit> = list
            .iter()
            .filter_map(|e| {
                let e = e.as_object()?;
                Some(Edit::Replace {
                    old: field(e, OLD)?,
                    new: field(e, NEW)?,
                })
            })
            .collect();
        if !all.is_empty() {
            return Some((path, all));
        }
    }
    let lower = name.to_ascii_lowercase();
    let writes = lower.contains("write")
        || lower.contains("create")
        || lower.contains("notebook")
        || matches!(
            o.get("command").and_then(Value::as_str),
            Some("create" | "insert")
        );
    if writes
        && path.is_some()
        && let Some(content) = field(o, CONTENT).or_else(|| field(o, &["new_str"]))
    {
        return Some((path, vec![Edit::Write(content)]));
    }
    None
}

/// The call as a diff (`<div class="edit">…`) when it edits files; `false` when it
/// does not (nothing written).
pub fn write_edit(name: &str, input: &Value, out: &mut String) -> bool {
    let Some((path, list)) = edits(name, input) else {
        return false;
    };
    out.push_str("<div class=\"edit\">");
    if let Some(p) = path {
        out.push_str("<div class=\"edit-path\">");
        escape_into(out, p);
        out.push_str("</div>");
    }
    out.push_str("<pre class=\"diff\">");
    for (i, e) in list.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match e {
            Edit::Patch(p) => diff_lines(p.trim_end_matches('\n'), out),
            Edit::Write(text) => lines_as(out, "d-add", '+', text),
            Edit::Replace { old, new } => replace_diff(old, new, out),
        }
    }
    out.push_str("</pre></div>");
    true
}

fn lines_as(out: &mut String, class: &str, sign: char, text: &str) {
    for (i, line) in text.trim_end_matches('\n').split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("<span class=\"");
        out.push_str(class);
        out.push_str("\">");
        out.push(sign);
        escape_into(out, line);
        out.push_str("</span>");
    }
}

/// Old and new text as a line diff with three lines of context, hunks headed `@@`
/// (where in the file is not known: an edit names text, not lines).
fn replace_diff(old: &str, new: &str, out: &mut String) {
    if old.len() + new.len() > MAX_DIFF_BYTES {
        lines_as(out, "d-del", '-', old);
        out.push('\n');
        lines_as(out, "d-add", '+', new);
        return;
    }
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(200))
        .diff_lines(old, new);
    let mut first = true;
    for group in diff.grouped_ops(3) {
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str("<span class=\"d-hunk\">@@</span>");
        for op in &group {
            for change in diff.iter_changes(op) {
                out.push('\n');
                let line = change.value();
                let line = line.strip_suffix('\n').unwrap_or(line);
                let (class, sign) = match change.tag() {
                    ChangeTag::Delete => ("d-del", '-'),
                    ChangeTag::Insert => ("d-add", '+'),
                    ChangeTag::Equal => ("d-ctx", ' '),
                };
                out.push_str("<span class=\"");
                out.push_str(class);
                out.push_str("\">");
                out.push(sign);
                escape_into(out, line);
                out.push_str("</span>");
            }
        }
    }
    if first {
        out.push_str("<span class=\"d-ctx\">(no change)</span>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(name: &str, input: Value) -> Option<String> {
        let mut out = String::new();
        write_edit(name, &input, &mut out).then_some(out)
    }

    #[test]
    fn key_arguments() {
        assert_eq!(
            key_argument(&json!({"command": "ls -l\nmore", "timeout": 5})).as_deref(),
            Some("ls -l")
        );
        assert_eq!(
            key_argument(&json!({"command": ["bash", "-lc", "cargo test"]})).as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            key_argument(&json!({"file_path": "/a/b.rs", "old_string": "x"})).as_deref(),
            Some("/a/b.rs")
        );
        assert_eq!(
            key_argument(&json!({"zzz": "only"})).as_deref(),
            Some("only")
        );
        assert_eq!(key_argument(&json!({"n": 1})), None);
        assert_eq!(
            key_argument(&json!("*** Begin Patch\n+x")).as_deref(),
            Some("*** Begin Patch")
        );
        let long = "x".repeat(200);
        assert_eq!(
            key_argument(&json!({"query": long}))
                .unwrap()
                .chars()
                .count(),
            KEY_CHARS + 1
        );
    }

    #[test]
    fn claude_edit_is_a_diff() {
        let h = edit(
            "Edit",
            json!({"file_path": "/p/a.rs", "old_string": "a\nb\nc\n", "new_string": "a\nB <x>\nc\n"}),
        )
        .unwrap();
        assert!(h.contains("<div class=\"edit-path\">/p/a.rs</div>"));
        assert!(
            h.contains(
                "<span class=\"d-del\">-b</span>\n<span class=\"d-add\">+B &lt;x&gt;</span>"
            ),
            "{h}"
        );
        assert!(h.contains("<span class=\"d-ctx\"> a</span>"));
    }

    #[test]
    fn every_agents_edits() {
        let multi = edit(
            "MultiEdit",
            json!({"file_path": "f", "edits": [{"old_string": "1", "new_string": "2"}, {"old_string": "3", "new_string": "4"}]}),
        )
        .unwrap();
        assert!(multi.contains("+2") && multi.contains("+4") && multi.contains("-3"));
        let oc = edit(
            "edit",
            json!({"filePath": "f", "oldString": "o", "newString": "n"}),
        )
        .unwrap();
        assert!(oc.contains("-o") && oc.contains("+n"));
        let sr = edit(
            "str_replace_editor",
            json!({"command": "str_replace", "path": "f", "old_str": "o", "new_str": "n"}),
        )
        .unwrap();
        assert!(sr.contains("-o") && sr.contains("+n"));
        let create = edit(
            "str_replace_based_edit_tool",
            json!({"command": "create", "path": "f", "file_text": "l1\nl2\n"}),
        )
        .unwrap();
        assert!(
            create.contains(
                "<span class=\"d-add\">+l1</span>\n<span class=\"d-add\">+l2</span></pre>"
            ),
            "{create}"
        );
        let write = edit("Write", json!({"file_path": "f", "content": "x"})).unwrap();
        assert!(write.contains("+x"));
        let gemini = edit("write_file", json!({"file_path": "f", "content": "y"})).unwrap();
        assert!(gemini.contains("+y"));
        let patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-old\n+new\n*** End Patch";
        let p = edit("apply_patch", json!(patch)).unwrap();
        assert!(p.contains("<span class=\"d-file\">*** Update File: a.py</span>"));
        assert!(p.contains("<span class=\"d-del\">-old</span>\n<span class=\"d-add\">+new</span>"));
        let shell = edit("shell", json!({"command": ["apply_patch", patch]})).unwrap();
        assert!(shell.contains("+new"));
        assert!(edit("Bash", json!({"command": "ls"})).is_none());
        assert!(edit("Read", json!({"file_path": "f"})).is_none());
    }

    #[test]
    fn huge_edits_are_not_diffed() {
        let old = "a\n".repeat(MAX_DIFF_BYTES);
        let h = edit(
            "Edit",
            json!({"file_path": "f", "old_string": old, "new_string": "b"}),
        )
        .unwrap();
        assert!(h.contains("<span class=\"d-add\">+b</span>"));
    }
}
