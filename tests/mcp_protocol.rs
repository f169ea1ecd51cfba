//! `fen-fs mcp` through a plain JSON-RPC client over its stdio: initialize, every
//! tool's schema in tools/list, tools/call of every tool (filters, paging, the size
//! cap), bad arguments and unknown sessions as tool errors (isError) after which the
//! server goes on, an unknown tool as a JSON-RPC error; with and without a mount. The
//! history is a fen session and Claude Code sessions in Claude Code's own format; the
//! usage tool's, the usage tests' generated history (its rows those of `fen-fs usage
//! --json`); other machines', a peer's store in a temp folder (§12).

mod mcp_support;
mod support;
mod usage_support;

use fen_fs::ctl::grammar::{check_against, parse_root_line};
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use mcp_support::{Client, claude_session, json_lines, snapshot};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Mount, fen_fs};

const A: &str = "0a0a0a0a-0000-4000-8000-00000000000a";
const B: &str = "0b0b0b0b-0000-4000-8000-00000000000b";
const BIG: &str = "0c0c0c0c-0000-4000-8000-00000000000c";

struct World {
    tmp: tempfile::TempDir,
    store: PathBuf,
    claude: PathBuf,
    fen_id: String,
}

/// A fen session in /home/u/tool, and Claude Code sessions: A (30 messages, in
/// /home/u/web, the word "zephyrine" in message 7), B (in /home/u/api, "zephyrine"
/// in its first prompt, newer) and BIG (one 200 KB message).
fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let s = Store::open(&store, FsyncMode::No).unwrap();
    let req = parse_root_line(
        br#"{"cwd":"/home/u/tool","role":"user","content":"Write the quarzite parser"}"#,
    )
    .unwrap();
    let (session, _) = s
        .create_session(&req.cwd, None, &req.first, &check_against)
        .unwrap();
    let fen_id = session.session_id().to_string();
    let claude = tmp.path().join("claude");
    let texts: Vec<String> = (0..30)
        .map(|i| match i {
            0 => "Fix the flaky login test".to_string(),
            7 => "The retry hides a race: zephyrine timing in the login handler".into(),
            i => format!("message number {i}"),
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    claude_session(&claude, "/home/u/web", A, "2026-01-02T10:00:00Z", &texts);
    claude_session(
        &claude,
        "/home/u/api",
        B,
        "2026-03-01T09:00:00Z",
        &["Deploy with the zephyrine flag", "Deployed."],
    );
    let big = "lorem ipsum ".repeat(200_000 / 12);
    claude_session(
        &claude,
        "/home/u/big",
        BIG,
        "2026-02-01T09:00:00Z",
        &["Paste the log", &big],
    );
    World {
        tmp,
        store,
        claude,
        fen_id,
    }
}

impl World {
    fn args(&self) -> Vec<String> {
        vec![
            "mcp".into(),
            "--store".into(),
            self.store.display().to_string(),
            "--no-detect".into(),
            "--source".into(),
            format!("claude={}", self.claude.display()),
        ]
    }

    fn client(&self) -> (Client, Value) {
        let mut cmd = fen_fs();
        cmd.args(self.args());
        Client::start(cmd)
    }
}

fn ids(text: &str) -> Vec<String> {
    json_lines(text)
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect()
}

fn props(schema: &Value) -> Vec<String> {
    let mut p: Vec<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    p.sort();
    p
}

#[test]
fn initialize_and_every_tool_schema() {
    let w = world();
    let (mut c, init) = w.client();
    let r = &init["result"];
    assert_eq!(r["serverInfo"]["name"], "fen-fs", "{init}");
    assert_eq!(r["protocolVersion"], "2025-06-18", "{init}");
    assert!(r["capabilities"]["tools"].is_object(), "{init}");
    assert!(
        r["instructions"]
            .as_str()
            .unwrap()
            .contains("search_sessions")
    );
    let list = c.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap().clone();
    let by_name = |n: &str| -> Value {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("no tool {n}: {list}"))
            .clone()
    };
    assert_eq!(tools.len(), 5, "{list}");
    let want: [(&str, &[&str], &[&str]); 5] = [
        (
            "search_sessions",
            &["agent", "cwd", "host", "limit", "query", "since"],
            &["query"],
        ),
        ("list_sessions", &["agent", "cwd", "host", "limit"], &[]),
        ("read_session", &["id", "limit", "offset", "view"], &["id"]),
        (
            "usage",
            &[
                "agent",
                "breakdown",
                "cwd",
                "host",
                "report",
                "since",
                "timezone",
                "until",
            ],
            &[],
        ),
        ("resume_command", &["id", "in"], &["id"]),
    ];
    for (name, properties, required) in want {
        let t = by_name(name);
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert_eq!(props(schema), properties, "{name}");
        let req: Vec<&str> = schema["required"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(req, required, "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        for (p, s) in schema["properties"].as_object().unwrap() {
            let d = s["description"].as_str().unwrap_or("");
            assert!(d.len() > 15 && !d.contains('\n'), "{name}.{p}: {s}");
        }
        assert!(t["description"].as_str().unwrap().len() > 200, "{t}");
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    let view = &by_name("read_session")["inputSchema"]["properties"]["view"];
    assert!(view.to_string().contains("\"md\"") && view.to_string().contains("\"json\""));
    // The reports are listed in the schema, each said.
    let report = by_name("usage")["inputSchema"]["properties"]["report"].to_string();
    for r in [
        "daily", "weekly", "monthly", "session", "project", "model", "agent", "host",
    ] {
        assert!(report.contains(&format!("\"{r}\"")), "{r}: {report}");
    }
    assert!(c.finish().success());
}

#[test]
fn search_list_and_resume_answer_from_the_history_and_write_nothing() {
    let w = world();
    let before = snapshot(&w.claude);
    let (mut c, _) = w.client();

    // search_sessions: §8's hits, best first; the filters.
    let hits = json_lines(&c.ok("search_sessions", json!({"query": "zephyrine"})));
    let mut got: Vec<&str> = hits.iter().map(|h| h["id"].as_str().unwrap()).collect();
    got.sort();
    assert_eq!(got, [A, B], "{hits:?}");
    for h in &hits {
        for k in [
            "agent", "cwd", "dir", "path", "snippet", "role", "entry", "score",
        ] {
            assert!(!h[k].is_null(), "{k} missing: {h}");
        }
        assert!(
            h["snippet"].as_str().unwrap().contains("**zephyrine**"),
            "{h}"
        );
    }
    let web = c.ok(
        "search_sessions",
        json!({"query": "zephyrine", "cwd": "/home/u/web/"}),
    );
    assert_eq!(ids(&web), [A]);
    let since = c.ok(
        "search_sessions",
        json!({"query": "zephyrine", "since": "2026-02-15"}),
    );
    assert_eq!(ids(&since), [B]);
    let codex = c.ok(
        "search_sessions",
        json!({"query": "zephyrine", "agent": "codex"}),
    );
    assert!(ids(&codex).is_empty() && codex.contains("no session matches"));
    let one = c.ok("search_sessions", json!({"query": "zephyrine", "limit": 1}));
    assert_eq!(ids(&one).len(), 1);
    assert!(
        one.contains("note: 1 sessions shown, there may be more"),
        "{one}"
    );
    let phrase = c.ok(
        "search_sessions",
        json!({"query": "\"login handler\" -deploy"}),
    );
    assert_eq!(ids(&phrase), [A]);
    let fen = c.ok("search_sessions", json!({"query": "quarzite"}));
    assert_eq!(ids(&fen), [w.fen_id.as_str()]);

    // list_sessions: newest first, filters, limit.
    let all = json_lines(&c.ok("list_sessions", json!({})));
    let all_ids: Vec<&str> = all.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(all_ids.len(), 4, "{all:?}");
    assert_eq!(&all_ids[1..], [B, BIG, A], "newest first: {all:?}");
    assert_eq!(all_ids[0], w.fen_id, "the fen session was made now");
    let claude = json_lines(&c.ok("list_sessions", json!({"agent": "claude", "limit": 2})));
    assert_eq!(claude.len(), 2);
    let cut = c.ok("list_sessions", json!({"agent": "claude", "limit": 2}));
    assert!(cut.contains("note: 2 of 3 sessions shown"), "{cut}");
    assert_eq!(
        ids(&c.ok("list_sessions", json!({"cwd": "/home/u/api"}))),
        [B]
    );
    let tool = json_lines(&c.ok("list_sessions", json!({"cwd": "/home/u/tool"})));
    assert_eq!(tool[0]["agent"], "fen");
    assert_eq!(tool[0]["messages"], 1);
    let elsewhere = c.ok("list_sessions", json!({"host": "elsewhere"}));
    assert!(ids(&elsewhere).is_empty(), "{elsewhere}");
    let here = nix_hostname();
    assert_eq!(ids(&c.ok("list_sessions", json!({"host": here}))).len(), 4);

    // resume_command: printed, never run.
    let own = c.ok("resume_command", json!({"id": &A[..8]}));
    assert_eq!(
        own.lines().next().unwrap(),
        format!("cd /home/u/web && claude --resume {A}")
    );
    let there = c.ok("resume_command", json!({"id": A, "in": "codex"}));
    let first = there.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("fen-fs resume {A} --in codex --store ")),
        "{there}"
    );
    assert!(first.ends_with(&format!(
        "--source claude={} --no-detect",
        w.claude.display()
    )));
    let fen = c.ok("resume_command", json!({"id": w.fen_id}));
    assert!(fen.starts_with("fen-fs mount MNT --store "), "{fen}");
    assert!(fen.contains("/ctl"), "{fen}");
    assert!(c.finish().success());

    // Read-only: nothing changed in Claude Code's folder.
    assert_eq!(snapshot(&w.claude), before);
    // ... and no session was made anywhere.
    assert_eq!(fen_fs_list_count(&w), 4, "resume_command wrote a session");
}

fn fen_fs_list_count(w: &World) -> usize {
    let out = fen_fs()
        .args(["list", "--all", "--json", "--no-detect", "--store"])
        .arg(&w.store)
        .arg("--source")
        .arg(format!("claude={}", w.claude.display()))
        .output()
        .unwrap();
    serde_json::from_slice::<Vec<Value>>(&out.stdout)
        .unwrap()
        .len()
}

fn nix_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn read_session_pages_by_message_in_both_views_and_stays_under_the_cap() {
    let w = world();
    let (mut c, _) = w.client();
    // md, ten messages a page, followed to the end.
    let mut offset = 0;
    let mut seen = Vec::new();
    loop {
        let page = c.ok(
            "read_session",
            json!({"id": A, "offset": offset, "limit": 10}),
        );
        assert!(page.starts_with("# Fix the flaky login test\n"), "{page}");
        assert!(page.contains(&format!("- id: {A}")));
        seen.extend(
            page.lines()
                .filter(|l| l.starts_with("message number ") || l.starts_with("Fix the"))
                .map(String::from),
        );
        let last = page.lines().last().unwrap();
        match last.split("offset ").nth(1) {
            Some(next) => offset = next.trim_end_matches('.').parse().unwrap(),
            None => {
                assert!(last.contains("This is the end"), "{last}");
                break;
            }
        }
    }
    assert_eq!(offset, 20);
    assert_eq!(seen.len(), 29, "every message once, in order: {seen:?}");
    assert_eq!(seen[1], "message number 1");
    assert_eq!(seen[28], "message number 29");

    // json: the last page says there is no next one.
    let j: Value = serde_json::from_str(&c.ok(
        "read_session",
        json!({"id": A, "view": "json", "offset": 25, "limit": 10}),
    ))
    .unwrap();
    assert_eq!(j["total"], 30);
    assert_eq!(j["offset"], 25);
    assert_eq!(j["next_offset"], Value::Null);
    assert_eq!(j["session"]["id"], A);
    let msgs = j["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5);
    assert_eq!(msgs[0]["role"], "assistant");
    assert_eq!(msgs[0]["parts"][0]["text"], "message number 25");
    let j: Value =
        serde_json::from_str(&c.ok("read_session", json!({"id": A, "view": "json", "limit": 3})))
            .unwrap();
    assert_eq!(j["next_offset"], 3);

    // One message over the cap: cut, and the page says where the next one starts.
    // The first page stops before it...
    let first = c.ok("read_session", json!({"id": BIG}));
    assert!(first.contains("Paste the log"));
    assert!(
        first.ends_with(&format!(
            "More: read_session with id \"{BIG}\" and offset 1.\n"
        )),
        "{first}"
    );
    // ...which comes alone, cut.
    for view in ["md", "json"] {
        let page = c.ok(
            "read_session",
            json!({"id": BIG, "view": view, "offset": 1}),
        );
        assert!(page.len() <= 40_000, "{view}: {} bytes", page.len());
        assert!(page.contains("lorem ipsum lorem"), "{view}");
        assert!(page.contains("[cut: "), "{view}");
    }

    // Past the end: a tool error saying how many there are.
    let e = c.tool_error("read_session", json!({"id": A, "offset": 30}));
    assert!(e.contains("has 30"), "{e}");
    assert!(c.finish().success());
}

#[test]
fn bad_arguments_unknown_sessions_and_tools_are_errors_and_the_server_goes_on() {
    let w = world();
    let (mut c, _) = w.client();
    let cases: &[(&str, Value, &str)] = &[
        ("search_sessions", json!({}), "missing field `query`"),
        (
            "search_sessions",
            json!({"query": "x", "querry": "y"}),
            "unknown field `querry`",
        ),
        (
            "search_sessions",
            json!({"query": "\"open"}),
            "argument query",
        ),
        (
            "search_sessions",
            json!({"query": "x", "agent": "vim"}),
            "one of fen, pi",
        ),
        (
            "search_sessions",
            json!({"query": "x", "since": "yesterday"}),
            "argument since",
        ),
        (
            "search_sessions",
            json!({"query": "x", "limit": 0}),
            "1 to 100",
        ),
        (
            "search_sessions",
            json!({"query": "x", "limit": "ten"}),
            "bad arguments",
        ),
        ("list_sessions", json!({"limit": 500}), "1 to 200"),
        ("list_sessions", json!({"cwd": ""}), "argument cwd"),
        (
            "read_session",
            json!({"id": "nosuchsession"}),
            "no session matches nosuchsession",
        ),
        (
            "read_session",
            json!({"id": A, "view": "html"}),
            "unknown variant `html`",
        ),
        ("read_session", json!({"id": A, "offset": -1}), "negative"),
        ("read_session", json!({"id": "0"}), "matches 4 sessions"),
        (
            "resume_command",
            json!({"id": "nosuchsession"}),
            "no session matches",
        ),
        (
            "resume_command",
            json!({"id": A, "in": "vim"}),
            "one of fen, pi, claude, codex",
        ),
    ];
    for (tool, args, want) in cases {
        let e = c.tool_error(tool, args.clone());
        assert!(
            e.contains(want),
            "{tool} {args}: {e:?} does not say {want:?}"
        );
    }
    let unknown = c.request(
        "tools/call",
        json!({"name": "drop_tables", "arguments": {}}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the tools are search_sessions"),
        "{unknown}"
    );
    let no_method = c.request("sessions/delete", json!({}));
    assert_eq!(no_method["error"]["code"], -32601, "{no_method}");
    // Still serving.
    assert_eq!(
        ids(&c.ok(
            "search_sessions",
            json!({"query": "zephyrine", "cwd": "/home/u/api"})
        )),
        [B]
    );
    assert!(c.finish().success());
}

#[test]
fn a_session_that_grows_is_found_at_the_next_search() {
    let w = world();
    let (mut c, _) = w.client();
    assert!(ids(&c.ok("search_sessions", json!({"query": "obsidianwing"}))).is_empty());
    // Claude Code writes another session meanwhile.
    claude_session(
        &w.claude,
        "/home/u/web",
        "0d0d0d0d-0000-4000-8000-00000000000d",
        "2026-04-01T09:00:00Z",
        &["Rename obsidianwing to basalt", "Done."],
    );
    let found = c.ok("search_sessions", json!({"query": "obsidianwing"}));
    assert_eq!(
        ids(&found),
        ["0d0d0d0d-0000-4000-8000-00000000000d"],
        "{found}"
    );
    assert!(c.finish().success());
}

#[test]
fn with_a_mount_hits_are_paths_in_it_and_a_fen_session_goes_on_through_its_ctl() {
    let w = world();
    let claude_arg = format!("claude={}", w.claude.display());
    let Some(m) = Mount::on_store(
        "mcp_protocol::with_a_mount",
        &w.store,
        &["--no-detect", "--source", &claude_arg],
    ) else {
        return;
    };
    m.wait_indexed("zephyrine");
    let (mut c, _) = w.client();
    let hits = json_lines(&c.ok(
        "search_sessions",
        json!({"query": "zephyrine", "cwd": "/home/u/web"}),
    ));
    let path = Path::new(hits[0]["path"].as_str().unwrap());
    assert!(path.starts_with(&m.mp), "{path:?} is not in the mount");
    assert!(path.join("conversation.md").is_file(), "{path:?}");
    let fen = c.ok("resume_command", json!({"id": w.fen_id}));
    let ctl = Path::new(fen.lines().next().unwrap());
    assert!(ctl.starts_with(&m.mp) && ctl.ends_with("ctl"), "{fen}");
    let page = c.ok("read_session", json!({"id": A, "limit": 2}));
    assert!(page.contains("conversation.md"), "{page}");
    assert!(c.finish().success());
    drop(m);
    let _ = &w.tmp;
}

#[test]
fn without_a_store_folder_the_index_is_kept_in_memory_and_nothing_is_created() {
    let w = world();
    let state = w.tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    // fen-fs's cache folder, where `fen-fs usage` keeps ledgers without a store.
    let cache = w.tmp.path().join("cache");
    let mut cmd = fen_fs();
    cmd.env("XDG_STATE_HOME", &state)
        .env("XDG_CACHE_HOME", &cache)
        .args([
            "mcp",
            "--no-detect",
            "--source",
            &format!("claude={}", w.claude.display()),
        ]);
    let (mut c, _) = Client::start(cmd);
    let hits = c.ok("search_sessions", json!({"query": "zephyrine"}));
    assert_eq!(ids(&hits).len(), 2, "{hits}");
    assert!(
        hits.contains("note: no store: the index is kept in memory"),
        "the note says where the index is: {hits}"
    );
    assert_eq!(
        ids(&c.ok("search_sessions", json!({"query": "zephyrine"}))).len(),
        2
    );
    assert_eq!(json_lines(&c.ok("list_sessions", json!({}))).len(), 3);
    // Usage is counted in memory too (its ledgers are used where they exist, never
    // made).
    let usage = c.ok("usage", json!({"report": "agent"}));
    assert!(usage.contains("note: total of the 1 row(s)"), "{usage}");
    assert!(c.finish().success());
    assert_eq!(
        std::fs::read_dir(&state).unwrap().count(),
        0,
        "the default store was created"
    );
    assert!(!cache.exists(), "fen-fs's cache folder was created");
}

#[test]
fn a_named_store_that_does_not_exist_is_refused_before_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let out = fen_fs()
        .args(["mcp", "--no-detect", "--store"])
        .arg(tmp.path().join("typo"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no fen-fs store at"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

/// `fen-fs usage REPORT --json ARGS` over `h`, as the usage tests run it: its lines.
fn cli_usage(h: &usage_support::History, store: &Path, args: &[&str]) -> Vec<Value> {
    let out = fen_fs()
        .arg("usage")
        .args(args)
        .arg("--json")
        .arg("--store")
        .arg(store)
        .args(h.source_args())
        .env("TZ", "UTC")
        .env("FEN_FS_HOST", "laptop")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fen-fs usage {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&String::from_utf8(out.stdout).unwrap())
}

/// The `note: total of the N row(s): T tokens` line's N and T.
fn total_note(text: &str) -> (usize, u64) {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("note: total of the "))
        .unwrap_or_else(|| panic!("no total note: {text}"));
    let rows = line.split(' ').next().unwrap().parse().unwrap();
    let tokens = line
        .split(": ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (rows, tokens)
}

#[test]
fn usage_gives_the_rows_of_fen_fs_usage_and_refuses_bad_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&tmp.path().join("history"));
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let mut cmd = fen_fs();
    cmd.env("TZ", "UTC")
        .env("FEN_FS_HOST", "laptop")
        .args(["mcp", "--store"])
        .arg(&store)
        .args(h.source_args());
    let (mut c, _) = Client::start(cmd);

    // Every report: the same rows as `fen-fs usage --json` (the same ledgers), then
    // the total of them.
    for report in [
        "daily", "weekly", "monthly", "session", "project", "model", "agent", "host",
    ] {
        let text = c.ok("usage", json!({"report": report}));
        let rows = json_lines(&text);
        assert!(!rows.is_empty(), "{report}: {text}");
        assert_eq!(rows, cli_usage(&h, &store, &[report]), "{report}");
        let sum: u64 = rows
            .iter()
            .map(|r| r["total_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(total_note(&text), (rows.len(), sum), "{report}: {text}");
        assert!(
            text.contains("note: days in UTC; prices: LiteLLM"),
            "{text}"
        );
    }
    assert_eq!(
        json_lines(&c.ok("usage", json!({}))),
        cli_usage(&h, &store, &["daily"]),
        "daily by default"
    );
    // This machine's usage is under the name its sessions carry ($FEN_FS_HOST).
    let hosts = json_lines(&c.ok("usage", json!({"report": "host"})));
    assert_eq!(hosts.len(), 1);
    assert_eq!(hosts[0]["host"], "laptop");

    // The filters are the command's options.
    let cases: &[(Value, &[&str])] = &[
        (
            json!({"since": "2026-03-04", "until": "20260306"}),
            &["daily", "--since", "2026-03-04", "--until", "20260306"],
        ),
        (
            json!({"report": "agent", "agent": "codex"}),
            &["agent", "--agent", "codex"],
        ),
        (
            json!({"report": "project", "cwd": "/home/u/beta"}),
            &["project", "--cwd", "/home/u/beta"],
        ),
        (
            json!({"report": "monthly", "breakdown": true, "timezone": "America/New_York"}),
            &["monthly", "--breakdown", "--timezone", "America/New_York"],
        ),
        (
            json!({"report": "model", "host": "laptop", "since": "7d"}),
            &["model", "--host", "laptop", "--since", "7d"],
        ),
    ];
    for (args, cli) in cases {
        let text = c.ok("usage", args.clone());
        assert_eq!(json_lines(&text), cli_usage(&h, &store, cli), "{args}");
    }
    let days = json_lines(&c.ok(
        "usage",
        json!({"since": "2026-03-04", "until": "2026-03-06"}),
    ));
    let periods: Vec<&str> = days.iter().map(|r| r["period"].as_str().unwrap()).collect();
    assert_eq!(periods, ["2026-03-04", "2026-03-05", "2026-03-06"]);
    let none = c.ok("usage", json!({"host": "elsewhere"}));
    assert!(json_lines(&none).is_empty());
    assert!(
        none.contains("note: no usage recorded with these filters"),
        "{none}"
    );

    // A bad argument is a tool error naming it; the server goes on.
    let bad: &[(Value, &str)] = &[
        (json!({"report": "yearly"}), "unknown variant `yearly`"),
        (
            json!({"since": "yesterday"}),
            "argument since: \"yesterday\" is not a date",
        ),
        (json!({"until": "2026-13-01"}), "argument until"),
        (
            json!({"since": "2026-03-06", "until": "2026-03-04"}),
            "argument until: 2026-03-04 is before since",
        ),
        (json!({"agent": "vim"}), "argument agent"),
        (json!({"cwd": " "}), "argument cwd"),
        (json!({"host": ""}), "argument host"),
        (json!({"timezone": "Mars/Olympus"}), "argument timezone"),
        (json!({"breakdown": "yes"}), "bad arguments for usage"),
        (json!({"from": "2026-03-01"}), "unknown field `from`"),
    ];
    for (args, want) in bad {
        let e = c.tool_error("usage", args.clone());
        assert!(e.contains(want), "{args}: {e:?} does not say {want:?}");
    }
    assert_eq!(
        json_lines(&c.ok("usage", json!({"report": "agent"}))),
        cli_usage(&h, &store, &["agent"])
    );
    assert!(c.finish().success());
}

#[test]
fn a_long_usage_answer_is_cut_under_the_cap_saying_how_to_narrow_it() {
    // 150 Claude Code sessions, one response each, on 150 days.
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let start = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
    for i in 0..150u32 {
        let day = start + chrono::Duration::days(i as i64);
        claude_session(
            &claude,
            &format!("/home/u/p{i}"),
            &format!("{i:08x}-0000-4000-8000-000000000000"),
            &format!("{day}T12:00:00Z"),
            &["go", "done"],
        );
    }
    let mut cmd = fen_fs();
    cmd.env("TZ", "UTC").args([
        "mcp",
        "--no-detect",
        "--source",
        &format!("claude={}", claude.display()),
    ]);
    let (mut c, _) = Client::start(cmd);
    let shown = |text: &str| -> (usize, usize) {
        let note = text
            .lines()
            .find(|l| l.contains("lines shown"))
            .unwrap_or_else(|| panic!("no cut note: {text}"));
        let mut w = note.trim_start_matches("note: ").split(' ');
        (
            w.next().unwrap().parse().unwrap(),
            w.nth(1).unwrap().parse().unwrap(),
        )
    };
    // Sessions, most expensive first: the first ones kept.
    let text = c.ok("usage", json!({"report": "session"}));
    assert!(text.len() <= 40_000, "{} bytes", text.len());
    let (n, of) = shown(&text);
    assert_eq!((json_lines(&text).len(), of), (n, 150));
    assert!(n > 20 && n < 150, "{n}");
    assert!(
        text.contains("the answer is cut at 40000 bytes; narrow with since, until"),
        "{text}"
    );
    // The total still counts every row.
    assert_eq!(total_note(&text).0, 150);
    // Days: the latest kept.
    let text = c.ok("usage", json!({}));
    assert!(text.len() <= 40_000, "{} bytes", text.len());
    let days = json_lines(&text);
    let (n, of) = shown(&text);
    assert_eq!((days.len(), of), (n, 150));
    assert!(text.contains("lines shown (the last ones)"), "{text}");
    assert_eq!(days.last().unwrap()["period"], "2026-05-30");
    assert_ne!(days[0]["period"], "2026-01-01");
    // Narrowed, it fits.
    let text = c.ok("usage", json!({"since": "2026-05-01"}));
    assert_eq!(json_lines(&text).len(), 30);
    assert!(!text.contains("lines shown"), "{text}");
    assert!(c.finish().success());
}

const PEER_ID: &str = "0e0e0e0e-0000-7000-8000-00000000000e";

/// A fen session file as another machine's fen-fs wrote it, in that machine's store
/// at `peer`; its folder name.
fn peer_session(peer: &Path, cwd: &str, id: &str, words: &str) -> String {
    let ns = fen_fs::store::naming::slug(cwd);
    let dir = format!("2026-01-05T00-00-00-000Z_{id}");
    std::fs::create_dir_all(peer.join(&ns)).unwrap();
    let header = json!({"type":"session","version":2,"id":id,"timestamp":"2026-01-05T00:00:00.000Z","cwd":cwd});
    let entry = json!({"type":"message","id":"0190a000-0000-7000-8000-000000000001","parent-id":null,
        "timestamp":"2026-01-05T03:04:05.000Z","message":{"role":"user","content":words}});
    std::fs::write(
        peer.join(&ns).join(format!("{dir}.jsonl")),
        format!("{header}\n{entry}\n"),
    )
    .unwrap();
    dir
}

#[test]
fn another_machines_sessions_are_listed_searched_read_resumed_and_counted() {
    let w = world();
    let peers = w.tmp.path().join("peers");
    let dir = peer_session(
        &peers.join("desktop"),
        "/Users/bob/proj",
        PEER_ID,
        "Plan the heliotrope migration",
    );
    let peer_dir = format!("{dir}@desktop");
    let before = snapshot(&peers);
    let peer_args = [
        "--peers".to_string(),
        peers.display().to_string(),
        "--map".into(),
        "/Users/bob=/home/u".into(),
    ];
    let mut cmd = fen_fs();
    cmd.env("FEN_FS_HOST", "laptop")
        .args(w.args())
        .args(&peer_args);
    let (mut c, _) = Client::start(cmd);

    // list_sessions: the peer's session beside this machine's, under its host, in its
    // cwd as mapped here.
    let all = json_lines(&c.ok("list_sessions", json!({})));
    assert_eq!(all.len(), 5, "{all:?}");
    let theirs = json_lines(&c.ok("list_sessions", json!({"host": "desktop"})));
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    let s = &theirs[0];
    assert_eq!(
        (&s["id"], &s["dir"], &s["host"]),
        (&json!(PEER_ID), &json!(peer_dir), &json!("desktop"))
    );
    assert_eq!(
        (&s["cwd"], &s["cwd_on_host"]),
        (&json!("/home/u/proj"), &json!("/Users/bob/proj"))
    );
    assert_eq!(
        ids(&c.ok("list_sessions", json!({"cwd": "/home/u/proj"}))),
        [PEER_ID]
    );
    let ours = json_lines(&c.ok("list_sessions", json!({"host": "laptop"})));
    assert_eq!(ours.len(), 4);
    assert!(ours.iter().all(|l| l["host"] == "laptop"));

    // search_sessions: its hits say the host; the host filter.
    let hits = json_lines(&c.ok("search_sessions", json!({"query": "heliotrope"})));
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(
        (&hits[0]["id"], &hits[0]["host"], &hits[0]["cwd"]),
        (&json!(PEER_ID), &json!("desktop"), &json!("/home/u/proj"))
    );
    let hits = json_lines(&c.ok(
        "search_sessions",
        json!({"query": "heliotrope", "host": "laptop"}),
    ));
    assert!(hits.is_empty(), "{hits:?}");
    let hits = json_lines(&c.ok("search_sessions", json!({"query": "zephyrine"})));
    assert!(hits.iter().all(|h| h["host"] == "laptop"), "{hits:?}");

    // read_session: by its id or its folder name.
    for id in [PEER_ID, &peer_dir] {
        let page = c.ok("read_session", json!({"id": id}));
        assert!(page.contains("Plan the heliotrope migration"), "{page}");
    }

    // usage: this machine's under its name; the peer's store records no tokens (a
    // fen store; its kept copies of other agents' sessions will).
    let hosts = json_lines(&c.ok("usage", json!({"report": "host"})));
    let names: Vec<&str> = hosts.iter().map(|r| r["host"].as_str().unwrap()).collect();
    assert_eq!(names, ["laptop"]);
    assert!(
        c.ok("usage", json!({"host": "desktop"}))
            .contains("no usage recorded")
    );

    // resume_command: it goes on here as a new session, by the command that also
    // knows the peers; nothing is run.
    let resume = c.ok("resume_command", json!({"id": PEER_ID}));
    let first = resume.lines().next().unwrap().to_string();
    assert_eq!(
        first,
        format!(
            "fen-fs resume {peer_dir} --store {} --source claude={} --no-detect {}",
            w.store.display(),
            w.claude.display(),
            peer_args.join(" ")
        )
    );
    assert!(resume.contains("recorded on desktop"), "{resume}");
    assert!(resume.contains("in /home/u/proj"), "{resume}");
    let codex = c.ok("resume_command", json!({"id": PEER_ID, "in": "codex"}));
    assert!(
        codex.starts_with(&format!("fen-fs resume {peer_dir} --in codex --store ")),
        "{codex}"
    );
    assert!(c.finish().success());
    assert_eq!(
        snapshot(&peers),
        before,
        "something was written under peers/"
    );
    assert_eq!(fen_fs_list_count(&w), 4, "resume_command wrote a session");

    // The printed command works as printed: a new fen session here, in the mapped cwd.
    let words: Vec<&str> = first.split(' ').collect();
    let out = fen_fs()
        .env("FEN_FS_HOST", "laptop")
        .args(&words[1..])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{first}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mine = fen_fs()
        .env("FEN_FS_HOST", "laptop")
        .args([
            "list",
            "--json",
            "--cwd",
            "/home/u/proj",
            "--no-detect",
            "--store",
        ])
        .arg(&w.store)
        .output()
        .unwrap();
    let mine: Vec<Value> = serde_json::from_slice(&mine.stdout).unwrap();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(
        (&mine[0]["agent"], &mine[0]["host"]),
        (&json!("fen"), &json!("laptop"))
    );
    assert_eq!(snapshot(&peers), before);
}

/// A session its agent deleted is shown from fen's kept copy; its agent resumes only
/// what is in its own folder, so `resume_command` restores the file first (as the
/// web page's command does, and `fen-fs resume` says).
#[test]
fn resume_command_restores_a_session_its_agent_deleted_first() {
    let w = world();
    let keep = fen_fs()
        .args(["keep", "--no-detect", "--store"])
        .arg(&w.store)
        .arg("--source")
        .arg(format!("claude={}", w.claude.display()))
        .output()
        .unwrap();
    assert!(
        keep.status.success(),
        "{}",
        String::from_utf8_lossy(&keep.stderr)
    );
    std::fs::remove_file(
        w.claude
            .join("projects/-home-u-api")
            .join(format!("{B}.jsonl")),
    )
    .unwrap();
    let (mut c, _) = w.client();
    let answer = c.ok("resume_command", json!({"id": B}));
    assert_eq!(
        answer.lines().next().unwrap(),
        format!(
            "fen-fs restore {B} --store {} --source claude={} --no-detect && cd /home/u/api && claude --resume {B}",
            w.store.display(),
            w.claude.display()
        ),
        "{answer}"
    );
    assert!(answer.contains("fen-fs kept a copy"), "{answer}");
    assert!(c.finish().success());
}
