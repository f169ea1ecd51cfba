//! Peers (§12) that come and go while a mount runs: a peer's folder appearing in
//! `peers/` after the mount (the peers folder itself made after it, as a first
//! `fen-fs sync add` does) shows in the mount (its namespaces and sessions, `meta.json`
//! with `host`, `index.json`), in the mount's `search/`, `fen-fs search` and `list`,
//! without a remount; its folder removed, it leaves all of them (a name the kernel had
//! cached included), and the mount's own sessions stay. No Syncthing here (the folder
//! is made as Syncthing makes it): `sync_two_machines.rs` does the same through two
//! real Syncthings.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Mount, fen_fs, out_text};

/// Within this of its folder changing, a peer shows or leaves (the target is
/// Syncthing's delay + 3 s from its files arriving; the bound here is generous).
const WITHIN: Duration = Duration::from_secs(3);

/// A fen session file as another machine's fen-fs wrote it; its folder name.
fn peer_session(peer: &Path, cwd: &str, id: &str, words: &str) -> String {
    let ns = fen_fs::store::naming::slug(cwd);
    let dir = format!("2026-01-01T00-00-00-000Z_{id}");
    std::fs::create_dir_all(peer.join(&ns)).unwrap();
    let header = serde_json::json!({"type":"session","version":2,"id":id,
        "timestamp":"2026-01-01T00:00:00.000Z","cwd":cwd});
    let entry = serde_json::json!({"type":"message","id":"0190a000-0000-7000-8000-000000000001",
        "parent-id":null,"timestamp":"2026-01-02T03:04:05.000Z",
        "message":{"role":"user","content":words}});
    std::fs::write(
        peer.join(&ns).join(format!("{dir}.jsonl")),
        format!("{header}\n{entry}\n"),
    )
    .unwrap();
    dir
}

/// Waits for `f` (a generous bound); how long it took.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if f() {
            return start.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what}: not within 30 s");
}

fn cli(m: &Mount, peers: &Path, args: &[&str]) -> String {
    let out = fen_fs()
        .args(args)
        .arg("--store")
        .arg(&m.store)
        .arg("--peers")
        .arg(peers)
        .arg("--no-detect")
        .env("FEN_FS_HOST", "desk")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", out_text(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn hosts_found(m: &Mount, peers: &Path, word: &str) -> Vec<String> {
    cli(m, peers, &["search", "--json", word])
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("id").is_some())
        .map(|v| v["host"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn listed_hosts(m: &Mount, peers: &Path) -> Vec<String> {
    let rows: Vec<Value> =
        serde_json::from_str(&cli(m, peers, &["list", "--all", "--json"])).unwrap();
    rows.iter()
        .map(|r| r["host"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn mount_hits(m: &Mount, word: &str) -> String {
    std::fs::read_to_string(m.path("search").join(word).join("hits.jsonl")).unwrap_or_default()
}

#[test]
fn a_peer_arriving_or_leaving_while_mounted_shows_and_leaves_without_a_remount() {
    let test = "a_peer_arriving_or_leaving_while_mounted_shows_and_leaves_without_a_remount";
    let state = tempfile::tempdir().unwrap();
    let peers: PathBuf = state.path().join("fen/peers");
    let peers_arg = peers.to_str().unwrap();
    let Some(m) = Mount::with_env(
        test,
        &["--no-detect", "--peers", peers_arg],
        &[("FEN_FS_HOST", "desk")],
    ) else {
        return;
    };
    // This machine's own session in the project the peer works in too.
    let own = m.create_session("/home/u/proj", "the local heron");
    m.wait_indexed("heron");
    assert!(!peers.exists(), "no peer yet: not even the folder");

    // The peer's folder arrives (made as Syncthing makes a received folder), then its
    // files: one session in the shared project, one in a project only it has.
    let laptop = peers.join("laptop");
    std::fs::create_dir_all(&laptop).unwrap();
    std::fs::create_dir(laptop.join(".stfolder")).unwrap();
    let shared = peer_session(
        &laptop,
        "/home/u/proj",
        "0190a000-0000-7000-8000-0000000000a1",
        "the marmoset lantern",
    );
    let alone = peer_session(
        &laptop,
        "/home/u/far",
        "0190a000-0000-7000-8000-0000000000a2",
        "the pangolin ledger",
    );
    let arrived = Instant::now();
    let in_shared = m.path("home-u-proj").join(format!("{shared}@laptop"));
    let in_alone = m.path("home-u-far").join(format!("{alone}@laptop"));
    wait_for("the peer's sessions in the mount", || {
        in_shared.join("meta.json").exists() && in_alone.join("meta.json").exists()
    });
    let shown = arrived.elapsed();
    let meta: Value =
        serde_json::from_slice(&std::fs::read(in_shared.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["host"], "laptop");
    assert_eq!(meta["dir"], format!("{shared}@laptop"));
    let root: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(root.contains(&"home-u-far".to_string()), "{root:?}");
    let index: Vec<Value> =
        serde_json::from_slice(&std::fs::read(m.path("home-u-proj/index.json")).unwrap()).unwrap();
    let mut hosts: Vec<&str> = index.iter().map(|l| l["host"].as_str().unwrap()).collect();
    hosts.sort();
    assert_eq!(hosts, ["desk", "laptop"], "{index:?}");
    // Search: the mount's folder and the command (which reads the daemon's index).
    wait_for("the peer's session in search/", || {
        mount_hits(&m, "marmoset").contains("\"host\":\"laptop\"")
    });
    wait_for("the peer's session in fen-fs search", || {
        hosts_found(&m, &peers, "pangolin") == ["laptop"]
    });
    let searched = arrived.elapsed();
    let mut listed = listed_hosts(&m, &peers);
    listed.sort();
    assert_eq!(listed, ["desk", "laptop", "laptop"]);
    eprintln!("a peer arriving: in the mount after {shown:?}, in search after {searched:?}");
    assert!(
        shown <= WITHIN && searched <= WITHIN,
        "{shown:?} {searched:?}"
    );
    // Its sessions show live from then on: another one arrives.
    let later = peer_session(
        &laptop,
        "/home/u/proj",
        "0190a000-0000-7000-8000-0000000000a3",
        "the ocelot quarry",
    );
    wait_for("a later session of the peer", || {
        m.path("home-u-proj")
            .join(format!("{later}@laptop/meta.json"))
            .exists()
    });

    // The kernel has these names cached (looked up just now); the peer's folder goes.
    assert!(std::fs::metadata(&in_alone).is_ok());
    std::fs::remove_dir_all(&laptop).unwrap();
    let left = Instant::now();
    wait_for("the peer's sessions out of the mount", || {
        std::fs::metadata(&in_alone).is_err()
            && std::fs::metadata(&in_shared).is_err()
            && std::fs::metadata(m.path("home-u-far")).is_err()
    });
    let gone = left.elapsed();
    let root: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!root.contains(&"home-u-far".to_string()), "{root:?}");
    let index: Vec<Value> =
        serde_json::from_slice(&std::fs::read(m.path("home-u-proj/index.json")).unwrap()).unwrap();
    assert_eq!(index.len(), 1, "only this machine's own: {index:?}");
    assert_eq!(index[0]["dir"], own.file_name().unwrap().to_str().unwrap());
    wait_for("the peer's sessions out of search", || {
        !mount_hits(&m, "marmoset").contains("laptop")
            && hosts_found(&m, &peers, "pangolin").is_empty()
    });
    assert_eq!(listed_hosts(&m, &peers), ["desk"]);
    assert_eq!(hosts_found(&m, &peers, "heron"), ["desk"], "ours stay");
    eprintln!(
        "a peer leaving: out of the mount after {gone:?}, out of search after {:?}",
        left.elapsed()
    );
    assert!(gone <= WITHIN, "{gone:?}");

    // It comes back: shown again (its sessions indexed again).
    peer_session(
        &laptop,
        "/home/u/far",
        "0190a000-0000-7000-8000-0000000000a2",
        "the pangolin ledger",
    );
    wait_for("the peer back in the mount and search", || {
        in_alone.join("meta.json").exists() && hosts_found(&m, &peers, "pangolin") == ["laptop"]
    });
    // Nothing was ever written under peers/ by fen-fs.
    let mut names = Vec::new();
    let mut todo = vec![peers.clone()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            }
            names.push(e.path().strip_prefix(&peers).unwrap().to_path_buf());
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            PathBuf::from("laptop"),
            PathBuf::from("laptop/--home-u-far--"),
            PathBuf::from(format!("laptop/--home-u-far--/{alone}.jsonl")),
        ]
    );
}
