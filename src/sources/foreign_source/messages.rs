//! Another agent's session as neutral messages (`SessionSource::messages`): the
//! reader's messages rendered from the file, each converted by its agent's
//! `to_neutral`, with what the file says of it (entry id, time, flags, model).

use super::ForeignSource;
use crate::error::Result;
use crate::neutral::{Message, Part, Role, SessionFacts, SessionMessages};
use crate::sources::agents;
use crate::sources::foreign::MessageRef;
use crate::views::markdown::Rendered;
use std::path::Path;

impl ForeignSource {
    pub(super) fn neutral_messages(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
    ) -> Result<SessionMessages> {
        let mut messages = Vec::new();
        let facts = self.neutral_each(ns, dir, history, &mut |_, m| messages.push(m))?;
        Ok(SessionMessages { facts, messages })
    }

    /// The messages one at a time (`SessionSource::each_message`): each is read from
    /// the file and converted when its turn comes, so a session of hundreds of MB is
    /// never in memory whole. Tool results are named after their calls on the way
    /// (`neutral::fill_tool_names`, a call comes before its results).
    pub(super) fn neutral_each(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
        each: &mut dyn FnMut(&SessionFacts, Message),
    ) -> Result<SessionFacts> {
        let (path, e) = self.session(ns, dir)?;
        let facts = self.facts(ns, dir, &path, &e);
        let (file, _, refs) =
            self.with_reader_kept(&path, self.keep_for_reading(&path), |r, tail| {
                r.messages(tail, history)
            })?;
        self.convert(&file, refs, 0, &facts, &mut |f, _, m| {
            each(f, m);
            std::ops::ControlFlow::Continue(())
        })?;
        Ok(facts)
    }

    /// `SessionSource::each_message_since`: the reader yields every message's place
    /// in the file without reading it (it goes on from its state when the file grew);
    /// the messages before the mark are not read again when the file is the same one,
    /// only grown, its agent only appends to it, and those messages' places and flags
    /// are what they were (their hash is in the mark). Tool results after the mark
    /// whose calls came before it are not named after them. Asked to stop, it stops
    /// after that message, with a mark of the messages given.
    pub(super) fn neutral_since(
        &self,
        ns: &str,
        dir: &str,
        since: crate::sources::MessageMark,
        each: &mut dyn FnMut(&SessionFacts, u64, Message) -> std::ops::ControlFlow<()>,
    ) -> Result<crate::sources::SinceRead> {
        let (path, e) = self.session(ns, dir)?;
        let facts = self.facts(ns, dir, &path, &e);
        let keep = self.keep_for_reading(&path);
        let (file, stamp, (appends, refs)) = self.with_reader_kept(&path, keep, |r, tail| {
            (r.follows_appends(), r.messages(tail, true))
        })?;
        let file_id =
            |len: u64| crate::sources::MessageMark::file_identity(&file, stamp.dev, stamp.ino, len);
        let count = since.0[2];
        // The chained hash of the places before each message, and of them all.
        let mut chain = Vec::with_capacity(refs.len() + 1);
        chain.push(0u64);
        for r in &refs {
            chain.push(place_hash(r, *chain.last().expect("seeded")));
        }
        let at_mark = chain.get(count as usize).copied();
        let resumed = !since.is_none()
            && appends
            && !self.is_unit(&path)
            && since.0[1] <= stamp.size
            && since.0[0] == file_id(since.0[1])
            && at_mark == Some(since.0[3]);
        let skip = if resumed { count as usize } else { 0 };
        let total = refs.len();
        let given = self.convert(&file, refs, skip, &facts, each)?;
        Ok(crate::sources::SinceRead {
            facts,
            resumed,
            mark: crate::sources::MessageMark([
                file_id(stamp.size),
                stamp.size,
                given as u64,
                chain[given],
            ]),
            stopped: given < total,
        })
    }

    /// Reads and converts the messages of `refs` from the `skip`th on, one at a time,
    /// naming tool results after their calls on the way (a call comes before its
    /// results); `each` gets each message's place among all of `refs`, and stops
    /// the reading after that message with `Break`. Returns how many of `refs` were
    /// given or skipped.
    fn convert(
        &self,
        file: &std::fs::File,
        refs: Vec<MessageRef>,
        skip: usize,
        facts: &SessionFacts,
        each: &mut dyn FnMut(&SessionFacts, u64, Message) -> std::ops::ControlFlow<()>,
    ) -> Result<usize> {
        let total = refs.len();
        let mut names = std::collections::HashMap::new();
        for (at, r) in refs.into_iter().enumerate().skip(skip) {
            let bytes = crate::views::pieces::read_joined(file, &r.pieces)?;
            let mut one = [neutral(self.agent, &bytes, r)];
            crate::neutral::fill_tool_names_with(&mut names, &mut one);
            let [m] = one;
            if each(facts, at as u64, m).is_break() {
                return Ok(at + 1);
            }
        }
        Ok(total)
    }

    /// Where the reader goes after a reading of a whole session: a reader made just
    /// for it (search reads every session once) is not kept in memory, where it would
    /// push out the readers of sessions being followed; its state goes to disk like
    /// the first index's.
    fn keep_for_reading(&self, path: &Path) -> super::readers::Keep {
        if self.readers.lock().unwrap().following.contains_key(path) {
            super::readers::Keep::Memory
        } else {
            super::readers::Keep::Disk
        }
    }

    /// What the session's listing says of it.
    fn facts(&self, ns: &str, dir: &str, path: &Path, e: &super::index::FileEntry) -> SessionFacts {
        let (listing, links) = self.listing_and_links(path, e, ns);
        let s = &e.summary;
        SessionFacts {
            agent: self.agent,
            id: s.id.clone(),
            namespace: ns.to_string(),
            dir: dir.to_string(),
            cwd: s.cwd.clone(),
            title: listing.as_ref().and_then(|l| l.title.clone()),
            preview: s.preview.clone(),
            created_at: listing.as_ref().and_then(|l| l.created_at.clone()),
            updated_at: listing.as_ref().and_then(|l| l.updated_at.clone()),
            source_path: self.source_path_of(path),
            resumable: s.resumable,
            not_resumable_reason: s.not_resumable_reason.clone(),
            kept: listing.as_ref().is_some_and(|l| l.kept),
            source_deleted: listing.as_ref().and_then(|l| l.source_deleted) == Some(true),
            host: None,
            cwd_on_host: None,
            parent_id: s.parent_id.clone(),
            parent: links.parent,
            agent_id: s.subagent.as_ref().map(|a| a.agent_id.clone()),
            subagents: links.subagents,
        }
    }

    /// `conversation.md`, rendered once per state of the session's file (and title).
    pub(super) fn markdown(&self, ns: &str, dir: &str) -> Result<Rendered> {
        let (path, e) = self.session(ns, dir)?;
        let facts = self.facts(ns, dir, &path, &e);
        // Streamed: one message in memory at a time (the document spills to fen's
        // cache folder past a few MB).
        self.markdown.get_or_render(&path, e.stamp, &facts, |each| {
            self.neutral_each(ns, dir, false, &mut |_, m| each(m))
                .map(|_| ())
        })
    }
}

/// One message of `agent`'s `conversation.json` and what its reader knows of it.
pub fn neutral(agent: crate::agent::Agent, bytes: &[u8], r: MessageRef) -> Message {
    let mut m = crate::sources::convert::parse_message(bytes)
        .and_then(|v| agents::to_neutral(agent, &v))
        .unwrap_or_else(|| {
            Message::new(
                Role::Other("message".into()),
                vec![Part::Text {
                    text: String::from_utf8_lossy(bytes).into_owned(),
                }],
            )
        });
    m.entry = r.entry;
    if r.timestamp.is_some() {
        m.timestamp = r.timestamp;
    }
    m.in_conversation = r.in_conversation;
    m.injected |= r.injected;
    m.summary |= r.summary;
    if m.model.is_none() {
        m.model = r.model;
    }
    m
}

/// A hash of where a message sits and what its reader says of it (not its bytes:
/// those are not read again), chained over the messages before it.
fn place_hash(r: &MessageRef, h: u64) -> u64 {
    use crate::store::atomic::checksum;
    let flags = [r.in_conversation as u8, r.injected as u8, r.summary as u8];
    let mut h = checksum(&[
        &h.to_le_bytes(),
        r.entry.as_deref().unwrap_or("").as_bytes(),
        r.timestamp.as_deref().unwrap_or("").as_bytes(),
        &flags,
    ]);
    for p in &r.pieces {
        h = match p {
            crate::views::pieces::Piece::Text(t) => checksum(&[&h.to_le_bytes(), t.as_bytes()]),
            crate::views::pieces::Piece::Range { start, len } => {
                checksum(&[&h.to_le_bytes(), &start.to_le_bytes(), &len.to_le_bytes()])
            }
        };
    }
    h
}
