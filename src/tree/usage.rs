//! The `usage/` folder (SPEC §13): `daily.json`, `monthly.json`, `by-project.json`,
//! `by-model.json`, `by-agent.json` (JSON arrays, one object per line, as `fen-fs
//! usage --json` rows) and `daily.svg` (the last 30 days' cost by agent). Each open
//! counts what changed since the last one (a `stat` per unit, the new bytes of grown
//! ones) and renders anew: the handle holds that snapshot, its size is the file's true
//! size at the open. Nothing here is cached by the kernel (TTL 0, direct I/O).

use super::attr::{Attr, CacheMode, FileKind};
use super::inodes::Node;
use super::usage_files::UsageFile;
use super::{DirEntry, Tree};
use crate::error::{Error, Result};
use crate::usage::Usage;
use crate::usage::report::Query;
use crate::usage::zone::Zone;
use crate::views::Snapshot;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The folder's name in the mount's root.
pub const USAGE: &str = "usage";

/// A getattr without an open renders too (a size must be true); renderings this
/// recent are reused by it, so an `ls -l usage/` is one pass, not six.
const STAT_REUSE: Duration = Duration::from_millis(500);

/// A file as rendered, and when.
type Rendered = (UsageFile, Instant, Arc<Vec<u8>>);

/// The mount's usage: the counting, the zone days are in, recent renderings.
pub struct UsageFolder {
    pub usage: Arc<Usage>,
    pub zone: Zone,
    rendered: Mutex<Vec<Rendered>>,
}

impl UsageFolder {
    pub fn new(usage: Arc<Usage>, zone: Zone) -> Self {
        UsageFolder {
            usage,
            zone,
            rendered: Mutex::new(Vec::new()),
        }
    }

    /// `file` as of now: what changed is counted first (a foreground request: it does
    /// not stop or pause).
    fn render(&self, file: UsageFile) -> Result<Arc<Vec<u8>>> {
        self.usage.refresh_all()?;
        let bytes = Arc::new(match file.report() {
            Some(kind) => self.usage.report(&Query::new(kind, self.zone)).json_array(),
            None => self.usage.daily_svg(self.zone).into_bytes(),
        });
        let mut r = self.rendered.lock().unwrap();
        r.retain(|(f, _, _)| *f != file);
        r.push((file, Instant::now(), bytes.clone()));
        Ok(bytes)
    }

    fn recent(&self, file: UsageFile) -> Result<Arc<Vec<u8>>> {
        let hit = self
            .rendered
            .lock()
            .unwrap()
            .iter()
            .find(|(f, at, _)| *f == file && at.elapsed() < STAT_REUSE)
            .map(|(_, _, b)| b.clone());
        match hit {
            Some(b) => Ok(b),
            None => self.render(file),
        }
    }
}

impl Tree {
    fn usage_folder(&self) -> Result<&UsageFolder> {
        self.usage
            .as_ref()
            .ok_or_else(|| Error::not_found("this mount has no usage folder"))
    }

    pub(super) fn usage_child(&self, name: &str) -> Result<Node> {
        self.usage_folder()?;
        UsageFile::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .map(Node::UsageFile)
            .ok_or_else(|| Error::not_found(format!("no usage/{name}")))
    }

    pub(super) fn usage_attr(&self, ino: u64, node: &Node, opened: Option<u64>) -> Result<Attr> {
        let folder = self.usage_folder()?;
        let now = SystemTime::now();
        let mut a = match node {
            Node::UsageRoot => self.attr(ino, FileKind::Directory, 0o555, 0, now),
            Node::UsageFile(f) => {
                let size = match opened {
                    Some(s) => s,
                    None => folder.recent(*f)?.len() as u64,
                };
                self.attr(ino, FileKind::RegularFile, 0o444, size, now)
            }
            _ => return Err(Error::not_found("not in usage/")),
        };
        a.volatile = true;
        Ok(a)
    }

    pub(super) fn usage_list(&self, out: &mut Vec<DirEntry>) -> Result<()> {
        self.usage_folder()?;
        for f in UsageFile::ALL {
            out.push(DirEntry {
                ino: self.inodes.ino(&Node::UsageFile(f)),
                kind: FileKind::RegularFile,
                name: f.name().into(),
            });
        }
        Ok(())
    }

    pub(super) fn usage_open(&self, node: &Node, writing: bool) -> Result<(Snapshot, CacheMode)> {
        let Node::UsageFile(f) = node else {
            return Err(Error::new(libc::EISDIR, "is a folder"));
        };
        if writing {
            return Err(Error::access("usage/ is read-only"));
        }
        Ok((
            Snapshot::Bytes(self.usage_folder()?.render(*f)?),
            CacheMode::DirectIo,
        ))
    }
}
