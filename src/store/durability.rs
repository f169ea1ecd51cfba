//! When an acknowledged append reaches the disk (`--fsync`, Redis's names), and the
//! group commit that lets concurrent `always` writers share one `fdatasync`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Condvar, Mutex};

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
}

#[derive(Default)]
struct CommitState {
    written: u64,
    durable: u64,
    syncing: bool,
    failed: Option<(u64, i32)>,
}

impl GroupCommit {
    /// Call right after a successful write (still under the append lock).
    pub fn note_written(&self) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.written += 1;
        s.written
    }

    /// Blocks until write `seq` is on disk. Errors carry the errno of a failed sync.
    pub fn wait_durable(&self, seq: u64, file: &File) -> std::io::Result<()> {
        let mut s = self.state.lock().unwrap();
        loop {
            // A failed sync may have lost the data of every write it covered; a later
            // successful sync does not bring it back (Linux clears the error).
            if let Some((upto, errno)) = s.failed
                && seq <= upto
            {
                return Err(std::io::Error::from_raw_os_error(errno));
            }
            if s.durable >= seq {
                return Ok(());
            }
            if !s.syncing {
                s.syncing = true;
                let target = s.written;
                drop(s);
                let result = fdatasync(file);
                s = self.state.lock().unwrap();
                s.syncing = false;
                match &result {
                    Ok(()) => s.durable = s.durable.max(target),
                    Err(e) => s.failed = Some((target, e.raw_os_error().unwrap_or(libc::EIO))),
                }
                self.synced.notify_all();
                result?;
            } else {
                s = self.synced.wait(s).unwrap();
            }
        }
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
