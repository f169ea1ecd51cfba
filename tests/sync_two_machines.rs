//! Two machines on one box (§12), each with its own HOME, store, mount and a real
//! Syncthing on 127.0.0.1 only: `fen-fs sync init/add` on both; a session made through
//! one machine's ctl found by list, search and the mount on the other with `host` and
//! the mapped cwd; a Claude Code session on one machine, kept by its keeper (§11),
//! found the same way on the other; an append seen there within the watcher delay + 3 s; resume of the
//! peer's session; sync litter and a conflict copy; nothing written under `peers/` by
//! fen-fs; `sync status`; Syncthing not running, or its key wrong.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime};
use support::syncthing::{self, Syncthing};
use support::{fen_fs, fuse_available, out_text};

/// Syncthing's watcher delay in these tests, in seconds.
const DELAY: u64 = 1;

struct Machine {
    name: String,
    dir: PathBuf,
    store: PathBuf,
    mnt: PathBuf,
    st: Option<Syncthing>,
}

impl Machine {
    fn new(root: &Path, name: &str) -> Machine {
        let dir = root.join(name);
        for d in ["home", "state", "config", "mnt"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        Machine {
            name: name.into(),
            store: dir.join("store"),
            mnt: dir.join("mnt"),
            dir,
            st: None,
        }
    }

    fn peers(&self) -> PathBuf {
        self.dir.join("state/fen/peers")
    }

    fn st(&self) -> &Syncthing {
        self.st.as_ref().unwrap()
    }

    /// `fen-fs ARGS` as this machine: its HOME, XDG folders, name and store.
    fn fen(&self, args: &[&str]) -> Output {
        let mut c = fen_fs();
        c.env("HOME", self.dir.join("home"))
            .env("XDG_STATE_HOME", self.dir.join("state"))
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("FEN_FS_HOST", &self.name)
            .args(args)
            .arg("--store")
            .arg(&self.store);
        c.output().unwrap()
    }

    fn fen_ok(&self, args: &[&str]) -> String {
        let out = self.fen(args);
        assert!(
            out.status.success(),
            "{} {args:?}: {}",
            self.name,
            out_text(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn sync(&self, args: &[&str]) -> Output {
        let home = self.st().home.display().to_string();
        let mut all = vec!["sync", "--syncthing-home", &home];
        all.extend(args);
        self.fen(&all)
    }

    fn mount(&self) {
        self.mount_with(&[]);
    }

    /// `mount` with more arguments (e.g. `--source claude=DIR`).
    fn mount_with(&self, more: &[&str]) {
        let log = self.dir.join("daemon.log");
        let mut args = vec![
            "mount",
            self.mnt.to_str().unwrap(),
            "--no-detect",
            "--log-file",
            log.to_str().unwrap(),
        ];
        args.extend(more);
        let out = self.fen(&args);
        assert!(out.status.success(), "mount: {}", out_text(&out));
    }

    fn umount(&self) {
        let _ = fen_fs().arg("umount").arg(&self.mnt).output();
    }

    /// A new session through the root ctl; its folder in the mount.
    fn create_session(&self, cwd: &str, content: &str) -> PathBuf {
        let line = serde_json::json!({"cwd": cwd, "role": "user", "content": content});
        let reply = support::ctl(&self.mnt.join("ctl"), &line.to_string());
        let rel = reply
            .split_whitespace()
            .nth(2)
            .unwrap_or_else(|| panic!("{reply}"));
        self.mnt.join(rel)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        self.umount();
    }
}

/// A promise of `secs` seconds (SPEC §12: the delay + 3 s), as a test holds it on a
/// loaded machine: Syncthing and the search follower (nice 10) share the cores with
/// whatever else runs (a CPU hog on both cores made it 11 s once). The promise itself
/// is measured on an idle machine by `scripts/bench` (rows S1, S3, S3r).
fn promised(secs: u64) -> Duration {
    support::under_load(Duration::from_secs(secs))
}

/// Waits up to `secs` for `f` to hold; how long it took.
fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        if f() {
            return start.elapsed();
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{what}: not within {secs} s");
}

/// The files under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(p),
                Ok(t)
                    if t.is_file()
                        && std::fs::read(&p).is_ok_and(|b| {
                            b.windows(needle.len()).any(|w| w == needle.as_bytes())
                        }) =>
                {
                    out.push(p)
                }
                _ => {}
            }
        }
    }
    out
}

/// Every file and folder under `dir`: its kind, size, mtime and bytes' hash.
fn tree_state(dir: &Path) -> BTreeMap<PathBuf, (bool, u64, SystemTime, u64)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            let hash = if m.is_file() {
                fen_fs::store::naming::fnv1a64(&std::fs::read(e.path()).unwrap())
            } else {
                todo.push(e.path());
                0
            };
            out.insert(e.path(), (m.is_dir(), m.len(), m.modified().unwrap(), hash));
        }
    }
    out
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("id").is_some())
        .collect()
}

#[test]
fn two_machines_share_their_history_through_syncthing() {
    let test = "two_machines_share_their_history_through_syncthing";
    if !fuse_available(test) || !syncthing::available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Machine::new(tmp.path(), "alpha");
    let mut b = Machine::new(tmp.path(), "beta");
    a.st = Some(Syncthing::start(&a.dir.join("syncthing")));
    b.st = Some(Syncthing::start(&b.dir.join("syncthing")));
    // alpha reads beta's /home/bob as its own /home/alice.
    std::fs::create_dir_all(a.dir.join("config/fen")).unwrap();
    std::fs::write(
        a.dir.join("config/fen/config.toml"),
        "[[path_map]]\nhost = \"beta\"\nfrom = \"/home/bob\"\nto = \"/home/alice\"\n",
    )
    .unwrap();

    // The API key wrong: a clear error naming the file read, exit 1, nothing changed.
    let wrong = tmp.path().join("wrong-key");
    std::fs::create_dir_all(&wrong).unwrap();
    let config = std::fs::read_to_string(a.st().home.join("config.xml")).unwrap();
    std::fs::write(
        wrong.join("config.xml"),
        config.replace(&a.st().api_key, "not-the-key"),
    )
    .unwrap();
    let out = a.fen(&["sync", "--syncthing-home", wrong.to_str().unwrap(), "init"]);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refused the API key")
            && err.contains(&wrong.join("config.xml").display().to_string()),
        "{err}"
    );
    assert!(!a.store.exists(), "a failed init made the store");
    assert_eq!(
        a.st().get("/rest/config/folders").unwrap(),
        serde_json::json!([])
    );

    // init on both; each adds the other.
    let delay = DELAY.to_string();
    let ids: Vec<String> = [&a, &b]
        .iter()
        .map(|m| {
            let out = m.sync(&["init", "--watch-delay", &delay]);
            assert!(out.status.success(), "{}", out_text(&out));
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        })
        .collect();
    assert_eq!(ids[0], a.st().device_id);
    assert_eq!(ids[1], b.st().device_id);
    let ignore = std::fs::read_to_string(a.store.join(".stignore")).unwrap();
    assert!(
        ignore.contains("/.fen-cache") && ignore.contains("/.trash"),
        "{ignore}"
    );
    for (m, other, name) in [(&a, &b, "beta"), (&b, &a, "alpha")] {
        let addr = format!("tcp://127.0.0.1:{}", other.st().listen_port);
        let out = m.sync(&[
            "add",
            &other.st().device_id,
            "--name",
            name,
            "--address",
            &addr,
            "--watch-delay",
            &delay,
        ]);
        assert!(out.status.success(), "{}", out_text(&out));
    }
    // A second init changes nothing and says the same id.
    assert_eq!(
        a.sync(&["init"]).stdout,
        format!("{}\n", ids[0]).into_bytes()
    );
    wait_for(30, "the two Syncthings connect", || {
        a.st().connected_to(&b.st().device_id) && b.st().connected_to(&a.st().device_id)
    });
    wait_for(30, "every folder scanned", || {
        a.st().folders_idle() && b.st().folders_idle()
    });

    // beta's Claude Code (its own CLAUDE_CONFIG_DIR) has a session in /home/bob/lab:
    // beta's keeper keeps it in beta's store, which Syncthing carries to alpha.
    let claude = b.dir.join("claude");
    let claude_id = "5b0c7a1e-0d2f-4c6b-9e1a-3f4d5e6a7b8c";
    let claude_file = claude.join(format!("projects/-home-bob-lab/{claude_id}.jsonl"));
    std::fs::create_dir_all(claude_file.parent().unwrap()).unwrap();
    let mut lines = String::new();
    let mut parent = Value::Null;
    for (i, (kind, text)) in [
        ("user", "where is the narwhalcarousel"),
        ("assistant", "the narwhalcarousel is in the lab"),
    ]
    .into_iter()
    .enumerate()
    {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        let content = if kind == "user" {
            Value::from(text)
        } else {
            serde_json::json!([{"type": "text", "text": text}])
        };
        let line = serde_json::json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": claude_id,
            "cwd": "/home/bob/lab", "timestamp": format!("2026-01-01T00:00:0{i}.000Z"),
            "message": {"role": kind, "content": content}
        });
        lines.push_str(&format!("{line}\n"));
        parent = Value::from(uuid);
    }
    std::fs::write(&claude_file, lines).unwrap();

    a.mount();
    b.mount_with(&["--source", &format!("claude={}", claude.display())]);
    // On beta: a session in /home/bob/proj.
    let made = b.create_session("/home/bob/proj", "the zebrafinch handshake");
    let dir = made.file_name().unwrap().to_string_lossy().into_owned();
    let on_alpha = a.mnt.join("home-alice-proj").join(format!("{dir}@beta"));
    let arrived = a
        .peers()
        .join("beta/--home-bob-proj--")
        .join(format!("{dir}.jsonl"));
    // (A session made in a new namespace folder: the .stignore shares the folder
    // itself, or Syncthing's watcher could miss the file until its hourly rescan.)
    let waited = std::panic::catch_unwind(|| {
        wait_for(30, "beta's session in alpha's mount", || {
            on_alpha.join("meta.json").exists()
        })
    });
    if waited.is_err() {
        panic!(
            "beta's session is not in alpha's mount; on alpha's disk: {}; alpha's mount: {:?}; beta's Syncthing folders: {}\nthe Syncthings' logs:\n{}",
            arrived.exists(),
            std::fs::read_dir(&a.mnt)
                .map(|r| r.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
                .unwrap_or_default(),
            b.st().get("/rest/config/folders").unwrap_or_default(),
            [a.st().log(), b.st().log()].concat()
        );
    }
    let meta: Value =
        serde_json::from_slice(&std::fs::read(on_alpha.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["host"], "beta");
    assert_eq!(meta["cwd"], "/home/alice/proj");
    assert_eq!(meta["cwd_on_host"], "/home/bob/proj");
    assert_eq!(meta["dir"], format!("{dir}@beta"));
    let local_meta: Value =
        serde_json::from_slice(&std::fs::read(made.join("meta.json")).unwrap()).unwrap();
    assert_eq!(
        local_meta["host"], "beta",
        "beta's own session says its host"
    );

    // alpha's own session in the same project: both hosts show, with a HOST column.
    // What is not a session stays home (the .stignore): notes beside a session, a
    // file at the store's root, the trash, fen-fs's caches (alpha's mount has some).
    let gone = a.create_session("/home/alice/proj", "a session alpha deletes");
    std::fs::write(a.store.join("--home-alice-proj--/notes.txt"), "mine").unwrap();
    std::fs::write(a.store.join("junk.txt"), "mine").unwrap();
    a.fen_ok(&["rm", gone.file_name().unwrap().to_str().unwrap()]);
    assert!(a.store.join(".trash").is_dir() && a.store.join(".fen-cache").is_dir());
    let own = a.create_session("/home/alice/proj", "alpha's own work");
    let own_on_beta = b.peers().join("alpha/--home-alice-proj--").join(format!(
        "{}.jsonl",
        own.file_name().unwrap().to_string_lossy()
    ));
    wait_for(30, "alpha's session on beta", || own_on_beta.exists());
    for not_sent in [
        "--home-alice-proj--/notes.txt",
        "junk.txt",
        ".trash",
        ".fen-cache",
        ".stignore",
    ] {
        assert!(
            !b.peers().join("alpha").join(not_sent).exists(),
            "{not_sent} was sent"
        );
    }
    let listed: Vec<Value> =
        serde_json::from_str(&a.fen_ok(&["list", "--cwd", "/home/alice/proj", "--json"])).unwrap();
    let hosts: Vec<&str> = listed.iter().map(|l| l["host"].as_str().unwrap()).collect();
    assert!(
        hosts.contains(&"alpha") && hosts.contains(&"beta"),
        "{listed:?}"
    );
    let peer = listed.iter().find(|l| l["host"] == "beta").unwrap();
    assert_eq!(peer["cwd_on_host"], "/home/bob/proj");
    let table = a.fen_ok(&["list", "--cwd", "/home/alice/proj"]);
    assert!(table.starts_with("HOST"), "{table}");
    let only: Vec<Value> =
        serde_json::from_str(&a.fen_ok(&["list", "--all", "--json", "--host", "beta"])).unwrap();
    // (beta's kept Claude Code session may be there already.)
    let fen_only: Vec<&Value> = only.iter().filter(|l| l["agent"] == "fen").collect();
    assert_eq!(fen_only.len(), 1, "{only:?}");
    assert!(only.iter().all(|l| l["host"] == "beta"), "{only:?}");
    let index: Vec<Value> =
        serde_json::from_slice(&std::fs::read(a.mnt.join("home-alice-proj/index.json")).unwrap())
            .unwrap();
    assert_eq!(index.len(), 2);
    assert!(index.iter().all(|l| l["host"].is_string()), "{index:?}");

    // Search on alpha finds it, with host and the mapped cwd.
    let hits = |m: &Machine, word: &str| json_lines(&m.fen_ok(&["search", "--json", word]));
    // (The mount's indexer picks it up in the background.)
    let mut found = Vec::new();
    wait_for(15, "beta's session in alpha's search", || {
        found = hits(&a, "zebrafinch");
        !found.is_empty()
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["host"], "beta");
    assert_eq!(found[0]["cwd"], "/home/alice/proj");
    assert!(
        json_lines(&a.fen_ok(&["search", "--json", "--host", "alpha", "zebrafinch"])).is_empty()
    );

    // beta's Claude Code session, kept there, is on alpha: in the mount, list and
    // search, with host beta and the mapped cwd, read by Claude Code's reader.
    let checking = Instant::now();
    let lab = a.mnt.join("home-alice-lab");
    let suffix = format!("{claude_id}@beta");
    let mut kept_on_alpha = PathBuf::new();
    wait_for(
        30,
        "beta's kept Claude Code session in alpha's mount",
        || {
            let found = std::fs::read_dir(&lab).ok().and_then(|r| {
                r.flatten()
                    .map(|e| e.path())
                    .find(|p| p.to_string_lossy().ends_with(&suffix))
            });
            found.is_some_and(|p| {
                kept_on_alpha = p;
                kept_on_alpha.join("meta.json").exists()
            })
        },
    );
    let kmeta: Value =
        serde_json::from_slice(&std::fs::read(kept_on_alpha.join("meta.json")).unwrap()).unwrap();
    assert_eq!(kmeta["agent"], "claude", "{kmeta}");
    assert_eq!(kmeta["host"], "beta");
    assert_eq!(kmeta["cwd"], "/home/alice/lab");
    assert_eq!(kmeta["cwd_on_host"], "/home/bob/lab");
    assert_eq!(kmeta["kept"], true);
    assert_eq!(kmeta["messages"], 2);
    assert_eq!(
        std::fs::read(kept_on_alpha.join("transcript.jsonl")).unwrap(),
        std::fs::read(&claude_file).unwrap()
    );
    let listed: Vec<Value> =
        serde_json::from_str(&a.fen_ok(&["list", "--cwd", "/home/alice/lab", "--json"])).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["host"], "beta");
    assert_eq!(listed[0]["id"], claude_id);
    assert_eq!(listed[0]["cwd_on_host"], "/home/bob/lab");
    wait_for(15, "beta's kept session in alpha's search", || {
        found = hits(&a, "narwhalcarousel");
        !found.is_empty()
    });
    assert_eq!(found[0]["host"], "beta", "{found:?}");
    assert_eq!(found[0]["cwd"], "/home/alice/lab");
    assert_eq!(found[0]["agent"], "claude");
    eprintln!(
        "beta's kept Claude Code session checked on alpha in {:?}",
        checking.elapsed()
    );

    // A peer's session refuses every change.
    let out = Command::new("rmdir").arg(&on_alpha).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Read-only"),
        "{}",
        out_text(&out)
    );
    assert!(!on_alpha.join("ctl").exists());

    // What fen-fs must never change: every byte and mtime under peers/ from here on.
    let peers_before = tree_state(&a.peers());

    // An append on beta is in alpha's mount and search within the delay + 3 s.
    let t0 = Instant::now();
    support::ctl_ok(
        &made,
        r#"{"role":"assistant","content":"the quokka rendezvous"}"#,
    );
    let hits_file = a.mnt.join("search/quokka/hits.jsonl");
    let in_search =
        || std::fs::read_to_string(&hits_file).is_ok_and(|t| t.contains("\"host\":\"beta\""));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !in_search() {
        // Which side lagged, when it fails: Syncthing (the file under peers/) or
        // fen-fs (the mount's transcript, then its search).
        assert!(
            Instant::now() < deadline,
            "the append in alpha's search: not within 30 s; under peers/: {}; in the mount's \
             transcript: {}; hits: {:?}",
            files_containing(&a.peers(), "quokka").len(),
            std::fs::read_to_string(on_alpha.join("transcript.jsonl"))
                .is_ok_and(|t| t.contains("quokka")),
            std::fs::read_to_string(&hits_file)
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    let transcript = std::fs::read_to_string(on_alpha.join("transcript.jsonl")).unwrap();
    let took = t0.elapsed();
    assert!(transcript.contains("quokka"));
    eprintln!("an append on beta reached alpha's mount and search in {took:?}");
    assert!(took <= promised(DELAY + 3), "took {took:?}");
    let peers_before = {
        // The append arrived through Syncthing: the tree as it is now is the baseline.
        let _ = peers_before;
        tree_state(&a.peers())
    };

    // Sync litter is never a session; a conflict copy is a version of its session.
    let ns_dir = a.peers().join("beta/--home-bob-proj--");
    let file = ns_dir.join(format!("{dir}.jsonl"));
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(
        ns_dir.join(format!(".syncthing.{dir}.jsonl.tmp")),
        &bytes[..bytes.len() / 2],
    )
    .unwrap();
    std::fs::write(ns_dir.join(format!("~syncthing~{dir}.jsonl.tmp")), &bytes).unwrap();
    let conflict = format!("{dir}.sync-conflict-20260101-120000-ABCDEFG");
    let mut torn = bytes.clone();
    torn.extend_from_slice(b"{\"type\":\"message\",\"id\":\"x");
    std::fs::write(ns_dir.join(format!("{conflict}.jsonl")), &torn).unwrap();
    let peers_before = {
        let _ = peers_before;
        tree_state(&a.peers())
    };
    let names: Vec<String> = std::fs::read_dir(a.mnt.join("home-alice-proj"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("syncthing")), "{names:?}");
    assert!(names.contains(&format!("{conflict}@beta")), "{names:?}");
    let cmeta: Value = serde_json::from_slice(
        &std::fs::read(
            a.mnt
                .join("home-alice-proj")
                .join(format!("{conflict}@beta/meta.json")),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(cmeta["version_of"], format!("{dir}@beta"));
    assert_eq!(cmeta["malformed_lines"], 1, "the torn last line: {cmeta}");

    // Resume of beta's session on alpha: a new session here, in the mapped cwd.
    let id = meta["id"].as_str().unwrap();
    let out = a.fen(&["resume", id]);
    assert!(out.status.success(), "{}", out_text(&out));
    let made_here: Vec<PathBuf> = std::fs::read_dir(a.store.join("--home-alice-proj--"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(
        made_here.len(),
        2,
        "alpha's own and the resumed one: {made_here:?}"
    );
    let resumed = made_here
        .iter()
        .find(|p| std::fs::read_to_string(p).unwrap().contains("quokka"))
        .expect("the resumed session holds beta's messages");
    assert!(
        std::fs::read_to_string(resumed)
            .unwrap()
            .starts_with("{\"type\":\"session\",\"version\":2,\"id\":")
    );
    assert!(
        std::fs::read_to_string(resumed)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .contains("\"cwd\":\"/home/alice/proj\"")
    );

    // show, status: read only too.
    let shown = a.fen_ok(&["show", id, "--view", "meta"]);
    assert!(shown.contains("\"host\": \"beta\""), "{shown}");
    let status = a.sync(&["status", "--json"]);
    assert!(status.status.success(), "{}", out_text(&status));
    let lines: Vec<Value> = String::from_utf8_lossy(&status.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{}", out_text(&status));
    assert_eq!(lines[0]["host"], "beta");
    assert_eq!(lines[0]["connected"], true);
    assert!(lines[0]["sessions"].as_u64().unwrap() >= 2, "{}", lines[0]);
    let table = String::from_utf8(a.sync(&["status"]).stdout).unwrap();
    assert!(
        table.contains("beta") && table.contains("connected"),
        "{table}"
    );

    // Nothing fen-fs did wrote, locked or created anything under peers/.
    assert_eq!(
        tree_state(&a.peers()),
        peers_before,
        "fen-fs changed peers/"
    );
    assert!(!a.peers().join("beta/.fen-cache").exists());

    a.umount();
    b.umount();
    b.st.as_mut().unwrap().stop();
    a.st.as_mut().unwrap().stop();

    // Syncthing not running: a clear error naming its config, exit 1.
    let out = a.sync(&["status"]);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is Syncthing running")
            && err.contains(&a.st().home.join("config.xml").display().to_string()),
        "{err}"
    );
}

#[test]
fn bad_input_is_refused_before_anything_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Machine::new(tmp.path(), "solo");
    // No Syncthing config anywhere: the places looked at are named.
    let out = m.fen(&["sync", "status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("state/syncthing/config.xml") && err.contains("config/syncthing/config.xml"),
        "{err}"
    );
    // A config whose Syncthing is not running.
    let home = m.dir.join("config/syncthing");
    std::fs::create_dir_all(&home).unwrap();
    let port = syncthing::free_port();
    std::fs::write(
        home.join("config.xml"),
        format!("<configuration><gui tls=\"false\"><address>127.0.0.1:{port}</address><apikey>k</apikey></gui></configuration>"),
    )
    .unwrap();
    for args in [vec!["sync", "init"], vec!["sync", "status", "--json"]] {
        let out = m.fen(&args);
        assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is Syncthing running")
                && err.contains(&home.join("config.xml").display().to_string()),
            "{err}"
        );
    }
    assert!(!m.store.exists(), "nothing was made");
    // A bad device id or name is said before Syncthing is asked.
    let out = m.fen(&["sync", "add", "NOT-AN-ID", "--name", "x"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Syncthing device id"));
    let id = "MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-BONSGYY-LTMRWAD";
    let out = m.fen(&["sync", "add", id, "--name", "../x"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--name"));
    assert!(!m.store.exists() && !m.peers().exists());
}

/// A store Syncthing does not watch sends its changes only at the next full rescan
/// (an hour): `sync status` says so, in both of its forms, and how to mend it; `init`
/// turns the watcher back on.
#[test]
fn status_says_when_syncthing_does_not_watch_this_store() {
    let test = "status_says_when_syncthing_does_not_watch_this_store";
    if !syncthing::available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut m = Machine::new(tmp.path(), "solo");
    m.st = Some(Syncthing::start(&m.dir.join("syncthing")));
    let out = m.sync(&["init"]);
    assert!(out.status.success(), "{}", out_text(&out));
    let id = fen_fs::sync::folder_id(&m.st().device_id);
    let folder = format!("/rest/config/folders/{id}");
    let watched = |m: &Machine| {
        for args in [vec!["status"], vec!["status", "--json"]] {
            let out = m.sync(&args);
            assert!(out.status.success(), "{}", out_text(&out));
            assert!(
                !String::from_utf8_lossy(&out.stderr).contains("watch"),
                "{}",
                out_text(&out)
            );
        }
    };
    watched(&m);

    assert!(
        m.st()
            .patch(&folder, &serde_json::json!({"fsWatcherEnabled": false}))
    );
    for args in [vec!["status"], vec!["status", "--json"]] {
        let out = m.sync(&args);
        assert!(out.status.success(), "{}", out_text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("Syncthing does not watch this store")
                && err.contains("every 1 h")
                && err.contains("fen-fs sync init"),
            "{}",
            out_text(&out)
        );
        // stdout stays what it was: no peers (the table's line, or no JSON line).
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("watch"), "{stdout}");
    }

    let out = m.sync(&["init"]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(
        m.st().get(&folder).unwrap()["fsWatcherEnabled"],
        true,
        "init turned the watcher back on"
    );
    watched(&m);
}

/// The mounts run first, as they do all day; then `sync add` on both machines: each
/// one's sessions show in the other's mount (`meta.json` with `host`), `search` and
/// `list` within Syncthing's delay + 3 s of their files arriving, with no remount.
/// Then `sync remove` on one: the other machine leaves its mount, search and list
/// there, and Syncthing no longer receives or sends anything between them.
#[test]
fn a_peer_added_or_removed_while_mounted_needs_no_remount() {
    let test = "a_peer_added_or_removed_while_mounted_needs_no_remount";
    if !fuse_available(test) || !syncthing::available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Machine::new(tmp.path(), "alpha");
    let mut b = Machine::new(tmp.path(), "beta");
    a.st = Some(Syncthing::start(&a.dir.join("syncthing")));
    b.st = Some(Syncthing::start(&b.dir.join("syncthing")));
    let delay = DELAY.to_string();
    for m in [&a, &b] {
        let out = m.sync(&["init", "--watch-delay", &delay]);
        assert!(out.status.success(), "{}", out_text(&out));
    }
    // Both mounted before either knows the other (no peers folder yet).
    a.mount();
    b.mount();
    assert!(!a.peers().exists());
    let made = b.create_session("/home/bob/proj", "the okapi semaphore");
    let dir = made.file_name().unwrap().to_string_lossy().into_owned();
    let mine = a.create_session("/home/alice/src", "the gecko almanac");
    let mine_dir = mine.file_name().unwrap().to_string_lossy().into_owned();

    for (m, other, name) in [(&a, &b, "beta"), (&b, &a, "alpha")] {
        let addr = format!("tcp://127.0.0.1:{}", other.st().listen_port);
        let out = m.sync(&[
            "add",
            &other.st().device_id,
            "--name",
            name,
            "--address",
            &addr,
            "--watch-delay",
            &delay,
        ]);
        assert!(out.status.success(), "{}", out_text(&out));
    }
    // beta's session arrives on alpha's disk; from then on the clock runs.
    let arrived_file = a
        .peers()
        .join("beta/--home-bob-proj--")
        .join(format!("{dir}.jsonl"));
    wait_for(60, "beta's session file on alpha's disk", || {
        arrived_file.exists()
    });
    let arrived = Instant::now();
    let on_alpha = a.mnt.join("home-bob-proj").join(format!("{dir}@beta"));
    wait_for(30, "beta's session in alpha's mount", || {
        on_alpha.join("meta.json").exists()
    });
    let in_mount = arrived.elapsed();
    let meta: Value =
        serde_json::from_slice(&std::fs::read(on_alpha.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["host"], "beta");
    let index: Vec<Value> =
        serde_json::from_slice(&std::fs::read(a.mnt.join("home-bob-proj/index.json")).unwrap())
            .unwrap();
    assert_eq!(index.len(), 1);
    assert_eq!(index[0]["host"], "beta");
    let hits = |m: &Machine, word: &str| json_lines(&m.fen_ok(&["search", "--json", word]));
    wait_for(30, "beta's session in alpha's search", || {
        hits(&a, "okapi").iter().any(|h| h["host"] == "beta")
    });
    let mount_hits = a.mnt.join("search/okapi/hits.jsonl");
    wait_for(30, "beta's session in alpha's search/", || {
        std::fs::read_to_string(&mount_hits).is_ok_and(|t| t.contains("\"host\":\"beta\""))
    });
    let in_search = arrived.elapsed();
    let listed: Vec<Value> =
        serde_json::from_str(&a.fen_ok(&["list", "--all", "--json", "--host", "beta"])).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["dir"], format!("{dir}@beta"));
    eprintln!(
        "beta added while alpha was mounted: in its mount {in_mount:?} and search {in_search:?} after the file arrived"
    );
    assert!(
        in_mount <= promised(DELAY + 3) && in_search <= promised(DELAY + 3),
        "{in_mount:?} {in_search:?}"
    );
    // And the other way: alpha's session in beta's mount, also never remounted.
    let on_beta = b
        .mnt
        .join("home-alice-src")
        .join(format!("{mine_dir}@alpha"));
    wait_for(60, "alpha's session in beta's mount", || {
        on_beta.join("meta.json").exists()
    });
    wait_for(30, "alpha's session in beta's search", || {
        hits(&b, "gecko").iter().any(|h| h["host"] == "alpha")
    });

    // alpha removes beta: Syncthing stops receiving beta's store and sending alpha's,
    // the copy goes, and so do beta's sessions from alpha's mount, search and list.
    let out = a.sync(&["remove", "beta"]);
    assert!(out.status.success(), "{}", out_text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("removed beta") && said.contains("1 sessions"),
        "{said}"
    );
    let removed = Instant::now();
    assert!(!a.peers().join("beta").exists());
    let folders = a.st().get("/rest/config/folders").unwrap();
    let folders = folders.as_array().unwrap();
    assert_eq!(folders.len(), 1, "alpha's own store only: {folders:?}");
    assert!(
        folders[0]["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["deviceID"] != b.st().device_id.as_str()),
        "{folders:?}"
    );
    let devices = a.st().get("/rest/config/devices").unwrap();
    assert!(
        devices
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["deviceID"] != b.st().device_id.as_str()),
        "{devices}"
    );
    wait_for(30, "beta's session out of alpha's mount", || {
        std::fs::metadata(&on_alpha).is_err()
            && std::fs::metadata(a.mnt.join("home-bob-proj")).is_err()
    });
    let out_of_mount = removed.elapsed();
    wait_for(30, "beta's session out of alpha's search", || {
        hits(&a, "okapi").is_empty()
            && !std::fs::read_to_string(&mount_hits)
                .unwrap_or_default()
                .contains("beta")
    });
    let listed: Vec<Value> =
        serde_json::from_str(&a.fen_ok(&["list", "--all", "--json", "--host", "beta"])).unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    // alpha's own session is untouched.
    assert_eq!(hits(&a, "gecko").len(), 1);
    eprintln!(
        "beta removed: out of alpha's mount after {out_of_mount:?}, out of its search after {:?}",
        removed.elapsed()
    );
    assert!(out_of_mount <= promised(3), "{out_of_mount:?}");
    // Removing it again: there is nothing to remove (exit 1, said).
    let out = a.sync(&["remove", "beta"]);
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no peer beta"));

    a.umount();
    b.umount();
    b.st.as_mut().unwrap().stop();
    a.st.as_mut().unwrap().stop();
}
