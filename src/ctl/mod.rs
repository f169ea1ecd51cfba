//! Control files (§4), after Plan 9's acme: a line per command, the reply readable
//! back on the same handle, and a log of recent replies for anyone else.
//!
//! This is FUSE-agnostic: the adapter hands bytes from `write`/`flush` to a
//! `CtlHandle` and copies `read` bytes out of it.

pub mod grammar;

use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::session::{Durable, Session};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};

pub const DEFAULT_MAX_ENTRY_BYTES: usize = 16 << 20;
/// The largest FUSE write request (the mount's `max_write`); a bigger `write(2)`
/// reaches the daemon as pieces of this size (less a page offset).
pub const MAX_WRITE: usize = 1 << 20;
/// How many replies a fresh handle's `read` shows.
pub const LOG_LINES: usize = 64;

/// Which control file a handle writes to.
#[derive(Clone)]
pub enum CtlTarget {
    Root,
    Session(Arc<Session>),
}

impl CtlTarget {
    fn log_key(&self) -> String {
        match self {
            CtlTarget::Root => String::new(),
            CtlTarget::Session(s) => format!("{}/{}", s.namespace, s.dir),
        }
    }
}

/// Shared state of all control files of one mount: the store, the limits, the
/// recent-replies logs and the count of open writers per session.
pub struct CtlService {
    pub store: Arc<Store>,
    pub max_entry_bytes: usize,
    logs: Mutex<HashMap<String, Log>>,
    writers: Mutex<HashMap<String, u64>>,
}

/// One control file's recent replies, and the read-only handles following it.
#[derive(Default)]
struct Log {
    /// The last `LOG_LINES` lines, each ending in `\n`.
    lines: VecDeque<String>,
    /// Their total length: the size `stat` reports.
    bytes: usize,
    /// Read-only handles (with the opener's pid); each gets every new line.
    followers: Vec<(u32, Weak<Mutex<Follow>>)>,
}

impl Log {
    fn text(&self) -> Vec<u8> {
        self.lines.iter().flat_map(|l| l.bytes()).collect()
    }
}

/// What a read-only handle reads: the log as it was at open, then every line logged
/// since. Append-only, so a reader's offsets stay valid (`less`, `tail`, `tail -f`)
/// while the log itself is a ring of 64 lines whose start moves.
#[derive(Default)]
struct Follow {
    /// Offset of `bytes[0]`: the front is dropped past `MAX_FOLLOW` bytes.
    base: u64,
    bytes: Vec<u8>,
}

/// Bytes kept per following handle (a `tail -f` left open for days must not grow
/// the daemon without bound); reads before the kept part return nothing.
const MAX_FOLLOW: usize = 1 << 20;

impl Follow {
    fn size(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    fn push(&mut self, line: &str) {
        self.bytes.extend_from_slice(line.as_bytes());
        if self.bytes.len() > MAX_FOLLOW {
            let over = self.bytes.len() - MAX_FOLLOW / 2;
            let cut = memchr::memchr(b'\n', &self.bytes[over..]).map_or(over, |i| over + i + 1);
            self.bytes.drain(..cut);
            self.base += cut as u64;
        }
    }

    fn read_at(&self, offset: u64, size: usize) -> Vec<u8> {
        let Some(start) = offset.checked_sub(self.base) else {
            return Vec::new();
        };
        let start = (start as usize).min(self.bytes.len());
        let end = start.saturating_add(size).min(self.bytes.len());
        self.bytes[start..end].to_vec()
    }
}

/// One open control file: the partial line carried between writes, and the replies.
pub struct CtlHandle {
    pub target: CtlTarget,
    /// `target.log_key()`, made once: the log and writer maps are keyed by it.
    key: String,
    pub pid: u32,
    pending: Vec<u8>,
    replies: Vec<u8>,
    read_pos: usize,
    wrote: bool,
    log_snapshot: Option<Vec<u8>>,
    counted_as_writer: bool,
    /// A read-only handle's view of the log (offsets honoured, as in every view).
    follow: Option<Arc<Mutex<Follow>>>,
    /// Who wrote last (the kernel's lock owner: one per process's file table).
    writer: Option<u64>,
    /// The kernel splits one big `write(2)` into requests of `MAX_WRITE` and reports
    /// those accepted before the line went over the limit as a short count; the
    /// caller's write of the rest must fail with EFBIG too, not start a new line
    /// mid-entry. Set when the request that went over followed a full-sized one (so
    /// it was a piece of a larger `write(2)`); the next request is then refused.
    oversize: bool,
    /// Length of the last request accepted, to tell a kernel piece from a `write(2)`.
    last_len: usize,
}

/// Outcome of one processed line, for replies and the log.
type LineResult = std::result::Result<String, Error>;

/// What a `write` or `flush` did.
pub enum Written {
    /// Nothing was appended (part of a line, blank lines).
    Nothing,
    /// Lines were appended (or refused) and answered.
    Answered,
    /// Lines were appended; their answer waits for the sync (`--fsync always`).
    /// Whoever holds the handle's lock lets go of it, then calls `Syncing::then`
    /// or `wait`, and answers with `CtlService::finish`.
    Syncing(Syncing),
}

/// Appended lines waiting to be on disk before they are answered.
pub struct Syncing {
    ids: Vec<String>,
    durable: Durable,
}

impl Syncing {
    /// Runs `done` with the ids and the sync's outcome once the lines are on disk
    /// (on the thread that ran the sync, maybe this one).
    pub fn then(self, done: impl FnOnce(Vec<String>, Result<()>) + Send + 'static) {
        let ids = self.ids;
        self.durable.then(move |r| done(ids, r));
    }

    /// Blocks until the lines are on disk.
    pub fn wait(self) -> (Vec<String>, Result<()>) {
        (self.ids, self.durable.wait())
    }
}

impl CtlService {
    pub fn new(store: Arc<Store>, max_entry_bytes: usize) -> Self {
        CtlService {
            store,
            max_entry_bytes,
            logs: Mutex::new(HashMap::new()),
            writers: Mutex::new(HashMap::new()),
        }
    }

    pub fn open(&self, target: CtlTarget, pid: u32, for_writing: bool) -> CtlHandle {
        let mut follow = None;
        if for_writing {
            *self
                .writers
                .lock()
                .unwrap()
                .entry(target.log_key())
                .or_default() += 1;
        } else {
            let mut logs = self.logs.lock().unwrap();
            let log = logs.entry(target.log_key()).or_default();
            let f = Arc::new(Mutex::new(Follow {
                base: 0,
                bytes: log.text(),
            }));
            log.followers.retain(|(_, w)| w.strong_count() > 0);
            log.followers.push((pid, Arc::downgrade(&f)));
            follow = Some(f);
        }
        CtlHandle {
            key: target.log_key(),
            target,
            pid,
            pending: Vec::new(),
            replies: Vec::new(),
            read_pos: 0,
            wrote: false,
            log_snapshot: None,
            counted_as_writer: for_writing,
            follow,
            writer: None,
            oversize: false,
            last_len: 0,
        }
    }

    pub fn release(&self, handle: &CtlHandle) {
        if let Some(f) = &handle.follow {
            let mut logs = self.logs.lock().unwrap();
            if let Some(log) = logs.get_mut(&handle.key) {
                log.followers
                    .retain(|(_, w)| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), &**f));
            }
        }
        if handle.counted_as_writer {
            let mut w = self.writers.lock().unwrap();
            if let Some(n) = w.get_mut(&handle.key) {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// `ctl` handles open for writing on this session now (`meta.json`'s `writers`).
    pub fn writers(&self, session: &Session) -> u64 {
        self.writers_of(&session.namespace, &session.dir)
    }

    /// The same, by namespace and session folder name.
    pub fn writers_of(&self, ns: &str, dir: &str) -> u64 {
        let key = format!("{ns}/{dir}");
        self.writers.lock().unwrap().get(&key).copied().unwrap_or(0)
    }

    /// The size of a control file as `stat` sees it: its log, which a fresh `open`
    /// and `read` return (`session`: `(namespace, dir)`, `None` for the root `ctl`).
    /// A process that holds a read-only handle of it sees that handle's size instead:
    /// `fstat` reaches FUSE without the handle, and `tail -f` polls it to find what
    /// its handle has not read yet (the log's own size stops growing at 64 lines).
    pub fn log_size(&self, session: Option<(&str, &str)>, pid: Option<u32>) -> u64 {
        let key = session.map_or(String::new(), |(ns, dir)| format!("{ns}/{dir}"));
        let logs = self.logs.lock().unwrap();
        let Some(log) = logs.get(&key) else {
            return 0;
        };
        let followed = pid.and_then(|pid| {
            log.followers
                .iter()
                .rev()
                .filter(|(p, _)| *p == pid)
                .find_map(|(_, w)| w.upgrade())
        });
        match followed {
            Some(f) => f.lock().unwrap().size(),
            None => log.bytes as u64,
        }
    }

    /// The size through an open handle: a reader's view; for a writer, the log's.
    pub fn handle_size(&self, h: &CtlHandle) -> u64 {
        match &h.follow {
            Some(f) => f.lock().unwrap().size(),
            None => {
                let logs = self.logs.lock().unwrap();
                logs.get(&h.key).map_or(0, |l| l.bytes as u64)
            }
        }
    }

    /// A `write(2)`: frames lines by `\n`, validates every complete line, and appends
    /// them all or none. Returns what was done (see `Written`), or the error of the
    /// first bad line.
    /// `writer` identifies the writing process's descriptor table (FUSE lock owner).
    pub fn write(&self, h: &mut CtlHandle, data: &[u8], writer: Option<u64>) -> Result<Written> {
        if !h.wrote {
            // Reads so far were of the log; replies are read from their own start.
            h.wrote = true;
            h.read_pos = 0;
        }
        h.writer = writer.or(h.writer);
        if std::mem::take(&mut h.oversize) {
            // The caller's retry of the rest of an oversize line: refused whole.
            h.last_len = 0;
            let e = Error::too_big(format!(
                "the rest of a line longer than --max-entry-bytes ({})",
                self.max_entry_bytes
            ));
            self.record(h, &[Err(e.clone())]);
            return Err(e);
        }
        let cut = memchr::memrchr(b'\n', data);
        let tail_len = match cut {
            Some(i) => data.len() - i - 1,
            None => h.pending.len() + data.len(),
        };
        let last_len = std::mem::replace(&mut h.last_len, data.len());
        if tail_len > self.max_entry_bytes {
            h.pending.clear();
            h.oversize = last_len + 4096 >= MAX_WRITE;
            h.last_len = 0;
            let e = Error::too_big(format!(
                "a line longer than --max-entry-bytes ({}) without a newline",
                self.max_entry_bytes
            ));
            self.record(h, &[Err(e.clone())]);
            return Err(e);
        }
        let Some(cut) = cut else {
            h.pending.extend_from_slice(data);
            return Ok(Written::Nothing);
        };
        let result = if h.pending.is_empty() {
            // The usual case, a whole line per write: no copy.
            self.process(h, &data[..cut])
        } else {
            let mut complete = std::mem::take(&mut h.pending);
            complete.extend_from_slice(&data[..cut]);
            self.process(h, &complete)
        };
        h.pending.clear();
        h.pending.extend_from_slice(&data[cut + 1..]);
        if result.is_err() {
            // The failed write is not consumed: its unterminated rest goes with it.
            h.pending.clear();
        }
        result
    }

    /// `flush` (each `close`): a final line without `\n` is processed now — unless the
    /// closer is another process than the writer (a forked child closing its inherited
    /// copy must not cut the writer's half-written line in two). `closer: None` (the
    /// last release) always processes it. Returns what was done (see `Written`).
    pub fn flush(&self, h: &mut CtlHandle, closer: Option<u64>) -> Result<Written> {
        if h.pending.is_empty() {
            return Ok(Written::Nothing);
        }
        if let (Some(c), Some(w)) = (closer, h.writer)
            && c != w
        {
            return Ok(Written::Nothing);
        }
        let line = std::mem::take(&mut h.pending);
        self.process(h, &line)
    }

    /// `read`: a read-only handle reads its view of the log at `offset`. A handle
    /// open for writing is a stream (the kernel passes no offsets): the replies to
    /// its writes, or (if it wrote nothing yet) the log.
    pub fn read(&self, h: &mut CtlHandle, offset: u64, size: usize) -> Vec<u8> {
        if let Some(f) = &h.follow {
            return f.lock().unwrap().read_at(offset, size);
        }
        let source: &[u8] = if h.wrote {
            &h.replies
        } else {
            if h.log_snapshot.is_none() {
                let logs = self.logs.lock().unwrap();
                let text = logs.get(&h.key).map(Log::text);
                h.log_snapshot = Some(text.unwrap_or_default());
            }
            h.log_snapshot.as_deref().unwrap_or_default()
        };
        let start = h.read_pos.min(source.len());
        let end = (start + size).min(source.len());
        h.read_pos = end;
        let out = source[start..end].to_vec();
        if h.wrote && h.read_pos == h.replies.len() {
            // Everything read: the buffer starts over (replies are a stream).
            h.replies.clear();
            h.read_pos = 0;
        }
        out
    }

    /// Validates all lines of `bytes` (which ends without its last `\n`), then appends.
    fn process(&self, h: &mut CtlHandle, bytes: &[u8]) -> Result<Written> {
        // Split with memchr and test blankness from the ends: a byte-at-a-time split
        // and scan of each line was 6% of an append's time in perf.
        let mut lines: Vec<&[u8]> = Vec::with_capacity(1);
        let mut from = 0;
        for end in memchr::memchr_iter(b'\n', bytes).chain([bytes.len()]) {
            let line = &bytes[from..end];
            from = end + 1;
            let blank = line.trim_ascii().is_empty();
            if !blank {
                lines.push(line);
            }
        }
        if lines.is_empty() {
            return Ok(Written::Nothing);
        }
        let results = match &h.target {
            CtlTarget::Session(s) => match self.append_to(s, &lines) {
                Ok((ids, Some(durable))) => return Ok(Written::Syncing(Syncing { ids, durable })),
                Ok((ids, None)) => ids.into_iter().map(Ok).collect(),
                Err(results) => results,
            },
            CtlTarget::Root => self.create_sessions(&lines),
        };
        self.answer(h, results)
    }

    /// Answers lines that were `Syncing`, once their sync ended with `outcome`.
    pub fn finish(&self, h: &mut CtlHandle, ids: Vec<String>, outcome: Result<()>) -> Result<()> {
        let results = match outcome {
            Ok(()) => ids.into_iter().map(Ok).collect(),
            Err(e) => {
                // The failed write is not consumed: its unterminated rest goes with it.
                h.pending.clear();
                vec![Err(e); ids.len()]
            }
        };
        self.answer(h, results).map(|_| ())
    }

    /// Records the replies; the write fails with the first bad line's errno (not a
    /// bystander's ECANCELED).
    fn answer(&self, h: &mut CtlHandle, results: Vec<LineResult>) -> Result<Written> {
        self.record(h, &results);
        let mut errors = results.into_iter().filter_map(|r| r.err());
        match errors.next() {
            Some(e) if e.errno == libc::ECANCELED => {
                Err(errors.find(|e| e.errno != libc::ECANCELED).unwrap_or(e))
            }
            Some(e) => Err(e),
            None => Ok(Written::Answered),
        }
    }

    fn check_size(&self, line: &[u8]) -> Result<()> {
        if line.len() > self.max_entry_bytes {
            return Err(Error::too_big(format!(
                "line of {} bytes is over --max-entry-bytes ({})",
                line.len(),
                self.max_entry_bytes
            )));
        }
        Ok(())
    }

    /// The ids of the appended lines (and the sync they wait for), or every line's
    /// result when they were not appended.
    fn append_to(
        &self,
        session: &Session,
        lines: &[&[u8]],
    ) -> std::result::Result<(Vec<String>, Option<Durable>), Vec<LineResult>> {
        let parsed: Vec<Result<_>> = lines
            .iter()
            .map(|l| {
                self.check_size(l)
                    .and_then(|_| grammar::parse_session_line(l))
            })
            .collect();
        if parsed.iter().any(|p| p.is_err()) {
            return Err(not_appended(parsed));
        }
        let entries: Vec<_> = parsed.into_iter().map(|p| p.unwrap()).collect();
        session
            .append_unsynced(&entries, &grammar::check_against, self.store.append)
            .map_err(|e| vec![Err(e); entries.len()])
    }

    fn create_sessions(&self, lines: &[&[u8]]) -> Vec<LineResult> {
        let parsed: Vec<Result<_>> = lines
            .iter()
            .map(|l| self.check_size(l).and_then(|_| grammar::parse_root_line(l)))
            .collect();
        if parsed.iter().any(|p| p.is_err()) {
            return not_appended(parsed);
        }
        parsed
            .into_iter()
            .map(|p| {
                let req = p.unwrap();
                let (s, id) = self.store.create_session(
                    &req.cwd,
                    req.session_id.as_deref(),
                    &req.first,
                    &grammar::check_against,
                )?;
                // The session's folder as the mount shows it.
                let folder = crate::store::naming::mount_name(&s.namespace);
                Ok(format!("{id} {folder}/{}", s.dir))
            })
            .collect()
    }

    /// Writes the reply lines to the handle and to the control file's log.
    fn record(&self, h: &mut CtlHandle, results: &[LineResult]) {
        use std::fmt::Write;
        let now = crate::store::naming::timestamp(chrono::Utc::now());
        let mut logs = self.logs.lock().unwrap();
        let log = match logs.get_mut(&h.key) {
            Some(log) => log,
            None => logs.entry(h.key.clone()).or_default(),
        };
        for r in results {
            // The log line is `<time> pid=<pid> <reply>\n`; the handle gets `<reply>\n`.
            // The line dropping off the log's end lends its allocation.
            let mut line = match log.lines.len() >= LOG_LINES {
                true => log.lines.pop_front().unwrap_or_default(),
                false => String::new(),
            };
            log.bytes -= line.len();
            line.clear();
            let _ = write!(line, "{now} pid={} ", h.pid);
            let reply_at = line.len();
            let _ = match r {
                Ok(text) => write!(line, "ok {text}"),
                Err(e) => write!(
                    line,
                    "err {} {}",
                    e.errno_name(),
                    e.reason.replace('\n', " ")
                ),
            };
            line.push('\n');
            h.replies.extend_from_slice(&line.as_bytes()[reply_at..]);
            h.trim_replies();
            log.followers.retain(|(_, w)| match w.upgrade() {
                Some(f) => {
                    f.lock().unwrap().push(&line);
                    true
                }
                None => false,
            });
            log.bytes += line.len();
            log.lines.push_back(line);
        }
    }
}

/// Unread replies kept per handle: a writer that never reads them (a long-lived
/// `>>`-style descriptor) must not grow the daemon without bound. Past this, the
/// oldest whole reply lines are dropped down to half of it, so the cost of dropping
/// is spread over many appends (dropping one line per append moved the whole buffer
/// each time: 5% of an append's time in `perf`).
const MAX_UNREAD_REPLIES: usize = 1 << 20;

impl CtlHandle {
    fn trim_replies(&mut self) {
        let unread = self.replies.len() - self.read_pos;
        if unread > MAX_UNREAD_REPLIES {
            let over = unread - MAX_UNREAD_REPLIES / 2;
            let cut = memchr::memchr(b'\n', &self.replies[self.read_pos + over..])
                .map_or(self.replies.len(), |i| self.read_pos + over + i + 1);
            self.replies.drain(..cut);
            self.read_pos = 0;
        }
    }
}

/// Replies for a write that had a bad line: each bad line says why; the good ones say
/// they were not appended because of it.
fn not_appended<T>(parsed: Vec<Result<T>>) -> Vec<LineResult> {
    let first_bad = parsed.iter().position(|p| p.is_err()).unwrap_or(0) + 1;
    parsed
        .into_iter()
        .map(|p| match p {
            Err(e) => Err(e),
            Ok(_) => Err(Error::new(
                libc::ECANCELED,
                format!("not appended: line {first_bad} of the same write is invalid"),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::store::index::SessionIndex;
    use crate::store::session::render_batch;

    /// The append path takes its own lines into the index without parsing them
    /// again; that must give exactly what parsing them gives, for every kind of line.
    #[test]
    fn written_lines_index_like_parsed_ones() {
        let lines: &[&str] = &[
            r#"{"role":"user","content":"hi \u00e9 \"q\" 日本"}"#,
            r#"{"content":"role second","role":"assistant"}"#,
            r#"{"type":"message","message":{"role":"tool","content":[1,2]},"x":1}"#,
            r#"{"type":"title","title":"T"}"#,
            r#"{"type":"metadata","data":{"k":"v"}}"#,
            r#"{"type":"bash-output","output":"ok","we\"ird":true}"#,
            r#"{"type":"compaction","summary":"s","first-kept-entry-id":null}"#,
            r#"{"role":"user","content":"after"}"#,
            r#"{"type":"compaction","summary":"s2","messages":[{"role":"user","content":"r"}]}"#,
        ];
        let entries: Vec<_> = lines
            .iter()
            .map(|l| super::grammar::parse_session_line(l.as_bytes()).unwrap())
            .collect();
        let header = b"{\"type\":\"session\",\"version\":2,\"id\":\"s\",\"cwd\":\"/p\"}\n";
        let mut parsed = SessionIndex::new();
        parsed.ingest(0, header);
        for batch in [&entries[..1], &entries[1..4], &entries[4..], &entries[..]] {
            let start = parsed.parsed_len;
            let rendered = render_batch(&parsed, batch, start).unwrap();
            // A clone shares the message table: give it its own.
            let mut written = parsed.clone();
            written.messages = std::sync::Arc::new(std::sync::RwLock::new(
                parsed.messages.read().unwrap().clone(),
            ));
            parsed.ingest(start, rendered.text.as_bytes());
            written.ingest_written(start, &rendered.written_lines());
            assert_eq!(
                serde_json::to_value(&written).unwrap(),
                serde_json::to_value(&parsed).unwrap()
            );
            assert_eq!(
                *written.messages.read().unwrap(),
                *parsed.messages.read().unwrap()
            );
            assert_eq!(written.parsed_len, parsed.parsed_len);
        }
        assert_eq!(parsed.message_count(), 8);
    }
}
