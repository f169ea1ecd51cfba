//! Inode numbers for the synthesized tree. Each namespace and each session gets a
//! slot; its folder and the files in it are `slot << 3 | kind`, so one table entry
//! serves a whole session folder. Slots are never reused during a mount, so an inode
//! number always means the same thing. The `search/` folder's nodes (one per query
//! asked) live in a table of their own, bounded: the oldest are forgotten, and their
//! numbers then answer ENOENT (nothing under `search/` is cached by the kernel, so a
//! path is looked up again by name).

use crate::views::ViewKind;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    Root,
    RootCtl,
    Namespace(String),
    Latest(String),
    IndexJson(String),
    SessionDir(String, String),
    View(String, String, ViewKind),
    SessionCtl(String, String),
    /// `search/`.
    SearchRoot,
    /// `search/<query>/`.
    SearchQuery(String),
    /// `search/<query>/hits.jsonl`.
    SearchHits(String),
    /// `search/<query>/<NN-session dir>`: a link to the session's folder.
    SearchLink(String, String),
    /// `usage/`.
    UsageRoot,
    /// One of `usage/`'s files.
    UsageFile(super::usage_files::UsageFile),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Slot {
    Namespace(String),
    Session(String, String),
}

pub const ROOT: u64 = 1;
pub const ROOT_CTL: u64 = 2;
pub const SEARCH_ROOT: u64 = 3;
/// The search folder's nodes are numbered from here (far above any slot's).
const SEARCH_BASE: u64 = 1 << 62;
/// `usage/` and its files (a fixed few, far from slots and search nodes).
const USAGE_BASE: u64 = 1 << 61;
/// Search nodes remembered at once.
const SEARCH_NODES: usize = 16_384;

/// The search folder's name in the mount's root, and its hits file.
pub const SEARCH: &str = "search";
pub const HITS: &str = "hits.jsonl";

/// The `ctl` file's name, in the root and in each writable session folder.
pub const CTL: &str = "ctl";

/// The files of a session folder, in `ls` order, with their kind codes (`ctl` is
/// listed only in writable sessions).
pub const SESSION_FILES: [(&str, u64); 6] = [
    (ViewKind::Conversation.file_name(), 2),
    (ViewKind::Markdown.file_name(), 6),
    (CTL, 5),
    (ViewKind::Meta.file_name(), 4),
    (ViewKind::Summary.file_name(), 3),
    (ViewKind::Transcript.file_name(), 1),
];

fn view_of(code: u64) -> Option<ViewKind> {
    Some(match code {
        1 => ViewKind::Transcript,
        2 => ViewKind::Conversation,
        3 => ViewKind::Summary,
        4 => ViewKind::Meta,
        6 => ViewKind::Markdown,
        _ => return None,
    })
}

fn code_of(kind: ViewKind) -> u64 {
    match kind {
        ViewKind::Transcript => 1,
        ViewKind::Conversation => 2,
        ViewKind::Summary => 3,
        ViewKind::Meta => 4,
        ViewKind::Markdown => 6,
    }
}

#[derive(Default)]
pub struct InodeTable {
    inner: Mutex<Table>,
    search: Mutex<SearchTable>,
}

/// Search nodes by number and back, oldest first out.
#[derive(Default)]
struct SearchTable {
    next: u64,
    by_node: HashMap<Node, u64>,
    by_ino: HashMap<u64, Node>,
    order: std::collections::VecDeque<u64>,
}

impl SearchTable {
    fn ino(&mut self, node: &Node) -> u64 {
        if let Some(&n) = self.by_node.get(node) {
            return n;
        }
        self.next += 1;
        let ino = SEARCH_BASE + self.next;
        self.by_node.insert(node.clone(), ino);
        self.by_ino.insert(ino, node.clone());
        self.order.push_back(ino);
        while self.order.len() > SEARCH_NODES {
            if let Some(old) = self.order.pop_front()
                && let Some(n) = self.by_ino.remove(&old)
            {
                self.by_node.remove(&n);
            }
        }
        ino
    }
}

#[derive(Default)]
struct Table {
    slots: Vec<Slot>,
    by_slot: HashMap<Slot, u64>,
}

impl Table {
    fn slot(&mut self, s: Slot) -> u64 {
        if let Some(&n) = self.by_slot.get(&s) {
            return n;
        }
        self.slots.push(s.clone());
        let n = self.slots.len() as u64;
        self.by_slot.insert(s, n);
        n
    }
}

/// The folder of a file in a session folder (the same slot, kind 0).
pub fn folder_of(ino: u64) -> u64 {
    ino & !7
}

impl InodeTable {
    pub fn ino(&self, node: &Node) -> u64 {
        match node {
            Node::SearchRoot => return SEARCH_ROOT,
            Node::UsageRoot => return USAGE_BASE,
            Node::UsageFile(f) => return USAGE_BASE + 1 + f.code(),
            Node::SearchQuery(_) | Node::SearchHits(_) | Node::SearchLink(..) => {
                return self.search.lock().unwrap().ino(node);
            }
            _ => {}
        }
        let mut t = self.inner.lock().unwrap();
        match node {
            Node::Root => ROOT,
            Node::RootCtl => ROOT_CTL,
            Node::SearchRoot
            | Node::SearchQuery(_)
            | Node::SearchHits(_)
            | Node::SearchLink(..)
            | Node::UsageRoot
            | Node::UsageFile(_) => unreachable!("numbered above"),
            Node::Namespace(ns) => t.slot(Slot::Namespace(ns.clone())) << 3,
            Node::Latest(ns) => t.slot(Slot::Namespace(ns.clone())) << 3 | 1,
            Node::IndexJson(ns) => t.slot(Slot::Namespace(ns.clone())) << 3 | 2,
            Node::SessionDir(ns, d) => t.slot(Slot::Session(ns.clone(), d.clone())) << 3,
            Node::View(ns, d, k) => t.slot(Slot::Session(ns.clone(), d.clone())) << 3 | code_of(*k),
            Node::SessionCtl(ns, d) => t.slot(Slot::Session(ns.clone(), d.clone())) << 3 | 5,
        }
    }

    pub fn node(&self, ino: u64) -> Option<Node> {
        match ino {
            ROOT => return Some(Node::Root),
            ROOT_CTL => return Some(Node::RootCtl),
            SEARCH_ROOT => return Some(Node::SearchRoot),
            USAGE_BASE => return Some(Node::UsageRoot),
            i if i > USAGE_BASE && i < USAGE_BASE + 8 => {
                return super::usage_files::UsageFile::of_code(i - USAGE_BASE - 1)
                    .map(Node::UsageFile);
            }
            i if i > SEARCH_BASE => return self.search.lock().unwrap().by_ino.get(&i).cloned(),
            _ => {}
        }
        let t = self.inner.lock().unwrap();
        let slot = t.slots.get(((ino >> 3) as usize).checked_sub(1)?)?;
        let code = ino & 7;
        Some(match (slot, code) {
            (Slot::Namespace(ns), 0) => Node::Namespace(ns.clone()),
            (Slot::Namespace(ns), 1) => Node::Latest(ns.clone()),
            (Slot::Namespace(ns), 2) => Node::IndexJson(ns.clone()),
            (Slot::Session(ns, d), 0) => Node::SessionDir(ns.clone(), d.clone()),
            (Slot::Session(ns, d), 5) => Node::SessionCtl(ns.clone(), d.clone()),
            (Slot::Session(ns, d), c) => Node::View(ns.clone(), d.clone(), view_of(c)?),
            _ => return None,
        })
    }
}

impl InodeTable {
    /// Every namespace and session folder numbered so far, with its number.
    pub fn folders(&self) -> Vec<(u64, Node)> {
        let t = self.inner.lock().unwrap();
        t.slots
            .iter()
            .enumerate()
            .map(|(i, slot)| {
                let ino = (i as u64 + 1) << 3;
                let node = match slot {
                    Slot::Namespace(ns) => Node::Namespace(ns.clone()),
                    Slot::Session(ns, d) => Node::SessionDir(ns.clone(), d.clone()),
                };
                (ino, node)
            })
            .collect()
    }
}

/// The node for `name` inside a session folder, if it is one of its files.
pub fn session_file(ns: &str, dir: &str, name: &str) -> Option<Node> {
    let (_, code) = SESSION_FILES.iter().find(|(n, _)| *n == name)?;
    Some(match code {
        5 => Node::SessionCtl(ns.into(), dir.into()),
        c => Node::View(ns.into(), dir.into(), view_of(*c)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = InodeTable::default();
        let nodes = [
            Node::Root,
            Node::RootCtl,
            Node::Namespace("--a--".into()),
            Node::Latest("--a--".into()),
            Node::IndexJson("--a--".into()),
            Node::SessionDir("--a--".into(), "d".into()),
            Node::SessionCtl("--a--".into(), "d".into()),
            Node::View("--a--".into(), "d".into(), ViewKind::Meta),
            Node::View("--b--".into(), "e".into(), ViewKind::Transcript),
            Node::View("--b--".into(), "e".into(), ViewKind::Markdown),
            Node::SearchRoot,
            Node::SearchQuery("flaky test".into()),
            Node::SearchHits("flaky test".into()),
            Node::SearchLink("flaky test".into(), "01-d".into()),
            Node::UsageRoot,
            Node::UsageFile(super::super::usage_files::UsageFile::Daily),
            Node::UsageFile(super::super::usage_files::UsageFile::DailySvg),
        ];
        for n in &nodes {
            let ino = t.ino(n);
            assert_eq!(t.node(ino).as_ref(), Some(n), "{ino}");
        }
        assert_eq!(t.node(999), None);
    }

    #[test]
    fn search_nodes_are_bounded_and_forgotten_oldest_first() {
        let t = InodeTable::default();
        let first = t.ino(&Node::SearchQuery("q0".into()));
        for i in 1..=SEARCH_NODES {
            t.ino(&Node::SearchQuery(format!("q{i}")));
        }
        assert_eq!(t.node(first), None, "forgotten");
        let last = t.ino(&Node::SearchQuery(format!("q{SEARCH_NODES}")));
        assert_eq!(
            t.node(last),
            Some(Node::SearchQuery(format!("q{SEARCH_NODES}")))
        );
        assert_ne!(
            t.ino(&Node::SearchQuery("q0".into())),
            first,
            "never reused"
        );
    }
}
