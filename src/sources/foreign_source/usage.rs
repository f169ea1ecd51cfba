//! Another agent's token usage (`SessionSource::usage`): each unit that records it
//! (its session files and units, and for some agents files that are not sessions:
//! `agents::usage_files`) is read by the agent's usage reader, from its start or, when
//! it only grew, from the ledger's mark, once the bytes before the mark prove to be
//! the ones read then (same file, same first and last 4 KiB up to the mark).

use super::ForeignSource;
use crate::error::{Error, Result};
use crate::sources::MessageMark;
use crate::sources::agents;
use crate::sources::registry::kind;
use crate::usage_record::{UnitFacts, UnitUsage, UsageLedger, UsageMark, UsageOut, UsageUnit};
use std::path::{Path, PathBuf};

/// How much of a file one read takes.
const CHUNK: usize = 2 << 20;

impl ForeignSource {
    pub(super) fn usage_into(&self, ledger: &mut dyn UsageLedger) -> Result<()> {
        if agents::usage_reader_for(self.agent, Path::new(""), UnitFacts::default()).is_none() {
            return Ok(());
        }
        // What the ledger does not hold: a stat per unit.
        let mut todo = Vec::new();
        for path in self.usage_units() {
            let Some(stamp) = self.stamp_of(&path) else {
                continue;
            };
            let unit = UsageUnit {
                key: path.to_string_lossy().into_owned(),
                stamp: [
                    stamp.dev,
                    stamp.ino,
                    stamp.size,
                    stamp.mtime_ns as u64,
                    stamp.ctime_ns as u64,
                ],
            };
            if let Some(since) = ledger.since(&unit) {
                todo.push((path, unit, since));
            }
        }
        let workers = ledger.workers().clamp(1, todo.len().max(1));
        if workers == 1 {
            for (path, unit, since) in todo {
                if ledger.stop() {
                    break;
                }
                ledger.pause();
                let read = self.read_usage(&path, &since, &|| ledger.stop(), &|| ledger.pause());
                self.took(ledger, &path, &unit, read);
            }
            return Ok(());
        }
        // Several at once (a foreground count: someone waits for it): files are read
        // and parsed on `workers` threads, the largest first, and handed to the ledger
        // here as each is done.
        todo.sort_by_key(|(_, u, _)| u.stamp[2]);
        let queue = std::sync::Mutex::new(todo);
        let stopped = std::sync::atomic::AtomicBool::new(false);
        let stop = || stopped.load(std::sync::atomic::Ordering::Relaxed);
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::channel();
            for _ in 0..workers {
                let tx = tx.clone();
                let (queue, stop) = (&queue, &stop);
                scope.spawn(move || {
                    while !stop() {
                        let Some((path, unit, since)) = queue.lock().unwrap().pop() else {
                            break;
                        };
                        let read = self.read_usage(&path, &since, stop, &|| {});
                        if tx.send((path, unit, read)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            for (path, unit, read) in rx {
                self.took(ledger, &path, &unit, read);
                if ledger.stop() {
                    stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                ledger.pause();
            }
        });
        Ok(())
    }

    fn took(
        &self,
        ledger: &mut dyn UsageLedger,
        path: &Path,
        unit: &UsageUnit,
        read: Result<UnitUsage>,
    ) {
        match read {
            Ok(read) => ledger.took(unit, read),
            Err(e) => log::debug!("usage of {}: {}", path.display(), e.reason),
        }
    }

    /// The units whose usage counts: the agent's usage files where they are more than
    /// its sessions, else the session files and units of the walk. Over kept copies:
    /// the current bytes of each copy shown (on this machine those whose source is
    /// gone, so that a session counts once, from its source while there is one), not
    /// its earlier versions, whose responses the current bytes hold or held.
    fn usage_units(&self) -> Vec<PathBuf> {
        if let Some(kept) = &self.kept {
            return kept
                .list_unwaited()
                .into_iter()
                .map(|(key, _)| key)
                .filter(|key| kept.facts(key).is_some_and(|f| f.version.is_none()))
                .collect();
        }
        match agents::usage_files(self.agent, &self.root) {
            Some(files) => files,
            None => self.walk(),
        }
    }

    /// What `path` says of itself before it is read. A kept copy says what its source
    /// said (its name, and the cwd its place gave, as its record kept it).
    fn usage_facts(&self, path: &Path) -> UnitFacts {
        if let Some(f) = self.kept_facts(path) {
            return UnitFacts {
                agent: self.agent,
                session: f
                    .record
                    .source
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned()),
                cwd: kind(self.agent)
                    .usage_cwd_from_place()
                    .then(|| f.record.facts.cwd.clone())
                    .flatten(),
                host: f.host.clone(),
            };
        }
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let cwd = kind(self.agent).usage_cwd(&self.root, path);
        UnitFacts {
            agent: self.agent,
            session: stem,
            cwd,
            host: None,
        }
    }

    /// Reads `path`'s usage from `since` on; `stop` ends it at the next chunk (the mark
    /// says how far it got), `pause` is called between chunks.
    fn read_usage(
        &self,
        path: &Path,
        since: &UsageMark,
        stop: &dyn Fn() -> bool,
        pause: &dyn Fn(),
    ) -> Result<UnitUsage> {
        let (file, stamp) = self.open_bytes(path)?;
        // A kept copy is read as the file it was kept from.
        let named = self.source_path_of(path);
        let fresh = || {
            agents::usage_reader_for(self.agent, &named, self.usage_facts(path))
                .ok_or_else(|| Error::not_found("no usage reader"))
        };
        let identity = |len: u64| MessageMark::file_identity(&file, stamp.dev, stamp.ino, len);
        let mut reader = fresh()?;
        let resumed = !since.is_none()
            && reader.follows_appends()
            && !self.is_unit(path)
            && since.offset <= stamp.size
            && since.identity == identity(since.offset)
            && reader.restore(&since.state);
        if !resumed {
            reader = fresh()?;
        }
        let mut consumed = if resumed { since.offset } else { 0 };
        let mut pos = consumed;
        let mut buf: Vec<u8> = Vec::new();
        let mut out = UsageOut::default();
        let mut complete = true;
        while pos < stamp.size {
            let want = ((stamp.size - pos) as usize).min(CHUNK);
            let n = super::readers::read_appending(&file, &mut buf, want, pos)
                .map_err(|e| Error::io(path.display(), &e))?;
            if n == 0 {
                break;
            }
            pos += n as u64;
            let used = reader.feed(consumed, &buf, &mut out) as usize;
            consumed += used as u64;
            buf.drain(..used.min(buf.len()));
            if pos < stamp.size {
                if stop() {
                    complete = false;
                    break;
                }
                pause();
            }
        }
        if complete {
            reader.finish(consumed, &buf, &mut out);
        }
        Ok(UnitUsage {
            resumed,
            complete,
            mark: UsageMark {
                identity: identity(consumed),
                offset: consumed,
                state: reader.save(),
            },
            records: out.records,
            malformed: out.malformed,
            first_malformed: out.first_malformed,
        })
    }
}
