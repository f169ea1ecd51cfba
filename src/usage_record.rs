//! What one model response used, whatever agent recorded it (SPEC §13): the neutral
//! usage record every source's token counts become, as `neutral.rs` is for messages.
//! Each agent's module under `sources/` finds its records (`sources/<agent>/usage.rs`);
//! `usage/` adds them up, prices them and draws them, never reading an agent's format.
//!
//! A source yields its records unit by unit (a session file, or a file it does not show
//! as a session that still records model calls: Claude Code's subagent transcripts),
//! through a [`UsageLedger`] that remembers what it was given: an unchanged unit is not
//! read again, a grown one is read on from its [`UsageMark`] when the source can prove
//! the bytes before the mark are the ones it read.

use crate::agent::Agent;
use std::sync::Arc;

/// Token counts of one response. `input` never includes what `cache_read` counts
/// (Codex's and Copilot's input does: the source takes it out); `reasoning` is what an
/// agent counts apart from `output` (Gemini's thoughts), priced as output; an agent
/// that counts reasoning inside `output` (Codex) leaves it 0.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// Prompt-cache writes kept five minutes (Anthropic's default; any agent's cache
    /// write without a duration).
    pub cache_write_5m: u64,
    /// Prompt-cache writes kept one hour (Claude Code's `ephemeral_1h_input_tokens`).
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub reasoning: u64,
}

impl Tokens {
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }

    /// Every token the response counted, once.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_write() + self.cache_read + self.reasoning
    }

    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_write_5m += o.cache_write_5m;
        self.cache_write_1h += o.cache_write_1h;
        self.cache_read += o.cache_read;
        self.reasoning += o.reasoning;
    }
}

/// One model response's usage.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRecord {
    /// When the response was recorded: milliseconds since the epoch.
    pub time_ms: i64,
    pub agent: Agent,
    /// The session it belongs to, by the agent's id (a subagent's file: its parent's).
    pub session: Arc<str>,
    pub cwd: Option<Arc<str>>,
    /// The machine it was recorded on, when it is not this one (a peer's store).
    pub host: Option<Arc<str>>,
    /// The model as the agent names it; `None` when the file names none.
    pub model: Option<Arc<str>>,
    pub tokens: Tokens,
    /// The cost the agent itself recorded (USD), which wins over a computed one.
    pub recorded_cost: Option<f64>,
    /// Claude Code's fast mode (`usage.speed: "fast"`): priced at a multiple.
    pub fast: bool,
    /// What makes two records one response, whichever files they are in (Claude Code
    /// repeats a response on every content block, in resumed copies and subagent
    /// files; Codex forks replay their parent's lines; kept and synced copies repeat
    /// everything). `None`: the record is counted as it is.
    pub key: Option<u64>,
    /// Among records of one key the highest revision wins (an agent that rewrites a
    /// message, as Gemini CLI does, gives the later one a higher revision), then the
    /// one with the most tokens, then the first read.
    pub revision: u64,
}

/// The dedupe key of a record from its parts (stable across builds: it is persisted).
pub fn key_of(parts: &[&[u8]]) -> u64 {
    let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() * 2);
    let lens: Vec<[u8; 8]> = parts
        .iter()
        .map(|p| (p.len() as u64).to_le_bytes())
        .collect();
    for (p, l) in parts.iter().zip(&lens) {
        all.push(l);
        all.push(p);
    }
    crate::store::atomic::checksum(&all)
}

/// A unit whose usage a source counts, as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageUnit {
    /// Unique within its source (a file's path, a database session's key).
    pub key: String,
    /// Whether it changed since the ledger last read it: (device, inode, size, mtime,
    /// ctime) of a file; a database unit's signature.
    pub stamp: [u64; 5],
}

/// Where a reading of a unit stopped: proof of which bytes were read (the file's
/// identity and a check of its first `offset` bytes), and the reader's state there.
#[derive(Debug, Clone, Default, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct UsageMark {
    pub identity: u64,
    pub offset: u64,
    pub state: Vec<u8>,
}

impl UsageMark {
    pub fn is_none(&self) -> bool {
        *self == UsageMark::default()
    }
}

/// What a reading of one unit gave.
#[derive(Debug, Default)]
pub struct UnitUsage {
    /// The records after the mark only (the ledger keeps those before it); false: every
    /// record of the unit, the ledger forgets what it held.
    pub resumed: bool,
    /// Read to the end (false: the ledger asked to stop; the mark says how far).
    pub complete: bool,
    pub mark: UsageMark,
    pub records: Vec<UsageRecord>,
    /// Usage objects that could not be read (skipped): how many, and the first one's
    /// place and reason.
    pub malformed: u64,
    pub first_malformed: Option<String>,
}

/// What a source gives its units' usage to.
pub trait UsageLedger {
    /// Where to go on reading `unit` from (`UsageMark::default()`: its start), or
    /// `None` when the ledger holds it as of its stamp and it need not be read.
    fn since(&mut self, unit: &UsageUnit) -> Option<UsageMark>;
    /// `unit` was read.
    fn took(&mut self, unit: &UsageUnit, read: UnitUsage);
    /// Asked to stop: a source returns at the next unit (or chunk of a large one),
    /// having given what it read.
    fn stop(&self) -> bool {
        false
    }
    /// Called between units and chunks: background work waits here while foreground
    /// requests are served.
    fn pause(&self) {}
    /// How many units a source may read at once (a count someone waits for uses the
    /// cores; background work reads one at a time).
    fn workers(&self) -> usize {
        1
    }
}

/// Records found while reading, and the usage objects that could not be read.
#[derive(Debug, Default)]
pub struct UsageOut {
    pub records: Vec<UsageRecord>,
    pub malformed: u64,
    pub first_malformed: Option<String>,
}

impl UsageOut {
    /// A usage object at `offset` that could not be read.
    pub fn malformed(&mut self, offset: u64, why: impl FnOnce() -> String) {
        self.malformed += 1;
        if self.first_malformed.is_none() {
            self.first_malformed = Some(format!("at byte {offset}: {}", why()));
        }
    }
}

/// What a unit's file says of itself before it is read: what the agent's records name
/// only sometimes (a Gemini chat's project folder is its cwd; a file's name its id).
#[derive(Debug, Clone, Default)]
pub struct UnitFacts {
    pub agent: Agent,
    pub session: Option<String>,
    pub cwd: Option<String>,
    pub host: Option<String>,
}

/// One agent's reader of usage, fed a unit's bytes from its start in order, as
/// `ForeignReader` is: it keeps only what the next lines need (a Codex rollout's
/// running totals and model), so that a grown file costs only its new bytes.
pub trait UsageReader: Send {
    /// Reads the complete lines of `bytes` (the unit's content from `offset`), adds
    /// their records to `out`, returns how many bytes it consumed.
    fn feed(&mut self, offset: u64, bytes: &[u8], out: &mut UsageOut) -> u64;
    /// The end of the unit: its unterminated rest (a torn last line, or the whole of a
    /// file that is one JSON document, which `feed` leaves unconsumed).
    fn finish(&mut self, _offset: u64, _tail: &[u8], _out: &mut UsageOut) {}
    /// Whether the agent only appends to the unit, so that a grown one can be read on
    /// from a mark.
    fn follows_appends(&self) -> bool {
        true
    }
    /// What it keeps between lines (a header's session id and cwd, running totals),
    /// which a mark saves and a fresh reader of the grown unit takes back to read on
    /// from it: any borsh value. `None` (the default): each line stands alone.
    fn state(&mut self) -> Option<&mut dyn SavedState> {
        None
    }
}

impl dyn UsageReader {
    /// Its state, for a mark.
    pub fn save(&mut self) -> Vec<u8> {
        self.state().map_or_else(Vec::new, |s| s.save())
    }

    /// Takes back, on a fresh reader, what `save` gave (false: bytes it does not
    /// understand, and the unit is read from its start).
    pub fn restore(&mut self, bytes: &[u8]) -> bool {
        match self.state() {
            Some(s) => s.restore(bytes),
            None => bytes.is_empty(),
        }
    }
}

/// `value` in borsh, in a buffer of exactly its length: `borsh::to_vec` starts at
/// 1 KiB, and a mark is kept per session (10,000 small states held 10 MB).
pub fn exact_borsh<T: borsh::BorshSerialize>(value: &T) -> Option<Vec<u8>> {
    let len = borsh::object_length(value).ok()?;
    let mut out = Vec::with_capacity(len);
    borsh::to_writer(&mut out, value).ok()?;
    Some(out)
}

/// A reader's state as one borsh value (every type that derives borsh is one).
pub trait SavedState {
    fn save(&self) -> Vec<u8>;
    fn restore(&mut self, bytes: &[u8]) -> bool;
}

impl<T: borsh::BorshSerialize + borsh::BorshDeserialize> SavedState for T {
    fn save(&self) -> Vec<u8> {
        exact_borsh(self).unwrap_or_default()
    }

    fn restore(&mut self, bytes: &[u8]) -> bool {
        match borsh::from_slice::<T>(bytes) {
            Ok(v) => {
                *self = v;
                true
            }
            Err(_) => false,
        }
    }
}

/// Runs `line` on each complete line of `bytes` (which starts at `offset`); returns the
/// bytes consumed (through the last `\n`).
pub fn each_line(offset: u64, bytes: &[u8], mut line: impl FnMut(u64, &[u8])) -> u64 {
    let mut pos = 0usize;
    while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
        line(offset + pos as u64, &bytes[pos..pos + nl]);
        pos += nl + 1;
    }
    pos as u64
}

/// Runs `line` on each complete line of `bytes` (which starts at `offset`) that holds
/// what `finder` looks for: one search through all of `bytes`, then each hit's line,
/// so the lines without it (most of a session's bytes) cost that search only. Returns
/// the bytes consumed (through the last `\n`).
pub fn each_line_holding(
    offset: u64,
    bytes: &[u8],
    finder: &memchr::memmem::Finder,
    mut line: impl FnMut(u64, &[u8]),
) -> u64 {
    let Some(last) = memchr::memrchr(b'\n', bytes) else {
        return 0;
    };
    let data = &bytes[..=last];
    let mut next = 0;
    for hit in finder.find_iter(data) {
        if hit < next {
            continue;
        }
        let start = memchr::memrchr(b'\n', &data[next..hit]).map_or(next, |p| next + p + 1);
        let end = hit + memchr::memchr(b'\n', &data[hit..]).unwrap_or(data.len() - hit);
        line(offset + start as u64, &data[start..end]);
        next = end + 1;
    }
    data.len() as u64
}

/// A byte-string searcher built once (building one per line was a tenth of a count).
pub struct Needle(std::sync::LazyLock<memchr::memmem::Finder<'static>>);

impl Needle {
    pub const fn new(f: fn() -> memchr::memmem::Finder<'static>) -> Self {
        Needle(std::sync::LazyLock::new(f))
    }

    pub fn finder(&self) -> &memchr::memmem::Finder<'static> {
        &self.0
    }

    pub fn is_in(&self, hay: &[u8]) -> bool {
        self.0.find(hay).is_some()
    }
}

/// An RFC 3339 time as milliseconds since the epoch.
pub fn parse_time_ms(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// A JSON number that is a token count: a non-negative integer.
pub fn count_of(v: &serde_json::Value) -> Option<u64> {
    v.as_u64()
}

/// A JSON string's value (`None` for anything else).
pub fn raw_str(v: Option<&serde_json::value::RawValue>) -> Option<std::borrow::Cow<'_, str>> {
    let v = v?;
    let s = v.get();
    if !s.starts_with('"') {
        return None;
    }
    // Borrowed when it has no escapes (most do not).
    let inner = &s[1..s.len() - 1];
    if !inner.contains('\\') {
        return Some(std::borrow::Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(s)
        .ok()
        .map(std::borrow::Cow::Owned)
}

/// A token count at a JSON value: `Ok(None)` when absent or `null`, an error for
/// anything but a non-negative integer.
pub fn raw_count(v: Option<&serde_json::value::RawValue>) -> Result<Option<u64>, String> {
    match v.map(|v| v.get()) {
        None | Some("null") => Ok(None),
        Some(s) => s
            .parse::<u64>()
            .map(Some)
            .map_err(|_| format!("{s} is not a token count")),
    }
}

/// `raw_count` of the field `name`, its error naming it.
pub fn field_count(
    name: &str,
    v: Option<&serde_json::value::RawValue>,
) -> Result<Option<u64>, String> {
    raw_count(v).map_err(|why| format!("{name}: {why}"))
}

/// A JSON number (a recorded cost); `None` for anything else.
pub fn raw_number(v: Option<&serde_json::value::RawValue>) -> Option<f64> {
    v.and_then(|v| v.get().parse::<f64>().ok())
        .filter(|n| n.is_finite())
}

/// Every record of a unit whose bytes are all at hand (a kept copy decompressed, a
/// test's file): fed whole, then finished.
pub fn read_all(reader: &mut dyn UsageReader, bytes: &[u8]) -> UsageOut {
    let mut out = UsageOut::default();
    let used = (reader.feed(0, bytes, &mut out) as usize).min(bytes.len());
    reader.finish(used as u64, &bytes[used..], &mut out);
    out
}
