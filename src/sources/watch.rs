//! Which folders changed behind our back, from inotify: fen's namespace folders and
//! other agents' session folders, each under a key of the caller's choosing. Each
//! watched folder reports every create, delete, rename and write of a file in it. The kernel
//! queues those events synchronously with the write, so draining the queue at the
//! start of an access is exact: an append that returned before the access began is
//! always seen. Where a watch cannot be set (no inotify, limits, remote filesystems
//! whose other clients inotify cannot see), callers fall back to `stat`ing files.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::Mutex;

pub struct StoreWatch {
    fd: OwnedFd,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    ns_of: HashMap<i32, String>,
    wd_of: HashMap<String, i32>,
    /// Namespaces with events since they were last marked clean.
    dirty: HashSet<String>,
    /// Those among them whose folder's entries changed (a file made, removed or
    /// renamed, the folder itself gone or new), not only a file's content.
    entries: HashSet<String>,
}

/// Events that change a file's content or times, not the folder's entries.
const CONTENT: u32 = libc::IN_MODIFY | libc::IN_ATTRIB | libc::IN_CLOSE_WRITE;

const EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW;

impl StoreWatch {
    pub fn new() -> Option<Self> {
        // SAFETY: plain syscall; the fd is owned below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Some(StoreWatch {
            fd,
            state: Mutex::new(State::default()),
        })
    }

    /// Whether `ns` may have changed since `mark_clean(ns)`. Starts watching `dir` the
    /// first time (a new watch counts as a change); `true` too when it cannot watch.
    pub fn changed(&self, ns: &str, dir: &Path) -> bool {
        self.drain();
        self.changed_as_drained(ns, dir)
    }

    /// `changed`, from the events read by the last `drain` (for a caller that asks
    /// about many folders at once: one `drain` first).
    pub fn changed_as_drained(&self, ns: &str, dir: &Path) -> bool {
        let mut st = self.state.lock().unwrap();
        if !st.wd_of.contains_key(ns) {
            let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
                return true;
            };
            // SAFETY: valid fd and C string.
            let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), EVENTS) };
            if wd < 0 {
                return true;
            }
            st.ns_of.insert(wd, ns.to_string());
            st.wd_of.insert(ns.to_string(), wd);
            st.dirty.insert(ns.to_string());
            st.entries.insert(ns.to_string());
        }
        st.dirty.contains(ns)
    }

    /// Whether the entries of `ns`'s folder may have changed since `mark_clean(ns)`
    /// (from the last `drain`): `false` when only files' content did, which needs no
    /// new listing of the folder. `true` for a folder not watched.
    pub fn entries_changed_as_drained(&self, ns: &str) -> bool {
        let st = self.state.lock().unwrap();
        !st.wd_of.contains_key(ns) || st.entries.contains(ns)
    }

    /// Call before reading the namespace's files: events after this re-mark it.
    pub fn mark_clean(&self, ns: &str) {
        self.drain();
        let mut st = self.state.lock().unwrap();
        st.dirty.remove(ns);
        st.entries.remove(ns);
    }

    /// Reads every queued event and marks the namespaces they concern.
    pub fn drain(&self) {
        // Not zeroed first: a drain runs on every access, and zeroing 64 KiB each
        // time was most of a remount's first listings.
        let mut room = std::mem::MaybeUninit::<[u8; 64 * 1024]>::uninit();
        loop {
            // SAFETY: valid fd; the kernel writes at most the buffer's length.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    room.as_mut_ptr().cast(),
                    std::mem::size_of_val(&room),
                )
            };
            if n <= 0 {
                return; // EAGAIN: the queue is empty.
            }
            // SAFETY: the kernel initialized the first `n` bytes.
            let buf = unsafe { std::slice::from_raw_parts(room.as_ptr().cast::<u8>(), n as usize) };
            let mut st = self.state.lock().unwrap();
            let mut off = 0usize;
            let n = n as usize;
            while off + 16 <= n {
                let wd = i32::from_ne_bytes(buf[off..off + 4].try_into().expect("4 bytes"));
                let mask = u32::from_ne_bytes(buf[off + 4..off + 8].try_into().expect("4 bytes"));
                let len = u32::from_ne_bytes(buf[off + 12..off + 16].try_into().expect("4 bytes"))
                    as usize;
                off += 16 + len;
                if mask & libc::IN_Q_OVERFLOW != 0 {
                    // Events were lost: trust nothing until re-read.
                    let all: Vec<String> = st.wd_of.keys().cloned().collect();
                    st.dirty.extend(all.iter().cloned());
                    st.entries.extend(all);
                    continue;
                }
                let Some(ns) = st.ns_of.get(&wd).cloned() else {
                    continue;
                };
                if mask & libc::IN_IGNORED != 0 {
                    // The folder went away: forget the watch; the next access re-adds it.
                    st.ns_of.remove(&wd);
                    st.wd_of.remove(&ns);
                }
                if mask & !CONTENT != 0 {
                    st.entries.insert(ns.clone());
                }
                st.dirty.insert(ns);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn writes_creates_and_deletes_mark_the_namespace() {
        let tmp = tempfile::tempdir().unwrap();
        let ns = tmp.path().join("--a--");
        std::fs::create_dir(&ns).unwrap();
        let w = StoreWatch::new().unwrap();
        assert!(w.changed("--a--", &ns), "a new watch counts as a change");
        w.mark_clean("--a--");
        assert!(!w.changed("--a--", &ns));
        let f = ns.join("s.jsonl");
        std::fs::write(&f, b"x\n").unwrap();
        assert!(w.changed("--a--", &ns), "create");
        w.mark_clean("--a--");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&f)
            .unwrap()
            .write_all(b"y\n")
            .unwrap();
        assert!(w.changed("--a--", &ns), "append");
        assert!(
            !w.entries_changed_as_drained("--a--"),
            "an append changes no entry"
        );
        w.mark_clean("--a--");
        std::fs::write(ns.join("t.jsonl"), b"x\n").unwrap();
        assert!(w.changed("--a--", &ns));
        assert!(w.entries_changed_as_drained("--a--"), "a file made");
        w.mark_clean("--a--");
        std::fs::remove_file(ns.join("t.jsonl")).unwrap();
        std::fs::remove_file(&f).unwrap();
        assert!(w.changed("--a--", &ns), "delete");
        w.mark_clean("--a--");
        std::fs::remove_dir(&ns).unwrap();
        assert!(w.changed("--a--", &ns), "folder gone");
    }
}
