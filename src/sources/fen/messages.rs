//! A fen session's messages as neutral values (`SessionSource::messages`): one pass
//! over the transcript, as the index parsed it; §3's projection (through the index)
//! says which are in the conversation. The latest valid compaction's items (its
//! `messages`, or the synthetic summary message) stand where §3 puts them: first.

use super::FenSource;
use crate::agent::Agent;
use crate::error::Result;
use crate::neutral::{Message, Part, Role, SessionFacts, SessionMessages};
use crate::store::index::{
    CompactionForm, SessionIndex, for_each_entry, synthetic_summary_message,
};
use crate::store::line::Body;
use crate::store::projection::Projection;
use crate::store::session::Session;
use std::sync::Arc;

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
    pub(super) fn markdown(&self, ns: &str, dir: &str) -> Result<Arc<Vec<u8>>> {
        let session = self.store.session(ns, dir)?;
        let (stamp, facts) = {
            let idx = session.current()?;
            (idx.file, facts_of(&session, &idx))
        };
        self.markdown
            .get_or_render(&session.path, stamp, &facts, || {
                session_messages(&session, false)
            })
    }
}

/// `session`'s messages as neutral values (`SessionSource::messages`); for a file
/// outside the store too (`fen-fs show PATH`).
pub fn session_messages(session: &Session, history: bool) -> Result<SessionMessages> {
    // Open first, then refresh: the index may know less than the descriptor can
    // read, never more.
    let file = session.open_read()?;
    let (facts, proj, parsed_len, compactions, table) = {
        let idx = session.current()?;
        (
            facts_of(session, &idx),
            Projection::of(&idx),
            idx.parsed_len,
            idx.compactions.clone(),
            idx.messages.clone(),
        )
    };
    let latest = proj.compaction;
    let mut head = Vec::new();
    let mut out = Vec::new();
    let mut failure = None;
    for_each_entry(&file, parsed_len, |line_start, text_start, text, entry| {
        match entry.body {
            Body::Message { raw, .. } => {
                let start = text_start + crate::json::offset_in(text, raw) as u64;
                // The index's number for this message (it read the same lines).
                let k = {
                    let t = table.read().unwrap();
                    let k = t.partition_point(|m| m.start < start);
                    (t.get(k).is_some_and(|m| m.start == start)).then_some(k)
                };
                let Some(k) = k else { return };
                let kept = (proj.from..proj.to).contains(&k);
                if kept || history {
                    let mut m = neutral(raw);
                    m.entry = entry.id;
                    m.timestamp = entry.timestamp;
                    m.in_conversation = kept;
                    out.push(m);
                }
            }
            Body::Compaction(mut fields) => {
                let Ok(ci) = compactions.binary_search_by_key(&line_start, |c| c.line_start) else {
                    return;
                };
                let in_conversation = latest == Some(ci);
                if !in_conversation && !history {
                    return;
                }
                let items: Vec<String> = match &compactions[ci].validity {
                    Ok(CompactionForm::Replacement(_)) => match fields.messages.take() {
                        Some(Ok(items)) => items.iter().map(|i| i.get().to_string()).collect(),
                        _ => {
                            failure = Some("compaction messages changed");
                            return;
                        }
                    },
                    Ok(CompactionForm::FirstKept(_)) => vec![synthetic_summary_message(
                        fields.summary.as_deref().unwrap_or_default(),
                    )],
                    Err(_) => return,
                };
                let items = items.iter().map(|raw| {
                    let mut m = neutral(raw);
                    m.entry = entry.id.clone();
                    m.timestamp = entry.timestamp.clone();
                    m.in_conversation = in_conversation;
                    m
                });
                if in_conversation && !history {
                    head.extend(items);
                } else {
                    out.extend(items);
                }
            }
            _ => {}
        }
    })?;
    if let Some(why) = failure {
        return Err(crate::error::Error::new(libc::EIO, why));
    }
    head.append(&mut out);
    crate::neutral::fill_tool_names(&mut head);
    Ok(SessionMessages {
        facts,
        messages: head,
    })
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
