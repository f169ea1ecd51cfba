//! Aider's chat history (`<project>/.aider.chat.history.md`, at the git root), read as
//! Aider 0.86.2 itself reads it back (`utils.split_chat_history_markdown`, run by
//! `--restore-chat-history`) and checked against what it sent on a real resume
//! (`tests/agent_aider.rs`).
//!
//! The file is Markdown that Aider only appends to: each run starts with a line `#
//! aider chat started at <local time>`, then `#### ` lines are the user's input,
//! `> ` lines Aider's own output (the command line, the model, `Tokens: … Cost: …`),
//! and every other line the model's answer. Each run is one session here (no ids in
//! the file: a session's id is made from the file's path and the run's offset), shown
//! as a unit (`sources/units.rs`) whose `transcript.jsonl` is a dump: a header line
//! (`{"type": "run", …}`), then each message as Aider parses it, `{"role": "user" |
//! "assistant" | "tool", "content": …}` (`tool`: Aider's own output, which it drops on
//! restore). `conversation.json` is the run's user and assistant messages.
//!
//! Aider restores a project's whole history file, every run, earliest first: only the
//! latest run resumes (`aider --restore-chat-history` in its folder), with the earlier
//! runs' messages before its own; an earlier run is marked not resumable. A message's
//! end is known only at the line that starts the next one, so a changed file is read
//! again whole (Aider's files stay small: a few KB a message).

pub mod kind;
mod neutral;
pub mod usage;
pub use neutral::to_neutral;

use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces, MessageRef, Piece};
use crate::sources::projects::ProjectFiles;
use crate::sources::units::{Dump, Signature, UnitInfo, UnitSource};
use crate::store::index::FileStamp;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The history file's name (Aider's default `--chat-history-file`, at the git root).
pub const HISTORY_FILE: &str = ".aider.chat.history.md";
const HEADER: &str = "# aider chat started at ";
/// How many bytes of dumps stay in memory between the requests for a file's runs (the
/// first index asks for runs of many files in turn: each file is parsed once while
/// the project histories fit).
const KEPT_BYTES: usize = 32 << 20;
/// The largest history file read (a bigger one shows as one unreadable session).
const MAX_FILE: u64 = 256 << 20;

/// One message as `split_chat_history_markdown(include_tool=True)` makes it, and the
/// run its first line is in.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedMessage {
    pub role: &'static str,
    pub content: String,
    pub run: usize,
}

/// One run: where its header line starts and the local time it names.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub offset: u64,
    pub started: Option<String>,
}

/// Python's `str.splitlines(keepends=True)` of text read in universal-newline mode
/// (`\r\n` and `\r` already `\n`): the line separators Python knows.
fn python_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if matches!(
            c,
            '\n' | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        ) {
            let end = i + c.len_utf8();
            out.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The runs of a history file and its messages, as Aider parses it (`raw`: the file's
/// text), and Aider's own output at the end of the file, which its parser leaves out
/// (the usage reader still reads it: it holds the last answer's token counts). A run's offset is where its header line starts in the text as Aider reads it
/// (`\r\n` and `\r` read as `\n`); a part before the first header (a file Aider did
/// not start) is a run of its own.
pub fn parse(raw: &str) -> (Vec<Run>, Vec<ParsedMessage>, Option<(String, usize)>) {
    let text = raw.replace("\r\n", "\n").replace('\r', "\n");
    let mut runs: Vec<Run> = Vec::new();
    let mut messages = Vec::new();
    let (mut user, mut assistant, mut tool) = (Buf::default(), Buf::default(), Buf::default());
    let mut offset = 0u64;
    for line in python_lines(&text) {
        let at = offset;
        offset += line.len() as u64;
        if line.starts_with("# ") {
            if let Some(rest) = line.strip_prefix(HEADER) {
                runs.push(Run {
                    offset: at,
                    started: Some(rest.trim_end().to_string()),
                });
            }
            continue;
        }
        if runs.is_empty() && !line.trim().is_empty() {
            runs.push(Run {
                offset: 0,
                started: None,
            });
        }
        let run = runs.len().saturating_sub(1);
        if let Some(rest) = line.strip_prefix("> ") {
            assistant.flush("assistant", &mut messages);
            user.flush("user", &mut messages);
            tool.push(rest, run);
            continue;
        }
        if let Some(rest) = line.strip_prefix("#### ") {
            assistant.flush("assistant", &mut messages);
            tool.flush("tool", &mut messages);
            user.push(rest, run);
            continue;
        }
        user.flush("user", &mut messages);
        tool.flush("tool", &mut messages);
        assistant.push(line, run);
    }
    // Aider's parser ends with the assistant's and the user's lines: Aider's own output
    // at the very end (the last `Tokens:` line) is not a message.
    assistant.flush("assistant", &mut messages);
    user.flush("user", &mut messages);
    let trailing = (!tool.text.trim().is_empty()).then(|| (tool.text, tool.run.unwrap_or(0)));
    (runs, messages, trailing)
}

/// Lines gathered for one message, and the run of its first line.
#[derive(Default)]
struct Buf {
    text: String,
    run: Option<usize>,
}

impl Buf {
    fn push(&mut self, line: &str, run: usize) {
        self.run.get_or_insert(run);
        self.text.push_str(line);
    }

    /// `append_msg`: kept when it is not blank.
    fn flush(&mut self, role: &'static str, out: &mut Vec<ParsedMessage>) {
        let text = std::mem::take(&mut self.text);
        let run = self.run.take();
        if !text.trim().is_empty() {
            out.push(ParsedMessage {
                role,
                content: text,
                run: run.unwrap_or(0),
            });
        }
    }
}

/// A run's start as RFC 3339, from the local time Aider wrote.
fn local_time(t: &str) -> Option<String> {
    use chrono::TimeZone;
    let naive = chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S").ok()?;
    chrono::Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|t| t.to_rfc3339())
}

fn rfc3339_of_ms(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339())
}

/// The id of the run at `offset` of `file`: no id is in the file.
pub fn run_id(file: &Path, offset: u64) -> String {
    let h = crate::usage_record::key_of(&[
        file.as_os_str().as_encoded_bytes(),
        offset.to_string().as_bytes(),
    ]);
    format!("{h:016x}")
}

/// The unit key of a run: `<file>/<offset>` (a path that does not exist).
fn unit_key(file: &Path, offset: u64) -> PathBuf {
    file.join(offset.to_string())
}

fn split_key(key: &Path) -> Option<(PathBuf, u64)> {
    let offset = key.file_name()?.to_str()?.parse().ok()?;
    Some((key.parent()?.to_path_buf(), offset))
}

/// One history file as last read: its stamp and runs.
#[derive(Clone)]
struct FileState {
    stamp: FileStamp,
    mtime_ms: i64,
    /// Per run (by offset): its signature.
    runs: Vec<(u64, Signature)>,
}

/// A file's state and its runs' dumps, kept between the requests for them.
type KeptDumps = (PathBuf, FileStamp, std::sync::Arc<Vec<RunDump>>);

/// Aider's runs in every history file found (`sources/projects.rs`).
pub struct AiderUnits {
    files: ProjectFiles,
    state: Mutex<HashMap<PathBuf, FileState>>,
    /// The dumps of the files read last, most recent last, within `KEPT_BYTES`.
    last: Mutex<Vec<KeptDumps>>,
}

impl AiderUnits {
    /// `roots`: the folders `--source aider=DIR` names (searched); `detect`: also the
    /// cwds of every other source's sessions.
    pub fn new(roots: Vec<PathBuf>, detect: bool) -> Self {
        AiderUnits {
            files: ProjectFiles::new(HISTORY_FILE, roots, detect),
            state: Mutex::new(HashMap::new()),
            last: Mutex::new(Vec::new()),
        }
    }

    /// Every run's dump of `file` as it is now (`stamp`), made once per state.
    fn dumps(&self, file: &Path, stamp: FileStamp) -> Option<std::sync::Arc<Vec<RunDump>>> {
        if let Some((_, _, d)) = self
            .last
            .lock()
            .unwrap()
            .iter()
            .find(|(f, s, _)| f == file && *s == stamp)
        {
            return Some(d.clone());
        }
        let d = std::sync::Arc::new(dumps_of(file)?);
        let size = |d: &Vec<RunDump>| d.iter().map(|r| r.1.len()).sum::<usize>();
        let mut last = self.last.lock().unwrap();
        last.retain(|(f, ..)| f != file);
        last.push((file.to_path_buf(), stamp, d.clone()));
        // The oldest go while the kept dumps are over their budget (the newest stays).
        while last.len() > 1 && last.iter().map(|k| size(&k.2)).sum::<usize>() > KEPT_BYTES {
            last.remove(0);
        }
        Some(d)
    }

    /// The file's state now: read again when its stamp changed.
    fn read(&self, file: &Path) -> Option<FileState> {
        let meta = std::fs::symlink_metadata(file).ok()?;
        if !meta.is_file() {
            return None;
        }
        let stamp = FileStamp::of(&meta);
        if let Some(s) = self.state.lock().unwrap().get(file)
            && s.stamp == stamp
        {
            return Some(s.clone());
        }
        let dumps = self.dumps(file, stamp)?;
        let mtime_ms = stamp.mtime_ns.div_euclid(1_000_000) as i64;
        let runs = dumps
            .iter()
            .map(|(offset, bytes, updated)| {
                (
                    *offset,
                    Signature {
                        hash: crate::store::atomic::checksum(&[bytes]),
                        updated_ms: updated.unwrap_or(mtime_ms),
                    },
                )
            })
            .collect();
        let s = FileState {
            stamp,
            mtime_ms,
            runs,
        };
        self.state
            .lock()
            .unwrap()
            .insert(file.to_path_buf(), s.clone());
        Some(s)
    }
}

/// One run's dump: its offset, its JSON Lines, its last update (ms) when the file
/// tells it.
type RunDump = (u64, Vec<u8>, Option<i64>);

/// Every run of `file` as its dump: read and parsed whole.
fn dumps_of(file: &Path) -> Option<Vec<RunDump>> {
    let (f, meta) = crate::store::open::open_regular(file).ok()?;
    let mtime_ms = crate::store::index::FileStamp::of(&meta).mtime_ns / 1_000_000;
    let mtime_ms = mtime_ms as i64;
    let header = |offset: u64,
                  started: Option<String>,
                  updated: Option<String>,
                  latest,
                  why: Option<&str>| {
        let cwd = file.parent().map(|p| p.to_string_lossy().into_owned());
        let mut h = serde_json::json!({
            "type": "run",
            "id": run_id(file, offset),
            "file": file.to_string_lossy(),
            "offset": offset,
            "cwd": cwd,
            "started_at": started,
            "updated_at": updated,
            "latest": latest,
        });
        if let Some(why) = why {
            h["unreadable"] = why.into();
        }
        let mut line = h.to_string().into_bytes();
        line.push(b'\n');
        line
    };
    let mtime = rfc3339_of_ms(mtime_ms);
    if meta.len() > MAX_FILE {
        let why = format!("the file is larger than {} MiB", MAX_FILE >> 20);
        return Some(vec![(0, header(0, None, mtime, false, Some(&why)), None)]);
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_FILE + 1), &mut bytes).ok()?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        let why = "the file is not UTF-8, so Aider cannot read it back";
        return Some(vec![(0, header(0, None, mtime, false, Some(why)), None)]);
    };
    let (runs, messages, trailing) = parse(text);
    let mut out = Vec::with_capacity(runs.len());
    for (i, run) in runs.iter().enumerate() {
        let latest = i + 1 == runs.len();
        let started = run.started.as_deref().and_then(local_time);
        let (updated, updated_ms) = if latest {
            (mtime.clone(), None)
        } else {
            let next = runs[i + 1].started.as_deref().and_then(local_time);
            let ms = next.as_deref().and_then(crate::usage_record::parse_time_ms);
            (next, ms)
        };
        let mut dump = header(run.offset, started, updated, latest, None);
        for m in messages.iter().filter(|m| m.run == i) {
            let line = serde_json::json!({"role": m.role, "content": m.content});
            dump.extend_from_slice(line.to_string().as_bytes());
            dump.push(b'\n');
        }
        if let Some((trailing, _)) = trailing.as_ref().filter(|t| t.1 == i) {
            // Not a message to Aider: kept in the dump, marked apart, for the usage
            // counts it holds and for search.
            let line = serde_json::json!({"role": "tool", "content": trailing, "trailing": true});
            dump.extend_from_slice(line.to_string().as_bytes());
            dump.push(b'\n');
        }
        out.push((run.offset, dump, updated_ms));
    }
    Some(out)
}

impl UnitSource for AiderUnits {
    /// A history file changed or went since the last listing (a `stat` of each), or
    /// one came (every known project folder looked at, at most once a second).
    /// (Without it every request under a namespace listed every run of every file
    /// again: most of a first `ls` and `index.json`.)
    fn changed(&self) -> bool {
        if self.files.due(crate::sources::projects::LOOK_FOR_NEW) {
            let files = self.files.files();
            let st = self.state.lock().unwrap();
            if files.len() != st.len() || files.iter().any(|f| !st.contains_key(f)) {
                return true;
            }
        }
        let st = self.state.lock().unwrap();
        st.iter().any(|(f, s)| {
            std::fs::symlink_metadata(f).map(|m| FileStamp::of(&m)).ok() != Some(s.stamp)
        })
    }

    fn list(&self) -> Vec<UnitInfo> {
        let files = self.files.files();
        let mut out = Vec::new();
        let mut keep = std::collections::HashSet::new();
        for file in files {
            let Some(s) = self.read(&file) else { continue };
            let cwd = file.parent().map(|p| p.to_string_lossy().into_owned());
            for (offset, _) in &s.runs {
                out.push(UnitInfo {
                    key: unit_key(&file, *offset),
                    cwd: cwd.clone(),
                });
            }
            keep.insert(file);
        }
        self.state.lock().unwrap().retain(|f, _| keep.contains(f));
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        let (file, offset) = split_key(key)?;
        let s = self.read(&file)?;
        s.runs
            .iter()
            .find(|(o, _)| *o == offset)
            .map(|(_, sig)| *sig)
    }

    fn listed_signature(&self, key: &Path) -> Option<Signature> {
        let (file, offset) = split_key(key)?;
        let st = self.state.lock().unwrap();
        let s = st.get(&file)?;
        s.runs
            .iter()
            .find(|(o, _)| *o == offset)
            .map(|(_, sig)| *sig)
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        let (file, offset) = split_key(key)?;
        let s = self.read(&file)?;
        let all = self.dumps(&file, s.stamp)?;
        let (_, bytes, updated) = all.iter().find(|(o, ..)| *o == offset)?.clone();
        let mtime_ms = s.mtime_ms;
        Some(Dump {
            signature: Signature {
                hash: crate::store::atomic::checksum(&[&bytes]),
                updated_ms: updated.unwrap_or(mtime_ms),
            },
            bytes,
            transient: false,
        })
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        split_key(key).map_or_else(|| key.to_path_buf(), |(file, _)| file)
    }
}

// ---------------------------------------------------------------------------
// The reader of a run's dump

/// Reader of one run's dump (header, then messages).
#[derive(Default)]
pub struct AiderReader {
    header: Option<serde_json::Value>,
    /// (role, start, length) of each message line.
    messages: Vec<(&'static str, u64, u64)>,
    preview: Option<String>,
    entries: u64,
    malformed: u64,
}

impl AiderReader {
    pub fn new() -> AiderReader {
        AiderReader::default()
    }

    fn line(&mut self, bytes: &[u8], at: u64) {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(bytes) else {
            self.malformed += 1;
            return;
        };
        self.entries += 1;
        if self.header.is_none() && v["type"] == "run" {
            self.header = Some(v);
            return;
        }
        let role = match v["role"].as_str() {
            Some("user") => "user",
            Some("assistant") => "assistant",
            Some("tool") => "tool",
            _ => return,
        };
        if role == "user" && self.preview.is_none() {
            self.preview = v["content"]
                .as_str()
                .map(|c| c.trim().lines().next().unwrap_or("").trim_end().to_string())
                .filter(|p| !p.is_empty());
        }
        self.messages.push((role, at, bytes.len() as u64));
    }

    fn header_str(&self, key: &str) -> Option<String> {
        self.header.as_ref()?.get(key)?.as_str().map(str::to_string)
    }
}

impl ForeignReader for AiderReader {
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> u64 {
        let mut pos = 0usize;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[pos..]) {
            self.line(&bytes[pos..pos + nl], offset + pos as u64);
            pos += nl + 1;
        }
        pos as u64
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        let mut s = ForeignSummary {
            id: self.header_str("id").unwrap_or_default(),
            cwd: self.header_str("cwd"),
            preview: self.preview.clone(),
            created_at: self.header_str("started_at"),
            updated_at: self.header_str("updated_at"),
            entries: self.entries,
            malformed_lines: self.malformed,
            // Aider lists no sessions: it restores the whole file.
            listed: false,
            ..ForeignSummary::default()
        };
        let latest = self
            .header
            .as_ref()
            .is_some_and(|h| h["latest"] == serde_json::Value::Bool(true));
        if let Some(why) = self.header_str("unreadable") {
            s.not_resumable_reason = Some(why);
        } else if self.header.is_none() {
            s.not_resumable_reason = Some("not an Aider run".into());
        } else if !latest {
            s.not_resumable_reason = Some(
                "Aider restores a project's whole chat history: only its latest run resumes, after the messages of this and every earlier run"
                    .into(),
            );
        } else {
            s.resumable = true;
        }
        for (role, ..) in self.messages.iter().filter(|m| m.0 != "tool") {
            s.messages += 1;
            *s.roles.entry(role.to_string()).or_insert(0) += 1;
        }
        s
    }

    fn conversation(&self, tail: &[u8]) -> Vec<MessagePieces> {
        self.messages(tail, false)
            .into_iter()
            .map(|m| m.pieces)
            .collect()
    }

    /// The run's user and assistant messages (Aider drops its own output on restore),
    /// whether or not the run resumes: it is what the run said either way.
    fn messages(&self, _tail: &[u8], history: bool) -> Vec<MessageRef> {
        let time = self.header_str("started_at");
        self.messages
            .iter()
            .filter(|m| history || m.0 != "tool")
            .map(|&(role, start, len)| MessageRef {
                pieces: vec![Piece::Range { start, len }],
                entry: None,
                timestamp: time.clone(),
                in_conversation: role != "tool",
                injected: role == "tool",
                ..MessageRef::default()
            })
            .collect()
    }

    fn follows_appends(&self) -> bool {
        // A dump is made again, not appended to.
        false
    }
}
