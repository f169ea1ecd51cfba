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
        // A reader made just for this (search reads every session once) is not kept
        // in memory: it would push out the readers of sessions being followed. Its
        // state goes to disk like the first index's.
        let cached = self.readers.lock().unwrap().1.contains_key(&path);
        let keep = if cached {
            super::Keep::Memory
        } else {
            super::Keep::Disk
        };
        let (file, _, refs) =
            self.with_reader_kept(&path, keep, |r, tail| r.messages(tail, history))?;
        let mut names = std::collections::HashMap::new();
        for r in refs {
            let bytes = crate::views::pieces::read_joined(&file, &r.pieces)?;
            let mut one = [neutral(self.agent, &bytes, r)];
            crate::neutral::fill_tool_names_with(&mut names, &mut one);
            let [m] = one;
            each(&facts, m);
        }
        Ok(facts)
    }

    /// What the session's listing says of it.
    fn facts(&self, ns: &str, dir: &str, path: &Path, e: &super::FileEntry) -> SessionFacts {
        let listing = {
            let idx = self.index.lock().unwrap();
            self.listing(&idx, path, e)
        };
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
        }
    }

    /// `conversation.md`, rendered once per state of the session's file (and title).
    pub(super) fn markdown(&self, ns: &str, dir: &str) -> Result<Rendered> {
        let (path, e) = self.session(ns, dir)?;
        let facts = self.facts(ns, dir, &path, &e);
        self.markdown.get_or_render(&path, e.stamp, &facts, || {
            self.neutral_messages(ns, dir, false)
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
