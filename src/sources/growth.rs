//! Conversations that grow. When an agent appends to its session, its resumed
//! conversation usually gains the new messages at its end and nothing else changes;
//! a reader that can show that hands over only those messages
//! ([`ConversationUpdate::Grown`]), so following an append costs the new bytes from
//! the file to the served `conversation.json`, not the whole conversation again.
//!
//! A reader keeps its conversation as of the entries read so far ([`Resumed`]): the
//! messages as references of its own (entry numbers), in order. Each entry read
//! since is taken in by the agent's rules when they show it only adds messages at
//! the end (or none: a progress line); anything else (a branch, a rewind, a
//! compaction, a rewrite) makes the reader compute the conversation again, from the
//! agent's full rules, which stay the oracle: property tests hold the two equal after
//! every append. A [`ConversationMark`] names one state: within one `epoch` (one
//! computation from scratch and the appends taken in since) every state is a prefix
//! of the later ones.

use crate::views::pieces::MessagePieces;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One state of a reader's conversation: its lineage and how many messages it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationMark {
    epoch: u64,
    messages: u64,
}

/// A conversation, whole or as what it added to an earlier one.
#[derive(Debug, Clone, PartialEq)]
pub enum ConversationUpdate {
    /// Every message.
    Whole(Vec<MessagePieces>),
    /// The conversation the mark that was passed names, then these messages.
    Grown(Vec<MessagePieces>),
}

impl ConversationUpdate {
    /// The whole conversation, given the one `Grown` continues.
    pub fn apply(self, before: &[MessagePieces]) -> Vec<MessagePieces> {
        match self {
            ConversationUpdate::Whole(all) => all,
            ConversationUpdate::Grown(new) => before.iter().cloned().chain(new).collect(),
        }
    }

    /// The messages it carries (all of them, or the new ones).
    pub fn messages(&self) -> &[MessagePieces] {
        match self {
            ConversationUpdate::Whole(m) | ConversationUpdate::Grown(m) => m,
        }
    }
}

/// A number no other computation in this process has: marks of two readers (or of
/// one reader before and after a recomputation) never match.
pub fn new_epoch() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A reader's conversation as of its first `covered` units (entries, events...): the
/// messages as the reader's references `T`, in order, and whatever the reader's rules
/// need to take in the next unit (`S`).
#[derive(Debug)]
pub struct Resumed<T, S> {
    epoch: u64,
    /// Units taken in.
    pub covered: usize,
    /// The conversation's messages, in order.
    pub order: Vec<T>,
    pub state: S,
}

impl<T, S> Resumed<T, S> {
    /// A conversation computed from scratch: a new lineage.
    pub fn new(covered: usize, order: Vec<T>, state: S) -> Self {
        Resumed {
            epoch: new_epoch(),
            covered,
            order,
            state,
        }
    }

    /// This state's mark.
    pub fn mark(&self) -> ConversationMark {
        ConversationMark {
            epoch: self.epoch,
            messages: self.order.len() as u64,
        }
    }

    /// The mark of this lineage's start, for a reader that shows no messages for now
    /// (the agent would refuse the file) and all of `order` once it shows them.
    pub fn mark_at_start(&self) -> ConversationMark {
        ConversationMark {
            epoch: self.epoch,
            messages: 0,
        }
    }

    /// The conversation as what it added to the one `since` names when that is an
    /// earlier state of this lineage, else whole; each message rendered by `render`.
    pub fn update(
        &self,
        since: Option<ConversationMark>,
        mut render: impl FnMut(&T) -> MessagePieces,
    ) -> ConversationUpdate {
        match since {
            Some(m) if m.epoch == self.epoch && m.messages <= self.order.len() as u64 => {
                ConversationUpdate::Grown(
                    self.order[m.messages as usize..]
                        .iter()
                        .map(&mut render)
                        .collect(),
                )
            }
            _ => ConversationUpdate::Whole(self.order.iter().map(render).collect()),
        }
    }
}

/// A string's stand-in in the sets of ids a reader's growth checks: two different
/// strings that collide only make a check refuse an append it could have taken
/// (the conversation is then computed again), never take one it should not.
pub fn id_hash(s: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6665_6e2d_6673).hash_one(s)
}

/// Where a reader keeps its [`Resumed`] (readers answer through `&self`); a clone of
/// the reader (one that reads a tail on a copy) starts without one.
pub struct KeptCell<T, S>(Mutex<Option<Resumed<T, S>>>);

impl<T, S> KeptCell<T, S> {
    pub fn lock(&self) -> MutexGuard<'_, Option<Resumed<T, S>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets it (the reader's state was replaced).
    pub fn clear(&mut self) {
        *self.0.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl<T, S> Default for KeptCell<T, S> {
    fn default() -> Self {
        KeptCell(Mutex::new(None))
    }
}

impl<T, S> Clone for KeptCell<T, S> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T, S> std::fmt::Debug for KeptCell<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeptCell")
    }
}
