//! Background work's manners: one [`Background`] per daemon, shared by every worker
//! that runs beside the mount's requests (the search index's build and upkeep, the
//! other agents' first index, and any later one: keeping, usage).
//!
//! - **Stopping.** `stop` raises one signal; each worker checks it at its next message
//!   boundary (`should_stop`, or `boundary`, which also yields), saves what it has and
//!   returns, so the next mount goes on from there. The daemon waits for its workers
//!   with a deadline (`stop_and_wait`): unmount never waits for a build.
//! - **Yielding.** The mount marks each request it serves (`foreground`: an open, a
//!   read, an append, a query); a worker's `pause` at a boundary waits while a request
//!   is being served or was a moment ago, for at most half of every second, so a busy
//!   mount slows background work down but never stops it.
//! - **Priority.** Each worker runs in the class of its work (`priority::Class`):
//!   the kernel runs idle work only on a core nothing else wants, and its reads
//!   only when the disk has nothing else to do.
//!
//! A loop written against a pair of closures gets them from here:
//! `let stop = || bg.should_stop(); let pause = || bg.pause();`
//!
//! Below it only the store's `yielding` (where the store's long reads pause, told
//! how by `Background::enter`): `sources`, `search` and any later background module
//! may all use it.

pub mod priority;

pub use priority::Class;

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A worker waits while the mount served a request within this long...
const QUIET: Duration = Duration::from_millis(150);
/// ...looking again this often...
const STEP: Duration = Duration::from_millis(10);
/// ...for at most this much of every second (per worker thread).
const SHARE: Duration = Duration::from_millis(500);
/// Memory freed by workers is given back at most this often (a trim of a daemon's
/// arenas takes a few ms, during which a request's allocation may wait).
const TRIM_EVERY: Duration = Duration::from_secs(5);

/// The daemon's background work: its stop signal, its yielding to the mount, and its
/// running workers. Cheap to clone (one shared state).
#[derive(Clone, Default)]
pub struct Background(Arc<Inner>);

#[derive(Default)]
struct Inner {
    stopping: AtomicBool,
    /// A worker freed a lot of memory: the trimmer gives it back (`trim_soon`).
    trim_wanted: AtomicBool,
    /// Foreground requests being served now.
    serving: AtomicUsize,
    /// When the last foreground request ended (ms after `epoch`, +1; 0: never).
    last_served: AtomicU64,
    epoch: Epoch,
    /// Workers started by `spawn` and still running.
    running: Mutex<usize>,
    /// Woken at `stop` (sleeping workers) and when a worker ends (`stop_and_wait`).
    changed: Condvar,
    /// Called at `stop`: wakes workers that sleep on a condition of their own.
    wakers: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

struct Epoch(Instant);

impl Default for Epoch {
    fn default() -> Self {
        Epoch(Instant::now())
    }
}

thread_local! {
    /// This thread's yielding: the second it is in, and how long it waited in it.
    static YIELDED: std::cell::Cell<(Option<Instant>, Duration)> =
        const { std::cell::Cell::new((None, Duration::ZERO)) };
}

/// A foreground request being served (`Background::foreground`); ends when dropped.
pub struct Foreground<'a> {
    inner: &'a Inner,
    /// Workers keep waiting a moment after it (more requests like it follow).
    tail: bool,
}

impl Drop for Foreground<'_> {
    fn drop(&mut self) {
        if self.tail {
            let now = self.inner.epoch.0.elapsed().as_millis() as u64 + 1;
            self.inner.last_served.store(now, Ordering::Relaxed);
        }
        self.inner.serving.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Background {
    pub fn new() -> Background {
        Background::default()
    }

    /// Asks every worker to stop at its next message boundary; wakes those asleep.
    pub fn stop(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
        {
            let _running = self.0.running.lock().unwrap();
            self.0.changed.notify_all();
        }
        for wake in self.0.wakers.lock().unwrap().iter() {
            wake();
        }
    }

    /// Asks for the memory freed so far to go back to the system soon (glibc keeps
    /// it in its arenas otherwise): after a batch of work that freed a lot. The trim
    /// is made by the trimmer's thread (`run_trimmer`), not by the worker: a trim
    /// holds the arenas' locks while it walks them, and an idle thread holding them
    /// could keep a request's allocation waiting. Without a trimmer, nothing happens.
    pub fn trim_soon(&self) {
        self.0.trim_wanted.store(true, Ordering::Relaxed);
    }

    /// The trimmer: gives memory back when a worker asked, at most every
    /// `TRIM_EVERY`, until asked to stop. Run on a thread that is not idle.
    pub fn run_trimmer(&self) {
        while self.sleep(TRIM_EVERY) {
            if self.0.trim_wanted.swap(false, Ordering::Relaxed) {
                // SAFETY: glibc call with no preconditions.
                unsafe { libc::malloc_trim(0) };
                // SAFETY: glibc call with no preconditions.
                let m = unsafe { libc::mallinfo2() };
                log::debug!(
                    "memory given back: malloc's arenas hold {} MB, {} MB in use, {} MB \
                     free; {} MB in blocks of their own",
                    m.arena >> 20,
                    m.uordblks >> 20,
                    m.fordblks >> 20,
                    m.hblkhd >> 20
                );
            }
        }
    }

    /// Whether the work is asked to stop (checked at message boundaries).
    pub fn should_stop(&self) -> bool {
        self.0.stopping.load(Ordering::Relaxed)
    }

    /// Calls `wake` at `stop` (at once if already stopping): for a worker that sleeps
    /// on a condition variable of its own.
    pub fn on_stop(&self, wake: impl Fn() + Send + Sync + 'static) {
        if self.should_stop() {
            wake();
        }
        self.0.wakers.lock().unwrap().push(Box::new(wake));
    }

    /// Marks a foreground request (an open, a read, an append, a query) until the
    /// value is dropped: workers pausing at a boundary let it go first.
    pub fn foreground(&self) -> Foreground<'_> {
        self.0.serving.fetch_add(1, Ordering::Relaxed);
        Foreground {
            inner: &self.0,
            tail: true,
        }
    }

    /// The same for a request that is its own whole (a search query: a build being
    /// watched through queries must not wait after each): workers wait while it is
    /// served, not after.
    pub fn brief(&self) -> Foreground<'_> {
        self.0.serving.fetch_add(1, Ordering::Relaxed);
        Foreground {
            inner: &self.0,
            tail: false,
        }
    }

    /// Whether the mount is serving a request, or served one within `QUIET`.
    pub fn mount_busy(&self) -> bool {
        if self.0.serving.load(Ordering::Relaxed) > 0 {
            return true;
        }
        let last = self.0.last_served.load(Ordering::Relaxed);
        let now = self.0.epoch.0.elapsed().as_millis() as u64 + 1;
        last != 0 && now.saturating_sub(last) < QUIET.as_millis() as u64
    }

    /// At a message boundary: waits while the mount is busy, for at most half of
    /// every second of this thread's work; returns at once when asked to stop.
    pub fn pause(&self) {
        while !self.should_stop() && self.mount_busy() {
            let allowed = YIELDED.with(|y| {
                let (since, waited) = y.get();
                let (since, waited) = match since {
                    Some(s) if s.elapsed() < Duration::from_secs(1) => (s, waited),
                    _ => (Instant::now(), Duration::ZERO),
                };
                if waited >= SHARE {
                    y.set((Some(since), waited));
                    return false;
                }
                y.set((Some(since), waited + STEP));
                true
            });
            if !allowed {
                return;
            }
            self.sleep(STEP);
        }
    }

    /// `pause`, then whether to go on: the check a worker makes between messages.
    pub fn boundary(&self) -> ControlFlow<()> {
        self.pause();
        if self.should_stop() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// Sleeps for `d`, or less if asked to stop meanwhile; whether to go on.
    pub fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut running = self.0.running.lock().unwrap();
        while !self.should_stop() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            running = self
                .0
                .changed
                .wait_timeout(running, deadline - now)
                .unwrap()
                .0;
        }
        !self.should_stop()
    }

    /// Puts the calling thread in `class`'s priority; an idle one is background
    /// work of this daemon from then on (the store's `yielding::point` pauses it
    /// for the mount).
    pub fn enter(&self, class: Class) {
        priority::enter(class);
        if class == Class::Idle {
            let bg = self.clone();
            crate::store::yielding::pause_with(move || bg.pause());
        }
    }

    /// Runs `work` on a thread of its own named `name`, in `class`'s priority,
    /// counted until it returns (or panics), so that `stop_and_wait` can wait for it.
    pub fn spawn(
        &self,
        name: &str,
        class: Class,
        work: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        struct Done(Arc<Inner>);
        impl Drop for Done {
            fn drop(&mut self) {
                let mut running = self.0.running.lock().unwrap();
                *running -= 1;
                self.0.changed.notify_all();
            }
        }
        *self.0.running.lock().unwrap() += 1;
        let done = Done(self.0.clone());
        let bg = self.clone();
        // Not started: the closure and its guard are dropped, and the count with them.
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let _done = done;
                bg.enter(class);
                work();
            })
    }

    /// Workers started by `spawn` that are still running.
    pub fn running(&self) -> usize {
        *self.0.running.lock().unwrap()
    }

    /// Stops every worker and waits until they have all returned, or until `budget`
    /// has passed; whether they all returned. What a worker had not saved by then
    /// is lost, and its last save stands (the caller exits).
    pub fn stop_and_wait(&self, budget: Duration) -> bool {
        self.stop();
        let deadline = Instant::now() + budget;
        let mut running = self.0.running.lock().unwrap();
        while *running > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            running = self
                .0
                .changed
                .wait_timeout(running, deadline - now)
                .unwrap()
                .0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_wakes_sleepers_and_waits_for_workers_with_a_deadline() {
        let bg = Background::new();
        let b = bg.clone();
        bg.spawn("t-sleeper", Class::Idle, move || {
            b.sleep(Duration::from_secs(60));
        })
        .unwrap();
        let b = bg.clone();
        bg.spawn("t-stubborn", Class::Awaited, move || {
            while !b.should_stop() {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Saving for longer than the first deadline by far (a loaded machine's
            // scheduling delays stay well under it).
            std::thread::sleep(Duration::from_secs(3));
        })
        .unwrap();
        assert_eq!(bg.running(), 2);
        let t = Instant::now();
        assert!(
            !bg.stop_and_wait(Duration::from_millis(100)),
            "one is still saving"
        );
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "the deadline, not the worker, ends the wait: {:?}",
            t.elapsed()
        );
        assert!(bg.stop_and_wait(Duration::from_secs(10)));
        assert_eq!(bg.running(), 0);
        assert!(bg.boundary().is_break());
        assert!(!bg.sleep(Duration::from_secs(60)));
    }

    #[test]
    fn a_yield_point_pauses_background_threads_that_hold_nothing() {
        let bg = Background::new();
        let _served = bg.foreground();
        let timed = |enter: bool, holding: bool| {
            let b = bg.clone();
            std::thread::spawn(move || {
                if enter {
                    b.enter(Class::Idle);
                }
                let _h = holding.then(crate::store::yielding::Holding::now);
                let t = Instant::now();
                crate::store::yielding::point();
                t.elapsed()
            })
            .join()
            .unwrap()
        };
        // (A pause is 500 ms; the bounds leave room for a loaded machine.)
        assert!(timed(true, false) >= Duration::from_millis(400));
        assert!(timed(false, false) < Duration::from_millis(300));
        assert!(timed(true, true) < Duration::from_millis(300));
    }

    #[test]
    fn a_worker_yields_to_the_mount_but_only_half_of_each_second() {
        let bg = Background::new();
        assert!(!bg.mount_busy());
        let t = Instant::now();
        bg.pause();
        // (Bounds leave room for a loaded machine's scheduling; a wait is 400 ms.)
        assert!(
            t.elapsed() < Duration::from_millis(200),
            "nothing served: no wait"
        );
        let held = bg.foreground();
        assert!(bg.mount_busy());
        let t = Instant::now();
        bg.pause();
        let waited = t.elapsed();
        assert!(
            waited >= Duration::from_millis(400) && waited < Duration::from_millis(1500),
            "{waited:?}"
        );
        drop(held);
        assert!(bg.mount_busy(), "just served: still quiet time");
        std::thread::sleep(QUIET + STEP);
        assert!(!bg.mount_busy());
        // A stop ends a pause at once.
        let _held = bg.foreground();
        let b = bg.clone();
        let h = std::thread::spawn(move || b.pause());
        std::thread::sleep(Duration::from_millis(30));
        let t = Instant::now();
        bg.stop();
        h.join().unwrap();
        // Not the rest of the pause (about 470 ms).
        assert!(
            t.elapsed() < Duration::from_millis(350),
            "{:?}",
            t.elapsed()
        );
    }
}
