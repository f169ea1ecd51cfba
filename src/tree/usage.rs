//! The `usage/` folder (SPEC §13): `daily.json`, `monthly.json`, `by-project.json`,
//! `by-model.json`, `by-agent.json` (JSON arrays, one object per line, as `fen-fs
//! usage --json` rows) and `daily.svg` (the last 30 days' cost by agent). Each open
//! counts what changed since the last one (a `stat` per unit, the new bytes of grown
//! ones); a file is rendered again only when what it is made of changed (the
//! counted responses; for `daily.svg`, also the day), so while nothing changes its
//! bytes, size and mtime stay the same from `stat` to the last read (`tar` and
//! `rsync` see a file at rest). Its mtime is the time of the newest response counted
//! in it, or, when it changed without a newer response (a session deleted, a new day),
//! the time the change was seen. The handle holds the rendering of its open. Nothing
//! here is cached by the kernel (TTL 0, direct I/O).

use super::attr::{Attr, CacheMode, FileKind};
use super::inodes::Node;
use super::usage_files::UsageFile;
use super::{DirEntry, Tree};
use crate::error::{Error, Result};
use crate::usage::report::Query;
use crate::usage::zone::Zone;
use crate::usage::{Inputs, Usage};
use crate::views::Snapshot;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The folder's name in the mount's root.
pub const USAGE: &str = "usage";

/// A getattr without an open counts too (a size must be true); a count this recent
/// is trusted by it, so an `ls -l usage/` is one pass, not six.
const STAT_REUSE: Duration = Duration::from_millis(500);

/// What a rendering is made of: the counted responses, and the day (`daily.svg`).
type Key = (Inputs, Option<chrono::NaiveDate>);

/// A file as rendered: what from, when its inputs were last checked, its bytes and
/// mtime.
struct Rendered {
    file: UsageFile,
    key: Key,
    checked: Instant,
    bytes: Arc<Vec<u8>>,
    mtime: SystemTime,
}

/// The mount's usage: the counting, the zone days are in, the renderings.
pub struct UsageFolder {
    pub usage: Arc<Usage>,
    pub zone: Zone,
    rendered: Mutex<Vec<Rendered>>,
    /// The mtime of a rendering with no response in it.
    since: SystemTime,
}

impl UsageFolder {
    pub fn new(usage: Arc<Usage>, zone: Zone) -> Self {
        UsageFolder {
            usage,
            zone,
            rendered: Mutex::new(Vec::new()),
            since: SystemTime::now(),
        }
    }

    fn key(&self, file: UsageFile) -> Key {
        let day = (file == UsageFile::DailySvg).then(|| self.zone.today());
        (self.usage.inputs(), day)
    }

    /// `file` as of now, and its mtime: what changed is counted first (a foreground
    /// request: it does not stop or pause), then the file is rendered again if that
    /// changed what it is made of.
    fn render(&self, file: UsageFile) -> Result<(Arc<Vec<u8>>, SystemTime)> {
        self.usage.refresh_all()?;
        let key = self.key(file);
        let mut r = self.rendered.lock().unwrap();
        let old = r.iter().position(|x| x.file == file);
        if let Some(i) = old
            && r[i].key == key
        {
            r[i].checked = Instant::now();
            return Ok((r[i].bytes.clone(), r[i].mtime));
        }
        let bytes = Arc::new(match file.report() {
            Some(kind) => self.usage.report(&Query::new(kind, self.zone)).json_array(),
            None => self.usage.daily_svg(self.zone).into_bytes(),
        });
        let newest = self
            .usage
            .newest_response_ms()
            .and_then(|ms| u64::try_from(ms).ok())
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
        let mtime = match old.map(|i| &r[i]) {
            // The same bytes from other inputs (a session that grew by no response).
            Some(o) if o.bytes == bytes => o.mtime,
            // Changed: its newest response's time, unless that is not newer than the
            // last rendering's (then the change is now).
            Some(o) => newest
                .filter(|n| *n > o.mtime)
                .unwrap_or_else(SystemTime::now),
            None => newest.unwrap_or(self.since),
        };
        let made = Rendered {
            file,
            key,
            checked: Instant::now(),
            bytes: bytes.clone(),
            mtime,
        };
        match old {
            Some(i) => r[i] = made,
            None => r.push(made),
        }
        Ok((bytes, mtime))
    }

    /// `render`, or the rendering its inputs were checked for within `STAT_REUSE`.
    fn recent(&self, file: UsageFile) -> Result<(Arc<Vec<u8>>, SystemTime)> {
        let hit = self
            .rendered
            .lock()
            .unwrap()
            .iter()
            .find(|x| x.file == file && x.checked.elapsed() < STAT_REUSE)
            .map(|x| (x.bytes.clone(), x.mtime));
        match hit {
            Some(b) => Ok(b),
            None => self.render(file),
        }
    }

    /// The mtime of `file`'s last rendering, if it has one (what an open handle holds,
    /// unless it changed since).
    fn last_mtime(&self, file: UsageFile) -> Option<SystemTime> {
        self.rendered
            .lock()
            .unwrap()
            .iter()
            .find(|x| x.file == file)
            .map(|x| x.mtime)
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
        let mut a = match node {
            // Its entries never change: its time is the mount's.
            Node::UsageRoot => self.attr(ino, FileKind::Directory, 0o555, 0, folder.since),
            // Through an open handle: its size, and its rendering's time (counting
            // nothing: a reader's fstat).
            Node::UsageFile(f) => match (opened, folder.last_mtime(*f)) {
                (Some(size), Some(mtime)) => {
                    self.attr(ino, FileKind::RegularFile, 0o444, size, mtime)
                }
                _ => {
                    let (bytes, mtime) = folder.recent(*f)?;
                    let size = opened.unwrap_or(bytes.len() as u64);
                    self.attr(ino, FileKind::RegularFile, 0o444, size, mtime)
                }
            },
            _ => return Err(Error::not_found("not in usage/")),
        };
        a.volatile = true;
        Ok(a)
    }

    /// A listing's mtime of `file`: its last rendering's (a listing renders nothing).
    pub(super) fn usage_listed_mtime(&self, file: UsageFile) -> SystemTime {
        self.usage.as_ref().map_or(SystemTime::UNIX_EPOCH, |u| {
            u.last_mtime(file).unwrap_or(u.since)
        })
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
            Snapshot::Bytes(self.usage_folder()?.render(*f)?.0),
            CacheMode::DirectIo,
        ))
    }
}
