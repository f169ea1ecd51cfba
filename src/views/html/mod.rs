//! The Session rendering (SPEC §15) as HTML, shared by `fen-fs web`'s Session page and
//! `fen-fs export --format html` (§16): a header, then one `<article id="m-INDEX">`
//! per neutral message, written as the messages come (a session of hundreds of MB is
//! never whole in memory).
//!
//! What it shows: Markdown (pulldown-cmark; see `markdown.rs` for why a session's
//! text can never become markup), code blocks with a class per language and a small
//! token pass (`highlight.rs`), each tool call and each tool result folded to one line
//! (`<details>`: tool name, key argument, size), thinking folded, file edits as diffs
//! (`tools.rs`), a compaction as a divider with its summary folded under it, context
//! the agent injected marked and folded, links between a subagent's session and its
//! parent's. Folded parts are `<details>`, so the page reads without script.
//!
//! `Mode::Standalone` (export) is one file: the CSS inline in `<style>`, no script, a
//! Content-Security-Policy `<meta>` that allows no request at all (images only as
//! `data:`), session links as text (no other file is there to open).
//! `Mode::Page`-only parts (the web module serves them): the `<link>` stylesheets and
//! `<script>` files named by `HtmlHeader::page`, the header's actions (downloads,
//! export) and the `href` of links to other sessions. The message articles are the
//! same in both modes.

mod highlight;
pub mod markdown;
pub mod tools;

use crate::neutral::{Message, Part, Role, SessionFacts};
use std::fmt::Write as _;
use std::io::{self, Write};

/// The stylesheet: inline in a standalone file, served as a file by the web page.
pub const CSS: &str = include_str!("session.css");

/// Characters of a tool result's first line shown in its folded line.
const RESULT_PREVIEW_CHARS: usize = 100;
/// Bytes of one tool result shown; the rest is said to be left out (the whole
/// output stays in `conversation.json` and in `--format json`).
pub const RESULT_SHOWN_BYTES: usize = 256 * 1024;

/// Which document is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The web page: CSS and script are separate files (`HtmlHeader::page`).
    Page,
    /// One self-contained file (export): CSS inline, no script, no request.
    Standalone,
}

/// Another session this one links to (its parent, or a subagent's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionLink {
    /// What the link says (a title, or the id).
    pub label: String,
    pub id: String,
    /// Where it leads, in `Mode::Page` only (a standalone file shows the id as text).
    pub href: Option<String>,
}

/// One way to continue the session (§10): an agent and the shell command.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumeLine {
    pub agent: String,
    pub command: String,
}

/// A link or button of the web page's header (download, export).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Action {
    pub label: String,
    pub href: String,
    /// Saved as a file rather than opened.
    pub download: bool,
}

/// What only the web page has (ignored by `Mode::Standalone`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageParts {
    /// Stylesheet URLs (`<link rel="stylesheet">`).
    pub stylesheets: Vec<String>,
    /// Script URLs (`<script src defer>`).
    pub scripts: Vec<String>,
    pub actions: Vec<Action>,
}

/// The session header: everything shown above the messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HtmlHeader {
    pub title: String,
    pub agent: String,
    /// Another machine's name (§12); `None`: this machine.
    pub host: Option<String>,
    pub id: String,
    pub cwd: Option<String>,
    /// The cwd as recorded on its host, when a path map changed it.
    pub cwd_on_host: Option<String>,
    /// RFC 3339.
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    pub kept: bool,
    pub source_deleted: bool,
    pub archived: bool,
    pub parent: Option<SessionLink>,
    pub subagents: Vec<SessionLink>,
    pub resume: Vec<ResumeLine>,
    /// A line under the facts (export: what was redacted).
    pub note: Option<String>,
    pub page: PageParts,
}

impl HtmlHeader {
    /// The header of a session with `facts` (title, else preview; the rest as known).
    pub fn from_facts(f: &SessionFacts) -> HtmlHeader {
        let title = f
            .title
            .as_deref()
            .or(f.preview.as_deref())
            .map(|t| crate::store::index::one_line(t, 200))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "(untitled session)".into());
        HtmlHeader {
            title,
            agent: f.agent.name().to_string(),
            host: f.host.clone(),
            id: f.id.clone(),
            cwd: f.cwd.clone(),
            cwd_on_host: f.cwd_on_host.clone(),
            created_at: f.created_at.clone(),
            updated_at: f.updated_at.clone(),
            kept: f.kept,
            source_deleted: f.source_deleted,
            ..HtmlHeader::default()
        }
    }
}

/// `s` with `& < > " '` as character references, appended to `out`.
pub fn escape_into(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// `s` as element content: `& < >` as character references (quotes need none
/// outside attributes). Runs without them are copied whole (memchr finds the next),
/// which is what a tool output of megabytes needs.
pub fn escape_text_into(out: &mut String, s: &str) {
    let b = s.as_bytes();
    let mut last = 0;
    while let Some(i) = memchr::memchr3(b'&', b'<', b'>', &b[last..]) {
        let at = last + i;
        out.push_str(&s[last..at]);
        out.push_str(match b[at] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            _ => "&gt;",
        });
        last = at + 1;
    }
    out.push_str(&s[last..]);
}

/// `s` escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

/// A count for people: `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cost for people: `$1,234`, `$3.27`, `<$0.01` (a cost that is not nothing is
/// never shown as `$0.00`), or `unknown` (a model without a price: never 0).
pub fn dollars(cost: Option<f64>) -> String {
    match cost {
        Some(c) if c >= 100.0 => format!("${}", thousands(c.round() as u64)),
        Some(c) if c > 0.0 && c < 0.005 => "<$0.01".into(),
        Some(c) => format!("${c:.2}"),
        None => "unknown".into(),
    }
}

/// A size for people: `512 B`, `1.5 KB`, `3.2 MB`.
pub fn human_bytes(n: usize) -> String {
    if n < 1000 {
        format!("{n} B")
    } else if n < 1_000_000 {
        format!("{:.1} KB", n as f64 / 1e3)
    } else {
        format!("{:.1} MB", n as f64 / 1e6)
    }
}

fn time(out: &mut String, rfc3339: &str) {
    out.push_str("<time datetime=\"");
    escape_into(out, rfc3339);
    out.push_str("\">");
    escape_into(out, &super::local_time(rfc3339));
    out.push_str("</time>");
}

fn fact(out: &mut String, name: &str, value_html: &str) {
    let _ = write!(out, "<div><dt>{name}</dt><dd>{value_html}</dd></div>");
}

fn session_link(out: &mut String, l: &SessionLink, mode: Mode) {
    match (l.href.as_deref().filter(|h| page_href(h)), mode) {
        (Some(href), Mode::Page) => {
            out.push_str("<a href=\"");
            escape_into(out, href);
            out.push_str("\">");
            escape_into(out, &l.label);
            out.push_str("</a>");
        }
        _ => {
            escape_into(out, &l.label);
            if l.label != l.id {
                out.push_str(" <code>");
                escape_into(out, &l.id);
                out.push_str("</code>");
            }
        }
    }
}

/// A link of the web page's own: a path or anchor on the same page, or http(s);
/// anything else (a `javascript:` made of a session's id) is shown as text.
fn page_href(href: &str) -> bool {
    (href.starts_with('/') && !href.starts_with("//"))
        || href.starts_with('#')
        || href.starts_with('?')
        || markdown::safe_href(href).is_some_and(|h| !h.to_ascii_lowercase().starts_with("mailto:"))
}

/// The document up to the first message: head, styles, the session's header, and
/// the opening of the messages' `<main>`.
pub fn write_document_start(w: &mut dyn Write, header: &HtmlHeader, mode: Mode) -> io::Result<()> {
    let h = header;
    let mut out = String::with_capacity(CSS.len() + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    if mode == Mode::Standalone {
        // Nothing may be fetched, from any host or file: styles inline, images only
        // as data, no script, no frame, no form target.
        out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'\">\n");
    }
    out.push_str("<meta name=\"generator\" content=\"fen-fs\">\n<title>");
    escape_into(&mut out, &h.title);
    out.push_str("</title>\n");
    match mode {
        Mode::Standalone => {
            out.push_str("<style>\n");
            out.push_str(CSS);
            out.push_str("</style>\n");
        }
        Mode::Page => {
            for s in &h.page.stylesheets {
                out.push_str("<link rel=\"stylesheet\" href=\"");
                escape_into(&mut out, s);
                out.push_str("\">\n");
            }
            for s in &h.page.scripts {
                out.push_str("<script defer src=\"");
                escape_into(&mut out, s);
                out.push_str("\"></script>\n");
            }
        }
    }
    out.push_str("</head>\n<body class=\"session-page\">\n<header class=\"session\">\n<h1>");
    escape_into(&mut out, &h.title);
    out.push_str("</h1>\n<div class=\"badges\">");
    let _ = write!(
        out,
        "<span class=\"badge agent\">{}</span>",
        escape(&h.agent)
    );
    if let Some(host) = &h.host {
        let _ = write!(out, "<span class=\"badge host\">{}</span>", escape(host));
    }
    if h.kept {
        out.push_str("<span class=\"badge kept\">kept</span>");
    }
    if h.source_deleted {
        out.push_str("<span class=\"badge deleted\">deleted by its agent</span>");
    }
    if h.archived {
        out.push_str("<span class=\"badge archived\">archived</span>");
    }
    out.push_str("</div>\n<dl class=\"facts\">");
    fact(&mut out, "id", &format!("<code>{}</code>", escape(&h.id)));
    if let Some(cwd) = &h.cwd {
        let mut v = format!("<code>{}</code>", escape(cwd));
        if let Some(orig) = h.cwd_on_host.as_ref().filter(|o| *o != cwd) {
            let _ = write!(
                v,
                " <span class=\"muted\">(<code>{}</code> there)</span>",
                escape(orig)
            );
        }
        fact(&mut out, "cwd", &v);
    }
    if let Some(t) = &h.created_at {
        let mut v = String::new();
        time(&mut v, t);
        fact(&mut out, "created", &v);
    }
    if let Some(t) = &h.updated_at {
        let mut v = String::new();
        time(&mut v, t);
        fact(&mut out, "updated", &v);
    }
    if let Some(t) = h.tokens {
        fact(&mut out, "tokens", &thousands(t));
    }
    if h.tokens.is_some() || h.cost_usd.is_some() {
        fact(&mut out, "cost", &escape(&dollars(h.cost_usd)));
    }
    if let Some(p) = &h.parent {
        let mut v = String::new();
        session_link(&mut v, p, mode);
        fact(&mut out, "subagent of", &v);
    }
    if !h.subagents.is_empty() {
        let mut v = String::from("<ul class=\"subagents\">");
        for s in &h.subagents {
            v.push_str("<li>");
            session_link(&mut v, s, mode);
            v.push_str("</li>");
        }
        v.push_str("</ul>");
        fact(&mut out, "subagents", &v);
    }
    out.push_str("</dl>\n");
    if !h.resume.is_empty() {
        out.push_str("<details class=\"resume\"><summary>Continue this session</summary><ul>");
        for r in &h.resume {
            let _ = write!(
                out,
                "<li><span class=\"agent\">{}</span> <code class=\"command\">{}</code></li>",
                escape(&r.agent),
                escape(&r.command)
            );
        }
        out.push_str("</ul></details>\n");
    }
    if mode == Mode::Page && !h.page.actions.is_empty() {
        out.push_str("<nav class=\"actions\">");
        for a in h.page.actions.iter().filter(|a| page_href(&a.href)) {
            let _ = write!(
                out,
                "<a class=\"action\" href=\"{}\"{}>{}</a>",
                escape(&a.href),
                if a.download { " download" } else { "" },
                escape(&a.label)
            );
        }
        out.push_str("</nav>\n");
    }
    if let Some(n) = &h.note {
        out.push_str("<p class=\"note\">");
        escape_into(&mut out, n);
        out.push_str("</p>\n");
    }
    out.push_str("</header>\n<main class=\"conversation\" id=\"messages\" data-session=\"");
    escape_into(&mut out, &h.id);
    out.push_str("\">\n");
    w.write_all(out.as_bytes())
}

/// The end of the document (after the last message).
pub fn write_document_end(w: &mut dyn Write, mode: Mode) -> io::Result<()> {
    let _ = mode;
    w.write_all(b"</main>\n<footer class=\"colophon\">fen-fs</footer>\n</body>\n</html>\n")
}

/// One message as `<article id="m-INDEX">`.
pub fn write_message(w: &mut dyn Write, index: usize, m: &Message) -> io::Result<()> {
    write_message_marked(w, index, m, &SubagentRuns::default())
}

/// The tool calls of a session that started subagents (`SessionFacts::subagents`),
/// by call id: below each, the page says that one ran there, as conversation.md
/// does, linking to the subagent's own session (`Mode::Page`, where it has one) or
/// to the entry its messages start from in this session's history (inline ones).
/// A standalone file names the subagent by its id, as text: it holds no other
/// session and asks nothing of a server.
#[derive(Debug, Clone, Default)]
pub struct SubagentRuns {
    calls: std::collections::HashMap<String, SubagentRun>,
    mode: Option<Mode>,
}

#[derive(Debug, Clone)]
struct SubagentRun {
    link: crate::neutral::SubagentLink,
    /// Its session's page (`Mode::Page`, a subagent with a session of its own).
    href: Option<String>,
}

impl SubagentRuns {
    /// The runs of `subagents`; `href` gives where a subagent's link leads on the web
    /// page (its session's page; an inline one's first message in this one), and is
    /// not asked in a standalone file.
    pub fn of(
        subagents: &[crate::neutral::SubagentLink],
        mode: Mode,
        href: &dyn Fn(&crate::neutral::SubagentLink) -> Option<String>,
    ) -> SubagentRuns {
        let mut calls = std::collections::HashMap::new();
        for l in subagents {
            if let Some(call) = &l.call_id {
                calls.entry(call.clone()).or_insert_with(|| SubagentRun {
                    link: l.clone(),
                    href: (mode == Mode::Page).then(|| href(l)).flatten(),
                });
            }
        }
        SubagentRuns {
            calls,
            mode: Some(mode),
        }
    }

    fn mark(&self, out: &mut String, call_id: &str) {
        let Some(run) = self.calls.get(call_id) else {
            return;
        };
        out.push_str("<p class=\"subagent-ran\">↳ ");
        let l = &run.link;
        let href = run
            .href
            .as_deref()
            .filter(|h| self.mode == Some(Mode::Page) && page_href(h));
        match href {
            Some(href) if l.inline => {
                out.push_str("a subagent ran here: its messages are in this session's history, from <a href=\"");
                escape_into(out, href);
                out.push_str("\">entry <code>");
                escape_into(out, &l.id);
                out.push_str("</code></a>, not in its conversation");
            }
            Some(href) => {
                out.push_str("subagent <a href=\"");
                escape_into(out, href);
                out.push_str("\"><code>");
                escape_into(out, &l.id);
                out.push_str("</code></a> ran here");
            }
            None if l.inline => {
                out.push_str("a subagent ran here: its messages are in this session's history, from entry <code>");
                escape_into(out, &l.id);
                out.push_str("</code>, not in its conversation");
            }
            None => {
                out.push_str("subagent <code>");
                escape_into(out, &l.id);
                out.push_str("</code> ran here");
                if l.dir.is_none() {
                    out.push_str(" (its transcript is not here)");
                } else if self.mode == Some(Mode::Standalone) {
                    // An exported file is alone: no link that would lead nowhere.
                    out.push_str(" (a session of its own, not in this file)");
                }
            }
        }
        out.push_str("</p>\n");
    }
}

/// `write_message`, marking below each tool call of `runs` that a subagent ran there.
pub fn write_message_marked(
    w: &mut dyn Write,
    index: usize,
    m: &Message,
    runs: &SubagentRuns,
) -> io::Result<()> {
    let mut out = String::new();
    message_html(&mut out, index, m, runs);
    w.write_all(out.as_bytes())
}

/// A message of tool results only is headed `tool`, as in conversation.md.
fn role_of(m: &Message) -> &str {
    let results_only =
        !m.parts.is_empty() && m.parts.iter().all(|p| matches!(p, Part::ToolResult { .. }));
    if results_only { "tool" } else { m.role.name() }
}

fn class_word(s: &str) -> String {
    let c: String = s
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(24)
        .collect();
    if c.is_empty() {
        "other".into()
    } else {
        c.to_ascii_lowercase()
    }
}

fn message_html(out: &mut String, index: usize, m: &Message, runs: &SubagentRuns) {
    let role = role_of(m);
    let mut classes = format!("msg role-{}", class_word(role));
    if m.summary {
        classes.push_str(" compaction");
    }
    if m.injected {
        classes.push_str(" injected");
    }
    if !m.in_conversation {
        classes.push_str(" out-of-conversation");
    }
    let _ = write!(out, "<article id=\"m-{index}\" class=\"{classes}\"");
    if let Some(e) = &m.entry {
        out.push_str(" data-entry=\"");
        escape_into(out, e);
        out.push('"');
    }
    out.push_str(">\n");
    if m.summary {
        out.push_str("<div class=\"divider\"><span>Conversation compacted");
        if let Some(t) = &m.timestamp {
            out.push_str(" · ");
            time(out, t);
        }
        out.push_str("</span></div>\n<details class=\"summary\"><summary>Summary of the conversation before this point</summary>\n<div class=\"md\">");
        markdown::render(&m.plain_text(), out);
        out.push_str("</div></details>\n</article>\n");
        return;
    }
    out.push_str("<div class=\"msg-head\">");
    let _ = write!(out, "<span class=\"role\">{}</span>", escape(role));
    if m.injected {
        out.push_str(" <span class=\"badge injected\">injected by the agent</span>");
    }
    if !m.in_conversation {
        out.push_str(" <span class=\"badge\">not in the conversation</span>");
    }
    if let Some(model) = &m.model {
        out.push_str(" <span class=\"model\">");
        escape_into(out, &model.model);
        out.push_str("</span>");
    }
    if let Some(t) = &m.timestamp {
        out.push(' ');
        time(out, t);
    }
    let _ = writeln!(out, " <a class=\"anchor\" href=\"#m-{index}\">#</a></div>");
    if m.injected {
        let chars = m.plain_text().chars().count();
        let _ = writeln!(
            out,
            "<details class=\"injected-body\"><summary>Context the agent injected <span class=\"size\">{chars} characters</span></summary>"
        );
        parts(out, m, runs);
        out.push_str("</details>\n");
    } else if m.parts.is_empty() {
        out.push_str("<p class=\"muted\">(empty)</p>\n");
    } else {
        parts(out, m, runs);
    }
    out.push_str("</article>\n");
}

fn parts(out: &mut String, m: &Message, runs: &SubagentRuns) {
    for p in &m.parts {
        part(out, p);
        if let Part::ToolCall { id, .. } = p {
            runs.mark(out, id);
        }
    }
}

fn part(out: &mut String, p: &Part) {
    match p {
        Part::Text { text } => {
            if text.trim().is_empty() {
                return;
            }
            out.push_str("<div class=\"md\">");
            markdown::render(text, out);
            out.push_str("</div>\n");
        }
        Part::Image { .. } => {
            image(out, p);
            out.push('\n');
        }
        Part::ToolCall { name, input, .. } => tool_call(out, name, input),
        Part::ToolResult {
            name,
            content,
            is_error,
            ..
        } => tool_result(out, name.as_deref(), content, *is_error),
        Part::Reasoning { text, .. } => {
            if text.trim().is_empty() {
                out.push_str("<details class=\"thinking\"><summary>Thinking <span class=\"size\">not readable (kept by its vendor in a sealed form)</span></summary></details>\n");
                return;
            }
            let words = text.split_whitespace().count();
            let _ = write!(
                out,
                "<details class=\"thinking\"><summary>Thinking <span class=\"size\">{words} words</span></summary>\n<div class=\"md\">"
            );
            markdown::render(text, out);
            out.push_str("</div></details>\n");
        }
        Part::Other { what, text } => {
            out.push_str("<div class=\"other\"><span class=\"what\">[");
            escape_into(out, what);
            out.push_str("]</span>");
            if !text.trim().is_empty() {
                out.push_str("<pre class=\"plain\">");
                escape_text_into(out, text.trim_end_matches('\n'));
                out.push_str("</pre>");
            }
            out.push_str("</div>\n");
        }
    }
}

/// Image types shown inline from their data (never SVG: it can hold script).
const INLINE_IMAGES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

fn image(out: &mut String, p: &Part) {
    let Part::Image { mime, data, url } = p else {
        return;
    };
    let shown = data.as_deref().filter(|d| {
        INLINE_IMAGES.contains(&mime.as_str())
            && d.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r')
            })
    });
    match (shown, url) {
        (Some(d), _) => {
            let label = super::markdown::image(p);
            out.push_str("<img class=\"image\" alt=\"");
            escape_into(out, &label);
            let _ = write!(out, "\" src=\"data:{mime};base64,");
            for b in d.bytes().filter(|b| !b.is_ascii_whitespace()) {
                out.push(b as char);
            }
            out.push_str("\">");
        }
        (None, Some(u)) => {
            // A linked image is never loaded: the page makes no request.
            out.push_str("<span class=\"image-ref\">[image: ");
            match markdown::safe_href(u) {
                Some(href) => {
                    out.push_str("<a href=\"");
                    escape_into(out, &href);
                    out.push_str("\" rel=\"noopener noreferrer nofollow\">");
                    escape_into(out, u);
                    out.push_str("</a>");
                }
                None => escape_into(out, u),
            }
            out.push_str("]</span>");
        }
        (None, None) => {
            out.push_str("<span class=\"image-ref\">");
            escape_into(out, &super::markdown::image(p));
            out.push_str("</span>");
        }
    }
}

fn tool_call(out: &mut String, name: &str, input: &serde_json::Value) {
    let shown = match input {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    };
    let mut body = String::new();
    let edit = tools::write_edit(name, input, &mut body);
    let _ = write!(
        out,
        "<details class=\"tool call{}\"><summary><span class=\"tool-name\">{}</span>",
        if edit { " edit" } else { "" },
        escape(name)
    );
    if let Some(arg) = tools::key_argument(input) {
        out.push_str(" <span class=\"tool-arg\">");
        escape_into(out, &arg);
        out.push_str("</span>");
    }
    let _ = writeln!(
        out,
        " <span class=\"size\">{}</span></summary>",
        human_bytes(shown.len())
    );
    if edit {
        out.push_str(&body);
        out.push('\n');
    } else {
        out.push_str("<pre class=\"tool-input\">");
        escape_text_into(out, &shown);
        out.push_str("</pre>\n");
    }
    out.push_str("</details>\n");
}

fn tool_result(out: &mut String, name: Option<&str>, content: &[Part], is_error: bool) {
    // One text part (the usual result) is shown from where it is, not copied.
    let joined;
    let text = match content {
        [Part::Text { text }] => text.as_str(),
        _ => {
            let mut all = String::new();
            for c in content {
                if let Part::Image { .. } = c {
                    continue;
                }
                let t = Message::new(Role::Tool, vec![c.clone()]).plain_text();
                if !t.is_empty() {
                    if !all.is_empty() {
                        all.push('\n');
                    }
                    all.push_str(&t);
                }
            }
            joined = all;
            joined.as_str()
        }
    };
    let text = text.trim_end_matches('\n');
    let lines = if text.is_empty() {
        0
    } else {
        text.lines().count()
    };
    let images = content
        .iter()
        .filter(|c| matches!(c, Part::Image { .. }))
        .count();
    let _ = write!(
        out,
        "<details class=\"tool result{}\"><summary><span class=\"tool-name\">{}{}</span>",
        if is_error { " error" } else { "" },
        match name {
            Some(n) => format!("↳ {}", escape(n)),
            None => "↳ result".into(),
        },
        if is_error { " (error)" } else { "" }
    );
    if let Some(first) = text.lines().find(|l| !l.trim().is_empty()) {
        out.push_str(" <span class=\"tool-arg\">");
        escape_into(out, &tools::cut_chars(first.trim(), RESULT_PREVIEW_CHARS));
        out.push_str("</span>");
    }
    let mut size = format!(
        "{} line{} · {}",
        lines,
        if lines == 1 { "" } else { "s" },
        human_bytes(text.len())
    );
    if images > 0 {
        let _ = write!(
            size,
            " · {images} image{}",
            if images == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(out, " <span class=\"size\">{size}</span></summary>");
    if !text.is_empty() {
        out.push_str("<pre class=\"tool-output\">");
        if text.len() > RESULT_SHOWN_BYTES {
            let mut cut = RESULT_SHOWN_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            escape_text_into(out, &text[..cut]);
            let _ = write!(
                out,
                "</pre>\n<p class=\"muted\">({} more left out)</p>\n",
                human_bytes(text.len() - cut)
            );
        } else {
            escape_text_into(out, text);
            out.push_str("</pre>\n");
        }
    }
    for c in content {
        if let Part::Image { .. } = c {
            image(out, c);
            out.push('\n');
        }
    }
    out.push_str("</details>\n");
}

#[cfg(test)]
mod tests;
