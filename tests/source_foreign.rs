//! Another agent's store as a `ForeignSource`, in-process: what it lists and reads as
//! the agent's files change under it.

use fen_fs::sources::SessionSource;
use fen_fs::sources::agents::AgentRoot;
use fen_fs::sources::foreign::Agent;
use fen_fs::sources::foreign_source::ForeignSource;
use std::path::Path;

fn claude_line(uuid: &str, parent: Option<&str>, text: &str) -> String {
    serde_json::json!({
        "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s", "cwd": "/w",
        "timestamp": "2025-07-01T10:00:00.000Z", "message": {"role": "user", "content": text}
    })
    .to_string()
        + "\n"
}

const ID1: &str = "11111111-1111-4111-8111-111111111111";
const ID2: &str = "22222222-2222-4222-8222-222222222222";

fn set_mtime(path: &Path, t: std::time::SystemTime) {
    let f = std::fs::File::open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// A folder's mtime has the clock's coarse granularity: a file created in the same
/// tick as the last scan leaves the folder's stamp unchanged. Such a scan is not
/// trusted (here the tick is forced: the folder's mtime is put back).
#[test]
fn a_file_created_in_the_tick_of_the_last_scan_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let project = root.join("projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join(format!("{ID1}.jsonl")),
        claude_line("a", None, "one"),
    )
    .unwrap();
    let fen = tmp.path().join("fen");
    std::fs::create_dir(&fen).unwrap();
    let source = ForeignSource::new(
        &AgentRoot {
            agent: Agent::Claude,
            root: root.clone(),
        },
        Some(&fen),
    );
    source.build_index();
    let ns = "--w--";
    assert_eq!(source.session_dirs(ns).unwrap().len(), 1);
    let mtime = std::fs::metadata(&project).unwrap().modified().unwrap();
    std::fs::write(
        project.join(format!("{ID2}.jsonl")),
        claude_line("b", None, "two"),
    )
    .unwrap();
    set_mtime(&project, mtime);
    assert_eq!(source.session_dirs(ns).unwrap().len(), 2);
}

/// A Claude Code session of about `bytes` bytes: a chain of user lines of ~2 KB.
fn claude_session(bytes: usize) -> (String, String) {
    let mut text = String::new();
    let mut parent: Option<String> = None;
    let mut i = 0;
    while text.len() < bytes {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        text.push_str(&claude_line(&uuid, parent.as_deref(), &"x".repeat(2000)));
        parent = Some(uuid);
        i += 1;
    }
    (text, parent.unwrap())
}

struct Store {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    fen: std::path::PathBuf,
    project: std::path::PathBuf,
}

impl Store {
    fn new() -> Store {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("claude");
        let project = root.join("projects/-w");
        std::fs::create_dir_all(&project).unwrap();
        let fen = tmp.path().join("fen");
        std::fs::create_dir(&fen).unwrap();
        Store {
            _tmp: tmp,
            root,
            fen,
            project,
        }
    }

    fn agent_root(&self) -> AgentRoot {
        AgentRoot {
            agent: Agent::Claude,
            root: self.root.clone(),
        }
    }

    /// A source over the store, its first index built (a mount).
    fn source(&self) -> ForeignSource {
        let s = ForeignSource::new(&self.agent_root(), Some(&self.fen));
        s.build_index();
        s
    }

    /// The same, watching its folders with inotify (as a daemon's).
    fn watching_source(&self) -> ForeignSource {
        let s = ForeignSource::watching(&self.agent_root(), Some(&self.fen));
        s.build_index();
        s
    }
}

fn view(source: &ForeignSource, dir: &str, kind: fen_fs::views::ViewKind) -> Vec<u8> {
    let snap = source.snapshot("--w--", dir, kind, 0).unwrap();
    snap.read_at(0, snap.size() as usize).unwrap()
}

fn meta(source: &ForeignSource, dir: &str) -> serde_json::Value {
    serde_json::from_slice(&view(source, dir, fen_fs::views::ViewKind::Meta)).unwrap()
}

fn conversation(source: &ForeignSource, dir: &str) -> Vec<serde_json::Value> {
    serde_json::from_slice(&view(source, dir, fen_fs::views::ViewKind::Conversation)).unwrap()
}

fn dir_of(source: &ForeignSource, id: &str) -> String {
    source
        .session_dirs("--w--")
        .unwrap()
        .into_iter()
        .find(|d| d.ends_with(id))
        .unwrap()
}

/// Breaks one line in the middle of `path` in place (same size): a reader that
/// parses the file again from its start counts it malformed; one that goes on from
/// where it stopped never sees it.
fn break_middle_line(path: &Path) {
    use std::os::unix::fs::FileExt;
    let bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    let start = mid + memchr::memchr(b'\n', &bytes[mid..]).unwrap() + 1;
    assert_eq!(bytes[start], b'{');
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(b"X", start as u64).unwrap();
}

fn append(path: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(line.as_bytes()).unwrap();
}

/// An agent appends to a large session after many other sessions were read, and on a
/// later mount: only the new bytes are parsed (the reader's saved state goes on), and
/// conversation.json and meta.json show the append.
#[test]
fn a_grown_session_is_read_from_where_it_stopped_whatever_was_read_since() {
    let store = Store::new();
    let (big, last) = claude_session(400 << 10);
    let big_path = store.project.join(format!("{ID1}.jsonl"));
    std::fs::write(&big_path, &big).unwrap();
    for i in 0..40 {
        let id = format!("33333333-3333-4333-8333-{i:012}");
        let (text, _) = claude_session(20 << 10);
        std::fs::write(store.project.join(format!("{id}.jsonl")), text).unwrap();
    }
    let source = store.source();
    let dir = dir_of(&source, ID1);
    let before = conversation(&source, &dir).len();
    // Every other session read after it: more than the readers kept in memory.
    for d in source.session_dirs("--w--").unwrap() {
        if d != dir {
            conversation(&source, &d);
        }
    }
    break_middle_line(&big_path);
    append(&big_path, &claude_line("new-1", Some(&last), "appended"));
    let conv = conversation(&source, &dir);
    assert_eq!(conv.len(), before + 1);
    assert_eq!(conv.last().unwrap()["content"], "appended");
    let m = meta(&source, &dir);
    assert_eq!(
        m["malformed_lines"], 0,
        "the file was parsed again from its start"
    );
    assert_eq!(m["messages"], before as u64 + 1);
    source.persist();
    drop(source);

    // A later mount: the state saved by the first goes on.
    append(&big_path, &claude_line("new-2", Some("new-1"), "again"));
    let source = store.source();
    let conv = conversation(&source, &dir);
    assert_eq!(conv.len(), before + 2);
    assert_eq!(meta(&source, &dir)["malformed_lines"], 0);
}

/// A saved state is used only for the file it was taken from: a session rewritten in
/// place (same inode, new head) or replaced by another file is read from its start.
#[test]
fn a_saved_state_is_not_used_for_a_rewritten_or_replaced_file() {
    let store = Store::new();
    let path = store.project.join(format!("{ID1}.jsonl"));
    let (text, _) = claude_session(400 << 10);
    std::fs::write(&path, &text).unwrap();
    let source = store.source();
    let dir = dir_of(&source, ID1);
    let n = conversation(&source, &dir).len();
    source.persist();
    drop(source);

    // Rewritten in place, longer, with a different first line.
    let (mut other, _) = claude_session(500 << 10);
    other.replace_range(0..1, "X");
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, other.as_bytes(), 0).unwrap();
    drop(f);
    let source = store.source();
    let m = meta(&source, &dir_of(&source, ID1));
    assert_eq!(m["malformed_lines"], 1);
    assert!(m["messages"].as_u64().unwrap() > n as u64);
    source.persist();
    drop(source);

    // Replaced by a new file (another inode) that starts like the old one.
    let (third, _) = claude_session(450 << 10);
    let tmp = store.project.join("new.tmp");
    std::fs::write(&tmp, &third).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let source = store.source();
    let m = meta(&source, &dir_of(&source, ID1));
    assert_eq!(m["malformed_lines"], 0);
    assert_eq!(
        conversation(&source, &dir_of(&source, ID1)).len(),
        third.lines().count()
    );
}

/// meta.json's context_tokens, taken from the index, is the conversation's.
#[test]
fn meta_context_tokens_match_the_conversation() {
    let store = Store::new();
    let path = store.project.join(format!("{ID1}.jsonl"));
    let (text, last) = claude_session(1200 << 10);
    std::fs::write(&path, &text).unwrap();
    let source = store.source();
    let dir = dir_of(&source, ID1);
    let tokens = |source: &ForeignSource| {
        let conv = view(source, &dir, fen_fs::views::ViewKind::Conversation);
        // The view's messages: each line between the brackets, without its comma.
        let text = String::from_utf8(conv).unwrap();
        text.lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| (l.trim_end_matches(',').len() as u64).div_ceil(4))
            .sum::<u64>()
    };
    assert_eq!(meta(&source, &dir)["context_tokens"], tokens(&source));
    append(&path, &claude_line("z", Some(&last), "more"));
    assert_eq!(meta(&source, &dir)["context_tokens"], tokens(&source));
}

/// An agent appending to its sessions (every few seconds while it works) changes no
/// folder's entries: the source re-reads what grew without walking its folders again
/// (a walk is O(every session), and each request after each append paid for one).
/// A new file still shows on the next listing, through a walk.
#[test]
fn an_append_is_seen_without_walking_the_folders_and_a_new_file_with_one() {
    let store = Store::new();
    let first = store.project.join(format!("{ID1}.jsonl"));
    std::fs::write(&first, claude_line("a", None, "one")).unwrap();
    for k in 0..5 {
        let id = format!("33333333-3333-4333-8333-{k:012}");
        std::fs::write(
            store.project.join(format!("{id}.jsonl")),
            claude_line("x", None, "other"),
        )
        .unwrap();
    }
    let source = store.watching_source();
    let dir = dir_of(&source, ID1);
    assert_eq!(conversation(&source, &dir).len(), 1);
    let walks = source.walks();
    append(&first, &claude_line("b", Some("a"), "two"));
    assert_eq!(source.session_dirs("--w--").unwrap().len(), 6);
    assert!(source.has_namespace("--w--"));
    assert_eq!(conversation(&source, &dir).len(), 2, "the append is seen");
    assert_eq!(meta(&source, &dir)["messages"], 2);
    assert_eq!(source.walks(), walks, "an append walked the folders");
    std::fs::write(
        store.project.join(format!("{ID2}.jsonl")),
        claude_line("c", None, "new"),
    )
    .unwrap();
    assert_eq!(source.session_dirs("--w--").unwrap().len(), 7);
    assert!(source.walks() > walks);
}

/// A session its agent writes to while the first index is still reading other
/// projects' sessions: once its own project is listed, the next read of its listing
/// and index.json show the write (the build's walk is its own until it ends, but what
/// it already read is checked again).
#[test]
fn a_write_during_the_first_index_shows_on_the_next_read_of_its_project() {
    let store = Store::new();
    let first = store.project.join(format!("{ID1}.jsonl"));
    std::fs::write(&first, claude_line("a", None, "one")).unwrap();
    // Another project, big enough that its first index is still being read.
    let big = store.root.join("projects/-big");
    std::fs::create_dir_all(&big).unwrap();
    let (text, _) = claude_session(2 << 20);
    let text = text.replace("\"cwd\":\"/w\"", "\"cwd\":\"/big\"");
    for k in 0..60 {
        let id = format!("44444444-4444-4444-8444-{k:012}");
        std::fs::write(big.join(format!("{id}.jsonl")), &text).unwrap();
    }
    let source = std::sync::Arc::new(ForeignSource::watching(
        &store.agent_root(),
        Some(&store.fen),
    ));
    let build = {
        let s = source.clone();
        std::thread::spawn(move || s.build_index())
    };
    let dir = dir_of(&source, ID1);
    assert_eq!(conversation(&source, &dir).len(), 1);
    append(&first, &claude_line("b", Some("a"), "two"));
    let building = !source.is_indexed();
    // The project's listing (index.json) first: a session's own views stat its file.
    let listed = source.listings("--w--").unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].messages, 2, "the write is not in the listing");
    let index: serde_json::Value =
        serde_json::from_slice(&source.index("--w--").unwrap().index_json).unwrap();
    assert_eq!(index[0]["messages"], 2, "the write is not in index.json");
    assert_eq!(conversation(&source, &dir).len(), 2);
    assert!(
        building,
        "the first index ended before the write: nothing was tested"
    );
    build.join().unwrap();
    assert_eq!(conversation(&source, &dir).len(), 2);
}
