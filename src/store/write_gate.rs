//! The end of a daemon's writes into the store. Once the daemon unmounts on a signal,
//! a user (or systemd) sees the unmount return and may copy, back up or mount the
//! store again: nothing may write into it after that. A background thread that did
//! not stop within the stop budget (starved at idle priority, say) would, so every
//! write that changes the store's tree or a file in it passes the gate, and the
//! daemon closes the gate before it unmounts: the writes under way end first, and
//! every later one fails with `ESHUTDOWN`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Set once closed; the bits below count the writes under way.
const CLOSED: u64 = 1 << 63;

/// A gate writes pass while it is open (see the module's note).
pub struct WriteGate {
    state: AtomicU64,
}

impl Default for WriteGate {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteGate {
    pub const fn new() -> WriteGate {
        WriteGate {
            state: AtomicU64::new(0),
        }
    }

    /// Runs `write` unless the gate is closed (then `ESHUTDOWN`). Nested calls are
    /// fine: a count, not a lock.
    pub fn pass<T>(&self, write: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        let _passing = self.enter()?;
        write()
    }

    /// Counts a write under way until the returned guard drops; `ESHUTDOWN` if the
    /// gate is closed. For a write whose error is not an `io::Error`.
    pub fn enter(&self) -> std::io::Result<Passing<'_>> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & CLOSED != 0 {
                return Err(std::io::Error::from_raw_os_error(libc::ESHUTDOWN));
            }
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(Passing(&self.state)),
                Err(now) => s = now,
            }
        }
    }

    /// Closes the gate and waits (up to `budget`) for the writes under way to end.
    /// Whether they all did.
    pub fn close(&self, budget: Duration) -> bool {
        self.state.fetch_or(CLOSED, Ordering::AcqRel);
        let deadline = Instant::now() + budget;
        while self.state.load(Ordering::Acquire) & !CLOSED != 0 {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    pub fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & CLOSED != 0
    }
}

/// A write under way through a gate, until dropped.
#[must_use = "the write is counted only while this lives"]
pub struct Passing<'a>(&'a AtomicU64);

impl Drop for Passing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The store's gate: the daemon closes it before it unmounts on a signal.
pub static STORE: WriteGate = WriteGate::new();

/// `STORE.pass(write)`.
pub fn pass<T>(write: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    STORE.pass(write)
}

/// `STORE.enter()`.
pub fn enter() -> std::io::Result<Passing<'static>> {
    STORE.enter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn closing_waits_for_the_writes_under_way_and_refuses_the_next() {
        let gate = Arc::new(WriteGate::new());
        assert_eq!(gate.pass(|| gate.pass(|| Ok(7))).unwrap(), 7, "nested");
        let (inside, release) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let writer = {
            let (gate, inside, release) = (gate.clone(), inside.clone(), release.clone());
            std::thread::spawn(move || {
                gate.pass(|| {
                    inside.store(true, Ordering::SeqCst);
                    while !release.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(())
                })
            })
        };
        while !inside.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // A write under way holds the close up to its budget...
        assert!(!gate.close(Duration::from_millis(30)));
        assert!(gate.is_closed());
        // ...and no write starts once it is closed.
        let refused = gate.pass(|| Ok(())).unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(libc::ESHUTDOWN));
        release.store(true, Ordering::SeqCst);
        writer.join().unwrap().unwrap();
        assert!(gate.close(Duration::from_millis(30)), "nothing under way");
    }
}
