//! `fen-fs fsck`: checks transcripts, changes nothing.
//!
//! [`check_file`] reads one transcript (read-only, `O_NOFOLLOW`, under a shared
//! `flock` so that an append in progress is not mistaken for a torn line) and returns
//! a [`Report`]; [`check_store`] checks a store, or one session, and returns the
//! reports as a value that the command prints.
//!
//! Lines are classified exactly as readers do (`store::index`'s `parse_at`): a BOM
//! on line 1, a `\r` before the `\n` and trailing blanks are accepted, blank lines are
//! skipped, a run of NUL bytes counts as one malformed line and whatever follows it on
//! the same line is parsed. So a file's malformed lines plus its torn tail are exactly
//! what `meta.json` reports as `malformed_lines`.
//!
//! The file is streamed line by line; memory is one line plus, per entry with an id,
//! a 128-bit key and a line number (for duplicate ids, forks and compactions).

#[cfg(feature = "full")]
pub mod kept;

use crate::error::{Error, Result};
use crate::json::{RawObject, as_string, is_null};
use crate::store::Store;
use crate::store::ids::id_key;
use crate::store::line::{Body, CompactionFields, Line, parse_line};
use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

/// Lines longer than this are not parsed (reported as [`ProblemKind::TooLong`]), so a
/// file of garbage without newlines cannot make fsck load it whole.
pub const MAX_LINE_BYTES: usize = crate::store::index::MAX_LINE;

/// How long to wait for a writer's exclusive `flock` before checking without it.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// What the `parent-id` field of an entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParentRef {
    Absent,
    Null,
    Id(String),
    /// Present but neither a string nor null.
    NotString,
}

/// The entry before the one whose `parent-id` is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// None: this is the first entry, whose `parent-id` must be null.
    Nothing,
    Entry {
        id: String,
        line: u64,
    },
    /// An entry without an id (itself reported).
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// Not a JSON object with a string `type` (or a `message` without a role, invalid
    /// UTF-8, a run of NUL bytes): readers skip the line.
    Malformed(String),
    /// The file's last bytes have no `\n`: a torn write; readers skip them.
    TornTail {
        bytes: u64,
    },
    /// A line over [`MAX_LINE_BYTES`]: not checked.
    TooLong {
        bytes: u64,
    },
    /// Line 1 is not a `{"type":"session",…}` header (and no header precedes the first
    /// entry). `ids`: the entries carry ids, so they were checked as version 2.
    MissingHeader {
        ids: bool,
    },
    /// A session header after the first one, or after entries: readers ignore it.
    StrayHeader,
    /// Not a problem: a version-1 transcript, whose entries have no ids, so the
    /// `parent-id` chain is not checked.
    Version1,
    /// A version-2 entry without a string `id`.
    MissingId,
    /// `parent-id` is not the id of the entry before it (`before`); `names_line`: the
    /// line of the earlier entry `parent-id` does name, if any.
    BrokenChain {
        found: ParentRef,
        before: Before,
        names_line: Option<u64>,
    },
    /// Another entry (on `other_line`) has the same `parent-id` (`None`: null).
    Fork {
        parent: Option<String>,
        other_line: u64,
    },
    DuplicateId {
        id: String,
        first_line: u64,
    },
    /// The id is not greater than the id of the entry before it.
    IdNotIncreasing {
        id: String,
        previous: String,
        previous_line: u64,
    },
    /// A compaction §3 ignores, and why.
    IgnoredCompaction(String),
}

impl ProblemKind {
    /// Notes are reported but are not problems (they do not fail fsck).
    pub fn is_note(&self) -> bool {
        matches!(self, ProblemKind::Version1)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number.
    pub line: u64,
    pub kind: ProblemKind,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Lines, counting a torn tail.
    pub lines: u64,
    /// Lines that parsed as entries (not the header, not malformed).
    pub entries: u64,
    /// The header's version, if there is a header.
    pub version: Option<u64>,
    /// Problems and notes, by line.
    pub problems: Vec<Problem>,
}

impl Report {
    /// Problems, not counting notes.
    pub fn problem_count(&self) -> usize {
        self.problems.iter().filter(|p| !p.kind.is_note()).count()
    }

    pub fn note_count(&self) -> usize {
        self.problems.len() - self.problem_count()
    }

    pub fn is_clean(&self) -> bool {
        self.problem_count() == 0
    }

    pub fn kinds(&self) -> Vec<(u64, &ProblemKind)> {
        self.problems.iter().map(|p| (p.line, &p.kind)).collect()
    }
}

/// Checks one transcript file. Never writes: the file is opened read-only with
/// `O_NOFOLLOW` (a symbolic link is an error) and must be a regular file.
pub fn check_file(path: &Path) -> Result<Report> {
    let (file, _) = crate::store::open::open_regular(path)?;
    // A shared lock, so a writer (which appends under an exclusive one) is never
    // caught half-way; a writer that holds it longer than LOCK_WAIT only risks a
    // torn tail being reported that is really an append in progress.
    let _lock = crate::store::lock::FileLock::shared_within(&file, LOCK_WAIT);
    check_reader(BufReader::with_capacity(256 << 10, &file), MAX_LINE_BYTES)
        .map_err(|e| Error::io(path.display(), &e))
}

/// Checks a transcript read from `reader`; lines over `max_line` bytes are skipped.
pub fn check_reader<R: BufRead>(mut reader: R, max_line: usize) -> std::io::Result<Report> {
    let mut checker = Checker::default();
    let mut raw = RawLine::default();
    while read_line(&mut reader, &mut raw, max_line)? {
        checker.lineno += 1;
        if raw.terminated {
            checker.line(&raw);
        } else {
            let bytes = raw.total();
            checker.push(ProblemKind::TornTail { bytes });
        }
    }
    Ok(checker.finish())
}

/// One line as read: a leading run of NUL bytes is counted, not stored.
#[derive(Default)]
struct RawLine {
    leading_nuls: u64,
    bytes: Vec<u8>,
    /// Bytes beyond the line limit, not stored.
    dropped: u64,
    terminated: bool,
}

impl RawLine {
    fn total(&self) -> u64 {
        self.leading_nuls + self.bytes.len() as u64 + self.dropped
    }
}

/// Like `read_until(b'\n')` but bounded: returns false at end of file.
fn read_line<R: BufRead>(r: &mut R, out: &mut RawLine, max: usize) -> std::io::Result<bool> {
    out.leading_nuls = 0;
    out.bytes.clear();
    out.dropped = 0;
    out.terminated = false;
    let mut any = false;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let newline = memchr::memchr(b'\n', chunk);
        let mut seg = &chunk[..newline.unwrap_or(chunk.len())];
        let used = seg.len() + newline.is_some() as usize;
        if out.bytes.is_empty() && out.dropped == 0 {
            let nuls = seg.iter().take_while(|&&b| b == 0).count();
            out.leading_nuls += nuls as u64;
            seg = &seg[nuls..];
        }
        let take = seg.len().min(max.saturating_sub(out.bytes.len()));
        out.bytes.extend_from_slice(&seg[..take]);
        out.dropped += (seg.len() - take) as u64;
        r.consume(used);
        if newline.is_some() {
            out.terminated = true;
            return Ok(true);
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Mode {
    /// No header and no entry yet.
    #[default]
    Undecided,
    /// Version 1: entries have no ids; the chain is not checked.
    V1,
    V2,
}

/// The entry before the current one, for the `parent-id` chain.
#[derive(Default)]
enum Prev {
    #[default]
    Start,
    Known {
        id: String,
        key: u128,
        line: u64,
    },
    /// It had no id (or could not be read): the next link is not checked.
    Unknown,
}

struct IdInfo {
    line: u64,
    message: bool,
}

#[derive(Default)]
struct Checker {
    lineno: u64,
    report: Report,
    header: bool,
    mode: Mode,
    ids: HashMap<u128, IdInfo>,
    /// First line with each `parent-id` (`None`: null).
    parents: HashMap<Option<u128>, u64>,
    prev: Prev,
    /// The last id seen and its line, for the ordering check.
    last_id: Option<(String, u64)>,
}

impl Checker {
    fn push(&mut self, kind: ProblemKind) {
        self.report.problems.push(Problem {
            line: self.lineno,
            kind,
        });
    }

    fn finish(mut self) -> Report {
        if !self.header && self.mode == Mode::Undecided {
            self.report.problems.push(Problem {
                line: 1,
                kind: ProblemKind::MissingHeader { ids: false },
            });
        }
        self.report.lines = self.lineno;
        self.report.problems.sort_by_key(|p| p.line);
        self.report
    }

    /// One complete line, classified as `store::index::parse_at` does.
    fn line(&mut self, raw: &RawLine) {
        let mut nuls = raw.leading_nuls;
        let mut line = &raw.bytes[..];
        if self.lineno == 1 && nuls == 0 && line.starts_with(b"\xEF\xBB\xBF") {
            line = &line[3..];
        }
        let more = line.iter().take_while(|&&b| b == 0).count();
        nuls += more as u64;
        line = &line[more..];
        if nuls > 0 {
            let s = if nuls == 1 { "" } else { "s" };
            self.push(ProblemKind::Malformed(format!(
                "a run of {nuls} NUL byte{s}"
            )));
        }
        if raw.dropped > 0 {
            self.push(ProblemKind::TooLong { bytes: raw.total() });
            self.prev = Prev::Unknown;
            return;
        }
        let line = crate::store::line::trim_line_end(line);
        if line.is_empty() {
            return;
        }
        let text = match std::str::from_utf8(line) {
            Ok(t) => t,
            Err(e) => {
                let at = e.valid_up_to();
                self.push(ProblemKind::Malformed(format!(
                    "not valid UTF-8 (at byte {} of the line)",
                    at + 1
                )));
                return;
            }
        };
        match parse_line(text) {
            Line::Malformed(why) => {
                let why = malformed_reason(text, why);
                self.push(ProblemKind::Malformed(why));
            }
            Line::Header(h) => {
                if self.header || self.report.entries > 0 {
                    self.push(ProblemKind::StrayHeader);
                    return;
                }
                self.header = true;
                self.report.version = Some(h.version);
                if h.version >= 2 {
                    self.mode = Mode::V2;
                } else {
                    self.mode = Mode::V1;
                    self.push(ProblemKind::Version1);
                }
            }
            Line::Entry(entry) => {
                self.report.entries += 1;
                if self.mode == Mode::Undecided {
                    let ids = entry.id.is_some();
                    self.mode = if ids { Mode::V2 } else { Mode::V1 };
                    self.report.problems.push(Problem {
                        line: 1,
                        kind: ProblemKind::MissingHeader { ids },
                    });
                }
                let key = entry.id.as_deref().map(id_key);
                if self.mode == Mode::V2 {
                    self.check_id(entry.id.as_deref(), key);
                    self.check_parent(text);
                    self.prev = match (&entry.id, key) {
                        (Some(id), Some(key)) => Prev::Known {
                            id: id.clone(),
                            key,
                            line: self.lineno,
                        },
                        _ => Prev::Unknown,
                    };
                }
                let message = matches!(entry.body, Body::Message { .. });
                if let Body::Compaction(c) = entry.body
                    && let Err(why) = self.compaction_validity(c)
                {
                    self.push(ProblemKind::IgnoredCompaction(why));
                }
                if let Some(k) = key {
                    let line = self.lineno;
                    self.ids
                        .entry(k)
                        .and_modify(|i| i.message |= message)
                        .or_insert(IdInfo { line, message });
                }
                if let Some(id) = entry.id {
                    self.last_id = Some((id, self.lineno));
                }
            }
        }
    }

    fn check_id(&mut self, id: Option<&str>, key: Option<u128>) {
        let (Some(id), Some(key)) = (id, key) else {
            self.push(ProblemKind::MissingId);
            return;
        };
        if let Some(first) = self.ids.get(&key) {
            let first_line = first.line;
            self.push(ProblemKind::DuplicateId {
                id: id.to_string(),
                first_line,
            });
        } else if let Some((previous, previous_line)) = &self.last_id
            && !id_greater(id, previous)
        {
            let kind = ProblemKind::IdNotIncreasing {
                id: id.to_string(),
                previous: previous.clone(),
                previous_line: *previous_line,
            };
            self.push(kind);
        }
    }

    fn check_parent(&mut self, text: &str) {
        let found = parent_of(text);
        let pkey = match &found {
            ParentRef::Null => Some(None),
            ParentRef::Id(p) => Some(Some(id_key(p))),
            ParentRef::Absent | ParentRef::NotString => None,
        };
        if let Some(pkey) = pkey {
            if let Some(&other_line) = self.parents.get(&pkey) {
                let parent = match &found {
                    ParentRef::Id(p) => Some(p.clone()),
                    _ => None,
                };
                self.push(ProblemKind::Fork { parent, other_line });
                return;
            }
            self.parents.insert(pkey, self.lineno);
        }
        let before = match &self.prev {
            Prev::Start => Before::Nothing,
            Prev::Known { id, line, .. } => Before::Entry {
                id: id.clone(),
                line: *line,
            },
            Prev::Unknown if pkey.is_some() => return,
            Prev::Unknown => Before::Unknown,
        };
        let linked = match (&self.prev, pkey) {
            (Prev::Start, Some(None)) => true,
            (Prev::Known { key, .. }, Some(Some(k))) => *key == k,
            _ => false,
        };
        if !linked {
            let names_line = pkey
                .flatten()
                .and_then(|k| self.ids.get(&k))
                .map(|i| i.line);
            self.push(ProblemKind::BrokenChain {
                found,
                before,
                names_line,
            });
        }
    }

    /// §3's validity rule (`CompactionFields::validity`), with reasons that name lines.
    fn compaction_validity(&self, mut c: CompactionFields<'_>) -> std::result::Result<(), String> {
        c.validity(|id| match self.ids.get(&id_key(id)) {
            Some(i) if i.message => Ok(()),
            Some(i) => Err(format!(
                "first-kept-entry-id {} names line {}, which is not a message entry",
                show(id),
                i.line
            )),
            None => Err(format!(
                "first-kept-entry-id {} names no message entry before the compaction",
                show(id)
            )),
        })
        .map(|_| ())
    }
}

/// `a > b` as ids order: numerically for UUIDs, else as strings.
fn id_greater(a: &str, b: &str) -> bool {
    match (uuid::Uuid::parse_str(a), uuid::Uuid::parse_str(b)) {
        (Ok(a), Ok(b)) => a > b,
        _ => a > b,
    }
}

fn parent_of(text: &str) -> ParentRef {
    let Ok(obj) = RawObject::parse(text) else {
        return ParentRef::Absent;
    };
    match obj.get("parent-id") {
        None => ParentRef::Absent,
        Some(v) if is_null(v) => ParentRef::Null,
        Some(v) => as_string(v).map_or(ParentRef::NotString, ParentRef::Id),
    }
}

/// Says whether a line `parse_line` rejected is not JSON, JSON but not an object, or
/// an object without what an entry needs.
fn malformed_reason(text: &str, why: String) -> String {
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Err(e) => format!("not JSON ({e})"),
        Ok(_) => {
            let got = match text.trim_start().as_bytes().first() {
                Some(b'{') => return why,
                Some(b'[') => "an array",
                Some(b'"') => "a string",
                Some(b't' | b'f') => "a boolean",
                Some(b'n') => "null",
                _ => "a number",
            };
            format!("not a JSON object (got {got})")
        }
    }
}

/// A value from the file, safe to print on one line: plain ids as they are, anything
/// else JSON-quoted and cut to 80 characters.
fn show(s: &str) -> String {
    let plain = !s.is_empty()
        && s.len() <= 80
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if plain {
        return s.to_string();
    }
    let cut: String = s.chars().take(80).collect();
    let more = if cut.len() < s.len() { "…" } else { "" };
    format!("{}{more}", crate::json::quote(&cut))
}

/// Control characters out of text that goes on one output line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl fmt::Display for ParentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParentRef::Absent => f.write_str("absent"),
            ParentRef::Null => f.write_str("null"),
            ParentRef::Id(id) => f.write_str(&show(id)),
            ParentRef::NotString => f.write_str("neither a string nor null"),
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind::*;
        match self {
            Malformed(why) => write!(f, "malformed: {}", one_line(why)),
            TornTail { bytes } => {
                let s = if *bytes == 1 { "" } else { "s" };
                write!(f, "torn tail: {bytes} byte{s} without a final newline")
            }
            TooLong { bytes } => write!(
                f,
                "line of {bytes} bytes is longer than fsck reads ({} MiB): not checked",
                MAX_LINE_BYTES >> 20
            ),
            MissingHeader { ids: true } => {
                f.write_str("no session header (line 1 is not {\"type\":\"session\",…})")
            }
            MissingHeader { ids: false } => f.write_str(
                "no session header (line 1 is not {\"type\":\"session\",…}); \
                 entries have no ids: read as version 1, chain not checked",
            ),
            StrayHeader => f.write_str("session header after the first line (ignored by readers)"),
            Version1 => {
                f.write_str("note: version-1 transcript: entries have no ids, chain not checked")
            }
            MissingId => f.write_str("entry without a string \"id\""),
            BrokenChain {
                found,
                before,
                names_line,
            } => {
                f.write_str("broken chain: ")?;
                match (found, names_line) {
                    (ParentRef::Absent, _) => f.write_str("no \"parent-id\"")?,
                    (ParentRef::NotString, _) => {
                        f.write_str("parent-id is neither a string nor null")?
                    }
                    (ParentRef::Null, _) => f.write_str("parent-id is null")?,
                    (ParentRef::Id(p), Some(l)) => {
                        write!(f, "parent-id {} names line {l}", show(p))?
                    }
                    (ParentRef::Id(p), None) => {
                        write!(f, "parent-id {} names no earlier entry", show(p))?
                    }
                }
                match before {
                    Before::Entry { id, line } => {
                        write!(f, " (expected {}, the id of line {line})", show(id))
                    }
                    Before::Nothing => f.write_str(" (expected null: this is the first entry)"),
                    Before::Unknown => Ok(()),
                }
            }
            Fork {
                parent: Some(p),
                other_line,
            } => write!(
                f,
                "forked chain: parent-id {} is also the parent-id of line {other_line}",
                show(p)
            ),
            Fork {
                parent: None,
                other_line,
            } => write!(
                f,
                "forked chain: parent-id null, as on line {other_line} (a second first entry)"
            ),
            DuplicateId { id, first_line } => {
                write!(f, "duplicate id {} (first on line {first_line})", show(id))
            }
            IdNotIncreasing {
                id,
                previous,
                previous_line,
            } => write!(
                f,
                "id {} is not greater than the id before it, {} (line {previous_line})",
                show(id),
                show(previous)
            ),
            IgnoredCompaction(why) => write!(f, "compaction ignored: {}", one_line(why)),
        }
    }
}

/// The report of one session as `run` prints it; empty when there is nothing to say.
pub fn render(label: &str, report: &Report) -> String {
    if report.problems.is_empty() {
        return String::new();
    }
    let (p, n) = (report.problem_count(), report.note_count());
    let mut head = Vec::new();
    if p > 0 {
        head.push(format!("{p} problem{}", if p == 1 { "" } else { "s" }));
    }
    if n > 0 {
        head.push(format!("{n} note{}", if n == 1 { "" } else { "s" }));
    }
    let mut out = format!("{label}: {}\n", head.join(", "));
    for problem in &report.problems {
        out.push_str(&format!("  line {}: {}\n", problem.line, problem.kind));
    }
    out
}

/// The reports of a store's sessions: each labelled `namespace/dir`, with the
/// report or why the file could not be checked.
pub struct StoreReport {
    pub sessions: Vec<(String, std::result::Result<Report, String>)>,
    /// Namespace folders and session files readers skip because their names are not
    /// UTF-8 (escaped, relative to the store): sessions no one sees, so problems.
    pub skipped: Vec<String>,
    /// Kept copies of other agents' sessions (§11): each copy's label and what is
    /// wrong with it (`Err`) or notes (`Ok`).
    pub kept: Vec<(String, std::result::Result<Vec<String>, String>)>,
}

impl StoreReport {
    /// Sessions with problems (or that could not be checked), and skipped names.
    pub fn bad(&self) -> usize {
        self.bad_sessions() + self.skipped.len() + self.damaged_copies()
    }

    fn damaged_copies(&self) -> usize {
        self.kept.iter().filter(|(_, r)| r.is_err()).count()
    }

    fn bad_sessions(&self) -> usize {
        self.sessions
            .iter()
            .filter(|(_, r)| !r.as_ref().is_ok_and(|r| r.is_clean()))
            .count()
    }

    /// One block per session with something to report, then a count line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (label, report) in &self.sessions {
            match report {
                Ok(report) => out.push_str(&render(label, report)),
                Err(why) => out.push_str(&format!("{label}: cannot check: {}\n", one_line(why))),
            }
        }
        for name in &self.skipped {
            out.push_str(&format!("skipped: name is not UTF-8: {name}\n"));
        }
        for (label, r) in &self.kept {
            match r {
                Ok(notes) => {
                    for n in notes {
                        out.push_str(&format!("{label}: note: {n}\n"));
                    }
                }
                Err(why) => out.push_str(&format!("{label}: damaged kept copy: {why}\n")),
            }
        }
        let n = self.sessions.len();
        let s = if n == 1 { "" } else { "s" };
        out.push_str(&format!(
            "checked {n} session{s}, {} with problems",
            self.bad_sessions()
        ));
        match self.skipped.len() {
            0 => {}
            1 => out.push_str("; 1 name skipped (not UTF-8)"),
            k => out.push_str(&format!("; {k} names skipped (not UTF-8)")),
        }
        if !self.kept.is_empty() {
            out.push_str(&format!(
                "; checked {} kept cop{}, {} damaged",
                self.kept.len(),
                if self.kept.len() == 1 { "y" } else { "ies" },
                self.damaged_copies()
            ));
        }
        out.push('\n');
        out
    }
}

/// Checks every session of the store, or the one `session` names.
pub fn check_store(store: &Store, session: Option<&str>) -> Result<StoreReport> {
    let (sessions, skipped) = match session {
        Some(spec) => (vec![store.resolve(spec)?], Vec::new()),
        None => (store.all_sessions()?, store.names_not_utf8()?),
    };
    #[cfg(feature = "full")]
    let kept = if session.is_none() {
        kept::check_kept(&store.root)
    } else {
        Vec::new()
    };
    #[cfg(not(feature = "full"))]
    let kept = Vec::new();
    Ok(StoreReport {
        kept,
        skipped,
        sessions: sessions
            .iter()
            .map(|s| {
                let label = format!("{}/{}", s.namespace, s.dir);
                (label, check_file(&s.path).map_err(|e| e.reason))
            })
            .collect(),
    })
}
