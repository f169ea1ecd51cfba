//! The mount's tree driven in-process, without FUSE (runs on any machine): lookups,
//! listings, attributes, view snapshots, `ctl` writes, replies and errors, through the
//! same `Tree` methods the FUSE adapter calls.

use fen_fs::ctl::CtlService;
use fen_fs::sources::SessionSource;
use fen_fs::sources::fen::FenSource;
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::tree::attr::{CacheMode, FileKind};
use fen_fs::tree::{DirEntry, ROOT, SetAttr, Tree};
use serde_json::Value;
use std::ffi::OsStr;
use std::sync::Arc;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    tree: Tree,
}

/// The store's namespace behind a mount folder name.
fn disk_ns(name: &str) -> String {
    fen_fs::store::naming::namespaces_of_mount_name(name).remove(0)
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path().join("store"), FsyncMode::No).unwrap());
    let ctl = Arc::new(CtlService::new(store.clone(), 1 << 20));
    let sources: Vec<Arc<dyn SessionSource>> = vec![Arc::new(FenSource::new(store.clone()))];
    let tree = Tree::new(sources, Some(ctl), 1000, 1000);
    Fixture {
        _dir: dir,
        store,
        tree,
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
        let entries: Vec<DirEntry> = self.tree.readdir(fh).unwrap().to_vec();
        self.tree.releasedir(fh);
        entries.into_iter().map(|e| e.name).collect()
    }

    /// Opens, reads to the end, releases: what `cat` gets.
    fn cat(&self, path: &str) -> Vec<u8> {
        let ino = self.lookup(path).unwrap();
        let o = self.tree.open(ino, libc::O_RDONLY, 1).unwrap();
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

    /// `open(O_RDWR)`, write `line`, read the reply, close: as an agent would.
    fn ctl(&self, path: &str, line: &str) -> (fen_fs::Result<usize>, String) {
        let ino = self.lookup(path).unwrap();
        let o = self.tree.open(ino, libc::O_RDWR, 42).unwrap();
        assert_eq!(o.cache, CacheMode::Stream);
        let written = self.tree.write(ino, o.fh, line.as_bytes(), Some(7));
        let reply = self.tree.read(o.fh, 0, 4096).unwrap();
        self.tree.flush(ino, o.fh, 7).unwrap();
        self.tree.release(o.fh);
        (written, String::from_utf8(reply).unwrap())
    }

    /// Creates a session in `cwd`; returns "namespace/dir".
    fn create(&self, cwd: &str, content: &str) -> String {
        let line = format!(r#"{{"cwd":"{cwd}","role":"user","content":"{content}"}}"#) + "\n";
        let (written, reply) = self.ctl("ctl", &line);
        assert_eq!(written.unwrap(), line.len());
        let mut words = reply.split_whitespace();
        assert_eq!(words.next(), Some("ok"), "{reply}");
        words.nth(1).unwrap().to_string()
    }
}

#[test]
fn an_empty_store_has_only_the_root_ctl() {
    let f = fixture();
    assert_eq!(f.names("/"), [".", "..", "ctl"]);
    let attr = f.tree.getattr(ROOT, None, None).unwrap();
    assert_eq!(attr.kind, FileKind::Directory);
    assert_eq!(attr.perm, 0o755);
    assert_eq!(f.lookup("nothing").unwrap_err().errno, libc::ENOENT);
}

#[test]
fn a_created_session_is_listed_and_its_views_read() {
    let f = fixture();
    let path = f.create("/home/u/proj", "hello");
    let (ns, dir) = path.split_once('/').unwrap();
    assert_eq!(ns, "home-u-proj", "no mount name begins with -");
    assert_eq!(f.names("/"), [".", "..", "ctl", ns]);
    assert_eq!(f.names(ns), [".", "..", "latest", "index.json", dir]);
    assert_eq!(
        f.names(&path),
        [
            ".",
            "..",
            "conversation.json",
            "conversation.md",
            "ctl",
            "meta.json",
            "summary.txt",
            "transcript.jsonl"
        ]
    );

    // `stat` size is what a read returns, for every view.
    for view in [
        "conversation.json",
        "conversation.md",
        "meta.json",
        "summary.txt",
        "transcript.jsonl",
    ] {
        let p = format!("{path}/{view}");
        let attr = f.tree.getattr(f.lookup(&p).unwrap(), None, None).unwrap();
        assert_eq!(attr.size, f.cat(&p).len() as u64, "{view}");
        assert_eq!(attr.perm, 0o444);
    }
    assert_eq!(
        f.cat(&format!("{path}/conversation.json")),
        b"[\n{\"role\":\"user\",\"content\":\"hello\"}\n]\n"
    );
    let meta: Value = serde_json::from_slice(&f.cat(&format!("{path}/meta.json"))).unwrap();
    assert_eq!(meta["cwd"], "/home/u/proj");
    assert_eq!(meta["messages"], 1);

    let index: Value = serde_json::from_slice(&f.cat(&format!("{ns}/index.json"))).unwrap();
    assert_eq!(index[0]["dir"], dir);
    assert_eq!(
        f.tree
            .readlink(f.lookup(&format!("{ns}/latest")).unwrap())
            .unwrap(),
        dir.as_bytes()
    );
}

#[test]
fn session_ctl_appends_and_replies_with_the_entry_id() {
    let f = fixture();
    let path = f.create("/p", "one");
    let (written, reply) = f.ctl(
        &format!("{path}/ctl"),
        "{\"role\":\"assistant\",\"content\":\"two\"}\n",
    );
    assert!(written.is_ok());
    assert!(reply.starts_with("ok "), "{reply}");
    let conv = String::from_utf8(f.cat(&format!("{path}/conversation.json"))).unwrap();
    assert_eq!(conv.lines().count(), 4, "{conv}");

    // A fresh handle that wrote nothing reads the log of recent replies.
    let log = String::from_utf8(f.cat(&format!("{path}/ctl"))).unwrap();
    assert!(log.contains("pid=42 ok "), "{log}");
}

#[test]
fn a_bad_ctl_line_fails_the_write_and_appends_nothing() {
    let f = fixture();
    let path = f.create("/p", "one");
    let before = f.cat(&format!("{path}/transcript.jsonl"));
    let (written, reply) = f.ctl(
        &format!("{path}/ctl"),
        "{\"role\":\"user\",\"content\":\"ok\"}\nnot json\n",
    );
    assert_eq!(written.unwrap_err().errno, libc::EINVAL);
    assert!(reply.contains("err EINVAL"), "{reply}");
    assert_eq!(f.cat(&format!("{path}/transcript.jsonl")), before);

    let (written, _) = f.ctl(
        &format!("{path}/ctl"),
        "{\"id\":\"x\",\"role\":\"user\",\"content\":1}\n",
    );
    assert_eq!(written.unwrap_err().errno, libc::EINVAL, "reserved field");
    let (written, _) = f.ctl("ctl", "{\"role\":\"user\",\"content\":\"no cwd\"}\n");
    assert_eq!(
        written.unwrap_err().errno,
        libc::EINVAL,
        "root line without cwd"
    );
}

#[test]
fn an_open_view_is_a_snapshot() {
    let f = fixture();
    let path = f.create("/p", "one");
    let conv = f.lookup(&format!("{path}/conversation.json")).unwrap();
    let o = f.tree.open(conv, libc::O_RDONLY, 1).unwrap();
    assert_eq!(o.cache, CacheMode::DirectIo);
    let size = f.tree.getattr(conv, Some(o.fh), None).unwrap().size;
    f.ctl(
        &format!("{path}/ctl"),
        "{\"role\":\"assistant\",\"content\":\"two\"}\n",
    )
    .0
    .unwrap();
    // The handle keeps its size and bytes; a fresh open sees the append.
    assert_eq!(f.tree.getattr(conv, Some(o.fh), None).unwrap().size, size);
    assert_eq!(f.tree.read(o.fh, 0, 1 << 20).unwrap().len() as u64, size);
    assert!(f.tree.getattr(conv, None, None).unwrap().size > size);
    f.tree.release(o.fh);
}

#[test]
fn structure_is_fixed_and_views_are_read_only() {
    let f = fixture();
    let path = f.create("/p", "one");
    let (ns, dir) = path.split_once('/').unwrap();
    let ns_ino = f.lookup(ns).unwrap();
    let err = f.tree.change_structure(ns_ino, OsStr::new(dir));
    assert_eq!(err.errno, libc::EPERM);
    let view = f.lookup(&format!("{path}/meta.json")).unwrap();
    assert_eq!(
        f.tree.open(view, libc::O_WRONLY, 1).unwrap_err().errno,
        libc::EACCES
    );
    let change = SetAttr {
        size: true,
        ..Default::default()
    };
    assert_eq!(
        f.tree.setattr(view, change).unwrap_err().errno,
        libc::EACCES
    );
    let ctl = f.lookup(&format!("{path}/ctl")).unwrap();
    assert!(
        f.tree.setattr(ctl, change).is_ok(),
        "`> ctl` truncates first"
    );
    let chmod = SetAttr {
        mode: true,
        ..Default::default()
    };
    assert_eq!(f.tree.setattr(ctl, chmod).unwrap_err().errno, libc::EPERM);
    assert_eq!(
        f.tree.lookup(view, OsStr::new("x")).unwrap_err().errno,
        libc::ENOTDIR
    );
    assert_eq!(f.tree.readlink(view).unwrap_err().errno, libc::EINVAL);
}

#[test]
fn a_session_deleted_behind_the_tree_disappears() {
    let f = fixture();
    let path = f.create("/p", "one");
    let (ns, dir) = path.split_once('/').unwrap();
    let ino = f.lookup(&path).unwrap();
    std::fs::remove_file(f.store.session_path(&disk_ns(ns), dir)).unwrap();
    assert_eq!(
        f.tree.getattr(ino, None, None).unwrap_err().errno,
        libc::ENOENT
    );
    assert_eq!(f.lookup(ns).unwrap_err().errno, libc::ENOENT);
    assert_eq!(f.names("/"), [".", "..", "ctl"]);
}

#[test]
fn namespaces_sort_and_latest_follows_the_newest_update() {
    let f = fixture();
    let a = f.create("/p", "first");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = f.create("/p", "second");
    let ns = a.split_once('/').unwrap().0;
    let latest = |f: &Fixture| {
        f.tree
            .readlink(f.lookup(&format!("{ns}/latest")).unwrap())
            .unwrap()
    };
    assert_eq!(latest(&f), b.split_once('/').unwrap().1.as_bytes());
    std::thread::sleep(std::time::Duration::from_millis(5));
    f.ctl(
        &format!("{a}/ctl"),
        "{\"role\":\"assistant\",\"content\":\"newer\"}\n",
    )
    .0
    .unwrap();
    assert_eq!(latest(&f), a.split_once('/').unwrap().1.as_bytes());
}

/// fen's store served as a read-only source: how another agent's sessions look to
/// the tree. It counts how often it is asked whether it has a namespace (a kept
/// copies' source answers a "no" by listing every copy again).
struct ReadOnly(FenSource, std::sync::atomic::AtomicUsize);

impl ReadOnly {
    fn new(store: Arc<Store>) -> ReadOnly {
        ReadOnly(FenSource::new(store), Default::default())
    }
}

impl SessionSource for ReadOnly {
    fn agent(&self) -> fen_fs::agent::Agent {
        fen_fs::agent::Agent::Claude
    }
    fn writable(&self) -> bool {
        false
    }
    fn root(&self) -> &std::path::Path {
        self.0.root()
    }
    fn root_mtime(&self) -> Option<std::time::SystemTime> {
        self.0.root_mtime()
    }
    fn namespaces(&self) -> fen_fs::Result<Vec<String>> {
        self.0.namespaces()
    }
    fn has_namespace(&self, ns: &str) -> bool {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.has_namespace(ns)
    }
    fn namespace_mtime(&self, ns: &str) -> Option<std::time::SystemTime> {
        self.0.namespace_mtime(ns)
    }
    fn session_dirs(&self, ns: &str) -> fen_fs::Result<Vec<String>> {
        self.0.session_dirs(ns)
    }
    fn session_stat(&self, ns: &str, dir: &str) -> fen_fs::Result<fen_fs::sources::SessionStat> {
        self.0.session_stat(ns, dir)
    }
    fn listings(&self, ns: &str) -> fen_fs::Result<Vec<fen_fs::views::listing::Listing>> {
        self.0.listings(ns)
    }
    fn index(&self, ns: &str) -> fen_fs::Result<fen_fs::sources::NamespaceIndex> {
        self.0.index(ns)
    }
    fn view_size(
        &self,
        ns: &str,
        dir: &str,
        kind: fen_fs::views::ViewKind,
        writers: u64,
    ) -> fen_fs::Result<u64> {
        self.0.view_size(ns, dir, kind, writers)
    }
    fn snapshot(
        &self,
        ns: &str,
        dir: &str,
        kind: fen_fs::views::ViewKind,
        writers: u64,
    ) -> fen_fs::Result<fen_fs::views::Snapshot> {
        self.0.snapshot(ns, dir, kind, writers)
    }
}

#[test]
fn rmdir_moves_a_session_to_the_trash_and_the_last_one_takes_its_namespace() {
    let f = fixture();
    let a = f.create("/p", "first");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = f.create("/p", "second");
    let (ns, dir_a) = a.split_once('/').unwrap();
    let dir_b = b.split_once('/').unwrap().1;
    let bytes = std::fs::read(f.store.session_path(&disk_ns(ns), dir_b)).unwrap();
    let ns_ino = f.lookup(ns).unwrap();

    // The folder holds views; it goes whole.
    f.tree.rmdir(ns_ino, OsStr::new(dir_b)).unwrap();
    assert_eq!(f.names(ns), [".", "..", "latest", "index.json", dir_a]);
    let index: Value = serde_json::from_slice(&f.cat(&format!("{ns}/index.json"))).unwrap();
    assert_eq!(index.as_array().unwrap().len(), 1);
    assert_eq!(index[0]["dir"], dir_a);
    assert_eq!(
        f.tree
            .readlink(f.lookup(&format!("{ns}/latest")).unwrap())
            .unwrap(),
        dir_a.as_bytes()
    );
    assert_eq!(f.lookup(&b).unwrap_err().errno, libc::ENOENT);
    let trashed = f.store.trashed().unwrap();
    assert_eq!(trashed.len(), 1);
    assert_eq!(
        (trashed[0].namespace.as_str(), trashed[0].dir.as_str()),
        (disk_ns(ns).as_str(), dir_b)
    );
    assert_eq!(std::fs::read(&trashed[0].path).unwrap(), bytes);

    // The last session: the namespace goes too, here and on disk.
    f.tree.rmdir(ns_ino, OsStr::new(dir_a)).unwrap();
    assert_eq!(f.names("/"), [".", "..", "ctl"]);
    assert_eq!(f.lookup(ns).unwrap_err().errno, libc::ENOENT);
    assert!(!f.store.root.join(ns).exists());
    assert_eq!(f.store.trashed().unwrap().len(), 2);
    // `.trash` is never a namespace.
    assert!(f.store.namespaces().unwrap().is_empty());

    // Restored: back under its name, listed again.
    let t = f.store.resolve_trashed(dir_b).unwrap();
    f.store.restore(&t).unwrap();
    assert_eq!(
        std::fs::read(f.store.session_path(&disk_ns(ns), dir_b)).unwrap(),
        bytes
    );
    assert_eq!(f.names(ns), [".", "..", "latest", "index.json", dir_b]);
}

#[test]
fn rmdir_of_a_session_with_a_ctl_writer_is_busy() {
    let f = fixture();
    let path = f.create("/p", "one");
    let (ns, dir) = path.split_once('/').unwrap();
    let ns_ino = f.lookup(ns).unwrap();
    let ctl = f.lookup(&format!("{path}/ctl")).unwrap();

    // Reading the log is not writing: no obstacle.
    let reader = f.tree.open(ctl, libc::O_RDONLY, 1).unwrap();
    let writer = f.tree.open(ctl, libc::O_WRONLY, 1).unwrap();
    let err = f.tree.rmdir(ns_ino, OsStr::new(dir)).unwrap_err();
    assert_eq!(err.errno, libc::EBUSY, "{err}");
    assert!(f.store.session_path(&disk_ns(ns), dir).exists());
    f.tree.release(writer.fh);
    f.tree.rmdir(ns_ino, OsStr::new(dir)).unwrap();
    f.tree.release(reader.fh);
    assert!(!f.store.session_path(&disk_ns(ns), dir).exists());
    // Its ctl cannot be opened any more.
    assert_eq!(
        f.tree.open(ctl, libc::O_WRONLY, 1).unwrap_err().errno,
        libc::ENOENT
    );
}

#[test]
fn only_session_folders_can_be_removed() {
    let f = fixture();
    let path = f.create("/p", "one");
    let (ns, dir) = path.split_once('/').unwrap();
    let ns_ino = f.lookup(ns).unwrap();
    let session = f.lookup(&path).unwrap();
    // A single view cannot be unlinked, nor a namespace removed.
    assert_eq!(
        f.tree
            .change_structure(session, OsStr::new("meta.json"))
            .errno,
        libc::EPERM
    );
    assert_eq!(
        f.tree.rmdir(ROOT, OsStr::new(ns)).unwrap_err().errno,
        libc::EPERM
    );
    assert_eq!(
        f.tree.rmdir(session, OsStr::new("x")).unwrap_err().errno,
        libc::EPERM
    );
    assert_eq!(
        f.tree
            .rmdir(ns_ino, OsStr::new("index.json"))
            .unwrap_err()
            .errno,
        libc::ENOTDIR
    );
    assert_eq!(
        f.tree.rmdir(ns_ino, OsStr::new("nope")).unwrap_err().errno,
        libc::ENOENT
    );
    assert_eq!(f.names(ns), [".", "..", "latest", "index.json", dir]);
}

#[test]
fn another_agents_session_cannot_be_removed() {
    let f = fixture();
    let path = f.create("/p", "one");
    let (ns, dir) = path.split_once('/').unwrap();
    let sources: Vec<Arc<dyn SessionSource>> = vec![Arc::new(ReadOnly::new(f.store.clone()))];
    let tree = Tree::new(sources, None, 1000, 1000);
    let ns_ino = tree.lookup(ROOT, OsStr::new(ns)).unwrap().ino;
    let err = tree.rmdir(ns_ino, OsStr::new(dir)).unwrap_err();
    assert_eq!(err.errno, libc::EROFS, "{err}");
    assert!(f.store.session_path(&disk_ns(ns), dir).exists());
    assert!(f.store.trashed().unwrap().is_empty());
}

/// A `ctl`'s size is its log; a read-only handle reads that log at offsets and grows
/// with new lines (tail -f), also through its process's `getattr` without a handle.
#[test]
fn ctl_size_is_its_log_and_a_reader_follows_it() {
    let f = fixture();
    let s = f.create("/p", "hi");
    let ctl_path = format!("{s}/ctl");
    let ino = f.lookup(&ctl_path).unwrap();
    f.ctl(&ctl_path, "{\"role\":\"user\",\"content\":\"a\"}\n")
        .0
        .unwrap();
    let log = f.cat(&ctl_path);
    assert_eq!(
        f.tree.getattr(ino, None, None).unwrap().size,
        log.len() as u64
    );
    let root_log = f.cat("ctl");
    assert_eq!(
        f.tree.lookup(ROOT, OsStr::new("ctl")).unwrap().size,
        root_log.len() as u64
    );

    let o = f.tree.open(ino, libc::O_RDONLY, 77).unwrap();
    assert_eq!(o.cache, CacheMode::DirectIo);
    assert_eq!(f.tree.read(o.fh, 4, 10).unwrap(), log[4..14].to_vec());
    f.ctl(&ctl_path, "{\"role\":\"user\",\"content\":\"b\"}\n")
        .0
        .unwrap();
    let grown = f.tree.getattr(ino, Some(o.fh), None).unwrap().size;
    assert!(grown > log.len() as u64);
    // The reader's process sees its handle's size; another process the log's.
    assert_eq!(f.tree.getattr(ino, None, Some(77)).unwrap().size, grown);
    let tail = f.tree.read(o.fh, log.len() as u64, 4096).unwrap();
    assert!(String::from_utf8(tail).unwrap().contains(" ok "));
    f.tree.flush(ino, o.fh, 5).unwrap();
    f.tree.release(o.fh);
}

/// A writer that never reads its replies keeps getting `ok`: the handle keeps only
/// at most the most recent 1 MiB of unread replies (at least 512 KiB once full), and no write fails because of them.
#[test]
fn unread_replies_never_fail_a_write_and_the_newest_are_kept() {
    let f = fixture();
    let path = f.create("/p", "one");
    let ino = f.lookup(&format!("{path}/ctl")).unwrap();
    let o = f.tree.open(ino, libc::O_RDWR, 1).unwrap();
    // Replies are `ok <36-char id>\n`, 40 bytes: 30,000 of them are over 1 MiB.
    let n = 30_000;
    for i in 0..n {
        let line = format!("{{\"role\":\"user\",\"content\":\"{i}\"}}\n");
        assert_eq!(
            f.tree.write(ino, o.fh, line.as_bytes(), Some(1)).unwrap(),
            line.len()
        );
    }
    let mut replies = Vec::new();
    loop {
        let chunk = f.tree.read(o.fh, 0, 1 << 16).unwrap();
        if chunk.is_empty() {
            break;
        }
        replies.extend(chunk);
    }
    f.tree.release(o.fh);
    assert!(replies.len() <= 1 << 20, "{} bytes kept", replies.len());
    let text = String::from_utf8(replies).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Replies are 40 bytes: between 512 KiB and 1 MiB of them are kept.
    assert!(
        ((512 << 10) / 40..=(1 << 20) / 40).contains(&lines.len()),
        "{} replies",
        lines.len()
    );
    assert!(
        lines.iter().all(|l| l.starts_with("ok ")),
        "whole lines only"
    );
    // The newest reply is the last entry's id.
    let meta: Value = serde_json::from_slice(&f.cat(&format!("{path}/meta.json"))).unwrap();
    assert_eq!(
        lines.last().unwrap()[3..],
        *meta["last_entry_id"].as_str().unwrap()
    );
    assert_eq!(meta["messages"], n + 1);
}

/// `conversation.md` of a fen session: listed, its size at `stat` is what `cat`
/// reads, it follows §9's rules, an open handle keeps its bytes across an append,
/// and a fresh open sees the append.
#[test]
fn conversation_md_renders_the_conversation_and_is_a_snapshot() {
    let f = fixture();
    let path = f.create("/p", "Add a flag");
    let ctl = format!("{path}/ctl");
    for line in [
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hidden","signature":"s"},{"type":"text","text":"Looking."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.rs\nb.rs"}]}"#,
        r#"{"type":"title","title":"Verbose flag"}"#,
    ] {
        f.ctl(&ctl, &format!("{line}\n")).0.unwrap();
    }
    let md_path = format!("{path}/conversation.md");
    let ino = f.lookup(&md_path).unwrap();
    let attr = f.tree.getattr(ino, None, None).unwrap();
    assert_eq!(attr.perm, 0o444);
    let md = String::from_utf8(f.cat(&md_path)).unwrap();
    assert_eq!(attr.size, md.len() as u64);
    assert!(md.starts_with("# Verbose flag\n\n- agent: fen\n"), "{md}");
    assert!(md.contains("- cwd: /p\n"));
    assert!(md.contains("## user · "));
    assert!(md.contains("Add a flag\n"));
    assert!(md.contains("_(thinking left out)_\n\nLooking.\n\nTool call `Bash`:\n\n```json\n{\n  \"command\": \"ls\"\n}\n```\n"));
    assert!(md.contains("## tool · "));
    assert!(md.contains("Result of `Bash`:\n\n```\na.rs\nb.rs\n```\n"));
    assert!(!md.contains("hidden"));

    let o = f.tree.open(ino, libc::O_RDONLY, 1).unwrap();
    assert_eq!(o.cache, CacheMode::DirectIo);
    f.ctl(
        &ctl,
        "{\"type\":\"compaction\",\"summary\":\"Listed the files.\",\"first-kept-entry-id\":null}\n",
    )
    .0
    .unwrap();
    f.ctl(&ctl, "{\"role\":\"user\",\"content\":\"next\"}\n")
        .0
        .unwrap();
    assert_eq!(f.tree.read(o.fh, 0, 1 << 20).unwrap(), md.as_bytes());
    f.tree.release(o.fh);
    let after = String::from_utf8(f.cat(&md_path)).unwrap();
    assert_eq!(
        f.tree.getattr(ino, None, None).unwrap().size,
        after.len() as u64
    );
    let quote = after
        .find("> **Summary of the conversation before this point**")
        .expect("the summary on top");
    assert!(after.contains(">\n> Listed the files.\n"));
    assert!(quote < after.find("## user").unwrap());
    assert!(after.contains("next\n") && !after.contains("Add a flag\n\n"));
}

/// Another agent's session folder lists `conversation.md` too, rendered from its
/// agent's messages.
#[test]
fn conversation_md_in_another_agents_session() {
    use fen_fs::sources::agents::AgentRoot;
    use fen_fs::sources::foreign_source::ForeignSource;
    let f = fixture();
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("projects/-p");
    std::fs::create_dir_all(&project).unwrap();
    let id = "11111111-2222-4333-8444-555555555555";
    std::fs::write(
        project.join(format!("{id}.jsonl")),
        concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"cwd":"/p","sessionId":"s","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"<command-name>/clear</command-name>"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","parentUuid":"u1","cwd":"/p","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"What is in ```here```?"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u2","cwd":"/p","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","model":"claude-x","content":[{"type":"text","text":"Nothing."}]}}"#,
            "\n"
        ),
    )
    .unwrap();
    let claude = Arc::new(ForeignSource::new(
        &AgentRoot {
            agent: fen_fs::agent::Agent::Claude,
            root: root.path().to_path_buf(),
        },
        None,
    ));
    claude.build_index();
    let sources: Vec<Arc<dyn SessionSource>> =
        vec![Arc::new(FenSource::new(f.store.clone())), claude];
    let tree = Tree::new(sources, None, 1000, 1000);
    let g = Fixture {
        _dir: tempfile::tempdir().unwrap(),
        store: f.store.clone(),
        tree,
    };
    let dirs = g.names("p");
    let dir = dirs.iter().find(|d| d.contains(id)).unwrap();
    let names = g.names(&format!("p/{dir}"));
    assert!(names.contains(&"conversation.md".to_string()), "{names:?}");
    assert!(!names.contains(&"ctl".to_string()));
    let p = format!("p/{dir}/conversation.md");
    let md = String::from_utf8(g.cat(&p)).unwrap();
    let ino = g.lookup(&p).unwrap();
    assert_eq!(
        g.tree.getattr(ino, None, None).unwrap().size,
        md.len() as u64
    );
    assert!(
        md.starts_with("# What is in ```here```?\n\n- agent: claude\n"),
        "{md}"
    );
    assert!(md.contains("_(left out: a user message the agent injected, "));
    assert!(md.contains("What is in ```here```?\n\n## assistant · "));
    assert!(md.contains("Nothing.\n"));
    assert_eq!(
        g.tree.open(ino, libc::O_WRONLY, 1).unwrap_err().errno,
        libc::EROFS
    );
}

/// Looking up a namespace, a session and its views (what `cat` of a view does after
/// the kernel's entries expired) asks the sources after the one that has them
/// nothing: a lookup stays O(1) whatever the other sources hold (bench row 15b: a
/// read 1 s after an append paid for a listing of every kept copy).
#[test]
fn a_lookup_answered_by_one_source_asks_the_others_nothing() {
    let f = fixture();
    let path = f.create("/p", "one");
    let empty = tempfile::tempdir().unwrap();
    // Another source, over a store with no sessions.
    let other = Arc::new(ReadOnly::new(Arc::new(
        Store::open(empty.path().join("store"), FsyncMode::No).unwrap(),
    )));
    let sources: Vec<Arc<dyn SessionSource>> =
        vec![Arc::new(FenSource::new(f.store.clone())), other.clone()];
    let tree = Tree::new(sources, None, 1000, 1000);
    let mut ino = ROOT;
    for part in path.split('/').chain(["conversation.json"]) {
        ino = tree.lookup(ino, OsStr::new(part)).unwrap().ino;
    }
    tree.getattr(ino, None, None).unwrap();
    assert_eq!(
        other.1.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "the other source was asked"
    );
}

/// Background work waits while the mount serves someone, and a moment after a file's
/// open or read (more come in a run), but not after a lookup, a `stat` or a folder's
/// listing: a build watched through such polls every 50 ms would otherwise run half
/// the time (bench row 22 went from 170 to 75 MB/s when lookups waited after them).
#[test]
fn lookups_stats_and_listings_leave_background_work_free_at_once_reads_do_not() {
    let f = fixture();
    let dir = f.create("/w/poll", "hello");
    let Fixture { _dir, store, tree } = f;
    let tree = tree.with_background(fen_fs::background::Background::new());
    let f = Fixture { _dir, store, tree };
    let busy = || f.tree.background().unwrap().mount_busy();
    assert!(!busy());
    let ino = f.lookup(&format!("{dir}/conversation.json")).unwrap();
    f.tree.getattr(ino, None, None).unwrap();
    f.names(&dir);
    assert!(!busy(), "after lookups, a stat and a listing");
    f.cat(&format!("{dir}/conversation.json"));
    assert!(busy(), "right after a read");
}
