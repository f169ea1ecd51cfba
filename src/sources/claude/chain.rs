//! Claude Code's resumed chain (SDK `_build_conversation_chain`, `:897-1245`): the
//! newest leaf, its `parentUuid` path to the root, and the parallel tool calls put
//! back. [`walk`] computes it from every record; [`Growth`] takes an appended record
//! in when the rules show it only extends the chain (the usual append), so following
//! a session costs the new lines, not a walk of the whole file.

use super::{Entry, Kind, Map, Set, role_of};
use crate::sources::growth::id_hash;
use std::collections::BTreeMap;

/// An id no uuid has (a partial compaction's anchor that no line names).
const NO_ID: u32 = u32::MAX;

/// Indices into `all` of the entries on the resumed chain, in order. Uuids are
/// compared by their interned ids (`Entry::uid`, `pid`, `stid`), which stand for
/// their strings one to one.
pub(super) fn chain(all: &[&Entry]) -> Vec<usize> {
    walk(all, false).0
}

/// The chain (as `chain`), and with `growth` what taking in the next records needs
/// (`None` when there is no leaf).
pub(super) fn walk(all: &[&Entry], growth: bool) -> (Vec<usize>, Option<Growth>) {
    let ids = all
        .iter()
        .flat_map(|e| [Some(e.uid), e.pid, e.stid])
        .flatten()
        .max()
        .map_or(0, |m| m as usize + 1);
    // A repeated uuid: the later line wins (SDK `:950-952`); `order` keeps each
    // uuid's first position, as the SDK's dict does.
    let mut by_id: Vec<usize> = vec![usize::MAX; ids];
    let mut order: Vec<u32> = Vec::with_capacity(all.len());
    for (i, e) in all.iter().enumerate() {
        if by_id[e.uid as usize] == usize::MAX {
            order.push(e.uid);
        }
        by_id[e.uid as usize] = i;
    }
    let record = |id: u32| by_id.get(id as usize).copied().filter(|&i| i != usize::MAX);
    let live: Vec<usize> = order.iter().map(|&u| by_id[u as usize]).collect();
    let mut by_file: Vec<usize> = live.clone();
    by_file.sort_unstable();

    // Partial compaction (BB-C, `dd8453a6`): the kept uuids hang in order under the
    // anchor, and what was written as the anchor's child continues from the last one.
    let mut kept_parent: Map<u32, u32> = Map::default();
    let mut redirect: Map<u32, u32> = Map::default();
    if by_file.iter().any(|&i| all[i].preserved.is_some()) {
        let mut id_of: Map<&str, u32> = Map::default();
        for e in all {
            id_of.insert(&e.uuid, e.uid);
            if let (Some(p), Some(id)) = (e.parent.as_deref(), e.pid) {
                id_of.insert(p, id);
            }
        }
        for &i in &by_file {
            let Some(p) = all[i].preserved.as_deref() else {
                continue;
            };
            let anchor = id_of.get(&*p.0).copied().unwrap_or(NO_ID);
            let mut prev = anchor;
            for u in p.1.iter().filter_map(|u| id_of.get(&**u).copied()) {
                if record(u).is_some() && u != anchor && !kept_parent.contains_key(&u) {
                    kept_parent.insert(u, prev);
                    prev = u;
                }
            }
            if prev != anchor {
                redirect.insert(anchor, prev);
            }
        }
    }
    let parent = |i: usize| -> Option<u32> {
        let e = all[i];
        if let Some(&p) = kept_parent.get(&e.uid) {
            return Some(p);
        }
        let p = e.pid?;
        Some(redirect.get(&p).copied().unwrap_or(p))
    };
    let up = |i: usize| parent(i).and_then(record);

    // Leaves (SDK `:959-1006`): from each terminal back to the nearest user or
    // assistant entry; the CLI also stops at a local command and does not pass
    // over isMeta/teamName leaves (BB-C). The newest non-sidechain one in file order.
    let mut named: Vec<bool> = vec![false; ids];
    for p in live.iter().filter_map(|&i| parent(i)) {
        if let Some(n) = named.get_mut(p as usize) {
            *n = true;
        }
    }
    let mut leaf: Option<usize> = None;
    for &t in &live {
        if named[all[t].uid as usize] {
            continue;
        }
        let mut cur = Some(t);
        let mut seen = Set::default();
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            let k = all[i].kind;
            if is_message(k) {
                if !all[i].sidechain && leaf.is_none_or(|l| i > l) {
                    leaf = Some(i);
                }
                break;
            }
            cur = up(i);
        }
    }
    let Some(leaf) = leaf else {
        return (Vec::new(), None);
    };

    // parentUuid to the root, never logicalParentUuid: a compact boundary ends it.
    let mut chain = Vec::new();
    let mut seen: Vec<bool> = vec![false; ids];
    let mut cur = Some(leaf);
    while let Some(i) = cur {
        if std::mem::replace(&mut seen[all[i].uid as usize], true) {
            break;
        }
        chain.push(i);
        cur = up(i);
    }
    chain.reverse();
    if !growth {
        let (chain, _) = recover_parallel(all, &record, &order, chain, seen, &parent);
        return (chain, None);
    }
    let on_path = seen.clone();
    let path_responses: Set<&str> = chain
        .iter()
        .filter_map(|&i| all[i].message_id.as_deref())
        .collect();
    let (chain, recovery) = recover_parallel(all, &record, &order, chain, seen, &parent);
    let mut g = Growth {
        leaf,
        ids: ids as u32,
        strays: recovery.strays,
        ..Growth::default()
    };
    for e in all {
        if let Some(p) = &e.preserved {
            g.preserved.insert(id_hash(&p.0));
            g.preserved.extend(p.1.iter().map(|u| id_hash(u)));
        }
        let calls = e.tool_use_ids.iter().chain(&e.tool_result_ids);
        g.calls.extend(calls.map(|c| id_hash(c)));
    }
    for &i in &live {
        if let Some(m) = all[i].message_id.as_deref() {
            let clean = path_responses.contains(m) && !recovery.dirty.contains(m);
            let c = g.responses.entry(id_hash(m)).or_insert(true);
            *c &= clean;
        }
    }
    // What hangs below the leaf through entries that are not messages (a progress
    // line, a turn's closing system line): a message written under one of them
    // continues the chain through them.
    g.below.insert(all[leaf].uid, (leaf, None));
    for &i in &live {
        let e = all[i];
        if is_message(e.kind) || on_path[e.uid as usize] {
            continue;
        }
        if let Some(&(p, _)) = parent(i).and_then(|p| g.below.get(&p)) {
            g.below.insert(e.uid, (i, Some(p)));
        }
    }
    for &i in &chain {
        if let Some(role) = role_of(all[i]) {
            *g.roles.entry(role.to_string()).or_insert(0) += 1;
        }
    }
    (chain, Some(g))
}

/// What `recover_parallel` did, for [`Growth`]: the responses it put entries back
/// for, and whether any response had results linked to it only by their source or
/// call id (strays: a new result could change which of them go back).
#[derive(Default)]
struct Recovery<'a> {
    dirty: Set<&'a str>,
    strays: bool,
}

/// Entries a leaf is looked for among (and a chain continues with).
fn is_message(k: Kind) -> bool {
    matches!(k, Kind::User | Kind::Assistant | Kind::LocalCommand)
}

/// SDK `_recover_orphaned_parallel_tool_results` (`:1086-1245`): a response's
/// sibling assistant entries and their tool results that the walk missed go back
/// after the response's last entry on the chain. `seen` is by uuid id.
fn recover_parallel<'a>(
    all: &[&'a Entry],
    record: &dyn Fn(u32) -> Option<usize>,
    order: &[u32],
    chain: Vec<usize>,
    mut seen: Vec<bool>,
    parent: &dyn Fn(usize) -> Option<u32>,
) -> (Vec<usize>, Recovery<'a>) {
    let mut recovery = Recovery::default();
    let mid = |i: usize| all[i].message_id.as_deref();
    let mut anchor: Map<&str, usize> = Map::default();
    for &i in &chain {
        if let Some(m) = mid(i) {
            anchor.insert(m, i);
        }
    }
    if anchor.is_empty() {
        return (chain, recovery);
    }
    let same_writer = |a: usize, b: usize| {
        all[a].sidechain == all[b].sidechain && all[a].agent_id == all[b].agent_id
    };

    let mut siblings: Map<&str, Vec<usize>> = Map::default();
    let mut call_owner: Map<&str, Option<usize>> = Map::default();
    let mut results: Vec<usize> = Vec::new();
    for &u in order {
        let Some(i) = record(u) else { continue };
        if let Some(m) = mid(i) {
            siblings.entry(m).or_default().push(i);
            for c in &all[i].tool_use_ids {
                let owner = match call_owner.get(&**c) {
                    None => Some(i),
                    Some(o) => o.filter(|&o| mid(o) == Some(m)).map(|_| i),
                };
                call_owner.insert(c, owner);
            }
        } else if all[i].kind == Kind::User && all[i].has_tool_result && parent(i).is_some() {
            results.push(i);
        }
    }
    // Keyed by the assistant entry's uuid id.
    let mut by_assistant: Map<u32, Vec<usize>> = Map::default();
    for &r in &results {
        if let Some(p) = parent(r) {
            by_assistant.entry(p).or_default().push(r);
        }
        if let Some(si) = all[r].stid.and_then(record)
            && same_writer(r, si)
        {
            by_assistant.entry(all[si].uid).or_default().push(r);
        }
        for c in &all[r].tool_result_ids {
            if let Some(&Some(o)) = call_owner.get(&**c)
                && same_writer(r, o)
            {
                by_assistant.entry(all[o].uid).or_default().push(r);
            }
        }
    }

    let answered_on_chain: Set<&str> = chain
        .iter()
        .flat_map(|&i| all[i].tool_result_ids.iter().map(|s| &**s))
        .collect();
    // Only strays are ordered by it (rare): built when the first one is.
    let position: std::cell::OnceCell<Map<u32, usize>> = std::cell::OnceCell::new();
    let position = |u: u32| {
        position.get_or_init(|| order.iter().enumerate().map(|(p, u)| (*u, p)).collect())[&u]
    };
    let ts = |i: usize| all[i].timestamp.as_deref().unwrap_or("");

    let mut processed: Set<&str> = Set::default();
    let mut inserts: Map<usize, Vec<usize>> = Map::default();
    for &a in &chain {
        let Some(m) = mid(a) else { continue };
        if !processed.insert(m) {
            continue;
        }
        let group = siblings.get(m).cloned().unwrap_or_else(|| vec![a]);
        let members: Set<u32> = group.iter().map(|&g| all[g].uid).collect();
        let mut orphan_siblings: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&g| !seen[all[g].uid as usize])
            .collect();
        let mut orphan_results = Vec::new();
        let mut strays = Vec::new();
        let mut collected: Set<usize> = Set::default();
        for &g in &group {
            for &r in by_assistant.get(&all[g].uid).into_iter().flatten() {
                if seen[all[r].uid as usize] || !collected.insert(r) {
                    continue;
                }
                if parent(r).is_some_and(|p| members.contains(&p)) {
                    orphan_results.push(r);
                } else {
                    strays.push(r);
                }
            }
        }
        if !strays.is_empty() {
            recovery.strays = true;
            let mut answered = answered_on_chain.clone();
            for &r in &orphan_results {
                answered.extend(all[r].tool_result_ids.iter().map(|s| &**s));
            }
            strays.sort_by_key(|&r| position(all[r].uid));
            for r in strays {
                let ids = &all[r].tool_result_ids;
                let open = ids.iter().any(|c| {
                    !answered.contains(&**c)
                        && matches!(call_owner.get(&**c), Some(Some(o)) if members.contains(&all[*o].uid))
                });
                if open {
                    answered.extend(ids.iter().map(|s| &**s));
                    orphan_results.push(r);
                }
            }
        }
        if orphan_siblings.is_empty() && orphan_results.is_empty() {
            continue;
        }
        orphan_siblings.sort_by(|&x, &y| ts(x).cmp(ts(y)));
        orphan_results.sort_by(|&x, &y| ts(x).cmp(ts(y)));
        let recovered: Vec<usize> = orphan_siblings.into_iter().chain(orphan_results).collect();
        for &r in &recovered {
            seen[all[r].uid as usize] = true;
        }
        inserts.insert(anchor[m], recovered);
        recovery.dirty.insert(m);
    }
    if inserts.is_empty() {
        return (chain, recovery);
    }
    let mut out = Vec::with_capacity(chain.len());
    for i in chain {
        out.push(i);
        if let Some(more) = inserts.remove(&i) {
            out.extend(more);
        }
    }
    (out, recovery)
}

/// What taking an appended record into the chain needs to know of the records so
/// far. A record extends the chain, with the recovered entries where they were, when
/// nothing the chain was computed from changes for the records before it:
/// - its uuid is new (no record named it before: it is no one's parent, replaces no
///   line) and no partial compaction names it or its parent, and it carries none;
/// - its parent is the leaf or hangs below it ([`Growth::below`]);
/// - a message (user, assistant, local command), not on a sidechain: it becomes the
///   newest leaf, and the entries between the old leaf and it join the chain;
///   anything else joins the entries below the leaf (the chain does not change);
/// - for the parallel tool calls put back: its response (`message.id`) is new or one
///   whose entries are all on the chain with nothing put back, its tool calls' ids
///   are new, and if it answers calls, no response had stray results.
///
/// Anything else (a branch, a rewind, a compaction, a line written again) and the
/// chain is computed again from every record ([`walk`]).
#[derive(Debug, Default)]
pub(super) struct Growth {
    /// The chain's last entry before recovery (the leaf).
    leaf: usize,
    /// By uuid id: the leaf, and what hangs below it through entries that are not
    /// messages, with the record each is and its parent's record.
    below: Map<u32, (usize, Option<usize>)>,
    /// One past the largest uuid id any record names: the next new uuid gets it.
    ids: u32,
    /// Response ids (`message.id`, hashed) of every live record: true when the
    /// response is on the chain whole, with nothing put back.
    responses: Map<u64, bool>,
    /// Tool call ids (hashed) any record names, calling or answering.
    calls: Set<u64>,
    /// Some response had stray results (see `Recovery`).
    strays: bool,
    /// Every uuid a partial compaction names (hashed), anchors and kept ones.
    preserved: Set<u64>,
    /// Messages of the conversation per role (what the summary counts).
    pub(super) roles: BTreeMap<String, u64>,
}

impl Growth {
    /// Takes record `k` of `records` in: its messages (and those of the entries
    /// between the leaf and it) go to the end of `order`, the conversation's record
    /// numbers. False when the chain must be computed again (see [`Growth`]).
    pub(super) fn take(&mut self, records: &[Entry], k: usize, order: &mut Vec<u32>) -> bool {
        let e = &records[k];
        let fresh = e.uid == self.ids;
        for id in [Some(e.uid), e.pid, e.stid].into_iter().flatten() {
            self.ids = self.ids.max(id + 1);
        }
        let named = |s: &str| self.preserved.contains(&id_hash(s));
        if !fresh
            || e.preserved.is_some()
            || named(&e.uuid)
            || e.parent.as_deref().is_some_and(named)
        {
            return false;
        }
        let Some(&(parent, _)) = e.pid.and_then(|p| self.below.get(&p)) else {
            return false;
        };
        if !is_message(e.kind) {
            self.below.insert(e.uid, (k, Some(parent)));
            return true;
        }
        if e.sidechain {
            return false;
        }
        if let Some(m) = e.message_id.as_deref() {
            if !*self.responses.entry(id_hash(m)).or_insert(true) {
                return false;
            }
            for c in &e.tool_use_ids {
                if !self.calls.insert(id_hash(c)) {
                    return false;
                }
            }
        }
        if !e.tool_result_ids.is_empty() && self.strays {
            return false;
        }
        self.calls.extend(
            e.tool_use_ids
                .iter()
                .chain(&e.tool_result_ids)
                .map(|c| id_hash(c)),
        );
        // The entries from the leaf down to this one, in order.
        let mut path = vec![k];
        let mut at = Some(parent);
        while let Some(i) = at.filter(|&i| i != self.leaf) {
            path.push(i);
            at = self.below.get(&records[i].uid).and_then(|b| b.1);
        }
        for &i in path.iter().rev() {
            if let Some(role) = role_of(&records[i]) {
                *self.roles.entry(role.to_string()).or_insert(0) += 1;
                order.push(i as u32);
            }
        }
        self.leaf = k;
        self.below.clear();
        self.below.insert(e.uid, (k, None));
        true
    }
}
