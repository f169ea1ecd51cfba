//! `fen-fs export` (SPEC §16) as a library: one session of any source (fen's store,
//! another agent's, a kept copy, a peer's) written as one self-contained HTML file,
//! as `conversation.md` or as `conversation.json`, with every text redacted
//! (`crate::redact`) unless asked not to. The web page's Export button calls
//! [`to_temp`]; the command ([`crate::commands`]) calls [`to_path`] or [`to_temp`].
//!
//! It streams: messages come one at a time from the source (`each_message`), are
//! redacted and written at once; `conversation.json` is read line by line from its
//! view. Nothing is ever partial: the export goes to a temporary file (beside the
//! output, renamed over it at the end; or unnamed, then copied to stdout), so a scan
//! that fails writes nothing.

use crate::error::{Error, Result};
use crate::neutral::{Message, SessionFacts};
use crate::redact::{Counts, Options as RedactOptions, PathNames, Redactor};
use crate::sources::SessionSource;
use crate::usage::report::{SessionCost, SessionKey};
use crate::views::html::{self, HtmlHeader, Mode, ResumeLine};
use crate::views::{ViewKind, markdown};
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::Path;

pub use crate::resume::find::{Found, find_among as find};

/// What an export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One self-contained HTML file (the web page's Session rendering).
    #[default]
    Html,
    /// `conversation.md` (§9).
    Markdown,
    /// `conversation.json` (§2.2).
    Json,
}

impl Format {
    pub const NAMES: [&'static str; 3] = ["html", "md", "json"];

    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "html" => Some(Format::Html),
            "md" | "markdown" => Some(Format::Markdown),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    /// The file name extension (and the web page's download name's).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Markdown => "md",
            Format::Json => "json",
        }
    }

    /// The media type a web server sends it with.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Html => "text/html; charset=utf-8",
            Format::Markdown => "text/markdown; charset=utf-8",
            Format::Json => "application/json",
        }
    }
}

/// How to export.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub format: Format,
    /// Replace secrets (on by default; `--no-redact` turns it off, and then the
    /// report says what was left in).
    pub redact: bool,
    /// Also replace the home folder by `~` and the user name by `user`.
    pub redact_paths: bool,
    /// The session's tokens and cost as counted, for the HTML header ([`counted`]:
    /// the usage ledgers as last saved; the web page: its own count).
    pub counted: Option<SessionCost>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: Format::Html,
            redact: true,
            redact_paths: false,
            counted: None,
        }
    }
}

/// The tokens and cost of session `ns/dir` of `source` as its usage ledger last
/// saved them (by a mount's count, `fen-fs usage`, `fen-fs web` or `fen-fs mcp`),
/// kept with the store at `store_root`: the ledger is read, no session file, and
/// nothing is counted now, so an export never waits for a count. `None` when the
/// session was never counted (or recorded no usage). A session that grew since
/// shows what was counted then.
pub fn counted(
    source: &std::sync::Arc<dyn SessionSource>,
    ns: &str,
    dir: &str,
    store_root: &Path,
) -> Option<SessionCost> {
    let cache = crate::usage::existing_ledger_root(store_root)?;
    let id = source
        .listings(ns)
        .ok()?
        .into_iter()
        .find(|l| l.dir == dir)
        .map(|l| l.id)
        .filter(|id| !id.is_empty())?;
    let usage = crate::usage::Usage::new(
        vec![source.clone()],
        Some(&cache),
        crate::usage::prices::Prices::builtin(),
    );
    let key = SessionKey::new(source.agent(), source.host(), &id);
    crate::usage::report::by_session(&usage.entries())
        .get(&key)
        .copied()
}

/// What an export did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Secrets found, per kind (replaced, or left in with `redact: false`).
    pub counts: Counts,
    pub redacted: bool,
    /// Messages written (HTML and Markdown) or lines (JSON).
    pub messages: usize,
    /// The session's id (for a file name).
    pub id: String,
}

impl Report {
    /// The line for stderr: `redacted 3: 2 anthropic-key, 1 private-key`, or what
    /// `--no-redact` left in.
    pub fn summary(&self) -> String {
        let mut line = if self.redacted {
            self.counts.summary()
        } else if self.counts.total() == 0 {
            "--no-redact: nothing redacted (no secret found)".to_string()
        } else {
            format!(
                "--no-redact: left in {} secret{}: {}",
                self.counts.total(),
                if self.counts.total() == 1 { "" } else { "s" },
                self.counts.kinds()
            )
        };
        if self.counts.home + self.counts.user > 0 {
            line.push_str(&format!(
                "; paths: {} home folder, {} user name",
                self.counts.home, self.counts.user
            ));
        }
        line
    }
}

/// A download name: `<agent>-<id>.<ext>`, safe as a file name.
pub fn file_name(agent: &str, id: &str, format: Format) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(80)
            .collect::<String>()
            .trim_start_matches('.')
            .to_string()
    };
    format!("{}-{}.{}", clean(agent), clean(id), format.extension())
}

/// Writes the export of `ns/dir` to `out`. On an error, what `out` holds is partial:
/// callers that must leave nothing partial use [`to_path`] or [`to_temp`].
pub fn write(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    options: &Options,
    out: &mut dyn Write,
) -> Result<Report> {
    let redactor = Redactor::new(&RedactOptions {
        paths: options
            .redact_paths
            .then(|| PathNames::of_this_user(&recorded_folders(source, ns, dir))),
    });
    let mut report = Report {
        redacted: options.redact,
        ..Report::default()
    };
    let scan = Scan {
        redactor: &redactor,
        replace: options.redact,
    };
    match options.format {
        Format::Html => write_html(source, ns, dir, &scan, options.counted, &mut report, out)?,
        Format::Markdown => write_markdown(source, ns, dir, &scan, &mut report, out)?,
        Format::Json => write_json(source, ns, dir, &scan, &mut report, out)?,
    }
    out.flush().map_err(|e| Error::io("export", &e))?;
    Ok(report)
}

/// The export whole in an unnamed temporary file, read from its start (the web
/// page's Export button streams it; stdout gets it only once it is whole).
pub fn to_temp(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    options: &Options,
) -> Result<(std::fs::File, Report)> {
    let mut file =
        tempfile::tempfile().map_err(|e| Error::io("a temporary file for the export", &e))?;
    let report = {
        let mut w = BufWriter::with_capacity(1 << 20, &mut file);
        let report = write(source, ns, dir, options, &mut w)?;
        w.flush().map_err(|e| Error::io("export", &e))?;
        report
    };
    file.rewind().map_err(|e| Error::io("export", &e))?;
    Ok((file, report))
}

/// The export written to `path`: to a temporary file beside it, renamed over it
/// once whole (an existing file is replaced only by a whole export, and keeps its
/// permissions; a new one is made as the umask says).
pub fn to_path(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    options: &Options,
    path: &Path,
) -> Result<Report> {
    let shown = path.display().to_string();
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".fen-export-")
        .suffix(".tmp")
        .tempfile_in(folder)
        .map_err(|e| Error::io(&shown, &e))?;
    let report = {
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        let report = write(source, ns, dir, options, &mut w)?;
        w.flush().map_err(|e| Error::io(&shown, &e))?;
        report
    };
    let mode = match std::fs::metadata(path) {
        Ok(m) => m.permissions(),
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o666 & !umask())
        }
    };
    tmp.as_file()
        .set_permissions(mode)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| Error::io(&shown, &e))?;
    tmp.persist(path).map_err(|e| Error::io(&shown, &e.error))?;
    Ok(report)
}

/// This process's umask, from /proc (setting it to read it would race other
/// threads); 022 when unknown.
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// The folders a session records (its cwd, and as on its host), whose homes
/// `--redact-paths` hides too: a peer's session was recorded under another home.
fn recorded_folders(source: &dyn SessionSource, ns: &str, dir: &str) -> Vec<String> {
    source
        .listings(ns)
        .ok()
        .and_then(|ls| ls.into_iter().find(|l| l.dir == dir))
        .map(|l| l.cwd.into_iter().chain(l.cwd_on_host).collect())
        .unwrap_or_default()
}

/// How texts are scanned: replaced, or only counted (`--no-redact`).
struct Scan<'a> {
    redactor: &'a Redactor,
    replace: bool,
}

impl Scan<'_> {
    fn message(&self, m: &mut Message, counts: &mut Counts) {
        if self.replace {
            self.redactor.message(m, counts);
        } else {
            self.redactor.message(&mut m.clone(), counts);
        }
    }

    fn facts(&self, f: &mut SessionFacts, counts: &mut Counts) {
        if self.replace {
            self.redactor.facts(f, counts);
        } else {
            self.redactor.facts(&mut f.clone(), counts);
        }
    }

    /// A line of conversation.json as it is to be written.
    fn json_line<'l>(&self, line: &'l str, counts: &mut Counts) -> std::borrow::Cow<'l, str> {
        match self.redactor.json_line(line, counts) {
            Some(r) if self.replace => r.into(),
            _ => line.into(),
        }
    }
}

/// Tests make a scan fail at the Nth message (`FEN_FS_TEST_EXPORT_FAIL_AT=N`), to
/// check that nothing partial is written.
fn fail_at() -> Option<usize> {
    std::env::var("FEN_FS_TEST_EXPORT_FAIL_AT")
        .ok()?
        .parse()
        .ok()
}

fn check_fail(at: Option<usize>, index: usize) -> Result<()> {
    match at {
        Some(n) if n == index => Err(Error::new(
            libc::EIO,
            format!("the scan failed at message {n} (FEN_FS_TEST_EXPORT_FAIL_AT)"),
        )),
        _ => Ok(()),
    }
}

fn io_err(e: io::Error) -> Error {
    Error::io("export", &e)
}

/// The header of the export, from facts already redacted.
fn header(facts: &SessionFacts, scan: &Scan, counted: Option<SessionCost>) -> HtmlHeader {
    let mut h = HtmlHeader::from_facts(facts);
    if let Some(c) = counted {
        h.tokens = Some(c.tokens);
        h.cost_usd = c.cost;
    }
    if let Some(cmd) =
        crate::resume::command::ResumeCommand::of(facts.agent, &facts.id, facts.cwd.as_deref())
    {
        h.resume.push(ResumeLine {
            agent: facts.agent.name().to_string(),
            command: cmd.shell(),
        });
    }
    // Its parent and subagents by id, as text: the file holds no other session.
    if let Some(p) = &facts.parent_id {
        h.parent = Some(html::SessionLink {
            label: p.clone(),
            id: p.clone(),
            href: None,
        });
    }
    h.subagents = facts
        .subagents
        .iter()
        .filter(|l| !l.inline)
        .map(|l| html::SessionLink {
            label: l.id.clone(),
            id: l.id.clone(),
            href: None,
        })
        .collect();
    h.note = Some(if scan.replace {
        "Exported with fen-fs: secrets are replaced by [REDACTED:<kind>].".to_string()
    } else {
        "Exported with fen-fs --no-redact: secrets are left in.".to_string()
    });
    h
}

/// The Session page's rendering: every message the page shows, history a
/// compaction or rewind took out of the conversation included (marked, as on the
/// page), so that the Export button gives the page that was read.
fn write_html(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    scan: &Scan,
    counted: Option<SessionCost>,
    report: &mut Report,
    out: &mut dyn Write,
) -> Result<()> {
    let fail = fail_at();
    let mut runs: Option<html::SubagentRuns> = None;
    let mut started = false;
    let mut failed: Option<Error> = None;
    let mut index = 0usize;
    let counts = &mut report.counts;
    let facts = source.each_message(ns, dir, true, &mut |facts, mut m| {
        if failed.is_some() {
            return;
        }
        let step = (|| -> Result<()> {
            if !started {
                let mut f = facts.clone();
                scan.facts(&mut f, counts);
                html::write_document_start(out, &header(&f, scan, counted), Mode::Standalone)
                    .map_err(io_err)?;
                started = true;
            }
            check_fail(fail, index)?;
            scan.message(&mut m, counts);
            let runs = runs.get_or_insert_with(|| {
                html::SubagentRuns::of(&facts.subagents, Mode::Standalone, &|_| None)
            });
            html::write_message_marked(out, index, &m, runs).map_err(io_err)?;
            index += 1;
            Ok(())
        })();
        if let Err(e) = step {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if !started {
        let mut f = facts.clone();
        scan.facts(&mut f, &mut report.counts);
        html::write_document_start(out, &header(&f, scan, counted), Mode::Standalone)
            .map_err(io_err)?;
    }
    if index == 0 {
        out.write_all(b"<p class=\"muted\">(no messages)</p>\n")
            .map_err(io_err)?;
    }
    html::write_document_end(out, Mode::Standalone).map_err(io_err)?;
    report.messages = index;
    report.id = facts.id;
    Ok(())
}

fn write_markdown(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    scan: &Scan,
    report: &mut Report,
    out: &mut dyn Write,
) -> Result<()> {
    let fail = fail_at();
    // The compaction summaries go at the top of conversation.md: the body waits in
    // an unnamed file until the last message is read.
    let body_file =
        tempfile::tempfile().map_err(|e| Error::io("a temporary file for the export", &e))?;
    let mut body = BufWriter::with_capacity(1 << 20, body_file);
    let mut summaries = String::new();
    let mut any = false;
    let mut failed: Option<Error> = None;
    let mut index = 0usize;
    let counts = &mut report.counts;
    // Where the session's subagents ran is marked as conversation.md marks it.
    let mut calls: Option<markdown::SubagentCalls> = None;
    let mut facts = source.each_message(ns, dir, false, &mut |f, mut m| {
        if failed.is_some() {
            return;
        }
        if let Err(e) = check_fail(fail, index) {
            failed = Some(e);
            return;
        }
        index += 1;
        scan.message(&mut m, counts);
        let calls = calls.get_or_insert_with(|| markdown::SubagentCalls::of(&f.subagents));
        let text = markdown::one_message_marked(&m, calls);
        if m.summary {
            summaries.push_str(&text);
        } else {
            any = true;
            if let Err(e) = body.write_all(text.as_bytes()) {
                failed = Some(io_err(e));
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    scan.facts(&mut facts, &mut report.counts);
    out.write_all(markdown::document_head(&facts, &summaries, any).as_bytes())
        .map_err(io_err)?;
    let mut file = body.into_inner().map_err(|e| io_err(e.into_error()))?;
    file.rewind().map_err(io_err)?;
    io::copy(&mut file, out).map_err(io_err)?;
    report.messages = index;
    report.id = facts.id;
    Ok(())
}

fn write_json(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    scan: &Scan,
    report: &mut Report,
    out: &mut dyn Write,
) -> Result<()> {
    let fail = fail_at();
    let snap = source.snapshot(ns, dir, ViewKind::Conversation, 0)?;
    let size = snap.size();
    let mut reader = SnapshotReader {
        snap: &snap,
        at: 0,
        size,
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut lines = 0usize;
    let mut one = |line: &[u8], lines: &mut usize, counts: &mut Counts| -> Result<()> {
        check_fail(fail, *lines)?;
        *lines += 1;
        match std::str::from_utf8(line) {
            Ok(s) => out.write_all(scan.json_line(s, counts).as_bytes()),
            // Not UTF-8: scanned as text; written as it is unless something is replaced.
            Err(_) => {
                let lossy = String::from_utf8_lossy(line);
                match scan.redactor.text(&lossy, counts) {
                    Some(r) if scan.replace => out.write_all(r.as_bytes()),
                    _ => out.write_all(line),
                }
            }
        }
        .map_err(io_err)
    };
    loop {
        let n = reader.read(&mut buf).map_err(io_err)?;
        if n == 0 {
            break;
        }
        pending.extend_from_slice(&buf[..n]);
        let mut start = 0;
        while let Some(nl) = memchr::memchr(b'\n', &pending[start..]) {
            let end = start + nl + 1;
            one(&pending[start..end], &mut lines, &mut report.counts)?;
            start = end;
        }
        pending.drain(..start);
    }
    if !pending.is_empty() {
        one(&pending, &mut lines, &mut report.counts)?;
    }
    report.messages = lines;
    report.id = source
        .listings(ns)
        .ok()
        .and_then(|ls| ls.into_iter().find(|l| l.dir == dir))
        .map(|l| l.id)
        .unwrap_or_else(|| dir.to_string());
    Ok(())
}

/// A view snapshot as a reader.
struct SnapshotReader<'a> {
    snap: &'a crate::views::Snapshot,
    at: u64,
    size: u64,
}

impl Read for SnapshotReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at >= self.size {
            return Ok(0);
        }
        let want = buf.len().min((self.size - self.at) as usize);
        let got = self
            .snap
            .read_at(self.at, want)
            .map_err(|e| io::Error::other(e.reason))?;
        buf[..got.len()].copy_from_slice(&got);
        self.at += got.len() as u64;
        Ok(got.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_formats() {
        assert_eq!(Format::from_name("md"), Some(Format::Markdown));
        assert_eq!(Format::from_name("pdf"), None);
        assert_eq!(
            file_name("claude", "../a b/c", Format::Html),
            "claude-abc.html"
        );
        assert_eq!(
            file_name("codex", "019c-x", Format::Json),
            "codex-019c-x.json"
        );
    }

    #[test]
    fn summaries() {
        let mut r = Report {
            redacted: true,
            ..Report::default()
        };
        assert_eq!(r.summary(), "redacted 0");
        r.counts.secrets.insert("github-token", 2);
        assert_eq!(r.summary(), "redacted 2: 2 github-token");
        r.redacted = false;
        assert_eq!(
            r.summary(),
            "--no-redact: left in 2 secrets: 2 github-token"
        );
        r.counts.home = 3;
        assert!(r.summary().ends_with("; paths: 3 home folder, 0 user name"));
    }
}
