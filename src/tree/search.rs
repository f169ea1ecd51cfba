//! The `search/` folder: any name looked up under it is a query (SPEC §8), answered
//! by the search service; its folder holds `hits.jsonl` and one link per hit,
//! `NN-<session dir>` → `../../<namespace>/<session dir>`. Nothing here is cached by
//! the kernel (TTL 0, direct I/O), and `ls search/` lists nothing. A query's folder,
//! files and links carry the time of the index's last commit.

use super::attr::{Attr, CacheMode, FileKind};
use super::inodes::{HITS, Node};
use super::{DirEntry, Tree};
use crate::error::{Error, Result};
use crate::search::hits::Answer;
use crate::views::Snapshot;
use std::sync::Arc;

/// A hit's link name: its rank from 01, then its session folder.
fn link_name(rank: usize, dir: &str) -> String {
    format!("{rank:02}-{dir}")
}

/// A hit's link target, from `search/<query>/`.
fn link_target(namespace_shown: &str, dir: &str) -> String {
    format!("../../{namespace_shown}/{dir}")
}

impl Tree {
    fn search_service(&self) -> Result<&Arc<crate::search::Search>> {
        self.search
            .as_ref()
            .ok_or_else(|| Error::not_found("this mount has no search"))
    }

    /// The answer to `query` (EINVAL for a query that does not parse).
    fn search_answer(&self, query: &str) -> Result<Arc<Answer>> {
        let _served = self.foreground(true);
        self.search_service()?.answer_text(query)
    }

    /// The link `name` of `query`'s answer, as (target).
    fn search_link(&self, query: &str, name: &str) -> Result<String> {
        let answer = self.search_answer(query)?;
        answer
            .hits
            .iter()
            .enumerate()
            .find(|(i, h)| link_name(i + 1, &h.dir) == name)
            .map(|(_, h)| link_target(&h.namespace, &h.dir))
            .ok_or_else(|| Error::not_found(format!("no hit {name} for {query}")))
    }

    pub(super) fn search_child(&self, parent: &Node, name: &str) -> Result<Node> {
        match parent {
            Node::SearchRoot => {
                // Runs the query now: a bad one fails the lookup (EINVAL).
                self.search_answer(name)?;
                Ok(Node::SearchQuery(name.to_string()))
            }
            Node::SearchQuery(q) if name == HITS => Ok(Node::SearchHits(q.clone())),
            Node::SearchQuery(q) => {
                self.search_link(q, name)?;
                Ok(Node::SearchLink(q.clone(), name.to_string()))
            }
            _ => Err(Error::new(libc::ENOTDIR, "not a folder")),
        }
    }

    pub(super) fn search_attr(&self, ino: u64, node: &Node, opened: Option<u64>) -> Result<Attr> {
        // An answer changes only with the index: its time is the index's last change
        // (so a query's files keep their size and time while the index is at rest).
        let now = self.search_service()?.changed_at();
        let mut a = match node {
            Node::SearchRoot => {
                self.search_service()?;
                // The root's: `ls -t` of the root sorts by the namespaces' activity.
                self.attr(ino, FileKind::Directory, 0o555, 0, self.root_mtime())
            }
            Node::SearchQuery(q) => {
                self.search_answer(q)?;
                self.attr(ino, FileKind::Directory, 0o555, 0, now)
            }
            Node::SearchHits(q) => {
                let size = match opened {
                    Some(s) => s,
                    None => self.search_answer(q)?.jsonl().len() as u64,
                };
                self.attr(ino, FileKind::RegularFile, 0o444, size, now)
            }
            Node::SearchLink(q, name) => {
                let target = self.search_link(q, name)?;
                self.attr(ino, FileKind::Symlink, 0o777, target.len() as u64, now)
            }
            _ => return Err(Error::not_found("not in search/")),
        };
        a.volatile = true;
        Ok(a)
    }

    pub(super) fn search_list(&self, node: &Node, out: &mut Vec<DirEntry>) -> Result<()> {
        match node {
            // Any name is a query: there is nothing to list.
            Node::SearchRoot => Ok(()),
            Node::SearchQuery(q) => {
                let answer = self.search_answer(q)?;
                out.push(DirEntry {
                    ino: self.inodes.ino(&Node::SearchHits(q.clone())),
                    kind: FileKind::RegularFile,
                    name: HITS.into(),
                });
                for (i, h) in answer.hits.iter().enumerate() {
                    let name = link_name(i + 1, &h.dir);
                    out.push(DirEntry {
                        ino: self.inodes.ino(&Node::SearchLink(q.clone(), name.clone())),
                        kind: FileKind::Symlink,
                        name,
                    });
                }
                Ok(())
            }
            _ => Err(Error::new(libc::ENOTDIR, "not a folder")),
        }
    }

    pub(super) fn search_open(&self, node: &Node) -> Result<(Snapshot, CacheMode)> {
        match node {
            Node::SearchHits(q) => Ok((
                Snapshot::Bytes(Arc::new(self.search_answer(q)?.jsonl())),
                CacheMode::DirectIo,
            )),
            _ => Err(Error::new(libc::EISDIR, "is a folder")),
        }
    }

    pub(super) fn search_readlink(&self, node: &Node) -> Result<Vec<u8>> {
        match node {
            Node::SearchLink(q, name) => Ok(self.search_link(q, name)?.into_bytes()),
            _ => Err(Error::invalid("not a symbolic link")),
        }
    }
}
