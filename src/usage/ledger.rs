//! What one source's units recorded, unit by unit, as of the stamp each was read at:
//! the [`UsageLedger`] a source fills (`SessionSource::usage`), kept between runs in
//! fen's cache folder. A unit whose stamp is unchanged is not read again; a grown one
//! is read on from its mark (the source proves the bytes before it); anything else is
//! read anew. The saved ledger is used only whole and intact (its own checksum, its
//! source's kind and root); each unit in it still has to match its stamp.

use crate::agent::Agent;
use crate::store::layout::CacheFile;
use crate::usage_record::{Tokens, UnitUsage, UsageLedger, UsageMark, UsageRecord, UsageUnit};
use borsh::{BorshDeserialize, BorshSerialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// 1: the first.
const VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"fenusage";
/// A larger cache file is not read (a damaged or planted one cannot cost memory).
const MAX_BYTES: u64 = 1 << 30;
/// No string: a string index that names none.
pub const NONE: u32 = u32::MAX;

/// One record as the ledger keeps it: its strings are indices into its unit's table.
#[derive(Debug, Clone, Copy, PartialEq, BorshSerialize, BorshDeserialize)]
pub struct Rec {
    pub time_ms: i64,
    pub tokens: Tokens,
    pub recorded_cost: Option<f64>,
    pub fast: bool,
    pub key: Option<u64>,
    pub revision: u64,
    pub session: u32,
    pub cwd: u32,
    pub model: u32,
    pub host: u32,
}

/// A unit as last read.
#[derive(Debug, Clone, Default, BorshSerialize, BorshDeserialize)]
pub struct UnitEntry {
    pub stamp: [u64; 5],
    /// Read to its end at `stamp` (else the next pass goes on from the mark).
    pub complete: bool,
    pub mark: UsageMark,
    pub strings: Vec<String>,
    pub records: Vec<Rec>,
    pub malformed: u64,
    pub first_malformed: Option<String>,
}

impl UnitEntry {
    pub fn string(&self, i: u32) -> Option<&str> {
        self.strings.get(i as usize).map(String::as_str)
    }

    fn intern(&mut self, index: &mut HashMap<String, u32>, s: Option<&str>) -> u32 {
        let Some(s) = s else { return NONE };
        if let Some(&i) = index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        index.insert(s.to_string(), i);
        i
    }

    fn add(&mut self, records: Vec<UsageRecord>) {
        let mut index: HashMap<String, u32> = self
            .strings
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        // A session read whole holds exactly its records, for as long as the daemon
        // runs (10,000 sessions' vectors grown by doubling were 19 MB); one that
        // grows by appends grows as vectors do.
        if self.records.is_empty() {
            self.records.reserve_exact(records.len());
        } else {
            self.records.reserve(records.len());
        }
        for r in records {
            let rec = Rec {
                time_ms: r.time_ms,
                tokens: r.tokens,
                recorded_cost: r.recorded_cost,
                fast: r.fast,
                key: r.key,
                revision: r.revision,
                session: self.intern(&mut index, Some(&r.session)),
                cwd: self.intern(&mut index, r.cwd.as_deref()),
                model: self.intern(&mut index, r.model.as_deref()),
                host: self.intern(&mut index, r.host.as_deref()),
            };
            self.records.push(rec);
        }
    }
}

#[derive(BorshSerialize, BorshDeserialize)]
struct Saved {
    agent: String,
    root: String,
    units: BTreeMap<String, UnitEntry>,
}

/// One source's ledger.
pub struct SourceLedger {
    pub agent: Agent,
    pub root: PathBuf,
    /// By unit key: sorted, so every pass adds records up in the same order.
    pub units: BTreeMap<String, UnitEntry>,
    /// Changed since it was loaded or saved.
    pub dirty: bool,
    /// Bumped by every change to what the units hold.
    pub generation: u64,
    seen: HashSet<String>,
}

impl SourceLedger {
    pub fn new(agent: Agent, root: &Path) -> Self {
        SourceLedger {
            agent,
            root: root.to_path_buf(),
            units: BTreeMap::new(),
            dirty: false,
            generation: 0,
            seen: HashSet::new(),
        }
    }

    /// The ledger saved in `cache`, if it is intact and this source's.
    pub fn load(agent: Agent, root: &Path, cache: &CacheFile) -> Self {
        let mut l = SourceLedger::new(agent, root);
        if let Some(units) =
            crate::store::atomic::read_file(cache, MAX_BYTES).and_then(|b| decode(&b, agent, root))
        {
            l.units = units;
        }
        l
    }

    /// Saves it (best effort: without it, the next run reads every unit again).
    pub fn save(&mut self, cache: &CacheFile) {
        if !self.dirty {
            return;
        }
        let saved = Saved {
            agent: self.agent.name().to_string(),
            root: self.root.to_string_lossy().into_owned(),
            units: std::mem::take(&mut self.units),
        };
        // Streamed to the file, its checksum taken as it goes and written into the
        // header last: a ledger of 10,000 sessions is ~17 MB, and building it in
        // memory first was the daemon's peak (bench row 11).
        let head = MAGIC.len() + 4 + 8;
        let mut written = false;
        crate::store::atomic::replace_file_with(cache, |f| {
            use std::io::Write;
            use std::os::unix::fs::FileExt;
            let mut header = Vec::with_capacity(head);
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&VERSION.to_le_bytes());
            header.extend_from_slice(&[0; 8]);
            f.write_all(&header)?;
            let sum = crate::store::atomic::write_summed(f, |body| borsh::to_writer(body, &saved))?;
            f.write_all_at(&sum.to_le_bytes(), (head - 8) as u64)?;
            written = true;
            Ok(())
        });
        self.units = saved.units;
        if written {
            self.dirty = false;
        }
    }

    /// Starts a pass over the source's units.
    pub fn begin(&mut self) {
        self.seen.clear();
    }

    /// Ends a pass that saw every unit: the units it did not see are gone.
    pub fn end_complete(&mut self) {
        let before = self.units.len();
        let seen = std::mem::take(&mut self.seen);
        self.units.retain(|k, _| seen.contains(k));
        if self.units.len() != before {
            self.dirty = true;
            self.generation += 1;
        }
    }

    /// The records of every unit, with the unit they are in.
    pub fn records(&self) -> impl Iterator<Item = (&UnitEntry, &Rec)> {
        self.units
            .values()
            .flat_map(|u| u.records.iter().map(move |r| (u, r)))
    }

    /// Units with usage objects that could not be read: (unit, how many, the first).
    pub fn malformed(&self) -> impl Iterator<Item = (&str, u64, Option<&str>)> {
        self.units
            .iter()
            .filter(|(_, u)| u.malformed > 0)
            .map(|(k, u)| (k.as_str(), u.malformed, u.first_malformed.as_deref()))
    }
}

fn decode(bytes: &[u8], agent: Agent, root: &Path) -> Option<BTreeMap<String, UnitEntry>> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (version, rest) = rest.split_at_checked(4)?;
    let (sum, body) = rest.split_at_checked(8)?;
    if u32::from_le_bytes(version.try_into().ok()?) != VERSION
        || u64::from_le_bytes(sum.try_into().ok()?) != crate::store::atomic::checksum(&[body])
    {
        return None;
    }
    let saved = borsh::from_slice::<Saved>(body).ok()?;
    (saved.agent == agent.name() && saved.root == root.to_string_lossy()).then_some(saved.units)
}

/// A ledger during one pass, with what stops and pauses it.
pub struct Pass<'a> {
    pub ledger: &'a mut SourceLedger,
    pub stop: &'a dyn Fn() -> bool,
    pub pause: &'a dyn Fn(),
    pub stopped: bool,
    /// Units read in this pass.
    pub read: u64,
    /// Units a source may read at once.
    pub workers: usize,
}

impl UsageLedger for Pass<'_> {
    fn since(&mut self, unit: &UsageUnit) -> Option<UsageMark> {
        self.ledger.seen.insert(unit.key.clone());
        match self.ledger.units.get(&unit.key) {
            Some(e) if e.complete && e.stamp == unit.stamp => None,
            Some(e) => Some(e.mark.clone()),
            None => Some(UsageMark::default()),
        }
    }

    fn took(&mut self, unit: &UsageUnit, read: UnitUsage) {
        let l = &mut *self.ledger;
        let e = l.units.entry(unit.key.clone()).or_default();
        if !read.resumed {
            *e = UnitEntry::default();
        }
        e.stamp = unit.stamp;
        e.complete = read.complete;
        e.mark = read.mark;
        e.malformed += read.malformed;
        if e.first_malformed.is_none() {
            e.first_malformed = read.first_malformed;
        }
        e.add(read.records);
        l.dirty = true;
        l.generation += 1;
        self.read += 1;
    }

    fn stop(&self) -> bool {
        (self.stop)()
    }

    fn pause(&self) {
        (self.pause)()
    }

    fn workers(&self) -> usize {
        self.workers
    }
}

impl Pass<'_> {
    pub fn stopped(&mut self) -> bool {
        self.stopped |= (self.stop)();
        self.stopped
    }
}

/// Shares equal strings between units (a session's id and cwd repeat in each of its
/// records, a model in every unit).
#[derive(Default)]
pub struct Interner(HashMap<Box<str>, Arc<str>>);

impl Interner {
    pub fn get(&mut self, s: Option<&str>) -> Option<Arc<str>> {
        let s = s?;
        if let Some(a) = self.0.get(s) {
            return Some(a.clone());
        }
        let a: Arc<str> = Arc::from(s);
        self.0.insert(s.into(), a.clone());
        Some(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage_record::{Tokens, UsageMark};

    fn unit(n: u64) -> UnitEntry {
        let mut u = UnitEntry {
            stamp: [n, 2, 3, 4, 5],
            complete: true,
            mark: UsageMark {
                identity: n,
                offset: 10 * n,
                state: vec![n as u8; 3],
            },
            ..Default::default()
        };
        u.add(
            (0..n)
                .map(|k| UsageRecord {
                    time_ms: k as i64,
                    agent: Agent::Pi,
                    session: format!("s{n}").into(),
                    cwd: Some("/w".into()),
                    host: None,
                    model: Some("m".into()),
                    tokens: Tokens {
                        input: k,
                        ..Default::default()
                    },
                    recorded_cost: None,
                    fast: false,
                    key: Some(k),
                    revision: 0,
                })
                .collect(),
        );
        u
    }

    #[test]
    fn a_saved_ledger_loads_as_it_was_and_a_damaged_one_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new("/agents/pi");
        let cache = crate::store::layout::usage_cache(dir.path(), "pi", root);
        let mut l = SourceLedger::new(Agent::Pi, root);
        for n in 0..200 {
            l.units.insert(format!("u{n}"), unit(n % 7));
        }
        l.dirty = true;
        l.save(&cache);
        assert!(!l.dirty);
        let back = SourceLedger::load(Agent::Pi, root, &cache);
        assert_eq!(back.units.len(), 200);
        let a: Vec<_> = l
            .records()
            .map(|(u, r)| (u.stamp, r.tokens.input, r.key))
            .collect();
        let b: Vec<_> = back
            .records()
            .map(|(u, r)| (u.stamp, r.tokens.input, r.key))
            .collect();
        assert_eq!(a, b);
        assert_eq!(back.units["u5"].mark, l.units["u5"].mark);
        // Another source's, or one byte changed: read as no ledger.
        assert!(
            SourceLedger::load(Agent::Pi, Path::new("/elsewhere"), &cache)
                .units
                .is_empty()
        );
        let path = cache.path();
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert!(SourceLedger::load(Agent::Pi, root, &cache).units.is_empty());
    }
}
