//! Qwen Code, Aider, Continue's cn, Factory Droid and Crush through a real mount, from files they wrote
//! (tests/fixtures/{qwen,aider,continue}): each session shows in the namespace of its
//! cwd with every view (`transcript.jsonl`, `conversation.json`, `conversation.md`,
//! `meta.json`, `summary.txt`), Aider's history is found under the folder
//! `--source aider=DIR` names, `fen-fs resume` prints each agent's own command, an
//! append shows on the next read, search finds them, nothing in the agents' folders
//! changes, and a session the agent deletes stays (kept).

mod crush_support;
mod support;

use fen_fs::sources::foreign::{ForeignReader, feed_all, render_message};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Mount, fen_fs, out_text};

const QWEN_ID: &str = "1bcfcf91-b839-4004-8401-5638859c38e3";
const QWEN_FORK: &str = "63e38dc2-d246-4f22-b64e-4f6a8da5590b";
const CN_ID: &str = "c18299bf-7ac4-4667-be0a-a8772ac87b6a";
const DROID_ID: &str = "f8f78dfb-c9d2-43ac-953c-1f1134fc376d";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// Every file under `dir` with its size, mtime and bytes: what "nothing was written"
/// means (a `-shm`, a lock or a rewrite would show).
fn state(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, Vec<u8>)> {
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
            out.insert(e.path(), (m.len(), m.mtime(), m.mtime_nsec(), bytes));
        }
    }
    out
}

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
        if name == "ctl" || name == "search" || name == "usage" {
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

fn session(mp: &Path, agent: &str, id: &str) -> Option<(PathBuf, Value)> {
    sessions(mp)
        .into_iter()
        .find(|(_, m)| m["agent"] == agent && m["id"] == id && m["version"].is_null())
}

/// A session folder's views, read through the mount.
struct Views {
    transcript: Vec<u8>,
    conversation: Vec<Value>,
    markdown: String,
    meta: Value,
    summary: String,
}

fn views(dir: &Path) -> Views {
    let read = |v: &str| std::fs::read(dir.join(v)).unwrap_or_else(|e| panic!("{v}: {e}"));
    Views {
        transcript: read("transcript.jsonl"),
        conversation: serde_json::from_slice(&read("conversation.json")).unwrap(),
        markdown: String::from_utf8(read("conversation.md")).unwrap(),
        meta: serde_json::from_slice(&read("meta.json")).unwrap(),
        summary: String::from_utf8(read("summary.txt")).unwrap(),
    }
}

/// What a reader gives of `bytes` (a file or a dump) as `conversation.json`.
fn conversation_of(mut r: Box<dyn ForeignReader>, bytes: &[u8]) -> Vec<Value> {
    let tail = feed_all(r.as_mut(), bytes);
    r.conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, bytes)).unwrap())
        .collect()
}

fn hits(m: &Mount, query: &str) -> Vec<Value> {
    std::fs::read_to_string(m.path("search").join(query).join("hits.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v.get("id").is_some())
        .collect()
}

fn kept_copies(store: &Path, agent: &str) -> usize {
    std::fs::read_dir(store.join(".kept").join(agent))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("kept.json").is_file())
        .count()
}

#[test]
fn issue_34_agents_sessions_show_in_every_view() {
    let test = "issue_34_agents_sessions_show_in_every_view";
    if !support::fuse_available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let qwen = tmp.path().join("qwen");
    let chats = qwen.join("projects/-tmp-q-proj/chats");
    let qwen_file = chats.join(format!("{QWEN_ID}.jsonl"));
    copy(&fixture("qwen/compressed.jsonl"), &qwen_file);
    copy(
        &fixture("qwen/forked.jsonl"),
        &chats.join(format!("archive/{QWEN_FORK}.jsonl")),
    );
    let projects = tmp.path().join("projects");
    let aider_project = projects.join("deep/proj");
    let aider_file = aider_project.join(".aider.chat.history.md");
    copy(
        &fixture("aider/two-runs.aider.chat.history.md"),
        &aider_file,
    );
    let cn = tmp.path().join("continue");
    let cn_file = cn.join(format!("sessions/{CN_ID}.json"));
    copy(
        &fixture(&format!("continue/sessions/{CN_ID}.json")),
        &cn_file,
    );
    copy(
        &fixture("continue/sessions/sessions.json"),
        &cn.join("sessions/sessions.json"),
    );
    let droid = tmp.path().join("factory");
    let droid_file = droid.join(format!("sessions/-tmp-d-proj/{DROID_ID}.jsonl"));
    for ext in ["jsonl", "settings.json"] {
        copy(
            &fixture(&format!("droid/sessions/-tmp-d-proj/{DROID_ID}.{ext}")),
            &droid.join(format!("sessions/-tmp-d-proj/{DROID_ID}.{ext}")),
        );
    }
    // Crush (from its source): a project's database under the folder --source names.
    let crush_root = tmp.path().join("crush-projects");
    let crush_project = crush_root.join("app");
    // Its writer stays open to the end (closing it checkpoints the WAL).
    let _crush_writer = crush_support::project_with_sessions(&crush_project);
    let roots = [&qwen, &projects, &cn, &droid, &crush_root];
    let before: Vec<_> = roots.iter().map(|r| state(r)).collect();
    let src = |k: &str, p: &Path| format!("{k}={}", p.display());
    let args = [
        "--no-detect".to_string(),
        "--source".into(),
        src("qwen", &qwen),
        "--source".into(),
        src("aider", &projects),
        "--source".into(),
        src("continue", &cn),
        "--source".into(),
        src("droid", &droid),
        "--source".into(),
        src("crush", &crush_root),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args(test, &args) else {
        return;
    };
    let mp = m.mp.clone();
    let find =
        |agent: &str, id: &str| wait(20, &format!("{agent} {id}"), || session(&mp, agent, id));

    // Qwen Code: the file byte for byte, the conversation its reader resumes with.
    let (qwen_dir, _) = find("qwen", QWEN_ID);
    let q = views(&qwen_dir);
    let qwen_bytes = std::fs::read(&qwen_file).unwrap();
    assert_eq!(q.transcript, qwen_bytes);
    assert_eq!(
        q.conversation,
        conversation_of(
            Box::new(fen_fs::sources::qwen::QwenReader::new()),
            &qwen_bytes
        )
    );
    assert_eq!(q.meta["resumable"], true, "{}", q.meta);
    assert_eq!(q.meta["cwd"], "/tmp/q/proj");
    assert_eq!(q.meta["archived"], false);
    assert_eq!(q.meta["source_path"], qwen_file.to_str().unwrap());
    assert!(
        qwen_dir.starts_with(m.path("tmp-q-proj")),
        "{}",
        qwen_dir.display()
    );
    assert!(q.markdown.contains("third prompt"), "{}", q.markdown);
    assert!(q.summary.contains("qwen"), "{}", q.summary);
    let (_, fork_meta) = find("qwen", QWEN_FORK);
    assert_eq!(
        fork_meta["archived"], true,
        "chats/archive/ is Qwen's archive"
    );

    // Aider: one session per run, found under the folder --source names.
    let aider_runs: Vec<(PathBuf, Value)> = wait(20, "aider's runs", || {
        let runs: Vec<_> = sessions(&mp)
            .into_iter()
            .filter(|(_, m)| m["agent"] == "aider")
            .collect();
        (runs.len() == 2).then_some(runs)
    });
    let mut aider_runs = aider_runs;
    aider_runs.sort_by(|a, b| a.1["created_at"].as_str().cmp(&b.1["created_at"].as_str()));
    let first = views(&aider_runs[0].0);
    let latest = views(&aider_runs[1].0);
    assert_eq!(first.meta["resumable"], false);
    assert!(
        first.meta["not_resumable_reason"]
            .as_str()
            .unwrap()
            .contains("latest run")
    );
    assert_eq!(latest.meta["resumable"], true);
    assert_eq!(latest.meta["cwd"], aider_project.to_str().unwrap());
    assert_eq!(latest.meta["source_path"], aider_file.to_str().unwrap());
    let header: Value =
        serde_json::from_slice(first.transcript.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(header["type"], "run", "the run's dump");
    assert_eq!(
        first.conversation,
        conversation_of(
            Box::new(fen_fs::sources::aider::AiderReader::new()),
            &first.transcript
        )
    );
    assert_eq!(first.conversation.len(), 2);
    assert!(
        first.markdown.contains("first prompt EDIT"),
        "{}",
        first.markdown
    );
    assert!(latest.summary.contains("aider"), "{}", latest.summary);

    // Continue's cn: the file byte for byte, its history items as conversation.json.
    let (cn_dir, _) = find("continue", CN_ID);
    let c = views(&cn_dir);
    let cn_bytes = std::fs::read(&cn_file).unwrap();
    assert_eq!(c.transcript, cn_bytes);
    assert_eq!(c.conversation.len(), 7);
    assert_eq!(c.meta["resumable"], true);
    assert_eq!(c.meta["cwd"], "/tmp/c/proj");
    assert_eq!(c.meta["listed_by_agent"], true);
    assert!(
        c.markdown.contains("first prompt USE_LIST"),
        "{}",
        c.markdown
    );
    assert!(c.summary.contains("continue"), "{}", c.summary);

    // Factory Droid: the file byte for byte; its rebuild is a guess, marked so.
    let (droid_dir, _) = find("droid", DROID_ID);
    let d = views(&droid_dir);
    let droid_bytes = std::fs::read(&droid_file).unwrap();
    assert_eq!(d.transcript, droid_bytes);
    assert_eq!(
        d.conversation,
        conversation_of(
            Box::new(fen_fs::sources::droid::DroidReader::new()),
            &droid_bytes
        )
    );
    assert_eq!(d.meta["resumable"], true);
    assert_eq!(d.meta["resume_rules"], "best effort");
    assert_eq!(d.meta["title"], "first prompt USE_LS");
    assert!(d.markdown.contains("reply 3"), "{}", d.markdown);
    assert!(droid_dir.starts_with(m.path("tmp-d-proj")));

    // Crush: the session's rows as a dump, from its summary on.
    let (crush_dir, _) = find("crush", "s-root");
    let k = views(&crush_dir);
    let header: Value =
        serde_json::from_slice(k.transcript.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(header["type"], "session");
    assert_eq!(k.conversation.len(), 2);
    assert_eq!(
        k.conversation[0]["role"], "user",
        "Crush resumes from its summary"
    );
    assert_eq!(k.meta["resumable"], true);
    assert_eq!(k.meta["cwd"], crush_project.to_str().unwrap());
    assert_eq!(k.meta["title"], "Fix the flux capacitor");
    assert!(k.markdown.contains("and now the tests"), "{}", k.markdown);
    let (_, child) = find("crush", "s-child");
    assert_eq!(child["parent_id"], "s-root");
    assert_eq!(child["listed_by_agent"], false);

    // Search finds each agent's words.
    for (word, agent) in [
        ("USE_TOOL", "qwen"),
        ("EDIT", "aider"),
        ("USE_LIST", "continue"),
    ] {
        wait(30, &format!("a search hit for {word}"), || {
            hits(&m, word)
                .iter()
                .any(|h| h["agent"] == agent)
                .then_some(())
        });
    }

    // Each agent's own resume command, from the session's cwd.
    let resume = |id: &str| {
        let o = fen_fs()
            .args(["resume", id, "--no-detect", "--store"])
            .arg(&m.store)
            .args(["--source", &src("qwen", &qwen)])
            .args(["--source", &src("aider", &projects)])
            .args(["--source", &src("continue", &cn)])
            .args(["--source", &src("droid", &droid)])
            .args(["--source", &src("crush", &crush_root)])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", out_text(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(
        resume(QWEN_ID),
        format!("cd /tmp/q/proj && qwen --resume {QWEN_ID}\n")
    );
    assert_eq!(
        resume(CN_ID),
        format!("cd /tmp/c/proj && cn --fork {CN_ID}\n")
    );
    let aider_id = latest.meta["id"].as_str().unwrap().to_string();
    assert_eq!(
        resume(&aider_id),
        format!(
            "cd {} && aider --restore-chat-history\n",
            aider_project.display()
        )
    );

    // Reading changed nothing in the agents' folders.
    let after: Vec<_> = roots.iter().map(|r| state(r)).collect();
    assert!(before == after, "the agents' folders changed");

    // Live: a record Qwen appends shows on the next read.
    let last_uuid = "125b892b-ba35-4d4a-93fd-be51a5cf98ea";
    let line = format!(
        "{{\"uuid\":\"appended-1\",\"parentUuid\":\"{last_uuid}\",\"sessionId\":\"{QWEN_ID}\",\"timestamp\":\"2026-11-27T15:00:00.000Z\",\"type\":\"user\",\"cwd\":\"/tmp/q/proj\",\"message\":{{\"role\":\"user\",\"parts\":[{{\"text\":\"an appended prompt\"}}]}}}}\n"
    );
    {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&qwen_file)
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
    }
    wait(10, "the appended prompt", || {
        let c = std::fs::read(qwen_dir.join("conversation.json")).ok()?;
        let c: Vec<Value> = serde_json::from_slice(&c).ok()?;
        c.last()
            .is_some_and(|l| l.to_string().contains("an appended prompt"))
            .then_some(())
    });

    // Live, for the histories kept in each project (no folder of their own to watch):
    // Aider's next message and a row Crush adds show on the next read.
    {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&aider_file)
            .unwrap()
            .write_all(b"#### an appended aider prompt  \n\nAn appended aider answer.\n\n")
            .unwrap();
    }
    wait(10, "the appended aider prompt", || {
        let c = std::fs::read_to_string(aider_runs[1].0.join("conversation.json")).ok()?;
        c.contains("an appended aider prompt").then_some(())
    });
    _crush_writer.message(
        "m-appended",
        "s-root",
        "user",
        crush_support::Db::text("user", "an appended crush prompt"),
        1_790_000_900,
    );
    wait(10, "the appended crush prompt", || {
        let c = std::fs::read_to_string(crush_dir.join("conversation.json")).ok()?;
        c.contains("an appended crush prompt").then_some(())
    });

    // Keep: sessions the agents delete stay, as they were.
    for agent in ["qwen", "aider", "continue", "droid"] {
        wait(30, &format!("{agent}'s kept copies"), || {
            (kept_copies(&m.store, agent) > 0).then_some(())
        });
    }
    let c_before = views(&cn_dir);
    // The aider run as it is now: its copy holds this, or what it was before the
    // append above when the keeper's last look at it came before the append.
    let aider_before = views(&aider_runs[1].0).conversation;
    std::fs::remove_file(&cn_file).unwrap();
    std::fs::remove_file(&aider_file).unwrap();
    let (kept_cn, kept_meta) = wait(20, "the deleted cn session, kept", || {
        session(&mp, "continue", CN_ID).filter(|(_, m)| m["source_deleted"] == true)
    });
    assert_eq!(kept_meta["kept"], true);
    let kept = views(&kept_cn);
    assert_eq!(kept.transcript, c_before.transcript);
    assert_eq!(kept.conversation, c_before.conversation);
    let kept_run = wait(20, "the deleted aider run, kept", || {
        sessions(&mp).into_iter().find(|(_, m)| {
            m["agent"] == "aider" && m["id"] == latest.meta["id"] && m["source_deleted"] == true
        })
    });
    let kept = views(&kept_run.0).conversation;
    assert!(
        kept == aider_before || kept == latest.conversation,
        "the kept aider run is neither what it was before its deletion nor before \
         the append: {kept:?}"
    );
}

/// `fen-fs usage agent --json` (no mount) over the four agents' recorded sessions: each
/// response once (Qwen's fork copies seven of its nine calls' records), Aider's cost as
/// Aider recorded it.
#[test]
fn usage_counts_each_agents_responses_once() {
    let tmp = tempfile::tempdir().unwrap();
    let chats = tmp.path().join("qwen/projects/-tmp-q-proj/chats");
    copy(
        &fixture("qwen/compressed.jsonl"),
        &chats.join(format!("{QWEN_ID}.jsonl")),
    );
    copy(
        &fixture("qwen/forked.jsonl"),
        &chats.join(format!("{QWEN_FORK}.jsonl")),
    );
    let projects = tmp.path().join("projects");
    copy(
        &fixture("aider/two-runs.aider.chat.history.md"),
        &projects.join("p/.aider.chat.history.md"),
    );
    let cn = tmp.path().join("continue/sessions");
    for f in [format!("{CN_ID}.json"), "sessions.json".into()] {
        copy(&fixture(&format!("continue/sessions/{f}")), &cn.join(&f));
    }
    let droid = tmp.path().join("factory/sessions/-tmp-d-proj");
    for f in std::fs::read_dir(fixture("droid/sessions/-tmp-d-proj")).unwrap() {
        let f = f.unwrap().path();
        copy(&f, &droid.join(f.file_name().unwrap()));
    }
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let o = fen_fs()
        .args(["usage", "agent", "--json", "--no-detect", "--store"])
        .arg(&store)
        .arg("--source")
        .arg(format!("qwen={}", tmp.path().join("qwen").display()))
        .arg("--source")
        .arg(format!("aider={}", projects.display()))
        .arg("--source")
        .arg(format!(
            "continue={}",
            tmp.path().join("continue").display()
        ))
        .arg("--source")
        .arg(format!("droid={}", tmp.path().join("factory").display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let rows: BTreeMap<String, Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["agent"].as_str().unwrap().to_string(), v))
        .collect();
    let responses = |a: &str| rows[a]["responses"].as_u64().unwrap();
    assert_eq!(responses("qwen"), 9, "{rows:?}");
    assert_eq!(responses("aider"), 2);
    assert_eq!(responses("continue"), 4);
    assert_eq!(responses("droid"), 2, "one total per session");
    assert_eq!(rows["aider"]["cost_usd"], 0.00022, "Aider's own cost");
    assert_eq!(rows["qwen"]["cache_read_tokens"], 27);
}
