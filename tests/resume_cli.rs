//! `fen-fs resume` from the command line: finding the session among every source,
//! the command it prints per agent, `--in` and `--cwd`, `--exec`, the ledger, and its
//! errors (exit 1 naming what is wrong, 2 for usage). Other agents' sessions are the
//! public fixtures, read in place; every agent root is a temporary folder.

mod resume_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{fen_fs, out_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `fen-fs resume ARGS --store STORE --no-detect` (the store made if missing).
fn resume(store: &Path, args: &[&str]) -> Output {
    std::fs::create_dir_all(store).unwrap();
    fen_fs()
        .arg("resume")
        .args(args)
        .arg("--store")
        .arg(store)
        .arg("--no-detect")
        .output()
        .unwrap()
}

/// A store with two fen sessions (made through the library, no mount).
fn store_with_two_sessions(dir: &Path) -> (PathBuf, Vec<String>) {
    let store_root = dir.join("store");
    let store = fen_fs::store::Store::open(&store_root, Default::default()).unwrap();
    let mut ids = Vec::new();
    for text in ["first", "second"] {
        let line = format!("{{\"role\":\"user\",\"content\":\"{text}\"}}");
        let entry = fen_fs::ctl::grammar::parse_session_line(line.as_bytes()).unwrap();
        let (s, _) = store
            .create_session("/p", None, &entry, &fen_fs::ctl::grammar::check_against)
            .unwrap();
        ids.push(s.session_id().to_string());
    }
    (store_root, ids)
}

#[test]
fn an_unknown_or_ambiguous_session_is_named_in_the_error() {
    let t = tempfile::tempdir().unwrap();
    let (store, ids) = store_with_two_sessions(t.path());
    let o = resume(&store, &["nosuchsession"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        stderr(&o).contains("no session matches nosuchsession"),
        "{}",
        stderr(&o)
    );
    let common: String = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let o = resume(&store, &[&common]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        stderr(&o).contains(&format!("{common} matches 2 sessions")),
        "{}",
        stderr(&o)
    );
    let o = resume(&store, &["/no/such/file.jsonl"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(stderr(&o).contains("/no/such/file.jsonl"), "{}", stderr(&o));
}

#[test]
fn a_missing_target_root_is_named_and_not_created() {
    let t = tempfile::tempdir().unwrap();
    let (store, ids) = store_with_two_sessions(t.path());
    // fen_fs() points CLAUDE_CONFIG_DIR at a folder that does not exist.
    let o = fen_fs()
        .args(["resume", &ids[0], "--in", "claude", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let e = stderr(&o);
    assert!(
        e.contains("/nonexistent/fen-fs-tests") && e.contains("CLAUDE_CONFIG_DIR"),
        "{e}"
    );
    assert!(!Path::new("/nonexistent").exists());
    let missing = t.path().join("no-codex-here");
    let o = resume(
        &store,
        &[
            &ids[0],
            "--in",
            "codex",
            "--source",
            &format!("codex={}", missing.display()),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        stderr(&o).contains(&format!("--source codex={}", missing.display())),
        "{}",
        stderr(&o)
    );
    assert!(!missing.exists());
    let o = resume(&store, &[&ids[0], "--in", "pi"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(stderr(&o).contains("--source pi=DIR"), "{}", stderr(&o));
}

#[test]
fn usage_errors_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let (store, ids) = store_with_two_sessions(t.path());
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    for args in [
        vec![ids[0].as_str(), "--in", "gemini"],
        vec![ids[0].as_str(), "--in", "fen", "--exec"],
        vec![ids[0].as_str(), "--exec"],
        // A fen session copied elsewhere stays a fen session: nothing to run either.
        vec![
            ids[0].as_str(),
            "--cwd",
            elsewhere.to_str().unwrap(),
            "--exec",
        ],
        vec![],
    ] {
        let o = resume(&store, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", out_text(&o));
    }
    // Refused before anything was written.
    assert_eq!(support::session_files(&store).len(), 2);
    assert!(fixtures().is_dir());
}

const CLAUDE_ID: &str = "1af7fc5e-8455-4414-9ccd-011d40f70b2a";
const CODEX_ID: &str = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff";

fn claude_fixture() -> PathBuf {
    fixtures()
        .join("claude/projects/-path-to-Demo")
        .join(format!("{CLAUDE_ID}.jsonl"))
}

/// `fen-fs resume ARGS` with the fixtures as Claude Code's and Codex's roots.
fn resume_fixture(store: &Path, args: &[&str]) -> Output {
    let claude = format!("claude={}", fixtures().join("claude").display());
    let codex = format!("codex={}", fixtures().join("codex").display());
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--source", &claude, "--source", &codex]);
    resume(store, &all)
}

#[test]
fn without_in_it_prints_the_command_of_the_sessions_own_agent() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    let o = resume_fixture(&store, &[&CLAUDE_ID[..8]]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(
        stdout(&o),
        format!("cd /path/to/Demo && claude --resume {CLAUDE_ID}\n")
    );
    // The recorded cwd is not on this machine: said, with what to do.
    assert!(
        stderr(&o).contains("/path/to/Demo does not exist"),
        "{}",
        stderr(&o)
    );
    // By its file's path, too.
    let o = resume_fixture(&store, &[claude_fixture().to_str().unwrap()]);
    assert_eq!(
        stdout(&o),
        format!("cd /path/to/Demo && claude --resume {CLAUDE_ID}\n")
    );
    let o = resume_fixture(&store, &[CODEX_ID]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(
        stdout(&o),
        format!("cd /redacted/path/ea96e59ed9 && codex resume {CODEX_ID}\n")
    );
    let pi_root = t.path().join("pi");
    let project = t.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let pi_id = resume_support::pi_session(&pi_root, project.to_str().unwrap());
    let o = resume(
        &store,
        &[
            &pi_id[..12],
            "--source",
            &format!("pi={}", pi_root.display()),
        ],
    );
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(
        stdout(&o),
        format!("cd {} && pi --session {pi_id}\n", project.display())
    );
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    // A fen session of a store that is not mounted: its file, and how to mount.
    let (store, ids) = store_with_two_sessions(t.path());
    let o = resume(&store, &[&ids[1]]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        stdout(&o)
            .trim_end()
            .ends_with(&format!("_{}.jsonl", ids[1])),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("is not mounted: `fen-fs mount MNT`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_session_its_agent_cannot_resume_is_refused_with_the_reason() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    // ccusage's usage-only lines: nothing Claude Code can resume.
    for args in [vec!["2fd460fa"], vec!["2fd460fa", "--in", "fen"]] {
        let o = resume_fixture(&store, &args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", out_text(&o));
        assert!(
            stderr(&o).contains("No conversation found"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn a_refused_session_without_an_id_is_named_by_its_file() {
    // A rollout with no session_meta has no id to name it by.
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    let file = fixtures().join(
        "codex/sessions/2026/05/13/rollout-2026-05-13T09-00-00-9e01c008-d9c9-5cae-9765-4d60c07e28e2.jsonl",
    );
    for args in [vec![], vec!["--in", "fen"]] {
        let mut all = vec![file.to_str().unwrap()];
        all.extend(args);
        let o = resume_fixture(&store, &all);
        assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
        let e = stderr(&o);
        assert!(
            e.contains("does not start with session metadata")
                && e.contains(file.to_str().unwrap()),
            "{e}"
        );
    }
}

#[test]
fn in_another_agent_writes_once_and_then_gives_the_session_already_made() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let codex_root = t.path().join("codex-home");
    std::fs::create_dir(&codex_root).unwrap();
    let project = t.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let codex = format!("codex={}", codex_root.display());
    let claude = format!("claude={}", fixtures().join("claude").display());
    let args = [
        CLAUDE_ID,
        "--in",
        "codex",
        "--cwd",
        project.to_str().unwrap(),
        "--source",
        &claude,
        "--source",
        &codex,
    ];
    let first = resume(&store, &args);
    assert!(first.status.success(), "{}", out_text(&first));
    let cmd = stdout(&first);
    assert!(
        cmd.starts_with(&format!("cd {} && codex resume ", project.display())),
        "{cmd}"
    );
    let e = stderr(&first);
    assert!(
        e.contains("wrote a new Codex session") && e.contains("written as text"),
        "{e}"
    );
    let second = resume(&store, &args);
    assert!(second.status.success(), "{}", out_text(&second));
    assert_eq!(stdout(&second), cmd);
    assert!(
        stderr(&second).contains("was already continued in Codex"),
        "{}",
        stderr(&second)
    );
    let files: Vec<_> = walk(&codex_root);
    assert_eq!(files.len(), 1, "{files:?}");
    // The same in another cwd is another session; the source is untouched.
    let other = t.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let mut args2 = args.to_vec();
    args2[4] = other.to_str().unwrap();
    let third = resume(&store, &args2);
    assert!(third.status.success(), "{}", out_text(&third));
    assert_ne!(stdout(&third), cmd);
    assert_eq!(walk(&codex_root).len(), 2);
    // Without --cwd, the session's own cwd, which is not on this machine: the file is
    // still written, and stderr says from where to run the command.
    let fourth = resume(
        &store,
        &[
            CLAUDE_ID, "--in", "codex", "--source", &claude, "--source", &codex,
        ],
    );
    assert!(fourth.status.success(), "{}", out_text(&fourth));
    assert!(
        stdout(&fourth).starts_with("cd /path/to/Demo && codex resume "),
        "{}",
        stdout(&fourth)
    );
    assert!(
        stderr(&fourth).contains("/path/to/Demo does not exist"),
        "{}",
        stderr(&fourth)
    );
    assert_eq!(walk(&codex_root).len(), 3);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn cwd_without_in_copies_the_session_in_its_own_agent_and_exec_runs_the_command_there() {
    let t = tempfile::tempdir().unwrap();
    // A Claude Code root of the test's own holding one session of a moved project.
    std::fs::create_dir(t.path().join("store")).unwrap();
    let root = t.path().join("claude");
    let old = root.join("projects/-path-to-Demo");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::copy(claude_fixture(), old.join(format!("{CLAUDE_ID}.jsonl"))).unwrap();
    let before = std::fs::read(old.join(format!("{CLAUDE_ID}.jsonl"))).unwrap();
    let moved = t.path().join("Demo-renamed");
    std::fs::create_dir(&moved).unwrap();
    // A stand-in `claude` that says where it ran and with what.
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let said = t.path().join("said");
    std::fs::write(
        bin.join("claude"),
        format!("#!/bin/sh\necho \"$(pwd) $*\" > {}\n", said.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = fen_fs()
        .env("PATH", path)
        .args([
            "resume",
            CLAUDE_ID,
            "--cwd",
            moved.to_str().unwrap(),
            "--exec",
            "--no-detect",
        ])
        .arg("--source")
        .arg(format!("claude={}", root.display()))
        .arg("--store")
        .arg(t.path().join("store"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let cmd = stdout(&o);
    let id = cmd.trim_end().rsplit(' ').next().unwrap().to_string();
    assert_ne!(id, CLAUDE_ID);
    let slug: String = std::fs::canonicalize(&moved)
        .unwrap()
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let copy = root.join("projects").join(slug).join(format!("{id}.jsonl"));
    assert!(copy.is_file(), "{cmd}");
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&copy)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["cwd"], moved.to_str().unwrap());
    assert_eq!(first["fenSource"]["id"], CLAUDE_ID);
    // The original is untouched, and --exec ran `claude --resume ID` in the new place.
    assert_eq!(
        std::fs::read(old.join(format!("{CLAUDE_ID}.jsonl"))).unwrap(),
        before
    );
    let ran = std::fs::read_to_string(&said).unwrap();
    assert_eq!(
        ran.trim_end(),
        format!(
            "{} --resume {id}",
            std::fs::canonicalize(&moved).unwrap().display()
        )
    );
}

#[test]
fn in_fen_makes_a_session_that_goes_on_through_its_ctl() {
    let Some(m) = support::Mount::new("resume_cli::in_fen") else {
        return;
    };
    let o = fen_fs()
        .args([
            "resume",
            CODEX_ID,
            "--in",
            "fen",
            "--no-detect",
            "--cwd",
            "/work/demo",
        ])
        .arg("--source")
        .arg(format!("codex={}", fixtures().join("codex").display()))
        .arg("--store")
        .arg(&m.store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let ctl = PathBuf::from(stdout(&o).trim_end());
    assert!(
        ctl.starts_with(&m.mp) && ctl.ends_with("ctl"),
        "{}",
        ctl.display()
    );
    let dir = ctl.parent().unwrap();
    let before: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(dir.join("conversation.json")).unwrap()).unwrap();
    assert!(before.len() > 5);
    let text = serde_json::to_string(&before).unwrap();
    assert!(
        text.contains("[REDACTED_TEXT len=647 sha=10502814]"),
        "{text}"
    );
    // The developer messages (injected) are not there.
    assert!(!text.contains("[REDACTED_TEXT len=4508 sha=c490750a]"));
    let o = support::sh_in(
        dir,
        r#"echo '{"role":"user","content":"Go on."}' >> "$1""#,
        &[ctl.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", out_text(&o));
    let after: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(dir.join("conversation.json")).unwrap()).unwrap();
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after[..before.len()], before[..]);
    assert_eq!(after.last().unwrap()["content"], "Go on.");
    let meta = support::meta(dir);
    assert!(
        meta["title"].as_str().unwrap().ends_with(" (from codex)"),
        "{meta}"
    );
    assert_eq!(meta["metadata"]["resumed_from"]["id"], CODEX_ID);
    // Its own command is that same ctl.
    let id = meta["id"].as_str().unwrap();
    let o = resume(&m.store, &[id]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(PathBuf::from(stdout(&o).trim_end()), ctl);
}
