//! The namespace catalog: one `Listing` per session for `index.json`, `latest` and
//! `fen-fs list`. A listing comes from the session's in-memory index when that is
//! current, else from the persisted cache when the file's stat (dev, inode, size,
//! mtime) is unchanged, else from parsing the file.
//!
//! The persisted cache lives in `layout::listing_cache` (a folder with no
//! `*.jsonl`, so the store ignores it). It is written atomically (temp file + rename),
//! validated per file, and safe to delete: it only saves a remount from re-reading
//! unchanged transcripts.

use crate::error::Result;
use crate::json::JsonStr;
use crate::store::atomic::checksum;
use crate::store::index::FileStamp;
use crate::store::layout::CacheFile;
use crate::store::{Store, layout};
use crate::views::listing::{Listing, render_json, sort_newest_first};
use serde::de::{Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The catalog of one mount (or one CLI run): persisted caches loaded once per
/// namespace, and the newest session update seen per namespace (its folder mtime).
#[derive(Default)]
pub struct Catalog {
    caches: Mutex<HashMap<String, NamespaceCache>>,
    last_update: Mutex<HashMap<String, SystemTime>>,
    rendered: Mutex<HashMap<String, Rendered>>,
    /// One render of a namespace at a time: a slow render must not store its older
    /// result over a newer one after the namespace was marked clean.
    render_locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Set by a long-lived process (the daemon): then an unchanged namespace is
    /// served without a `stat` per session file.
    watch: Option<crate::sources::watch::StoreWatch>,
}

/// `index.json` and `latest` of a namespace as of one fingerprint: reused while no
/// session file was added, removed or changed (the check is one `stat` per file).
#[derive(Clone)]
pub struct Rendered {
    fingerprint: u64,
    pub index_json: Arc<Vec<u8>>,
    pub latest: Option<String>,
}

/// A hash of every session file's name and stat: any append, rewrite, new or deleted
/// file changes it.
fn fingerprint(files: &[(String, std::fs::Metadata)]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    // index.json names this machine (§12): a render for another name is stale.
    crate::host::this_host().hash(&mut h);
    for (dir, meta) in files {
        dir.hash(&mut h);
        FileStamp::of(meta).hash(&mut h);
    }
    h.finish()
}

const CACHE_VERSION: u32 = 3;

#[derive(Serialize, Deserialize, Default)]
struct NamespaceCache {
    version: u32,
    sessions: HashMap<String, CachedListing>,
}

#[derive(Serialize, Deserialize, Clone)]
struct CachedListing {
    /// The state of the file the listing describes.
    stamp: FileStamp,
    listing: Listing,
}

fn cache_path(store: &Store, ns: &str) -> CacheFile {
    layout::listing_cache(&store.cache_root, ns)
}

/// Cache files carry `<checksum hex>\n` before their content; a file without the
/// right one is damaged (or not ours) and ignored.
fn read_checked(c: &CacheFile) -> Option<Vec<u8>> {
    let mut bytes = crate::store::atomic::read_file(c, MAX_CACHE_BYTES)?;
    let nl = memchr::memchr(b'\n', &bytes)?;
    let sum = u64::from_str_radix(std::str::from_utf8(&bytes[..nl]).ok()?, 16).ok()?;
    if checksum(&[&bytes[nl + 1..]]) != sum {
        return None;
    }
    // In place: a copy of a large namespace's cache is megabytes of fresh pages.
    bytes.drain(..=nl);
    Some(bytes)
}

fn write_checked(c: &CacheFile, rest: &[u8]) {
    let mut bytes = format!("{:x}\n", checksum(&[rest])).into_bytes();
    bytes.extend_from_slice(rest);
    crate::store::atomic::replace_file(c, &bytes);
}

/// Larger cache files are not read: no namespace's listings come near it.
const MAX_CACHE_BYTES: u64 = 256 << 20;

fn load(store: &Store, ns: &str) -> NamespaceCache {
    read_checked(&cache_path(store, ns))
        .and_then(|b| serde_json::from_slice::<NamespaceCache>(&b).ok())
        .filter(|c| c.version == CACHE_VERSION)
        // A listing filed under another session's name is not that session's.
        .filter(|c| c.sessions.iter().all(|(dir, l)| l.listing.dir == *dir))
        // Listings made under another host name (§12) are made again.
        .filter(|c| {
            c.sessions
                .values()
                .all(|l| l.listing.host.as_deref() == Some(crate::host::this_host()))
        })
        .unwrap_or_default()
}

/// The rendered `index.json` persisted as `<fingerprint hex> <latest>\n<bytes>`: after a
/// remount, one stat pass that finds every file unchanged serves it as is.
fn rendered_path(store: &Store, ns: &str) -> CacheFile {
    layout::rendered_index_cache(&store.cache_root, ns)
}

/// The persisted render, if intact and true to `files`: `latest` names one of them
/// and `index.json` is an array listing exactly them, newest first.
fn load_rendered(
    store: &Store,
    ns: &str,
    files: &[(String, std::fs::Metadata)],
) -> Option<Rendered> {
    let mut bytes = read_checked(&rendered_path(store, ns))?;
    let nl = memchr::memchr(b'\n', &bytes)?;
    let head = std::str::from_utf8(&bytes[..nl]).ok()?;
    let (fp, latest) = head.split_once(' ')?;
    let fingerprint = u64::from_str_radix(fp, 16).ok()?;
    let listed: Vec<ListedDir> = serde_json::from_slice(&bytes[nl + 1..]).ok()?;
    let mut dirs: Vec<&str> = listed.iter().map(|l| l.0.as_ref()).collect();
    let first = dirs.first().map(|d| d.to_string());
    dirs.sort_unstable();
    let mut names: Vec<&str> = files.iter().map(|(d, _)| d.as_str()).collect();
    // `session_files` lists in name order already.
    if !names.is_sorted() {
        names.sort_unstable();
    }
    if dirs != names || first.as_deref() != Some(latest).filter(|l| !l.is_empty()) {
        return None;
    }
    drop(listed);
    bytes.drain(..=nl);
    Some(Rendered {
        fingerprint,
        index_json: Arc::new(bytes),
        latest: first,
    })
}

/// The `dir` of one object of a rendered `index.json`, the other members checked as
/// `serde_json::Value` would check them but not kept: built as `Value`s, the 10,000
/// objects of a large namespace cost ~18 ms to build and drop on every remount.
struct ListedDir<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for ListedDir<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = ListedDir<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a listing object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut dir = None;
                while let Some(JsonStr(key)) = map.next_key()? {
                    if key != "dir" {
                        map.next_value::<Checked>()?;
                    } else if dir.replace(map.next_value::<JsonStr>()?.0).is_some() {
                        return Err(A::Error::duplicate_field("dir"));
                    }
                }
                dir.map(ListedDir)
                    .ok_or_else(|| A::Error::missing_field("dir"))
            }
        }
        d.deserialize_map(Object)
    }
}

/// Any JSON value, read as `serde_json::Value` reads one (strings UTF-8, numbers in
/// range), but nothing kept: serde's `IgnoredAny` would let both through unchecked.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(Checked)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Checked;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

fn save_rendered(store: &Store, ns: &str, r: &Rendered) {
    if r.latest.as_deref().is_some_and(|l| l.contains('\n')) {
        return; // the header line could not hold it; the next remount re-renders
    }
    let mut bytes = format!(
        "{:x} {}\n",
        r.fingerprint,
        r.latest.as_deref().unwrap_or("")
    )
    .into_bytes();
    bytes.extend_from_slice(&r.index_json);
    write_checked(&rendered_path(store, ns), &bytes);
}

/// Best effort: a cache that cannot be written only costs the next remount a parse.
fn save(store: &Store, ns: &str, cache: &NamespaceCache) {
    match serde_json::to_vec(cache) {
        Ok(bytes) => write_checked(&cache_path(store, ns), &bytes),
        Err(e) => log::warn!("listing cache of {ns}: {e}"),
    }
}

impl Catalog {
    /// A catalog that watches namespaces with inotify (for the daemon; a one-shot CLI
    /// run gains nothing from it).
    pub fn watching() -> Self {
        Catalog {
            watch: crate::sources::watch::StoreWatch::new(),
            ..Default::default()
        }
    }

    /// Records that a session of `ns` was updated at `t` (a file mtime).
    pub fn observe(&self, ns: &str, t: SystemTime) {
        let mut map = self.last_update.lock().unwrap();
        match map.get_mut(ns) {
            // Once per append: no key allocated for a namespace already seen.
            Some(e) => *e = (*e).max(t),
            None => {
                map.insert(ns.to_string(), t);
            }
        }
    }

    /// The newest session update this catalog has seen in `ns`.
    pub fn last_update(&self, ns: &str) -> Option<SystemTime> {
        self.last_update.lock().unwrap().get(ns).copied()
    }

    /// Every session of namespace `ns`, newest first.
    pub fn namespace(&self, store: &Store, ns: &str) -> Result<Vec<Listing>> {
        let files = store.session_files(ns)?;
        self.listings(store, ns, &files)
    }

    fn listings(
        &self,
        store: &Store,
        ns: &str,
        files: &[(String, std::fs::Metadata)],
    ) -> Result<Vec<Listing>> {
        // Every listing of the mount waits for this lock: a background thread that
        // parses sessions under it does not pause in the parse.
        let _holding = crate::store::yielding::Holding::now();
        let mut caches = self.caches.lock().unwrap();
        let cache = caches
            .entry(ns.to_string())
            .or_insert_with(|| load(store, ns));
        let (out, changed, newest) = list(store, ns, cache, files);
        if changed {
            save(store, ns, cache);
        }
        drop(caches);
        if let Some(newest) = newest {
            self.observe(ns, newest);
        }
        Ok(out)
    }

    /// `index.json` and `latest` of `ns`, re-rendered only when a file changed.
    pub fn rendered(&self, store: &Store, ns: &str) -> Result<Rendered> {
        let lock = self
            .render_locks
            .lock()
            .unwrap()
            .entry(ns.to_string())
            .or_default()
            .clone();
        let _one_at_a_time = lock.lock().unwrap();
        if let Some(w) = &self.watch {
            if !w.changed(ns, &layout::namespace_path(&store.root, ns))
                && let Some(r) = self.rendered.lock().unwrap().get(ns)
            {
                return Ok(r.clone());
            }
            // Anything that happens from here on marks it changed again.
            w.mark_clean(ns);
        }
        let files = store.session_files(ns)?;
        let fp = fingerprint(&files);
        if let Some(r) = self.rendered.lock().unwrap().get(ns)
            && r.fingerprint == fp
        {
            return Ok(r.clone());
        }
        let r = match load_rendered(store, ns, &files).filter(|r| r.fingerprint == fp) {
            Some(r) => r,
            None => {
                let listings = self.listings(store, ns, &files)?;
                let r = Rendered {
                    fingerprint: fp,
                    index_json: Arc::new(render_json(&listings)),
                    latest: listings.first().map(|l| l.dir.clone()),
                };
                save_rendered(store, ns, &r);
                r
            }
        };
        self.rendered
            .lock()
            .unwrap()
            .insert(ns.to_string(), r.clone());
        Ok(r)
    }
}

/// Sessions to parse before a listing reads them on a few threads.
const PARALLEL_FROM: usize = 16;
/// Threads reading sessions for a listing: more than the cores (two here), so that
/// while some wait for the disk the others parse (S2: 1.63x a cold `cat` with two,
/// 1.50x with four).
const LISTING_WORKERS: usize = 4;

/// A session's listing and the file state it is of, if it could be read.
type Parsed = Option<(Listing, FileStamp)>;

/// Listings of `ns` (newest first), whether `cache` changed, and the newest file mtime.
fn list(
    store: &Store,
    ns: &str,
    cache: &mut NamespaceCache,
    files: &[(String, std::fs::Metadata)],
) -> (Vec<Listing>, bool, Option<SystemTime>) {
    // The sessions the cache does not have as they are now: parsed first, on a few
    // threads when there are many (a first listing of a peer's store read 2,400
    // sessions one after the other, its disk reads never beside a parse).
    let stale: Vec<usize> = (0..files.len())
        .filter(|&i| {
            let (dir, meta) = &files[i];
            !cache
                .sessions
                .get(dir)
                .is_some_and(|c| c.stamp == FileStamp::of(meta))
        })
        .collect();
    let mut parsed = parse_all(store, ns, files, &stale).into_iter();
    let mut stale = stale.into_iter().peekable();
    let mut changed = false;
    let mut newest: Option<SystemTime> = None;
    let mut out = Vec::new();
    for (i, (dir, meta)) in files.iter().enumerate() {
        // A session deleted mid-listing is simply not in `files`.
        let listing = if stale.next_if_eq(&i).is_some() {
            let Some((l, file)) = parsed.next().flatten() else {
                continue;
            };
            changed = true;
            cache.sessions.insert(
                dir.clone(),
                CachedListing {
                    stamp: file,
                    listing: l.clone(),
                },
            );
            l
        } else {
            match cache.sessions.get(dir) {
                Some(c) => c.listing.clone(),
                None => continue,
            }
        };
        newest = newest.max(meta.modified().ok());
        out.push(listing);
    }
    if cache.sessions.len() != files.len() {
        let present: std::collections::HashSet<&String> = files.iter().map(|(d, _)| d).collect();
        cache.sessions.retain(|d, _| present.contains(d));
        changed = true;
    }
    cache.version = CACHE_VERSION;
    sort_newest_first(&mut out);
    (out, changed, newest)
}

/// The listing of each session `files[i]` for `i` in `which`, in that order (`None`
/// for one that cannot be read): the in-memory index if it is current, else a parse
/// (incremental when the index has seen an earlier state of the file).
fn parse_all(
    store: &Store,
    ns: &str,
    files: &[(String, std::fs::Metadata)],
    which: &[usize],
) -> Vec<Parsed> {
    let parse = |i: usize| {
        let dir = &files[i].0;
        let read = {
            let session = store.session_unchecked(ns, dir);
            session
                .current()
                .map(|idx| (Listing::of(&session, &idx), idx.file))
        };
        store.release_if_idle(ns, dir);
        read.ok()
    };
    if which.len() < PARALLEL_FROM {
        return which.iter().map(|&i| parse(i)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Parsed> = vec![None; which.len()];
    let done: Vec<Vec<(usize, Parsed)>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..LISTING_WORKERS)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&i) = which.get(k) else { break };
                        mine.push((k, parse(i)));
                    }
                    mine
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a listing thread panicked"))
            .collect()
    });
    for (k, l) in done.into_iter().flatten() {
        out[k] = l;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(json: &str) -> Option<Vec<String>> {
        let listed: Vec<ListedDir> = serde_json::from_str(json).ok()?;
        Some(listed.into_iter().map(|l| l.0.into_owned()).collect())
    }

    #[test]
    fn listed_dirs_are_read_from_objects_only() {
        let l = |dir: &str, title: &str| Listing {
            dir: dir.into(),
            id: "i".into(),
            cwd: Some("/p".into()),
            title: Some(title.into()),
            preview: None,
            created_at: None,
            updated_at: Some("2026-01-01T00:00:00Z".into()),
            messages: 3,
            agent: Default::default(),
            host: None,
            cwd_on_host: None,
            version_of: None,
            ..Default::default()
        };
        let json = render_json(&[l("b", "x \"q\" {[ \\"), l("a\"\\\n", "y")]);
        let got = dirs(std::str::from_utf8(&json).unwrap());
        assert_eq!(got, Some(vec!["b".into(), "a\"\\\n".into()]));
        assert_eq!(dirs("[]"), Some(vec![]));
        assert_eq!(
            dirs(r#"[{"x":{"dir":"n"},"dir":"a"}]"#),
            Some(vec!["a".into()])
        );
        for bad in [
            r#"{"dir":"a"}"#,
            r#"[["a"]]"#,
            r#"["a"]"#,
            r#"[{"id":"a"}]"#,
            r#"[{"dir":1}]"#,
            r#"[{"dir":null}]"#,
            r#"[{"dir":"a","dir":"b"}]"#,
            r#"[{"dir":"a"}] x"#,
            r#"[{"dir":"a","x":}]"#,
            r#"[{"dir":"a"},]"#,
            r#"[{"dir":"a","n":1e400}]"#,
            r#"[{"dir":"a","x":[{"y":-1e999}]}]"#,
            r#"[{"dir":"a","x":"\ud800"}]"#,
        ] {
            assert_eq!(dirs(bad), None, "{bad}");
        }
        // What serde_json::Value refuses is refused: bytes that are not UTF-8 too.
        let mut bytes = br#"[{"dir":"a","title":"x"}]"#.to_vec();
        bytes[20] = 0xff;
        assert!(serde_json::from_slice::<Vec<serde_json::Value>>(&bytes).is_err());
        assert!(serde_json::from_slice::<Vec<ListedDir>>(&bytes).is_err());
        let fine =
            br#"[{"dir":"a","n":[1,-2,3.5e10,18446744073709551616,true,null],"o":{"k":{}}}]"#;
        assert!(serde_json::from_slice::<Vec<ListedDir>>(fine).is_ok());
    }
}
