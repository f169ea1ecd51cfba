//! Other machines' sessions (§12): each peer is a folder `peers/<host>/` that Syncthing
//! fills, receive-only, with another machine's fen store. A peer is a set of sources
//! over that folder (its fen store, and its kept copies of §11: one source per agent),
//! each wrapped in a [`PeerSource`] that shows them as this machine's tree expects:
//! - read-only (every change fails with `EROFS`), nothing ever written, locked or
//!   created under `peers/` (caches go to this machine's `.fen-cache/peers/<host>/`);
//! - in the namespace of their cwd after the path map (`cwd` mapped, `cwd_on_host`
//!   as recorded), with `host` in `meta.json`, `index.json` and messages' facts;
//! - every session folder suffixed `@<host>`, so names stay unique across machines
//!   whatever ids two machines chose;
//! - a Syncthing conflict copy (`<dir>.sync-conflict-<date>-<time>-<device>`) shown
//!   beside its session as a version of it (`version_of`), never dropped.

use super::fen::FenSource;
use super::{MessageMark, NamespaceIndex, SessionSource, SessionStat, SinceRead};
use crate::agent::Agent;
use crate::config::{PathMap, PathRule};
use crate::error::{Error, Result};
use crate::neutral::{Message, SessionFacts, SessionMessages};
use crate::store::{Store, layout, naming, open};
use crate::usage_record::{UnitUsage, UsageLedger, UsageMark, UsageUnit};
use crate::views::listing::{Listing, render_json, sort_newest_first};
use crate::views::{Snapshot, ViewKind};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Which peers to show and how their paths read here.
#[derive(Debug, Clone, Default)]
pub struct PeerOptions {
    /// `--peers DIR` (else `${XDG_STATE_HOME:-$HOME/.local/state}/fen/peers`).
    pub dir: Option<PathBuf>,
    /// `--map FROM=TO` rules, before config.toml's.
    pub maps: Vec<PathRule>,
}

impl PeerOptions {
    pub fn peers_dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(layout::default_peers_dir)
    }

    /// Every path rule: `--map` first, then `config.toml`'s (a bad file is an error
    /// naming it).
    pub fn rules(&self) -> Result<Vec<PathRule>> {
        let mut rules = self.maps.clone();
        rules.extend(crate::config::Config::load_default()?.path_map);
        Ok(rules)
    }
}

/// The peers' names (folders of `dir` that can name a host), sorted; none when `dir`
/// does not exist.
pub fn peer_names(dir: &Path) -> Vec<String> {
    let Ok(root) = open::Dir::open_root(dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = root
        .read_dir()
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, t)| t.is_dir())
        .filter_map(|(n, _)| n.to_str().map(String::from))
        .filter(|n| crate::host::is_valid_host_name(n))
        .collect();
    out.sort();
    out
}

/// The sources of each peer of `options` (its fen store, then its kept copies), with
/// caches in the store at `local_root`; `watching` for a long-lived daemon, which
/// builds the kept copies' first index itself (`PeerSource::kept_index`); otherwise
/// it is built here.
pub fn peer_sources(
    options: &PeerOptions,
    local_root: &Path,
    watching: bool,
) -> Result<Vec<Arc<PeerSource>>> {
    let dir = options.peers_dir();
    let names = peer_names(&dir);
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let rules = options.rules()?;
    let mut out = Vec::new();
    for name in names {
        out.extend(one_peer_sources(&name, &dir, &rules, local_root, watching));
    }
    if !watching {
        let kept: Vec<_> = out.iter().filter_map(|p| p.kept_index().cloned()).collect();
        super::build_indexes(&kept);
    }
    Ok(out)
}

/// The sources of peer `name` (folder `<dir>/<name>`): its fen store, then its kept
/// copies (whose first index the caller builds: `PeerSource::kept_index`).
pub fn one_peer_sources(
    name: &str,
    dir: &Path,
    rules: &[PathRule],
    local_root: &Path,
    watching: bool,
) -> Vec<Arc<PeerSource>> {
    let root = dir.join(name);
    let mut out = vec![Arc::new(PeerSource::over_fen_store(
        name,
        &root,
        local_root,
        PathMap::for_host(rules, name),
        watching,
    ))];
    out.extend(peer_kept_sources(name, &root, local_root, rules, watching));
    out
}

/// Peer `host`'s kept copies (§11, `<root>/.kept/<agent>/`), one source per agent, each
/// the agents' own source type over them (`ForeignSource::over_kept`: the agent's
/// reader, every view as it was there), showing every copy (its source is on that
/// machine), wrapped as a peer's sessions are (host, path map, `@<host>`). Their
/// caches go in `local_root`'s; nothing is written under `root`. `watching`: a source
/// for every agent, for copies that arrive later.
pub fn peer_kept_sources(
    host: &str,
    root: &Path,
    local_root: &Path,
    rules: &[PathRule],
    watching: bool,
) -> Vec<Arc<PeerSource>> {
    super::peer_kept_copies(root, host, local_root, watching)
        .into_iter()
        .map(|kept| {
            let of = kept.clone();
            let mut p = PeerSource::wrap(
                host,
                root,
                kept.clone(),
                Box::new(move |ns, dir| of.kept_cwd(ns, dir)),
                PathMap::for_host(rules, host),
            );
            p.kept = Some(kept);
            Arc::new(p)
        })
        .collect()
}

/// The folder of this machine's `.fen-cache` for peer `host`'s caches, made if the
/// local store exists; else a path that does not exist (then nothing is cached).
fn cache_root_for(local_root: &Path, host: &str) -> PathBuf {
    let path = layout::cache_dir(local_root)
        .join(layout::PEERS_CACHE_DIR)
        .join(host);
    if local_root.is_dir() {
        let made = open::Dir::open_root(local_root)
            .and_then(|r| r.walk_create(&[layout::CACHE_DIR, layout::PEERS_CACHE_DIR, host]));
        if let Err(e) = made {
            log::warn!("{}: {e}: peer {host}'s caches are not kept", path.display());
        }
    }
    path
}

/// The cwd in a fen session's header (its first line), read through the store layer.
fn fen_header_cwd(root: &Path, ns: &str, dir: &str) -> Option<String> {
    use std::io::Read;
    let (file, _) =
        open::open_in_store(root, ns, &layout::session_file_name(dir), libc::O_RDONLY).ok()?;
    let mut buf = Vec::new();
    file.take(64 << 10).read_to_end(&mut buf).ok()?;
    let line = &buf[..memchr::memchr(b'\n', &buf)?];
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    v.get("cwd")?.as_str().map(String::from)
}

/// The cwd of session `(ns, dir)` of the wrapped source, as recorded.
type CwdOf = Box<dyn Fn(&str, &str) -> Option<String> + Send + Sync>;

/// A source of another machine's sessions, under this machine's names.
pub struct PeerSource {
    host: String,
    /// `@<host>`: every session folder's suffix.
    suffix: String,
    root: PathBuf,
    inner: Arc<dyn SessionSource>,
    cwd_of: CwdOf,
    map: PathMap,
    /// The recorded cwd of each session a path rule may apply to (a header never
    /// changes; a conflict copy has a name of its own).
    cwds: Mutex<HashMap<(String, String), Option<String>>>,
    /// The wrapped namespaces a rule may apply to, with where each session goes, as
    /// of the namespace's mtime.
    moved: Mutex<Moved>,
    /// The source over the peer's kept copies it wraps, if it is one (its first index
    /// is built by whoever made it).
    kept: Option<Arc<super::foreign_source::ForeignSource>>,
}

#[derive(Default)]
struct Moved {
    root: Seen,
    namespaces: Vec<String>,
    /// wrapped namespace → (its folder as seen, [(dir, mapped namespace)]).
    sessions: HashMap<String, (Seen, Vec<(String, String)>)>,
}

/// A folder's mtime and when what was read of it was read: the reading stands for
/// the folder while its mtime is unchanged, if the reading came well after that mtime
/// (two changes within one tick of the file system's clock share an mtime).
#[derive(Default, Clone, Copy, PartialEq)]
struct Seen {
    mtime: Option<SystemTime>,
    read_at: Option<SystemTime>,
}

impl Seen {
    fn now(mtime: Option<SystemTime>) -> Seen {
        Seen {
            mtime,
            read_at: Some(SystemTime::now()),
        }
    }

    fn still(&self, mtime: Option<SystemTime>) -> bool {
        let settled = match (self.mtime, self.read_at) {
            (Some(m), Some(r)) => r.duration_since(m).is_ok_and(|d| d.as_secs() >= 2),
            _ => false,
        };
        settled && self.mtime == mtime
    }
}

impl PeerSource {
    /// Peer `host`'s fen store at `root` (read-only, caches in `local_root`'s).
    pub fn over_fen_store(
        host: &str,
        root: &Path,
        local_root: &Path,
        map: PathMap,
        watching: bool,
    ) -> PeerSource {
        let store = Arc::new(Store::open_peer(
            root.to_path_buf(),
            cache_root_for(local_root, host),
        ));
        let fen = if watching {
            FenSource::watching(store)
        } else {
            FenSource::new(store)
        };
        let header_root = root.to_path_buf();
        PeerSource::wrap(
            host,
            root,
            Arc::new(fen),
            Box::new(move |ns, dir| fen_header_cwd(&header_root, ns, dir)),
            map,
        )
    }

    /// Any source of peer `host`'s sessions (`cwd_of` tells a session's recorded cwd
    /// cheaply): how a peer's kept copies (§11) join it.
    pub fn wrap(
        host: &str,
        root: &Path,
        inner: Arc<dyn SessionSource>,
        cwd_of: CwdOf,
        map: PathMap,
    ) -> PeerSource {
        PeerSource {
            host: host.to_string(),
            suffix: crate::host::dir_suffix(host),
            root: root.to_path_buf(),
            inner,
            cwd_of,
            map,
            cwds: Mutex::new(HashMap::new()),
            moved: Mutex::new(Moved::default()),
            kept: None,
        }
    }

    /// The source over the peer's kept copies it wraps, whose first index is to be
    /// built (by the daemon's background work).
    pub fn kept_index(&self) -> Option<&Arc<super::foreign_source::ForeignSource>> {
        self.kept.as_ref()
    }

    pub fn host_name(&self) -> &str {
        &self.host
    }

    fn recorded_cwd(&self, ns: &str, dir: &str) -> Option<String> {
        let key = (ns.to_string(), dir.to_string());
        if let Some(c) = self.cwds.lock().unwrap().get(&key) {
            return c.clone();
        }
        let cwd = (self.cwd_of)(ns, dir);
        if cwd.is_some() {
            self.cwds.lock().unwrap().insert(key, cwd.clone());
        }
        cwd
    }

    /// `cwd` as it reads here.
    pub fn mapped_cwd(&self, cwd: &str) -> String {
        self.map.apply(cwd).unwrap_or_else(|| cwd.to_string())
    }

    /// The namespace here of wrapped session `ns/dir`.
    fn mapped_ns(&self, ns: &str, dir: &str) -> String {
        if !self.map.may_apply_to_namespace(ns) {
            return ns.to_string();
        }
        match self.recorded_cwd(ns, dir).and_then(|c| self.map.apply(&c)) {
            Some(mapped) => naming::slug(&mapped),
            None => ns.to_string(),
        }
    }

    /// The wrapped namespaces a rule may apply to, each with its sessions' mapped
    /// namespaces (recomputed only when a folder's mtime changed).
    fn moved_sessions(&self) -> Vec<(String, Vec<(String, String)>)> {
        if self.map.is_empty() {
            return Vec::new();
        }
        let mut m = self.moved.lock().unwrap();
        let root_mtime = self.inner.root_mtime();
        if !m.root.still(root_mtime) {
            m.root = Seen::now(root_mtime);
            m.namespaces = self
                .inner
                .namespaces()
                .unwrap_or_default()
                .into_iter()
                .filter(|ns| self.map.may_apply_to_namespace(ns))
                .collect();
        }
        let mut out = Vec::new();
        for ns in m.namespaces.clone() {
            let mtime = self.inner.namespace_mtime(&ns);
            let fresh = m.sessions.get(&ns).is_some_and(|(t, _)| t.still(mtime));
            if !fresh {
                let seen = Seen::now(mtime);
                let dirs = self.inner.session_dirs(&ns).unwrap_or_default();
                let mapped = dirs
                    .into_iter()
                    .map(|d| {
                        let to = self.mapped_ns(&ns, &d);
                        (d, to)
                    })
                    .collect();
                m.sessions.insert(ns.clone(), (seen, mapped));
            }
            out.push((ns.clone(), m.sessions[&ns].1.clone()));
        }
        out
    }

    /// The wrapped sessions `(ns, dir)` that show in namespace `ns` here.
    fn members(&self, ns: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if !self.map.may_apply_to_namespace(ns) && self.inner.has_namespace(ns) {
            out.extend(
                self.inner
                    .session_dirs(ns)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|d| (ns.to_string(), d)),
            );
        }
        for (from, sessions) in self.moved_sessions() {
            for (d, to) in sessions {
                if to == ns {
                    out.push((from.clone(), d));
                }
            }
        }
        out
    }

    /// The wrapped session behind `ns/dir` here.
    fn resolve(&self, ns: &str, dir: &str) -> Result<(String, String)> {
        let missing = || Error::not_found(format!("no session {ns}/{dir}"));
        let inner_dir = dir.strip_suffix(&self.suffix).ok_or_else(missing)?;
        if !self.map.may_apply_to_namespace(ns) {
            if self.inner.session_stat(ns, inner_dir).is_ok() {
                return Ok((ns.to_string(), inner_dir.to_string()));
            }
        } else if self.inner.session_stat(ns, inner_dir).is_ok()
            && self.mapped_ns(ns, inner_dir) == ns
        {
            return Ok((ns.to_string(), inner_dir.to_string()));
        }
        for (from, sessions) in self.moved_sessions() {
            if sessions.iter().any(|(d, to)| d == inner_dir && to == ns) {
                return Ok((from, inner_dir.to_string()));
            }
        }
        Err(missing())
    }

    /// A wrapped listing as it shows here.
    fn listing_here(&self, mut l: Listing) -> Listing {
        let recorded = l.cwd.clone();
        l.cwd = recorded.as_deref().map(|c| self.mapped_cwd(c));
        l.cwd_on_host = recorded;
        l.host = Some(self.host.clone());
        l.version_of = conflict_original(&l.dir).map(|d| format!("{d}{}", self.suffix));
        l.dir = format!("{}{}", l.dir, self.suffix);
        l
    }

    fn facts_here(&self, mut f: SessionFacts, ns: &str, dir: &str) -> SessionFacts {
        let recorded = f.cwd.clone();
        f.cwd = recorded.as_deref().map(|c| self.mapped_cwd(c));
        f.cwd_on_host = recorded;
        f.host = Some(self.host.clone());
        f.namespace = ns.to_string();
        f.dir = dir.to_string();
        f
    }

    fn meta_here(&self, ns: &str, dir: &str, snap: Snapshot) -> Result<Snapshot> {
        let bytes = snap.read_at(0, snap.size().min(64 << 20) as usize)?;
        let recorded: Option<String> = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("cwd")?.as_str().map(String::from));
        let mapped = recorded.as_deref().map(|c| self.mapped_cwd(c));
        let mut set = vec![
            ("dir", dir.into()),
            ("namespace", naming::mount_name(ns).into()),
            ("cwd", mapped.into()),
            ("host", self.host.clone().into()),
            ("cwd_on_host", recorded.into()),
        ];
        if let Some(orig) = conflict_original(dir.strip_suffix(&self.suffix).unwrap_or(dir)) {
            set.push(("version_of", format!("{orig}{}", self.suffix).into()));
        }
        let out = crate::views::meta::with_fields(&bytes, &set);
        Ok(Snapshot::Bytes(Arc::new(out)))
    }
}

/// The session a Syncthing conflict copy's folder name is a version of:
/// `<dir>.sync-conflict-YYYYMMDD-HHMMSS-<device>` → `<dir>`.
pub fn conflict_original(dir: &str) -> Option<&str> {
    let (orig, tail) = dir.rsplit_once(".sync-conflict-")?;
    let mut parts = tail.split('-');
    let date = parts.next()?;
    let time = parts.next()?;
    let device = parts.next()?;
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    (digits(date, 8)
        && digits(time, 6)
        && !device.is_empty()
        && device.bytes().all(|b| b.is_ascii_alphanumeric())
        && parts.next().is_none()
        && !orig.is_empty())
    .then_some(orig)
}

impl SessionSource for PeerSource {
    fn agent(&self) -> Agent {
        self.inner.agent()
    }

    fn writable(&self) -> bool {
        false
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn host(&self) -> Option<&str> {
        Some(&self.host)
    }

    fn root_mtime(&self) -> Option<SystemTime> {
        self.inner.root_mtime()
    }

    fn namespaces(&self) -> Result<Vec<String>> {
        let mut out: BTreeSet<String> = self
            .inner
            .namespaces()?
            .into_iter()
            .filter(|ns| !self.map.may_apply_to_namespace(ns))
            .collect();
        for (_, sessions) in self.moved_sessions() {
            out.extend(sessions.into_iter().map(|(_, to)| to));
        }
        Ok(out.into_iter().collect())
    }

    fn has_namespace(&self, ns: &str) -> bool {
        (!self.map.may_apply_to_namespace(ns) && self.inner.has_namespace(ns))
            || !self.members(ns).is_empty()
    }

    fn namespace_mtime(&self, ns: &str) -> Option<SystemTime> {
        // O(1) for a namespace no rule touches (every getattr asks): no listing.
        let mut t = if self.map.may_apply_to_namespace(ns) {
            None
        } else {
            self.inner.namespace_mtime(ns)
        };
        for (from, sessions) in self.moved_sessions() {
            if sessions.iter().any(|(_, to)| to == ns) {
                t = t.max(self.inner.namespace_mtime(&from));
            }
        }
        t
    }

    fn session_dirs(&self, ns: &str) -> Result<Vec<String>> {
        let mut out: Vec<String> = self
            .members(ns)
            .into_iter()
            .map(|(_, d)| format!("{d}{}", self.suffix))
            .collect();
        out.sort();
        Ok(out)
    }

    fn session_stat(&self, ns: &str, dir: &str) -> Result<SessionStat> {
        let (n, d) = self.resolve(ns, dir)?;
        self.inner.session_stat(&n, &d)
    }

    fn listings(&self, ns: &str) -> Result<Vec<Listing>> {
        let mut by_ns: HashMap<String, BTreeSet<String>> = HashMap::new();
        for (n, d) in self.members(ns) {
            by_ns.entry(n).or_default().insert(d);
        }
        let mut out = Vec::new();
        for (n, dirs) in by_ns {
            out.extend(
                self.inner
                    .listings(&n)?
                    .into_iter()
                    .filter(|l| dirs.contains(&l.dir))
                    .map(|l| self.listing_here(l)),
            );
        }
        sort_newest_first(&mut out);
        Ok(out)
    }

    fn index(&self, ns: &str) -> Result<NamespaceIndex> {
        let all = self.listings(ns)?;
        Ok(NamespaceIndex {
            latest: all.first().map(|l| l.dir.clone()),
            index_json: Arc::new(render_json(&all)),
        })
    }

    fn view_size(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<u64> {
        if kind == ViewKind::Meta {
            return self.snapshot(ns, dir, kind, writers).map(|s| s.size());
        }
        let (n, d) = self.resolve(ns, dir)?;
        self.inner.view_size(&n, &d, kind, writers)
    }

    fn snapshot(&self, ns: &str, dir: &str, kind: ViewKind, writers: u64) -> Result<Snapshot> {
        let (n, d) = self.resolve(ns, dir)?;
        let snap = self.inner.snapshot(&n, &d, kind, writers)?;
        if kind == ViewKind::Meta {
            return self.meta_here(ns, dir, snap);
        }
        Ok(snap)
    }

    fn trash(&self, ns: &str, dir: &str) -> Result<()> {
        Err(Error::new(
            libc::EROFS,
            format!(
                "{ns}/{dir} is a session of another machine ({}); fen-fs does not delete it",
                self.host
            ),
        ))
    }

    fn persist(&self) {
        self.inner.persist();
    }

    fn messages(&self, ns: &str, dir: &str, history: bool) -> Result<SessionMessages> {
        let (n, d) = self.resolve(ns, dir)?;
        let mut s = self.inner.messages(&n, &d, history)?;
        s.facts = self.facts_here(s.facts, ns, dir);
        Ok(s)
    }

    fn each_message(
        &self,
        ns: &str,
        dir: &str,
        history: bool,
        each: &mut dyn FnMut(&SessionFacts, Message),
    ) -> Result<SessionFacts> {
        let (n, d) = self.resolve(ns, dir)?;
        let mut facts = None;
        let got = self.inner.each_message(&n, &d, history, &mut |f, m| {
            let here = facts.get_or_insert_with(|| self.facts_here(f.clone(), ns, dir));
            each(here, m)
        })?;
        Ok(self.facts_here(got, ns, dir))
    }

    fn each_message_since(
        &self,
        ns: &str,
        dir: &str,
        since: MessageMark,
        each: &mut dyn FnMut(&SessionFacts, u64, Message) -> std::ops::ControlFlow<()>,
    ) -> Result<SinceRead> {
        let (n, d) = self.resolve(ns, dir)?;
        let mut facts = None;
        let mut read = self
            .inner
            .each_message_since(&n, &d, since, &mut |f, at, m| {
                let here = facts.get_or_insert_with(|| self.facts_here(f.clone(), ns, dir));
                each(here, at, m)
            })?;
        read.facts = self.facts_here(read.facts, ns, dir);
        Ok(read)
    }

    /// The wrapped source's usage (§13), each record this peer's: its `host`, its cwd
    /// as it reads here (a peer's fen store records none; its kept copies of other
    /// agents' sessions do).
    fn usage(&self, ledger: &mut dyn UsageLedger) -> Result<()> {
        let mut here = PeerUsage {
            ledger,
            peer: self,
            host: Arc::from(self.host.as_str()),
            cwds: HashMap::new(),
        };
        self.inner.usage(&mut here)
    }
}

/// A peer's usage records on their way to the ledger, made this peer's.
struct PeerUsage<'a> {
    ledger: &'a mut dyn UsageLedger,
    peer: &'a PeerSource,
    host: Arc<str>,
    /// Each recorded cwd as mapped here (a unit's records share a few).
    cwds: HashMap<Arc<str>, Arc<str>>,
}

impl UsageLedger for PeerUsage<'_> {
    fn since(&mut self, unit: &UsageUnit) -> Option<UsageMark> {
        self.ledger.since(unit)
    }

    fn took(&mut self, unit: &UsageUnit, mut read: UnitUsage) {
        for r in &mut read.records {
            r.host = Some(self.host.clone());
            if let Some(c) = r.cwd.take() {
                let peer = self.peer;
                let mapped = self
                    .cwds
                    .entry(c)
                    .or_insert_with_key(|c| Arc::from(peer.mapped_cwd(c)));
                r.cwd = Some(mapped.clone());
            }
        }
        self.ledger.took(unit, read);
    }

    fn stop(&self) -> bool {
        self.ledger.stop()
    }

    fn pause(&self) {
        self.ledger.pause()
    }

    fn workers(&self) -> usize {
        self.ledger.workers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_copies_name_their_session() {
        let d = "2026-01-02T03-04-05-006Z_0193abcd";
        assert_eq!(
            conflict_original(&format!("{d}.sync-conflict-20260102-030405-ABCDEFG")),
            Some(d)
        );
        assert_eq!(conflict_original(d), None);
        assert_eq!(conflict_original("x.sync-conflict-2026-030405-ABC"), None);
        assert_eq!(
            conflict_original(".sync-conflict-20260102-030405-ABC"),
            None
        );
    }
}
