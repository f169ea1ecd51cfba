//! Kernel cache invalidations, sent from their own thread: a notification sent from
//! inside a request handler can deadlock with the kernel. Pending inodes are a set, so
//! a burst of appends to one session costs one notification, and the thread is woken
//! only when the set goes from empty to non-empty.

use fuser::{INodeNo, Notifier};
use std::collections::HashSet;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How long a woken notifier lets a burst gather before sending.
const GATHER: Duration = Duration::from_millis(2);

#[derive(Default)]
pub struct Invalidations {
    pending: Mutex<HashSet<u64>>,
    wake: Condvar,
}

impl Invalidations {
    /// Queues `ino` for invalidation (cheap; never blocks on the kernel).
    pub fn mark(&self, ino: u64) {
        let mut p = self.pending.lock().unwrap();
        let was_empty = p.is_empty();
        p.insert(ino);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// The notifier thread's loop: never returns.
    pub fn run(&self, notifier: Notifier) -> ! {
        loop {
            {
                let mut p = self.pending.lock().unwrap();
                while p.is_empty() {
                    p = self.wake.wait(p).unwrap();
                }
            }
            std::thread::sleep(GATHER);
            let batch = std::mem::take(&mut *self.pending.lock().unwrap());
            for ino in batch {
                // ENOENT just means the kernel holds nothing for that inode.
                let _ = notifier.inval_inode(INodeNo(ino), 0, 0);
            }
        }
    }
}
