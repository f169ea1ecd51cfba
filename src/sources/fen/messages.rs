//! A fen session's messages as neutral values (`SessionSource::messages`): one pass
//! over the transcript, as the index parsed it; §3's projection (through the index)
//! says which are in the conversation. The latest valid compaction's items (its
//! `messages`, or the synthetic summary message) stand where §3 puts them: first.

use super::FenSource;
use crate::agent::Agent;
use crate::error::Result;
use crate::neutral::{Message, Part, Role, SessionFacts, SessionMessages};
use crate::sources::{ControlFlow, MessageMark, SinceRead};
use crate::store::atomic::checksum;
use crate::store::index::{
    CompactionForm, SessionIndex, for_each_entry_while, synthetic_summary_message,
};
use crate::store::line::{Body, Line, parse_line};
use crate::store::projection::Projection;
use crate::store::session::Session;
use crate::views::markdown::Rendered;

impl FenSource {
    pub(super) fn neutral_messages(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
    ) -> Result<SessionMessages> {
        session_messages(&*self.store.session(ns, dir)?, history)
    }

    /// `conversation.md`, rendered once per state of the session's file.
    pub(super) fn markdown(&self, ns: &str, dir: &str) -> Result<Rendered> {
        let session = self.store.session(ns, dir)?;
        let (stamp, facts) = {
            let idx = session.current()?;
            (idx.file, facts_of(&session, &idx))
        };
        self.markdown
            .get_or_render(&session.path, stamp, &facts, |each| {
                session_messages(&session, false)?
                    .messages
                    .into_iter()
                    .for_each(each);
                Ok(())
            })
    }
}

/// `session`'s messages as neutral values (`SessionSource::messages`); for a file
/// outside the store too (`fen-fs show PATH`).
pub fn session_messages(session: &Session, history: bool) -> Result<SessionMessages> {
    let mut head = Vec::new();
    let mut out = Vec::new();
    let read = read_messages(
        session,
        history,
        MessageMark::default(),
        false,
        |_, first, _, m| {
            if first {
                head.push(m)
            } else {
                out.push(m)
            }
            ControlFlow::Continue(())
        },
    )?;
    head.append(&mut out);
    crate::neutral::fill_tool_names(&mut head);
    Ok(SessionMessages {
        facts: read.facts,
        messages: head,
    })
}

/// `SessionSource::each_message` of a fen session: the messages one at a time, in
/// `conversation.json`'s order when `history` is false (the latest compaction's items
/// first, read from its line before the one pass over the rest), none of them held.
pub fn each_message(
    session: &Session,
    history: bool,
    each: &mut dyn FnMut(&SessionFacts, Message),
) -> Result<SessionFacts> {
    let mut names = std::collections::HashMap::new();
    let read = read_messages(
        session,
        history,
        MessageMark::default(),
        true,
        |facts, _, _, m| {
            let mut one = [m];
            crate::neutral::fill_tool_names_with(&mut names, &mut one);
            let [m] = one;
            each(facts, m);
            ControlFlow::Continue(())
        },
    )?;
    Ok(read.facts)
}

/// `SessionSource::each_message_since` of a fen session: its file only grows, so
/// the messages before the mark are unchanged while it is the same file, read that
/// far, with the same compactions (a new one changes which earlier messages are in
/// the conversation). Tool results after the mark whose calls came before it are
/// not named after them. Asked to stop, it stops at the end of the line (a
/// compaction's items come from one line).
pub fn each_message_since(
    session: &Session,
    since: MessageMark,
    each: &mut dyn FnMut(&SessionFacts, u64, Message) -> ControlFlow<()>,
) -> Result<SinceRead> {
    let mut names = std::collections::HashMap::new();
    read_messages(session, true, since, false, |facts, _, at, m| {
        let mut one = [m];
        crate::neutral::fill_tool_names_with(&mut names, &mut one);
        let [m] = one;
        each(facts, at, m)
    })
}

/// One pass over the transcript, as the index parsed it: `emit(facts, first, at, m)`
/// for each message, `first` for the latest compaction's items, which the
/// conversation (not the history) puts before everything; `at` counts the messages
/// given (from the mark's count when reading went on from `since`, history only).
/// When `emit` says `Break`, reading stops at the end of that line. `head_first`
/// (conversation only): the latest compaction's items are read from its line and
/// given before the pass, which then skips them, so that they come in order without
/// anything being held.
fn read_messages(
    session: &Session,
    history: bool,
    since: MessageMark,
    head_first: bool,
    mut emit: impl FnMut(&SessionFacts, bool, u64, Message) -> ControlFlow<()>,
) -> Result<SinceRead> {
    // Open first, then refresh: the index may know less than the descriptor can
    // read, never more.
    let file = session.open_read()?;
    let (facts, proj, parsed_len, compactions, table, stamp) = {
        let idx = session.current()?;
        (
            facts_of(session, &idx),
            Projection::of(&idx),
            idx.parsed_len,
            idx.compactions.clone(),
            idx.messages.clone(),
            idx.file,
        )
    };
    let latest = proj.compaction;
    // A copy delivered by rename is the same file when its content says so.
    let (dev, ino) = if session.renamed_copies() {
        (0, 0)
    } else {
        (stamp.dev, stamp.ino)
    };
    let file_id = |len: u64| MessageMark::file_identity(&file, dev, ino, len);
    let shape = checksum(&[
        &(compactions.len() as u64).to_le_bytes(),
        &latest.map_or(0, |l| l as u64 + 1).to_le_bytes(),
        &(proj.from as u64).to_le_bytes(),
    ]);
    let resumed = history
        && !since.is_none()
        && since.0[1] <= parsed_len
        && since.0[0] == file_id(since.0[1])
        && since.0[2] == shape;
    let (from, mut at) = if resumed {
        (since.0[1], since.0[3])
    } else {
        (0, 0)
    };
    let head_first = head_first && !history;
    if head_first && let Some(ci) = latest {
        let c = &compactions[ci];
        let line = crate::views::conversation::read_line_at(&file, c.line_start, c.line_len)?;
        let changed = || crate::error::Error::new(libc::EIO, "compaction line changed");
        let Line::Entry(entry) = parse_line(line.trim_start_matches(['\u{feff}', '\0'])) else {
            return Err(changed());
        };
        let Body::Compaction(mut fields) = entry.body else {
            return Err(changed());
        };
        let items = compaction_items(&c.validity, &mut fields).map_err(|_| changed())?;
        for raw in items.iter().flatten() {
            let mut m = neutral(raw);
            m.entry = entry.id.clone();
            m.timestamp = entry.timestamp.clone();
            m.in_conversation = true;
            let _ = emit(&facts, true, at, m);
            at += 1;
        }
    }
    let mut failure = None;
    let stopped_at = for_each_entry_while(
        &file,
        from,
        parsed_len,
        |line_start, text_start, text, entry| {
            let mut flow = ControlFlow::Continue(());
            match entry.body {
                Body::Message { raw, .. } => {
                    let start = text_start + crate::json::offset_in(text, raw) as u64;
                    // The index's number for this message (it read the same lines).
                    let k = {
                        let t = table.read().unwrap();
                        let k = t.partition_point(|m| m.start < start);
                        (t.get(k).is_some_and(|m| m.start == start)).then_some(k)
                    };
                    let Some(k) = k else { return flow };
                    let kept = (proj.from..proj.to).contains(&k);
                    if kept || history {
                        let mut m = neutral(raw);
                        m.entry = entry.id;
                        m.timestamp = entry.timestamp;
                        m.in_conversation = kept;
                        flow = emit(&facts, false, at, m);
                        at += 1;
                    }
                }
                Body::Compaction(mut fields) => {
                    let Ok(ci) = compactions.binary_search_by_key(&line_start, |c| c.line_start)
                    else {
                        return flow;
                    };
                    let in_conversation = latest == Some(ci);
                    if (!in_conversation || head_first) && !history {
                        return flow;
                    }
                    let items = match compaction_items(&compactions[ci].validity, &mut fields) {
                        Ok(Some(items)) => items,
                        Ok(None) => return flow,
                        Err(why) => {
                            failure = Some(why);
                            return ControlFlow::Break(());
                        }
                    };
                    for raw in &items {
                        let mut m = neutral(raw);
                        m.entry = entry.id.clone();
                        m.timestamp = entry.timestamp.clone();
                        m.in_conversation = in_conversation;
                        if emit(&facts, in_conversation && !history, at, m).is_break() {
                            flow = ControlFlow::Break(());
                        }
                        at += 1;
                    }
                }
                _ => {}
            }
            flow
        },
    )?;
    if let Some(why) = failure {
        return Err(crate::error::Error::new(libc::EIO, why));
    }
    // Stopped early, the mark is where the next reading goes on from: the same
    // proofs, up to the line after the last one read.
    let end = stopped_at.unwrap_or(parsed_len);
    Ok(SinceRead {
        facts,
        resumed,
        mark: MessageMark([file_id(end), end, shape, at]),
        stopped: stopped_at.is_some_and(|e| e < parsed_len),
    })
}

/// The messages a compaction puts first (its replacement messages, or the synthetic
/// summary message); `None` for a compaction §3 ignores.
fn compaction_items(
    validity: &std::result::Result<CompactionForm, String>,
    fields: &mut crate::store::line::CompactionFields<'_>,
) -> std::result::Result<Option<Vec<String>>, &'static str> {
    Ok(Some(match validity {
        Ok(CompactionForm::Replacement(_)) => match fields.messages.take() {
            Some(Ok(items)) => items.iter().map(|i| i.get().to_string()).collect(),
            _ => return Err("compaction messages changed"),
        },
        Ok(CompactionForm::FirstKept(_)) => vec![synthetic_summary_message(
            fields.summary.as_deref().unwrap_or_default(),
        )],
        Err(_) => return Ok(None),
    }))
}

/// What the session's listing says of it.
fn facts_of(session: &Session, idx: &SessionIndex) -> SessionFacts {
    let l = crate::views::listing::Listing::of(session, idx);
    SessionFacts {
        agent: Agent::Fen,
        id: l.id,
        namespace: session.namespace.clone(),
        dir: session.dir.clone(),
        cwd: l.cwd,
        title: l.title,
        preview: l.preview,
        created_at: l.created_at,
        updated_at: l.updated_at,
        source_path: session.path.clone(),
        resumable: true,
        not_resumable_reason: None,
        host: None,
        cwd_on_host: None,
        ..SessionFacts::default()
    }
}

/// One stored message as a neutral value (a message that is not a JSON object, which
/// the index never counts as one, would stand as its text).
fn neutral(raw: &str) -> Message {
    serde_json::from_str(raw)
        .ok()
        .and_then(|v| super::neutral::to_neutral(&v))
        .unwrap_or_else(|| {
            Message::new(
                Role::Other("message".into()),
                vec![Part::Text {
                    text: raw.to_string(),
                }],
            )
        })
}
