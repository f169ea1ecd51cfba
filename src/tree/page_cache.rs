//! What the kernel's page cache may hold of each file the tree lets it cache
//! (`conversation.json`, `conversation.md`, `index.json`, and transcripts it does
//! not read itself), and the invalidations that keep it true.
//!
//! The kernel keeps one set of pages per inode, shared by every handle, and drops
//! them only when told (FUSE_EXPLICIT_INVAL_DATA). So the tree remembers, per inode,
//! the state of the view those pages are from, and:
//! - a handle opened on that same state reads through the page cache;
//! - a handle opened on a new state, with no handle of the old one open, first has
//!   the pages dropped from the first byte that differs (the notifier sends it; the
//!   `open` waits for it), and the new state becomes the cached one: a conversation
//!   that grew by a message keeps its whole prefix cached. When the first change is
//!   within the first MiB, the open instead lets the kernel empty the cache itself
//!   (no KEEP_CACHE) and the handle fills it again: no wait;
//! - a handle opened on a new state while handles of the old one are open reads past
//!   the cache (direct I/O), leaving their pages alone: each handle stays a snapshot;
//! - a transcript's handles read the file as it is, so its new state always becomes
//!   the cached one (pages from where it ended are dropped before its new size is
//!   told).
//!
//! A file's last page is cached zero-filled past its end; before the kernel is told
//! a larger size while handles of the old state are open, that page is dropped.

use super::attr::CacheMode;
use super::invalidate::Invalidations;
use crate::views::Snapshot;
use crate::views::version::{PAGE, Version};
use std::collections::HashMap;
use std::sync::Mutex;

/// Inodes remembered; the least recently used one with no handle open is dropped
/// (and so are its pages: the kernel then holds nothing the tree does not know of).
const ENTRIES: usize = 64;

struct Entry {
    version: Version,
    /// Handles open on `version` through the page cache.
    open: u32,
    /// One of them read to its end since its last page was dropped: the kernel holds
    /// that page zero-filled past the end.
    tail_read: bool,
    /// The token of a handle opened with [`CacheMode::Refill`] whose open may not have
    /// emptied the kernel's cache yet (0: none): until it reads or closes, opens of the
    /// same state refill too.
    refilling: u64,
    /// Changed with `version` (unique across entries).
    generation: u64,
    used: u64,
}

#[derive(Default)]
struct Entries {
    tick: u64,
    map: HashMap<u64, Entry>,
}

/// How a handle was given out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedOpen {
    pub cache: CacheMode,
    /// Its token as a counted page-cache handle of its inode (for `read` and
    /// `release`); 0 when not counted.
    pub token: u64,
}

/// Below this first changed byte, a new state refills the cache whole (the kernel
/// empties it at the open, with no wait for the notifier): re-reading under 1 MiB
/// costs less than a round trip to the notifier thread on a busy machine (measured:
/// 0.2 against 2 ms, a small session's read after an append, under load 9).
const REFILL_BELOW: u64 = 1 << 20;

#[derive(Default)]
pub struct PageCache {
    entries: Mutex<Entries>,
}

impl PageCache {
    /// How a new handle of `ino` reading `snap` is served (see the module's rules).
    pub fn open(&self, ino: u64, snap: &Snapshot, stale: &Invalidations) -> CachedOpen {
        let not_counted = |cache| CachedOpen { cache, token: 0 };
        // A snapshot that reads the file as it is now (a transcript), not a state.
        let live = matches!(snap, Snapshot::Transcript(_));
        let (old, generation) = {
            let mut e = self.entries.lock().unwrap();
            e.tick += 1;
            let tick = e.tick;
            match e.map.get_mut(&ino) {
                Some(entry) => {
                    entry.used = tick;
                    (Some(entry.version.clone()), entry.generation)
                }
                None => (None, 0),
            }
        };
        // Compared without the lock: a rendering's pages are hashed.
        let from = match &old {
            None => Some(0),
            Some(old) => snap.first_change_since(old),
        };
        let mut e = self.entries.lock().unwrap();
        e.tick += 1;
        let token = e.tick;
        let Some(from) = from else {
            return match e.map.get_mut(&ino) {
                Some(entry) if entry.generation == generation => {
                    entry.open += 1;
                    let cache = if entry.refilling != 0 {
                        CacheMode::Refill
                    } else {
                        CacheMode::KeepCache
                    };
                    CachedOpen { cache, token }
                }
                _ => not_counted(CacheMode::Bypass),
            };
        };
        if let Some(entry) = e.map.get(&ino)
            && (entry.generation != generation || (entry.open > 0 && !live))
        {
            // Another state's handles read through the cache: leave it to them.
            return not_counted(CacheMode::Bypass);
        }
        drop(e);
        // Taken only now: a rendering's state is a hash of each of its pages.
        let Some(version) = snap.version() else {
            return not_counted(CacheMode::DirectIo);
        };
        // A transcript's size may be told by a `getattr` before this open reaches the
        // kernel: its pages go before the reply, whatever it costs.
        let refill = from < REFILL_BELOW && !live;
        log::debug!("page cache: inode {ino} changed from byte {from} (refill: {refill})");
        if !refill && !stale.drop_pages_now(ino, from) {
            // Not known to be dropped yet (it is still queued): past the cache.
            return not_counted(CacheMode::DirectIo);
        }
        let mut e = self.entries.lock().unwrap();
        let open = match e.map.get(&ino) {
            Some(entry) if entry.generation != generation => {
                return not_counted(CacheMode::Bypass);
            }
            Some(entry) if entry.open > 0 && !live => {
                return not_counted(CacheMode::Bypass);
            }
            Some(entry) => entry.open + 1,
            None if generation != 0 => return not_counted(CacheMode::Bypass),
            None => 1,
        };
        e.tick += 1;
        let tick = e.tick;
        e.map.insert(
            ino,
            Entry {
                version,
                open,
                tail_read: false,
                refilling: if refill { token } else { 0 },
                generation: tick,
                used: tick,
            },
        );
        self.forget_oldest(&mut e, stale);
        let cache = if refill {
            CacheMode::Refill
        } else {
            CacheMode::KeepCache
        };
        CachedOpen { cache, token }
    }

    fn forget_oldest(&self, e: &mut Entries, stale: &Invalidations) {
        while e.map.len() > ENTRIES {
            let Some(ino) = e
                .map
                .iter()
                .filter(|(_, entry)| entry.open == 0)
                .min_by_key(|(_, entry)| entry.used)
                .map(|(ino, _)| *ino)
            else {
                return;
            };
            e.map.remove(&ino);
            stale.drop_pages(ino, 0);
        }
    }

    /// The counted handle `token` of `ino` is closed.
    pub fn release(&self, ino: u64, token: u64) {
        if let Some(entry) = self.entries.lock().unwrap().map.get_mut(&ino) {
            entry.open = entry.open.saturating_sub(1);
            if entry.refilling == token {
                entry.refilling = 0;
            }
        }
    }

    /// The counted handle `token` of `ino` answered a read (its open has reached the
    /// kernel); `to_end`: with its last byte, so the kernel caches that page
    /// zero-filled past the end.
    pub fn read(&self, ino: u64, token: u64, to_end: bool) {
        if let Some(entry) = self.entries.lock().unwrap().map.get_mut(&ino) {
            if entry.refilling == token {
                entry.refilling = 0;
            }
            entry.tail_read |= to_end;
        }
    }

    /// The size the kernel may be told in a listing (no waiting there): the cached
    /// state's, else `now`.
    pub fn listed_size(&self, ino: u64, now: u64) -> u64 {
        match self.entries.lock().unwrap().map.get(&ino) {
            Some(entry) => entry.version.size(),
            None => now,
        }
    }

    /// Before the kernel is told that a view of `ino` is `size` bytes: while handles
    /// of a cached state of another size are open, the page it ended in must not be
    /// cached zero-filled (they would read the zeros once the file looks longer).
    pub fn before_size(&self, ino: u64, size: u64, stale: &Invalidations) {
        let from = {
            let mut e = self.entries.lock().unwrap();
            let Some(entry) = e.map.get_mut(&ino) else {
                return;
            };
            if entry.version.is_live()
                || entry.open == 0
                || !entry.tail_read
                || entry.version.size() == size
            {
                return;
            }
            entry.tail_read = false;
            entry.version.size() / PAGE * PAGE
        };
        stale.drop_pages_now(ino, from);
    }

    /// A transcript's size as the kernel is to be told it: when the cached state is
    /// another, `current` (a snapshot of the file now) becomes it, its pages dropped
    /// from where the two differ. `None`: nothing cached, any size may be told.
    pub fn live_size(
        &self,
        ino: u64,
        size_now: u64,
        current: impl FnOnce() -> Option<Snapshot>,
        stale: &Invalidations,
    ) -> Option<u64> {
        let (old, generation) = {
            let e = self.entries.lock().unwrap();
            let entry = e.map.get(&ino)?;
            if entry.version.size() == size_now {
                return Some(size_now);
            }
            (entry.version.clone(), entry.generation)
        };
        let snap = current()?;
        let version = snap.version()?;
        let dropped = match snap.first_change_since(&old) {
            Some(from) => stale.drop_pages_now(ino, from),
            None => true,
        };
        let mut e = self.entries.lock().unwrap();
        if !dropped {
            // Not known to be dropped (it is still queued): the next open starts over.
            if e.map
                .get(&ino)
                .is_some_and(|entry| entry.generation == generation)
            {
                e.map.remove(&ino);
            }
            return Some(version.size());
        }
        e.tick += 1;
        let tick = e.tick;
        let size = version.size();
        if let Some(entry) = e.map.get_mut(&ino)
            && entry.generation == generation
        {
            entry.version = version;
            entry.generation = tick;
        }
        Some(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::invalidate::Stale;
    use std::sync::Arc;

    /// A notifier that records what it was asked to drop.
    fn notifier() -> (Arc<Invalidations>, Arc<Mutex<Vec<Stale>>>) {
        let inv = Arc::new(Invalidations::default());
        inv.attach();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (i, s) = (inv.clone(), seen.clone());
        std::thread::spawn(move || {
            loop {
                let (ticket, batch) = i.next_batch();
                s.lock().unwrap().extend(batch);
                i.batch_sent(ticket);
            }
        });
        (inv, seen)
    }

    fn bytes(b: &[u8]) -> Snapshot {
        Snapshot::Bytes(Arc::new(b.to_vec()))
    }

    fn mode(o: CachedOpen) -> (CacheMode, bool) {
        (o.cache, o.token != 0)
    }

    const CACHED: (CacheMode, bool) = (CacheMode::KeepCache, true);
    const REFILL: (CacheMode, bool) = (CacheMode::Refill, true);
    const PAST: (CacheMode, bool) = (CacheMode::Bypass, false);

    #[test]
    fn a_state_that_changed_late_drops_pages_from_there_and_early_refills() {
        let (inv, seen) = notifier();
        let pc = PageCache::default();
        let big = vec![b'a'; 2 * REFILL_BELOW as usize + 10];
        let mut grown = big.clone();
        grown.extend_from_slice(b"more");
        // Unknown to the tree: the kernel empties the cache at the open, no wait.
        let first = pc.open(1, &bytes(&big), &inv);
        assert_eq!(mode(first), REFILL);
        // Until that handle reads (its open has reached the kernel), the same state
        // refills too; then it is read from the cache.
        let second = pc.open(1, &bytes(&big), &inv);
        assert_eq!(mode(second), REFILL);
        pc.read(1, first.token, false);
        let third = pc.open(1, &bytes(&big), &inv);
        assert_eq!(mode(third), CACHED);
        assert!(seen.lock().unwrap().is_empty(), "nothing sent");
        // A new state while the old one's handles are open: past the cache.
        assert_eq!(mode(pc.open(1, &bytes(&grown), &inv)), PAST);
        for o in [first, second, third] {
            pc.release(1, o.token);
        }
        // They are closed: pages go from the one that changed, and it is cached.
        let o = pc.open(1, &bytes(&grown), &inv);
        assert_eq!(mode(o), CACHED);
        let at = 2 * REFILL_BELOW / PAGE * PAGE;
        assert_eq!(seen.lock().unwrap().pop(), Some(Stale::Pages(1, at)));
        assert_eq!(pc.listed_size(1, 0), grown.len() as u64);
        pc.release(1, o.token);
        // A state that changed within the first MiB refills.
        let mut early = grown.clone();
        early[10] = b'b';
        assert_eq!(mode(pc.open(1, &bytes(&early), &inv)), REFILL);
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn the_last_page_goes_before_old_readers_are_told_a_larger_size() {
        let (inv, seen) = notifier();
        let pc = PageCache::default();
        let v1 = vec![b'a'; PAGE as usize + 10];
        let o = pc.open(2, &bytes(&v1), &inv);
        assert_eq!(mode(o), REFILL);
        // No read to the end yet: nothing zero-filled is cached.
        pc.before_size(2, 9000, &inv);
        assert!(seen.lock().unwrap().is_empty());
        pc.read(2, o.token, true);
        pc.before_size(2, v1.len() as u64, &inv);
        assert!(seen.lock().unwrap().is_empty(), "the same size");
        pc.before_size(2, 9000, &inv);
        assert_eq!(seen.lock().unwrap().pop(), Some(Stale::Pages(2, PAGE)));
        // Once: until a read reaches the end again.
        pc.before_size(2, 9001, &inv);
        assert!(seen.lock().unwrap().is_empty());
        // With no handle open the next open sees to it.
        pc.read(2, o.token, true);
        pc.release(2, o.token);
        pc.before_size(2, 9002, &inv);
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn without_a_notifier_a_late_change_bypasses_the_cache() {
        let inv = Invalidations::default();
        let pc = PageCache::default();
        let big = vec![b'x'; 2 * REFILL_BELOW as usize];
        let o = pc.open(3, &bytes(&big), &inv);
        pc.read(3, o.token, false);
        pc.release(3, o.token);
        // A drop past the first MiB needs the notifier: without one, past the cache.
        let mut grown = big.clone();
        grown.push(b'y');
        let o = pc.open(3, &bytes(&grown), &inv);
        assert_eq!(mode(o), (CacheMode::DirectIo, false));
    }
}
