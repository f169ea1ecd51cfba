//! `conversation.md` (SPEC §9): a session's conversation as Markdown for a person,
//! rendered from its neutral messages (`SessionSource::messages`), whatever agent
//! wrote it.
//!
//! Rules, each a test below: a title line (title, else preview) and the session's
//! agent, id, cwd and dates in local time; a compaction's summary as a quoted block
//! at the top; per message a heading with its role and local time (a message made of
//! tool results only is headed `tool`, whatever role its agent gave it); text as
//! written; a tool call as a fenced block naming the tool, with its input as pretty
//! JSON (a string input as it is); a tool result as a fenced block cut after 40 lines
//! (and each line after 1,000 characters), with what was left out said below it;
//! thinking or reasoning as one line saying it is left out; an image as
//! `[image: TYPE, N bytes]`; context the agent injected left out with a one-line note.
//! A subagent's session names its parent in the head, a session that started
//! subagents lists them there, and below each tool call that started one a line says
//! so, linking to the subagent's `conversation.md` when it is shown.
//! A fence is longer than any run of backticks in what it holds, so content with
//! ```` ``` ```` never ends it.

use crate::neutral::{Message, Part, Role, SessionFacts, SessionMessages, SubagentLink};
use crate::store::index::FileStamp;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Lines of a tool result shown before the rest is left out.
pub const RESULT_LINES: usize = 40;
/// Characters of one tool-result line shown before the rest of it is left out.
pub const RESULT_LINE_CHARS: usize = 1000;

/// The whole document.
pub fn render(sm: &SessionMessages) -> String {
    render_owned(sm.clone())
}

/// The same, letting go of each message once it is written (a large session's
/// messages and its document are not both whole in memory).
pub fn render_owned(sm: SessionMessages) -> String {
    let mut w = MarkdownWriter::new(None).with_subagents(&sm.facts.subagents);
    for m in sm.messages {
        w.push(&m);
    }
    let (prefix, body) = w.parts(&sm.facts);
    match body {
        Body::Memory(b) => prefix + &String::from_utf8(b).expect("rendered as text"),
        Body::File(..) => unreachable!("a writer without a spill folder stays in memory"),
    }
}

/// Renders `conversation.md` one message at a time, as a source yields them: the
/// compaction summaries (quoted at the top) are kept aside, every other message is
/// written to the body at once. A body past `SPILL_BYTES` moves to an unnamed file
/// of fen's cache folder (when there is one), so a session of hundreds of MB is never
/// in memory whole, neither its messages nor its document.
pub struct MarkdownWriter {
    spill_root: Option<PathBuf>,
    summaries: String,
    body: Body,
    messages: bool,
    scratch: String,
    failed: Option<std::io::Error>,
    /// The subagents started by a tool call, by the call's id.
    calls: HashMap<String, SubagentLink>,
}

/// Where the body goes.
enum Body {
    Memory(Vec<u8>),
    File(std::io::BufWriter<std::fs::File>, u64),
}

impl MarkdownWriter {
    pub fn new(spill_root: Option<&Path>) -> Self {
        MarkdownWriter {
            spill_root: spill_root.map(Path::to_path_buf),
            summaries: String::new(),
            body: Body::Memory(Vec::new()),
            messages: false,
            scratch: String::new(),
            failed: None,
            calls: HashMap::new(),
        }
    }

    /// Marks each tool call that started one of `subagents` where it is written.
    pub fn with_subagents(mut self, subagents: &[SubagentLink]) -> Self {
        self.calls = SubagentCalls::of(subagents).0;
        self
    }

    /// The next message, in conversation order.
    pub fn push(&mut self, m: &Message) {
        if m.summary {
            summary(&mut self.summaries, m);
            return;
        }
        self.messages = true;
        self.scratch.clear();
        message(&mut self.scratch, m, &self.calls);
        self.write_body();
    }

    fn write_body(&mut self) {
        use std::io::Write as _;
        if self.failed.is_some() {
            return;
        }
        let bytes = self.scratch.as_bytes();
        match &mut self.body {
            Body::Memory(b) => {
                b.extend_from_slice(bytes);
                if b.len() >= SPILL_BYTES
                    && let Some(root) = &self.spill_root
                    && let Some(f) = unnamed_file(root)
                {
                    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
                    match w.write_all(b) {
                        Ok(()) => self.body = Body::File(w, b.len() as u64),
                        Err(e) => self.failed = Some(e),
                    }
                }
            }
            Body::File(w, n) => match w.write_all(bytes) {
                Ok(()) => *n += bytes.len() as u64,
                Err(e) => self.failed = Some(e),
            },
        }
    }

    /// The document's head (title line, facts, summaries) and its body.
    fn parts(mut self, facts: &SessionFacts) -> (String, Body) {
        let prefix = document_head(facts, &std::mem::take(&mut self.summaries), self.messages);
        (prefix, self.body)
    }

    /// The whole document, with `facts` in its head.
    pub fn finish(mut self, facts: &SessionFacts) -> crate::error::Result<Rendered> {
        if let Some(e) = self.failed.take() {
            return Err(crate::error::Error::io("conversation.md", &e));
        }
        Ok(match self.parts(facts) {
            (prefix, Body::Memory(b)) => {
                let mut bytes = prefix.into_bytes();
                bytes.extend_from_slice(&b);
                Rendered::Memory(Arc::new(bytes))
            }
            (prefix, Body::File(w, n)) => {
                let f = w
                    .into_inner()
                    .map_err(|e| crate::error::Error::io("conversation.md", e.error()))?;
                let r = read_back(&f, n).ok_or_else(|| {
                    crate::error::Error::io(
                        "conversation.md",
                        &std::io::Error::other("the spilled rendering does not read back"),
                    )
                })?;
                Rendered::File {
                    prefix: Arc::from(prefix),
                    file: Arc::new(r),
                    len: n,
                }
            }
        })
    }
}

/// The head of the document: title line, agent, id, cwd and dates (a page of the
/// messages, as `fen-fs mcp` reads them, starts with it).
pub fn head(facts: &SessionFacts) -> String {
    let mut out = String::new();
    header(&mut out, facts);
    out
}

/// What comes before the messages: the head, the compaction summaries (each as
/// `one_message` renders it), and a line saying there are none when `messages` is
/// false. `fen-fs export --format md` puts the body after it, as this writer does.
pub fn document_head(facts: &SessionFacts, summaries: &str, messages: bool) -> String {
    let mut prefix = String::new();
    header(&mut prefix, facts);
    prefix.push_str(summaries);
    if !messages {
        prefix.push_str("_(no messages)_\n");
    }
    prefix
}

/// One message as the document shows it (a compaction's summary as its quoted block).
pub fn one_message(m: &Message) -> String {
    one_message_marked(m, &SubagentCalls::default())
}

/// The tool calls of a session that started its subagents, by call id: where the
/// document marks that one ran (`SessionFacts::subagents`).
#[derive(Debug, Clone, Default)]
pub struct SubagentCalls(HashMap<String, SubagentLink>);

impl SubagentCalls {
    pub fn of(subagents: &[SubagentLink]) -> Self {
        let mut calls = HashMap::new();
        for l in subagents {
            if let Some(call) = &l.call_id {
                calls.entry(call.clone()).or_insert_with(|| l.clone());
            }
        }
        SubagentCalls(calls)
    }
}

/// `one_message`, marking below each tool call that started one of `calls`' subagents
/// that it ran there, as the whole document does.
pub fn one_message_marked(m: &Message, calls: &SubagentCalls) -> String {
    let mut out = String::new();
    if m.summary {
        summary(&mut out, m);
    } else {
        message(&mut out, m, &calls.0);
    }
    out
}

fn header(out: &mut String, f: &SessionFacts) {
    let title = f
        .title
        .as_deref()
        .or(f.preview.as_deref())
        .map(|t| crate::store::index::one_line(t, 200))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "(untitled session)".into());
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "- agent: {}", f.agent.name());
    let _ = writeln!(out, "- id: {}", f.id);
    let _ = writeln!(out, "- cwd: {}", f.cwd.as_deref().unwrap_or("(unknown)"));
    if !f.resumable
        && let Some(why) = &f.not_resumable_reason
    {
        let _ = writeln!(out, "- not resumable: {why}");
    }
    if let Some(t) = &f.created_at {
        let _ = writeln!(out, "- created: {}", super::local_time(t));
    }
    if let Some(t) = &f.updated_at {
        let _ = writeln!(out, "- updated: {}", super::local_time(t));
    }
    if let Some(parent) = &f.parent_id {
        let agent = f
            .agent_id
            .as_deref()
            .map(|a| format!(" (as subagent `{}`)", inline(a)))
            .unwrap_or_default();
        match &f.parent {
            Some(dir) => {
                let _ = writeln!(
                    out,
                    "- subagent of: [{}](../{dir}/conversation.md){agent}",
                    link_text(dir)
                );
            }
            None => {
                let _ = writeln!(out, "- subagent of: {parent}{agent}");
            }
        }
    }
    for l in f.subagents.iter().filter(|l| !l.inline) {
        let _ = writeln!(
            out,
            "- subagent `{}`: {}",
            inline(&l.id),
            subagent_target(l)
        );
    }
    out.push('\n');
}

/// Where a subagent's session is: a link to its `conversation.md`, or that it is not
/// shown.
fn subagent_target(l: &SubagentLink) -> String {
    match &l.dir {
        Some(dir) => format!("[{}](../{dir}/conversation.md)", link_text(dir)),
        None => "(its transcript is not shown)".into(),
    }
}

/// A folder name as a link's text (brackets would end it).
fn link_text(dir: &str) -> String {
    dir.replace(['[', ']'], "")
}

fn summary(out: &mut String, m: &Message) {
    let when = m
        .timestamp
        .as_deref()
        .map(|t| format!(" ({})", super::local_time(t)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "> **Summary of the conversation before this point**{when}\n>"
    );
    let text = m.plain_text();
    for line in text.lines() {
        if line.is_empty() {
            out.push_str(">\n");
        } else {
            let _ = writeln!(out, "> {line}");
        }
    }
    out.push('\n');
}

fn role_heading(m: &Message) -> &str {
    let results_only =
        !m.parts.is_empty() && m.parts.iter().all(|p| matches!(p, Part::ToolResult { .. }));
    if results_only { "tool" } else { m.role.name() }
}

fn message(out: &mut String, m: &Message, calls: &HashMap<String, SubagentLink>) {
    if m.injected {
        let chars = m.plain_text().chars().count();
        let role = match m.role {
            Role::System => "system",
            _ => m.role.name(),
        };
        let _ = writeln!(
            out,
            "_(left out: a {role} message the agent injected, {chars} characters)_\n"
        );
        return;
    }
    match m.timestamp.as_deref() {
        Some(t) => {
            let _ = writeln!(out, "## {} · {}\n", role_heading(m), super::local_time(t));
        }
        None => {
            let _ = writeln!(out, "## {}\n", role_heading(m));
        }
    }
    if m.parts.is_empty() {
        out.push_str("_(empty)_\n\n");
        return;
    }
    let mut last_reasoning = false;
    for p in &m.parts {
        if matches!(p, Part::Reasoning { .. }) {
            if !last_reasoning {
                out.push_str("_(thinking left out)_\n\n");
            }
            last_reasoning = true;
            continue;
        }
        last_reasoning = false;
        part(out, p);
        if let Part::ToolCall { id, .. } = p
            && let Some(l) = calls.get(id)
        {
            if l.inline {
                let _ = writeln!(
                    out,
                    "↳ a subagent ran here: its messages are in this session's history (transcript.jsonl, from entry `{}`), not in its conversation\n",
                    inline(&l.id)
                );
            } else {
                let _ = writeln!(
                    out,
                    "↳ subagent `{}` ran here: {}\n",
                    inline(&l.id),
                    subagent_target(l)
                );
            }
        }
    }
}

fn part(out: &mut String, p: &Part) {
    match p {
        Part::Text { text } => {
            if text.trim().is_empty() {
                return;
            }
            out.push_str(text.trim_end_matches('\n'));
            out.push_str("\n\n");
        }
        Part::Image { .. } => {
            let _ = writeln!(out, "{}\n", image(p));
        }
        Part::ToolCall { name, input, .. } => {
            let _ = writeln!(out, "Tool call `{}`:\n", inline(name));
            match input {
                serde_json::Value::String(s) => fenced(out, "", s),
                serde_json::Value::Null => fenced(out, "", ""),
                v => fenced(
                    out,
                    "json",
                    &serde_json::to_string_pretty(v).unwrap_or_default(),
                ),
            }
        }
        Part::ToolResult {
            name,
            content,
            is_error,
            ..
        } => {
            let what = match name {
                Some(n) => format!("Result of `{}`", inline(n)),
                None => "Tool result".to_string(),
            };
            let error = if *is_error { " (error)" } else { "" };
            let _ = writeln!(out, "{what}{error}:\n");
            tool_result(out, content);
        }
        Part::Reasoning { .. } => out.push_str("_(thinking left out)_\n\n"),
        Part::Other { what, text } => {
            let text = text.trim_end_matches('\n');
            if text.is_empty() {
                let _ = writeln!(out, "[{what}]\n");
            } else if !text.contains('\n') {
                let _ = writeln!(out, "[{what}: {text}]\n");
            } else {
                let _ = writeln!(out, "[{what}]:\n");
                fenced(out, "", text);
            }
        }
    }
}

/// A tool's name in an inline code span (backticks would end it).
fn inline(name: &str) -> String {
    name.replace('`', "'")
}

/// `[image: TYPE, N bytes]` (N decoded from base64), or `[image: URL]`.
pub fn image(p: &Part) -> String {
    let Part::Image { mime, data, url } = p else {
        return String::new();
    };
    let ty = if mime.is_empty() { "image" } else { mime };
    match (data, url) {
        (Some(d), _) => format!("[image: {ty}, {} bytes]", base64_len(d)),
        (None, Some(u)) => format!("[image: {ty}, {u}]"),
        (None, None) => format!("[image: {ty}]"),
    }
}

/// Bytes that `data` (base64) decodes to.
fn base64_len(data: &str) -> usize {
    let d = data.trim_end();
    let pad = d.bytes().rev().take_while(|&b| b == b'=').count();
    let chars = d.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    (chars * 3 / 4).saturating_sub(pad)
}

fn tool_result(out: &mut String, content: &[Part]) {
    let mut text = String::new();
    let mut images = Vec::new();
    for c in content {
        match c {
            Part::Image { .. } => images.push(image(c)),
            other => {
                let t = Message::new(Role::Tool, vec![other.clone()]).plain_text();
                if !t.is_empty() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t);
                }
            }
        }
    }
    if !text.is_empty() || images.is_empty() {
        let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
        let shown: Vec<String> = lines
            .iter()
            .take(RESULT_LINES)
            .map(|l| cut_line(l))
            .collect();
        fenced(out, "", &shown.join("\n"));
        if lines.len() > RESULT_LINES {
            let n = lines.len() - RESULT_LINES;
            let s = if n == 1 { "" } else { "s" };
            let _ = writeln!(out, "_({n} more line{s} left out)_\n");
        }
    }
    for i in images {
        let _ = writeln!(out, "{i}\n");
    }
}

fn cut_line(line: &str) -> String {
    match line.char_indices().nth(RESULT_LINE_CHARS) {
        None => line.to_string(),
        Some((at, _)) => {
            let rest = line[at..].chars().count();
            format!("{}… ({rest} more characters)", &line[..at])
        }
    }
}

/// A fenced block whose fence is longer than every backtick run in `body`.
fn fenced(out: &mut String, info: &str, body: &str) {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    let body = body.trim_end_matches('\n');
    if body.is_empty() {
        let _ = write!(out, "{fence}{info}\n{fence}\n\n");
    } else {
        let _ = write!(out, "{fence}{info}\n{body}\n{fence}\n\n");
    }
}

// ---------------------------------------------------------------------------
// One rendering per state of a session file
// ---------------------------------------------------------------------------

/// Renderings kept (at most this many, and at most `CACHE_BYTES` in memory in all;
/// the newest is always kept).
const CACHE_ENTRIES: usize = 32;
const CACHE_BYTES: usize = 64 << 20;
/// A rendering this large goes to an unnamed file in fen's cache folder rather than
/// memory (when there is one): the daemon does not hold a huge session's document.
pub const SPILL_BYTES: usize = 8 << 20;

/// One rendering: in memory, or in an unnamed file (never changed once written).
#[derive(Clone)]
pub enum Rendered {
    Memory(Arc<Vec<u8>>),
    /// The head in memory, the body (`len` bytes) in the file.
    File {
        prefix: Arc<str>,
        file: Arc<std::fs::File>,
        len: u64,
    },
}

impl Rendered {
    pub fn len(&self) -> u64 {
        match self {
            Rendered::Memory(b) => b.len() as u64,
            Rendered::File { prefix, len, .. } => prefix.len() as u64 + len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of it for one open handle.
    pub fn snapshot(&self) -> crate::error::Result<super::Snapshot> {
        Ok(match self {
            Rendered::Memory(b) => super::Snapshot::Bytes(b.clone()),
            Rendered::File { prefix, file, len } => {
                let file = file
                    .try_clone()
                    .map_err(|e| crate::error::Error::io("conversation.md", &e))?;
                let layout = super::pieces::PieceLayout::new(vec![
                    super::pieces::Piece::Text(prefix.to_string()),
                    super::pieces::Piece::Range {
                        start: 0,
                        len: *len,
                    },
                ]);
                super::Snapshot::Pieces(super::pieces::PieceSnapshot::new(file, Arc::new(layout)))
            }
        })
    }

    /// Its bytes (tests, one-shot tools).
    pub fn bytes(&self) -> crate::error::Result<Vec<u8>> {
        let s = self.snapshot()?;
        s.read_at(0, s.size() as usize)
    }
}

/// `conversation.md` of recently read sessions, each for one state of its file
/// (stamp) and facts: `stat` and every `open` of an unchanged session share one
/// rendering, so a request costs a look-up, not a pass over the session.
#[derive(Default)]
pub struct MarkdownCache {
    inner: Mutex<CacheInner>,
    /// fen's store, whose cache folder takes large renderings.
    spill_root: Option<PathBuf>,
}

#[derive(Default)]
struct CacheInner {
    tick: u64,
    bytes: usize,
    map: HashMap<PathBuf, Cached>,
}

struct Cached {
    stamp: FileStamp,
    facts: SessionFacts,
    text: Rendered,
    used: u64,
}

impl Cached {
    /// Bytes it holds in memory.
    fn memory(&self) -> usize {
        match &self.text {
            Rendered::Memory(b) => b.len(),
            Rendered::File { prefix, .. } => prefix.len(),
        }
    }
}

/// An unnamed file in `root`'s cache folder (gone when its last descriptor closes);
/// `None` when that cannot be made.
fn unnamed_file(root: &Path) -> Option<std::fs::File> {
    let dir = crate::store::open::Dir::open_root(root)
        .and_then(|r| r.create_dir(crate::store::layout::CACHE_DIR))
        .ok()?;
    dir.tmpfile().ok()
}

/// A read-only descriptor of what was written to `w`, if it holds `len` bytes.
fn read_back(w: &std::fs::File, len: u64) -> Option<std::fs::File> {
    use std::os::fd::AsRawFd;
    let r = std::fs::File::open(format!("/proc/self/fd/{}", w.as_raw_fd())).ok()?;
    (r.metadata().ok()?.len() == len).then_some(r)
}

impl MarkdownCache {
    /// A cache that puts large renderings in fen's cache folder under `fen_root`.
    pub fn spilling_to(fen_root: Option<&Path>) -> Self {
        MarkdownCache {
            spill_root: fen_root.map(Path::to_path_buf),
            ..Default::default()
        }
    }

    /// The rendering of `path` as of `stamp` and `facts`, made by `make` (which gives
    /// the session's messages in order, one at a time, to the function it is passed)
    /// when there is none.
    pub fn get_or_render(
        &self,
        path: &Path,
        stamp: FileStamp,
        facts: &SessionFacts,
        make: impl FnOnce(&mut dyn FnMut(Message)) -> crate::error::Result<()>,
    ) -> crate::error::Result<Rendered> {
        {
            let mut c = self.inner.lock().unwrap();
            c.tick += 1;
            let tick = c.tick;
            if let Some(e) = c.map.get_mut(path)
                && e.stamp == stamp
                && e.facts == *facts
            {
                e.used = tick;
                return Ok(e.text.clone());
            }
        }
        let mut w =
            MarkdownWriter::new(self.spill_root.as_deref()).with_subagents(&facts.subagents);
        make(&mut |m| w.push(&m))?;
        // The facts the key was checked against: they describe the state `stamp`.
        let text = w.finish(facts)?;
        let mut c = self.inner.lock().unwrap();
        c.tick += 1;
        let used = c.tick;
        let entry = Cached {
            stamp,
            facts: facts.clone(),
            text: text.clone(),
            used,
        };
        c.bytes += entry.memory();
        if let Some(old) = c.map.insert(path.to_path_buf(), entry) {
            c.bytes -= old.memory();
        }
        while c.map.len() > 1 && (c.map.len() > CACHE_ENTRIES || c.bytes > CACHE_BYTES) {
            let Some(oldest) = c
                .map
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(p, _)| p.clone())
            else {
                break;
            };
            if let Some(e) = c.map.remove(&oldest) {
                c.bytes -= e.memory();
            }
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Agent;
    use crate::neutral::Vendor;
    use serde_json::json;

    fn facts() -> SessionFacts {
        SessionFacts {
            agent: Agent::Claude,
            id: "abc".into(),
            namespace: "--p--".into(),
            dir: "d".into(),
            cwd: Some("/p".into()),
            title: Some("Fix the flag".into()),
            preview: Some("first request".into()),
            created_at: Some("2026-01-02T03:04:05Z".into()),
            updated_at: Some("2026-01-02T04:05:06Z".into()),
            ..SessionFacts::default()
        }
    }

    fn doc(messages: Vec<Message>) -> String {
        render(&SessionMessages {
            facts: facts(),
            messages,
        })
    }

    fn msg(role: Role, parts: Vec<Part>) -> Message {
        Message::new(role, parts)
    }

    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }

    #[test]
    fn title_line_and_facts() {
        let d = doc(vec![]);
        let lt = |t: &str| crate::views::local_time(t);
        assert!(d.starts_with("# Fix the flag\n\n- agent: claude\n- id: abc\n- cwd: /p\n"));
        assert!(d.contains(&format!("- created: {}\n", lt("2026-01-02T03:04:05Z"))));
        assert!(d.contains(&format!("- updated: {}\n", lt("2026-01-02T04:05:06Z"))));
        assert!(d.contains("_(no messages)_"));
        let mut f = facts();
        f.title = None;
        let d = render(&SessionMessages {
            facts: f.clone(),
            messages: vec![],
        });
        assert!(d.starts_with("# first request\n"));
        f.preview = Some("a\nmultiline   preview".into());
        let d = render(&SessionMessages {
            facts: f,
            messages: vec![],
        });
        assert!(d.starts_with("# a multiline preview\n"));
        assert!(!d.contains("resumable"));
        let mut f = facts();
        f.resumable = false;
        f.not_resumable_reason = Some("the file is not valid UTF-8".into());
        let d = render(&SessionMessages {
            facts: f,
            messages: vec![],
        });
        assert!(d.contains("- cwd: /p\n- not resumable: the file is not valid UTF-8\n"));
    }

    #[test]
    fn headings_have_role_and_local_time_and_text_is_as_written() {
        let mut u = msg(
            Role::User,
            vec![text("Add a `--verbose` flag\n\n* keep *it* short\n")],
        );
        u.timestamp = Some("2026-01-02T03:04:05Z".into());
        let a = msg(Role::Assistant, vec![text("Done.")]);
        let d = doc(vec![u, a]);
        let t = crate::views::local_time("2026-01-02T03:04:05Z");
        assert!(d.contains(&format!(
            "## user · {t}\n\nAdd a `--verbose` flag\n\n* keep *it* short\n\n## assistant\n\nDone.\n"
        )));
    }

    #[test]
    fn tool_calls_are_fenced_and_name_the_tool() {
        let call = Part::ToolCall {
            id: "t".into(),
            name: "Bash".into(),
            input: json!({"command": "ls -l", "timeout": 5}),
        };
        let patch = Part::ToolCall {
            id: "c".into(),
            name: "apply_patch".into(),
            input: json!("*** Begin Patch\n+x\n*** End Patch"),
        };
        let d = doc(vec![msg(Role::Assistant, vec![call, patch])]);
        assert!(d.contains(
            "Tool call `Bash`:\n\n```json\n{\n  \"command\": \"ls -l\",\n  \"timeout\": 5\n}\n```\n"
        ));
        assert!(d.contains(
            "Tool call `apply_patch`:\n\n```\n*** Begin Patch\n+x\n*** End Patch\n```\n"
        ));
    }

    #[test]
    fn tool_results_are_cut_after_40_lines() {
        let long: Vec<String> = (1..=45).map(|i| format!("line {i}")).collect();
        let r = |content: &str, err| Part::ToolResult {
            call_id: "t".into(),
            name: Some("Bash".into()),
            content: vec![text(content)],
            is_error: err,
        };
        let d = doc(vec![msg(
            Role::User,
            vec![r(&long.join("\n"), false), r("boom", true)],
        )]);
        assert!(
            d.contains("## tool\n"),
            "a message of results only is headed tool"
        );
        assert!(d.contains("Result of `Bash`:\n\n```\nline 1\n"));
        assert!(d.contains("line 40\n```\n\n_(5 more lines left out)_\n"));
        assert!(!d.contains("line 41"));
        assert!(d.contains("Result of `Bash` (error):\n\n```\nboom\n```\n"));
        let exactly: Vec<String> = (1..=40).map(|i| format!("l{i}")).collect();
        let d = doc(vec![msg(Role::Tool, vec![r(&exactly.join("\n"), false)])]);
        assert!(d.contains("l40\n```\n\n") && !d.contains("left out"));
        let wide = "x".repeat(1500);
        let d = doc(vec![msg(Role::Tool, vec![r(&wide, false)])]);
        assert!(d.contains(&format!("{}… (500 more characters)\n", "x".repeat(1000))));
        let anon = Part::ToolResult {
            call_id: "t".into(),
            name: None,
            content: vec![],
            is_error: false,
        };
        assert!(doc(vec![msg(Role::Tool, vec![anon])]).contains("Tool result:\n\n```\n```\n"));
    }

    #[test]
    fn thinking_is_one_line_left_out() {
        let r = |t: &str| Part::Reasoning {
            vendor: Vendor::Anthropic,
            text: t.into(),
            opaque: Some(json!({"signature": "s"})),
        };
        let d = doc(vec![msg(
            Role::Assistant,
            vec![r("secret plan"), r("more"), text("ok")],
        )]);
        assert_eq!(d.matches("_(thinking left out)_").count(), 1);
        assert!(!d.contains("secret plan") && !d.contains("\"s\""));
        assert!(d.contains("_(thinking left out)_\n\nok\n"));
    }

    #[test]
    fn images_are_placeholders() {
        let img = Part::Image {
            mime: "image/png".into(),
            data: Some("iVBORw0KGgo=".into()),
            url: None,
        };
        let linked = Part::Image {
            mime: String::new(),
            data: None,
            url: Some("https://x/y.png".into()),
        };
        let in_result = Part::ToolResult {
            call_id: "t".into(),
            name: Some("Read".into()),
            content: vec![text("see"), img.clone()],
            is_error: false,
        };
        let d = doc(vec![msg(Role::User, vec![img, linked, in_result])]);
        assert!(d.contains("[image: image/png, 8 bytes]\n"));
        assert!(d.contains("[image: image, https://x/y.png]\n"));
        assert!(d.contains("```\nsee\n```\n\n[image: image/png, 8 bytes]\n"));
        assert!(!d.contains("iVBOR"));
    }

    #[test]
    fn the_summary_is_quoted_at_the_top() {
        let first = msg(Role::User, vec![text("before")]);
        let mut s = msg(Role::User, vec![text("We fixed X.\n\nThen Y.")]);
        s.summary = true;
        let d = doc(vec![first, s]);
        let quote = "> **Summary of the conversation before this point**\n>\n> We fixed X.\n>\n> Then Y.\n\n";
        let at = d.find(quote).expect("quoted summary");
        assert!(at < d.find("## user").unwrap());
    }

    #[test]
    fn injected_context_is_a_one_line_note() {
        let mut ctx = msg(
            Role::User,
            vec![text("<environment_context>cwd</environment_context>")],
        );
        ctx.injected = true;
        let mut dev = msg(Role::System, vec![text("perm")]);
        dev.injected = true;
        let d = doc(vec![ctx, dev, msg(Role::User, vec![text("hi")])]);
        assert!(d.contains("_(left out: a user message the agent injected, 46 characters)_\n"));
        assert!(d.contains("_(left out: a system message the agent injected, 4 characters)_\n"));
        assert!(!d.contains("environment_context"));
    }

    #[test]
    fn fences_outgrow_backticks_in_content() {
        let body = "```rust\nfn main() {}\n```\nand ```` four";
        let r = Part::ToolResult {
            call_id: "t".into(),
            name: Some("Read".into()),
            content: vec![text(body)],
            is_error: false,
        };
        let call = Part::ToolCall {
            id: "c".into(),
            name: "Write".into(),
            input: json!("````\n`````"),
        };
        let d = doc(vec![
            msg(Role::Tool, vec![r]),
            msg(Role::Assistant, vec![call]),
        ]);
        assert!(d.contains(&format!("`````\n{body}\n`````\n")));
        assert!(d.contains("``````\n````\n`````\n``````\n"));
    }

    #[test]
    fn other_parts_say_what_they_were() {
        let d = doc(vec![msg(
            Role::Assistant,
            vec![
                Part::Other {
                    what: "web_search".into(),
                    text: "rust fuse".into(),
                },
                Part::Other {
                    what: "compaction".into(),
                    text: String::new(),
                },
                Part::Other {
                    what: "document".into(),
                    text: "a\nb".into(),
                },
            ],
        )]);
        assert!(d.contains("[web_search: rust fuse]\n"));
        assert!(d.contains("[compaction]\n"));
        assert!(d.contains("[document]:\n\n```\na\nb\n```\n"));
    }

    #[test]
    fn the_cache_renders_once_per_state() {
        let cache = MarkdownCache::default();
        let stamp = FileStamp {
            size: 10,
            ..FileStamp::default()
        };
        let calls = std::cell::Cell::new(0);
        let get = |stamp: FileStamp, f: &SessionFacts| {
            cache
                .get_or_render(Path::new("/s"), stamp, f, |each| {
                    calls.set(calls.get() + 1);
                    each(msg(Role::User, vec![text("hi")]));
                    Ok(())
                })
                .unwrap()
        };
        let mem = |r: Rendered| match r {
            Rendered::Memory(b) => b,
            Rendered::File { .. } => panic!("a small rendering stays in memory"),
        };
        let a = mem(get(stamp, &facts()));
        let b = mem(get(stamp, &facts()));
        assert!(Arc::ptr_eq(&a, &b));
        let grown = FileStamp { size: 11, ..stamp };
        let c = mem(get(grown, &facts()));
        assert!(!Arc::ptr_eq(&a, &c));
        let mut renamed = facts();
        renamed.title = Some("New".into());
        let d = mem(get(grown, &renamed));
        assert!(String::from_utf8_lossy(&d).starts_with("# New\n"));
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn subagents_are_named_in_the_head_and_marked_below_their_calls() {
        let mut parent = facts();
        parent.subagents = vec![
            SubagentLink {
                id: "a1".into(),
                call_id: Some("call_1".into()),
                dir: Some("d.agent-a1".into()),
                inline: false,
            },
            SubagentLink {
                id: "a2".into(),
                call_id: Some("call_2".into()),
                dir: None,
                inline: false,
            },
        ];
        let call = |id: &str| Part::ToolCall {
            id: id.into(),
            name: "Agent".into(),
            input: json!({"prompt": "look"}),
        };
        let d = render(&SessionMessages {
            facts: parent,
            messages: vec![msg(
                Role::Assistant,
                vec![call("call_1"), call("call_3"), call("call_2")],
            )],
        });
        assert!(
            d.contains("- subagent `a1`: [d.agent-a1](../d.agent-a1/conversation.md)\n"),
            "{d}"
        );
        assert!(
            d.contains("- subagent `a2`: (its transcript is not shown)\n"),
            "{d}"
        );
        let one = d
            .find("↳ subagent `a1` ran here: [d.agent-a1](../d.agent-a1/conversation.md)")
            .unwrap();
        let two = d
            .find("↳ subagent `a2` ran here: (its transcript is not shown)")
            .unwrap();
        assert!(one < two, "{d}");
        assert_eq!(
            d.matches("↳ subagent").count(),
            2,
            "call_3 started none: {d}"
        );
        // A subagent's own document names its parent.
        let mut child = facts();
        child.parent_id = Some("p-id".into());
        child.parent = Some("p-dir".into());
        child.agent_id = Some("a1".into());
        let d = render(&SessionMessages {
            facts: child,
            messages: vec![],
        });
        assert!(
            d.contains("- subagent of: [p-dir](../p-dir/conversation.md) (as subagent `a1`)\n"),
            "{d}"
        );
    }
}

#[cfg(test)]
mod spill_tests {
    use super::*;

    /// A rendering over `SPILL_BYTES` lives in an unnamed file of fen's cache folder,
    /// read back whole through any number of snapshots; nothing is left named there.
    #[test]
    fn large_renderings_go_to_an_unnamed_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = MarkdownCache::spilling_to(Some(dir.path()));
        let text = "x".repeat(SPILL_BYTES);
        let facts = SessionFacts::default();
        let r = cache
            .get_or_render(Path::new("/s"), FileStamp::default(), &facts, |each| {
                each(Message::new(
                    Role::User,
                    vec![Part::Text { text: text.clone() }],
                ));
                Ok(())
            })
            .unwrap();
        assert!(matches!(r, Rendered::File { .. }));
        let want = render(&SessionMessages {
            facts: facts.clone(),
            messages: vec![Message::new(Role::User, vec![Part::Text { text }])],
        });
        assert_eq!(r.len(), want.len() as u64);
        assert_eq!(r.bytes().unwrap(), want.as_bytes());
        // Messages that cross the threshold one by one, with a summary that comes
        // last but is shown first: the same document as rendered whole.
        let mut summary = Message::new(
            Role::User,
            vec![Part::Text {
                text: "the summary".into(),
            }],
        );
        summary.summary = true;
        let mut many: Vec<Message> = (0..40)
            .map(|i| {
                Message::new(
                    Role::Assistant,
                    vec![Part::Text {
                        text: format!("{i} {}", "y".repeat(SPILL_BYTES / 20)),
                    }],
                )
            })
            .collect();
        many.push(summary);
        let crossed = cache
            .get_or_render(Path::new("/t"), FileStamp::default(), &facts, |each| {
                for m in many.clone() {
                    each(m);
                }
                Ok(())
            })
            .unwrap();
        assert!(matches!(crossed, Rendered::File { .. }));
        let whole = render(&SessionMessages {
            facts: facts.clone(),
            messages: many,
        });
        assert_eq!(crossed.len(), whole.len() as u64);
        assert_eq!(crossed.bytes().unwrap(), whole.as_bytes());
        let again = cache
            .get_or_render(Path::new("/s"), FileStamp::default(), &facts, |_| {
                panic!("rendered once")
            })
            .unwrap();
        assert_eq!(again.bytes().unwrap(), want.as_bytes());
        let names: Vec<_> = std::fs::read_dir(dir.path().join(crate::store::layout::CACHE_DIR))
            .unwrap()
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }
}
