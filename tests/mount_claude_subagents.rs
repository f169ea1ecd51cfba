//! Claude Code's subagents through a real mount (and the CLI): each subagent's
//! transcript is a session folder beside its parent's, linked both ways in meta.json,
//! marked in the parent's conversation.md where it ran; search finds what only a
//! subagent said and names the subagent's folder; a subagent that appears or grows
//! while mounted shows at the next look; and when Claude Code's folder loses the
//! parent and its subagents, fen-fs's kept copies show both, still linked (§11).
//! The tree is tests/fixtures/claude-subagents (recorded from Claude Code 2.1.330).

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Mount, fen_fs, out_text};

const PARENT: &str = "ee0daf2e-88ec-4c7f-93ba-330797310f21";
const CHILD: &str = "abd4dc8c7e1aa568a";
const WORKFLOW_CHILD: &str = "a0123456789abcdef";
const NS: &str = "home-user-project";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-subagents")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A copy of the recorded tree (the tests add and delete files in it).
fn claude_root(tmp: &Path) -> PathBuf {
    let root = tmp.join("claude");
    copy_tree(&fixture(), &root);
    std::fs::remove_file(root.join("README.md")).unwrap();
    root
}

fn project(root: &Path) -> PathBuf {
    root.join("projects/-home-user-project")
}

fn json_of(p: &Path) -> Value {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn ls(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Polls `f` (a loaded machine: a generous bound, never a fixed sleep).
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what}: not within 30 s");
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn subagents_show_beside_their_parent_linked_searchable_and_live() {
    let tmp = tempfile::tempdir().unwrap();
    let root = claude_root(tmp.path());
    let source = format!("claude={}", root.display());
    let Some(m) = Mount::with_args(
        "subagents_show_beside_their_parent_linked_searchable_and_live",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let ns = m.path(NS);
    let dirs = ls(&ns);
    assert_eq!(dirs.len(), 3, "the parent and two subagents: {dirs:?}");
    let parent = dirs[0].clone();
    assert!(parent.ends_with(PARENT), "{dirs:?}");
    // They sort right after their parent and read as its.
    let child = format!("{parent}.agent-{CHILD}");
    let workflow = format!("{parent}.agent-{WORKFLOW_CHILD}");
    assert_eq!(dirs[1..], [workflow.clone(), child.clone()]);

    let pm = json_of(&ns.join(&parent).join("meta.json"));
    assert_eq!(pm["subagents"], json!([child, workflow]));
    let cm = json_of(&ns.join(&child).join("meta.json"));
    assert_eq!(cm["parent"], parent.as_str());
    assert_eq!(cm["parent_id"], PARENT);
    assert_eq!(cm["agent_id"], CHILD);
    assert_eq!(cm["resumable"], false);
    // Following `parent` from the child's folder gets to the parent's.
    let back = ns
        .join(&child)
        .join("..")
        .join(cm["parent"].as_str().unwrap());
    assert_eq!(json_of(&back.join("meta.json"))["id"], PARENT);

    // The parent's conversation.md marks where the subagent ran, and the link works.
    let md = std::fs::read_to_string(ns.join(&parent).join("conversation.md")).unwrap();
    let link = format!("../{child}/conversation.md");
    assert!(
        md.contains(&format!("↳ subagent `{CHILD}` ran here: [{child}]({link})")),
        "{md}"
    );
    let child_md = std::fs::read_to_string(ns.join(&parent).join(&link)).unwrap();
    assert!(child_md.contains("Subagent answer: the word is zanzibar."));
    assert!(child_md.contains(&format!(
        "- subagent of: [{parent}](../{parent}/conversation.md)"
    )));

    // Every view of the child: `stat` size is what `cat` reads; its transcript is
    // its file; its conversation what continuing it loads.
    let file = project(&root).join(format!("{PARENT}/subagents/agent-{CHILD}.jsonl"));
    for view in [
        "conversation.json",
        "conversation.md",
        "meta.json",
        "summary.txt",
        "transcript.jsonl",
    ] {
        let p = ns.join(&child).join(view);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            bytes.len() as u64,
            "{view}"
        );
        assert!(!bytes.is_empty(), "{view}");
    }
    assert_eq!(
        std::fs::read(ns.join(&child).join("transcript.jsonl")).unwrap(),
        std::fs::read(&file).unwrap()
    );
    let conv = json_of(&ns.join(&child).join("conversation.json"));
    let conv = conv.as_array().unwrap();
    assert_eq!(conv[0]["content"], "SUBTASK-PROMPT: find the secret word.");
    assert_eq!(
        conv.last().unwrap()["content"][0]["text"],
        "Subagent answer: the word is zanzibar."
    );
    let summary = std::fs::read_to_string(ns.join(&child).join("summary.txt")).unwrap();
    assert!(
        summary.contains(&format!("parent     {parent}")),
        "{summary}"
    );
    assert!(!ns.join(&child).join("ctl").exists());

    // index.json lists them, each naming its parent.
    let index = json_of(&ns.join("index.json"));
    let rows = index.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        let want = if r["dir"] == parent.as_str() {
            Value::Null
        } else {
            json!(parent)
        };
        assert_eq!(r.get("parent").cloned().unwrap_or(Value::Null), want, "{r}");
    }

    // Search: a word only the workflow run's subagent said finds it, and names its
    // folder and its parent's.
    m.wait_indexed("quokka");
    let hits = std::fs::read_to_string(m.path("search/quokka/hits.jsonl")).unwrap();
    let hits: Vec<Value> = hits
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|h: &Value| h.get("id").is_some())
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["id"], WORKFLOW_CHILD);
    assert_eq!(hits[0]["path"], format!("{NS}/{workflow}"));
    assert_eq!(hits[0]["parent"], parent.as_str());

    // Live: a subagent that starts now shows at the next look, beside its parent,
    // which lists it; its appends show on the next read.
    let subs = project(&root).join(PARENT).join("subagents");
    let late = "a00000000000000ff";
    let late_file = subs.join(format!("agent-{late}.jsonl"));
    let first = json!({
        "parentUuid": null, "isSidechain": true, "agentId": late, "type": "user",
        "message": {"role": "user", "content": "LATE-PROMPT: count the sheep."},
        "uuid": "7a7a7a7a-0000-4000-8000-000000000001",
        "timestamp": "2026-11-27T15:40:00.000Z", "cwd": "/home/user/project",
        "sessionId": PARENT, "version": "2.1.330"
    });
    std::fs::write(&late_file, format!("{first}\n")).unwrap();
    let late_dir = format!("{parent}.agent-{late}");
    wait_for("the new subagent shows", || ls(&ns).contains(&late_dir));
    let pm = json_of(&ns.join(&parent).join("meta.json"));
    assert!(
        pm["subagents"]
            .as_array()
            .unwrap()
            .contains(&json!(late_dir)),
        "{pm}"
    );
    let answer = json!({
        "parentUuid": "7a7a7a7a-0000-4000-8000-000000000001", "isSidechain": true,
        "agentId": late, "type": "assistant",
        "message": {"id": "msg_late", "role": "assistant", "model": "claude-mock",
                    "content": [{"type": "text", "text": "Forty-two sheep."}]},
        "uuid": "7a7a7a7a-0000-4000-8000-000000000002",
        "timestamp": "2026-11-27T15:40:01.000Z", "cwd": "/home/user/project",
        "sessionId": PARENT, "version": "2.1.330"
    });
    append(&late_file, &format!("{answer}\n"));
    let conv = ns.join(&late_dir).join("conversation.json");
    wait_for("the append shows", || {
        std::fs::read_to_string(&conv).is_ok_and(|t| t.contains("Forty-two sheep."))
    });
    assert_eq!(json_of(&conv).as_array().unwrap().len(), 2);
}

fn run(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().expect("run fen-fs");
    assert!(out.status.success(), "{}", out_text(&out));
    out
}

/// §11: the parent's file and its subagents' folder deleted by Claude Code (or by
/// hand): both are kept, and shown from the copies where they were, still linked.
#[test]
fn a_deleted_parent_and_its_subagents_are_kept_and_shown_linked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = claude_root(tmp.path());
    let store = tmp.path().join("store");
    let source = format!("claude={}", root.display());
    let args = ["--no-detect", "--source", source.as_str(), "--store"];
    let said = run(fen_fs().arg("keep").args(args).arg(&store));
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(
        said.contains("4 new"),
        "the parent, two subagents and the side question's run: {said}"
    );
    let listed = |store: &Path| -> Vec<Value> {
        let out = run(fen_fs()
            .args(["list", "--all", "--json"])
            .args(args)
            .arg(store));
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let before = listed(&store);
    assert_eq!(before.len(), 3);
    let show = |id: &str, view: &str| -> Vec<u8> {
        run(fen_fs()
            .args(["show", id, "--view", view])
            .args(args)
            .arg(&store))
        .stdout
    };
    let child_conv = show(CHILD, "conversation");
    let child_transcript = show(CHILD, "transcript");

    std::fs::remove_file(project(&root).join(format!("{PARENT}.jsonl"))).unwrap();
    std::fs::remove_dir_all(project(&root).join(PARENT)).unwrap();
    let after = listed(&store);
    assert_eq!(after.len(), 3, "{after:?}");
    let dirs = |rows: &[Value]| {
        let mut d: Vec<String> = rows
            .iter()
            .map(|r| r["dir"].as_str().unwrap().to_string())
            .collect();
        d.sort();
        d
    };
    assert_eq!(dirs(&after), dirs(&before), "shown where they were");
    for r in &after {
        assert_eq!(r["kept"], true, "{r}");
        assert_eq!(r["source_deleted"], true, "{r}");
    }
    let parent = after.iter().find(|r| r["id"] == PARENT).unwrap()["dir"]
        .as_str()
        .unwrap()
        .to_string();
    let child = after.iter().find(|r| r["id"] == CHILD).unwrap();
    assert_eq!(child["parent"], parent.as_str());
    assert_eq!(show(CHILD, "conversation"), child_conv);
    assert_eq!(show(CHILD, "transcript"), child_transcript);
    let meta: Value = serde_json::from_slice(&show(PARENT, "meta")).unwrap();
    assert_eq!(meta["kept"], true);
    assert_eq!(meta["subagents"].as_array().unwrap().len(), 2, "{meta}");
    let md = String::from_utf8(show(PARENT, "md")).unwrap();
    assert!(
        md.contains(&format!(
            "↳ subagent `{CHILD}` ran here: [{parent}.agent-{CHILD}]"
        )),
        "{md}"
    );

    // Mounted: the same folders, from the copies.
    if let Some(m) = Mount::on_store(
        "a_deleted_parent_and_its_subagents_are_kept_and_shown_linked",
        &store,
        &["--no-detect", "--source", &source],
    ) {
        let ns = m.path(NS);
        assert_eq!(ls(&ns), dirs(&after));
        let cm = json_of(&ns.join(format!("{parent}.agent-{CHILD}")).join("meta.json"));
        assert_eq!(cm["parent"], parent.as_str());
        assert_eq!(cm["kept"], true);
    }

    // Restored: the subagent's file goes back into `<session>/subagents/` (made
    // again); only the session is given Claude Code's resume command.
    let said = run(fen_fs().args(["restore", CHILD]).args(args).arg(&store));
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(!said.contains("resume it with"), "{said}");
    let file = project(&root).join(format!("{PARENT}/subagents/agent-{CHILD}.jsonl"));
    assert_eq!(std::fs::read(&file).unwrap(), child_transcript);
    let said = run(fen_fs().args(["restore", PARENT]).args(args).arg(&store));
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(
        said.contains(&format!("claude --resume {PARENT}")),
        "{said}"
    );
}

/// A peer's kept copies (§12): its subagents show beside its parent there too, their
/// links naming that machine's folders (`<dir>@host`).
#[test]
fn a_peers_kept_subagents_link_to_the_peers_folders() {
    use fen_fs::sources::SessionSource;
    use fen_fs::views::ViewKind;
    let tmp = tempfile::tempdir().unwrap();
    let root = claude_root(tmp.path());
    let other = tmp.path().join("other-store");
    let source = format!("claude={}", root.display());
    run(fen_fs()
        .args(["keep", "--no-detect", "--source", &source, "--store"])
        .arg(&other));
    let peer = tmp.path().join("peers/laptop");
    std::fs::create_dir_all(&peer).unwrap();
    copy_tree(&other.join(".kept"), &peer.join(".kept"));
    let here = tmp.path().join("store");
    std::fs::create_dir_all(&here).unwrap();
    let sources = fen_fs::sources::peers::peer_kept_sources("laptop", &peer, &here, &[], false);
    let kept: Vec<_> = sources
        .iter()
        .filter_map(|p| p.kept_index().cloned())
        .collect();
    fen_fs::sources::build_indexes(&kept);
    let s = &sources[0];
    let ns = "--home-user-project--";
    let rows = s.listings(ns).unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let parent = rows.iter().find(|r| r.id == PARENT).unwrap().dir.clone();
    assert!(parent.ends_with("@laptop"), "{parent}");
    let child = rows.iter().find(|r| r.id == CHILD).unwrap();
    assert_eq!(child.parent.as_deref(), Some(parent.as_str()));
    let meta = |dir: &str| -> Value {
        let snap = s.snapshot(ns, dir, ViewKind::Meta, 0).unwrap();
        serde_json::from_slice(&snap.read_at(0, 1 << 20).unwrap()).unwrap()
    };
    assert_eq!(meta(&child.dir)["parent"], parent.as_str());
    let kids = meta(&parent)["subagents"].clone();
    let kids: Vec<&str> = kids
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(kids.contains(&child.dir.as_str()), "{kids:?}");
    let md = s.snapshot(ns, &parent, ViewKind::Markdown, 0).unwrap();
    let md = String::from_utf8(md.read_at(0, 1 << 22).unwrap()).unwrap();
    assert!(
        md.contains(&format!("](../{}/conversation.md)", child.dir)),
        "{md}"
    );
}
