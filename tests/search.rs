//! Search in-process, over sources made up in memory (no mount): the query language
//! end to end, ranking, filters, compacted messages, growth and compactions, the
//! index's checks (damage, an unwritable folder) and two processes sharing it.

use fen_fs::agent::Agent;
use fen_fs::error::{Error, Result};
use fen_fs::neutral::{Message, Part, Role, SessionFacts, SessionMessages};
use fen_fs::search::{Request, Search};
use fen_fs::sources::{NamespaceIndex, SessionSource, SessionStat};
use fen_fs::views::listing::Listing;
use fen_fs::views::{Snapshot, ViewKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source whose sessions are values: `set` replaces one (its stamp moves on).
struct Fake {
    agent: Agent,
    root: PathBuf,
    sessions: Mutex<BTreeMap<(String, String), (SessionStat, SessionMessages)>>,
    reads: Mutex<u64>,
}

impl Fake {
    fn new(agent: Agent, root: &Path) -> Arc<Fake> {
        Arc::new(Fake {
            agent,
            root: root.to_path_buf(),
            sessions: Mutex::new(BTreeMap::new()),
            reads: Mutex::new(0),
        })
    }

    fn set(&self, cwd: &str, id: &str, title: Option<&str>, messages: Vec<Message>) {
        let ns = fen_fs::store::naming::slug(cwd);
        let dir = format!("2026-01-01T00-00-00-000Z_{}-{id}", self.agent.name());
        let mut all = self.sessions.lock().unwrap();
        let size = all
            .get(&(ns.clone(), dir.clone()))
            .map_or(100, |(s, _)| s.size + 1);
        let updated = messages
            .iter()
            .filter_map(|m| m.timestamp.clone())
            .max()
            .unwrap_or_else(|| "2026-01-01T00:00:00Z".into());
        let facts = SessionFacts {
            agent: self.agent,
            id: id.into(),
            namespace: ns.clone(),
            dir: dir.clone(),
            cwd: Some(cwd.into()),
            title: title.map(String::from),
            preview: None,
            created_at: Some("2026-01-01T00:00:00Z".into()),
            updated_at: Some(updated),
            source_path: self.root.join(id),
            resumable: true,
            not_resumable_reason: None,
            host: None,
            cwd_on_host: None,
            ..Default::default()
        };
        let stat = SessionStat {
            size,
            mtime: UNIX_EPOCH + Duration::from_secs(size),
        };
        all.insert((ns, dir), (stat, SessionMessages { facts, messages }));
    }

    fn remove(&self, id: &str) {
        self.sessions
            .lock()
            .unwrap()
            .retain(|(_, d), _| !d.ends_with(&format!("-{id}")));
    }
}

impl SessionSource for Fake {
    fn agent(&self) -> Agent {
        self.agent
    }
    fn writable(&self) -> bool {
        false
    }
    fn root(&self) -> &Path {
        &self.root
    }
    fn root_mtime(&self) -> Option<SystemTime> {
        None
    }
    fn namespaces(&self) -> Result<Vec<String>> {
        let mut v: Vec<String> = self
            .sessions
            .lock()
            .unwrap()
            .keys()
            .map(|(n, _)| n.clone())
            .collect();
        v.dedup();
        Ok(v)
    }
    fn has_namespace(&self, ns: &str) -> bool {
        self.sessions.lock().unwrap().keys().any(|(n, _)| n == ns)
    }
    fn namespace_mtime(&self, ns: &str) -> Option<SystemTime> {
        self.has_namespace(ns).then_some(UNIX_EPOCH)
    }
    fn session_dirs(&self, ns: &str) -> Result<Vec<String>> {
        Ok(self
            .sessions
            .lock()
            .unwrap()
            .keys()
            .filter(|(n, _)| n == ns)
            .map(|(_, d)| d.clone())
            .collect())
    }
    fn session_stat(&self, ns: &str, dir: &str) -> Result<SessionStat> {
        self.sessions
            .lock()
            .unwrap()
            .get(&(ns.into(), dir.into()))
            .map(|(s, _)| *s)
            .ok_or_else(|| Error::not_found("no session"))
    }
    fn listings(&self, _ns: &str) -> Result<Vec<Listing>> {
        Ok(Vec::new())
    }
    fn index(&self, _ns: &str) -> Result<NamespaceIndex> {
        Err(Error::not_found("no index"))
    }
    fn view_size(&self, _: &str, _: &str, _: ViewKind, _: u64) -> Result<u64> {
        Err(Error::not_found("no views"))
    }
    fn snapshot(&self, _: &str, _: &str, _: ViewKind, _: u64) -> Result<Snapshot> {
        Err(Error::not_found("no views"))
    }
    fn messages(&self, ns: &str, dir: &str, history: bool) -> Result<SessionMessages> {
        assert!(history, "search asks for the whole history");
        *self.reads.lock().unwrap() += 1;
        self.sessions
            .lock()
            .unwrap()
            .get(&(ns.into(), dir.into()))
            .map(|(_, m)| m.clone())
            .ok_or_else(|| Error::not_found("no session"))
    }
}

fn text(role: Role, t: &str) -> Message {
    Message::new(role, vec![Part::Text { text: t.into() }])
}

fn at(mut m: Message, ts: &str, entry: &str) -> Message {
    m.timestamp = Some(ts.into());
    m.entry = Some(entry.into());
    m
}

fn ask(s: &Search, q: &str) -> Vec<fen_fs::search::hits::Hit> {
    s.answer(&Request::parse(q).unwrap()).unwrap().hits
}

fn ids(s: &Search, q: &str) -> Vec<String> {
    ask(s, q).into_iter().map(|h| h.id).collect()
}

struct World {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    claude: Arc<Fake>,
    codex: Arc<Fake>,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let claude = Fake::new(Agent::Claude, &tmp.path().join("claude"));
    let codex = Fake::new(Agent::Codex, &tmp.path().join("codex"));
    claude.set(
        "/home/u/web",
        "c1",
        Some("Fix the flaky test"),
        vec![
            at(
                text(Role::User, "The login test is flaky on CI"),
                "2026-01-02T10:00:00Z",
                "e1",
            ),
            at(
                Message::new(
                    Role::Assistant,
                    vec![Part::ToolCall {
                        id: "t1".into(),
                        name: "Bash".into(),
                        input: serde_json::json!({"command": "cargo test --package login"}),
                    }],
                ),
                "2026-01-02T10:01:00Z",
                "e2",
            ),
        ],
    );
    codex.set(
        "/home/u/api",
        "x1",
        None,
        vec![
            at(
                text(Role::User, "Deploy the API to staging, not production"),
                "2026-03-01T09:00:00Z",
                "l3",
            ),
            at(
                text(Role::Assistant, "Deployment to staging done. Café ready."),
                "2026-03-01T09:05:00Z",
                "l4",
            ),
        ],
    );
    World {
        _tmp: tmp,
        store,
        claude,
        codex,
    }
}

impl World {
    fn sources(&self) -> Vec<Arc<dyn SessionSource>> {
        vec![self.claude.clone(), self.codex.clone()]
    }

    fn search(&self) -> Search {
        let s = Search::open(Some(&self.store), self.sources(), true);
        s.update(&mut |_| {}).unwrap();
        s
    }
}

#[test]
fn words_phrases_exclusions_prefixes_and_case() {
    let w = world();
    let s = w.search();
    assert_eq!(ids(&s, "flaky"), ["c1"]);
    assert_eq!(ids(&s, "FLAKY login"), ["c1"]);
    assert_eq!(
        ids(&s, "flaky staging"),
        Vec::<String>::new(),
        "one message holds all words"
    );
    assert_eq!(ids(&s, "\"to staging\""), ["x1"]);
    assert_eq!(ids(&s, "\"staging to\""), Vec::<String>::new());
    assert_eq!(ids(&s, "deploy*"), ["x1"]);
    assert_eq!(
        ids(&s, "staging -production"),
        ["x1"],
        "the assistant's message"
    );
    let h = &ask(&s, "staging -production")[0];
    assert_eq!(h.role, "assistant");
    assert_eq!(h.entry.as_deref(), Some("l4"));
    assert_eq!(ids(&s, "cafe"), ["x1"], "accents fold");
    assert_eq!(ids(&s, "Bash"), ["c1"], "tool names");
    assert_eq!(ids(&s, "package"), ["c1"], "tool inputs");
    assert_eq!(ids(&s, "\"cargo test\""), ["c1"]);
}

#[test]
fn hits_carry_the_session_and_the_message() {
    let w = world();
    let s = w.search();
    let h = &ask(&s, "flaky")[0];
    assert_eq!(h.agent, "claude");
    assert_eq!(h.cwd.as_deref(), Some("/home/u/web"));
    assert_eq!(h.namespace, "home-u-web");
    assert_eq!(h.dir, "2026-01-01T00-00-00-000Z_claude-c1");
    assert_eq!(h.path, "home-u-web/2026-01-01T00-00-00-000Z_claude-c1");
    assert_eq!(h.title.as_deref(), Some("Fix the flaky test"));
    assert!(h.in_conversation);
    assert!(h.snippet.contains("**flaky**"), "{}", h.snippet);
    assert!(h.score > 0.0);
    let jsonl = s.answer(&Request::parse("flaky").unwrap()).unwrap().jsonl();
    let line: serde_json::Value =
        serde_json::from_slice(jsonl.split(|b| *b == b'\n').next().unwrap()).unwrap();
    for key in [
        "id",
        "agent",
        "cwd",
        "namespace",
        "dir",
        "title",
        "role",
        "timestamp",
        "entry",
        "in_conversation",
        "snippet",
        "score",
    ] {
        assert!(line.get(key).is_some(), "{key} in {line}");
    }
}

#[test]
fn one_line_per_session_best_first() {
    let w = world();
    // Many messages mention the word in one session; one short one in another.
    let many: Vec<Message> = (0..30)
        .map(|i| {
            text(
                Role::User,
                &format!("message {i} about a long topic and also widget"),
            )
        })
        .collect();
    w.claude.set("/home/u/a", "many", None, many);
    w.claude.set(
        "/home/u/b",
        "short",
        None,
        vec![text(Role::User, "widget widget")],
    );
    let s = w.search();
    let got = ids(&s, "widget");
    assert_eq!(
        got,
        ["short", "many"],
        "one line each, the denser match first"
    );
    let mut r = Request::parse("widget").unwrap();
    r.limit = 1;
    assert_eq!(s.answer(&r).unwrap().hits.len(), 1);
}

#[test]
fn filters_agent_cwd_since() {
    let w = world();
    w.codex.set(
        "/home/u/web",
        "x2",
        None,
        vec![at(
            text(Role::User, "common word"),
            "2026-01-05T00:00:00Z",
            "a",
        )],
    );
    w.claude.set(
        "/home/u/web",
        "c2",
        None,
        vec![at(
            text(Role::User, "common word"),
            "2026-02-05T00:00:00Z",
            "b",
        )],
    );
    let s = w.search();
    let with = |f: &dyn Fn(&mut Request)| {
        let mut r = Request::parse("common").unwrap();
        f(&mut r);
        let mut v: Vec<String> = s
            .answer(&r)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id)
            .collect();
        v.sort();
        v
    };
    assert_eq!(with(&|_| {}), ["c2", "x2"]);
    assert_eq!(with(&|r| r.agent = Some(Agent::Codex)), ["x2"]);
    assert_eq!(with(&|r| r.cwd = Some("/home/u/web".into())), ["c2", "x2"]);
    assert_eq!(
        with(&|r| r.cwd = Some("/home/u".into())),
        Vec::<String>::new()
    );
    let feb = chrono::DateTime::parse_from_rfc3339("2026-02-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    assert_eq!(with(&|r| r.since_ms = Some(feb)), ["c2"]);
}

#[test]
fn compacted_messages_are_found_and_say_so() {
    let w = world();
    let mut old = text(Role::User, "the original zebra request");
    old.in_conversation = false;
    let mut summary = text(Role::User, "summary of earlier work");
    summary.summary = true;
    w.claude.set(
        "/home/u/z",
        "z1",
        None,
        vec![old, summary, text(Role::User, "next")],
    );
    let s = w.search();
    let h = &ask(&s, "zebra")[0];
    assert_eq!(h.id, "z1");
    assert!(!h.in_conversation);
    assert!(ask(&s, "summary")[0].in_conversation);
}

#[test]
fn growth_is_indexed_incrementally_and_compaction_reindexes() {
    let w = world();
    let s = w.search();
    let base = vec![text(Role::User, "first alpha")];
    w.claude.set("/home/u/g", "g1", None, base.clone());
    s.update(&mut |_| {}).unwrap();
    assert_eq!(ids(&s, "alpha"), ["g1"]);
    let mut grown = base.clone();
    grown.push(text(Role::Assistant, "second beta"));
    w.claude.set("/home/u/g", "g1", None, grown.clone());
    s.update(&mut |_| {}).unwrap();
    assert_eq!(ids(&s, "beta"), ["g1"]);
    assert_eq!(
        ids(&s, "alpha"),
        ["g1"],
        "the old message is still there once"
    );
    // A compaction takes the first message out of the conversation.
    let mut compacted = grown.clone();
    compacted[0].in_conversation = false;
    w.claude.set("/home/u/g", "g1", None, compacted);
    s.update(&mut |_| {}).unwrap();
    assert!(!ask(&s, "alpha")[0].in_conversation);
    // A session that went away leaves the index.
    w.claude.remove("g1");
    s.update(&mut |_| {}).unwrap();
    assert!(ids(&s, "alpha").is_empty());
    // Nothing changed: nothing is read again.
    let reads = *w.claude.reads.lock().unwrap();
    s.update(&mut |_| {}).unwrap();
    assert_eq!(*w.claude.reads.lock().unwrap(), reads);
}

#[test]
fn a_new_process_reuses_the_index_without_reading_sessions() {
    let w = world();
    drop(w.search());
    let reads = *w.claude.reads.lock().unwrap();
    let s = w.search();
    assert_eq!(*w.claude.reads.lock().unwrap(), reads, "nothing re-read");
    assert_eq!(ids(&s, "flaky"), ["c1"]);
    assert!(s.notes().is_empty(), "{:?}", s.notes());
}

#[test]
fn bad_queries_are_usage_errors() {
    for q in ["", "\"open", "-only", "*"] {
        let e = Request::parse(q).unwrap_err();
        assert_eq!(e.errno, libc::EINVAL, "{q}");
    }
}

fn segment_files(store: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(store.join(".fen-cache/search"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".idx")
                || n.ends_with(".pos")
                || n.ends_with(".store")
                || n.ends_with(".term")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_truncated_or_corrupted_index_is_rebuilt() {
    for damage in ["truncate", "corrupt", "meta"] {
        let w = world();
        drop(w.search());
        let files = segment_files(&w.store);
        assert!(!files.is_empty());
        match damage {
            "truncate" => {
                let f = &files[0];
                let len = std::fs::metadata(f).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(f)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
            }
            "corrupt" => {
                use std::os::unix::fs::FileExt;
                let f = files
                    .iter()
                    .find(|p| p.to_string_lossy().ends_with(".pos"))
                    .unwrap();
                let file = std::fs::OpenOptions::new().write(true).open(f).unwrap();
                file.write_at(b"\xff\xfe\xfd", 2).unwrap();
            }
            _ => std::fs::write(w.store.join(".fen-cache/search/meta.json"), b"{not json").unwrap(),
        }
        let s = w.search();
        let notes = s.notes().join("\n");
        assert!(notes.contains("rebuilding"), "{damage}: {notes}");
        assert_eq!(ids(&s, "flaky"), ["c1"], "{damage}");
        drop(s);
        let again = w.search();
        assert!(
            again.notes().is_empty(),
            "{damage}: rebuilt once: {:?}",
            again.notes()
        );
    }
}

#[test]
fn an_unwritable_cache_folder_still_answers_from_memory() {
    let w = world();
    // A file where the cache folder would be: nothing can be created there.
    std::fs::write(w.store.join(".fen-cache"), b"not a folder").unwrap();
    let s = w.search();
    assert_eq!(ids(&s, "flaky"), ["c1"]);
    let notes = s.notes();
    assert_eq!(notes.len(), 1, "said once: {notes:?}");
    assert!(notes[0].contains("memory"), "{notes:?}");
}

#[test]
fn a_reader_beside_the_writer_sees_its_commits_and_progress() {
    let w = world();
    let writer = w.search();
    assert!(writer.writable());
    let reader = Search::open(Some(&w.store), w.sources(), true);
    assert!(!reader.writable(), "one writer at a time");
    reader.update(&mut |_| {}).unwrap();
    assert_eq!(ids(&reader, "flaky"), ["c1"]);
    assert!(reader.uncovered().is_empty());
    w.claude.set(
        "/home/u/n",
        "n1",
        None,
        vec![text(Role::User, "newword here")],
    );
    assert!(ids(&reader, "newword").is_empty());
    writer.update(&mut |_| {}).unwrap();
    assert_eq!(
        ids(&reader, "newword"),
        ["n1"],
        "reloaded after the writer's commit"
    );
    // A reader with a source the writer does not cover says so.
    let other = Fake::new(Agent::Pi, &w.store.join("pi"));
    let mut sources = w.sources();
    sources.push(other);
    let third = Search::open(Some(&w.store), sources, false);
    assert_eq!(third.uncovered().len(), 1);
}

#[test]
fn a_reader_never_reads_a_commit_being_replaced() {
    // A writer commits (and merges, and deletes what it merged) as fast as it can;
    // processes opening the index meanwhile always get one whole commit: never an
    // index "damaged" into memory, never a stamp that leaves their sources out, and
    // what every commit holds is found.
    let w = world();
    let writer = w.search();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                w.codex.set(
                    "/home/u/churn",
                    &format!("n{}", n % 40),
                    None,
                    vec![text(Role::User, &format!("churning word{n}"))],
                );
                writer.update(&mut |_| {}).unwrap();
            }
        });
        let started = std::time::Instant::now();
        let mut opened = 0;
        while started.elapsed() < Duration::from_secs(3) {
            let reader = Search::open(Some(&w.store), w.sources(), true);
            opened += 1;
            assert!(!reader.writable());
            assert!(reader.notes().is_empty(), "{:?}", reader.notes());
            assert!(reader.uncovered().is_empty(), "{:?}", reader.uncovered());
            assert_eq!(ids(&reader, "flaky"), ["c1"]);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(opened > 5, "{opened}");
    });
}

#[test]
fn a_reader_without_an_index_answers_empty_and_says_so() {
    let w = world();
    let writer = Search::open(Some(&w.store), w.sources(), true);
    let reader = Search::open(Some(&w.store), w.sources(), true);
    let a = reader.answer(&Request::parse("flaky").unwrap()).unwrap();
    assert!(a.hits.is_empty());
    assert!(a.building.is_some(), "not complete");
    drop(writer);
}

// ---- the mount's `search/` folder, through the tree (no FUSE) ----

use fen_fs::tree::attr::{CacheMode, FileKind};
use fen_fs::tree::{ROOT, Tree};
use std::ffi::OsStr;

struct TreeWorld {
    w: World,
    tree: Tree,
}

fn tree_world() -> TreeWorld {
    let w = world();
    w.codex.set(
        "/search",
        "s1",
        None,
        vec![text(Role::User, "a session whose cwd is /search")],
    );
    let search = Arc::new(w.search());
    let tree = Tree::new(w.sources(), None, 1000, 1000).with_search(search);
    TreeWorld { w, tree }
}

impl TreeWorld {
    fn lookup(&self, path: &str) -> fen_fs::Result<u64> {
        let mut ino = ROOT;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            ino = self.tree.lookup(ino, OsStr::new(part))?.ino;
        }
        Ok(ino)
    }

    fn names(&self, path: &str) -> Vec<String> {
        let fh = self.tree.opendir(self.lookup(path).unwrap()).unwrap();
        let names = self
            .tree
            .readdir(fh)
            .unwrap()
            .iter()
            .map(|e| e.name.clone())
            .collect();
        self.tree.releasedir(fh);
        names
    }

    fn cat(&self, path: &str) -> Vec<u8> {
        let ino = self.lookup(path).unwrap();
        let o = self.tree.open(ino, libc::O_RDONLY, 1).unwrap();
        assert_eq!(o.cache, CacheMode::DirectIo);
        let mut out = Vec::new();
        loop {
            let chunk = self.tree.read(o.fh, out.len() as u64, 4096).unwrap();
            if chunk.is_empty() {
                break;
            }
            out.extend(chunk);
        }
        self.tree.release(o.fh);
        out
    }
}

#[test]
fn the_search_folder_answers_any_name_and_lists_nothing() {
    let t = tree_world();
    let root = t.names("");
    assert!(root.contains(&"search".to_string()), "{root:?}");
    assert!(
        root.contains(&"_search".to_string()),
        "the cwd /search: {root:?}"
    );
    assert_eq!(t.names("search"), [".", ".."]);
    let dir = "2026-01-01T00-00-00-000Z_claude-c1";
    assert_eq!(
        t.names("search/flaky login"),
        [".", "..", "hits.jsonl", &format!("01-{dir}")]
    );
    let link = t.lookup(&format!("search/flaky login/01-{dir}")).unwrap();
    assert_eq!(
        t.tree.readlink(link).unwrap(),
        format!("../../home-u-web/{dir}").into_bytes()
    );
    // The link's target resolves in the same tree.
    assert!(t.lookup(&format!("home-u-web/{dir}")).is_ok());
    let hits = t.cat("search/flaky login/hits.jsonl");
    let first: serde_json::Value =
        serde_json::from_slice(hits.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first["id"], "c1");
    let size = t
        .tree
        .getattr(
            t.lookup("search/flaky login/hits.jsonl").unwrap(),
            None,
            None,
        )
        .unwrap()
        .size;
    assert_eq!(size, hits.len() as u64, "true size before open");
    // Phrases and exclusions in names.
    assert_eq!(t.names("search/\"to staging\"").len(), 4);
    assert_eq!(t.names("search/staging -production").len(), 4);
    assert_eq!(t.names("search/nothingmatches").len(), 3, "just hits.jsonl");
    assert!(t.cat("search/nothingmatches/hits.jsonl").is_empty());
    // Another agent's namespace named like the folder stays reachable.
    assert_eq!(
        t.names("_search").len(),
        5,
        "latest, index.json and one session"
    );
}

#[test]
fn nothing_under_search_is_cached_by_the_kernel() {
    let t = tree_world();
    for path in ["search", "search/flaky", "search/flaky/hits.jsonl"] {
        let a = t.tree.getattr(t.lookup(path).unwrap(), None, None).unwrap();
        assert_eq!(a.ttl(), Duration::ZERO, "{path}");
        assert_eq!(a.entry_ttl(), Duration::ZERO, "{path}");
    }
    let root = t.tree.getattr(ROOT, None, None).unwrap();
    assert!(root.ttl() > Duration::ZERO, "the rest keeps its caching");
    let a = t
        .tree
        .lookup(
            t.lookup("search/flaky").unwrap(),
            OsStr::new("01-2026-01-01T00-00-00-000Z_claude-c1"),
        )
        .unwrap();
    assert_eq!(a.kind, FileKind::Symlink);
    assert_eq!(a.entry_ttl(), Duration::ZERO);
}

#[test]
fn a_bad_query_fails_its_lookup_with_einval() {
    let t = tree_world();
    let search = t.lookup("search").unwrap();
    for q in ["\"open", "-only", "*", "!!!"] {
        let e = t.tree.lookup(search, OsStr::new(q)).unwrap_err();
        assert_eq!(e.errno, libc::EINVAL, "{q}");
    }
    let q = t.lookup("search/flaky").unwrap();
    let e = t.tree.lookup(q, OsStr::new("99-nothing")).unwrap_err();
    assert_eq!(e.errno, libc::ENOENT);
    // Nothing can be made there.
    assert_eq!(
        t.tree.change_structure(search, OsStr::new("x")).errno,
        libc::EPERM
    );
    let hits = t.lookup("search/flaky/hits.jsonl").unwrap();
    let e = t.tree.open(hits, libc::O_WRONLY, 1).unwrap_err();
    assert_eq!(e.errno, libc::EACCES);
    let _ = &t.w;
}
