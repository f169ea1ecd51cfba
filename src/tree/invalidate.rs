//! Inodes whose kernel-cached attributes must go, and names whose cached entries
//! must (a namespace folder that vanished with its last session). The tree queues them here; the FUSE
//! adapter's notifier thread sends them (a notification sent from inside a request
//! handler can deadlock with the kernel). Pending inodes are a set, so a burst of
//! appends to one session costs one notification, and the thread is woken only when
//! the set goes from empty to non-empty.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How long a woken notifier lets a burst gather before sending.
const GATHER: Duration = Duration::from_millis(2);

/// One thing the kernel must forget.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stale {
    /// An inode's attributes.
    Inode(u64),
    /// The name `.1` in folder `.0`.
    Entry(u64, String),
}

#[derive(Default)]
pub struct Invalidations {
    pending: Mutex<HashSet<Stale>>,
    wake: Condvar,
}

impl Invalidations {
    /// Queues `ino` for invalidation (cheap; never blocks on the kernel).
    pub fn mark(&self, ino: u64) {
        self.queue(Stale::Inode(ino));
    }

    /// Queues the name `name` in folder `parent` for invalidation.
    pub fn mark_entry(&self, parent: u64, name: &str) {
        self.queue(Stale::Entry(parent, name.to_string()));
    }

    fn queue(&self, stale: Stale) {
        let mut p = self.pending.lock().unwrap();
        let was_empty = p.is_empty();
        p.insert(stale);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// Waits for things to invalidate and takes them all (the notifier's loop).
    pub fn next_batch(&self) -> HashSet<Stale> {
        {
            let mut p = self.pending.lock().unwrap();
            while p.is_empty() {
                p = self.wake.wait(p).unwrap();
            }
        }
        std::thread::sleep(GATHER);
        std::mem::take(&mut *self.pending.lock().unwrap())
    }
}
