//! `conversation.md` through a real mount, driven with real tools: `ls` lists it in
//! fen's and other agents' session folders, `cat` reads it, `wc -c` equals
//! `stat -c %s`, and a descriptor held across an append keeps its snapshot.

mod support;

use std::path::{Path, PathBuf};
use support::{Mount, ctl_ok, out_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

/// Runs `script` in `sh` with `S` set to `session`; its stdout.
fn sh(m: &Mount, session: &Path, script: &str) -> String {
    let out = m.sh(&format!("S='{}'\n{script}", session.display()));
    assert!(out.status.success(), "{script}: {}", out_text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `wc -c` and `stat -c %s` of `conversation.md` in `session` agree; returns `cat`.
fn cat_md(m: &Mount, session: &Path) -> String {
    let out = sh(
        m,
        session,
        r#"wc -c < "$S/conversation.md"; stat -c %s "$S/conversation.md""#,
    );
    let nums: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(nums.len(), 2, "{out}");
    assert_eq!(
        nums[0],
        nums[1],
        "wc -c vs stat -c %s of {}",
        session.display()
    );
    sh(m, session, r#"cat "$S/conversation.md""#)
}

#[test]
fn a_fen_session_reads_as_markdown_and_a_handle_keeps_its_snapshot() {
    let Some(m) = Mount::new("a_fen_session_reads_as_markdown_and_a_handle_keeps_its_snapshot")
    else {
        return;
    };
    let s = m.create_session("/home/u/proj", "Add a --verbose flag");
    ctl_ok(
        &s,
        r#"{"role":"assistant","content":[{"type":"text","text":"Reading ```main.rs```."},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"src/main.rs"}}]}"#,
    );
    let long: Vec<String> = (1..=50).map(|i| format!("line {i}")).collect();
    ctl_ok(
        &s,
        &format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":{}}}]}}"#,
            serde_json::to_string(&long.join("\n")).unwrap()
        ),
    );
    let ls = sh(&m, &s, r#"ls "$S""#);
    assert!(ls.lines().any(|l| l == "conversation.md"), "{ls}");
    let md = cat_md(&m, &s);
    assert!(
        md.starts_with("# Add a --verbose flag\n\n- agent: fen\n"),
        "{md}"
    );
    assert!(md.contains("Reading ```main.rs```.\n\nTool call `Read`:\n\n```json\n"));
    assert!(md.contains("Result of `Read`:\n\n```\nline 1\n"));
    assert!(md.contains("line 40\n```\n\n_(10 more lines left out)_\n"));
    assert!(!md.contains("line 41"));
    // `show --view md` prints the same document.
    let shown = support::fen_on(
        &m.store,
        &[
            "show",
            &s.file_name().unwrap().to_string_lossy(),
            "--view",
            "md",
        ],
    );
    assert!(shown.status.success(), "{}", out_text(&shown));
    assert_eq!(String::from_utf8(shown.stdout).unwrap(), md);

    // A descriptor opened before an append reads what it opened.
    let out = sh(
        &m,
        &s,
        r#"exec 3< "$S/conversation.md"
echo '{"role":"assistant","content":"Added the flag."}' >> "$S/ctl"
cat <&3"#,
    );
    assert_eq!(out, md);
    let after = cat_md(&m, &s);
    assert!(after.starts_with(&md[..md.find("## ").unwrap()]));
    assert!(after.ends_with("Added the flag.\n\n"), "{after}");
}

#[test]
fn other_agents_sessions_have_conversation_md() {
    let Some(m) = Mount::with_args(
        "other_agents_sessions_have_conversation_md",
        &[
            "--no-detect",
            "--source",
            &format!("claude={}", fixtures().join("claude").display()),
            "--source",
            &format!("codex={}", fixtures().join("codex").display()),
        ],
    ) else {
        return;
    };
    let mut sessions = 0;
    for ns in std::fs::read_dir(&m.mp).unwrap().flatten() {
        if !ns.file_type().unwrap().is_dir() {
            continue;
        }
        for s in std::fs::read_dir(ns.path()).unwrap().flatten() {
            if !s.file_type().unwrap().is_dir() {
                continue;
            }
            sessions += 1;
            let ls = sh(&m, &s.path(), r#"ls "$S""#);
            assert!(ls.lines().any(|l| l == "conversation.md"), "{ls}");
            let md = cat_md(&m, &s.path());
            let agent = if s.file_name().to_string_lossy().contains("_claude-") {
                "claude"
            } else {
                "codex"
            };
            assert!(md.starts_with("# "), "{md}");
            assert!(md.contains(&format!("\n- agent: {agent}\n")), "{md}");
        }
    }
    assert!(sessions >= 25, "{sessions}");
}

#[test]
fn a_foreign_handle_keeps_its_snapshot_while_the_agent_appends() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("projects/-p");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join("11111111-2222-4333-8444-555555555555.jsonl");
    let line = |uuid: &str, parent: &str, role: &str, text: &str| {
        format!(
            r#"{{"type":"{role}","uuid":"{uuid}","parentUuid":{parent},"cwd":"/p","timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"{role}","content":"{text}"}}}}"#
        ) + "\n"
    };
    std::fs::write(&file, line("u1", "null", "user", "Hello there")).unwrap();
    let Some(m) = Mount::with_args(
        "a_foreign_handle_keeps_its_snapshot_while_the_agent_appends",
        &[
            "--no-detect",
            "--source",
            &format!("claude={}", root.path().display()),
        ],
    ) else {
        return;
    };
    let ns = m.path("p");
    let s = std::fs::read_dir(&ns)
        .unwrap()
        .flatten()
        .find(|e| e.file_type().unwrap().is_dir())
        .unwrap()
        .path();
    let md = cat_md(&m, &s);
    assert!(md.contains("Hello there\n"));
    let out = sh(
        &m,
        &s,
        &format!(
            r#"exec 3< "$S/conversation.md"
printf '%s\n' '{}' >> '{}'
cat <&3"#,
            line("a1", "\"u1\"", "assistant", "General Kenobi").trim_end(),
            file.display()
        ),
    );
    assert_eq!(out, md);
    let after = cat_md(&m, &s);
    assert!(after.contains("General Kenobi\n"), "{after}");
}
