//! Keeping every session (§11), through a real mount and the real command line: what
//! an agent deletes or rewrites stays where it was, byte for byte, marked kept; the
//! dropped version is reachable and searchable; `fen-fs keep` works without a mount;
//! `restore` writes a session back where the real Claude Code resumes it; a kill -9
//! mid-keep loses nothing and leaves no half copy; nothing is ever written in an
//! agent's folder but the restore.

mod opencode_support;
mod resume_support;
mod support;

use opencode_support::Db;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Mount, fen_fs, out_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// Every file under `dir` with its size, mtime and content hash: what "nothing was
/// written" means.
fn state(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, u64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            out.insert(
                e.path(),
                (
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    fen_fs::store::atomic::checksum(&[&bytes]),
                ),
            );
        }
    }
    out
}

/// Waits up to `secs` for `f` to give something.
fn wait<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            panic!("waited {secs} s for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The session folders of the mount, with their meta.json.
fn sessions(mp: &Path) -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for ns in std::fs::read_dir(mp).unwrap().flatten() {
        let name = ns.file_name().to_string_lossy().into_owned();
        if name == "ctl" || name == "search" {
            continue;
        }
        for s in std::fs::read_dir(ns.path()).into_iter().flatten().flatten() {
            if !s.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if let Ok(b) = std::fs::read(s.path().join("meta.json"))
                && let Ok(v) = serde_json::from_slice(&b)
            {
                out.push((s.path(), v));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The folder of `agent`'s session whose id is `id` (its current bytes, not a version).
fn session(mp: &Path, agent: &str, id: &str) -> Option<(PathBuf, Value)> {
    sessions(mp)
        .into_iter()
        .find(|(_, m)| m["agent"] == agent && m["id"] == id && m["version"].is_null())
}

/// A session folder's views, by name.
type Views = Vec<(String, Vec<u8>)>;

/// The views a kept session must keep byte for byte.
fn views(dir: &Path) -> Views {
    ["transcript.jsonl", "conversation.json", "conversation.md"]
        .iter()
        .map(|v| (v.to_string(), std::fs::read(dir.join(v)).unwrap()))
        .collect()
}

/// Copies of `agent` in the store whose record says they hold `len` bytes or more.
fn kept_copies(store: &Path, agent: &str) -> Vec<Value> {
    let dir = store.join(".kept").join(agent);
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Ok(b) = std::fs::read(e.path().join("kept.json")) {
            out.push(serde_json::from_slice::<Value>(&b).unwrap());
        }
    }
    out
}

fn kept_len(store: &Path, agent: &str, source: &Path) -> Option<u64> {
    kept_copies(store, agent)
        .into_iter()
        .find(|r| r["source"] == source.to_str().unwrap())
        .and_then(|r| r["generations"].as_array()?.last()?["len"].as_u64())
}

fn hits(m: &Mount, query: &str) -> Vec<Value> {
    std::fs::read_to_string(m.path("search").join(query).join("hits.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v.get("id").is_some())
        .collect()
}

#[test]
fn what_agents_delete_or_rewrite_stays_as_it_was() {
    let test = "what_agents_delete_or_rewrite_stays_as_it_was";
    if !support::fuse_available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = fixtures();
    // Claude Code: one transcript.
    let claude = tmp.path().join("claude");
    let claude_file = claude.join("projects/-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl");
    copy(
        &f.join("claude/projects/-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl"),
        &claude_file,
    );
    // Codex: one rollout, renamed in session_index.jsonl (a fact from outside it).
    let codex = tmp.path().join("codex");
    let rollout = "sessions/2026/01/03/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl";
    let codex_file = codex.join(rollout);
    copy(&f.join("codex").join(rollout), &codex_file);
    let codex_id = "22222222-2222-4222-8222-222222222222";
    std::fs::write(
        codex.join("session_index.jsonl"),
        format!("{{\"id\":\"{codex_id}\",\"thread_name\":\"Renamed by hand\",\"updated_at\":\"2026-01-03T05:00:00Z\"}}\n"),
    )
    .unwrap();
    // Gemini: a JSON session it saves whole (to be saved again without its last
    // messages), and a JSONL one in a project whose cwd only `.project_root` names
    // (the whole project folder goes).
    let gemini = tmp.path().join("gemini");
    let chats = f.join("gemini/tmp/fixture-proj/chats");
    let gem_json = gemini.join("tmp/proj-a/chats/session-2024-01-01T10-00-standard_session.json");
    copy(
        &chats.join("session-2024-01-01T10-00-standard_session.json"),
        &gem_json,
    );
    std::fs::write(gemini.join("tmp/proj-a/.project_root"), "/work/gem-a").unwrap();
    let gem_jsonl = gemini.join("tmp/proj-b/chats/session-2026-04-29T21-39-gemini_s.jsonl");
    copy(
        &chats.join("session-2026-04-29T21-39-gemini_s.jsonl"),
        &gem_jsonl,
    );
    std::fs::write(gemini.join("tmp/proj-b/.project_root"), "/work/gem-b").unwrap();
    // OpenCode: a session in its database.
    let opencode = tmp.path().join("opencode");
    std::fs::create_dir_all(&opencode).unwrap();
    let mut db = Db::create(&opencode.join("opencode.db"));
    db.session("ses_keep", "/work/oc", "Kept rows");
    db.user("ses_keep", "msg_01", "tell me about quasarwidget");
    db.assistant("ses_keep", "msg_02", "msg_01", "quasarwidget is kept");

    let roots = [&claude, &codex, &gemini];
    let before: Vec<_> = roots.iter().map(|r| state(r)).collect();
    let src = |k: &str, p: &Path| format!("{k}={}", p.display());
    let args = [
        "--no-detect".to_string(),
        "--source".into(),
        src("claude", &claude),
        "--source".into(),
        src("codex", &codex),
        "--source".into(),
        src("gemini", &gemini),
        "--source".into(),
        src("opencode", &opencode),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let m = Mount::with_args(test, &args).unwrap();

    // Everything is kept within a second or so of the mount's first index.
    for (agent, n) in [("claude", 1), ("codex", 1), ("gemini", 2), ("opencode", 1)] {
        wait(20, &format!("{agent}'s copies"), || {
            (kept_copies(&m.store, agent).len() == n).then_some(())
        });
    }
    let mp = m.mp.clone();
    let find =
        |agent: &str, id: &str| wait(10, &format!("{agent} {id}"), || session(&mp, agent, id));
    let (claude_dir, _) = find("claude", "8d05f615-19e7-55e3-98d9-eaf889ba4cd5");
    let (codex_dir, codex_meta) = find("codex", codex_id);
    assert_eq!(codex_meta["title"], "Renamed by hand");
    let (gem_a_dir, gem_a_meta) = find("gemini", "sess-uuid-1");
    let gem_b_id = "gemini_stage0_jsonl";
    let (gem_b_dir, _) = find("gemini", gem_b_id);
    assert!(
        gem_b_dir.starts_with(m.path("work-gem-b")),
        "{}",
        gem_b_dir.display()
    );
    let (oc_dir, _) = find("opencode", "ses_keep");
    let kept_views: Vec<(PathBuf, Views)> =
        [&claude_dir, &codex_dir, &gem_a_dir, &gem_b_dir, &oc_dir]
            .iter()
            .map(|d| (d.to_path_buf(), views(d)))
            .collect();
    let gem_a_messages = gem_a_meta["messages"].as_u64().unwrap();
    assert_eq!(gem_a_messages, 4);

    // An agent's append is kept within a second or so (the keeper looks every 0.4 s).
    let line = "{\"type\":\"user\",\"uuid\":\"99999999-0000-4000-8000-000000000002\",\"message\":{\"role\":\"user\",\"content\":\"one more\"}}\n";
    {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&claude_file)
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
    }
    let grown = claude_file.metadata().unwrap().len();
    let t0 = Instant::now();
    wait(10, "the append kept", || {
        (kept_len(&m.store, "claude", &claude_file) == Some(grown)).then_some(())
    });
    let took = t0.elapsed();
    assert!(
        took < support::under_load(Duration::from_secs(2)),
        "an append was kept after {took:?}"
    );
    let kept_views: Vec<(PathBuf, Views)> = kept_views
        .into_iter()
        .map(|(d, v)| {
            if d == claude_dir {
                (d.clone(), views(&d))
            } else {
                (d, v)
            }
        })
        .collect();

    // The agents (and people) delete and rewrite.
    std::fs::remove_file(&claude_file).unwrap();
    std::fs::remove_file(&codex_file).unwrap();
    std::fs::remove_file(codex.join("session_index.jsonl")).unwrap();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&gem_json).unwrap()).unwrap();
    doc["messages"].as_array_mut().unwrap().truncate(2);
    std::fs::write(&gem_json, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    std::fs::remove_dir_all(gemini.join("tmp/proj-b")).unwrap();
    for sql in [
        "DELETE FROM part WHERE session_id = 'ses_keep'",
        "DELETE FROM message WHERE session_id = 'ses_keep'",
        "DELETE FROM session WHERE id = 'ses_keep'",
    ] {
        db.conn.execute(sql, []).unwrap();
    }

    // Each stays where it was, byte for byte, marked kept and deleted.
    for (dir, was) in &kept_views {
        if *dir == gem_a_dir {
            // Still there at its source (with fewer messages).
            continue;
        }
        let meta = wait(10, &format!("{} kept", dir.display()), || {
            let b = std::fs::read(dir.join("meta.json")).ok()?;
            let v: Value = serde_json::from_slice(&b).ok()?;
            (v["kept"] == true).then_some(v)
        });
        assert_eq!(meta["source_deleted"], true, "{}", dir.display());
        assert!(meta["last_seen_at"].is_string());
        assert_eq!(&views(dir), was, "{} changed", dir.display());
        let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
        assert!(summary.contains("at its source"), "{summary}");
        let index: Value = serde_json::from_slice(
            &std::fs::read(dir.parent().unwrap().join("index.json")).unwrap(),
        )
        .unwrap();
        let name = dir.file_name().unwrap().to_str().unwrap();
        let entry = index
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["dir"] == name)
            .unwrap();
        assert_eq!(entry["kept"], true);
        assert_eq!(entry["source_deleted"], true);
    }
    // What came from outside the files: Codex's rename, Gemini's cwd.
    assert_eq!(support::meta(&codex_dir)["title"], "Renamed by hand");
    assert!(gem_b_dir.exists());

    // The Gemini session saved without its last messages: the live one has two, the
    // earlier version (beside it, `.v1`) all four, as they were.
    let gem_a_v1 = gem_a_dir.with_file_name(format!(
        "{}.v1",
        gem_a_dir.file_name().unwrap().to_string_lossy()
    ));
    wait(10, "the earlier version", || {
        gem_a_v1.exists().then_some(())
    });
    assert_eq!(support::meta(&gem_a_dir)["messages"], 2);
    let v1 = support::meta(&gem_a_v1);
    assert_eq!(v1["messages"], 4);
    assert_eq!(v1["version"], 1);
    assert_eq!(v1["kept"], true);
    let was = &kept_views.iter().find(|(d, _)| *d == gem_a_dir).unwrap().1;
    assert_eq!(&views(&gem_a_v1), was);

    // Search still finds the words only the dropped version and the deleted rows hold.
    for (word, agent) in [("Applied", "gemini"), ("quasarwidget", "opencode")] {
        let hit = wait(15, &format!("a hit for {word}"), || {
            hits(&m, word)
                .into_iter()
                .find(|h| h["agent"] == agent && h["kept"] == true)
        });
        assert!(hit.get("source_deleted").is_some(), "{hit}");
    }

    // The command line sees the same.
    let out = fen_fs()
        .args(["list", "--all", "--json", "--store"])
        .arg(&m.store)
        .args(&args)
        .output()
        .unwrap();
    let list: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", out_text(&out)));
    let deleted: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kept"] == true && l["source_deleted"] == true && l["version"].is_null())
        .map(|l| l["agent"].as_str().unwrap())
        .collect();
    let mut deleted = deleted;
    deleted.sort();
    assert_eq!(
        deleted,
        ["claude", "codex", "gemini", "opencode"],
        "{}",
        out_text(&out)
    );
    let v1_name = gem_a_v1.file_name().unwrap().to_str().unwrap();
    let shown = fen_fs()
        .args(["show", v1_name, "--view", "conversation", "--store"])
        .arg(&m.store)
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(shown.stdout, was[1].1, "{}", out_text(&shown));

    // Nothing was written in the agents' folders (only what the test itself did).
    drop(m);
    for (root, was) in roots.iter().zip(before) {
        for (p, s) in state(root) {
            if p == gem_json {
                continue;
            }
            assert_eq!(
                was.get(&p),
                Some(&s),
                "{} was created or changed",
                p.display()
            );
        }
    }
    let oc: Vec<String> = std::fs::read_dir(&opencode)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for name in &oc {
        assert!(
            ["opencode.db", "opencode.db-wal", "opencode.db-shm"].contains(&name.as_str()),
            "{name} appeared in OpenCode's folder"
        );
    }
    drop(db);
}

/// Sets a file's mtime `secs` seconds back (a session quiet for that long).
fn age(path: &Path, secs: i64) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a zeroed timespec pair is valid; utimensat reads it.
    let mut t: [libc::timespec; 2] = unsafe { std::mem::zeroed() };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for x in &mut t {
        x.tv_sec = now - secs;
    }
    // SAFETY: valid C string and timespec array.
    assert_eq!(
        unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), t.as_ptr(), 0) },
        0
    );
}

/// A Claude Code transcript of `lines` turns (about 1 KiB each) naming `word`.
fn claude_file(path: &Path, id: &str, lines: usize, word: &str) {
    use std::io::Write;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut parent = Value::Null;
    for i in 0..lines {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        let (kind, role) = if i % 2 == 0 {
            ("user", "user")
        } else {
            ("assistant", "assistant")
        };
        let text = format!(
            "{word} turn {i} {}",
            "lorem ipsum dolor sit amet ".repeat(36)
        );
        let content = if role == "user" {
            Value::from(text)
        } else {
            serde_json::json!([{"type": "text", "text": text}])
        };
        let line = serde_json::json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": id,
            "cwd": "/work/big", "timestamp": format!("2026-01-01T00:{:02}:{:02}.000Z", (i / 60) % 60, i % 60),
            "message": {"role": role, "content": content}
        });
        writeln!(f, "{line}").unwrap();
        parent = Value::from(uuid);
    }
}

/// The bytes of every file under `dir`.
fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.path().symlink_metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

fn run(cmd: &mut std::process::Command) -> std::process::Output {
    cmd.output().expect("run fen-fs")
}

/// `fen-fs keep` of the Claude Code folder `root` into `store`: what it said.
fn keep_claude(root: &Path, store: &Path) -> String {
    let source = format!("claude={}", root.display());
    let out = run(fen_fs()
        .args(["keep", "--no-detect", "--source", &source, "--store"])
        .arg(store));
    assert!(out.status.success(), "{}", out_text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn fen_fs_keep_keeps_without_a_mount_appends_and_compresses() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let store = tmp.path().join("store");
    let old = root.join("projects/-work-big/11111111-1111-4111-8111-111111111111.jsonl");
    let young = root.join("projects/-work-big/22222222-2222-4222-8222-222222222222.jsonl");
    claude_file(
        &old,
        "11111111-1111-4111-8111-111111111111",
        400,
        "ancientword",
    );
    claude_file(
        &young,
        "22222222-2222-4222-8222-222222222222",
        20,
        "youngword",
    );
    age(&old, 3 * 3600);
    let before = state(&root);
    let source = format!("claude={}", root.display());
    let keep = || keep_claude(&root, &store);
    // A missing store is created; the quiet session is written compressed at once
    // (the first keep never needs room for its bytes whole), the one still being
    // written to as it is.
    let said = keep();
    assert!(said.contains("2 new"), "{said}");
    let file_of = |id: &str| {
        let copies = kept_copies(&store, "claude");
        let r = copies.iter().find(|r| r["id"] == id).unwrap();
        r["generations"][0]["file"].as_str().unwrap().to_string()
    };
    assert_eq!(
        file_of("11111111-1111-4111-8111-111111111111"),
        "1.jsonl.zst"
    );
    assert_eq!(file_of("22222222-2222-4222-8222-222222222222"), "1.jsonl");
    let zst_bytes = || -> u64 {
        std::fs::read_dir(store.join(".kept/claude"))
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .filter(|f| f.file_name().to_string_lossy().ends_with(".zst"))
            .map(|f| f.metadata().unwrap().len())
            .sum()
    };
    let on_disk = zst_bytes();
    assert!(
        on_disk * 4 < old.metadata().unwrap().len(),
        "compressed to {on_disk} bytes"
    );
    // Everything the first keep wrote (records included) is under a quarter of the
    // sessions' bytes.
    let sessions = old.metadata().unwrap().len() + young.metadata().unwrap().len();
    let kept = tree_bytes(&store.join(".kept"));
    assert!(
        kept * 4 < sessions,
        "the first keep wrote {kept} bytes for {sessions}"
    );
    // The next keep has nothing to compress: the quiet copy was written once.
    let said = keep();
    assert!(said.contains("0 compressed"), "{said}");
    assert_eq!(zst_bytes(), on_disk);
    // Nothing changed: nothing kept again.
    assert!(keep().contains("0 new, 0 grew"));
    // Appends extend the copies (a frame more for the compressed one).
    let mut whole_old = std::fs::read(&old).unwrap();
    for (path, line) in [
        (&old, "{\"type\":\"user\",\"late\":1}\n"),
        (&young, "{\"type\":\"user\",\"late\":2}\n"),
    ] {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
    }
    whole_old.extend_from_slice(b"{\"type\":\"user\",\"late\":1}\n");
    let said = keep();
    assert!(said.contains("2 grew"), "{said}");
    assert_eq!(
        kept_len(&store, "claude", &old),
        Some(whole_old.len() as u64)
    );
    // Deleted without a mount: still listed, shown byte for byte from the copy.
    let young_bytes = std::fs::read(&young).unwrap();
    std::fs::remove_file(&old).unwrap();
    std::fs::remove_file(&young).unwrap();
    let list = run(fen_fs()
        .args([
            "list",
            "--all",
            "--json",
            "--no-detect",
            "--source",
            &source,
            "--store",
        ])
        .arg(&store));
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|l| l["kept"] == true && l["source_deleted"] == true)
    );
    for (id, want) in [("11111111", &whole_old), ("22222222", &young_bytes)] {
        let out = run(fen_fs()
            .args([
                "show",
                id,
                "--view",
                "transcript",
                "--no-detect",
                "--source",
                &source,
                "--store",
            ])
            .arg(&store));
        assert_eq!(&out.stdout, want, "{}", out_text(&out));
    }
    let said = keep();
    assert!(said.contains("2 gone"), "{said}");
    // Search finds their words (fen-fs search brings the index up to date itself).
    let out = run(fen_fs()
        .args([
            "search",
            "--json",
            "ancientword",
            "--no-detect",
            "--source",
            &source,
            "--store",
        ])
        .arg(&store));
    let hit: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("{}", out_text(&out)));
    assert_eq!(
        (hit["kept"].clone(), hit["source_deleted"].clone()),
        (Value::from(true), Value::from(true))
    );
    // A damaged copy is found by fsck, and served empty, saying so.
    let fsck = run(fen_fs().arg("fsck").arg("--store").arg(&store));
    assert!(fsck.status.success(), "{}", out_text(&fsck));
    let plain = std::fs::read_dir(store.join(".kept/claude"))
        .unwrap()
        .flatten()
        .map(|d| d.path().join("1.jsonl"))
        .find(|p| p.exists())
        .unwrap();
    let mut bytes = std::fs::read(&plain).unwrap();
    bytes[10] ^= 0x20;
    std::fs::write(&plain, &bytes).unwrap();
    let fsck = run(fen_fs().arg("fsck").arg("--store").arg(&store));
    assert_eq!(fsck.status.code(), Some(1), "{}", out_text(&fsck));
    assert!(String::from_utf8_lossy(&fsck.stdout).contains("damaged kept copy"));
    let meta = run(fen_fs()
        .args([
            "show",
            "22222222",
            "--view",
            "meta",
            "--no-detect",
            "--source",
            &source,
            "--store",
        ])
        .arg(&store));
    let meta: Value = serde_json::from_slice(&meta.stdout).unwrap();
    assert!(meta["kept_damaged"].is_string(), "{meta}");
    assert_eq!(meta["size_bytes"], 0);
    // rm moves a kept copy to the trash, restore brings it back, trash empty removes it.
    let rm = run(fen_fs()
        .args([
            "rm",
            "11111111",
            "--no-detect",
            "--source",
            &source,
            "--store",
        ])
        .arg(&store));
    assert!(rm.status.success(), "{}", out_text(&rm));
    let trash = run(fen_fs()
        .args(["trash", "list", "--json", "--store"])
        .arg(&store));
    assert!(
        String::from_utf8_lossy(&trash.stdout).contains("\"agent\":\"claude\""),
        "{}",
        out_text(&trash)
    );
    let count = || {
        let out = run(fen_fs()
            .args([
                "list",
                "--all",
                "--json",
                "--no-detect",
                "--source",
                &source,
                "--store",
            ])
            .arg(&store));
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(), 1);
    let back = run(fen_fs()
        .args([
            "restore",
            "11111111",
            "--no-detect",
            "--source",
            &source,
            "--store",
        ])
        .arg(&store));
    assert!(
        String::from_utf8_lossy(&back.stdout).contains("restored the kept copy"),
        "{}",
        out_text(&back)
    );
    assert_eq!(count(), 2);
    run(fen_fs()
        .args([
            "rm",
            "11111111",
            "--no-detect",
            "--source",
            &source,
            "--store",
        ])
        .arg(&store));
    let empty = run(fen_fs().args(["trash", "empty", "--store"]).arg(&store));
    assert!(
        String::from_utf8_lossy(&empty.stdout).contains("removed 1"),
        "{}",
        out_text(&empty)
    );
    assert_eq!(count(), 1);
    // Nothing was ever written in Claude Code's folder.
    assert!(state(&root).keys().all(|p| before.contains_key(p)));
}

/// Mounts `m` with `env` in the daemon's environment.
/// How much of `path` is in the page cache (`mincore` over a read-only map), 0 to 1.
fn cached_fraction(path: &Path) -> f64 {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: a shared read-only map of a file this test owns, unmapped below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED);
    let page = 4096;
    let mut v = vec![0u8; len.div_ceil(page)];
    // SAFETY: `v` has one byte per page of the map.
    assert_eq!(unsafe { libc::mincore(map, len, v.as_mut_ptr()) }, 0);
    // SAFETY: the map made above.
    unsafe { libc::munmap(map, len) };
    v.iter().filter(|b| **b & 1 == 1).count() as f64 / v.len() as f64
}

/// Drops `path`'s pages from the page cache (written back first, so that none stay).
fn evict(path: &Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: a valid descriptor.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0);
}

/// A session that grew is read from where its copy ends: keeping its new line does
/// not read (nor ask the disk to read ahead) the bytes already kept.
#[test]
fn keeping_a_grown_session_reads_its_new_bytes_not_the_whole_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let store = tmp.path().join("store");
    // Two sessions (the keeper's workers read ahead the ones after the one they
    // take), about 24 and 20 MB.
    let ids = [
        "33333333-3333-4333-8333-333333333333",
        "44444444-4444-4444-8444-444444444444",
    ];
    let files: Vec<PathBuf> = ids
        .iter()
        .map(|id| root.join(format!("projects/-work-big/{id}.jsonl")))
        .collect();
    for ((id, path), turns) in ids.iter().zip(&files).zip([24_000, 20_000]) {
        claude_file(path, id, turns, "grownword");
        age(path, 3 * 3600);
    }
    let keep = || keep_claude(&root, &store);
    assert!(keep().contains("2 new"));
    for (id, path) in ids.iter().zip(&files) {
        evict(path);
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        writeln!(
            f,
            "{}",
            serde_json::json!({"type": "user", "uuid": "00000000-0000-4000-8000-999999999999",
                "parentUuid": "00000000-0000-4000-8000-000000019999", "sessionId": id,
                "cwd": "/work/big", "timestamp": "2026-01-02T00:00:00.000Z",
                "message": {"role": "user", "content": "one more"}})
        )
        .unwrap();
        let before = cached_fraction(path);
        assert!(
            before < 0.05,
            "{:.0} % cached before the keep",
            before * 100.0
        );
    }
    let said = keep();
    assert!(said.contains("2 grew"), "{said}");
    for path in &files {
        let after = cached_fraction(path);
        assert!(
            after < 0.1,
            "keeping one new line read {:.0} % of {}",
            after * 100.0,
            path.display()
        );
    }
}

fn mount_with_env(m: &Mount, env: &[(&str, &str)]) {
    let mut cmd = fen_fs();
    cmd.arg("mount")
        .arg(&m.mp)
        .arg("--store")
        .arg(&m.store)
        .arg("--log-file")
        .arg(m.tmp.path().join("daemon.log"))
        .args(&m.args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
}

/// Folders being made (`.new-*`) and copies made, in `.kept/claude`.
fn progress(store: &Path) -> (usize, usize) {
    let mut new = 0;
    let mut done = 0;
    for e in std::fs::read_dir(store.join(".kept/claude"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with(".new-") {
            new += 1;
        } else if e.path().join("kept.json").exists() {
            done += 1;
        }
    }
    (new, done)
}

#[test]
fn umount_is_quick_and_a_kill_9_loses_nothing_while_keeping() {
    let test = "umount_is_quick_and_a_kill_9_loses_nothing_while_keeping";
    if !support::fuse_available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let mut originals = Vec::new();
    for i in 0..12 {
        let id = format!("33333333-3333-4333-8333-{i:012}");
        let p = root.join(format!("projects/-work-big/{id}.jsonl"));
        // Two of them large, so that keeping is under way for a while.
        claude_file(&p, &id, if i < 2 { 6000 } else { 300 }, "killword");
        originals.push((id, std::fs::read(&p).unwrap()));
    }
    let source = format!("claude={}", root.display());
    let m = Mount::unmounted(&["--no-detect", "--source", &source]);
    // Slowed down (a pause before each 2 MiB copied), so a copy is caught mid-way.
    let slow = [
        ("FEN_FS_TEST_KEEP_PAUSE_MS", "150"),
        ("FEN_FS_SEARCH", "off"),
    ];
    mount_with_env(&m, &slow);
    wait(30, "keeping under way", || {
        (progress(&m.store).0 > 0).then_some(())
    });
    let started = Instant::now();
    let out = m.umount();
    let took = started.elapsed();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        took < support::under_load(Duration::from_secs(1)),
        "umount during keeping took {took:?}"
    );
    // Mounted again and killed -9 while it keeps.
    mount_with_env(&m, &slow);
    wait(30, "keeping under way again", || {
        (progress(&m.store).0 > 0).then_some(())
    });
    m.kill9();
    // No half copy: every copy there reads whole (fsck), a half-made one is hidden.
    let fsck = run(fen_fs().arg("fsck").arg("--store").arg(&m.store));
    assert!(fsck.status.success(), "{}", out_text(&fsck));
    let _ = m.umount();
    // fen-fs keep without a mount, stopped by SIGTERM mid-way: it stops within a
    // second, commits what it kept, exits 130; nothing half made.
    let making = |store: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(store.join(".kept/claude"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".new-"))
            .collect();
        v.sort();
        v
    };
    // What the kill -9 left is not this keep's work, even where this keep makes a
    // copy of the same name again (all that was left to do can be what was under
    // way): its own folders are the ones changed since it started. (Less a margin
    // for the coarse clock of file times.)
    let since = (std::time::SystemTime::now() - Duration::from_millis(10))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128;
    let made_here = |store: &Path| {
        making(store).iter().any(|n| {
            std::fs::symlink_metadata(store.join(".kept/claude").join(n))
                .is_ok_and(|m| m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128 >= since)
        })
    };
    let mut child = fen_fs()
        .args([
            "keep",
            "--quiet",
            "--no-detect",
            "--source",
            &source,
            "--store",
        ])
        .arg(&m.store)
        .env("FEN_FS_TEST_KEEP_PAUSE_MS", "150")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Under way: a copy being made, and SIGTERM taken by the command (blocked in its
    // main thread for its signal thread). The first alone was also true while the
    // command, starting, removed what the kill -9 left (a part of `left`), before it
    // took the signals: a SIGTERM then ended it as a signal does, on a loaded machine.
    let takes_sigterm = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                let blocked = s.lines().find_map(|l| l.strip_prefix("SigBlk:"))?;
                u64::from_str_radix(blocked.trim(), 16).ok()
            })
            .is_some_and(|mask| mask & (1 << (libc::SIGTERM - 1)) != 0)
    };
    wait(30, "fen-fs keep under way", || {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!("fen-fs keep ended before it was caught at work ({status}): {err}");
        }
        (made_here(&m.store) && takes_sigterm(child.id())).then_some(())
    });
    let signalled = Instant::now();
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(5),
            "fen-fs keep did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = signalled.elapsed();
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(130), "{}", out_text(&out));
    assert!(
        took < support::under_load(Duration::from_secs(1)),
        "SIGTERM to exit: {took:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stopped"),
        "{}",
        out_text(&out)
    );
    let fsck = run(fen_fs().arg("fsck").arg("--store").arg(&m.store));
    assert!(fsck.status.success(), "{}", out_text(&fsck));
    // The next keep finishes; then, with every source gone, every session is shown
    // from its copy exactly as it was.
    let keep = run(fen_fs()
        .args(["keep", "--no-detect", "--source", &source, "--store"])
        .arg(&m.store));
    assert!(keep.status.success(), "{}", out_text(&keep));
    assert_eq!(progress(&m.store), (0, 12));
    std::fs::remove_dir_all(&root).unwrap();
    for (id, bytes) in &originals {
        let out = run(fen_fs()
            .args([
                "show",
                id,
                "--view",
                "transcript",
                "--no-detect",
                "--source",
                &source,
                "--store",
            ])
            .arg(&m.store));
        assert!(
            &out.stdout == bytes,
            "{id} differs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The steps Claude Code must send when it resumes the sample session.
fn resumed_steps() -> Vec<resume_support::Step> {
    use resume_support::Step;
    vec![
        Step::user("Earlier we set up the project skeleton."),
        Step::user("Please list the files."),
        Step::assistant("I'll list them."),
        Step::Call("Bash".into()),
        Step::Result("a.txt\nb.txt".into()),
        Step::assistant("There are two files: a.txt and b.txt."),
        Step::user("Thanks. Now read a.txt."),
        Step::Call("Read".into()),
        Step::Result("[no result recorded]".into()),
        Step::user("Never mind, that is all."),
        Step::user("What did we do so far?"),
    ]
}

#[test]
fn claude_codes_cleanup_deletes_and_restore_brings_it_back_for_claude_to_resume() {
    use fen_fs::agent::Agent;
    use resume_support::*;
    use support::mock_model::MockModel;
    let test = "claude_codes_cleanup_deletes_and_restore_brings_it_back_for_claude_to_resume";
    let Some(bin) = support::agent_bin(test, "claude") else {
        return;
    };
    let sb = Sandbox::new("claude");
    let store = sb.tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let source_path = sb.tmp.path().join("source.jsonl");
    std::fs::write(&source_path, "{}\n").unwrap();
    // A session Claude Code resumes (made as `fen-fs resume --in claude` makes one),
    // last touched three days ago; Claude Code keeps transcripts for one day.
    let session = sample(Agent::Pi, &source_path, &sb.cwd(), true);
    let target = fen_fs::resume::Target::Agent {
        agent: Agent::Claude,
        root: sb.root.clone(),
    };
    let ledger = fen_fs::resume::ledger::Ledger::for_store(&store);
    let made = fen_fs::resume::make(&session, &target, &sb.cwd(), &ledger).unwrap();
    let bytes = std::fs::read(&made.path).unwrap();
    age(&made.path, 3 * 86_400);
    std::fs::write(sb.root.join("settings.json"), r#"{"cleanupPeriodDays": 1}"#).unwrap();
    let source = format!("claude={}", sb.root.display());
    let fen = |args: &[&str]| {
        run(fen_fs()
            .args(args)
            .args(["--no-detect", "--source", &source, "--store"])
            .arg(&store))
    };
    let kept = fen(&["keep"]);
    assert!(
        String::from_utf8_lossy(&kept.stdout).contains("1 new"),
        "{}",
        out_text(&kept)
    );

    // Claude Code starts (a new prompt) and sweeps its old transcripts: about five
    // seconds after it starts, so the model takes its time to answer.
    let mock = MockModel::start(|req| {
        if req.path.contains("/messages") {
            std::thread::sleep(Duration::from_secs(7));
        }
        support::mock_model::respond_any(req, "Hello.")
    });
    let out = claude_with(&bin, &sb, &mock, &["-p", "hello"]);
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        !made.path.exists(),
        "Claude Code's own cleanup (cleanupPeriodDays: 1) did not delete the three-day-old transcript"
    );

    // Still there, from its copy; restore writes it back where Claude Code looks.
    let show = fen(&["show", &made.id, "--view", "transcript"]);
    assert!(
        show.stdout == bytes,
        "{} bytes shown: {}",
        show.stdout.len(),
        String::from_utf8_lossy(&show.stderr)
    );
    let restored = fen(&["restore", &made.id]);
    assert!(restored.status.success(), "{}", out_text(&restored));
    assert!(String::from_utf8_lossy(&restored.stdout).contains("claude --resume"));
    assert!(
        std::fs::read(&made.path).unwrap() == bytes,
        "restored other bytes"
    );
    let again = fen(&["restore", &made.id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("there already"),
        "{}",
        out_text(&again)
    );
    assert!(
        std::fs::read(&made.path).unwrap() == bytes,
        "a second restore changed the file"
    );

    // The real Claude Code resumes it and sends its old messages.
    let mock = MockModel::any_api("Resumed.");
    let out = claude(&bin, &sb, &mock, &made.id, "What did we do so far?");
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies = conversations(&mock);
    let body = bodies
        .last()
        .unwrap_or_else(|| panic!("no request: {}", text_of(&out)));
    in_order(&anthropic_steps(body), &resumed_steps()).unwrap();
}

/// A small tmpfs, unmounted on drop (declare it before the `Mount` on it).
struct Tmpfs {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    fn mount(test: &str, size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small");
        std::fs::create_dir(&path).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { _dir: dir, path }),
            other => {
                if std::env::var("FEN_FS_REQUIRE_FUSE").as_deref() == Ok("1") {
                    panic!("{test}: cannot mount a tmpfs (FEN_FS_REQUIRE_FUSE=1): {other:?}");
                }
                eprintln!("\n*** SKIPPED {test}: cannot mount a tmpfs (needs root) ***\n");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let p = std::ffi::CString::new(self.path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: valid C string; a lazy detach if something still holds it.
        unsafe {
            if libc::umount2(p.as_ptr(), 0) != 0 {
                libc::umount2(p.as_ptr(), libc::MNT_DETACH);
            }
        }
    }
}

/// What `fen-fs status --json` says of keeping for the mount at `mp`.
fn keeping_status(mp: &Path) -> String {
    let out = run(fen_fs().args(["status", "--json"]));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["mountpoint"] == mp.to_str().unwrap())
        .and_then(|v| v["keeping"].as_str().map(String::from))
        .unwrap_or_default()
}

#[test]
fn a_full_disk_pauses_keeping_and_the_mount_keeps_serving() {
    let test = "a_full_disk_pauses_keeping_and_the_mount_keeps_serving";
    if !support::fuse_available(test) {
        return;
    }
    let Some(fs) = Tmpfs::mount(test, "3m") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    for i in 0..4 {
        let id = format!("44444444-4444-4444-8444-{i:012}");
        claude_file(
            &root.join(format!("projects/-work-full/{id}.jsonl")),
            &id,
            500,
            "fullword",
        );
    }
    // Room for about two copies.
    let store = fs.path.join("store");
    std::fs::create_dir(&store).unwrap();
    let filler = fs.path.join("filler");
    std::fs::write(&filler, vec![7u8; 1200 << 10]).unwrap();
    let source = format!("claude={}", root.display());
    let mp_tmp = tempfile::tempdir().unwrap();
    let m = Mount {
        mp: mp_tmp.path().join("mnt"),
        store: store.clone(),
        args: ["--no-detect", "--source", &source]
            .map(String::from)
            .to_vec(),
        tmp: mp_tmp,
        env: Vec::new(),
    };
    std::fs::create_dir(&m.mp).unwrap();
    mount_with_env(&m, &[("FEN_FS_SEARCH", "off")]);
    let said = wait(20, "keeping paused by the full disk", || {
        let s = keeping_status(&m.mp);
        s.starts_with("paused: disk full").then_some(s)
    });
    assert!(
        m.daemon_log().contains("disk is full"),
        "{said}\n{}",
        m.daemon_log()
    );
    assert!(progress(&store).1 < 4);
    // No half copy, and the mount serves every session meanwhile.
    assert!(
        run(fen_fs().arg("fsck").arg("--store").arg(&store))
            .status
            .success()
    );
    let shown: Vec<PathBuf> = sessions(&m.mp).into_iter().map(|(d, _)| d).collect();
    assert_eq!(shown.len(), 4);
    for d in &shown {
        assert!(std::fs::read(d.join("conversation.json")).unwrap().len() > 1000);
    }
    // Room again: keeping resumes by itself.
    std::fs::remove_file(&filler).unwrap();
    wait(20, "keeping resumed", || {
        (keeping_status(&m.mp) == "on").then_some(())
    });
    wait(20, "every copy", || {
        (progress(&store) == (0, 4)).then_some(())
    });
    drop(m);
    drop(fs);
}

#[test]
fn a_peers_kept_copies_are_shown_whole_without_writing_there() {
    use fen_fs::sources::SessionSource;
    use fen_fs::views::ViewKind;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let file = root.join("projects/-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl");
    copy(
        &fixtures().join("claude/projects/-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl"),
        &file,
    );
    let other = tmp.path().join("other-store");
    let source = format!("claude={}", root.display());
    let keep = run(fen_fs()
        .args(["keep", "--no-detect", "--source", &source, "--store"])
        .arg(&other));
    assert!(keep.status.success(), "{}", out_text(&keep));
    // What Syncthing delivers: the other machine's store, with none of the agent's
    // folders (they stay there).
    let peer = tmp.path().join("peers/laptop");
    std::fs::create_dir_all(&peer).unwrap();
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(other.join(".kept"))
        .arg(&peer)
        .status()
        .unwrap();
    assert!(cp.success());
    let bytes = std::fs::read(&file).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    let here = tmp.path().join("store");
    std::fs::create_dir_all(&here).unwrap();
    let before = state(&peer);
    // As sync shows a peer: host `laptop`, its /tmp read here as /home/me/tmp.
    let rules = [fen_fs::config::PathRule {
        host: None,
        from: "/tmp".into(),
        to: "/home/me/tmp".into(),
    }];
    let sources = fen_fs::sources::peers::peer_kept_sources("laptop", &peer, &here, &rules, false);
    let kept: Vec<_> = sources
        .iter()
        .filter_map(|p| p.kept_index().cloned())
        .collect();
    fen_fs::sources::build_indexes(&kept);
    let s = &sources[0];
    let ns = "--home-me-tmp--";
    let listings = s.listings(ns).unwrap();
    assert_eq!(listings.len(), 1, "{:?}", s.namespaces());
    assert!(listings[0].kept);
    assert_eq!(listings[0].host.as_deref(), Some("laptop"));
    assert_eq!(listings[0].cwd.as_deref(), Some("/home/me/tmp"));
    assert_eq!(listings[0].cwd_on_host.as_deref(), Some("/tmp"));
    let dir = listings[0].dir.clone();
    assert!(dir.ends_with("@laptop"), "{dir}");
    let snap = s.snapshot(ns, &dir, ViewKind::Transcript, 0).unwrap();
    assert!(snap.read_at(0, bytes.len() + 1).unwrap() == bytes);
    let meta: Value = serde_json::from_slice(
        &s.snapshot(ns, &dir, ViewKind::Meta, 0)
            .unwrap()
            .read_at(0, 1 << 20)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["host"], "laptop");
    assert_eq!(meta["cwd"], "/home/me/tmp");
    assert_eq!(meta["kept"], true);
    assert_eq!(meta["messages"], 5);
    for s in &sources {
        s.persist();
    }
    // Nothing was written under the peer's folder; its caches are in this store.
    assert_eq!(state(&peer), before);
    assert!(here.join(".fen-cache/foreign").is_dir());
}

#[test]
fn keeping_is_turned_off_or_limited_to_some_agents() {
    let test = "keeping_is_turned_off_or_limited_to_some_agents";
    if !support::fuse_available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = fixtures();
    let claude = tmp.path().join("claude");
    copy(
        &f.join("claude/projects/-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl"),
        &claude.join("projects/-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl"),
    );
    let codex = tmp.path().join("codex");
    let rollout = "sessions/2026/01/03/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl";
    copy(&f.join("codex").join(rollout), &codex.join(rollout));
    let sources = [
        "--no-detect".to_string(),
        "--source".into(),
        format!("claude={}", claude.display()),
        "--source".into(),
        format!("codex={}", codex.display()),
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        sources
            .iter()
            .cloned()
            .chain(extra.iter().map(|s| s.to_string()))
            .collect()
    };
    // -o keep_agent=codex: Codex's session kept, Claude Code's not.
    let args = with(&["-o", "keep_agent=codex"]);
    let m = Mount::with_args(test, &args.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
    wait(20, "codex's copy", || {
        (kept_copies(&m.store, "codex").len() == 1).then_some(())
    });
    assert!(kept_copies(&m.store, "claude").is_empty());
    drop(m);
    // -o nokeep, and FEN_FS_KEEP=off: nothing kept, and status says why.
    for (extra, env, why) in [
        (&["-o", "nokeep"][..], None, "off (-o nokeep)"),
        (
            &[][..],
            Some(("FEN_FS_KEEP", "off")),
            "off (FEN_FS_KEEP=off)",
        ),
    ] {
        let m = Mount::unmounted(&with(extra).iter().map(String::as_str).collect::<Vec<_>>());
        mount_with_env(&m, &env.into_iter().collect::<Vec<_>>());
        assert_eq!(sessions(&m.mp).len(), 2);
        std::thread::sleep(Duration::from_millis(600));
        assert_eq!(keeping_status(&m.mp), why);
        assert!(!m.store.join(".kept").exists());
    }
}
