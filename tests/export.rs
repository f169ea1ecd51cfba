//! `fen-fs export` from the command line: planted secrets of every kind in every
//! place of a session leave nothing in any format while every decoy stays; a hostile
//! session exports as inert text; md and json are conversation.md and
//! conversation.json; other agents' sessions (the public fixtures), a kept copy and a
//! peer's session; errors and exit codes, and nothing partial ever written. Every
//! agent root is a temporary folder.

mod export_support;
mod mcp_support;
mod support;

use export_support::{ID, claude_session};

use fen_fs::redact::rules::{DECOYS, RULES};
use serde_json::Value;
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

/// `fen-fs ARGS --store STORE --no-detect` plus `extra` (sources).
fn run(store: &Path, args: &[&str], extra: &[String]) -> Output {
    fen_fs()
        .args(args)
        .arg("--store")
        .arg(store)
        .arg("--no-detect")
        .args(extra)
        .output()
        .unwrap()
}

/// Every secret of the rules' samples, with the sample text that holds it.
fn planted() -> Vec<(&'static str, &'static str, &'static str)> {
    RULES
        .iter()
        .flat_map(|r| {
            r.finds
                .iter()
                .map(move |(text, secret)| (r.kind, *text, *secret))
        })
        .collect()
}

/// Every decoy: the shared list and each rule's texts that must not be found.
fn decoys() -> Vec<&'static str> {
    DECOYS
        .iter()
        .copied()
        .chain(RULES.iter().flat_map(|r| r.ignores.iter().copied()))
        .collect()
}

/// `[REDACTED:kind]` marks in `text` (not the page's note about them).
fn redactions(text: &str) -> usize {
    regex::Regex::new(r"\[REDACTED:[a-z]")
        .unwrap()
        .find_iter(text)
        .count()
}

/// `s` as the page shows it in element content (tool output: `& < >` escaped).
fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

struct Setup {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    claude: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        std::fs::create_dir_all(&store).unwrap();
        let claude = tmp.path().join("claude");
        std::fs::create_dir_all(claude.join("projects")).unwrap();
        Setup {
            store,
            claude,
            _tmp: tmp,
        }
    }

    fn sources(&self) -> Vec<String> {
        vec![
            "--source".into(),
            format!("claude={}", self.claude.display()),
        ]
    }

    fn export(&self, args: &[&str]) -> Output {
        let mut all = vec!["export"];
        all.extend_from_slice(args);
        run(&self.store, &all, &self.sources())
    }

    fn dir(&self) -> &Path {
        self._tmp.path()
    }
}

#[test]
fn planted_secrets_leave_nothing_in_any_format() {
    let s = Setup::new();
    // One session per secret, so that each is tested in every place on its own (a
    // merge with a neighbour cannot hide one), and one with all of them together.
    let planted = planted();
    let mut sessions: Vec<(String, String, Vec<&str>)> = Vec::new();
    for (i, (_, text, secret)) in planted.iter().enumerate() {
        let id = format!("7a1c0de5-0000-4000-8000-{:012}", i + 1);
        claude_session(&s.claude, &id, "/p/secrets", text);
        sessions.push((id, text.to_string(), vec![*secret]));
    }
    let all: String = planted
        .iter()
        .map(|(_, t, _)| *t)
        .collect::<Vec<_>>()
        .join("\n\n");
    claude_session(&s.claude, ID, "/p/secrets", &all);
    sessions.push((
        ID.to_string(),
        all,
        planted.iter().map(|(_, _, s)| *s).collect(),
    ));
    for (id, text, secrets) in &sessions {
        for format in ["html", "md", "json"] {
            let out = s.dir().join(format!("{id}.{format}"));
            let o = s.export(&[id, "--format", format, "-o", out.to_str().unwrap()]);
            assert!(o.status.success(), "{id} {format}: {}", out_text(&o));
            assert!(o.stdout.is_empty(), "-o: nothing on stdout");
            let got = std::fs::read_to_string(&out).unwrap();
            for secret in secrets {
                assert!(
                    !got.contains(secret) && !got.contains(&html_escape(secret)),
                    "{format}: {secret:?} left in the export of {text:?}"
                );
            }
            assert!(redactions(&got) > 0, "{format}: {got}");
            assert!(stderr(&o).contains("fen-fs: redacted "), "{}", stderr(&o));
            assert!(!stderr(&o).contains("redacted 0"), "{}", stderr(&o));
        }
    }
    // Every kind is named in the report of the session that holds them all.
    let o = s.export(&[ID, "--format", "md"]);
    let said = stderr(&o);
    for (kind, _, _) in &planted {
        assert!(said.contains(&format!(" {kind}")), "{kind} not in {said}");
    }
    // The same with --no-redact: the secrets are there (the test can fail), and
    // stderr says what was left in.
    let o = s.export(&[ID, "--format", "md", "--no-redact"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let md = stdout(&o);
    for (_, _, secret) in &planted {
        assert!(md.contains(secret), "--no-redact keeps {secret}");
    }
    assert!(
        stderr(&o).contains("--no-redact: left in "),
        "{}",
        stderr(&o)
    );
    // HTML to stdout, whole.
    let o = s.export(&[ID]);
    assert!(o.status.success());
    let html = stdout(&o);
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    for (_, _, secret) in &planted {
        assert!(!html.contains(secret));
    }
}

#[test]
fn decoys_stay_and_nothing_is_redacted() {
    let s = Setup::new();
    let decoys = decoys();
    let text = decoys.join("\n\n");
    claude_session(&s.claude, ID, "/p/decoys", &text);
    for format in ["html", "md", "json"] {
        let o = s.export(&[ID, "--format", format]);
        assert!(o.status.success(), "{format}: {}", out_text(&o));
        assert_eq!(stderr(&o).trim(), "fen-fs: redacted 0", "{format}");
        let got = stdout(&o);
        assert_eq!(redactions(&got), 0, "{format}");
        for d in &decoys {
            let shown = match format {
                // Tool output is shown as it is (escaped) in the page.
                "html" => html_escape(d),
                "md" => d.to_string(),
                _ => {
                    let q = serde_json::to_string(d).unwrap();
                    q[1..q.len() - 1].to_string()
                }
            };
            assert!(got.contains(&shown), "{format}: decoy {d:?} is gone");
        }
    }
}

#[test]
fn redact_paths_hides_the_home_folder_and_the_user_name() {
    let s = Setup::new();
    claude_session(
        &s.claude,
        ID,
        "/home/ada-lovelace/proj",
        "see /home/ada-lovelace/proj/src/main.rs, written by ada-lovelace",
    );
    let o = fen_fs()
        .args([
            "export",
            ID,
            "--format",
            "md",
            "--redact-paths",
            "--no-detect",
            "--store",
        ])
        .arg(&s.store)
        .args(s.sources())
        .env("USER", "ada-lovelace")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let md = stdout(&o);
    assert!(!md.contains("ada-lovelace"), "{md}");
    assert!(md.contains("~/proj/src/main.rs, written by user"), "{md}");
    assert!(md.contains("- cwd: ~/proj"), "{md}");
    assert!(stderr(&o).contains("; paths: "), "{}", stderr(&o));
    // Without it, paths stay.
    let o = s.export(&[ID, "--format", "md"]);
    assert!(stdout(&o).contains("/home/ada-lovelace/proj/src/main.rs"));
}

const HOSTILE: &str = "<script>window.__pwned=1</script> <img src=x onerror=\"window.__pwned=2\"> \
<svg onload=\"window.__pwned=3\"></svg> <iframe src=\"https://evil.example/\"></iframe> \
[click](javascript:window.__pwned=4) <a href=\"javascript:window.__pwned=5\">x</a> \
![t](https://evil.example/pixel.png) </pre></details></article><script>window.__pwned=6</script>";

#[test]
fn a_hostile_session_exports_as_inert_text() {
    let s = Setup::new();
    claude_session(&s.claude, ID, "/p/hostile", HOSTILE);
    let o = s.export(&[ID]);
    assert!(o.status.success(), "{}", out_text(&o));
    let html = stdout(&o);
    // No element but the page's own: none of these tags, no event handler or
    // javascript: link on any element (in text, `"` may stand as it is).
    let tag = regex::Regex::new(r"<[A-Za-z][^>]*>").unwrap();
    for t in tag.find_iter(&html).map(|m| m.as_str()) {
        let lower = t.to_ascii_lowercase();
        for bad in [
            "<script",
            "<img",
            "<svg",
            "<iframe",
            "javascript:",
            " onerror",
            " onload",
        ] {
            assert!(!lower.contains(bad), "{bad} in {t}");
        }
        // Another host only as a link to follow, never loaded.
        if lower.contains("evil.example") {
            assert!(lower.starts_with("<a ") && !lower.contains(" src="), "{t}");
        }
    }
    assert!(html.contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    // The page's own markup is what it should be: as many articles as messages.
    assert_eq!(
        html.matches("<article ").count(),
        html.matches("</article>").count()
    );
}

#[test]
fn md_and_json_are_the_sessions_own_views() {
    let s = Setup::new();
    let root = fixtures().join("claude");
    let codex = fixtures().join("codex");
    let gemini = fixtures().join("gemini");
    let sources = vec![
        "--source".to_string(),
        format!("claude={}", root.display()),
        "--source".to_string(),
        format!("codex={}", codex.display()),
        "--source".to_string(),
        format!("gemini={}", gemini.display()),
    ];
    // Claude Code (subagents, compactions), Codex and Gemini CLI.
    for id in [
        "ef958aa1-0e93-49f0-bb71-150f63befcd1",
        "43c4655e-4b11-5485-86a9-64e7d606a1b2",
        "55550000-0000-4000-8000-000000000001",
        "019c8a59-e9dd-71f0-9ae3-4079fe9726a9",
        "11111111-1111-4111-8111-111111111111",
        "session-2025-12-16T23-47-b4f17607",
        "sess-uuid-tool-results",
    ] {
        let show = |view: &str| {
            let o = run(&s.store, &["show", id, "--view", view], &sources);
            assert!(o.status.success(), "show {id}: {}", out_text(&o));
            o.stdout
        };
        let export = |format: &str| {
            let o = run(
                &s.store,
                &["export", id, "--format", format, "--no-redact"],
                &sources,
            );
            assert!(o.status.success(), "export {id}: {}", out_text(&o));
            o.stdout
        };
        assert_eq!(export("md"), show("md"), "{id}: conversation.md");
        assert_eq!(
            export("json"),
            show("conversation"),
            "{id}: conversation.json"
        );
        let o = run(&s.store, &["export", id], &sources);
        assert!(o.status.success(), "{id}: {}", out_text(&o));
        let html = stdout(&o);
        let messages: Vec<Value> = show("conversation")
            .split(|b| *b == b'\n')
            .filter(|l| l.first() == Some(&b'{'))
            .map(|l| serde_json::from_slice(l.strip_suffix(b",").unwrap_or(l)).unwrap())
            .collect();
        assert!(!messages.is_empty(), "{id}");
        assert!(html.contains("<article id=\"m-0\""), "{id}");
        // Redacted JSON is still one JSON value per line.
        let o = run(&s.store, &["export", id, "--format", "json"], &sources);
        let text = stdout(&o);
        for line in text.lines().filter(|l| l.starts_with('{')) {
            let line = line.strip_suffix(',').unwrap_or(line);
            serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{id}: {e}: {line}"));
        }
    }
}

#[test]
fn a_kept_copy_and_a_peers_session_export() {
    let s = Setup::new();
    let secret = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d";
    let file = claude_session(&s.claude, ID, "/p/kept", &format!("token {secret}"));
    // Kept, then deleted by its agent: exported from the copy.
    let o = run(&s.store, &["keep"], &s.sources());
    assert!(o.status.success(), "{}", out_text(&o));
    std::fs::remove_file(&file).unwrap();
    let o = s.export(&[ID]);
    assert!(o.status.success(), "{}", out_text(&o));
    let html = stdout(&o);
    assert!(
        html.contains("<span class=\"badge kept\">kept</span>"),
        "the kept copy"
    );
    assert!(html.contains("deleted by its agent"));
    assert!(!html.contains(secret) && html.contains("[REDACTED:github-token]"));
    let said = stderr(&o);
    let n: u64 = said
        .trim()
        .strip_prefix("fen-fs: redacted ")
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(n >= 8, "every place: {said}");
    assert!(
        said.trim().ends_with(&format!("{n} github-token")),
        "{said}"
    );
    // Another machine's: its store received under peers/beta (here: kept copies of
    // its Claude Code sessions), read in place from this machine's store.
    let beta = s.dir().join("peers/beta");
    let beta_claude = s.dir().join("beta-claude");
    claude_session(
        &beta_claude,
        "b0b0b0b0-0000-4000-8000-000000000001",
        "/home/bob/w",
        &format!("peer {secret}"),
    );
    let o = fen_fs()
        .args(["keep", "--no-detect", "--source"])
        .arg(format!("claude={}", beta_claude.display()))
        .arg("--store")
        .arg(&beta)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let before = dir_state(&beta);
    let here = s.dir().join("here");
    std::fs::create_dir_all(&here).unwrap();
    let peers = vec![
        "--peers".to_string(),
        s.dir().join("peers").display().to_string(),
    ];
    for format in ["html", "md", "json"] {
        let o = run(
            &here,
            &["export", "b0b0b0b0", "--format", format, "--redact-paths"],
            &peers,
        );
        assert!(o.status.success(), "{format}: {}", out_text(&o));
        let got = stdout(&o);
        assert!(!got.contains(secret), "{format}");
        assert!(got.contains("[REDACTED:github-token]"), "{format}");
        assert!(
            !got.contains("/home/bob"),
            "{format}: the peer's home is hidden too: {got}"
        );
        if format == "html" {
            assert!(got.contains("<span class=\"badge host\">beta</span>"));
        }
    }
    assert_eq!(dir_state(&beta), before, "nothing written under peers/");
}

fn dir_state(dir: &Path) -> Vec<(PathBuf, u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            } else {
                out.push((
                    e.path(),
                    m.len(),
                    std::fs::read(e.path()).unwrap_or_default(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn errors_exit_2_and_a_failed_scan_writes_nothing() {
    let s = Setup::new();
    claude_session(&s.claude, ID, "/p/e", "hello");
    claude_session(
        &s.claude,
        "7a1c0de5-0000-4000-8000-00000000e7e8",
        "/p/e",
        "hello",
    );
    let out = s.dir().join("out.html");
    // Unknown, ambiguous, a missing file, an unknown format: usage errors, nothing written.
    for (args, says) in [
        (vec!["nosuchsession"], "no session matches nosuchsession"),
        (vec!["7a1c0de5"], "7a1c0de5 matches 2 sessions"),
        (vec!["/no/such/file.jsonl"], "/no/such/file.jsonl"),
        (vec![ID, "--format", "pdf"], "one of html, md, json"),
        (
            vec![ID, "--no-redact", "--redact-paths"],
            "cannot be used with",
        ),
    ] {
        let mut a = args.clone();
        a.extend(["-o", out.to_str().unwrap()]);
        let o = s.export(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", out_text(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!out.exists(), "{args:?}");
        assert!(o.stdout.is_empty());
    }
    let o = fen_fs()
        .args(["export", ID, "--store"])
        .arg(s.dir().join("no-store"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    // A scan that fails midway: exit 1, no file, an existing file untouched, nothing
    // on stdout, no temporary file left beside the output.
    std::fs::write(&out, "earlier export").unwrap();
    for format in ["html", "md", "json"] {
        for at in ["0", "3"] {
            let run = |to_file: bool| {
                let mut c = fen_fs();
                c.args(["export", ID, "--format", format, "--no-detect", "--store"])
                    .arg(&s.store)
                    .args(s.sources())
                    .env("FEN_FS_TEST_EXPORT_FAIL_AT", at);
                if to_file {
                    c.arg("-o").arg(&out);
                }
                c.output().unwrap()
            };
            let o = run(true);
            assert_eq!(
                o.status.code(),
                Some(1),
                "{format} at {at}: {}",
                out_text(&o)
            );
            assert!(stderr(&o).contains("the scan failed"), "{}", stderr(&o));
            assert_eq!(std::fs::read_to_string(&out).unwrap(), "earlier export");
            let o = run(false);
            assert_eq!(o.status.code(), Some(1));
            assert!(o.stdout.is_empty(), "{format} at {at}: partial stdout");
        }
    }
    let names: Vec<String> = std::fs::read_dir(s.dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("fen-export"))
        .collect();
    assert!(names.is_empty(), "left behind: {names:?}");
    // A whole export replaces it, keeping its permissions.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = s.export(&[ID, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o640
    );
}

/// A fen session (with a compaction: its summary comes first) exports as `fen-fs show`
/// shows it, and redacted.
#[test]
fn a_fen_session_exports() {
    use fen_fs::ctl::grammar::{check_against, parse_root_line, parse_session_line};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = fen_fs::store::Store::open(&root, Default::default()).unwrap();
    let secret = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d";
    let first = format!(r#"{{"cwd":"/p/fen","role":"user","content":"use {secret}"}}"#);
    let req = parse_root_line(first.as_bytes()).unwrap();
    let (s, _) = store
        .create_session(&req.cwd, None, &req.first, &check_against)
        .unwrap();
    let append = |lines: &[String]| {
        let entries: Vec<_> = lines
            .iter()
            .map(|l| parse_session_line(l.as_bytes()).unwrap())
            .collect();
        s.append(&entries, &check_against, store.append).unwrap()
    };
    let ids = append(&[
        r#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}"#.into(),
        format!(r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"{secret}"}}]}}"#),
        r#"{"role":"assistant","content":"done"}"#.into(),
    ]);
    append(&[format!(
        r#"{{"type":"compaction","summary":"we listed {secret}","first-kept-entry-id":"{}"}}"#,
        ids[1]
    )]);
    append(&[r#"{"role":"user","content":"next"}"#.into()]);
    let id = s.session_id().to_string();
    let out = |args: &[&str]| {
        let o = run(&root, args, &[]);
        assert!(o.status.success(), "{args:?}: {}", out_text(&o));
        stdout(&o)
    };
    let shown = out(&["show", &id, "--view", "md"]);
    assert_eq!(
        out(&["export", &id, "--format", "md", "--no-redact"]),
        shown
    );
    assert_eq!(
        out(&["export", &id, "--format", "json", "--no-redact"]),
        out(&["show", &id, "--view", "conversation"])
    );
    for format in ["html", "md", "json"] {
        let got = out(&["export", &id, "--format", format]);
        assert!(!got.contains(secret), "{format}");
        assert!(redactions(&got) >= 2, "{format}: {got}");
    }
    // The Session page's messages: the history the compaction took out is there,
    // marked, and the summary stands where the compaction happened.
    let html = out(&["export", &id]);
    let summary = html.find("class=\"msg role-user compaction\"").unwrap();
    assert!(
        html.contains("<article id=\"m-0\" class=\"msg role-user out-of-conversation\""),
        "{html}"
    );
    assert!(
        summary > html.find("<article id=\"m-3\"").unwrap(),
        "the summary after what it summarizes"
    );
}

/// The HTML header's tokens and cost are the usage ledgers' as last saved (a mount's
/// count, `fen-fs usage`, `fen-fs web`): an export reads no session file to count
/// them and never waits for a count, so a session never counted has none; once
/// counted, the header has what `fen-fs usage session` says.
#[test]
fn the_header_has_the_tokens_and_cost_the_usage_ledgers_hold() {
    let s = Setup::new();
    let id = "5e55c0de-0000-4000-8000-00000000c057";
    let texts: Vec<String> = (0..12).map(|i| format!("turn {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    mcp_support::claude_session(&s.claude, "/p/costly", id, "2026-03-01T10:00:00Z", &texts);
    let o = s.export(&[id]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        !stdout(&o).contains("<dt>tokens</dt>"),
        "never counted: none"
    );
    assert!(
        !s.store.join(".fen-cache/usage").exists(),
        "the export counted nothing"
    );
    let o = run(&s.store, &["usage", "session", "--json"], &s.sources());
    assert!(o.status.success(), "{}", out_text(&o));
    let row: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(row["session"], id);
    let tokens = row["total_tokens"].as_u64().unwrap();
    let cost = row["cost_usd"].as_f64().unwrap();
    assert_eq!(tokens, 6 * 15, "six answers of 10 + 5 tokens");
    let o = s.export(&[id]);
    let html = stdout(&o);
    assert!(
        html.contains(&format!("<dt>tokens</dt><dd>{tokens}</dd>")),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "<dt>cost</dt><dd>{}</dd>",
            html_escape(&fen_fs::views::html::dollars(Some(cost)))
        )),
        "{html}"
    );
    // md and json are the session's views: no header of counts.
    let o = s.export(&[id, "--format", "md"]);
    assert!(!stdout(&o).contains("tokens"));
}

/// A Claude Code session's subagents in the exported file: named by id where they
/// ran and in the header, as text (the file is alone: no link to the web server's
/// pages), and a subagent's export names its parent.
#[test]
fn subagents_are_named_not_linked_in_the_html() {
    let s = Setup::new();
    let sources = vec![
        "--source".to_string(),
        format!("claude={}", fixtures().join("claude").display()),
    ];
    let export = |id: &str| {
        let o = run(&s.store, &["export", id], &sources);
        assert!(o.status.success(), "export {id}: {}", out_text(&o));
        let html = stdout(&o);
        assert!(!html.contains("href=\"/"), "{id}: a link to the server");
        assert!(!html.contains("?entry="), "{id}");
        html
    };
    let parent = export("ef958aa1-0e93-49f0-bb71-150f63befcd1");
    assert!(parent.contains(
        "<p class=\"subagent-ran\">↳ subagent <code>aef063ba534d73153</code> ran here (a session of its own, not in this file)</p>"
    ));
    assert!(parent.contains(
        "<p class=\"subagent-ran\">↳ subagent <code>a4ca7529859c158c2</code> ran here (its transcript is not here)</p>"
    ));
    assert!(parent.contains("<dt>subagents</dt><dd><ul class=\"subagents\">"));
    assert!(parent.contains("<li>aef063ba534d73153</li>"));
    let child = export("aef063ba534d73153");
    assert!(
        child.contains("<dt>subagent of</dt><dd>ef958aa1-0e93-49f0-bb71-150f63befcd1</dd>"),
        "the subagent's parent"
    );
    // Claude Code 1.0's inline subagent: the entry of the history it starts from.
    let old = export("5c0375b4-57a5-4f26-b12d-d022ee4e51b7");
    assert!(old.contains(
        "its messages are in this session's history, from entry <code>6340ddef-f656-4b72-a065-82390f637678</code>"
    ));
    assert!(old.contains("data-entry=\"6340ddef-f656-4b72-a065-82390f637678\""));
}
