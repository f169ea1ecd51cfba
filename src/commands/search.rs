//! `fen-fs search`: what it does apart from its options, so that it is testable.

use crate::agent::Agent;
use crate::error::Result;
use crate::search::hits::{Answer, Hit};
use crate::search::{Request, Search};
use crate::sources::SessionSource;
use crate::sources::fen::FenSource;
use crate::store::Store;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

/// `--agent KIND`: fen, or one of the other agents' kinds.
pub fn parse_agent(s: &str) -> std::result::Result<Agent, String> {
    Agent::parse(s)
}

pub use crate::dates::parse_since;

/// What `fen-fs search` was asked.
pub struct Args {
    pub words: Vec<String>,
    pub json: bool,
    pub limit: usize,
    pub agent: Option<Agent>,
    pub cwd: Option<String>,
    pub since_ms: Option<i64>,
    pub foreign: crate::sources::ForeignOptions,
    /// Other machines' sessions (§12), and `--host NAME`.
    pub peers: crate::sources::peers::PeerOptions,
    pub host: Option<String>,
}

pub fn run(args: Args, store: Store) -> Result<ExitCode> {
    let text = args.words.join(" ");
    let query = match crate::search::query::parse(&text) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("fen-fs: {}", e.reason);
            return Ok(ExitCode::from(2));
        }
    };
    let request = Request {
        query,
        agent: args.agent,
        cwd: args.cwd,
        since_ms: args.since_ms,
        limit: args.limit,
        host: args.host,
    };
    let root = store.root.clone();
    let store = Arc::new(store);
    let foreign = crate::sources::foreign_sources(&args.foreign, &root, false);
    let mut sources: Vec<Arc<dyn SessionSource>> = vec![Arc::new(FenSource::new(store))];
    sources.extend(foreign.iter().map(|f| f.clone() as Arc<dyn SessionSource>));
    sources.extend(
        crate::sources::peers::peer_sources(&args.peers, &root, false)?
            .into_iter()
            .map(|p| p as Arc<dyn SessionSource>),
    );
    if let Some((mount, answer)) = answer_of_mount(&request, &text, &root, &sources) {
        print_answer(answer, Some(&mount), args.json);
        return Ok(ExitCode::SUCCESS);
    }
    let search = Search::open(root.is_dir().then_some(root.as_path()), sources, true);
    for note in search.notes() {
        eprintln!("fen-fs: {note}");
    }
    if search.writable() {
        // This process keeps the index: bring it up to date first.
        crate::sources::build_indexes(&foreign);
        search.update(&mut |b| {
            eprintln!("fen-fs: indexing: {} of {} sessions", b.indexed, b.sessions)
        })?;
    } else {
        // Right after a mount its daemon has not yet looked at the sessions (some may
        // have changed since the index was last written): wait for it a moment, then
        // say the answer may be partial rather than answer from the old index alone.
        search.settle(crate::search::SETTLE);
        for label in search.uncovered() {
            eprintln!(
                "fen-fs: {label} is not indexed by the process that keeps this store's index (a mount without that source): its sessions are left out"
            );
        }
    }
    let answer = search.answer(&request)?;
    // The daemon that keeps the index says where it mounted the store (one look at the
    // mount table to be sure); else every mount's daemon is asked.
    let mount = (!search.writable())
        .then(|| search.writer_mount())
        .flatten()
        .filter(|m| crate::mount_table::entry_at(m).is_some_and(|e| e.fen))
        .or_else(|| crate::mount_table::live_mount_of(&root));
    print_answer(answer, mount.as_deref(), args.json);
    // The process ends now: unmapping every segment one by one would only cost time.
    std::mem::forget(search);
    Ok(ExitCode::SUCCESS)
}

/// A plain query (no filter, the default limit) is asked of the mount whose daemon
/// keeps this store's index, through its `search/<query>/hits.jsonl`: that daemon
/// has the index open, and opening it here (Tantivy opening every segment) was
/// about half of a search's time (bench row 20). Only when that index covers every
/// source this command was given (else `None`: the index is opened here).
fn answer_of_mount(
    request: &Request,
    text: &str,
    root: &std::path::Path,
    sources: &[Arc<dyn SessionSource>],
) -> Option<(std::path::PathBuf, Answer)> {
    let plain = request.agent.is_none()
        && request.cwd.is_none()
        && request.since_ms.is_none()
        && request.host.is_none()
        && request.limit == crate::search::DEFAULT_LIMIT;
    // The query is one folder name under `search/`.
    let one_name = !text.is_empty()
        && text.len() <= 255
        && !text.contains(['/', '\0'])
        && !text.starts_with('.');
    if !plain || !one_name {
        return None;
    }
    // The index's last commit was made by the last process to take its lock (the
    // lock file's token), a daemon that still serves this store at the mount the
    // commit names. (A new holding of the lock writes a new token: a daemon whose pid
    // was reused by another daemon of this store would have.)
    let stamp = crate::search::storage::committed_stamp(root)?;
    let mount = stamp.mount.clone()?;
    if stamp.writer.is_none()
        || stamp.writer != crate::search::storage::lock_token(root)
        || crate::mount_table::daemon_mount(stamp.pid?, root).as_ref() != Some(&mount)
    {
        return None;
    }
    let covered = sources.iter().all(|s| {
        let label = crate::search::sync::label_of(s.agent(), s.root());
        stamp.sources.contains(&label)
    });
    if !covered {
        return None;
    }
    let bytes = std::fs::read(
        mount
            .join(crate::tree::inodes::SEARCH)
            .join(text)
            .join(crate::tree::inodes::HITS),
    )
    .ok()?;
    let answer = Answer::from_jsonl(&bytes)?;
    log::debug!("answered by the mount at {}", mount.display());
    Some((mount, answer))
}

/// Prints `answer`, its paths made absolute under `mount`.
fn print_answer(mut answer: Answer, mount: Option<&std::path::Path>, json: bool) {
    if let Some(m) = mount {
        for h in &mut answer.hits {
            h.path = m.join(&h.path).to_string_lossy().into_owned();
        }
    }
    let mut out = std::io::stdout().lock();
    let bytes = if json {
        answer.jsonl()
    } else {
        if let Some(b) = &answer.building {
            eprintln!("fen-fs: {}", b.say());
        }
        render_table(&answer, std::io::stdout().is_terminal()).into_bytes()
    };
    let _ = out.write_all(&bytes);
    let _ = out.flush();
}

/// `**word**` marks as bold on a terminal.
fn marks(snippet: &str, tty: bool) -> String {
    if !tty {
        return snippet.to_string();
    }
    let mut out = String::new();
    for (i, part) in snippet.split(crate::search::snippet::MARK).enumerate() {
        if i % 2 == 1 {
            out.push_str("\x1b[1m");
            out.push_str(part);
            out.push_str("\x1b[0m");
        } else {
            out.push_str(part);
        }
    }
    out
}

fn updated(h: &Hit) -> String {
    h.updated_at
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "-".into())
}

/// One line per session: updated, agent, title or preview, snippet, folder.
pub fn render_table(answer: &Answer, tty: bool) -> String {
    let mut out = String::new();
    let agent_w = answer.hits.iter().map(|h| h.agent.len()).max().unwrap_or(0);
    // A HOST column when more than one machine's sessions show (§12).
    let hosts = answer.hits.iter().any(|h| h.host != answer.hits[0].host);
    let host_w = answer.hits.iter().map(|h| h.host.len()).max().unwrap_or(0);
    for h in &answer.hits {
        if hosts {
            out.push_str(&format!("{:<host_w$}  ", h.host));
        }
        let title = h
            .title
            .as_deref()
            .or(h.preview.as_deref())
            .unwrap_or("(untitled)");
        let title = crate::store::index::one_line(title, 40);
        out.push_str(&format!(
            "{}  {:<agent_w$}  {:<40}  {}  {}\n",
            updated(h),
            h.agent,
            title,
            marks(&h.snippet, tty),
            h.path,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_dates_times_and_durations() {
        assert_eq!(
            parse_since("2026-11-01T00:00:00Z").unwrap(),
            chrono::DateTime::parse_from_rfc3339("2026-11-01T00:00:00Z")
                .unwrap()
                .timestamp_millis()
        );
        assert!(parse_since("2026-11-01").is_ok());
        let week = parse_since("7d").unwrap();
        let now = chrono::Utc::now().timestamp_millis();
        assert!((now - week - 7 * 86_400_000).abs() < 10_000);
        for bad in ["yesterday", "2026-13-01", "7x", ""] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn agents_by_name() {
        assert_eq!(parse_agent("claude").unwrap(), Agent::Claude);
        assert_eq!(parse_agent("fen").unwrap(), Agent::Fen);
        assert!(parse_agent("vim").unwrap_err().contains("one of fen, pi"));
    }

    #[test]
    fn marks_turn_bold_on_a_terminal_only() {
        assert_eq!(marks("a **b** c", false), "a **b** c");
        assert_eq!(marks("a **b** c", true), "a \x1b[1mb\x1b[0m c");
    }
}
