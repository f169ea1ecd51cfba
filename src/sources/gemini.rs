//! Reader of Gemini CLI chat files (`tmp/<project>/chats/session-*.jsonl` since 0.39,
//! `session-*.json` before), see AGENT-FORMATS-MORE.md §2. Cited as there: GM =
//! google-gemini/gemini-cli, `chatRecordingService.ts` (`loadConversationRecord`,
//! `parseLegacyRecordFallback`), `utils/sessionUtils.ts` (`convertSessionToClientHistory`)
//! and `cli/src/utils/sessionUtils.ts` (`getAllSessionFiles`, `getSessionFiles`); the
//! same code was read in the 0.61.0 bundle and run against a mock model.
//!
//! A `.jsonl` is replayed line by line as Gemini does: a message record sets its id in
//! an insertion-ordered map (a repeated id keeps its first position), `$rewindTo`
//! drops that message and every later one, `$set.messages` replaces them all, and the
//! metadata records merge. Each message is converted when its line is read (the
//! conversion depends on that message alone), into pieces that are byte ranges of the
//! line, so the reader keeps no contents. A legacy `.json` is one pretty-printed
//! record the agent rewrites in place: it is parsed whole, its pieces re-emitted
//! without the pretty-printing's whitespace.

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::json::{RawObject, offset_in, quote};
use crate::sources::foreign::{
    ConversationMark, ConversationUpdate, ForeignReader, ForeignSummary, MessagePieces, MessageRef,
    Piece,
};
use crate::sources::growth::{KeptCell, Resumed};
use crate::sources::json_text::is_js_ws;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

/// Whether Gemini lists a file of `chats/` as a session (GM `getAllSessionFiles`:
/// `session-*.json` or `.jsonl`; backups such as `.jsonl.unreadable-<ts>` are not).
pub fn is_session_file_name(name: &str) -> bool {
    name.starts_with("session-") && (name.ends_with(".json") || name.ends_with(".jsonl"))
}

/// The project folder a chat file of `root/tmp/<slug>/chats/` belongs to: the
/// `.project_root` marker of the slug (0.29+), else the path `projects.json` gives
/// that slug, else (an older folder named by the SHA-256 of the path) the known
/// project path with that digest. `None`: unknown.
pub fn project_cwd(root: &Path, chat_file: &Path) -> Option<String> {
    let slug_dir = chat_file.parent()?.parent()?;
    let slug = slug_dir.file_name()?.to_str()?;
    let marker = |dir: &Path| {
        crate::store::open::read_small(&dir.join(slug).join(".project_root"), 64 * 1024)
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .filter(|p| !p.is_empty())
    };
    if let Some(p) = marker(&root.join("tmp")).or_else(|| marker(&root.join("history"))) {
        return Some(p);
    }
    let projects = registry(root);
    if let Some((path, _)) = projects.iter().find(|(_, s)| s.as_str() == slug) {
        return Some(path.clone());
    }
    if slug.len() == 64 && slug.bytes().all(|b| b.is_ascii_hexdigit()) {
        let slug = slug.to_ascii_lowercase();
        return known_projects(root, projects)
            .into_iter()
            .find(|p| super::digest::sha256_hex(p.as_bytes()) == slug);
    }
    None
}

/// `projects.json`: `{projects: {<path>: <slug>}}` (GM `projectRegistry.ts`).
fn registry(root: &Path) -> Vec<(String, String)> {
    let Some(bytes) = crate::store::open::read_small(&root.join("projects.json"), 16 << 20) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    v.get("projects")
        .and_then(|p| p.as_object())
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// Every project path Gemini's folder names: registered ones, the markers of the
/// project folders, and the trusted folders (which old versions kept too).
fn known_projects(root: &Path, registered: Vec<(String, String)>) -> Vec<String> {
    let mut out: Vec<String> = registered.into_iter().map(|(p, _)| p).collect();
    for dir in ["tmp", "history"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in rd.flatten() {
            if let Some(b) =
                crate::store::open::read_small(&e.path().join(".project_root"), 64 * 1024)
            {
                out.push(String::from_utf8_lossy(&b).trim().to_string());
            }
        }
    }
    if let Some(b) = crate::store::open::read_small(&root.join("trustedFolders.json"), 16 << 20)
        && let Ok(serde_json::Value::Object(m)) = serde_json::from_slice(&b)
    {
        out.extend(m.keys().cloned());
    }
    out
}

// ---------------------------------------------------------------------------
// Messages

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    User,
    Gemini,
    /// `info`, `error`, `warning` and any other type: never resumed.
    Other,
}

/// One `{id, role, parts}` item of the client history.
#[derive(Debug, Clone)]
struct Item {
    role: &'static str,
    /// The item's id as text (for search hits).
    entry: Option<String>,
    pieces: MessagePieces,
}

/// One message record, converted as `convertSessionToClientHistory` converts it.
#[derive(Debug, Clone)]
struct Msg {
    /// GM `isResumableMessageRecord`.
    resumable: bool,
    /// Converting it throws in Gemini (a null part, thought or tool call).
    throws: bool,
    timestamp: Option<String>,
    /// The model that wrote a `gemini` message.
    model: Option<String>,
    /// A resumable user message's text (`getAllSessionFiles`' first-prompt fallback),
    /// cut to what a listing shows.
    first_text: Option<String>,
    items: Vec<Item>,
}

/// The longest first prompt kept for the listing (it is cut shorter there).
const FIRST_TEXT_MAX: usize = 1000;

/// Where the raw values of a record come from: byte ranges of the file when the line
/// is kept verbatim, else minified text (pretty-printed or not valid UTF-8).
struct Ctx<'a> {
    text: &'a str,
    base: u64,
    ranges: bool,
}

impl Ctx<'_> {
    fn piece(&self, v: &RawValue) -> Piece {
        if self.ranges {
            Piece::Range {
                start: self.base + offset_in(self.text, v.get()) as u64,
                len: v.get().len() as u64,
            }
        } else {
            Piece::Text(minify(v.get()))
        }
    }
}

/// JSON text without the whitespace between tokens (strings kept as they are).
fn minify(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let (mut in_str, mut esc) = (false, false);
    for c in t.chars() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// Message pieces under construction: adjacent literal text is merged.
#[derive(Default)]
struct Out(MessagePieces);

impl Out {
    fn text(&mut self, s: &str) {
        if let Some(Piece::Text(t)) = self.0.last_mut() {
            t.push_str(s);
        } else {
            self.0.push(Piece::Text(s.to_string()));
        }
    }

    fn piece(&mut self, p: Piece) {
        match p {
            Piece::Text(t) => self.text(&t),
            p => self.0.push(p),
        }
    }

    fn extend(&mut self, ps: MessagePieces) {
        for p in ps {
            self.piece(p);
        }
    }
}

/// Duplicate keys: JSON.parse keeps the last.
fn field<'a>(obj: &RawObject<'a>, key: &str) -> Option<&'a RawValue> {
    obj.fields
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
}

fn first_byte(v: &RawValue) -> u8 {
    v.get().as_bytes().first().copied().unwrap_or(b'n')
}

fn js_str(v: &RawValue) -> Option<Cow<'_, str>> {
    let t = v.get();
    let inner = t.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(t).ok().map(Cow::Owned)
}

/// JS truthiness of a JSON value (`None`: undefined).
fn truthy(v: Option<&RawValue>) -> bool {
    let Some(v) = v else { return false };
    let t = v.get();
    match first_byte(v) {
        b'n' | b'f' => false,
        b't' | b'{' | b'[' => true,
        b'"' => t.len() > 2,
        _ => t.parse::<f64>().map(|n| n != 0.0).unwrap_or(true),
    }
}

/// `String(value)` of a JSON value as a template literal renders it.
fn js_string(v: Option<&RawValue>) -> String {
    match v {
        None => "undefined".into(),
        Some(v) => match first_byte(v) {
            b'"' => js_str(v).map(Cow::into_owned).unwrap_or_default(),
            b'{' => "[object Object]".into(),
            b'[' => serde_json::from_str::<Vec<serde_json::Value>>(v.get())
                .map(|a| {
                    a.iter()
                        .map(|x| match x {
                            serde_json::Value::Null => String::new(),
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default(),
            _ => v.get().to_string(),
        },
    }
}

fn elements(v: &RawValue) -> Option<Vec<&RawValue>> {
    if first_byte(v) != b'[' {
        return None;
    }
    serde_json::from_str::<Vec<&RawValue>>(v.get()).ok()
}

fn object(v: &RawValue) -> Option<RawObject<'_>> {
    if first_byte(v) != b'{' {
        return None;
    }
    RawObject::parse(v.get()).ok()
}

/// The start of a message's text as GM `partToString` makes it, which is all its
/// checks look at (is it blank, does it start with `/`, `?`, `<session_context>`...):
/// leading whitespace dropped, then at most `PROBE` characters. A long message is not
/// copied or unescaped past them.
#[derive(Default)]
struct Probe {
    text: String,
    kept: usize,
}

const PROBE: usize = 64;

impl Probe {
    fn full(&self) -> bool {
        self.kept >= PROBE
    }

    fn push(&mut self, c: char) {
        if self.full() || self.kept == 0 && is_js_ws(c) {
            return;
        }
        self.text.push(c);
        self.kept += 1;
    }

    fn push_str(&mut self, s: &str) {
        for c in s.chars() {
            if self.full() {
                return;
            }
            self.push(c);
        }
    }

    /// A raw JSON string's characters, unescaped only as far as needed.
    fn push_json_str(&mut self, raw: &str) {
        let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
            return;
        };
        let mut chars = inner.chars();
        while !self.full() {
            let Some(c) = chars.next() else { return };
            if c != '\\' {
                self.push(c);
                continue;
            }
            let c = match chars.next() {
                Some('n') => '\n',
                Some('t') => '\t',
                Some('r') => '\r',
                Some('b') => '\u{8}',
                Some('f') => '\u{c}',
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let n = u32::from_str_radix(&hex, 16).unwrap_or(0xfffd);
                    if (0xd800..0xdc00).contains(&n) {
                        // A pair: the low half follows as another \uXXXX.
                        let rest = chars.as_str();
                        match rest
                            .strip_prefix("\\u")
                            .and_then(|r| r.get(..4))
                            .and_then(|h| u32::from_str_radix(h, 16).ok())
                            .filter(|lo| (0xdc00..0xe000).contains(lo))
                        {
                            Some(lo) => {
                                chars = rest[6..].chars();
                                char::from_u32(0x10000 + ((n - 0xd800) << 10) + (lo - 0xdc00))
                                    .unwrap_or('\u{fffd}')
                            }
                            None => '\u{fffd}',
                        }
                    } else {
                        char::from_u32(n).unwrap_or('\u{fffd}')
                    }
                }
                Some(other) => other,
                None => return,
            };
            self.push(c);
        }
    }
}

/// GM `partToString(value, {verbose: true})`, its start (see [`Probe`]): `Err` where
/// it throws.
fn part_to_string(v: Option<&RawValue>, out: &mut Probe) -> Result<(), ()> {
    if !truthy(v) {
        return Ok(());
    }
    let v = v.expect("truthy");
    match first_byte(v) {
        b'"' => out.push_json_str(v.get()),
        b'[' => {
            for e in elements(v).unwrap_or_default() {
                part_to_string(Some(e), out)?;
            }
        }
        b'{' => {
            let Some(o) = object(v) else { return Ok(()) };
            let named = |key: &str| -> Result<String, ()> {
                let inner = field(&o, key).expect("present");
                if first_byte(inner) == b'n' {
                    return Err(()); // `null.name`
                }
                Ok(js_string(
                    object(inner).as_ref().and_then(|x| field(x, "name")),
                ))
            };
            if field(&o, "videoMetadata").is_some() {
                out.push_str("[Video Metadata]");
            } else if let Some(t) = field(&o, "thought") {
                out.push_str(&format!("[Thought: {}]", js_string(Some(t))));
            } else if field(&o, "codeExecutionResult").is_some() {
                out.push_str("[Code Execution Result]");
            } else if field(&o, "executableCode").is_some() {
                out.push_str("[Executable Code]");
            } else if field(&o, "fileData").is_some() {
                out.push_str("[File Data]");
            } else if field(&o, "functionCall").is_some() {
                out.push_str(&format!("[Function Call: {}]", named("functionCall")?));
            } else if field(&o, "functionResponse").is_some() {
                out.push_str(&format!(
                    "[Function Response: {}]",
                    named("functionResponse")?
                ));
            } else if field(&o, "inlineData").is_some() {
                out.push_str("[Media]");
            } else if let Some(t) = field(&o, "text").filter(|t| first_byte(t) != b'n') {
                match first_byte(t) {
                    b'"' => out.push_json_str(t.get()),
                    _ => out.push_str(&js_string(Some(t))),
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// GM `isIgnoredUserContent` of the trimmed text.
fn is_ignored_user_content(trimmed: &str) -> bool {
    trimmed.is_empty()
        || trimmed.starts_with('/')
        || trimmed.starts_with('?')
        || trimmed.starts_with("<session_context>")
        || trimmed.starts_with("<hook_context>")
}

/// GM `ensurePartArray`: a string becomes `{text}`, an array's strings too.
fn ensure_part_array(ctx: &Ctx, v: &RawValue) -> Vec<MessagePieces> {
    let text_part = |s: &RawValue| {
        let mut o = Out::default();
        o.text("{\"text\":");
        o.piece(ctx.piece(s));
        o.text("}");
        o.0
    };
    match first_byte(v) {
        b'[' => elements(v)
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                if first_byte(e) == b'"' {
                    text_part(e)
                } else {
                    vec![ctx.piece(e)]
                }
            })
            .collect(),
        b'"' => vec![text_part(v)],
        _ => vec![vec![ctx.piece(v)]],
    }
}

/// The raw parts of a part array, as `ensurePartArray` makes them, for the checks
/// on them (`functionCall`, `thought`): `Err` when one is null (the check throws).
fn raw_parts(v: &RawValue) -> Vec<&RawValue> {
    match first_byte(v) {
        b'[' => elements(v).unwrap_or_default(),
        _ => vec![v],
    }
}

fn item(
    id: Option<&Piece>,
    id_text: Option<String>,
    role: &'static str,
    parts: Vec<MessagePieces>,
) -> Item {
    let mut o = Out::default();
    o.text("{");
    if let Some(id) = id {
        o.text("\"id\":");
        o.piece(id.clone());
        o.text(",");
    }
    o.text(&format!("\"role\":\"{role}\",\"parts\":["));
    for (i, p) in parts.into_iter().enumerate() {
        if i > 0 {
            o.text(",");
        }
        o.extend(p);
    }
    o.text("]}");
    Item {
        role,
        entry: id_text,
        pieces: o.0,
    }
}

/// One message record (`obj`) converted; `want_text`: keep a resumable user
/// message's text for the listing's first-prompt fallback.
fn convert(ctx: &Ctx, obj: &RawObject, want_text: bool) -> Msg {
    let ty = field(obj, "type").and_then(js_str);
    let kind = match ty.as_deref() {
        Some("user") => Type::User,
        Some("gemini") => Type::Gemini,
        _ => Type::Other,
    };
    let content = field(obj, "content");
    let mut probe = Probe::default();
    let mut throws = part_to_string(content, &mut probe).is_err();
    // Left-trimmed already; trailing whitespace matters only to blankness.
    let trimmed = probe.text.trim_end_matches(is_js_ws);
    let id = field(obj, "id");
    let id_piece = id.map(|v| ctx.piece(v));
    let id_text = id.map(|v| js_string(Some(v)));
    let array_len = |key: &str| {
        field(obj, key).map_or(0, |v| match first_byte(v) {
            b'[' => elements(v).map_or(0, |e| e.len()),
            b'"' => js_str(v).map_or(0, |s| s.encode_utf16().count()),
            _ => 0,
        })
    };
    let resumable = match kind {
        Type::User => !is_ignored_user_content(trimmed),
        Type::Gemini => {
            !trimmed.is_empty() || array_len("toolCalls") > 0 || array_len("thoughts") > 0
        }
        Type::Other => false,
    };
    let mut items = Vec::new();
    match kind {
        Type::User if !is_ignored_user_content(trimmed) => {
            let parts = content
                .map(|c| ensure_part_array(ctx, c))
                .unwrap_or_default();
            items.push(item(id_piece.as_ref(), id_text.clone(), "user", parts));
        }
        Type::Gemini => {
            let content = content.filter(|c| truthy(Some(c)));
            let raw = content.map(raw_parts).unwrap_or_default();
            if raw.iter().any(|p| first_byte(p) == b'n') {
                throws = true;
            }
            let has = |key: &str| {
                raw.iter()
                    .filter_map(|p| object(p))
                    .any(|o| truthy(field(&o, key)))
            };
            let content_parts = content
                .map(|c| ensure_part_array(ctx, c))
                .unwrap_or_default();
            let tool_calls: Vec<&RawValue> = field(obj, "toolCalls")
                .and_then(elements)
                .unwrap_or_default();
            let mut model_parts = Vec::new();
            if has("functionCall") || has("thought") {
                model_parts = content_parts;
            } else {
                for t in field(obj, "thoughts")
                    .and_then(elements)
                    .unwrap_or_default()
                {
                    let Some(t) = object(t) else {
                        throws |= first_byte(t) == b'n';
                        continue;
                    };
                    let subject = field(&t, "subject");
                    let description = field(&t, "description");
                    let mut o = Out::default();
                    if truthy(subject) {
                        let s = format!("**{}** {}", js_string(subject), js_string(description));
                        o.text(&format!("{{\"text\":{},\"thought\":true}}", quote(&s)));
                    } else if let Some(d) = description {
                        o.text("{\"text\":");
                        o.piece(ctx.piece(d));
                        o.text(",\"thought\":true}");
                    } else {
                        o.text("{\"thought\":true}");
                    }
                    model_parts.push(o.0);
                }
                model_parts.extend(content_parts);
                for call in &tool_calls {
                    let Some(c) = object(call) else {
                        throws |= first_byte(call) == b'n';
                        model_parts.push(vec![Piece::Text("{\"functionCall\":{}}".into())]);
                        continue;
                    };
                    let mut o = Out::default();
                    o.text("{\"functionCall\":{");
                    let mut first = true;
                    for key in ["id", "name", "args"] {
                        if let Some(v) = field(&c, key) {
                            o.text(&format!("{}\"{key}\":", if first { "" } else { "," }));
                            o.piece(ctx.piece(v));
                            first = false;
                        }
                    }
                    o.text("}}");
                    model_parts.push(o.0);
                }
            }
            if !model_parts.is_empty() {
                items.push(item(
                    id_piece.as_ref(),
                    id_text.clone(),
                    "model",
                    model_parts,
                ));
                let mut responses = Vec::new();
                for call in tool_calls.iter().filter_map(|c| object(c)) {
                    let result = field(&call, "result").filter(|r| truthy(Some(r)));
                    let Some(result) = result else { continue };
                    match first_byte(result) {
                        b'"' => {
                            let mut o = Out::default();
                            o.text("{\"functionResponse\":{");
                            for key in ["id", "name"] {
                                if let Some(v) = field(&call, key) {
                                    o.text(&format!("\"{key}\":"));
                                    o.piece(ctx.piece(v));
                                    o.text(",");
                                }
                            }
                            o.text("\"response\":{\"output\":");
                            o.piece(ctx.piece(result));
                            o.text("}}}");
                            responses.push(o.0);
                        }
                        b'[' => responses.extend(ensure_part_array(ctx, result)),
                        _ => responses.push(vec![ctx.piece(result)]),
                    }
                }
                if !responses.is_empty() {
                    let rid = format!("{}_response", id_text.as_deref().unwrap_or("undefined"));
                    let rid_piece = Piece::Text(quote(&rid));
                    items.push(item(Some(&rid_piece), Some(rid), "user", responses));
                }
            }
        }
        _ => {}
    }
    let first_text = (want_text && kind == Type::User && resumable)
        .then(|| first_user_text(obj))
        .flatten()
        .map(|t| t.chars().take(FIRST_TEXT_MAX).collect());
    Msg {
        resumable,
        throws,
        timestamp: field(obj, "timestamp")
            .and_then(js_str)
            .map(Cow::into_owned),
        model: (kind == Type::Gemini)
            .then(|| field(obj, "model").and_then(js_str).map(Cow::into_owned))
            .flatten(),
        first_text,
        items,
    }
}

/// The text `getAllSessionFiles` takes a first prompt from: a content string, or
/// the `text` of an array's parts joined.
fn first_user_text(obj: &RawObject) -> Option<String> {
    let c = field(obj, "content")?;
    match first_byte(c) {
        b'"' => js_str(c).map(Cow::into_owned),
        b'[' => Some(
            elements(c)?
                .into_iter()
                .filter_map(object)
                .filter_map(|p| field(&p, "text").and_then(js_str).map(Cow::into_owned))
                .collect(),
        ),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Replay

/// The merged metadata (`{...metadata, ...record}`): each key's value as text when
/// truthy (a string as itself, anything else as its JSON), `None` when falsy.
#[derive(Debug, Clone, Default)]
struct Meta {
    session_id: Option<String>,
    project_hash: Option<String>,
    start_time: Option<String>,
    last_updated: Option<String>,
    summary: Option<String>,
    kind: Option<String>,
    /// The first `startTime` the file gave: each resume writes a new one (BB 0.61.0),
    /// this one names the session's creation.
    first_start: Option<String>,
}

impl Meta {
    fn merge(&mut self, obj: &RawObject) {
        let value = |v: &RawValue| {
            if !truthy(Some(v)) {
                None
            } else if first_byte(v) == b'"' {
                js_str(v).map(Cow::into_owned)
            } else {
                Some(v.get().to_string())
            }
        };
        for (key, slot) in [
            ("sessionId", &mut self.session_id),
            ("projectHash", &mut self.project_hash),
            ("startTime", &mut self.start_time),
            ("lastUpdated", &mut self.last_updated),
            ("summary", &mut self.summary),
            ("kind", &mut self.kind),
        ] {
            if let Some(v) = field(obj, key) {
                *slot = value(v);
            }
        }
        if self.first_start.is_none() {
            self.first_start = self.start_time.clone();
        }
    }
}

/// GM `loadConversationRecord`'s state over the lines read so far.
#[derive(Debug, Clone, Default)]
struct Replay {
    /// The message map in insertion order (`None`: deleted).
    slots: Vec<Option<Msg>>,
    index: HashMap<String, usize>,
    meta: Meta,
    first_user: Option<String>,
    /// Messages a `$rewindTo` took out (search still finds them).
    rewound: Vec<Msg>,
    /// Times a message was replaced or taken out (a repeated id, a rewind, a
    /// `$set` of them all): while it is unchanged, the messages only grew.
    rewrites: u64,
}

impl Replay {
    fn set(&mut self, id: String, msg: Msg) {
        match self.index.get(&id) {
            Some(&i) => {
                self.slots[i] = Some(msg);
                self.rewrites += 1;
            }
            None => {
                self.index.insert(id, self.slots.len());
                self.slots.push(Some(msg));
            }
        }
    }

    fn clear(&mut self) {
        self.rewrites += 1;
        self.slots.clear();
        self.index.clear();
    }

    /// A message record (string `id`), from a line or a `messages` array.
    fn message(&mut self, ctx: &Ctx, obj: &RawObject) {
        let Some(id) = field(obj, "id").and_then(js_str).map(Cow::into_owned) else {
            return;
        };
        let want = self.first_user.as_deref().is_none_or(str::is_empty);
        let msg = convert(ctx, obj, want);
        if want && msg.first_text.is_some() {
            self.first_user = msg.first_text.clone();
        }
        self.set(id, msg);
    }

    fn messages(&mut self, ctx: &Ctx, list: &RawValue) {
        for m in elements(list).unwrap_or_default() {
            if let Some(o) = object(m)
                && field(&o, "id").is_some_and(|v| first_byte(v) == b'"')
            {
                self.message(ctx, &o);
            }
        }
    }

    /// One parsed line.
    fn apply(&mut self, ctx: &Ctx, obj: &RawObject) {
        let string = |key: &str| field(obj, key).filter(|v| first_byte(v) == b'"');
        if let Some(target) = string("$rewindTo").and_then(js_str) {
            self.rewrites += 1;
            match self.index.get(target.as_ref()).copied() {
                Some(at) => {
                    let removed: Vec<Msg> = self.slots.drain(at..).flatten().collect();
                    self.index.retain(|_, i| *i < at);
                    self.rewound.extend(removed);
                }
                None => {
                    self.rewound.extend(self.slots.drain(..).flatten());
                    self.index.clear();
                }
            }
        } else if string("id").is_some() {
            self.message(ctx, obj);
        } else if let Some(set) = field(obj, "$set").and_then(object) {
            if let Some(list) = field(&set, "messages").filter(|v| first_byte(v) == b'[') {
                self.clear();
                self.messages(ctx, list);
            }
            self.meta.merge(&set);
        } else if string("sessionId").is_some() && string("projectHash").is_some() {
            self.meta.merge(obj);
            if let Some(list) = field(obj, "messages").filter(|v| first_byte(v) == b'[') {
                self.messages(ctx, list);
            }
        }
    }

    fn loaded(&self) -> Vec<&Msg> {
        self.slots.iter().flatten().collect()
    }
}

/// A whole-file legacy record (GM `parseLegacyRecordFallback`): any JSON object with
/// a `sessionId` key; its `messages` are taken as they are, in order.
#[derive(Debug, Clone)]
struct Legacy {
    meta: Meta,
    msgs: Vec<Msg>,
    /// A message is null: `isResumableMessageRecord` throws on it.
    null_message: bool,
}

impl Legacy {
    fn read(ctx: &Ctx) -> Result<Legacy, String> {
        let text = ctx.text.trim_matches(is_js_ws);
        let obj = match RawObject::parse(text) {
            Ok(o) => o,
            Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() => {
                return Err(NOT_A_RECORD.into());
            }
            Err(_) if text.is_empty() => {
                return Err("the file is empty (Gemini may be rewriting it)".into());
            }
            Err(_) => {
                return Err(
                    "the file is not valid JSON (cut short, or Gemini is rewriting it), so Gemini cannot load it"
                        .into(),
                );
            }
        };
        if field(&obj, "sessionId").is_none() {
            return Err(NOT_A_RECORD.into());
        }
        let mut meta = Meta::default();
        meta.merge(&obj);
        let mut msgs = Vec::new();
        let mut null_message = false;
        let mut have_text = false;
        for m in field(&obj, "messages")
            .and_then(elements)
            .unwrap_or_default()
        {
            match object(m) {
                Some(o) => {
                    let msg = convert(ctx, &o, !have_text);
                    have_text |= msg.first_text.is_some();
                    msgs.push(msg)
                }
                None => null_message |= first_byte(m) == b'n',
            }
        }
        Ok(Legacy {
            meta,
            msgs,
            null_message,
        })
    }
}

const NOT_A_RECORD: &str =
    "the file is not a Gemini conversation record (no sessionId), so Gemini lists it as corrupted";

/// What a session file loads as: its metadata and messages.
struct Session<'a> {
    meta: &'a Meta,
    msgs: Vec<&'a Msg>,
    /// The first prompt the replay saw (rewound or replaced ones included).
    first_user: Option<&'a str>,
    rewound: &'a [Msg],
    /// A message is null (legacy file): Gemini's loader throws.
    null_message: bool,
}

impl Session<'_> {
    /// Why Gemini would not list or resume the session, if so.
    fn refusal(&self) -> Option<String> {
        refusal(
            self.meta,
            self.null_message,
            self.msgs.iter().any(|m| m.resumable),
            self.msgs.iter().any(|m| m.throws),
        )
    }
}

/// Why Gemini would not list or resume a session of this metadata and messages.
fn refusal(m: &Meta, null_message: bool, resumable: bool, throws: bool) -> Option<String> {
    Some(if m.session_id.is_none() {
        "the record's sessionId is empty, so Gemini lists it as corrupted".into()
    } else if null_message {
        "a message of the file is null, on which Gemini's loader throws".into()
    } else if m.kind.as_deref() == Some("subagent") {
        "a subagent's chat, which Gemini never lists or resumes".into()
    } else if !resumable {
        "no message Gemini can resume (only commands, context or notices), so it does not list the session".into()
    } else if throws {
        "a message holds a null part, thought or tool call, on which Gemini's history conversion throws".into()
    } else {
        return None;
    })
}

/// The conversation kept between reads: (message, item) of each of its messages,
/// valid while the replay's `rewrites` is `rewrites`.
#[derive(Debug, Default)]
struct Kept {
    rewrites: u64,
    /// Messages Gemini can resume, and ones whose conversion throws.
    resumable: usize,
    throws: usize,
}

/// Reader of one Gemini chat file.
pub struct GeminiReader {
    /// A legacy `.json`: rewritten in place, read whole (nothing is consumed).
    whole: bool,
    end: u64,
    replay: Replay,
    entries: u64,
    malformed: u64,
    /// Non-blank lines so far, and the legacy reading of the first one (a one-line
    /// `.jsonl` without `projectHash` falls back to the legacy loader).
    nonblank: u64,
    single: Option<Box<Result<Legacy, String>>>,
    /// The conversation as last given, extended by the messages added since.
    resumed: KeptCell<(u32, u32), Kept>,
}

impl GeminiReader {
    pub fn new(file_name: &str) -> GeminiReader {
        GeminiReader {
            whole: file_name.ends_with(".json"),
            end: 0,
            replay: Replay::default(),
            entries: 0,
            malformed: 0,
            nonblank: 0,
            single: None,
            resumed: KeptCell::default(),
        }
    }

    /// Parses one line (no `\n`) at absolute offset `base`; `None` when blank.
    fn line<T>(bytes: &[u8], base: u64, f: impl FnOnce(&Ctx, Option<RawObject>) -> T) -> Option<T> {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let (text, ranges) = match std::str::from_utf8(bytes) {
            Ok(s) => (Cow::Borrowed(s), true),
            Err(_) => (String::from_utf8_lossy(bytes), false),
        };
        if text.trim_matches(is_js_ws).is_empty() {
            return None;
        }
        let ctx = Ctx {
            text: &text,
            base,
            ranges,
        };
        let obj = RawObject::parse(text.trim_matches(is_js_ws)).ok();
        Some(f(&ctx, obj))
    }

    fn feed_line(&mut self, bytes: &[u8], base: u64) {
        let (replay, single) = (&mut self.replay, self.nonblank == 0);
        let seen = Self::line(bytes, base, |ctx, obj| {
            let legacy = single.then(|| Box::new(Legacy::read(ctx)));
            let ok = obj.is_some();
            if let Some(o) = obj {
                replay.apply(ctx, &o);
            }
            (ok, legacy)
        });
        let Some((ok, legacy)) = seen else { return };
        self.nonblank += 1;
        self.single = legacy;
        if ok {
            self.entries += 1;
        } else {
            self.malformed += 1;
        }
    }

    /// The replay with the unterminated tail applied as readline would give it (a
    /// last line without `\n` still counts when it is complete JSON).
    fn with_tail(&self, tail: &[u8]) -> (Cow<'_, Replay>, Option<Result<Legacy, String>>, bool) {
        let parses = !tail.is_empty()
            && serde_json::from_slice::<serde::de::IgnoredAny>(tail).is_ok()
            && std::str::from_utf8(tail).is_ok();
        let blank = tail.iter().all(|b| b.is_ascii_whitespace());
        let mut single = None;
        if self.nonblank == 0 && !blank {
            single = Self::line(tail, self.end, |ctx, _| Legacy::read(ctx));
        }
        if !parses {
            return (Cow::Borrowed(&self.replay), single, !blank);
        }
        let mut r = self.replay.clone();
        Self::line(tail, self.end, |ctx, obj| {
            if let Some(o) = obj {
                r.apply(ctx, &o);
            }
        });
        (Cow::Owned(r), single, false)
    }

    /// Runs `f` on the session as Gemini loads the file (with its tail), or on why
    /// it cannot load it. `bad_tail`: the tail is a line JSON.parse skips.
    fn with_session<T>(
        &self,
        tail: &[u8],
        f: impl FnOnce(Result<Session<'_>, String>, bool) -> T,
    ) -> T {
        if self.whole {
            let legacy = Self::line(tail, 0, |ctx, _| {
                Legacy::read(&Ctx {
                    ranges: false,
                    ..*ctx
                })
            })
            .unwrap_or_else(|| Err("the file is empty (Gemini may be rewriting it)".into()));
            return f(
                legacy.as_ref().map(legacy_session).map_err(Clone::clone),
                false,
            );
        }
        let (replay, single, bad_tail) = self.with_tail(tail);
        let m = &replay.meta;
        if m.session_id.is_some() && m.project_hash.is_some() {
            return f(
                Ok(Session {
                    meta: &replay.meta,
                    msgs: replay.loaded(),
                    first_user: replay.first_user.as_deref(),
                    rewound: &replay.rewound,
                    null_message: false,
                }),
                bad_tail,
            );
        }
        // The legacy fallback parses the whole file as one JSON value: only a file of
        // one non-blank line can be one.
        let single = match (self.nonblank, single) {
            (0, Some(s)) => Some(s),
            (1, None) if !bad_tail => self.single.as_deref().cloned(),
            _ => None,
        };
        match single {
            Some(Ok(legacy)) => f(Ok(legacy_session(&legacy)), bad_tail),
            Some(Err(why)) => f(Err(why), bad_tail),
            None if self.nonblank == 0 && tail.iter().all(|b| b.is_ascii_whitespace()) => {
                f(Err("the file is empty".into()), false)
            }
            None => f(
                Err("no metadata line with sessionId and projectHash, so Gemini lists the file as corrupted".into()),
                bad_tail,
            ),
        }
    }
}

fn legacy_session(l: &Legacy) -> Session<'_> {
    Session {
        meta: &l.meta,
        msgs: l.msgs.iter().collect(),
        first_user: None,
        rewound: &[],
        null_message: l.null_message,
    }
}

/// GM `cleanMessage`: newlines and runs of whitespace to one space, everything
/// outside printable ASCII dropped.
fn clean_message(s: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        if (' '..='~').contains(&c) {
            out.push(c);
        }
    }
    out.trim().to_string()
}

fn rfc3339(s: Option<&str>) -> Option<String> {
    let s = s?;
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|_| s.to_string())
}

impl ForeignReader for GeminiReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        if self.whole {
            return 0;
        }
        let mut pos = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
            self.feed_line(&bytes[pos..pos + nl], offset + pos as u64);
            pos += nl + 1;
        }
        self.end = offset + pos as u64;
        pos as u64
    }

    fn follows_appends(&self) -> bool {
        !self.whole
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        self.with_session(tail, |session, bad_tail| {
            let mut s = ForeignSummary {
                entries: self.entries,
                malformed_lines: self.malformed + u64::from(bad_tail),
                ..ForeignSummary::default()
            };
            let session = match session {
                Ok(session) => session,
                Err(why) => {
                    if self.whole {
                        s.malformed_lines = 1;
                    }
                    s.not_resumable_reason = Some(why);
                    return s;
                }
            };
            if self.whole {
                s.entries = 1;
            }
            let m = session.meta;
            s.id = m.session_id.clone().unwrap_or_default();
            s.created_at = rfc3339(m.first_start.as_deref().or(m.last_updated.as_deref()));
            s.updated_at = rfc3339(m.last_updated.as_deref().or(m.start_time.as_deref()));
            s.title = m
                .summary
                .as_deref()
                .map(|t| t.chars().filter(|c| !c.is_control()).collect::<String>())
                .filter(|t| !t.is_empty());
            // The first prompt the replay saw, else the first one kept.
            let first_user = session
                .first_user
                .filter(|t| !t.is_empty())
                .or_else(|| session.msgs.iter().find_map(|m| m.first_text.as_deref()));
            s.preview = first_user.map(clean_message).filter(|t| !t.is_empty());
            let reason = session.refusal();
            // Listing loads the file without converting it (a bad part only fails
            // the resume).
            s.listed = m.session_id.is_some()
                && !session.null_message
                && m.kind.as_deref() != Some("subagent")
                && session.msgs.iter().any(|m| m.resumable);
            match reason {
                Some(why) => s.not_resumable_reason = Some(why),
                None => {
                    s.resumable = true;
                    for item in session.msgs.iter().flat_map(|m| &m.items) {
                        *s.roles.entry(item.role.to_string()).or_insert(0) += 1;
                        s.messages += 1;
                    }
                }
            }
            s
        })
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    fn summary_and_conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ForeignSummary, ConversationUpdate, Option<ConversationMark>) {
        let (update, mark) = self.conversation_since(tail, since);
        (self.summary(tail), update, mark)
    }

    /// The usual append (a `.jsonl` with its metadata, a tail that is no line, new
    /// message records) given as the messages it added; anything else whole.
    fn conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        let parses =
            !tail.is_empty() && serde_json::from_slice::<serde::de::IgnoredAny>(tail).is_ok();
        let m = &self.replay.meta;
        if self.whole || parses || m.session_id.is_none() || m.project_hash.is_none() {
            return (ConversationUpdate::Whole(self.conversation(tail)), None);
        }
        let mut kept = self.resumed.lock();
        let slots = &self.replay.slots;
        if !kept
            .as_ref()
            .is_some_and(|k| k.state.rewrites == self.replay.rewrites && k.covered <= slots.len())
        {
            *kept = Some(Resumed::new(
                0,
                Vec::new(),
                Kept {
                    rewrites: self.replay.rewrites,
                    ..Kept::default()
                },
            ));
        }
        let k = kept.as_mut().expect("just made");
        for (i, msg) in slots.iter().enumerate().skip(k.covered) {
            let Some(msg) = msg else { continue };
            k.state.resumable += usize::from(msg.resumable);
            k.state.throws += usize::from(msg.throws);
            k.order
                .extend((0..msg.items.len()).map(|j| (i as u32, j as u32)));
        }
        k.covered = slots.len();
        if refusal(m, false, k.state.resumable > 0, k.state.throws > 0).is_some() {
            // Nothing shown: what the messages kept so far show later grows it.
            return (
                ConversationUpdate::Whole(Vec::new()),
                Some(k.mark_at_start()),
            );
        }
        let update = k.update(since, |&(i, j)| {
            let msg = slots[i as usize].as_ref().expect("a kept message");
            msg.items[j as usize].pieces.clone()
        });
        (update, Some(k.mark()))
    }

    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        self.with_session(tail, |session, _| {
            let Ok(session) = session else {
                return Vec::new();
            };
            if session.refusal().is_some() {
                return Vec::new();
            }
            let refs = |m: &Msg, in_conversation: bool| {
                m.items
                    .iter()
                    .map(|i| MessageRef {
                        pieces: i.pieces.clone(),
                        entry: i.entry.clone(),
                        timestamp: m.timestamp.clone(),
                        in_conversation,
                        injected: false,
                        summary: false,
                        model: (i.role == "model").then(|| m.model.clone()).flatten().map(
                            |model| crate::neutral::ModelRef {
                                provider: Some("google".into()),
                                api: None,
                                model,
                            },
                        ),
                    })
                    .collect::<Vec<_>>()
            };
            let mut out: Vec<MessageRef> = Vec::new();
            if history {
                out.extend(session.rewound.iter().flat_map(|m| refs(m, false)));
            }
            out.extend(session.msgs.iter().flat_map(|m| refs(m, true)));
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_prompts_are_cleaned_as_the_picker_does() {
        assert_eq!(
            clean_message("  real\n  question\twith  space é  "),
            "real question with space"
        );
        assert_eq!(clean_message("é"), "");
    }

    #[test]
    fn probe_unescapes_only_the_start() {
        let mut p = Probe::default();
        p.push_json_str(r#""  \n\t\u002fhelp \ud83d\ude00 \"q\"""#);
        assert_eq!(p.text, "/help \u{1f600} \"q\"");
        let mut p = Probe::default();
        p.push_json_str(&format!("\"{}\"", "ab".repeat(100)));
        assert_eq!(p.text.len(), PROBE);
    }
}
