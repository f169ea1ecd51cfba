//! Reader of pi session files (`@mariozechner/pi-coding-agent` 0.73.1), mirroring
//! `dist/core/session-manager.js`: `loadEntriesFromFile` + `migrateToCurrentVersion` +
//! `_buildIndex` + `buildSessionContext` for what pi resumes, `buildSessionInfo` for
//! what `SessionManager.list()` shows. Versions 1 and 2 are migrated in memory only.
//!
//! pi parses with `JSON.parse` (any JSON value per line, lone surrogates allowed,
//! duplicate keys: last wins) and reads the file as lossily decoded UTF-8; the quirks
//! that make pi throw or start over are mapped to `resumable: false`.

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::{to_neutral, vendor_of};

use crate::json::{RawObject, offset_in};
use crate::sources::foreign::{
    ConversationMark, ConversationUpdate, ForeignReader, ForeignSummary, MessagePieces, MessageRef,
    Piece,
};
use crate::sources::growth::{KeptCell, Resumed};
use crate::sources::json_text::{is_js_ws, replace_surrogate_escapes};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::MutexGuard;

/// A JSON value used as an entry id, compared as JS `===` / `Map` keys compare it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Key {
    Undef,
    Null,
    Bool(bool),
    /// f64 bits, -0 folded into 0 (SameValueZero).
    Num(u64),
    Str(Box<str>),
    /// An id pi's v1 migration gives the entry at this parsed-value index.
    Synth(u32),
    /// An object or array: equal to no other value.
    Unique,
}

impl Key {
    fn of(v: Option<&RawValue>) -> Key {
        let Some(v) = v else { return Key::Undef };
        let t = v.get();
        match t.as_bytes().first() {
            Some(b'n') => Key::Null,
            Some(b't') => Key::Bool(true),
            Some(b'f') => Key::Bool(false),
            Some(b'"') => Key::Str(js_str(v).unwrap_or_default().into()),
            Some(b'{' | b'[') => Key::Unique,
            _ => {
                let n: f64 = t.parse().unwrap_or(f64::NAN);
                let n = if n == 0.0 { 0.0 } else { n };
                Key::Num(n.to_bits())
            }
        }
    }

    fn truthy(&self) -> bool {
        match self {
            Key::Undef | Key::Null => false,
            Key::Bool(b) => *b,
            Key::Num(bits) => {
                let n = f64::from_bits(*bits);
                n != 0.0 && !n.is_nan()
            }
            Key::Str(s) => !s.is_empty(),
            Key::Synth(_) | Key::Unique => true,
        }
    }
}

/// A raw JSON value of the file: a byte range when the line was valid UTF-8, else the
/// lossily decoded text pi itself would have seen.
#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Raw {
    Range { start: u64, len: u64 },
    Owned(Box<str>),
}

impl Raw {
    fn piece(&self) -> Piece {
        match self {
            Raw::Range { start, len } => Piece::Range {
                start: *start,
                len: *len,
            },
            Raw::Owned(s) => Piece::Text(s.to_string()),
        }
    }
}

#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Msg {
    raw: Raw,
    /// `role` when it is a string, after the v2→v3 `hookMessage` → `custom` rename.
    role: Option<Box<str>>,
    /// Where the role value sits inside `raw` when the migration renames it.
    #[borsh(serialize_with = "ser_span", deserialize_with = "de_span")]
    rename: Option<(usize, usize)>,
}

#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
enum Body {
    /// `type: "session"`: skipped by `_buildIndex` and `getEntries`.
    Session,
    /// A `null` line: `entry.type` throws in pi's loader and lister.
    Null,
    /// A number, string or boolean line: the v1 migration throws on these.
    Primitive,
    /// An array, or an object of no type pi acts on.
    Other,
    /// `message` entry; `None` when `message` is missing or null (buildSessionContext
    /// throws reading its role).
    Message(Option<Box<Msg>>),
    Compaction(Box<Compaction>),
    BranchSummary(Box<Fields>),
    CustomMessage(Box<Fields>),
}

#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Compaction {
    summary: Option<Raw>,
    tokens_before: Option<Raw>,
    first_kept: Key,
    /// v1's `firstKeptEntryIndex`, resolved when the entry is linked.
    first_kept_index: Option<f64>,
}

/// The raw fields a synthesized message copies, in pi's key order.
#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Fields {
    #[borsh(serialize_with = "ser_keys", deserialize_with = "de_keys")]
    keys: &'static [&'static str],
    values: Vec<Option<Raw>>,
    /// For branch summaries: whether `summary` is truthy (pi skips it otherwise).
    truthy: bool,
}

#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Entry {
    id: Key,
    parent: Key,
    /// `new Date(entry.timestamp).getTime()`, `None` for NaN.
    time: Option<f64>,
    body: Body,
}

/// What the first parsed value says, for `loadEntriesFromFile` and `buildSessionInfo`.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Header {
    /// An object with `type: "session"` (enough for `list()`).
    listable: bool,
    /// ... and a string `id` (needed by `open()`).
    openable: bool,
    id: Option<String>,
    cwd: Option<String>,
    created: Option<f64>,
    version: f64,
}

/// `buildSessionInfo`'s running state over every value in file order.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct ListAcc {
    /// Something in it throws (then `list()` skips the file).
    throws: bool,
    name: Option<String>,
    first_message: Option<String>,
    last_activity: Option<f64>,
}

/// Reader of one pi session file.
#[derive(Debug, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct PiReader {
    /// Where the consumed lines end (the tail starts here).
    end: u64,
    /// A non-blank line was seen (pi trims the whole content, so only the first
    /// non-blank line loses leading whitespace).
    started: bool,
    entries: Vec<Entry>,
    header: Option<Header>,
    /// Rebuilt from `entries` when a saved state is restored.
    #[borsh(skip)]
    by_id: HashMap<Key, u32>,
    /// Last non-session value: pi's leaf, and the v1 migration's previous entry.
    leaf: Option<u32>,
    list: ListAcc,
    json_entries: u64,
    malformed: u64,
    /// First line number (1-based) holding JSON `null`.
    null_line: Option<u64>,
    /// First line holding a number, string or boolean (fatal only to v1 migration).
    primitive_line: Option<u64>,
    /// `\n`-terminated lines consumed.
    lines: u64,
    /// Entries put in `by_id` (more than its size when an id came twice); rebuilt
    /// with it on a restore.
    #[borsh(skip)]
    keyed: usize,
    /// The conversation as last resolved, extended by the entries read since while
    /// they only extend it (not saved: resolved again after a restore).
    #[borsh(skip)]
    resumed: KeptCell<u32, Result<Growth, String>>,
}

/// The conversation kept between reads: entry numbers of its messages, and what
/// taking the next entries in needs (or why pi cannot resume the file).
type Kept = Resumed<u32, Result<Growth, String>>;

/// What extending the kept conversation needs. An entry extends it when its parent
/// is the leaf and its id is new (no older link can find it): the path from the new
/// leaf is the old one and it, and the last compaction on it is the same. Anything
/// else (another parent: a branch; a compaction; a repeated id; a line pi throws on)
/// and the conversation is resolved again.
#[derive(Debug, Default)]
struct Growth {
    leaf: Option<u32>,
    /// The parent the path's root names but no entry has: an entry with that id
    /// would continue the path upwards.
    dangling: Option<Key>,
    /// `by_id`'s size and `keyed` when it was taken.
    keys: usize,
    keyed: usize,
    compactions: u64,
    roles: BTreeMap<String, u64>,
}

impl Growth {
    fn take(&mut self, r: &PiReader, from: usize, order: &mut Vec<u32>) -> bool {
        // Every new id is one no entry had: the links resolved before still hold.
        // And no line pi throws on came (the resolved conversation had none).
        if r.by_id.len() - self.keys != r.keyed - self.keyed
            || r.null_line.is_some()
            || r.primitive_line.is_some() && r.version() < 2.0
        {
            return false;
        }
        let view = View {
            r,
            header: r.header.clone(),
            list: ListAcc::default(),
            extra: None,
            extra_kind: Kind::None,
        };
        for (k, e) in r.entries.iter().enumerate().skip(from) {
            match &e.body {
                // Left out of pi's index: the leaf stays.
                Body::Session => continue,
                Body::Compaction(_) | Body::Message(None) | Body::Null => return false,
                _ => {}
            }
            // On the leaf; or, with no leaf yet, a root (no parent).
            let on_leaf = match self.leaf {
                Some(leaf) => {
                    e.parent.truthy() && r.by_id.get(&e.parent).is_some_and(|&p| p == leaf)
                }
                None => !e.parent.truthy(),
            };
            if e.id == Key::Null || Some(&e.id) == self.dangling.as_ref() || !on_leaf {
                return false;
            }
            if let Some(out) = view.emit(k) {
                if let Some(role) = out.role() {
                    *self.roles.entry(role.to_string()).or_insert(0) += 1;
                }
                order.push(k as u32);
            }
            self.leaf = Some(k as u32);
        }
        self.keys = r.by_id.len();
        self.keyed = r.keyed;
        true
    }
}

/// The conversation of the entries and the tail.
enum Resolved<'a> {
    /// The kept conversation (the tail holds no value).
    Kept(MutexGuard<'a, Option<Kept>>),
    /// Resolved again with the tail's value: entry numbers, compactions.
    Walked(Result<(Vec<u32>, u64), String>),
}

impl Resolved<'_> {
    /// The messages' entries and the compactions on the path, or why pi cannot
    /// resume the file.
    fn result(&self) -> Result<(&[u32], u64), &str> {
        match self {
            Resolved::Kept(k) => {
                let k = k.as_ref().expect("brought up to date");
                match &k.state {
                    Ok(g) => Ok((&k.order, g.compactions)),
                    Err(why) => Err(why),
                }
            }
            Resolved::Walked(Ok((order, compactions))) => Ok((order, *compactions)),
            Resolved::Walked(Err(why)) => Err(why),
        }
    }
}

impl PiReader {
    pub fn new() -> PiReader {
        PiReader::default()
    }

    fn version(&self) -> f64 {
        self.header.as_ref().map_or(3.0, |h| h.version)
    }

    /// Parses one line (without its `\n`) starting at absolute offset `abs`.
    /// Returns `None` for a blank line, `Some(None)` for one that is not JSON.
    /// `list` is advanced past the line.
    fn parse_line(
        &self,
        bytes: &[u8],
        abs: u64,
        trim_end: bool,
        list: &mut ListAcc,
    ) -> Option<Option<Parsed>> {
        let (text, lossless): (Cow<str>, bool) = match simdutf8::basic::from_utf8(bytes) {
            Ok(s) => (Cow::Borrowed(s), true),
            Err(_) => (String::from_utf8_lossy(bytes), false),
        };
        let mut t: &str = &text;
        if !self.started {
            t = t.trim_start_matches(is_js_ws);
        }
        if trim_end {
            t = t.trim_end_matches(is_js_ws);
        }
        if t.trim_matches(is_js_ws).is_empty() {
            return None;
        }
        let base = abs + offset_in(&text, t) as u64;
        let ctx = Ctx {
            line: t,
            base,
            lossless,
        };
        Some(parse_value(&ctx, list, self.header.is_none()))
    }

    /// Fixes ids the way pi's in-memory state has them (v1 migration) for the value
    /// that will sit at index `idx`.
    fn link(&self, e: &mut Entry, idx: u32) {
        // JS comparisons: a NaN version migrates nothing.
        let version = self.version();
        if let Body::Message(Some(m)) = &mut e.body
            && m.rename.is_some()
        {
            if version < 3.0 {
                // migrateV2ToV3: hookMessage → custom.
                m.role = Some("custom".into());
            } else {
                m.rename = None;
            }
        }
        let v1 = version < 2.0;
        if !v1 || matches!(e.body, Body::Session) || idx == 0 {
            return;
        }
        // migrateV1ToV2: fresh ids, each entry the child of the previous one.
        e.id = Key::Synth(idx);
        e.parent = match self.leaf {
            Some(p) => Key::Synth(p),
            None => Key::Null,
        };
        if let Body::Compaction(c) = &mut e.body {
            if let Some(i) = c.first_kept_index.take() {
                let target = (i >= 0.0 && i.fract() == 0.0 && i <= idx as f64).then_some(i as u32);
                let target = target.filter(|&t| {
                    t == idx
                        || !matches!(
                            self.entries.get(t as usize).map(|e| &e.body),
                            Some(Body::Session) | None
                        )
                });
                e_first_kept(c, target);
            } else {
                // The file's own firstKeptEntryId can never equal a fresh id.
                c.first_kept = Key::Unique;
            }
        }
    }

    fn push(&mut self, p: Parsed) {
        let idx = self.entries.len() as u32;
        let mut e = p.entry;
        if self.header.is_none() {
            self.header = Some(p.header.unwrap_or_default());
        }
        self.link(&mut e, idx);
        if !matches!(e.body, Body::Session) {
            if e.id.truthy() && e.id != Key::Unique {
                self.by_id.insert(e.id.clone(), idx);
                self.keyed += 1;
            }
            self.leaf = Some(idx);
        }
        self.entries.push(e);
    }

    /// The conversation: the kept one brought up to date when the tail holds no
    /// value (the usual case), else resolved again with it.
    fn resolved<'a>(&'a self, v: &View) -> Resolved<'a> {
        if v.extra.is_some() {
            return Resolved::Walked(v.resolve().map(|(out, compactions)| {
                (out.iter().map(|(i, _)| *i as u32).collect(), compactions)
            }));
        }
        let mut kept = self.resumed.lock();
        if let Some(k) = kept.as_mut()
            && k.covered < self.entries.len()
        {
            let Resumed {
                covered,
                order,
                state,
                ..
            } = k;
            let taken = match state {
                Ok(g) => g.take(self, *covered, order),
                Err(_) => false,
            };
            if taken {
                *covered = self.entries.len();
            } else {
                *kept = None;
            }
        }
        if kept.is_none() {
            let (order, state) = match v.resolve() {
                Ok((out, compactions)) => {
                    let mut roles = BTreeMap::new();
                    for (_, o) in &out {
                        if let Some(r) = o.role() {
                            *roles.entry(r.to_string()).or_insert(0) += 1;
                        }
                    }
                    let growth = Growth {
                        leaf: self.leaf,
                        dangling: v.dangling(),
                        keys: self.by_id.len(),
                        keyed: self.keyed,
                        compactions,
                        roles,
                    };
                    let order = out.iter().map(|(i, _)| *i as u32).collect();
                    (order, Ok(growth))
                }
                Err(why) => (Vec::new(), Err(why)),
            };
            *kept = Some(Resumed::new(self.entries.len(), order, state));
        }
        Resolved::Kept(kept)
    }

    /// The conversation `resolved` holds, as what it added to the one `since`
    /// marks when it is the kept one and `since` an earlier state of it.
    fn update_of(
        v: &View,
        resolved: &Resolved,
        since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        let render = |&i: &u32| {
            v.message_of(i as usize)
                .map(|o| o.pieces())
                .unwrap_or_default()
        };
        match resolved {
            Resolved::Kept(k) => {
                let k = k.as_ref().expect("brought up to date");
                match &k.state {
                    Ok(_) => (k.update(since, render), Some(k.mark())),
                    Err(_) => (ConversationUpdate::Whole(Vec::new()), None),
                }
            }
            Resolved::Walked(r) => {
                let order = r.as_ref().map(|(o, _)| o.as_slice()).unwrap_or_default();
                (
                    ConversationUpdate::Whole(order.iter().map(render).collect()),
                    None,
                )
            }
        }
    }

    /// The facts of the file with `tail` (its unterminated rest) read as pi would:
    /// pi reads the whole file, so a complete JSON value without its `\n` counts.
    fn with_tail(&self, tail: &[u8]) -> View<'_> {
        let mut view = View {
            r: self,
            header: self.header.clone(),
            list: self.list.clone(),
            extra: None,
            extra_kind: Kind::None,
        };
        if let Some(parsed) = self.parse_line(tail, self.end, true, &mut view.list) {
            match parsed {
                None => view.extra_kind = Kind::Malformed,
                Some(p) => {
                    view.extra_kind = p.kind;
                    if view.header.is_none() {
                        view.header = Some(p.header.clone().unwrap_or_default());
                    }
                    let mut e = p.entry;
                    // Link as if pushed.
                    let idx = self.entries.len() as u32;
                    if self.header.is_some() {
                        self.link(&mut e, idx);
                    }
                    view.extra = Some(e);
                }
            }
        }
        view
    }
}

const BRANCH_SUMMARY_KEYS: &[&str] = &["summary", "fromId"];
const CUSTOM_MESSAGE_KEYS: &[&str] = &["customType", "content", "display", "details"];

// A saved state (`save_state`): borsh has no `usize` and no `&'static` data.
fn ser_span<W: std::io::Write>(v: &Option<(usize, usize)>, w: &mut W) -> std::io::Result<()> {
    borsh::BorshSerialize::serialize(&v.map(|(a, b)| (a as u64, b as u64)), w)
}

fn de_span<R: std::io::Read>(r: &mut R) -> std::io::Result<Option<(usize, usize)>> {
    let v: Option<(u64, u64)> = borsh::BorshDeserialize::deserialize_reader(r)?;
    Ok(v.map(|(a, b)| (a as usize, b as usize)))
}

fn ser_keys<W: std::io::Write>(keys: &&'static [&'static str], w: &mut W) -> std::io::Result<()> {
    borsh::BorshSerialize::serialize(&u8::from(*keys == CUSTOM_MESSAGE_KEYS), w)
}

fn de_keys<R: std::io::Read>(r: &mut R) -> std::io::Result<&'static [&'static str]> {
    match <u8 as borsh::BorshDeserialize>::deserialize_reader(r)? {
        0 => Ok(BRANCH_SUMMARY_KEYS),
        1 => Ok(CUSTOM_MESSAGE_KEYS),
        _ => Err(std::io::Error::other("unknown field set")),
    }
}

fn e_first_kept(c: &mut Compaction, target: Option<u32>) {
    c.first_kept = match target {
        Some(t) => Key::Synth(t),
        None => Key::Unique,
    };
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    None,
    Object,
    Null,
    Primitive,
    Array,
    Malformed,
}

struct Parsed {
    entry: Entry,
    kind: Kind,
    /// The header facts, when this is the file's first value.
    header: Option<Header>,
}

struct Ctx<'a> {
    line: &'a str,
    base: u64,
    lossless: bool,
}

impl Ctx<'_> {
    fn raw(&self, v: &RawValue) -> Raw {
        let s = v.get();
        if self.lossless {
            Raw::Range {
                start: self.base + offset_in(self.line, s) as u64,
                len: s.len() as u64,
            }
        } else {
            Raw::Owned(s.into())
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

/// A JSON string's value (borrowed when it has no escapes); lone surrogates, which
/// JSON.parse keeps, become U+FFFD.
fn js_str(v: &RawValue) -> Option<Cow<'_, str>> {
    let t = v.get();
    let inner = t.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    if let Ok(s) = serde_json::from_str::<String>(t) {
        return Some(Cow::Owned(s));
    }
    serde_json::from_str::<String>(&replace_surrogate_escapes(t))
        .ok()
        .map(Cow::Owned)
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_ws)
}

/// `new Date(value).getTime()` for a JSON value (`None` = NaN).
fn js_date(v: Option<&RawValue>) -> Option<f64> {
    let v = v?;
    match v.get().as_bytes().first()? {
        b'n' => Some(0.0),
        b't' => Some(1.0),
        b'f' => Some(0.0),
        b'"' => parse_date(&js_str(v)?),
        b'{' | b'[' => None,
        _ => time_clip(v.get().parse().ok()?),
    }
}

fn time_clip(n: f64) -> Option<f64> {
    (n.is_finite() && n.abs() <= 8.64e15).then(|| n.trunc() + 0.0)
}

/// The ISO forms JS's `Date` parses (a date-time without offset is taken as UTC here;
/// JS would take local time).
fn parse_date(s: &str) -> Option<f64> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let s = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return time_clip(d.timestamp_millis() as f64);
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(s, fmt) {
            return time_clip(d.and_utc().timestamp_millis() as f64);
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return time_clip(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis() as f64);
    }
    None
}

/// `Date.prototype.toISOString()`.
fn iso(ms: f64) -> Option<String> {
    let d = chrono::DateTime::from_timestamp_millis(ms as i64)?;
    Some(d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

fn js_number_text(ms: Option<f64>) -> String {
    match ms {
        Some(n) => format!("{}", n as i64),
        None => "null".into(),
    }
}

/// JS truthiness of a JSON value.
fn js_truthy(v: Option<&RawValue>) -> bool {
    let Some(v) = v else { return false };
    let t = v.get();
    match t.as_bytes().first() {
        Some(b'n' | b'f') | None => false,
        Some(b't' | b'{' | b'[') => true,
        Some(b'"') => t.len() > 2,
        _ => t.parse::<f64>().map(|n| n != 0.0).unwrap_or(true),
    }
}

/// `String(value)` as `Array.prototype.join` applies it (null becomes "").
fn js_join_string(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", f as i128),
            Some(f) => format!("{f}"),
            None => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(js_join_string).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// `extractTextContent`: `Err` where pi throws (content neither string nor array, or a
/// null block).
fn extract_text(content: &RawValue) -> Result<String, ()> {
    let t = content.get();
    match t.as_bytes().first() {
        Some(b'"') => js_str(content).map(|s| s.into_owned()).ok_or(()),
        Some(b'[') => {
            let blocks: Vec<&RawValue> = serde_json::from_str(t).map_err(|_| ())?;
            let mut parts = Vec::new();
            for b in blocks {
                match b.get().as_bytes().first() {
                    Some(b'n') => return Err(()),
                    Some(b'{') => {
                        let Ok(obj) = RawObject::parse(b.get()) else {
                            continue;
                        };
                        if field(&obj, "type").and_then(js_str).as_deref() != Some("text") {
                            continue;
                        }
                        let text = match field(&obj, "text") {
                            None => String::new(),
                            Some(v) if v.get().starts_with('"') => {
                                js_str(v).unwrap_or_default().into_owned()
                            }
                            Some(v) => serde_json::from_str(v.get())
                                .map(|v| js_join_string(&v))
                                .unwrap_or_default(),
                        };
                        parts.push(text);
                    }
                    _ => {}
                }
            }
            Ok(parts.join(" "))
        }
        _ => Err(()),
    }
}

/// Parses one non-blank line's text; `None` when JSON.parse would refuse it.
fn parse_value(ctx: &Ctx, list: &mut ListAcc, first: bool) -> Option<Parsed> {
    let text = ctx.line;
    let obj = match RawObject::parse(text) {
        Ok(o) => Some(o),
        Err(_) => {
            // Not an object, or an object whose keys hold lone surrogates.
            serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
            None
        }
    };
    let lead = text.trim_start_matches([' ', '\t', '\r', '\n']);
    let kind = match (&obj, lead.as_bytes().first()) {
        (Some(_), _) | (None, Some(b'{')) => Kind::Object,
        (None, Some(b'n')) => Kind::Null,
        (None, Some(b'[')) => Kind::Array,
        _ => Kind::Primitive,
    };
    let mut header = None;
    let mut entry = Entry {
        id: Key::Undef,
        parent: Key::Undef,
        time: None,
        body: match kind {
            Kind::Null => Body::Null,
            Kind::Primitive => Body::Primitive,
            _ => Body::Other,
        },
    };
    if kind == Kind::Null {
        list.throws = true;
    }
    let ty = obj.as_ref().and_then(|o| field(o, "type")).and_then(js_str);
    if first {
        let mut h = Header {
            version: 1.0,
            ..Header::default()
        };
        if let Some(o) = &obj
            && ty.as_deref() == Some("session")
        {
            h.listable = true;
            h.id = field(o, "id").and_then(js_str).map(Cow::into_owned);
            h.openable = h.id.is_some() && field(o, "id").is_some_and(|v| v.get().starts_with('"'));
            h.cwd = field(o, "cwd").and_then(js_str).map(Cow::into_owned);
            h.created = js_date(field(o, "timestamp"));
            h.version = match field(o, "version") {
                None => 1.0,
                Some(v) => js_version(v),
            };
        }
        header = Some(h);
    }
    let Some(o) = obj else {
        return Some(Parsed {
            entry,
            kind,
            header,
        });
    };
    entry.id = Key::of(field(&o, "id"));
    entry.parent = Key::of(field(&o, "parentId"));
    entry.time = js_date(field(&o, "timestamp"));
    let raw = |k: &str| field(&o, k).map(|v| ctx.raw(v));
    match ty.as_deref() {
        Some("session") => entry.body = Body::Session,
        Some("message") => {
            let m = field(&o, "message").filter(|v| v.get() != "null");
            // Parsed once, for the entry and for the listing.
            let mobj = m
                .filter(|v| v.get().starts_with('{'))
                .and_then(|v| RawObject::parse(v.get()).ok());
            entry.body = Body::Message(m.map(|v| {
                let role_v = mobj.as_ref().and_then(|m| field(m, "role"));
                let role = role_v
                    .and_then(js_str)
                    .map(|r| Box::<str>::from(r.as_ref()));
                let rename = match (&role, role_v) {
                    (Some(r), Some(rv)) if &**r == "hookMessage" => {
                        Some((offset_in(v.get(), rv.get()), rv.get().len()))
                    }
                    _ => None,
                };
                Box::new(Msg {
                    raw: ctx.raw(v),
                    role,
                    rename,
                })
            }));
            list_message(list, m, mobj.as_ref(), field(&o, "timestamp"));
        }
        Some("compaction") => {
            entry.body = Body::Compaction(Box::new(Compaction {
                summary: raw("summary"),
                tokens_before: raw("tokensBefore"),
                first_kept: Key::of(field(&o, "firstKeptEntryId")),
                first_kept_index: field(&o, "firstKeptEntryIndex")
                    .and_then(|v| v.get().parse().ok()),
            }))
        }
        Some("branch_summary") => {
            entry.body = Body::BranchSummary(Box::new(Fields {
                keys: BRANCH_SUMMARY_KEYS,
                values: vec![raw("summary"), raw("fromId")],
                truthy: js_truthy(field(&o, "summary")),
            }))
        }
        Some("custom_message") => {
            let keys = CUSTOM_MESSAGE_KEYS;
            entry.body = Body::CustomMessage(Box::new(Fields {
                keys,
                values: keys.iter().map(|k| raw(k)).collect(),
                truthy: true,
            }))
        }
        Some("session_info") => match field(&o, "name") {
            None => list.name = None,
            Some(v) if v.get() == "null" => list.name = None,
            Some(v) => match js_str(v) {
                Some(s) => list.name = Some(js_trim(&s).to_string()).filter(|s| !s.is_empty()),
                // `name?.trim()` on a non-string throws.
                None => list.throws = true,
            },
        },
        _ => {}
    }
    Some(Parsed {
        entry,
        kind,
        header,
    })
}

/// The header's `version` as JS's `<`/`>=` would coerce it (NaN: no migration).
fn js_version(v: &RawValue) -> f64 {
    let t = v.get();
    match t.as_bytes().first() {
        Some(b'n') => 1.0, // `?? 1`
        Some(b't') => 1.0,
        Some(b'f') => 0.0,
        Some(b'"') => {
            let s = js_str(v).unwrap_or_default();
            let s = js_trim(&s);
            if s.is_empty() {
                0.0
            } else {
                s.parse().unwrap_or(f64::NAN)
            }
        }
        Some(b'{' | b'[') => f64::NAN,
        _ => t.parse().unwrap_or(f64::NAN),
    }
}

/// `buildSessionInfo`'s and `getLastActivityTime`'s look at one `message` entry.
/// `m` is the entry's `message` (not null), `obj` its fields when it is an object.
fn list_message(
    list: &mut ListAcc,
    m: Option<&RawValue>,
    obj: Option<&RawObject>,
    entry_ts: Option<&RawValue>,
) {
    if m.is_none() {
        // `message.role` on undefined/null throws.
        list.throws = true;
        return;
    }
    let Some(obj) = obj else {
        return;
    };
    let Some(role) = field(obj, "role").and_then(js_str) else {
        return;
    };
    let Some(content) = field(obj, "content") else {
        return;
    };
    if role != "user" && role != "assistant" {
        return;
    }
    match extract_text(content) {
        Err(()) => list.throws = true,
        Ok(text) => {
            if !text.is_empty() && list.first_message.is_none() && role == "user" {
                list.first_message = Some(text);
            }
        }
    }
    let ts = field(obj, "timestamp");
    let t = match ts {
        Some(v)
            if !matches!(
                v.get().as_bytes().first(),
                Some(b'"' | b'{' | b'[' | b'n' | b't' | b'f')
            ) =>
        {
            v.get().parse::<f64>().ok()
        }
        _ => match entry_ts {
            Some(v) if v.get().starts_with('"') => js_str(v).and_then(|s| parse_date(&s)),
            _ => None,
        },
    };
    if let Some(t) = t {
        list.last_activity = Some(list.last_activity.unwrap_or(0.0).max(t));
    }
}

/// The reader's state plus the tail's value, as pi sees the whole file.
struct View<'a> {
    r: &'a PiReader,
    header: Option<Header>,
    list: ListAcc,
    extra: Option<Entry>,
    extra_kind: Kind,
}

/// One message of the resumed context.
enum Out<'a> {
    Stored(&'a Msg),
    Compaction(&'a Compaction, Option<f64>),
    Synth(&'static str, &'a Fields, Option<f64>),
}

impl View<'_> {
    fn len(&self) -> usize {
        self.r.entries.len() + usize::from(self.extra.is_some())
    }

    fn get(&self, i: usize) -> &Entry {
        match self.r.entries.get(i) {
            Some(e) => e,
            None => self.extra.as_ref().expect("index within len"),
        }
    }

    fn lookup(&self, k: &Key) -> Option<usize> {
        if let Some(e) = &self.extra
            && !matches!(e.body, Body::Session)
            && &e.id == k
        {
            return Some(self.r.entries.len());
        }
        self.r.by_id.get(k).map(|&i| i as usize)
    }

    fn leaf(&self) -> Option<usize> {
        match &self.extra {
            Some(e) if !matches!(e.body, Body::Session) => Some(self.r.entries.len()),
            _ => self.r.leaf.map(|i| i as usize),
        }
    }

    fn version(&self) -> f64 {
        self.header.as_ref().map_or(3.0, |h| h.version)
    }

    /// The parent the root of the leaf's path names when no entry has it.
    fn dangling(&self) -> Option<Key> {
        let mut cur = self.leaf()?;
        for _ in 0..=self.len() {
            let p = &self.get(cur).parent;
            if !p.truthy() {
                return None;
            }
            match self.lookup(p) {
                Some(next) => cur = next,
                None => return Some(p.clone()),
            }
        }
        None
    }

    /// Why `SessionManager.open` + `buildSessionContext` would not give this file's
    /// conversation, or the messages it gives.
    fn resolve<'s>(&'s self) -> Result<(Vec<(usize, Out<'s>)>, u64), String> {
        let Some(h) = &self.header else {
            return Err(
                "the file holds no JSON line, so pi would start a new session over it".into(),
            );
        };
        if let Some(n) = self
            .r
            .null_line
            .or((self.extra_kind == Kind::Null).then_some(self.r.lines + 1))
        {
            return Err(format!(
                "line {n} is JSON null, on which pi's session loader throws"
            ));
        }
        if !h.openable {
            return Err("the first JSON line is not a session header with a string id, so pi would start a new session over the file".into());
        }
        if self.version() < 2.0 {
            let prim = self
                .r
                .primitive_line
                .or((self.extra_kind == Kind::Primitive).then_some(self.r.lines + 1));
            if let Some(n) = prim {
                return Err(format!(
                    "line {n} is not a JSON object, on which pi's version 1 migration throws"
                ));
            }
        }
        let Some(leaf) = self.leaf() else {
            return Ok((Vec::new(), 0));
        };
        if self.get(leaf).id == Key::Null {
            // `_buildIndex` leaves leafId null: buildSessionContext returns nothing.
            return Ok((Vec::new(), 0));
        }
        // Walk leaf → root as pi does; a loop would make pi spin forever.
        let mut path = vec![leaf];
        let mut cur = leaf;
        loop {
            let p = &self.get(cur).parent;
            if !p.truthy() {
                break;
            }
            let Some(next) = self.lookup(p) else { break };
            if path.len() > self.len() {
                return Err("the entries' parent links form a loop, on which pi hangs".into());
            }
            path.push(next);
            cur = next;
        }
        path.reverse();
        let mut compaction = None;
        for (pos, &i) in path.iter().enumerate() {
            match &self.get(i).body {
                Body::Message(None) => {
                    return Err(
                        "an entry on the resumed path has no message, on which pi throws".into(),
                    );
                }
                Body::Compaction(_) => compaction = Some(pos),
                _ => {}
            }
        }
        let compactions = path
            .iter()
            .filter(|&&i| matches!(self.get(i).body, Body::Compaction(_)))
            .count() as u64;
        let mut out: Vec<(usize, Out<'s>)> = Vec::new();
        let push =
            |out: &mut Vec<(usize, Out<'s>)>, i: usize| out.extend(self.emit(i).map(|o| (i, o)));
        match compaction {
            None => path.iter().for_each(|&i| push(&mut out, i)),
            Some(last) => {
                let ce = self.get(path[last]);
                let Body::Compaction(c) = &ce.body else {
                    unreachable!()
                };
                out.push((path[last], Out::Compaction(c, ce.time)));
                // findIndex: the first compaction on the path with the same id.
                let same = |pos: usize| {
                    let e = self.get(path[pos]);
                    matches!(e.body, Body::Compaction(_))
                        && js_eq(&e.id, path[pos], &ce.id, path[last])
                };
                let idx = (0..path.len()).find(|&p| same(p)).unwrap_or(last);
                let mut found = false;
                for &i in &path[..idx] {
                    if js_eq(&self.get(i).id, i, &c.first_kept, usize::MAX) {
                        found = true;
                    }
                    if found {
                        push(&mut out, i);
                    }
                }
                path[idx + 1..].iter().for_each(|&i| push(&mut out, i));
            }
        }
        Ok((out, compactions))
    }
}

impl View<'_> {
    /// `appendMessage` of buildSessionContext: what entry `i` adds to the context.
    fn emit(&self, i: usize) -> Option<Out<'_>> {
        let e = self.get(i);
        match &e.body {
            Body::Message(Some(m)) => Some(Out::Stored(m)),
            Body::CustomMessage(f) => Some(Out::Synth("custom", f, e.time)),
            Body::BranchSummary(f) if f.truthy => Some(Out::Synth("branchSummary", f, e.time)),
            _ => None,
        }
    }

    /// The message entry `i` stands for anywhere in the file (a compaction's is its
    /// summary message).
    fn message_of(&self, i: usize) -> Option<Out<'_>> {
        let e = self.get(i);
        match &e.body {
            Body::Compaction(c) => Some(Out::Compaction(c, e.time)),
            _ => self.emit(i),
        }
    }
}

/// `a === b` for two ids (objects are only equal to themselves, i.e. the same entry).
fn js_eq(a: &Key, ai: usize, b: &Key, bi: usize) -> bool {
    match (a, b) {
        (Key::Unique, Key::Unique) => ai == bi,
        (Key::Unique, _) | (_, Key::Unique) => false,
        (Key::Num(x), Key::Num(y)) => f64::from_bits(*x) == f64::from_bits(*y),
        _ => a == b,
    }
}

impl Out<'_> {
    fn role(&self) -> Option<&str> {
        match self {
            Out::Stored(m) => m.role.as_deref(),
            Out::Compaction(..) => Some("compactionSummary"),
            Out::Synth(r, ..) => Some(r),
        }
    }

    fn pieces(&self) -> MessagePieces {
        match self {
            Out::Stored(m) => match (m.rename, &m.raw) {
                (None, raw) => vec![raw.piece()],
                (Some((at, len)), Raw::Range { start, len: total }) => vec![
                    Piece::Range {
                        start: *start,
                        len: at as u64,
                    },
                    Piece::Text("\"custom\"".into()),
                    Piece::Range {
                        start: start + (at + len) as u64,
                        len: total.saturating_sub((at + len) as u64),
                    },
                ],
                (Some((at, len)), Raw::Owned(s)) => {
                    let s: &str = s;
                    vec![Piece::Text(format!(
                        "{}\"custom\"{}",
                        &s[..at],
                        &s[at + len..]
                    ))]
                }
            },
            Out::Compaction(c, time) => {
                let f = [("summary", &c.summary), ("tokensBefore", &c.tokens_before)];
                synth("compactionSummary", f.into_iter(), *time)
            }
            Out::Synth(role, f, time) => {
                synth(role, f.keys.iter().copied().zip(f.values.iter()), *time)
            }
        }
    }
}

/// `{"role":...,<present fields>,"timestamp":ms}`: JSON.stringify drops undefined keys.
fn synth<'a>(
    role: &str,
    fields: impl Iterator<Item = (&'a str, &'a Option<Raw>)>,
    time: Option<f64>,
) -> MessagePieces {
    let mut out = Vec::new();
    let mut text = format!("{{\"role\":\"{role}\"");
    for (k, v) in fields {
        let Some(v) = v else { continue };
        text.push_str(&format!(",\"{k}\":"));
        out.push(Piece::Text(std::mem::take(&mut text)));
        out.push(v.piece());
    }
    text.push_str(&format!(",\"timestamp\":{}}}", js_number_text(time)));
    out.push(Piece::Text(text));
    out
}

impl ForeignReader for PiReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut pos = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
            let line = &bytes[pos..pos + nl];
            let abs = offset + pos as u64;
            pos += nl + 1;
            self.lines += 1;
            let mut list = std::mem::take(&mut self.list);
            let parsed = self.parse_line(line, abs, false, &mut list);
            self.list = list;
            let Some(parsed) = parsed else { continue };
            self.started = true;
            let Some(p) = parsed else {
                self.malformed += 1;
                continue;
            };
            match p.kind {
                Kind::Object => self.json_entries += 1,
                Kind::Null => {
                    self.malformed += 1;
                    self.null_line.get_or_insert(self.lines);
                }
                Kind::Primitive => {
                    self.malformed += 1;
                    self.primitive_line.get_or_insert(self.lines);
                }
                _ => self.malformed += 1,
            }
            self.push(p);
        }
        self.end = offset + pos as u64;
        pos as u64
    }

    fn summary(&self, tail: &[u8]) -> ForeignSummary {
        let v = self.with_tail(tail);
        let resolved = self.resolved(&v);
        self.summary_of(&v, &resolved)
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.conversation_since(tail, None).0.apply(&[])
    }

    fn summary_and_conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ForeignSummary, ConversationUpdate, Option<ConversationMark>) {
        let v = self.with_tail(tail);
        let resolved = self.resolved(&v);
        let (update, mark) = Self::update_of(&v, &resolved, since);
        (self.summary_of(&v, &resolved), update, mark)
    }

    fn conversation_since(
        &self,
        tail: &[u8],
        since: Option<ConversationMark>,
    ) -> (ConversationUpdate, Option<ConversationMark>) {
        let v = self.with_tail(tail);
        let resolved = self.resolved(&v);
        Self::update_of(&v, &resolved, since)
    }

    /// Entry ids are pi's entry ids (none for a version 1 file, whose ids pi makes up
    /// when it migrates it), times the entries'. With `history`: every entry that
    /// stands for a message, in file order, other branches and compacted ones
    /// included.
    fn messages(&self, tail: &[u8], history: bool) -> Vec<MessageRef> {
        let v = self.with_tail(tail);
        let resolved = self.resolved(&v);
        let conversation = resolved.result().map_or(&[][..], |(order, _)| order);
        let refer = |i: usize, o: &Out, in_conversation: bool| {
            let e = v.get(i);
            MessageRef {
                pieces: o.pieces(),
                entry: match &e.id {
                    Key::Str(s) => Some(s.to_string()),
                    Key::Num(bits) => Some(format!("{}", f64::from_bits(*bits))),
                    _ => None,
                },
                timestamp: e.time.and_then(iso),
                in_conversation,
                ..MessageRef::default()
            }
        };
        let message = |i: u32| v.message_of(i as usize).expect("a message's entry");
        if !history {
            return conversation
                .iter()
                .map(|&i| refer(i as usize, &message(i), true))
                .collect();
        }
        let mut kept = vec![false; v.len()];
        for &i in conversation {
            kept[i as usize] = true;
        }
        (0..v.len())
            .filter_map(|i| Some(refer(i, &v.message_of(i)?, kept[i])))
            .collect()
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        crate::sources::foreign::save_borsh(self)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        if !crate::sources::foreign::restore_borsh(self, state) {
            return false;
        }
        // As `push` filled it, entry by entry.
        for (idx, e) in self.entries.iter().enumerate() {
            if !matches!(e.body, Body::Session) && e.id.truthy() && e.id != Key::Unique {
                self.by_id.insert(e.id.clone(), idx as u32);
                self.keyed += 1;
            }
        }
        true
    }
}

impl PiReader {
    /// The summary of the view `v`, given its conversation.
    fn summary_of(&self, v: &View, resolved: &Resolved) -> ForeignSummary {
        let mut s = ForeignSummary {
            entries: self.json_entries + u64::from(v.extra_kind == Kind::Object),
            malformed_lines: self.malformed
                + u64::from(matches!(
                    v.extra_kind,
                    Kind::Malformed | Kind::Null | Kind::Primitive | Kind::Array
                )),
            ..ForeignSummary::default()
        };
        if let Some(h) = &v.header {
            s.id = h.id.clone().filter(|_| h.listable).unwrap_or_default();
            s.cwd = h.cwd.clone().filter(|_| h.listable);
            s.created_at = h.created.filter(|_| h.listable).and_then(iso);
            s.listed = h.listable && !v.list.throws;
            let activity = v.list.last_activity.filter(|&t| t > 0.0);
            s.updated_at = activity.or(h.created).filter(|_| h.listable).and_then(iso);
        }
        s.title = v.list.name.clone();
        s.preview = v.list.first_message.as_deref().map(|m| {
            let m: String = m
                .chars()
                .map(|c| {
                    if c <= '\u{1f}' || c == '\u{7f}' {
                        ' '
                    } else {
                        c
                    }
                })
                .collect();
            js_trim(&m).to_string()
        });
        match resolved.result() {
            Ok((order, compactions)) => {
                s.resumable = true;
                s.messages = order.len() as u64;
                s.compactions = compactions;
                s.roles = match resolved {
                    Resolved::Kept(k) => match k.as_ref().map(|k| &k.state) {
                        Some(Ok(g)) => g.roles.clone(),
                        _ => BTreeMap::new(),
                    },
                    Resolved::Walked(_) => {
                        let mut roles = BTreeMap::new();
                        for &i in order {
                            if let Some(r) = v
                                .message_of(i as usize)
                                .and_then(|o| o.role().map(str::to_string))
                            {
                                *roles.entry(r).or_insert(0) += 1;
                            }
                        }
                        roles
                    }
                };
            }
            Err(why) => s.not_resumable_reason = Some(why.to_string()),
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(t: &str) -> Box<RawValue> {
        RawValue::from_string(t.to_string()).unwrap()
    }

    #[test]
    fn dates_as_js_date_reads_them() {
        let ms = |t: &str| js_date(Some(&raw(t)));
        assert_eq!(ms(r#""2026-01-01T00:00:01.500Z""#), Some(1767225601500.0));
        assert_eq!(ms(r#""2026-01-01T01:00:00+01:00""#), Some(1767225600000.0));
        assert_eq!(ms(r#""2026-01-01""#), Some(1767225600000.0));
        assert_eq!(ms(r#""yesterday""#), None);
        assert_eq!(ms("null"), Some(0.0));
        assert_eq!(ms("12.9"), Some(12.0));
        assert_eq!(ms("1e300"), None);
        assert_eq!(js_date(None), None);
        assert_eq!(
            iso(1767225601500.0).as_deref(),
            Some("2026-01-01T00:00:01.500Z")
        );
    }

    #[test]
    fn js_values() {
        for (t, want) in [
            ("\"\"", false),
            ("\"a\"", true),
            ("0", false),
            ("-0.0", false),
            ("2", true),
            ("[]", true),
            ("null", false),
        ] {
            assert_eq!(js_truthy(Some(&raw(t))), want, "{t}");
        }
        assert!(!Key::of(Some(&raw("0"))).truthy());
        assert_eq!(Key::of(Some(&raw("-0"))), Key::of(Some(&raw("0"))));
        assert_eq!(Key::of(Some(&raw(r#""a\u0062""#))), Key::Str("ab".into()));
        assert_eq!(
            replace_surrogate_escapes(r#""\\ud800\ud800é""#),
            r#""\\ud800\uFFFDé""#
        );
        assert_eq!(js_str(&raw(r#""x\ud800""#)).as_deref(), Some("x\u{fffd}"));
        assert_eq!(js_version(&raw("\" 2 \"")), 2.0);
        assert!(js_version(&raw("\"x\"")).is_nan());
    }

    #[test]
    fn hook_message_is_renamed_in_place() {
        let file = "{\"type\":\"session\",\"version\":2,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"hookMessage\",\"content\":\"x\"}}\n";
        let mut r = PiReader::new();
        let n = r.feed(0, file.as_bytes());
        assert_eq!(n as usize, file.len());
        let conv = r.conversation(b"");
        let out = crate::sources::foreign::render_message(&conv[0], file.as_bytes());
        assert_eq!(out, br#"{"role":"custom","content":"x"}"#);
        assert_eq!(r.summary(b"").roles.get("custom"), Some(&1));
    }
}
