//! The peers folder (§12) watched while a mount runs: a peer whose folder appears in
//! `peers/` (`fen-fs sync add`, then Syncthing makes it) is shown without a remount,
//! and one whose folder goes (`fen-fs sync remove`, or deleted by hand) leaves. The
//! folder is watched with inotify (its entries made, deleted, renamed; the folder
//! itself deleted or moved). While it does not exist (no peer was ever added), its
//! nearest existing parent is watched for what is made in it, down to the folder;
//! where inotify cannot watch, the folder is looked for every second. Waiting costs
//! no wake-up otherwise: a stop wakes the wait through an eventfd.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How often the folder is looked for while nothing can be watched.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// A look even with a watch set, in case an event was missed (a full queue).
const LOOK_ANYWAY: Duration = Duration::from_secs(30);

/// On the peers folder: its entries, and itself going.
const EVENTS: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW;
/// On a parent while the folder does not exist: what is made in it.
const PARENT_EVENTS: u32 = libc::IN_CREATE
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW;

pub struct PeersWatch {
    dir: PathBuf,
    inotify: Option<OwnedFd>,
    /// The watch on `dir`, while it is set.
    on_dir: Option<i32>,
    /// The watch on `dir`'s nearest existing parent, while `dir` does not exist.
    on_parent: Option<(i32, PathBuf)>,
    wake: Arc<OwnedFd>,
}

/// Wakes a [`PeersWatch::wait`] (from another thread: a stop).
#[derive(Clone)]
pub struct Waker(Arc<OwnedFd>);

impl Waker {
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: valid eventfd and an 8-byte buffer.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

fn owned(fd: i32) -> Option<OwnedFd> {
    // SAFETY: a fresh descriptor, owned from here on.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl PeersWatch {
    /// Watches `dir` (the peers folder), which may not exist yet.
    pub fn new(dir: &Path) -> std::io::Result<PeersWatch> {
        // SAFETY: plain syscalls; the descriptors are owned below.
        let wake = owned(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })
            .ok_or_else(std::io::Error::last_os_error)?;
        let inotify = owned(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) });
        let mut w = PeersWatch {
            dir: dir.to_path_buf(),
            inotify,
            on_dir: None,
            on_parent: None,
            wake: Arc::new(wake),
        };
        w.set_watch();
        Ok(w)
    }

    pub fn waker(&self) -> Waker {
        Waker(self.wake.clone())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn add_watch(&self, path: &Path, events: u32) -> Option<i32> {
        let fd = self.inotify.as_ref()?;
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: valid fd and C string.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), events) };
        (wd >= 0).then_some(wd)
    }

    fn drop_parent_watch(&mut self) {
        if let (Some((wd, _)), Some(fd)) = (self.on_parent.take(), &self.inotify) {
            // SAFETY: valid fd; a stale wd only fails.
            unsafe { libc::inotify_rm_watch(fd.as_raw_fd(), wd) };
        }
    }

    /// Sets the watch on the folder if it is not set (the folder may be back, or
    /// made), else on its nearest existing parent: whether anything is watched.
    fn set_watch(&mut self) -> bool {
        if self.on_dir.is_some() {
            return true;
        }
        if let Some(wd) = self.add_watch(&self.dir.clone(), EVENTS) {
            self.on_dir = Some(wd);
            self.drop_parent_watch();
            return true;
        }
        let nearest = self
            .dir
            .ancestors()
            .skip(1)
            .find(|p| p.is_dir())
            .map(Path::to_path_buf);
        if self.on_parent.as_ref().map(|(_, p)| p) != nearest.as_ref() {
            self.drop_parent_watch();
            if let Some(p) = nearest {
                self.on_parent = self.add_watch(&p, PARENT_EVENTS).map(|wd| (wd, p));
            }
        }
        self.on_parent.is_some()
    }

    /// Waits until the folder may have changed (an event; the folder, or a folder on
    /// its way, made), a wake, or a while: the caller then looks at its peers.
    pub fn wait(&mut self) {
        let timeout = if self.set_watch() {
            LOOK_ANYWAY
        } else {
            LOOK_EVERY
        };
        let mut fds = vec![libc::pollfd {
            fd: self.wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if let Some(fd) = &self.inotify {
            fds.push(libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        // SAFETY: valid array of pollfds.
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                timeout.as_millis() as i32,
            )
        };
        let mut buf = [0u8; 4096];
        // SAFETY: valid fds and buffers; both are non-blocking.
        unsafe { libc::read(self.wake.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        let Some(fd) = self.inotify.as_ref().map(|f| f.as_raw_fd()) else {
            return;
        };
        loop {
            // SAFETY: as above.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off + 16 <= n as usize {
                let wd = i32::from_ne_bytes(buf[off..off + 4].try_into().expect("4 bytes"));
                let mask = u32::from_ne_bytes(buf[off + 4..off + 8].try_into().expect("4 bytes"));
                let len = u32::from_ne_bytes(buf[off + 12..off + 16].try_into().expect("4 bytes"));
                if mask & libc::IN_IGNORED != 0 {
                    // The watched folder went (or moved): watched again once it is back.
                    if self.on_dir == Some(wd) {
                        self.on_dir = None;
                    }
                    if self.on_parent.as_ref().is_some_and(|(w, _)| *w == wd) {
                        self.on_parent = None;
                    }
                }
                off += 16 + len as usize;
            }
        }
    }

    /// The peers' names now (their folders), sorted.
    pub fn names(&self) -> Vec<String> {
        super::peers::peer_names(&self.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_folder_made_or_removed_ends_the_wait_and_a_missing_folder_is_looked_for() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/fen/peers");
        let mut w = PeersWatch::new(&dir).unwrap();
        assert!(w.names().is_empty());
        assert!(
            w.on_dir.is_none() && w.on_parent.is_some(),
            "its parent watched"
        );
        // Missing: each folder made on its way ends a wait, down to the folder.
        let d = dir.clone();
        let maker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::create_dir_all(d).unwrap();
        });
        let t = Instant::now();
        while w.on_dir.is_none() {
            w.wait();
            w.set_watch();
            assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        }
        maker.join().unwrap();
        assert!(w.on_parent.is_none(), "the parent no longer watched");
        // A peer's folder made: the wait ends at once (well before LOOK_ANYWAY).
        let d = dir.clone();
        let maker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::create_dir(d.join("laptop")).unwrap();
        });
        let t = Instant::now();
        w.wait();
        maker.join().unwrap();
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert_eq!(w.names(), vec!["laptop".to_string()]);
        std::fs::remove_dir(dir.join("laptop")).unwrap();
        let t = Instant::now();
        w.wait();
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(w.names().is_empty());
        // A wake ends a wait too.
        let waker = w.waker();
        let t = Instant::now();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            waker.wake();
        });
        w.wait();
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}
