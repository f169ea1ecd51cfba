//! What the kernel must forget: inodes' cached attributes, names (a namespace folder
//! that vanished with its last session), and a file's cached pages from a byte on.
//! The tree queues them here; the FUSE adapter's notifier thread sends them (a
//! notification sent from inside a request handler can deadlock with the kernel).
//! Pending items are a set, so a burst of appends to one session costs one
//! notification, and the thread is woken only when the set goes from empty to
//! non-empty. A request that must not be answered before the kernel has dropped
//! pages (an `open` of a view that changed) waits here for the notifier, bounded.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a woken notifier lets a burst gather before sending (not when a request
/// waits for it).
const GATHER: Duration = Duration::from_millis(2);

/// The longest a request waits for pages to be dropped; past it the request goes on
/// without the page cache (its answer is right either way).
pub const WAIT: Duration = Duration::from_secs(1);

/// One thing the kernel must forget.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stale {
    /// An inode's attributes.
    Inode(u64),
    /// The name `.1` in folder `.0`.
    Entry(u64, String),
    /// A file's cached pages from byte `.1` on (and its attributes).
    Pages(u64, u64),
}

#[derive(Default)]
struct Queue {
    items: HashSet<Stale>,
    /// Pages to drop, by inode: the lowest byte asked.
    pages: HashMap<u64, u64>,
    /// Tickets: `queued` counts batches asked for, `sent` those the notifier sent.
    queued: u64,
    sent: u64,
    /// A request is waiting: send at once.
    urgent: bool,
}

impl Queue {
    fn is_empty(&self) -> bool {
        self.items.is_empty() && self.pages.is_empty()
    }
}

#[derive(Default)]
pub struct Invalidations {
    queue: Mutex<Queue>,
    wake: Condvar,
    sent: Condvar,
    /// A notifier thread sends what is queued (a mount; not the tree's tests).
    attached: AtomicBool,
    /// The kernel drops a file's pages only when told (FUSE_EXPLICIT_INVAL_DATA),
    /// not whenever its size changes: what lets views stay in the page cache.
    precise: AtomicBool,
}

impl Invalidations {
    /// Queues `ino`'s attributes for invalidation (cheap; never blocks on the kernel).
    pub fn mark(&self, ino: u64) {
        self.queue(Stale::Inode(ino));
    }

    /// Queues the name `name` in folder `parent` for invalidation.
    pub fn mark_entry(&self, parent: u64, name: &str) {
        self.queue(Stale::Entry(parent, name.to_string()));
    }

    fn queue(&self, stale: Stale) {
        let mut q = self.queue.lock().unwrap();
        let was_empty = q.is_empty();
        q.items.insert(stale);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// Queues `ino`'s pages from byte `from` on, without waiting.
    pub fn drop_pages(&self, ino: u64, from: u64) {
        let mut q = self.queue.lock().unwrap();
        let was_empty = q.is_empty();
        let at = q.pages.entry(ino).or_insert(from);
        *at = (*at).min(from);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// Drops `ino`'s pages from byte `from` on and returns once the notifier has told
    /// the kernel: `false` when it could not within [`WAIT`] (or nothing sends).
    pub fn drop_pages_now(&self, ino: u64, from: u64) -> bool {
        if !self.attached.load(Ordering::Acquire) {
            return false;
        }
        let deadline = Instant::now() + WAIT;
        let mut q = self.queue.lock().unwrap();
        let at = q.pages.entry(ino).or_insert(from);
        *at = (*at).min(from);
        q.urgent = true;
        // Sent with the next batch, whose ticket is one past those queued so far.
        let ticket = q.queued + 1;
        self.wake.notify_one();
        while q.sent < ticket {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            q = self.sent.wait_timeout(q, deadline - now).unwrap().0;
        }
        true
    }

    /// Whether the kernel keeps views' pages until told (and a notifier tells it).
    pub fn precise(&self) -> bool {
        self.precise.load(Ordering::Acquire) && self.attached.load(Ordering::Acquire)
    }

    /// Said by the FUSE adapter: the kernel agreed to FUSE_EXPLICIT_INVAL_DATA.
    pub fn set_precise(&self, on: bool) {
        self.precise.store(on, Ordering::Release);
    }

    /// Said by the notifier thread as it starts.
    pub fn attach(&self) {
        self.attached.store(true, Ordering::Release);
    }

    /// Waits for things to invalidate and takes them all (the notifier's loop); call
    /// [`Invalidations::batch_sent`] with the ticket once they are sent.
    pub fn next_batch(&self) -> (u64, Vec<Stale>) {
        let mut q = self.queue.lock().unwrap();
        while q.is_empty() {
            q = self.wake.wait(q).unwrap();
        }
        if !q.urgent {
            drop(q);
            std::thread::sleep(GATHER);
            q = self.queue.lock().unwrap();
        }
        q.urgent = false;
        q.queued += 1;
        let ticket = q.queued;
        let mut batch: Vec<Stale> = q.items.drain().collect();
        batch.extend(q.pages.drain().map(|(ino, from)| Stale::Pages(ino, from)));
        (ticket, batch)
    }

    /// The batch with `ticket` reached the kernel: wakes the requests waiting for it.
    pub fn batch_sent(&self, ticket: u64) {
        let mut q = self.queue.lock().unwrap();
        q.sent = q.sent.max(ticket);
        self.sent.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_waiting_request_returns_once_its_pages_are_sent() {
        let inv = Arc::new(Invalidations::default());
        assert!(!inv.drop_pages_now(7, 0), "nothing sends: no wait");
        inv.attach();
        let seen = Arc::new(Mutex::new(Vec::new()));
        {
            let (inv, seen) = (inv.clone(), seen.clone());
            std::thread::spawn(move || {
                loop {
                    let (ticket, batch) = inv.next_batch();
                    seen.lock().unwrap().extend(batch);
                    inv.batch_sent(ticket);
                }
            });
        }
        inv.drop_pages(7, 500);
        assert!(inv.drop_pages_now(7, 100));
        // Either one batch took both (the lower byte wins) or two took them in turn.
        let seen = seen.lock().unwrap();
        assert!(seen.contains(&Stale::Pages(7, 100)), "{seen:?}");
    }
}
