//! When an acknowledged append reaches the disk (`--fsync`, Redis's names), and the
//! group commit that lets concurrent `always` writers share one `fdatasync`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncMode {
    /// `fdatasync` before the write returns (group commit).
    #[default]
    Always,
    /// A background thread syncs dirty sessions once a second.
    Everysec,
    /// The kernel decides; a daemon crash still loses nothing acknowledged.
    No,
}

impl FsyncMode {
    pub const NAMES: [&str; 3] = ["always", "everysec", "no"];

    pub fn from_name(name: &str) -> Option<FsyncMode> {
        Some(match name {
            "always" => FsyncMode::Always,
            "everysec" => FsyncMode::Everysec,
            "no" => FsyncMode::No,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FsyncMode::Always => "always",
            FsyncMode::Everysec => "everysec",
            FsyncMode::No => "no",
        }
    }
}

pub fn fdatasync(file: &File) -> std::io::Result<()> {
    // SAFETY: a valid open descriptor for the duration of the call.
    if unsafe { libc::fdatasync(file.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Group commit: each append takes a sequence number after its `write`; `wait_durable`
/// returns once some `fdatasync` that started after that write has finished. While one
/// thread syncs, the others queue; the next sync covers all of them at once.
#[derive(Default)]
pub struct GroupCommit {
    state: Mutex<CommitState>,
    synced: Condvar,
    /// Signalled on every write while a leader is gathering a batch.
    arrived: Condvar,
}

#[derive(Default)]
struct CommitState {
    written: u64,
    durable: u64,
    syncing: bool,
    /// A leader is waiting for more writes before it syncs.
    gathering: bool,
    failed: Option<(u64, i32)>,
    /// Threads inside `wait_durable` now.
    waiting: u64,
    /// Threads that were waiting when the last sync ended (those it released, and
    /// those already queued for the next one), and how long it took: under load, a
    /// new leader waits (up to one sync's time) until that many writes are queued.
    /// Then one fdatasync covers every active writer, and the batch follows the
    /// load up as well as down (waiting for as many as the last batch held kept a
    /// batch from ever growing).
    expected: u64,
    last_sync: Duration,
    /// Counters for the log: syncs and the writes they covered.
    syncs: u64,
    covered: u64,
}

/// The longest a leader waits for others to join its batch.
const MAX_GATHER: Duration = Duration::from_millis(2);

impl GroupCommit {
    /// Call right after a successful write (still under the append lock).
    pub fn note_written(&self) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.written += 1;
        // Wake the gathering leader only when its batch is complete: a wake-up per
        // arrival costs a context switch (on an idle virtual CPU, ~50 µs) each.
        if s.gathering && s.written - s.durable >= s.expected {
            self.arrived.notify_one();
        }
        s.written
    }

    /// Blocks until write `seq` is on disk. Errors carry the errno of a failed sync.
    pub fn wait_durable(&self, seq: u64, file: &File) -> std::io::Result<()> {
        let mut s = self.state.lock().unwrap();
        s.waiting += 1;
        // The count goes down under the same lock that saw the write durable: a
        // second lock per waiter is one more contended futex when a sync releases
        // them all at once.
        let result = loop {
            // A failed sync may have lost the data of every write it covered; a later
            // successful sync does not bring it back (Linux clears the error).
            if let Some((upto, errno)) = s.failed
                && seq <= upto
            {
                break Err(std::io::Error::from_raw_os_error(errno));
            }
            if s.durable >= seq {
                break Ok(());
            }
            if !s.syncing {
                s.syncing = true;
                // Under load (several writers were waiting when the last sync
                // ended), the writers it released are on their way with their next
                // writes: wait up to one sync's time for all of them, so one
                // fdatasync covers every active writer. A lone writer never waits.
                if s.expected > 1 {
                    let deadline = Instant::now() + s.last_sync.min(MAX_GATHER);
                    s.gathering = true;
                    while s.written - s.durable < s.expected {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        s = self.arrived.wait_timeout(s, left).unwrap().0;
                    }
                    s.gathering = false;
                }
                let target = s.written;
                let covered = target - s.durable;
                drop(s);
                let started = Instant::now();
                let result = fdatasync(file);
                let took = started.elapsed();
                s = self.state.lock().unwrap();
                s.syncing = false;
                s.expected = s.waiting;
                s.last_sync = took;
                s.syncs += 1;
                s.covered += covered;
                match &result {
                    Ok(()) => s.durable = s.durable.max(target),
                    Err(e) => s.failed = Some((target, e.raw_os_error().unwrap_or(libc::EIO))),
                }
                self.synced.notify_all();
                if let Err(e) = result {
                    break Err(e);
                }
            } else {
                s = self.synced.wait(s).unwrap();
            }
        };
        s.waiting -= 1;
        result
    }

    /// fdatasync calls so far and the writes they covered (for the log).
    pub fn counters(&self) -> (u64, u64) {
        let s = self.state.lock().unwrap();
        (s.syncs, s.covered)
    }

    /// Whether writes happened since the last successful sync (for `everysec`).
    pub fn is_dirty(&self) -> bool {
        let s = self.state.lock().unwrap();
        s.written > s.durable
    }

    pub fn sync_now(&self, file: &File) -> std::io::Result<()> {
        let seq = self.state.lock().unwrap().written;
        self.wait_durable(seq, file)
    }
}

#[cfg(test)]
mod group_commit_tests {
    use super::*;
    use std::sync::Arc;

    /// Concurrent writers share syncs; every write is covered exactly once.
    #[test]
    fn concurrent_writers_share_fdatasyncs() {
        let file = Arc::new(tempfile::tempfile().unwrap());
        let commit = Arc::new(GroupCommit::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (file, commit) = (file.clone(), commit.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let seq = commit.note_written();
                        commit.wait_durable(seq, &file).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (syncs, covered) = commit.counters();
        assert_eq!(covered, 400);
        assert!(syncs < 400, "{syncs} syncs for 400 writes: no batching");
        // A lone writer syncs once per write and never waits for company.
        let lone = GroupCommit::default();
        for _ in 0..20 {
            let seq = lone.note_written();
            lone.wait_durable(seq, &file).unwrap();
        }
        assert_eq!(lone.counters(), (20, 20));
    }
}
