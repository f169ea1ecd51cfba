//! Which threads the kernel runs first: every background thread says which class of
//! work it does, and enters that class's CPU and I/O priority before it starts
//! (threads it starts inherit it: Tantivy's, the keeper's copying workers).
//!
//! - [`Class::Awaited`]: work a request of the mount waits for (the other agents'
//!   first index: a listing waits for it). Normal priority: it is foreground work
//!   done ahead of time.
//! - [`Class::Fresh`]: small work a promise of freshness rides on (the search
//!   indexer following `ctl` appends and other agents' writes: found within a
//!   second, SPEC §8). CPU nice 10, the normal I/O class.
//! - [`Class::Idle`]: everything else (a first or big search pass, the keeper, the
//!   usage counter). `SCHED_IDLE`, and the idle I/O class: it runs only on a core
//!   nothing else wants, and reads the disk when nothing else does.
//!
//! Lowering is one way: an unprivileged thread cannot leave `SCHED_IDLE` (the kernel
//! allows it only within `RLIMIT_NICE`, whose usual hard limit is 0), so work that a
//! request may come to wait for must not be idle to begin with; docs/background.md
//! says which is which, and how a request never waits on idle work.

/// `SCHED_IDLE` (linux/sched.h).
const SCHED_IDLE: i32 = 5;
/// `IOPRIO_WHO_PROCESS`: `who` is a thread id (0: the calling thread).
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
/// The I/O priority's class sits above its 13 bits of data.
const IOPRIO_CLASS_SHIFT: u32 = 13;

/// The kind of work a background thread does, which sets its priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A request waits for it: the normal priority.
    Awaited,
    /// Keeps answers fresh within a second: nice 10, normal I/O.
    Fresh,
    /// Anything else: `SCHED_IDLE` and the idle I/O class.
    Idle,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Awaited => "awaited",
            Class::Fresh => "fresh",
            Class::Idle => "idle",
        }
    }
}

/// The kernel's I/O scheduling classes (`ioprio_get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoClass {
    /// No class set: best effort, at a level from the CPU nice.
    None,
    Realtime,
    BestEffort,
    Idle,
}

/// A thread's scheduling as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// The scheduling policy (`SCHED_OTHER` 0, `SCHED_BATCH` 3, `SCHED_IDLE` 5).
    pub policy: i32,
    pub nice: i32,
    pub io: IoClass,
}

impl Observed {
    /// Whether it runs only on a core nothing else wants, and reads the disk only
    /// when nothing else does.
    pub fn is_idle(&self) -> bool {
        self.policy == SCHED_IDLE && self.io == IoClass::Idle
    }
}

/// Runs `work` on a new thread in `class`, and waits for it: for a call whose own
/// threads must start in that class (Tantivy starts its writer's threads from the
/// thread that makes the writer or commits it), made from a thread of a higher one.
pub fn run_in<T: Send>(class: Class, work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                enter(class);
                work()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Puts the calling thread (and the threads it starts from now on) in `class`.
/// Best effort: a refused call leaves the thread as it was, and says so in the log.
pub fn enter(class: Class) {
    match class {
        Class::Awaited => {}
        Class::Fresh => {
            // SAFETY: plain syscalls on the calling thread.
            unsafe {
                let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                libc::setpriority(libc::PRIO_PROCESS, tid, 10);
            }
        }
        Class::Idle => {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: pid 0 is the calling thread; a valid parameter.
            if unsafe { libc::sched_setscheduler(0, SCHED_IDLE, &param) } != 0 {
                log::warn!(
                    "background thread: SCHED_IDLE refused: {}",
                    std::io::Error::last_os_error()
                );
            }
            let idle = (3 as libc::c_long) << IOPRIO_CLASS_SHIFT;
            // SAFETY: who 0 is the calling thread.
            if unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, idle) } != 0 {
                log::warn!(
                    "background thread: the idle I/O class refused: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    }
}

/// The calling thread's id (as `/proc/<pid>/task/` names it).
pub fn this_thread() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// How the kernel schedules thread `tid` of process `pid` (this process's, or
/// another's of the same user): its policy and nice from `/proc`, its I/O class from
/// `ioprio_get`.
pub fn of_thread(pid: u32, tid: i32) -> Option<Observed> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses): the
    // state is field 3; nice is 19 and policy 41.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<i64>().ok();
    let nice = field(19)? as i32;
    let policy = field(41)? as i32;
    // SAFETY: a plain query of another thread's I/O priority.
    let io = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid) };
    if io < 0 {
        return None;
    }
    let io = match io >> IOPRIO_CLASS_SHIFT {
        1 => IoClass::Realtime,
        2 => IoClass::BestEffort,
        3 => IoClass::Idle,
        _ => IoClass::None,
    };
    Some(Observed { policy, nice, io })
}

/// The threads of process `pid` named `name` (their `comm`, at most 15 bytes).
pub fn threads_named(pid: u32, name: &str) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse::<i32>().ok())
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .is_ok_and(|c| c.trim_end() == name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_thread_runs_in_sched_idle_and_the_idle_io_class_and_its_threads_too() {
        let pid = std::process::id();
        let before = of_thread(pid, this_thread()).expect("this thread's scheduling");
        assert!(
            !before.is_idle(),
            "the tests themselves run idle: {before:?}"
        );
        let (seen, child) = std::thread::spawn(move || {
            enter(Class::Idle);
            let me = of_thread(pid, this_thread()).unwrap();
            // A thread it starts (Tantivy's, a copying worker) inherits it.
            let child = std::thread::spawn(move || of_thread(pid, this_thread()).unwrap())
                .join()
                .unwrap();
            (me, child)
        })
        .join()
        .unwrap();
        assert!(seen.is_idle(), "{seen:?}");
        assert_eq!(seen.policy, SCHED_IDLE);
        assert_eq!(seen.io, IoClass::Idle);
        assert!(child.is_idle(), "inherited: {child:?}");
        // The thread that started it is untouched.
        assert_eq!(of_thread(pid, this_thread()).unwrap(), before);

        let fresh = std::thread::spawn(move || {
            enter(Class::Fresh);
            of_thread(pid, this_thread()).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(fresh.policy, before.policy, "{fresh:?}");
        assert!(fresh.nice >= 10, "{fresh:?}");
        assert!(!fresh.is_idle());
    }

    #[test]
    fn threads_are_found_by_name() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (up, started) = std::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("t-named-prio".into())
            .spawn(move || {
                // Named by the thread itself as it starts: say when that is done.
                up.send(()).unwrap();
                let _ = rx.recv();
            })
            .unwrap();
        started.recv().unwrap();
        let pid = std::process::id();
        let found = threads_named(pid, "t-named-prio");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(of_thread(pid, found[0]).is_some());
        drop(tx);
        h.join().unwrap();
    }
}
