//! Other machines' stores as the tree shows them (§12), in-process without a mount
//! (runs anywhere): path maps (also inside one lossy namespace), `@host` folders,
//! `host` / `cwd_on_host` / `version_of`, `meta.json` under this machine's names,
//! read-only (EROFS), sync litter ignored, and nothing written under `peers/`.

use fen_fs::config::PathRule;
use fen_fs::sources::SessionSource;
use fen_fs::sources::fen::FenSource;
use fen_fs::sources::peers::{PeerOptions, peer_sources};
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::tree::{ROOT, Tree};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A fen session file as another machine's fen-fs wrote it.
fn session(peer: &Path, cwd: &str, id: &str, words: &str) -> String {
    let ns = fen_fs::store::naming::slug(cwd);
    let dir = format!("2026-01-0{}T00-00-00-000Z_{id}", id.len() % 9 + 1);
    std::fs::create_dir_all(peer.join(&ns)).unwrap();
    let header = serde_json::json!({"type":"session","version":2,"id":id,"timestamp":"2026-01-01T00:00:00.000Z","cwd":cwd});
    let entry = serde_json::json!({"type":"message","id":"0190a000-0000-7000-8000-000000000001","parent-id":null,
        "timestamp":"2026-01-02T03:04:05.000Z","message":{"role":"user","content":words}});
    std::fs::write(
        peer.join(&ns).join(format!("{dir}.jsonl")),
        format!("{header}\n{entry}\n"),
    )
    .unwrap();
    dir
}

fn state(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            }
            let bytes = if m.is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            out.insert(e.path(), (m.len(), m.modified().unwrap(), bytes));
        }
    }
    out
}

fn read_file(tree: &Tree, path: &[&str]) -> Vec<u8> {
    let mut ino = ROOT;
    for p in path {
        ino = tree
            .lookup(ino, OsStr::new(p))
            .unwrap_or_else(|e| panic!("{path:?}: {}", e.reason))
            .ino;
    }
    let fh = tree.open(ino, libc::O_RDONLY, 1).unwrap().fh;
    let bytes = tree.read(fh, 0, 1 << 20).unwrap();
    tree.release(fh);
    bytes
}

fn names(tree: &Tree, path: &[&str]) -> Vec<String> {
    let mut ino = ROOT;
    for p in path {
        ino = tree.lookup(ino, OsStr::new(p)).unwrap().ino;
    }
    let fh = tree.opendir(ino).unwrap();
    let out = tree
        .readdir(fh)
        .unwrap()
        .iter()
        .map(|e| e.name.clone())
        .filter(|n| !n.starts_with('.'))
        .collect();
    tree.releasedir(fh);
    out
}

#[test]
fn a_peer_store_shows_under_this_machines_names_and_is_never_written() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = tmp.path().join("peers");
    let mac = peers.join("mac");
    // One lossy namespace on the peer (`--Users-bob-a-b--`) holding two cwds, only one
    // of which a rule maps.
    let moved = session(&mac, "/Users/bob/a/b", "moved1", "the heron migrates");
    let stays = session(&mac, "/Users/bob/a-b", "stays1", "the heron stays");
    let other = session(&mac, "/opt/tools", "other1", "unmapped otter");
    let ns = mac.join("--Users-bob-a-b--");
    let conflict = format!("{moved}.sync-conflict-20260101-120000-ABCDEFG");
    std::fs::copy(
        ns.join(format!("{moved}.jsonl")),
        ns.join(format!("{conflict}.jsonl")),
    )
    .unwrap();
    std::fs::write(
        ns.join(format!(".syncthing.{stays}.jsonl.tmp")),
        b"{\"type\":\"sess",
    )
    .unwrap();
    std::fs::write(ns.join(format!("~syncthing~{stays}.jsonl.tmp")), b"").unwrap();
    std::fs::create_dir(mac.join(".stfolder")).unwrap();
    let before = state(&peers);

    let local = Arc::new(Store::open(tmp.path().join("store"), FsyncMode::No).unwrap());
    let options = PeerOptions {
        dir: Some(peers.clone()),
        maps: vec![PathRule {
            host: None,
            from: "/Users/bob/a".into(),
            to: "/srv/a".into(),
        }],
    };
    let found = peer_sources(&options, &local.root, false).unwrap();
    assert_eq!(found.len(), 1);
    let peer = found[0].clone();
    assert_eq!(peer.host(), Some("mac"));
    assert!(!peer.writable());
    assert_eq!(
        peer.namespaces().unwrap(),
        ["--Users-bob-a-b--", "--opt-tools--", "--srv-a-b--"]
    );
    assert_eq!(
        peer.session_dirs("--srv-a-b--").unwrap(),
        [format!("{conflict}@mac"), format!("{moved}@mac")]
    );
    assert_eq!(
        peer.session_dirs("--Users-bob-a-b--").unwrap(),
        [format!("{stays}@mac")]
    );
    let l = peer.listings("--srv-a-b--").unwrap();
    let orig = l.iter().find(|l| l.dir == format!("{moved}@mac")).unwrap();
    assert_eq!(orig.host.as_deref(), Some("mac"));
    assert_eq!(orig.cwd.as_deref(), Some("/srv/a/b"));
    assert_eq!(orig.cwd_on_host.as_deref(), Some("/Users/bob/a/b"));
    assert_eq!(orig.version_of, None);
    let copy = l
        .iter()
        .find(|l| l.dir == format!("{conflict}@mac"))
        .unwrap();
    assert_eq!(
        copy.version_of.as_deref(),
        Some(format!("{moved}@mac").as_str())
    );
    let facts = peer
        .messages("--srv-a-b--", &format!("{moved}@mac"), false)
        .unwrap()
        .facts;
    assert_eq!(
        (facts.host.as_deref(), facts.cwd.as_deref()),
        (Some("mac"), Some("/srv/a/b"))
    );
    assert_eq!(facts.dir, format!("{moved}@mac"));

    // The tree over this machine's store and the peer's.
    let sources: Vec<Arc<dyn SessionSource>> = vec![
        Arc::new(FenSource::new(local.clone())),
        peer.clone() as Arc<dyn SessionSource>,
    ];
    let tree = Tree::new(sources, None, 1000, 1000);
    let root = names(&tree, &[]);
    assert!(
        root.contains(&"srv-a-b".to_string()) && root.contains(&"opt-tools".to_string()),
        "{root:?}"
    );
    assert!(
        !names(&tree, &["Users-bob-a-b"])
            .iter()
            .any(|n| n.contains("syncthing"))
    );
    let meta: Value = serde_json::from_slice(&read_file(
        &tree,
        &["srv-a-b", &format!("{moved}@mac"), "meta.json"],
    ))
    .unwrap();
    assert_eq!(meta["host"], "mac");
    assert_eq!(meta["cwd"], "/srv/a/b");
    assert_eq!(meta["cwd_on_host"], "/Users/bob/a/b");
    assert_eq!(meta["namespace"], "srv-a-b");
    assert_eq!(meta["dir"], format!("{moved}@mac"));
    assert_eq!(
        meta["updated_at"], "2026-01-02T03:04:05.000Z",
        "from the content"
    );
    let index: Vec<Value> =
        serde_json::from_slice(&read_file(&tree, &["opt-tools", "index.json"])).unwrap();
    assert_eq!(index[0]["dir"], format!("{other}@mac"));
    assert_eq!(index[0]["host"], "mac");
    let transcript = read_file(
        &tree,
        &["Users-bob-a-b", &format!("{stays}@mac"), "transcript.jsonl"],
    );
    assert!(String::from_utf8_lossy(&transcript).contains("the heron stays"));
    // Read-only: rmdir refused with EROFS, no ctl.
    let ns_ino = tree.lookup(ROOT, OsStr::new("srv-a-b")).unwrap().ino;
    let err = tree
        .rmdir(ns_ino, OsStr::new(&format!("{moved}@mac")))
        .unwrap_err();
    assert_eq!(err.errno, libc::EROFS);
    let dir_ino = tree
        .lookup(ns_ino, OsStr::new(&format!("{moved}@mac")))
        .unwrap()
        .ino;
    assert!(tree.lookup(dir_ino, OsStr::new("ctl")).is_err());
    peer.persist();

    // Nothing under peers/ changed; the peer's caches are in this machine's store.
    assert_eq!(state(&peers), before);
    assert!(local.root.join(".fen-cache/peers/mac").is_dir());
}

/// Syncthing never writes in place: a session that grew on its machine arrives as a
/// new file renamed over the old one. Its earlier bytes are unchanged (the content
/// check proves it), so the index and search read only the new bytes; a copy whose
/// earlier bytes differ is read again whole.
#[test]
fn a_grown_copy_delivered_by_rename_is_read_on_from_where_it_was() {
    use fen_fs::sources::MessageMark;
    use fen_fs::store::index::Refresh;
    let tmp = tempfile::tempdir().unwrap();
    let mac = tmp.path().join("peers/mac");
    let dir = session(&mac, "/p", "grow1", "the first words");
    let ns = "--p--";
    let file = mac.join(ns).join(format!("{dir}.jsonl"));
    let deliver = |bytes: &[u8]| {
        let tmpf = mac.join(ns).join(format!(".syncthing.{dir}.jsonl.tmp"));
        std::fs::write(&tmpf, bytes).unwrap();
        std::fs::rename(&tmpf, &file).unwrap();
    };
    let line = |n: u32, words: &str| {
        serde_json::json!({"type":"message","id":format!("0190a000-0000-7000-8000-0000000000{n:02}"),"parent-id":null,
            "timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"assistant","content":words}})
        .to_string()
            + "\n"
    };
    let local = tmp.path().join("store");
    std::fs::create_dir(&local).unwrap();

    // The store layer: the index goes on.
    let store = Store::open_peer(mac.clone(), local.join("cache"));
    let s = store.session(ns, &dir).unwrap();
    assert!(matches!(s.refresh().unwrap(), Refresh::Reloaded));
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend(line(2, "the second words").as_bytes());
    deliver(&bytes);
    assert!(
        matches!(s.refresh().unwrap(), Refresh::Grew(_)),
        "a grown copy is read on"
    );
    assert_eq!(s.index().message_count(), 2);

    // Search's reading through the peer's source: only the new message.
    let peer = peer_sources(
        &PeerOptions {
            dir: Some(tmp.path().join("peers")),
            maps: vec![],
        },
        &local,
        false,
    )
    .unwrap()
    .remove(0);
    let d = format!("{dir}@mac");
    let mut seen = Vec::new();
    let first = peer
        .each_message_since(ns, &d, MessageMark::default(), &mut |f, _, m| {
            assert_eq!(f.host.as_deref(), Some("mac"));
            seen.push(m.entry.clone().unwrap_or_default());
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(seen.len(), 2);
    bytes.extend(line(3, "the third words").as_bytes());
    deliver(&bytes);
    seen.clear();
    let next = peer
        .each_message_since(ns, &d, first.mark, &mut |_, _, m| {
            seen.push(m.entry.clone().unwrap_or_default());
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert!(next.resumed, "read on from the mark");
    assert_eq!(seen, ["0190a000-0000-7000-8000-000000000003"]);

    // A copy whose earlier bytes changed is another file: read whole.
    let mut changed = bytes.clone();
    let at = changed.windows(5).position(|w| w == b"first").unwrap();
    changed[at..at + 5].copy_from_slice(b"FIRST");
    changed.extend(line(4, "the fourth words").as_bytes());
    deliver(&changed);
    seen.clear();
    let again = peer
        .each_message_since(ns, &d, next.mark, &mut |_, _, m| {
            seen.push(m.entry.clone().unwrap_or_default());
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert!(!again.resumed);
    assert_eq!(seen.len(), 4);
}

/// A peer's sessions keep no index in memory once listed or read (every session of
/// another machine would cost memory), and a large one that grew by a copy delivered
/// by rename is read on from its persisted index, in this machine's cache, not again
/// from its start.
#[test]
fn a_released_large_peer_session_is_read_on_from_its_persisted_index() {
    use fen_fs::store::index::Refresh;
    let tmp = tempfile::tempdir().unwrap();
    let mac = tmp.path().join("peers/mac");
    let dir = session(&mac, "/p", "large1", "the first words");
    let file = mac.join("--p--").join(format!("{dir}.jsonl"));
    let line = |n: u32| {
        serde_json::json!({"type":"message","id":format!("0190a000-0000-7000-8000-{n:012}"),"parent-id":null,
            "timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"assistant","content":"x".repeat(4000)}})
        .to_string()
            + "\n"
    };
    let mut bytes = std::fs::read(&file).unwrap();
    for n in 2..300 {
        bytes.extend(line(n).as_bytes());
    }
    std::fs::write(&file, &bytes).unwrap();
    assert!(bytes.len() > 1 << 20);
    let cache = tmp.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    let store = Store::open_peer(mac.clone(), cache.clone());
    {
        let s = store.session("--p--", &dir).unwrap();
        assert!(matches!(s.refresh().unwrap(), Refresh::Reloaded));
    }
    store.release_if_idle("--p--", &dir);
    assert!(store.known_sessions().is_empty(), "the index was dropped");
    bytes.extend(line(300).as_bytes());
    let tmpf = mac
        .join("--p--")
        .join(format!(".syncthing.{dir}.jsonl.tmp"));
    std::fs::write(&tmpf, &bytes).unwrap();
    std::fs::rename(&tmpf, &file).unwrap();
    let s = store.session("--p--", &dir).unwrap();
    assert!(
        matches!(s.refresh().unwrap(), Refresh::Grew(_)),
        "read on from the persisted index"
    );
    assert_eq!(s.index().message_count(), 300);
    assert!(
        state(&cache)
            .keys()
            .any(|p| p.to_string_lossy().ends_with(".idx"))
    );
}

/// A peer's usage (§13) is counted as that machine's, in its cwd as mapped here: by
/// `fen-fs usage`, the usage/ folder and the MCP usage tool alike (they read the same
/// sources).
#[test]
fn a_peers_usage_is_counted_as_that_machines_in_its_mapped_cwd() {
    // A Claude Code session of the peer (as its kept copies will bring them),
    // wrapped as peer `desktop`'s, beside nothing of this machine.
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let folder = claude.join("projects").join("-Users-bob-proj");
    std::fs::create_dir_all(&folder).unwrap();
    let line = serde_json::json!({
        "type": "assistant", "uuid": "u1", "parentUuid": null,
        "sessionId": "0e0e0e0e-0000-4000-8000-00000000000e", "cwd": "/Users/bob/proj",
        "timestamp": "2026-03-01T10:00:00.000Z", "requestId": "req_1",
        "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "done"}],
            "usage": {"input_tokens": 100, "output_tokens": 20}},
    });
    std::fs::write(
        folder.join("0e0e0e0e-0000-4000-8000-00000000000e.jsonl"),
        format!("{line}\n"),
    )
    .unwrap();
    let options = fen_fs::sources::ForeignOptions {
        detect: false,
        explicit: vec![fen_fs::sources::agents::AgentRoot {
            agent: fen_fs::agent::Agent::Claude,
            root: claude.clone(),
        }],
    };
    // (The agent's own source: the first, before the one over kept copies.)
    let inner = fen_fs::sources::foreign_sources(&options, &tmp.path().join("store"), false)
        .into_iter()
        .next()
        .unwrap();
    let rules = [PathRule {
        host: None,
        from: "/Users/bob".into(),
        to: "/home/u".into(),
    }];
    let peer = fen_fs::sources::peers::PeerSource::wrap(
        "desktop",
        &claude,
        inner,
        Box::new(|_, _| None),
        fen_fs::config::PathMap::for_host(&rules, "desktop"),
    );
    let usage = fen_fs::usage::Usage::new(
        vec![Arc::new(peer) as Arc<dyn SessionSource>],
        None,
        fen_fs::usage::prices::Prices::builtin(),
    );
    usage.refresh_all().unwrap();
    let zone = fen_fs::usage::zone::Zone::parse("UTC").unwrap();
    let report = |kind| {
        usage
            .report(&fen_fs::usage::report::Query::new(kind, zone))
            .rows
            .iter()
            .map(|r| (r.key.clone(), r.sum.tokens.total()))
            .collect::<Vec<_>>()
    };
    use fen_fs::usage::report::Kind;
    assert_eq!(report(Kind::Host), [("desktop".to_string(), 120)]);
    assert_eq!(report(Kind::Project), [("/home/u/proj".to_string(), 120)]);
}
