//! When an acknowledged append reaches the disk (`--fsync`, Redis's names), and the
//! group commit that lets concurrent `always` writers share one `fdatasync`.

use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex};
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

/// What to do once a write is durable (or its sync failed): answer the writer.
pub type OnDurable = Box<dyn FnOnce(std::io::Result<()>) + Send>;

/// Group commit, after PostgreSQL's WAL flush: each append takes a sequence number
/// after its `write` and leaves a completion (`when_durable`). The thread that finds
/// no sync running becomes the syncer: it takes every write queued when its
/// `fdatasync` starts, runs their completions when it ends, and goes on while
/// completions are waiting. Writers' request threads never block on a sync (they
/// go back to serving requests), and a finished sync answers its whole batch from
/// one thread instead of waking one sleeping thread per writer.
#[derive(Default)]
pub struct GroupCommit {
    state: Mutex<CommitState>,
    /// Signalled when a gathering syncer's batch is complete.
    arrived: Condvar,
}

#[derive(Default)]
struct CommitState {
    written: u64,
    durable: u64,
    syncing: bool,
    /// The syncer is waiting for more writes before it syncs.
    gathering: bool,
    failed: Option<(u64, i32)>,
    /// Completions of writes not yet durable, in sequence order.
    queue: VecDeque<(u64, OnDurable)>,
    /// Writers answered by the last sync plus those already queued for the next:
    /// under load, the syncer waits (up to one sync's time) until that many writes
    /// are queued, so one fdatasync covers every active writer, and the batch
    /// follows the load up as well as down (waiting for as many as the last batch
    /// held kept a batch from ever growing).
    expected: u64,
    last_sync: Duration,
    /// Counters for the log: syncs and the writes they covered.
    syncs: u64,
    covered: u64,
}

/// The longest a syncer waits for others to join its batch.
const MAX_GATHER: Duration = Duration::from_millis(2);

impl GroupCommit {
    /// Call right after a successful write (still under the append lock).
    pub fn note_written(&self) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.written += 1;
        // Wake the gathering syncer only when its batch is complete: a wake-up per
        // arrival costs a context switch (on an idle virtual CPU, ~50 µs) each.
        if s.gathering && s.written - s.durable >= s.expected {
            self.arrived.notify_one();
        }
        s.written
    }

    /// Blocks until write `seq` is on disk. Errors carry the errno of a failed sync.
    pub fn wait_durable(&self, seq: u64, file: &Arc<File>) -> std::io::Result<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.when_durable(
            seq,
            file,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv()
            .unwrap_or_else(|_| Err(std::io::Error::from_raw_os_error(libc::EIO)))
    }

    /// Runs `done` once write `seq` is on disk (or its sync failed): right away when
    /// it already is; else after a sync that this thread runs if none is running,
    /// or that the running syncer starts next.
    pub fn when_durable(&self, seq: u64, file: &Arc<File>, done: OnDurable) {
        self.when_synced_by(seq, done, &|| fdatasync(file))
    }

    /// `when_durable` with `sync` as what makes the writes durable (tests hold a
    /// sync in flight with it).
    fn when_synced_by(&self, seq: u64, done: OnDurable, sync: &dyn Fn() -> std::io::Result<()>) {
        let mut s = self.state.lock().unwrap();
        // A failed sync may have lost the data of every write it covered; a later
        // successful sync does not bring it back (Linux clears the error).
        if let Some((upto, errno)) = s.failed
            && seq <= upto
        {
            drop(s);
            return done(Err(std::io::Error::from_raw_os_error(errno)));
        }
        if s.durable >= seq {
            drop(s);
            return done(Ok(()));
        }
        s.queue.push_back((seq, done));
        if s.syncing {
            return;
        }
        s.syncing = true;
        loop {
            // Under load (several writers were answered by the last sync or queued
            // for this one), those answered are on their way with their next writes:
            // wait up to one sync's time for all of them. A lone writer never waits.
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
            let result = sync();
            let took = started.elapsed();
            s = self.state.lock().unwrap();
            s.last_sync = took;
            s.syncs += 1;
            s.covered += covered;
            match &result {
                Ok(()) => s.durable = s.durable.max(target),
                Err(e) => s.failed = Some((target, e.raw_os_error().unwrap_or(libc::EIO))),
            }
            // Writers queue in the order they got here, not always in the order they
            // wrote: take every completion this sync covered, wherever it sits.
            let (mut batch, rest): (Vec<_>, Vec<_>) =
                s.queue.drain(..).partition(|(q, _)| *q <= target);
            s.queue = rest.into();
            s.expected = (batch.len() + s.queue.len()) as u64;
            // A write an earlier failed sync covered stays failed (see above).
            let failed = s.failed;
            drop(s);
            batch.sort_by_key(|(q, _)| *q);
            for (q, done) in batch {
                done(match failed {
                    Some((upto, errno)) if q <= upto => {
                        Err(std::io::Error::from_raw_os_error(errno))
                    }
                    _ => Ok(()),
                });
            }
            s = self.state.lock().unwrap();
            if s.queue.is_empty() {
                s.syncing = false;
                return;
            }
        }
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

    pub fn sync_now(&self, file: &Arc<File>) -> std::io::Result<()> {
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

    /// Completions run once each, in write order, also those queued from inside a
    /// completion (on the syncing thread); a failed sync fails every write it
    /// covered, and later waits for those writes too.
    #[test]
    fn completions_run_once_in_order_and_failures_stick() {
        let file = Arc::new(tempfile::tempfile().unwrap());
        let commit = Arc::new(GroupCommit::default());
        let done = Arc::new(Mutex::new(Vec::new()));
        let first = commit.note_written();
        let (c2, d2, f2) = (commit.clone(), done.clone(), file.clone());
        commit.when_durable(
            first,
            &file,
            Box::new(move |r| {
                r.unwrap();
                d2.lock().unwrap().push(first);
                let second = c2.note_written();
                let d3 = d2.clone();
                c2.when_durable(
                    second,
                    &f2,
                    Box::new(move |r| {
                        r.unwrap();
                        d3.lock().unwrap().push(second);
                    }),
                );
            }),
        );
        assert_eq!(*done.lock().unwrap(), vec![1, 2]);

        // fdatasync of a pipe fails (EINVAL): the error reaches every covered write.
        let (read_end, _write_end) = {
            let mut fds = [0; 2];
            // SAFETY: a two-int array for pipe(2) to fill.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            use std::os::fd::FromRawFd;
            // SAFETY: fresh descriptors owned by nothing else.
            unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
        };
        let pipe = Arc::new(read_end);
        let failing = GroupCommit::default();
        let seq = failing.note_written();
        let err = failing.wait_durable(seq, &pipe).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
        assert!(
            failing.wait_durable(seq, &file).is_err(),
            "a failed write stays failed"
        );
        let next = failing.note_written();
        failing.wait_durable(next, &file).unwrap();
    }

    /// Writes queued out of their order while a sync is in flight: the sync answers
    /// every write it covered (not only those before the first it did not), and a
    /// write covered by a failed sync gets the failure even when the next succeeds.
    #[test]
    fn a_finished_sync_answers_every_write_it_covered() {
        let commit = Arc::new(GroupCommit::default());
        let results = Arc::new(Mutex::new(Vec::new()));
        let record = |seq: u64| -> OnDurable {
            let results = results.clone();
            Box::new(move |r: std::io::Result<()>| {
                results
                    .lock()
                    .unwrap()
                    .push((seq, r.map_err(|e| e.raw_os_error())))
            })
        };
        let (first, second) = (commit.note_written(), commit.note_written());
        let (in_sync, release) = (std::sync::mpsc::channel(), std::sync::mpsc::channel());
        let syncer = {
            let (commit, done) = (commit.clone(), record(first));
            let (in_sync, release) = (in_sync.0, release.1);
            std::thread::spawn(move || {
                let calls = std::sync::atomic::AtomicU32::new(0);
                commit.when_synced_by(first, done, &|| {
                    if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                        // The first sync covers writes 1 and 2, and fails.
                        in_sync.send(()).unwrap();
                        release.recv().unwrap();
                        return Err(std::io::Error::from_raw_os_error(libc::EIO));
                    }
                    Ok(())
                })
            })
        };
        in_sync.1.recv().unwrap();
        // While it is in flight, write 3 queues before write 2.
        let third = commit.note_written();
        commit.when_synced_by(third, record(third), &|| unreachable!("a sync is running"));
        commit.when_synced_by(second, record(second), &|| {
            unreachable!("a sync is running")
        });
        release.0.send(()).unwrap();
        syncer.join().unwrap();
        let mut got = results.lock().unwrap().clone();
        got.sort();
        assert_eq!(
            got,
            vec![
                (1, Err(Some(libc::EIO))),
                (2, Err(Some(libc::EIO))),
                (3, Ok(()))
            ]
        );
    }
}
