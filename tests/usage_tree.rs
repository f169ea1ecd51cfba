//! Usage without a mount: the tree's `usage/` folder driven in-process, and the
//! counting under it (`fen_fs::usage`) over real sources of generated histories:
//! fresh on every open with its true size, one response counted once whatever
//! sources repeat it, a grown file read on from where it was left (proved by its
//! bytes), anything else read anew.

mod usage_support;

use fen_fs::agent::Agent;
use fen_fs::ctl::CtlService;
use fen_fs::sources::SessionSource;
use fen_fs::sources::agents::AgentRoot;
use fen_fs::sources::fen::FenSource;
use fen_fs::sources::foreign_source::ForeignSource;
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::tree::{ROOT, Tree};
use fen_fs::usage::Usage;
use fen_fs::usage::prices::Prices;
use fen_fs::usage::report::{Kind, Query};
use fen_fs::usage::zone::Zone;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use usage_support::History;

fn utc() -> Zone {
    Zone::parse("UTC").unwrap()
}

fn sources(h: &History, store: &Arc<Store>) -> Vec<Arc<dyn SessionSource>> {
    let mut out: Vec<Arc<dyn SessionSource>> = vec![Arc::new(FenSource::new(store.clone()))];
    for (agent, root) in [
        (Agent::Claude, h.claude.clone()),
        (Agent::Codex, h.codex.clone()),
        (Agent::Gemini, h.gemini()),
    ] {
        let s = ForeignSource::new(&AgentRoot { agent, root }, Some(&store.root));
        // What a mount's indexer thread does (listings wait for it; usage does not).
        s.build_index();
        out.push(Arc::new(s));
    }
    out
}

struct Fixture {
    _dir: tempfile::TempDir,
    h: History,
    store: Arc<Store>,
    tree: Tree,
    usage: Arc<Usage>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&dir.path().join("history"));
    let store = Arc::new(Store::open(dir.path().join("store"), FsyncMode::No).unwrap());
    let ctl = Arc::new(CtlService::new(store.clone(), 1 << 20));
    let srcs = sources(&h, &store);
    let usage = Arc::new(Usage::new(
        srcs.clone(),
        Some(&store.root),
        Prices::builtin(),
    ));
    let tree = Tree::new(srcs, Some(ctl), 1000, 1000).with_usage(usage.clone(), utc());
    Fixture {
        _dir: dir,
        h,
        store,
        tree,
        usage,
    }
}

impl Fixture {
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

    fn read_all(&self, fh: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let chunk = self.tree.read(fh, out.len() as u64, 1000).unwrap();
            if chunk.is_empty() {
                return out;
            }
            out.extend(chunk);
        }
    }

    fn cat(&self, path: &str) -> Vec<u8> {
        let o = self
            .tree
            .open(self.lookup(path).unwrap(), libc::O_RDONLY, 1)
            .unwrap();
        let out = self.read_all(o.fh);
        self.tree.release(o.fh);
        out
    }
}

fn json_array(bytes: &[u8]) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(bytes).expect("a JSON array");
    // One object per line, as index.json.
    let text = std::str::from_utf8(bytes).unwrap();
    let arr = v.as_array().unwrap().clone();
    assert_eq!(text.lines().count(), arr.len() + 2, "{text}");
    arr
}

#[test]
fn usage_folder_lists_its_files_and_serves_fresh_true_sized_snapshots() {
    let f = fixture();
    assert!(f.names("/").contains(&"usage".to_string()));
    // A session whose cwd is /usage has its namespace beside the folder, not in it.
    f.tree
        .lookup(ROOT, OsStr::new("ctl"))
        .map(|a| {
            let o = f.tree.open(a.ino, libc::O_WRONLY, 1).unwrap();
            let line = br#"{"cwd":"/usage","role":"user","content":"hi"}"#.to_vec();
            f.tree
                .write(a.ino, o.fh, &[line, b"\n".to_vec()].concat(), Some(1))
                .unwrap();
            f.tree.release(o.fh);
        })
        .unwrap();
    let root = f.names("/");
    assert!(root.contains(&"_usage".to_string()), "{root:?}");
    assert_eq!(root.iter().filter(|n| *n == "usage").count(), 1);
    assert_eq!(
        f.names("/usage")[2..],
        [
            "by-agent.json",
            "by-model.json",
            "by-project.json",
            "daily.json",
            "daily.svg",
            "monthly.json"
        ]
    );
    assert_eq!(
        f.lookup("/usage/nope.json").unwrap_err().errno,
        libc::ENOENT
    );
    // The files are the reports, as arrays of the --json rows.
    let daily = f.cat("/usage/daily.json");
    let rows = json_array(&daily);
    let want = f.usage.report(&Query::new(Kind::Daily, utc())).json_array();
    assert_eq!(daily, want);
    assert!(rows.len() >= 10);
    let agents = json_array(&f.cat("/usage/by-agent.json"));
    let names: Vec<&str> = agents
        .iter()
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    for a in ["claude", "codex", "gemini"] {
        assert!(names.contains(&a), "{names:?}");
    }
    assert!(
        json_array(&f.cat("/usage/by-project.json"))
            .iter()
            .any(|r| r["project"] == "/home/u/beta")
    );
    assert!(
        json_array(&f.cat("/usage/by-model.json"))
            .iter()
            .any(|r| r["model"] == "gpt-5.1")
    );
    assert!(
        json_array(&f.cat("/usage/monthly.json"))
            .iter()
            .any(|r| r["period"] == "2026-03")
    );
    let svg = f.cat("/usage/daily.svg");
    let text = String::from_utf8(svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("daily.svg is XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    // A stat's size is what a read returns; a write is refused.
    let ino = f.lookup("/usage/daily.json").unwrap();
    assert_eq!(
        f.tree.getattr(ino, None, None).unwrap().size,
        daily.len() as u64
    );
    assert_eq!(
        f.tree.open(ino, libc::O_WRONLY, 1).unwrap_err().errno,
        libc::EACCES
    );
    // One open is one snapshot; the next open counts what was appended since.
    let held = f.tree.open(ino, libc::O_RDONLY, 1).unwrap();
    let today = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    usage_support::append_claude_response(&f.h, &today, 777);
    assert_eq!(
        f.read_all(held.fh),
        daily,
        "an open handle's bytes never shift"
    );
    f.tree.release(held.fh);
    let after = f.cat("/usage/daily.json");
    assert_ne!(after, daily);
    let last = json_array(&after).pop().unwrap();
    assert_eq!(
        last["period"],
        chrono::Utc::now().format("%Y-%m-%d").to_string()
    );
    assert_eq!(last["output_tokens"], 777);
    assert_ne!(
        f.cat("/usage/daily.svg"),
        text.into_bytes(),
        "today's bar is drawn"
    );
    drop(f.store);
}

/// Totals of one report over `sources`.
fn totals(usage: &Usage) -> (u64, u64, String) {
    let r = usage.report(&Query::new(Kind::Daily, utc()));
    (
        r.total.tokens.total(),
        r.total.responses,
        format!("{:.6}", r.total.priced_cost),
    )
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
fn a_response_counts_once_whatever_sources_repeat_it() {
    let dir = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&dir.path().join("history"));
    let store = Arc::new(Store::open(dir.path().join("store"), FsyncMode::No).unwrap());
    let one = Usage::new(sources(&h, &store), None, Prices::builtin());
    one.refresh_all().unwrap();
    let alone = totals(&one);
    // A second copy of every store (as kept copies or another machine's would be),
    // given as further sources: nothing more is counted.
    let copy = dir.path().join("copy");
    copy_dir(&dir.path().join("history"), &copy);
    let h2 = History {
        claude: copy.join("claude"),
        codex: copy.join("codex"),
        gemini_home: copy.join("gemini-home"),
    };
    let mut both = sources(&h, &store);
    both.extend(sources(&h2, &store).into_iter().skip(1));
    let twice = Usage::new(both, None, Prices::builtin());
    twice.refresh_all().unwrap();
    assert_eq!(totals(&twice), alone);
    assert!(alone.1 > 100, "{alone:?}");
}

#[test]
fn a_grown_file_is_read_on_from_its_mark_and_a_rewritten_one_anew() {
    let dir = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&dir.path().join("history"));
    let store = Arc::new(Store::open(dir.path().join("store"), FsyncMode::No).unwrap());
    let fresh = || Usage::new(sources(&h, &store), Some(&store.root), Prices::builtin());
    let u = fresh();
    let first = u.refresh_all().unwrap();
    assert!(first.units_read > 5, "{first:?}");
    u.persist();
    let before = totals(&u);
    // Unchanged: nothing is read, by this process or the next (the saved ledger).
    assert_eq!(u.refresh_all().unwrap().units_read, 0);
    let next = fresh();
    assert_eq!(next.refresh_all().unwrap().units_read, 0);
    assert_eq!(totals(&next), before);
    // Change a response in the middle of the big Claude file without changing its
    // length or its first and last 4 KiB, then append one response: read on from the
    // mark, the edit is not seen (the bytes before the mark are not read again) and
    // the appended response is.
    let project = h.claude.join("projects/-home-u-alpha");
    let file = std::fs::read_dir(&project)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let len = bytes.len();
    let at = bump(&mut bytes, len / 2);
    assert!(at > 4096 && at < len - 4096);
    std::fs::write(&file, &bytes).unwrap();
    let stamp = "2026-03-11T12:00:00.000Z";
    usage_support::append_claude_response_to(&file, stamp, 1234);
    let read = next.refresh_all().unwrap();
    assert_eq!(read.units_read, 1, "only the grown file is read");
    let (tokens, responses, _) = totals(&next);
    assert_eq!(responses, before.1 + 1);
    assert_eq!(
        tokens,
        before.0 + 3 + 1234,
        "the edit before the mark is not read again"
    );
    // A file rewritten (its start changed): read anew, the edit counted.
    let mut again = std::fs::read(&file).unwrap();
    assert!(bump(&mut again, 0) < 4096);
    std::fs::write(&file, &again).unwrap();
    next.refresh_all().unwrap();
    let (rewritten, ..) = totals(&next);
    assert_ne!(rewritten, tokens, "a rewrite is read anew");
    // From scratch, the same counts as the incremental ledger now holds.
    let scratch = Usage::new(sources(&h, &store), None, Prices::builtin());
    scratch.refresh_all().unwrap();
    assert_eq!(totals(&scratch), totals(&next));
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Raises the first digit of the first `output_tokens` count at or after `from` that
/// can be raised (so that line outweighs its copies, were it read): its place.
fn bump(bytes: &mut [u8], mut from: usize) -> usize {
    loop {
        let at = from + memchr_find(&bytes[from..], b"\"output_tokens\":").unwrap() + 16;
        if bytes[at] != b'9' {
            bytes[at] += 1;
            return at;
        }
        from = at;
    }
}

/// Each file of `usage/` as `stat` says it and as a read gives it.
fn usage_state(f: &Fixture) -> Vec<(String, u64, std::time::SystemTime, Vec<u8>)> {
    [
        "by-agent.json",
        "by-model.json",
        "by-project.json",
        "daily.json",
        "daily.svg",
        "monthly.json",
    ]
    .iter()
    .map(|name| {
        let path = format!("/usage/{name}");
        let ino = f.lookup(&path).unwrap();
        // An open counts what changed; then fstat through the handle, the read, fstat
        // again (as tar does), and a stat by path: one size and time.
        let o = f.tree.open(ino, libc::O_RDONLY, 1).unwrap();
        let before = f.tree.getattr(ino, Some(o.fh), None).unwrap();
        let bytes = f.read_all(o.fh);
        let after = f.tree.getattr(ino, Some(o.fh), None).unwrap();
        f.tree.release(o.fh);
        let a = f.tree.getattr(ino, None, None).unwrap();
        assert_eq!((a.size, a.mtime), (before.size, before.mtime), "{name}");
        assert_eq!((a.size, a.mtime), (after.size, after.mtime), "{name}");
        assert_eq!(a.size, bytes.len() as u64, "{name}");
        (name.to_string(), a.size, a.mtime, bytes)
    })
    .collect()
}

/// The class of `tar: file changed as we read it`: a file of `usage/` keeps its size
/// and mtime from `stat` to the last read, and across opens, while what it is made of
/// does not change; when its bytes change, so does its mtime (to the time of the newest
/// response counted, or, with none newer, the time the change was seen). Driven by
/// random sequences of what happens to a history: nothing, a look after a while, an
/// agent's file touched without a new response, a new response (newer or older than
/// every other), a response's file deleted.
#[test]
fn usage_files_keep_their_size_and_mtime_while_their_inputs_are_unchanged() {
    use proptest::prelude::*;
    #[derive(Debug, Clone)]
    enum Step {
        Nothing,
        Later,
        Touch,
        Append { newest: bool, tokens: u64 },
        Delete,
    }
    let step = prop_oneof![
        Just(Step::Nothing),
        Just(Step::Later),
        Just(Step::Touch),
        (any::<bool>(), 1u64..5000).prop_map(|(newest, tokens)| Step::Append { newest, tokens }),
        Just(Step::Delete),
    ];
    let config = ProptestConfig {
        cases: 12,
        ..ProptestConfig::default()
    };
    proptest!(config, |(steps in proptest::collection::vec(step, 1..6))| {
        let f = fixture();
        let mut was = usage_state(&f);
        for (i, s) in steps.iter().enumerate() {
            let claude = f.h.claude.join("projects/-home-u-alpha");
            let files: Vec<_> = std::fs::read_dir(&claude)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect();
            match s {
                Step::Nothing => {}
                // Past the stat reuse: a fresh count of every unit.
                Step::Later => std::thread::sleep(std::time::Duration::from_millis(600)),
                Step::Touch => {
                    let t = std::time::SystemTime::now();
                    std::fs::File::options()
                        .append(true)
                        .open(&files[0])
                        .unwrap()
                        .set_modified(t)
                        .unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(600));
                }
                Step::Append { newest, tokens } => {
                    let time = if *newest {
                        format!("2026-04-0{}T12:00:00.000Z", i % 9 + 1)
                    } else {
                        "2026-01-05T12:00:00.000Z".to_string()
                    };
                    usage_support::append_claude_response(&f.h, &time, *tokens);
                }
                Step::Delete => {
                    if files.len() > 1 {
                        std::fs::remove_file(files.iter().max().unwrap()).unwrap();
                    }
                }
            }
            let now = usage_state(&f);
            for (w, n) in was.iter().zip(&now) {
                if w.3 == n.3 {
                    prop_assert_eq!((w.1, w.2), (n.1, n.2), "{} after {:?}: same bytes", &n.0, s);
                } else {
                    prop_assert!(n.2 > w.2, "{} after {:?}: new bytes, mtime {:?} -> {:?}", &n.0, s, w.2, n.2);
                }
            }
            was = now;
        }
        // A report's mtime is its newest response's time when that is the change.
        let newest = f.usage.newest_response_ms().unwrap();
        let daily = &was[3];
        let ms = daily.2.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        prop_assert!(ms >= newest, "{ms} < {newest}");
    });
}
