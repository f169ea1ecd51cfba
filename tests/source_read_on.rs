//! Reading on equals reading anew: a reader that follows appends, fed a file as the
//! daemon feeds it while its agent writes it (a few bytes more each time, the last line
//! often torn, from the reader kept in memory or from its saved state), shows at every
//! point exactly what a fresh reader of the same bytes shows: summary, conversation
//! and every message. Over every agent's public fixtures (any byte may be a cut) and
//! files Gemini CLI 0.61.0 itself wrote while resuming (tests/gemini/recorded, every
//! byte a cut).

use fen_fs::sources::agents::reader_for;
use fen_fs::sources::foreign::*;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// What a reader shows: what the views and search are made of.
#[derive(Debug, PartialEq)]
struct Shown {
    summary: ForeignSummary,
    conversation: Vec<MessagePieces>,
    history: Vec<MessageRef>,
}

fn shown(r: &dyn ForeignReader, tail: &[u8]) -> Shown {
    Shown {
        summary: r.summary(tail),
        conversation: r.conversation(tail),
        history: r.messages(tail, true),
    }
}

/// A fresh reader of `bytes`, the whole file as it is now.
fn fresh(agent: Agent, name: &str, bytes: &[u8]) -> Shown {
    let mut r = reader_for(agent, name);
    let tail = feed_all(r.as_mut(), bytes);
    shown(r.as_ref(), tail)
}

/// A reader following a file as the daemon's does (foreign_source/readers.rs): where
/// it stopped, and the unterminated rest it holds.
struct Follower {
    reader: Box<dyn ForeignReader>,
    consumed: usize,
    tail: Vec<u8>,
}

impl Follower {
    fn new(agent: Agent, name: &str) -> Follower {
        Follower {
            reader: reader_for(agent, name),
            consumed: 0,
            tail: Vec::new(),
        }
    }

    /// The file grew to `bytes`: the new bytes, read `chunk` at a time after the held
    /// tail, are fed from where the reader stopped.
    fn grow(&mut self, bytes: &[u8], chunk: usize) {
        let mut pos = self.consumed + self.tail.len();
        let mut buf = std::mem::take(&mut self.tail);
        while pos < bytes.len() {
            let n = (bytes.len() - pos).min(chunk.max(1));
            buf.extend_from_slice(&bytes[pos..pos + n]);
            pos += n;
            let used = self.reader.feed(self.consumed as u64, &buf) as usize;
            self.consumed += used;
            buf.drain(..used.min(buf.len()));
        }
        self.tail = buf;
    }

    fn shown(&self) -> Shown {
        shown(self.reader.as_ref(), &self.tail)
    }

    /// The reader leaves memory and comes back: its saved state taken by a fresh
    /// reader, which reads the tail again from the file. Unchanged for a reader
    /// without states (the daemon reads such a file from its start).
    fn reload(&mut self, agent: Agent, name: &str) {
        let Some(state) = self.reader.save_state() else {
            return;
        };
        let mut again = reader_for(agent, name);
        assert!(
            again.restore_state(&state),
            "{agent:?} {name}: state refused"
        );
        self.reader = again;
        self.tail.clear();
    }
}

/// One step of a writer: the file's size after it, how the daemon reads the new
/// bytes, and whether the reader left memory before.
#[derive(Debug, Clone, Copy)]
struct Step {
    size: usize,
    chunk: usize,
    reload: bool,
}

/// Follows `bytes` through `steps` (sizes increasing), checking after each that the
/// follower shows what a fresh read of the same bytes shows.
fn check_steps(agent: Agent, name: &str, bytes: &[u8], steps: &[Step]) {
    let mut f = Follower::new(agent, name);
    if !f.reader.follows_appends() {
        return;
    }
    for s in steps {
        if s.reload {
            f.reload(agent, name);
        }
        f.grow(&bytes[..s.size], s.chunk);
        let got = f.shown();
        let want = fresh(agent, name, &bytes[..s.size]);
        if got != want {
            panic!(
                "{agent:?} {name}: read on to byte {} of {} differs from a fresh read\n\
                 steps: {steps:?}\nread on: {got:#?}\nfresh: {want:#?}",
                s.size,
                bytes.len()
            );
        }
    }
}

/// Interesting places to stop: about `n` line ends spread over the file, and around
/// each the torn cases (its line complete but for the `\n`, half of the next line).
fn cuts_around_lines(bytes: &[u8], n: usize) -> Vec<usize> {
    let ends: Vec<usize> = memchr::memchr_iter(b'\n', bytes).map(|i| i + 1).collect();
    let step = (ends.len() / n).max(1);
    let mut cuts = vec![0];
    for (k, &e) in ends.iter().enumerate().step_by(step) {
        let next = ends.get(k + 1).copied().unwrap_or(bytes.len());
        cuts.extend([e - 1, e, e + (next - e) / 2]);
    }
    cuts.push(bytes.len());
    cuts.retain(|&c| c <= bytes.len());
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The agents whose files are appended to, with their fixture folder and the
/// session files in it (Cursor's `store.db` and Gemini's legacy `.json` are read
/// whole: a change to them is a fresh read).
fn fixtures() -> Vec<(Agent, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures");
    let mut out = Vec::new();
    for (agent, dir) in [
        (Agent::Claude, "claude"),
        (Agent::Codex, "codex"),
        (Agent::Gemini, "gemini"),
        (Agent::Copilot, "copilot"),
        (Agent::Cursor, "cursor"),
        (Agent::Openclaw, "openclaw"),
    ] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push((agent, p));
                }
            }
        }
    }
    out.extend(recorded_gemini().into_iter().map(|p| (Agent::Gemini, p)));
    out.sort();
    out
}

/// Files Gemini CLI 0.61.0 wrote against the mock model (tests/agent_gemini.rs's
/// session: a prompt, a tool call and its result, then `--resume latest`): resumed in
/// the minute the file was created (Gemini appends a second metadata line and a
/// `$set.messages` to the same file), and in a later minute (a new file holding only
/// the context, then `$set.messages` in the old one keeping the call's result beside
/// the `<id>_response` turn). Paths under /home/user.
fn recorded_gemini() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gemini/recorded");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    out.sort();
    out
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// pi's format (OpenClaw's too), hand-made: every entry kind, a branch, a bad line.
const PI_V3: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}
{"type":"model_change","id":"a0","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","provider":"x","modelId":"m"}
{"type":"message","id":"a1","parentId":"a0","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"timestamp":2}}
{"type":"compaction","id":"a4","parentId":"a2","timestamp":"2025-01-01T00:00:05.000Z","summary":"sum","firstKeptEntryId":"a2","tokensBefore":9}
{"type":"session_info","id":"a7","parentId":"a4","timestamp":"2025-01-01T00:00:08.000Z","name":"title"}
{"type":"message","id":"a8","parentId":"a2","timestamp":"2025-01-01T00:00:09.000Z","message":{"role":"user","content":"branch","timestamp":4}}
not json
{"type":"message","id":"a9","parentId":"a8","timestamp":"2025-01-01T00:00:10.000Z","message":{"role":"assistant","content":[{"type":"text","text":"end"}],"timestamp":5}}
"#;

/// pi's first format: no ids, a compaction by index.
const PI_V1: &str = r#"{"type":"session","id":"s2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}
{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":1,"tokensBefore":7}
{"type":"message","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"three","timestamp":3}}
"#;

/// Every fixture of every agent, followed line by line with torn stops between (in
/// memory, and through a saved state every other stop): each stop shows what a
/// fresh read shows.
#[test]
fn every_fixture_read_on_equals_a_fresh_read() {
    let files = fixtures();
    assert!(files.len() > 40, "{}", files.len());
    for (agent, path) in &files {
        let bytes = std::fs::read(path).unwrap();
        // Each stop is a fresh read of the file so far: fewer in the largest files.
        let cuts = cuts_around_lines(&bytes, if bytes.len() > 256 << 10 { 2 } else { 8 });
        for (chunk, reload_every) in [(usize::MAX, 0), (4096, 2)] {
            let steps: Vec<Step> = cuts
                .iter()
                .enumerate()
                .map(|(k, &size)| Step {
                    size,
                    chunk,
                    reload: reload_every > 0 && k % reload_every == 1,
                })
                .collect();
            check_steps(*agent, &name_of(path), &bytes, &steps);
        }
    }
    for (name, text) in [("v3.jsonl", PI_V3), ("v1.jsonl", PI_V1)] {
        let bytes = text.as_bytes();
        let steps: Vec<Step> = (0..=bytes.len())
            .map(|size| Step {
                size,
                chunk: usize::MAX,
                reload: size % 3 == 0,
            })
            .collect();
        check_steps(Agent::Pi, name, bytes, &steps);
    }
}

/// Gemini's own writes while it resumes a session, read on a byte at a time (every
/// byte a cut, every line torn at every place) and a line at a time.
#[test]
fn gemini_resume_writes_read_on_equal_a_fresh_read() {
    let files = recorded_gemini();
    assert_eq!(files.len(), 3);
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let name = name_of(path);
        let every_byte: Vec<Step> = (0..=bytes.len())
            .map(|size| Step {
                size,
                chunk: usize::MAX,
                reload: false,
            })
            .collect();
        check_steps(Agent::Gemini, &name, &bytes, &every_byte);
        let lines: Vec<Step> = memchr::memchr_iter(b'\n', &bytes)
            .map(|i| Step {
                size: i + 1,
                chunk: 7,
                reload: false,
            })
            .collect();
        check_steps(Agent::Gemini, &name, &bytes, &lines);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Any file, any stops (any byte), any read sizes, the reader leaving memory at
    /// any stop.
    #[test]
    fn any_fixture_any_cuts(
        pick in any::<proptest::sample::Index>(),
        stops in proptest::collection::vec((0.0f64..1.0, 1usize..5000, any::<bool>()), 1..8),
    ) {
        let files: Vec<(Agent, PathBuf)> = fixtures()
            .into_iter()
            .filter(|(_, p)| std::fs::metadata(p).unwrap().len() < 64 << 10)
            .collect();
        let (agent, path) = &files[pick.index(files.len())];
        let bytes = std::fs::read(path).unwrap();
        let mut steps: Vec<Step> = stops
            .iter()
            .map(|&(at, chunk, reload)| Step {
                size: (at * bytes.len() as f64) as usize,
                chunk,
                reload,
            })
            .collect();
        steps.sort_by_key(|s| s.size);
        steps.push(Step { size: bytes.len(), chunk: usize::MAX, reload: false });
        check_steps(*agent, &name_of(path), &bytes, &steps);
    }
}

// ---------------------------------------------------------------------------
// The daemon's followers: a file that grew is read on only if it only grew

use fen_fs::sources::SessionSource;
use fen_fs::sources::agents::AgentRoot;
use fen_fs::sources::foreign_source::ForeignSource;
use fen_fs::views::ViewKind;

/// A pi folder with one session file, and a source over it as a mount has one.
struct PiStore {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    file: PathBuf,
}

impl PiStore {
    fn new(text: &str) -> PiStore {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("pi");
        let folder = root.join("sessions/--p--");
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("2025-01-01T00-00-00-000Z_s2.jsonl");
        std::fs::write(&file, text).unwrap();
        PiStore {
            _tmp: tmp,
            root,
            file,
        }
    }

    fn source(&self) -> ForeignSource {
        let fen = self.root.with_file_name("fen");
        std::fs::create_dir_all(&fen).unwrap();
        let s = ForeignSource::new(
            &AgentRoot {
                agent: Agent::Pi,
                root: self.root.clone(),
            },
            Some(&fen),
        );
        s.build_index();
        s
    }
}

/// Every view of the one session of `source`, as bytes.
fn views(source: &ForeignSource) -> Vec<(ViewKind, String)> {
    let dirs = source.session_dirs("--p--").unwrap();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    [ViewKind::Conversation, ViewKind::Meta, ViewKind::Markdown]
        .into_iter()
        .map(|kind| {
            let snap = source.snapshot("--p--", &dirs[0], kind, 0).unwrap();
            let bytes = snap.read_at(0, snap.size() as usize).unwrap();
            (kind, String::from_utf8(bytes).unwrap())
        })
        .collect()
}

/// pi rewrites a session file of format 1 or 2 in place when it opens it (its
/// migration, `writeFileSync`: same inode, the file longer, every line changed): the
/// reader following that file in memory must not read on from where it stopped in
/// the old bytes. Then an append to the rewritten file is read on as usual.
#[test]
fn a_file_rewritten_in_place_and_grown_is_read_anew() {
    let store = PiStore::new(PI_V1);
    let source = store.source();
    let before = views(&source);
    assert!(before[0].1.contains("three"), "{}", before[0].1);

    // What pi's migration writes: version 3, ids and parents, the compaction by id.
    let migrated = r#"{"type":"session","id":"s2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p","version":3}
{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1},"id":"0a1b2c3d","parentId":null}
{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","tokensBefore":7,"id":"1a1b2c3d","parentId":"0a1b2c3d","firstKeptEntryId":"0a1b2c3d"}
{"type":"message","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"three","timestamp":3},"id":"2a1b2c3d","parentId":"1a1b2c3d"}
"#;
    assert!(migrated.len() > PI_V1.len());
    let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let inode = ino(&store.file);
    std::fs::write(&store.file, migrated).unwrap();
    assert_eq!(ino(&store.file), inode, "rewritten in place");
    assert_eq!(views(&source), views(&store.source()), "after the rewrite");

    // pi appends to the migrated file.
    let mut more = String::from(migrated);
    more.push_str(r#"{"type":"message","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"four"}],"timestamp":4},"id":"3a1b2c3d","parentId":"2a1b2c3d"}"#);
    more.push('\n');
    std::fs::write(&store.file, &more).unwrap();
    let after = views(&source);
    assert!(after[0].1.contains("four"), "{}", after[0].1);
    assert_eq!(after, views(&store.source()), "after the append");
}
