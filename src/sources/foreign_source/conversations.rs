//! `conversation.json` layouts (byte ranges of the session's bytes): one per state of
//! a file, shared by `stat` and every open; a large file's saved in fen's cache for
//! the next mount, used only when it proves it belongs to the file.

use super::{ForeignSource, INDEX_VERSION, MAX_CACHE_BYTES, PERSIST_MIN};
use crate::error::Result;
use crate::sources::foreign::{ConversationMark, ConversationUpdate, MessagePieces};
use crate::store::index::{FileStamp, content_check, tokens_of};
use crate::views::pieces::{Piece, PieceLayout};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Conversation layouts kept in memory (larger files' are also on disk).
const LAYOUTS_IN_MEMORY: usize = 32;

/// The layouts in memory, with the use counter that tells the oldest.
#[derive(Default)]
pub(super) struct Layouts {
    tick: u64,
    pub(super) by_path: HashMap<PathBuf, Conversation>,
}

/// A file's `conversation.json` as of one stamp.
pub(super) struct Conversation {
    pub(super) stamp: FileStamp,
    /// The file's `content_check` when the layout was made (its stamp, ctime
    /// included, is `stamp`): what a persisted copy must match, taken then, not
    /// when saving, so a later rewrite cannot vouch for an older layout.
    pub(super) proof: Option<u64>,
    pub(super) layout: Arc<PieceLayout>,
    pub(super) context_tokens: u64,
    /// The reader's mark of this conversation: the next state of the file can be
    /// given as the messages it added (`None`: computed whole next time).
    pub(super) mark: Option<ConversationMark>,
    pub(super) used: u64,
    pub(super) saved: bool,
}

/// A file's conversation as it was, to grow when the reader says it only grew.
pub(super) struct Before {
    pub(super) mark: ConversationMark,
    layout: Arc<PieceLayout>,
    context_tokens: u64,
}

/// The layout and token estimate of `update`: `before`'s grown by the new messages,
/// or made whole. `None` when `update` grows a conversation `before` is not.
fn layout_of(
    before: Option<&Before>,
    update: ConversationUpdate,
) -> Option<(Arc<PieceLayout>, u64)> {
    match update {
        ConversationUpdate::Whole(messages) => {
            let tokens = tokens_in(&messages);
            Some((Arc::new(PieceLayout::conversation(messages)), tokens))
        }
        ConversationUpdate::Grown(messages) => {
            let before = before?;
            let tokens = before.context_tokens + tokens_in(&messages);
            Some((Arc::new(before.layout.grown(messages)?), tokens))
        }
    }
}

/// The context's token estimate of `messages` (`meta.json`'s `context_tokens`).
pub(super) fn tokens_in(messages: &[MessagePieces]) -> u64 {
    messages
        .iter()
        .map(|m| tokens_of(m.iter().map(piece_len).sum()))
        .sum()
}

impl ForeignSource {
    /// The conversation layout of `path` as it is now, with the descriptor its ranges
    /// are read through and the context's token estimate: from the cache when the file
    /// is unchanged, else from the persisted layout of a large file, else computed.
    pub(super) fn conversation(&self, path: &Path) -> Result<(File, Arc<PieceLayout>, u64)> {
        let (file, stamp) = self.open_bytes(path)?;
        let before = {
            let mut convs = self.conversations.lock().unwrap();
            convs.tick += 1;
            let tick = convs.tick;
            if let Some(c) = convs.by_path.get_mut(path)
                && c.stamp == stamp
            {
                c.used = tick;
                return Ok((file, c.layout.clone(), c.context_tokens));
            }
            convs.by_path.get(path).and_then(Conversation::before)
        };
        // A conversation the reader can grow is not loaded from disk: the reader
        // gives the messages the file gained.
        let loaded = match before {
            Some(_) => None,
            None => self.load_conversation(path, &file, stamp),
        };
        let (file, stamp, layout, tokens, mark, saved, proof) = match loaded {
            Some((layout, tokens)) => (file, stamp, Arc::new(layout), tokens, None, true, None),
            None => {
                let (file, stamp, (update, mark)) = self.with_reader(path, |r, tail| {
                    r.conversation_since(tail, before.as_ref().map(|b| b.mark))
                })?;
                let (layout, tokens, mark) =
                    self.grown_layout(path, before.as_ref(), update, mark)?;
                let proof = file.metadata().ok().and_then(|m| {
                    (FileStamp::of(&m) == stamp)
                        .then(|| content_check(&file, stamp.size).ok())
                        .flatten()
                });
                (file, stamp, layout, tokens, mark, false, proof)
            }
        };
        self.remember_conversation(
            path,
            Conversation {
                stamp,
                proof,
                layout: layout.clone(),
                context_tokens: tokens,
                mark,
                used: 0,
                saved,
            },
        );
        Ok((file, layout, tokens))
    }

    /// The layout and token estimate of `update` (with the reader's `mark` of it):
    /// `before`'s grown by the new messages, or made whole. Should the update grow a
    /// conversation `before` is not (no reader does), it is made whole from the
    /// reader, unmarked.
    pub(super) fn grown_layout(
        &self,
        path: &Path,
        before: Option<&Before>,
        update: ConversationUpdate,
        mark: Option<ConversationMark>,
    ) -> Result<(Arc<PieceLayout>, u64, Option<ConversationMark>)> {
        if let Some((layout, tokens)) = layout_of(before, update) {
            return Ok((layout, tokens, mark));
        }
        let (_, _, messages) = self.with_reader(path, |r, tail| r.conversation(tail))?;
        let tokens = tokens_in(&messages);
        Ok((Arc::new(PieceLayout::conversation(messages)), tokens, None))
    }

    /// Keeps `c` in memory; the layout that leaves for it is saved if it is worth
    /// keeping for the next mount.
    pub(super) fn remember_conversation(&self, path: &Path, mut c: Conversation) {
        let mut convs = self.conversations.lock().unwrap();
        convs.tick += 1;
        c.used = convs.tick;
        convs.by_path.insert(path.to_path_buf(), c);
        let oldest = (convs.by_path.len() > LAYOUTS_IN_MEMORY)
            .then(|| {
                convs
                    .by_path
                    .iter()
                    .min_by_key(|(_, c)| c.used)
                    .map(|(p, _)| p.clone())
            })
            .flatten();
        if let Some(c) = oldest.and_then(|p| convs.by_path.remove_entry(&p)) {
            drop(convs);
            self.save_conversation(&c.0, &c.1);
        }
    }

    pub(super) fn conversation_cache_path(
        &self,
        path: &Path,
    ) -> Option<crate::store::layout::CacheFile> {
        let root = self.fen_root.as_ref()?;
        Some(crate::store::layout::foreign_conversation_cache(
            root,
            self.agent.name(),
            path,
        ))
    }

    /// A persisted layout, used only if it proves it belongs to this state of the
    /// file: same stamp, same bytes at the file's head and tail, intact checksum.
    pub(super) fn load_conversation(
        &self,
        path: &Path,
        file: &File,
        stamp: FileStamp,
    ) -> Option<(PieceLayout, u64)> {
        if stamp.size < PERSIST_MIN {
            return None;
        }
        let cache = self.conversation_cache_path(path)?;
        let bytes = crate::store::atomic::read_file(&cache, MAX_CACHE_BYTES)?;
        let nl = bytes.iter().position(|&b| b == b'\n')?;
        let head: ConversationHead = serde_json::from_slice(&bytes[..nl]).ok()?;
        let body = &bytes[nl + 1..];
        let valid = head.version == INDEX_VERSION
            && head.path == path
            && head.stamp == stamp
            && head.checksum == crate::store::atomic::checksum(&[body])
            && head.edges == content_check(file, stamp.size).ok()?;
        if !valid {
            return None;
        }
        let layout = PieceLayout::from_bytes(body)?;
        // Every range must lie inside the file: a damaged cache is never served.
        layout
            .fits(stamp.size)
            .then_some((layout, head.context_tokens))
    }

    pub(super) fn save_conversation(&self, path: &Path, c: &Conversation) {
        let (Some(edges), false) = (c.proof, c.saved) else {
            return;
        };
        if c.stamp.size < PERSIST_MIN {
            return;
        }
        let Some(cache) = self.conversation_cache_path(path) else {
            return;
        };
        let body = c.layout.to_bytes();
        let head = ConversationHead {
            version: INDEX_VERSION,
            path: path.to_path_buf(),
            stamp: c.stamp,
            edges,
            checksum: crate::store::atomic::checksum(&[&body]),
            context_tokens: c.context_tokens,
        };
        let Ok(mut bytes) = serde_json::to_vec(&head) else {
            return;
        };
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        crate::store::atomic::replace_file(&cache, &bytes);
    }
}

#[derive(Serialize, Deserialize)]
struct ConversationHead {
    version: u32,
    path: PathBuf,
    /// With the ctime: a file re-created or rewritten and `touch`ed differs here.
    stamp: FileStamp,
    /// `content_check` of the whole file: a rewrite that kept the size and the
    /// times still changes it.
    edges: u64,
    checksum: u64,
    context_tokens: u64,
}

impl Conversation {
    /// What a later state of the file can grow from, if the reader marked it.
    pub(super) fn before(&self) -> Option<Before> {
        Some(Before {
            mark: self.mark?,
            layout: self.layout.clone(),
            context_tokens: self.context_tokens,
        })
    }
}

pub(super) fn piece_len(p: &Piece) -> u64 {
    match p {
        Piece::Text(t) => t.len() as u64,
        Piece::Range { len, .. } => *len,
    }
}
