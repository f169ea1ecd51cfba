//! The per-session index: offsets and counters that every view is computed from, kept
//! up to date by parsing only the bytes appended since the last refresh.
//!
//! The index never holds the transcript's contents, only where things are. The few
//! small derived values a picker needs on every listing (title, preview, merged
//! metadata, role names) are kept as values: re-reading them would cost a read per
//! session per `ls`.

use super::ids::id_key;
use super::line::{Body, CompactionFields, Entry, Header, Line, ValidCompaction, parse_line};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, RwLock};

/// What identifies one state of a file on disk; a change in any field means the index
/// must look again. Growth is parsed incrementally; anything else reloads.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    /// No one can set it back: a file re-created on a reused inode, or rewritten and
    /// `touch`ed to its old mtime, still differs here.
    pub ctime_ns: i128,
}

impl FileStamp {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
            ctime_ns: meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128,
        }
    }
}

/// Where one message's JSON sits in the transcript, plus running totals so that any
/// suffix of the conversation has an O(1) size and token count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageRec {
    /// Absolute file offset of the message object's first byte.
    pub start: u64,
    pub len: u32,
    /// `id_key` of the entry id (0 for entries without id).
    pub key: [u64; 2],
    /// Sum over messages up to and including this one of `len + 2` (the `,\n`).
    pub out_end: u64,
    /// Sum over messages up to and including this one of the token estimate.
    pub tokens_end: u64,
}

/// Append-only list of messages shared with open snapshots: a snapshot remembers how
/// many records it saw and never looks past that, so appends never disturb it.
pub type MessageTable = Arc<RwLock<Vec<MessageRec>>>;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum CompactionForm {
    /// Message index of `first-kept-entry-id`, or `None` for an explicit null.
    FirstKept(Option<usize>),
    /// `messages` given: how many replacement messages.
    Replacement(usize),
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionRec {
    pub line_start: u64,
    pub line_len: u64,
    pub id: Option<String>,
    pub timestamp: Option<String>,
    /// Number of message entries before this compaction.
    pub msgs_before: usize,
    /// `Err(reason)` when §3 says to ignore it.
    pub validity: std::result::Result<CompactionForm, String>,
    /// Bytes and tokens of the items the projection puts before kept messages
    /// (the synthetic summary message, or the replacement messages).
    pub head_bytes: u64,
    pub head_items: usize,
    pub head_tokens: u64,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub trigger: Option<String>,
}

impl CompactionRec {
    pub fn is_valid(&self) -> bool {
        self.validity.is_ok()
    }
}

/// Serializable for the persisted index cache (`store::index_cache`); the message
/// table is stored beside it as fixed-size binary records.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SessionIndex {
    pub file: FileStamp,
    /// End of the last complete (`\n`-terminated) line parsed.
    pub parsed_len: u64,
    /// Complete lines seen (for line numbers).
    pub lines: u64,
    pub header: Option<Header>,
    pub entries: u64,
    pub malformed_lines: u64,
    /// Bytes after the last `\n`: a torn line (or one being written right now).
    pub torn_tail: bool,
    #[serde(skip)]
    pub messages: MessageTable,
    pub roles: BTreeMap<String, u64>,
    pub compactions: Vec<CompactionRec>,
    pub latest_valid_compaction: Option<usize>,
    pub custom_entries: BTreeMap<String, u64>,
    pub title: Option<String>,
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub preview: Option<String>,
    /// (start, len) of the first user message's JSON, for summaries.
    pub first_user_message: Option<(u64, u32)>,
    pub updated_at: Option<String>,
    pub last_entry_id: Option<String>,
    last_key: Option<(u64, u64)>,
    /// False once an id is not greater than the one before (foreign or corrupt file):
    /// id look-ups then scan instead of binary-searching.
    pub ids_monotonic: bool,
    pub transcript_tokens: u64,
    /// `content_check` of the parsed bytes (`parsed_len`) as persisted; in memory,
    /// `ends` (when known) is what it is computed from: see `content_hash`.
    pub check: u64,
    /// The bytes `content_check` hashes, for a session this process appends to:
    /// read once at its first append, then extended with what each append wrote,
    /// so an append costs no read-back of the file; the hash is computed only when
    /// something needs it (a foreign change to compare, a cache to write).
    #[serde(skip)]
    pub ends: Option<ParsedEnds>,
}

/// The first `CHECK_BYTES` of a file and the last `CHECK_BYTES` of its parsed part
/// (not overlapping the first): exactly what `content_check` reads.
#[derive(Debug, Clone, Default)]
pub struct ParsedEnds {
    len: u64,
    head: Vec<u8>,
    /// Ends with the tail; may hold older bytes before it, dropped now and then
    /// rather than moving 4 KiB on every append.
    tail_buf: Vec<u8>,
}

/// How much `tail_buf` may hold before its front is dropped (what a session being
/// appended to keeps in memory, with the head).
const TAIL_BUF: usize = 16 << 10;

impl ParsedEnds {
    /// Reads them from `file`'s first `len` bytes.
    pub fn read(file: &File, len: u64) -> std::io::Result<Self> {
        use std::os::unix::fs::FileExt;
        let mut head = vec![0u8; len.min(CHECK_BYTES) as usize];
        file.read_exact_at(&mut head, 0)?;
        let tail_start = len.saturating_sub(CHECK_BYTES).max(head.len() as u64);
        let mut tail_buf = vec![0u8; (len - tail_start) as usize];
        file.read_exact_at(&mut tail_buf, tail_start)?;
        Ok(ParsedEnds {
            len,
            head,
            tail_buf,
        })
    }

    /// How many of the file's first bytes they describe.
    pub fn covered_len(&self) -> u64 {
        self.len
    }

    fn tail(&self) -> &[u8] {
        let start = self
            .len
            .saturating_sub(CHECK_BYTES)
            .max(self.head.len() as u64);
        let keep = (self.len - start) as usize;
        &self.tail_buf[self.tail_buf.len() - keep..]
    }

    /// The parsed part grew by `bytes` (the file's bytes right after `len`).
    pub fn extend(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        if (self.head.len() as u64) < CHECK_BYTES {
            let n = (CHECK_BYTES as usize - self.head.len()).min(rest.len());
            self.head.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        self.len += bytes.len() as u64;
        if rest.len() >= CHECK_BYTES as usize {
            self.tail_buf.clear();
            self.tail_buf
                .extend_from_slice(&rest[rest.len() - CHECK_BYTES as usize..]);
        } else {
            if self.tail_buf.len() + rest.len() > TAIL_BUF {
                let drop = self.tail_buf.len() - self.tail().len();
                self.tail_buf.drain(..drop);
            }
            self.tail_buf.extend_from_slice(rest);
        }
    }

    pub fn hash(&self) -> u64 {
        super::atomic::checksum(&[&self.len.to_le_bytes(), &self.head, self.tail()])
    }
}

impl PartialEq for ParsedEnds {
    fn eq(&self, other: &Self) -> bool {
        (self.len, &self.head, self.tail()) == (other.len, &other.head, other.tail())
    }
}

/// A line this process just wrote (without its `\n`), with what parsing it would
/// find: its id and timestamp, and for a message entry its message's span in `text`.
pub struct WrittenLine<'a> {
    pub text: &'a str,
    pub id: &'a str,
    pub timestamp: &'a str,
    pub message: Option<(usize, usize)>,
}

/// How many bytes at each end of a file's parsed part `content_check` hashes.
pub const CHECK_BYTES: u64 = 4096;

/// A hash of the first and last `CHECK_BYTES` of `file`'s first `len` bytes: cheap
/// proof that an index (in memory or persisted) describes this file's content, not a
/// file rewritten in place or re-created on the same inode.
pub fn content_check(file: &File, len: u64) -> std::io::Result<u64> {
    ParsedEnds::read(file, len).map(|e| e.hash())
}

/// Token estimate of §2.2: `ceil(bytes / 4)`.
pub fn tokens_of(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

pub const PREVIEW_CHARS: usize = 120;

const READ_CHUNK: usize = 4 << 20;

/// Longest line the loader holds in memory (as `fsck` does): a longer one, which no
/// fen-fs writer produces (`--max-entry-bytes` is 16 MiB by default), is skipped as
/// malformed without being buffered, so a multi-GB garbage file cannot exhaust memory.
pub const MAX_LINE: usize = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    Unchanged,
    /// Parsed this many new bytes.
    Grew(u64),
    /// The file was truncated, replaced or rewritten: loaded from scratch.
    Reloaded,
}

impl SessionIndex {
    pub fn new() -> Self {
        SessionIndex {
            ids_monotonic: true,
            ..Default::default()
        }
    }

    /// Loads a transcript from scratch.
    pub fn load(path: &Path) -> Result<Self> {
        let mut idx = SessionIndex::new();
        idx.refresh(path)?;
        Ok(idx)
    }

    pub fn message_count(&self) -> usize {
        self.messages.read().unwrap().len()
    }

    pub fn size_bytes(&self) -> u64 {
        self.file.size
    }

    pub fn created_at(&self) -> Option<&str> {
        self.header.as_ref().and_then(|h| h.timestamp.as_deref())
    }

    pub fn cwd(&self) -> Option<&str> {
        self.header.as_ref().and_then(|h| h.cwd.as_deref())
    }

    pub fn version(&self) -> u64 {
        self.header.as_ref().map(|h| h.version).unwrap_or(1)
    }

    /// The malformed count as readers report it: complete bad lines plus a torn tail.
    pub fn malformed_total(&self) -> u64 {
        self.malformed_lines + self.torn_tail as u64
    }

    /// Brings the index up to date with the file: `stat` first; only new bytes are read
    /// when the file grew; truncation, replacement or a same-size rewrite reload.
    pub fn refresh(&mut self, path: &Path) -> Result<Refresh> {
        let (file, meta) = super::open::open_regular(path)?;
        self.update(&file, FileStamp::of(&meta))
    }

    /// Brings the index up to `stamp`, the state of the open `file` (the appender's
    /// locked descriptor, or one just opened by path).
    pub fn update(&mut self, file: &File, stamp: FileStamp) -> Result<Refresh> {
        self.update_between(file, stamp, &|| {})
    }

    /// `update`, calling `between` after each chunk read: a caller that holds no
    /// lock may pause there (`yielding::point`).
    pub fn update_between(
        &mut self,
        file: &File,
        stamp: FileStamp,
        between: &dyn Fn(),
    ) -> Result<Refresh> {
        if stamp == self.file && self.parsed_len <= stamp.size {
            return Ok(Refresh::Unchanged);
        }
        let incremental = stamp.dev == self.file.dev
            && stamp.ino == self.file.ino
            && stamp.size >= self.parsed_len
            && !(stamp.size == self.file.size && stamp.mtime_ns != self.file.mtime_ns)
            && (self.parsed_len > 0 || self.file.ino != 0)
            && content_check(file, self.parsed_len).is_ok_and(|c| c == self.content_hash());
        if !incremental {
            *self = SessionIndex::new();
        }
        let before = self.parsed_len;
        self.read_from_capped(file, MAX_LINE, between)?;
        // Only the value: the bytes are kept only by sessions this process appends
        // to (8 KiB each would be 80 MB for 10,000 indexed sessions).
        self.ends = None;
        self.check =
            content_check(file, self.parsed_len).map_err(|e| Error::io("read transcript", &e))?;
        self.file = stamp;
        if self.parsed_len > stamp.size {
            // A writer appended between our stat and our read: take the state we read
            // up to, so the next refresh does not mistake it for a rewrite.
            match file.metadata() {
                Ok(m) if m.len() >= self.parsed_len => self.file = FileStamp::of(&m),
                _ => self.file.size = self.parsed_len,
            }
        }
        Ok(if incremental {
            Refresh::Grew(self.parsed_len - before)
        } else {
            Refresh::Reloaded
        })
    }

    /// `content_check` of the parsed part, from the bytes kept in memory when known.
    pub fn content_hash(&self) -> u64 {
        match &self.ends {
            Some(e) if e.len == self.parsed_len => e.hash(),
            _ => self.check,
        }
    }

    /// After this process wrote `bytes` at offset `at` and parsed up to the end: keeps
    /// the hashed ends current, or reads them from `file` when the parsed part is not
    /// exactly what they covered plus `bytes` (a torn line before ours, a foreign
    /// writer, ends not known yet).
    pub fn note_appended(&mut self, file: &File, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.ends {
            Some(e) if e.len == at && at + bytes.len() as u64 == self.parsed_len => e.extend(bytes),
            _ => self.ends = Some(ParsedEnds::read(file, self.parsed_len)?),
        }
        Ok(())
    }

    /// Parses every complete line from `parsed_len` to EOF of `file`.
    pub fn read_from(&mut self, file: &File) -> Result<()> {
        self.read_from_capped(file, MAX_LINE, &|| {})
    }

    fn read_from_capped(
        &mut self,
        mut file: &File,
        max_line: usize,
        between: &dyn Fn(),
    ) -> Result<()> {
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::Start(self.parsed_len))
            .map_err(|e| Error::io("seek transcript", &e))?;
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        let mut buf_start = self.parsed_len;
        // Inside a line longer than MAX_LINE: its bytes are dropped, not buffered.
        let mut skipping = false;
        loop {
            // read_to_end on a bounded reader: no zero-filling of a big buffer per
            // pass (this runs on every append, under the file lock).
            let searched = buf.len(); // holds no newline: only new bytes need a look
            let n = (&mut file)
                .take(READ_CHUNK as u64)
                .read_to_end(&mut buf)
                .map_err(|e| Error::io("read transcript", &e))?;
            if skipping {
                match memchr::memchr(b'\n', &buf) {
                    Some(nl) => {
                        // The oversized line ends here: one malformed line.
                        self.lines += 1;
                        self.malformed_lines += 1;
                        buf.drain(..=nl);
                        buf_start += nl as u64 + 1;
                        self.parsed_len = buf_start;
                        skipping = false;
                    }
                    None => {
                        buf_start += buf.len() as u64;
                        buf.clear();
                    }
                }
            }
            if !skipping && memchr::memchr(b'\n', &buf[searched.min(buf.len())..]).is_some() {
                let consumed = self.ingest(buf_start, &buf);
                buf.drain(..consumed);
                buf_start += consumed as u64;
            }
            if !skipping && buf.len() > max_line {
                skipping = true;
                buf_start += buf.len() as u64;
                buf.clear();
            }
            if n == 0 {
                break;
            }
            between();
        }
        // An unterminated last line (or one being written now) is left for later.
        self.torn_tail = skipping || !buf.is_empty();
        Ok(())
    }

    /// Parses the complete lines of `bytes` (which start at file offset `start`);
    /// returns how many bytes were consumed (up to and including the last `\n`).
    pub fn ingest(&mut self, start: u64, bytes: &[u8]) -> usize {
        let Some(last_nl) = memchr::memrchr(b'\n', bytes) else {
            return 0;
        };
        let complete = &bytes[..last_nl + 1];
        if complete.len() < PARALLEL_MIN {
            for (at, line) in lines_of(complete) {
                let parsed = parse_at(start + at as u64, line);
                self.apply(parsed);
            }
        } else {
            // A big read (a first parse): parsing a line needs nothing from the lines
            // before it, so the chunk's pieces are parsed on all cores, then applied
            // in file order (the part that depends on what came before, and cheap).
            let pieces = split_at_newlines(complete, parallelism());
            let parsed: Vec<Vec<ParsedLine<'_>>> = std::thread::scope(|scope| {
                let handles: Vec<_> = pieces
                    .iter()
                    .skip(1)
                    .map(|&(off, piece)| scope.spawn(move || parse_all(start + off as u64, piece)))
                    .collect();
                let (off, first) = pieces[0];
                let mut out = vec![parse_all(start + off as u64, first)];
                out.extend(
                    handles
                        .into_iter()
                        .map(|h| h.join().expect("parser thread")),
                );
                out
            });
            for line in parsed.into_iter().flatten() {
                self.apply(line);
            }
        }
        self.parsed_len = start + complete.len() as u64;
        complete.len()
    }

    /// Takes in lines this process just wrote at `start` (the end of the parsed
    /// part) as `ingest` would, without parsing message entries again: their id,
    /// timestamp and message span are known from rendering them.
    pub fn ingest_written(&mut self, start: u64, lines: &[WrittenLine<'_>]) {
        let mut line_start = start;
        for line in lines {
            let known = line.message.and_then(|(at, len)| {
                let raw = line.text.get(at..at + len)?;
                let role = super::line::message_role(raw)?;
                Some(ParsedLine {
                    start: line_start,
                    len: line.text.len() as u64,
                    nul_run: false,
                    kind: LineKind::Entry {
                        text_start: line_start,
                        text: line.text,
                        entry: Entry {
                            id: Some(line.id.to_string()),
                            timestamp: Some(line.timestamp.to_string()),
                            body: Body::Message { role, raw },
                        },
                    },
                })
            });
            let parsed = known.unwrap_or_else(|| parse_at(line_start, line.text.as_bytes()));
            self.apply(parsed);
            line_start += line.text.len() as u64 + 1;
        }
        self.parsed_len = line_start;
    }

    /// Counts a parsed line into the index.
    fn apply(&mut self, line: ParsedLine<'_>) {
        self.lines += 1;
        if line.nul_run {
            self.malformed_lines += 1;
        }
        match line.kind {
            LineKind::Blank => {}
            LineKind::Malformed => self.malformed_lines += 1,
            LineKind::Header(h) => {
                if self.header.is_none() && self.entries == 0 {
                    self.header = Some(h);
                }
            }
            LineKind::Entry {
                text_start,
                text,
                entry,
            } => self.ingest_entry(line.start, line.len, text_start, text, entry),
        }
    }

    /// An entry parsed from `text`, which starts at file offset `text_start` inside
    /// the line of `line_len` bytes starting at `line_start`.
    fn ingest_entry(
        &mut self,
        line_start: u64,
        line_len: u64,
        text_start: u64,
        text: &str,
        entry: Entry<'_>,
    ) {
        self.entries += 1;
        let key = entry.id.as_deref().map(id_key);
        if let Some(k) = key {
            // (high, low) halves: tuples order like the u128 they split.
            let k = ((k >> 64) as u64, k as u64);
            if self.last_key.is_some_and(|last| k <= last) {
                self.ids_monotonic = false;
            }
            self.last_key = Some(k);
        } else if self.last_key.is_some() {
            // An id-less entry after ids (key 0 in the table): no longer sorted.
            self.ids_monotonic = false;
        }
        let id = entry.id;
        if id.is_some() {
            self.last_entry_id = id.clone();
        }
        if entry.timestamp.is_some() {
            self.updated_at = entry.timestamp;
        }
        match entry.body {
            Body::Message { role, raw } => {
                let start = text_start + crate::json::offset_in(text, raw) as u64;
                self.push_message(start, raw, key.unwrap_or(0), &role);
                match self.roles.get_mut(&role) {
                    Some(n) => *n += 1,
                    None => {
                        self.roles.insert(role, 1);
                    }
                }
            }
            Body::Compaction(c) => {
                let mut rec = self.compaction_rec(line_start, line_len, c);
                rec.id = id;
                rec.timestamp = self.updated_at.clone();
                if rec.is_valid() {
                    self.latest_valid_compaction = Some(self.compactions.len());
                }
                self.compactions.push(rec);
            }
            Body::Title(t) => self.title = Some(t),
            Body::Metadata(m) => self.metadata.extend(m),
            Body::Custom(t) => *self.custom_entries.entry(t).or_default() += 1,
        }
    }

    fn push_message(&mut self, start: u64, raw: &str, key: u128, role: &str) {
        let len = raw.len() as u64;
        let tokens = tokens_of(len);
        self.transcript_tokens += tokens;
        if role == "user" && self.preview.is_none() {
            self.preview = Some(preview_of(raw));
            self.first_user_message = Some((start, len as u32));
        }
        let mut table = self.messages.write().unwrap();
        let (out, tok) = table.last().map_or((0, 0), |m| (m.out_end, m.tokens_end));
        table.push(MessageRec {
            start,
            len: len as u32,
            key: [(key >> 64) as u64, key as u64],
            out_end: out + len + 2,
            tokens_end: tok + tokens,
        });
    }

    /// Message index of the message entry with this id, if it is one.
    pub fn find_message(&self, id: &str) -> Option<usize> {
        let k = id_key(id);
        let key = [(k >> 64) as u64, k as u64];
        let table = self.messages.read().unwrap();
        if self.ids_monotonic {
            table.binary_search_by(|m| m.key.cmp(&key)).ok()
        } else {
            table.iter().position(|m| m.key == key)
        }
    }

    fn compaction_rec(
        &self,
        line_start: u64,
        line_len: u64,
        mut c: CompactionFields<'_>,
    ) -> CompactionRec {
        let msgs_before = self.message_count();
        let mut rec = CompactionRec {
            line_start,
            line_len,
            id: None,
            timestamp: None,
            msgs_before,
            validity: Err(String::new()),
            head_bytes: 0,
            head_items: 0,
            head_tokens: 0,
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
            trigger: c.trigger.take(),
        };
        let verdict = c.validity(|id| {
            self.find_message(id).ok_or_else(|| {
                format!("first-kept-entry-id {id} names no message entry before the compaction")
            })
        });
        rec.validity = verdict.map(|v| match v {
            ValidCompaction::Replacement(items) => {
                for item in &items {
                    let n = item.get().len() as u64;
                    rec.head_bytes += n;
                    rec.head_tokens += tokens_of(n);
                }
                rec.head_items = items.len();
                CompactionForm::Replacement(items.len())
            }
            ValidCompaction::FirstKept(i) => CompactionForm::FirstKept(i),
        });
        if let (Ok(CompactionForm::FirstKept(_)), Some(summary)) = (&rec.validity, &c.summary) {
            let n = synthetic_summary_message(summary).len() as u64;
            rec.head_bytes = n;
            rec.head_items = 1;
            rec.head_tokens = tokens_of(n);
        }
        rec
    }
}

/// Streams the entries among `file`'s complete lines up to `len`, in file order,
/// parsed exactly as the index parses them: `f(line_start, text_start, text, entry)`,
/// where `text` (at file offset `text_start`) is the line the entry was parsed from
/// (for `json::offset_in` of its borrowed parts). Reads in chunks: memory holds one
/// chunk and the longest line, never the file.
pub fn for_each_entry(
    file: &File,
    len: u64,
    f: impl FnMut(u64, u64, &str, Entry<'_>),
) -> Result<()> {
    for_each_entry_from(file, 0, len, f)
}

/// The same from byte `from` (the start of a line) on.
pub fn for_each_entry_from(
    file: &File,
    from: u64,
    len: u64,
    mut f: impl FnMut(u64, u64, &str, Entry<'_>),
) -> Result<()> {
    for_each_entry_while(file, from, len, |a, b, c, d| {
        f(a, b, c, d);
        std::ops::ControlFlow::Continue(())
    })
    .map(|_| ())
}

/// The same, stopping after the line of the entry for which `f` returns `Break`:
/// then returns where reading stopped, the start of the next line (`None`: every
/// line up to `len` was read).
pub fn for_each_entry_while(
    file: &File,
    from: u64,
    len: u64,
    mut f: impl FnMut(u64, u64, &str, Entry<'_>) -> std::ops::ControlFlow<()>,
) -> Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_start = from;
    let mut pos = from;
    while pos < len {
        let want = ((len - pos) as usize).min(READ_CHUNK);
        let at = buf.len();
        buf.resize(at + want, 0);
        let n = file
            .read_at(&mut buf[at..], pos)
            .map_err(|e| Error::io("read transcript", &e))?;
        buf.truncate(at + n);
        if n == 0 {
            break;
        }
        pos += n as u64;
        let Some(last_nl) = memchr::memrchr(b'\n', &buf) else {
            continue;
        };
        for (off, line) in lines_of(&buf[..=last_nl]) {
            let parsed = parse_at(buf_start + off as u64, line);
            if let LineKind::Entry {
                text_start,
                text,
                entry,
            } = parsed.kind
                && f(parsed.start, text_start, text, entry).is_break()
            {
                return Ok(Some(buf_start + (off + line.len() + 1) as u64));
            }
        }
        buf.drain(..=last_nl);
        buf_start += last_nl as u64 + 1;
    }
    Ok(None)
}

/// Below this many bytes of complete lines, `ingest` parses on the calling thread.
const PARALLEL_MIN: usize = 1 << 20;

/// One line as parsing found it, before it is counted into an index (which needs
/// the lines before it, so happens in file order).
struct ParsedLine<'a> {
    start: u64,
    len: u64,
    /// The line began with a run of NUL bytes (counted as one malformed line).
    nul_run: bool,
    kind: LineKind<'a>,
}

enum LineKind<'a> {
    Blank,
    Malformed,
    Header(Header),
    Entry {
        /// File offset of `text`, the line without BOM, NULs and trailing blanks.
        text_start: u64,
        text: &'a str,
        entry: Entry<'a>,
    },
}

/// Parses one line (without its `\n`) that starts at file offset `line_start`.
fn parse_at(line_start: u64, raw: &[u8]) -> ParsedLine<'_> {
    let mut offset = 0usize;
    let mut line = raw;
    if line_start == 0 && line.starts_with(b"\xEF\xBB\xBF") {
        offset = 3;
        line = &line[3..];
    }
    // A crash on some filesystems leaves runs of NUL bytes: count the run as one
    // malformed line and keep whatever follows it on the same line.
    let nuls = line.iter().take_while(|&&b| b == 0).count();
    offset += nuls;
    line = &line[nuls..];
    let line = super::line::trim_line_end(line);
    let kind = if line.is_empty() {
        LineKind::Blank
    } else {
        // simdutf8: std's check was 40% of a first parse (transcripts are mostly
        // non-ASCII text); the SIMD one answers the same, several times faster.
        match simdutf8::basic::from_utf8(line) {
            Err(_) => LineKind::Malformed,
            Ok(text) => match parse_line(text) {
                Line::Malformed(_) => LineKind::Malformed,
                Line::Header(h) => LineKind::Header(h),
                Line::Entry(entry) => LineKind::Entry {
                    text_start: line_start + offset as u64,
                    text,
                    entry,
                },
            },
        }
    };
    ParsedLine {
        start: line_start,
        len: raw.len() as u64,
        nul_run: nuls > 0,
        kind,
    }
}

/// The lines of `bytes` (which ends with `\n`) with their offsets, without `\n`.
fn lines_of(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let nl = pos + memchr::memchr(b'\n', &bytes[pos..])?;
        let line = (pos, &bytes[pos..nl]);
        pos = nl + 1;
        Some(line)
    })
}

fn parse_all(start: u64, bytes: &[u8]) -> Vec<ParsedLine<'_>> {
    lines_of(bytes)
        .map(|(at, line)| parse_at(start + at as u64, line))
        .collect()
}

/// `bytes` (ending with `\n`) cut into about `n` pieces at line ends, with offsets.
fn split_at_newlines(bytes: &[u8], n: usize) -> Vec<(usize, &[u8])> {
    let mut pieces = Vec::with_capacity(n);
    let mut from = 0;
    for i in 1..n {
        let aim = (bytes.len() * i / n).max(from);
        let Some(nl) = memchr::memchr(b'\n', &bytes[aim..]) else {
            break;
        };
        let to = aim + nl + 1;
        if to < bytes.len() {
            pieces.push((from, &bytes[from..to]));
            from = to;
        }
    }
    pieces.push((from, &bytes[from..]));
    pieces
}

/// Threads for a big parse: the machine's cores, at most 4.
fn parallelism() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
}

/// The message the projection puts in place of compacted history (§3).
pub fn synthetic_summary_message(summary: &str) -> String {
    let text = format!("The conversation before this point was compacted. Summary:\n\n{summary}");
    format!(
        "{{\"role\":\"user\",\"content\":{}}}",
        crate::json::quote(&text)
    )
}

/// The text of a message's `content`: a string, or the `text` of its text blocks.
pub fn message_text(raw: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(raw) else {
        return String::new();
    };
    match v.get("content") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                serde_json::Value::String(s) => Some(s.as_str()),
                _ => b.get("text").and_then(|t| t.as_str()),
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// One line, whitespace collapsed, at most 120 characters (an ellipsis marks a cut).
pub fn preview_of(raw: &str) -> String {
    one_line(&message_text(raw), PREVIEW_CHARS)
}

pub fn one_line(text: &str, max_chars: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max_chars {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(max_chars - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A big chunk parsed on several threads gives exactly the index that parsing
    /// it line by line gives (compactions refer back to earlier messages, ids, BOM,
    /// NUL runs, malformed and blank lines, a header).
    #[test]
    fn parallel_ingest_equals_sequential() {
        let mut text = String::from("\u{feff}{\"type\":\"session\",\"version\":2,\"id\":\"s\"}\n");
        let mut n = 0u64;
        while text.len() < 3 * PARALLEL_MIN {
            n += 1;
            let id = format!("01a20047-3e58-758d-a5b9-{n:012x}");
            let line = match n % 11 {
                0 => format!(
                    "{{\"type\":\"compaction\",\"id\":\"{id}\",\"summary\":\"s\",\"first-kept-entry-id\":\"01a20047-3e58-758d-a5b9-{:012x}\"}}",
                    n - 4
                ),
                1 => "garbage".to_string(),
                2 => "\0\0{\"type\":\"title\",\"title\":\"t\"}".to_string(),
                3 => "   ".to_string(),
                4 => format!(
                    "{{\"type\":\"message\",\"id\":\"{id}\",\"message\":{{\"content\":\"x\",\"role\":\"tool\"}}}}"
                ),
                _ => format!(
                    "{{\"type\":\"message\",\"id\":\"{id}\",\"timestamp\":\"t{n}\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}",
                    "é".repeat((n % 300) as usize)
                ),
            };
            text.push_str(&line);
            text.push('\n');
        }
        let bytes = text.as_bytes();
        let mut whole = SessionIndex::new();
        assert_eq!(whole.ingest(0, bytes), bytes.len());
        let mut by_line = SessionIndex::new();
        let mut at = 0;
        for (_, line) in lines_of(bytes) {
            by_line.ingest(at as u64, &bytes[at..at + line.len() + 1]);
            at += line.len() + 1;
        }
        assert_eq!(
            serde_json::to_value(&whole).unwrap(),
            serde_json::to_value(&by_line).unwrap()
        );
        assert_eq!(
            *whole.messages.read().unwrap(),
            *by_line.messages.read().unwrap()
        );
        assert!(whole.compactions.iter().filter(|c| c.is_valid()).count() > 100);
        assert!(whole.malformed_lines > 100);
        assert!(whole.header.is_some());
    }

    /// Only sessions this process appends to keep the hashed bytes: an index built
    /// by reading a file keeps the hash alone (10,000 indexed sessions would
    /// otherwise hold 80 MB), and both ways give the same value.
    #[test]
    fn only_appended_sessions_keep_their_ends() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"{\"type\":\"session\",\"version\":2,\"id\":\"s\"}\n")
            .unwrap();
        let mut idx = SessionIndex::load(f.path()).unwrap();
        assert!(idx.ends.is_none());
        let hash = idx.content_hash();
        let line = b"{\"type\":\"title\",\"title\":\"t\"}\n";
        let at = idx.parsed_len;
        f.write_all(line).unwrap();
        idx.ingest(at, line);
        idx.note_appended(f.as_file(), at, line).unwrap();
        assert!(idx.ends.is_some());
        assert_ne!(idx.content_hash(), hash);
        assert_eq!(
            idx.content_hash(),
            content_check(f.as_file(), idx.parsed_len).unwrap()
        );
    }

    /// Ends kept up to date by appends hash like a fresh read of the file, across the
    /// head filling up and the tail window sliding, for small and large appends.
    #[test]
    fn kept_ends_equal_a_fresh_read() {
        let mut f = tempfile::tempfile().unwrap();
        let mut ends = ParsedEnds::read(&f, 0).unwrap();
        let mut len = 0u64;
        let mut seed = 7u64;
        for round in 0..400 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = match round % 4 {
                0 => (seed >> 33) as usize % 40,
                1 => (seed >> 33) as usize % 3000,
                2 => (seed >> 33) as usize % 9000,
                _ => 1,
            };
            let bytes: Vec<u8> = (0..n).map(|i| (seed as usize + i * 31) as u8).collect();
            f.write_all(&bytes).unwrap();
            ends.extend(&bytes);
            len += n as u64;
            assert_eq!(ends, ParsedEnds::read(&f, len).unwrap(), "round {round}");
            assert_eq!(ends.hash(), content_check(&f, len).unwrap());
        }
    }

    #[test]
    fn an_oversized_line_is_skipped_not_buffered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut f = File::create(&path).unwrap();
        writeln!(f, "{{\"type\":\"session\",\"version\":2,\"id\":\"x\"}}").unwrap();
        f.write_all(&vec![b'z'; 5000]).unwrap();
        writeln!(f).unwrap();
        writeln!(
            f,
            "{{\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"after\"}}}}"
        )
        .unwrap();
        f.write_all(&vec![b'q'; 3000]).unwrap(); // an oversized torn tail
        drop(f);
        let mut idx = SessionIndex::new();
        idx.read_from_capped(&File::open(&path).unwrap(), 1000, &|| {})
            .unwrap();
        assert_eq!(idx.malformed_lines, 1);
        assert_eq!(idx.message_count(), 1);
        assert!(idx.torn_tail);
        // The same, read in one go without a cap: same entries, and the long line
        // counts as malformed there too (it is not JSON).
        let full = SessionIndex::load(&path).unwrap();
        assert_eq!(full.message_count(), 1);
        assert_eq!(full.malformed_lines, 1);
        assert_eq!(full.parsed_len, idx.parsed_len);
    }
}
