//! `fen-fs resume --in AGENT`: a session of any agent, written as a **new** session
//! of another (or the same) agent, where that agent's own resume finds it
//! (SPEC §10, WRITING-FOR-RESUME.md). It starts from what sources yield — the
//! neutral messages of `conversation.json` — converts them once for the target
//! (`convert`), lets the target's writer lay out its file (`claude`, `codex`, `pi`,
//! `fen`), and publishes it without ever changing an existing file (`publish`): the
//! file is read back with fen-fs's own reader of that format and kept only if the
//! conversation comes back as written. Where it came from is recorded in the new
//! session and in a ledger in fen's cache (`ledger`), so the same unchanged source
//! continued in the same place again gives the session already made.

pub mod anthropic;
pub mod claude;
pub mod codex;
pub mod command;
pub mod convert;
pub mod draft;
pub mod fen;
pub mod find;
pub mod ledger;
pub mod pi;
pub mod publish;

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::neutral::{Part, Role, SessionMessages};
use crate::sources::agents;
use crate::sources::foreign::{feed_all, render_message};
use crate::store::Store;
use crate::views::ViewKind;
use convert::{Conversation, Report, Rules};
use draft::{Context, Draft};
use ledger::{Ledger, Record};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The agents `--in` writes.
pub const TARGETS: [&str; 4] = ["fen", "pi", "claude", "codex"];

/// `--in AGENT`.
pub fn parse_target(s: &str) -> std::result::Result<Agent, String> {
    match s {
        "fen" => Ok(Agent::Fen),
        "pi" | "claude" | "codex" => Ok(Agent::from_kind(s).expect("a source kind")),
        _ => Err(format!("one of {}", TARGETS.join(", "))),
    }
}

/// How people call each agent.
pub fn display_name(agent: Agent) -> &'static str {
    crate::sources::registry::kind(agent).display_name()
}

/// Where the new session goes.
#[derive(Clone)]
pub enum Target {
    /// A new fen session in this store.
    Fen(Arc<Store>),
    /// A new session file of `agent` under its root folder (which must exist).
    Agent { agent: Agent, root: PathBuf },
}

impl Target {
    pub fn agent(&self) -> Agent {
        match self {
            Target::Fen(_) => Agent::Fen,
            Target::Agent { agent, .. } => *agent,
        }
    }
}

/// The session made (or found already made).
#[derive(Debug, Clone)]
pub struct Made {
    pub agent: Agent,
    pub id: String,
    pub path: PathBuf,
    pub cwd: String,
    /// A new fen session's namespace and folder.
    pub fen_dir: Option<(String, String)>,
    /// Messages in the new session's conversation.
    pub messages: usize,
    pub report: Report,
    /// When an earlier run made it (from the ledger): nothing was written now.
    pub earlier: Option<String>,
}

/// What the new session is called: the source's title (else its first request, else
/// its id) and where it came from.
fn title_of(session: &SessionMessages) -> String {
    let f = &session.facts;
    let first_request = || {
        session.messages.iter().find_map(|m| {
            (m.role == Role::User && !m.injected && !m.summary)
                .then(|| convert::texts_of(&m.parts))
                .filter(|t| !t.trim().is_empty())
        })
    };
    let base = f
        .title
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| f.preview.clone().filter(|t| !t.trim().is_empty()))
        .or_else(first_request)
        .map(|t| crate::store::index::one_line(&t, 80))
        .unwrap_or_else(|| format!("session {}", f.id));
    format!("{base} (from {})", f.agent.name())
}

/// How messages name a session: its agent and id, or its file when it has no id
/// (a file its agent cannot read).
pub fn session_name(f: &crate::neutral::SessionFacts) -> String {
    if f.id.is_empty() {
        format!(
            "{} session file {}",
            f.agent.name(),
            f.source_path.display()
        )
    } else {
        format!("{} session {}", f.agent.name(), f.id)
    }
}

/// Why a session cannot be continued, if it cannot: its agent would refuse it, or
/// its conversation is empty.
pub fn unresumable(session: &SessionMessages) -> Option<String> {
    let f = &session.facts;
    if !f.resumable {
        return Some(format!(
            "{} cannot be resumed: {}",
            session_name(f),
            f.not_resumable_reason
                .as_deref()
                .unwrap_or("its agent would refuse it")
        ));
    }
    let speaks = |m: &crate::neutral::Message| {
        !m.injected
            && m.parts.iter().any(|p| match p {
                Part::Text { text } => !text.trim().is_empty(),
                _ => true,
            })
    };
    if !session.messages.iter().any(speaks) {
        return Some(format!(
            "{} has an empty conversation: nothing to continue",
            session_name(f)
        ));
    }
    None
}

/// The session an earlier `fen-fs resume --in AGENT` made from the session of
/// `facts` in `agent`, at its cwd, while its file is as it was then (the ledger's
/// record; `None` without one): what a printed command should open instead of
/// making a second copy. Reads the ledger, and the session's file only when a
/// record names it with its present size and mtime.
pub fn made_earlier(
    store_root: &std::path::Path,
    facts: &crate::neutral::SessionFacts,
    agent: Agent,
) -> Option<Record> {
    if facts.source_path.as_os_str().is_empty() {
        return None;
    }
    let cwd = facts
        .cwd
        .as_deref()
        .filter(|c| c.starts_with('/'))
        .map(crate::store::naming::normalize_cwd)?;
    Ledger::for_store(store_root).find_for_path(&facts.source_path, agent, &cwd)
}

/// Writes `session` as a new session of `target` whose working directory is `cwd`
/// (or finds the one an earlier run made from the same unchanged source).
pub fn make(
    session: &SessionMessages,
    target: &Target,
    cwd: &str,
    ledger: &Ledger,
) -> Result<Made> {
    if let Some(why) = unresumable(session) {
        return Err(Error::invalid(why));
    }
    let facts = &session.facts;
    let agent = target.agent();
    let stamp = (!facts.source_path.as_os_str().is_empty())
        .then(|| ledger::stamp(&facts.source_path).ok())
        .flatten();
    // Held until the new session is recorded: the same resume started meanwhile
    // waits, then finds it.
    let _held = stamp.as_ref().and_then(|_| {
        ledger
            .hold()
            .map_err(|e| log::warn!("the resume ledger cannot be locked: {}", e.reason))
            .ok()
    });
    if let Some(s) = &stamp
        && let Some(r) = ledger.find(s, agent, cwd)
    {
        return Ok(Made {
            agent,
            fen_dir: fen_dir_of(target, &r.path),
            id: r.id,
            path: r.path,
            cwd: r.cwd,
            messages: 0,
            report: Report::default(),
            earlier: Some(r.made_at),
        });
    }
    let conv = convert::convert(&session.messages, Rules::new(facts.agent, agent));
    if conv.is_empty() {
        return Err(Error::invalid(format!(
            "{}: nothing is left to continue once its injected context is left out",
            session_name(facts)
        )));
    }
    let ctx = Context {
        source_agent: facts.agent,
        source_id: facts.id.clone(),
        source_path: facts.source_path.clone(),
        title: title_of(session),
        cwd: cwd.to_string(),
        now: chrono::Utc::now(),
    };
    let made = match target {
        Target::Fen(store) => make_fen(store, &conv, &ctx)?,
        Target::Agent { agent, root } => make_file(*agent, root, &conv, &ctx)?,
    };
    if let Some(source) = stamp {
        let record = Record {
            source,
            source_agent: facts.agent,
            source_id: facts.id.clone(),
            agent,
            cwd: cwd.to_string(),
            path: made.path.clone(),
            id: made.id.clone(),
            made_at: draft::iso(ctx.now),
        };
        if let Err(e) = ledger.add(&record) {
            log::warn!(
                "could not record the new session in the ledger: {}",
                e.reason
            );
        }
    }
    Ok(made)
}

fn fen_dir_of(target: &Target, path: &std::path::Path) -> Option<(String, String)> {
    matches!(target, Target::Fen(_)).then(|| {
        let ns = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        (ns, dir)
    })
}

/// A new file of `agent` under `root`.
fn make_file(
    agent: Agent,
    root: &std::path::Path,
    conv: &Conversation,
    ctx: &Context,
) -> Result<Made> {
    let draft: Draft = match agent {
        Agent::Claude => {
            let projects = agents::sessions_folder(Agent::Claude, root);
            let folder = claude::project_folder_for(&projects, &ctx.cwd);
            claude::write(conv, ctx, folder)
        }
        Agent::Codex => codex::write(conv, ctx),
        Agent::Pi => pi::write(conv, ctx, pi::session_folder(&draft::real_path(&ctx.cwd))),
        other => {
            return Err(Error::invalid(format!(
                "fen-fs cannot write {} sessions (targets: fen, pi, claude, codex)",
                other.name()
            )));
        }
    };
    let path = publish::publish(
        root,
        &draft.folders,
        &draft.file_name,
        &draft.bytes,
        |bytes| read_back(agent, &draft, bytes),
    )?;
    Ok(Made {
        agent,
        id: draft.id.clone(),
        path,
        cwd: ctx.cwd.clone(),
        fen_dir: None,
        messages: draft.expected.len(),
        report: conv.report.clone(),
        earlier: None,
    })
}

/// Whether `read` holds every key of `want` with the same value.
fn holds(read: &Value, want: &Value) -> bool {
    match (read, want) {
        (Value::Object(r), Value::Object(w)) => w.iter().all(|(k, v)| r.get(k) == Some(v)),
        _ => read == want,
    }
}

/// Compares the conversation read back with the one written.
fn compare(agent: Agent, read: &[Value], want: &[Value]) -> Result<()> {
    let bad = |why: String| {
        Error::new(
            libc::EIO,
            format!(
                "the new {} session does not read back as written ({why}); nothing was kept",
                agent.name()
            ),
        )
    };
    if read.len() != want.len() {
        return Err(bad(format!(
            "{} messages written, {} read back",
            want.len(),
            read.len()
        )));
    }
    for (i, (r, w)) in read.iter().zip(want).enumerate() {
        if !holds(r, w) {
            return Err(bad(format!("message {} differs", i + 1)));
        }
    }
    Ok(())
}

/// Reads `bytes` (the new file, from the disk) with fen-fs's reader of `agent`.
fn read_back(agent: Agent, draft: &Draft, bytes: &[u8]) -> Result<()> {
    let mut reader = agents::reader_for(agent, &draft.file_name);
    let tail = feed_all(reader.as_mut(), bytes);
    if !tail.is_empty() {
        return Err(Error::new(
            libc::EIO,
            "the new session's last line has no newline",
        ));
    }
    let summary = reader.summary(tail);
    if !summary.resumable {
        return Err(Error::new(
            libc::EIO,
            format!(
                "the new {} session would not resume: {}; nothing was kept",
                agent.name(),
                summary.not_resumable_reason.unwrap_or_default()
            ),
        ));
    }
    if summary.id != draft.id {
        return Err(Error::new(
            libc::EIO,
            format!(
                "the new {} session reads back with id {:?}, not {}; nothing was kept",
                agent.name(),
                summary.id,
                draft.id
            ),
        ));
    }
    let read: Vec<Value> = reader
        .conversation(tail)
        .iter()
        .map(|pieces| serde_json::from_slice(&render_message(pieces, bytes)).unwrap_or(Value::Null))
        .collect();
    compare(agent, &read, &draft.expected)
}

/// A new fen session in `store`: created whole, read back, removed if it does not
/// read back as written.
fn make_fen(store: &Arc<Store>, conv: &Conversation, ctx: &Context) -> Result<Made> {
    let (lines, expected) = fen::entries(conv, ctx);
    let entries = lines
        .iter()
        .map(|l| crate::ctl::grammar::parse_session_line(l.as_bytes()))
        .collect::<Result<Vec<_>>>()?;
    let (session, _) = store.create_session_with(
        &ctx.cwd,
        None,
        &entries,
        &crate::ctl::grammar::check_against,
    )?;
    let read = (|| -> Result<Vec<Value>> {
        let snap = crate::views::snapshot(&session, ViewKind::Conversation, 0)?;
        let bytes = snap.read_at(0, snap.size() as usize)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::new(libc::EIO, format!("conversation.json: {e}")))
    })();
    if let Err(e) = read.and_then(|read| compare(Agent::Fen, &read, &expected)) {
        let _ = std::fs::remove_file(&session.path);
        return Err(e);
    }
    Ok(Made {
        agent: Agent::Fen,
        id: session.session_id().to_string(),
        path: session.path.clone(),
        cwd: ctx.cwd.clone(),
        fen_dir: Some((session.namespace.clone(), session.dir.clone())),
        messages: expected.len(),
        report: conv.report.clone(),
        earlier: None,
    })
}
