//! The Gemini CLI reader against the public fixtures (read in place), hand-made files
//! pinning one rule each, and Gemini's own loader: the installed 0.61.0 bundle loads
//! every file as `--resume` does (tests/gemini/oracle.mjs) and must agree with
//! `conversation.json` and the listing facts.

mod support;

use fen_fs::sources::foreign::*;
use fen_fs::sources::gemini::{GeminiReader, project_cwd};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/agent-fixtures/gemini/tmp/fixture-proj/chats")
}

/// Files Gemini CLI 0.61.0 wrote in tests/agent_gemini.rs's session (a prompt, a
/// tool call and its result, then `--resume latest`), paths under /home/user: resumed
/// in the minute the file was created (`c277f996`: a second metadata line and
/// `$set.messages` in the same file), and in a later minute (`a1f5dba8`: a new file
/// holding only context, then `$set.messages` in the old one keeping the call's
/// result beside the `<id>_response` turn, which Gemini then loads twice).
fn recorded_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gemini/recorded");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

fn fixture_files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

/// Summary and conversation (each message parsed) of a whole file named `name`.
fn read(name: &str, bytes: &[u8]) -> (ForeignSummary, Vec<Value>) {
    let mut r = GeminiReader::new(name);
    let tail = feed_all(&mut r, bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| {
            let text = render_message(m, bytes);
            assert!(!text.contains(&b'\n'), "one message per line");
            serde_json::from_slice(&text).expect("message is JSON")
        })
        .collect();
    (r.summary(tail), conv)
}

fn read_file(path: &Path) -> (ForeignSummary, Vec<Value>) {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    read(&name, &std::fs::read(path).unwrap())
}

/// Feeds `bytes` in uneven chunks, as a follower of appends would, and checks the
/// result equals one whole read.
fn check_incremental(name: &str, bytes: &[u8]) {
    let mut whole = GeminiReader::new(name);
    let tail = feed_all(&mut whole, bytes);
    let want = (whole.summary(tail), whole.conversation(tail));
    for step in [1usize, 7, 64, 1000] {
        let mut r = GeminiReader::new(name);
        let mut consumed = 0usize;
        let mut avail = 0usize;
        while avail < bytes.len() {
            avail = (avail + step).min(bytes.len());
            consumed += r.feed(consumed as u64, &bytes[consumed..avail]) as usize;
            let _ = r.summary(&bytes[consumed..avail]);
        }
        let tail = &bytes[consumed..];
        assert_eq!(
            (r.summary(tail), r.conversation(tail)),
            want,
            "{name} step {step}"
        );
    }
}

const META: &str = r#"{"sessionId":"0d0e0f10-1111-4222-8333-444455556666","projectHash":"ab","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"main"}"#;

/// A metadata line of a session numbered `n` (each crafted file is its own session,
/// as Gemini's listing keeps one file per id).
fn meta(n: u32) -> String {
    META.replace(
        "0d0e0f10-1111-4222-8333-4444",
        &format!("0d0e0f10-1111-4222-8333-{n:04}"),
    )
}

fn user(id: &str, text: &str) -> String {
    json!({"id": id, "timestamp": "2026-05-01T10:00:01.000Z", "type": "user", "content": [{"text": text}]})
        .to_string()
}

fn gemini(id: &str, text: &str) -> String {
    json!({"id": id, "timestamp": "2026-05-01T10:00:02.000Z", "type": "gemini", "content": text, "thoughts": [], "model": "gemini-2.5-flash"})
        .to_string()
}

fn lines(ls: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    for l in ls {
        out.push_str(l);
        out.push('\n');
    }
    out.into_bytes()
}

/// Hand-made files, each pinning one rule (name, bytes).
fn crafted() -> Vec<(&'static str, Vec<u8>)> {
    let u1 = user("u1", "first question");
    let g1 = gemini("g1", "first answer");
    let u2 = user("u2", "second question");
    let g2 = gemini("g2", "second answer");
    let u3 = user("u3", "third question");
    let tool_call = json!({"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","thoughts":[{"subject":"Plan","description":"list it","timestamp":"2026-05-01T10:00:02.000Z"}],"toolCalls":[
        {"id":"ls_1","name":"list_directory","args":{"dir_path":"."},"result":[{"functionResponse":{"id":"ls_1","name":"list_directory","response":{"output":"a.txt"}}}],"status":"success"},
        {"id":"rd_2","name":"read_file","args":{"path":"a.txt"},"result":"plain string result","status":"success"},
        {"id":"x_3","name":"other","args":{},"result":{"functionResponse":{"name":"other","response":{}}},"status":"success"},
        {"id":"y_4","name":"no_result","args":{},"status":"error"}
    ]}).to_string();
    vec![
        ("session-2026-05-01T10-00-plain0001.jsonl", lines(&[&meta(1), &u1, &g1, &u2, &g2])),
        (
            "session-2026-05-01T10-00-rewind001.jsonl",
            lines(&[&meta(2), &u1, &g1, &u2, &g2, r#"{"$rewindTo":"u2"}"#, &u3]),
        ),
        (
            "session-2026-05-01T10-00-rewind002.jsonl",
            lines(&[&meta(3), &u1, &g1, r#"{"$rewindTo":"nope"}"#, &u3]),
        ),
        (
            // A message re-appended after a change keeps its first position.
            "session-2026-05-01T10-00-repeat001.jsonl",
            lines(&[
                &meta(4),
                &u1,
                &gemini("g1", ""),
                r#"{"$set":{"lastUpdated":"2026-05-01T10:05:00.000Z"}}"#,
                &u2,
                &tool_call,
            ]),
        ),
        (
            // A checkpoint replaces every message; a summary titles the session.
            "session-2026-05-01T10-00-checkpt01.jsonl",
            lines(&[
                &meta(5),
                &u1,
                &g1,
                &format!(r#"{{"$set":{{"messages":[{},{}],"lastUpdated":"2026-05-01T11:00:00.000Z"}}}}"#, user("x1", "kept"), gemini("x2", "kept too")),
                &u3,
                r#"{"$set":{"summary":"A \u0007summary"}}"#,
            ]),
        ),
        (
            // Injected context, slash commands and notices are never resumed.
            "session-2026-05-01T10-00-dropped01.jsonl",
            lines(&[
                &meta(6),
                &user("c1", "<session_context>\nsetup\n</session_context>"),
                &user("c2", "  /help"),
                &user("c3", "?"),
                &user("c4", "<hook_context>x</hook_context>"),
                &user("c5", &format!("{}\n\t/after a long blank start", " ".repeat(200))),
                r#"{"id":"c6","type":"user","content":[{"text":"  "},{"text":"\u002fescaped slash"}]}"#,
                &user("c7", &format!("{} and a long text after it", "x".repeat(5000))),
                r#"{"id":"i1","type":"info","content":"note"}"#,
                r#"{"id":"e1","type":"error","content":"boom"}"#,
                &user("u1", "real\n  question\twith  space é"),
                &g1,
            ]),
        ),
        (
            "session-2026-05-01T10-00-onlycmds1.jsonl",
            lines(&[&meta(7), &user("c2", "/help"), r#"{"id":"i1","type":"info","content":"note"}"#]),
        ),
        (
            // Parts already in the content (0.39+ writes functionCall parts there).
            "session-2026-05-01T10-00-parts0001.jsonl",
            lines(&[
                &meta(8),
                &u1,
                r#"{"id":"g1","type":"gemini","content":[{"text":"thinking","thought":true},{"functionCall":{"id":"c1","name":"ls","args":{}}}],"thoughts":[{"subject":"ignored","description":"because parts carry them"}],"toolCalls":[{"id":"c1","name":"ls","args":{},"result":"done"}]}"#,
                r#"{"id":"g2","type":"gemini","content":["a string part",{"text":"b"}],"thoughts":[{"description":"no subject"},{}]}"#,
            ]),
        ),
        (
            // Torn last line (a writer caught mid-append): skipped.
            "session-2026-05-01T10-00-torntail1.jsonl",
            {
                let mut b = lines(&[&meta(9), &u1, &g1]);
                b.extend_from_slice(br#"{"id":"u2","type":"us"#);
                b
            },
        ),
        (
            // A complete last line without its newline counts.
            "session-2026-05-01T10-00-nonewline.jsonl",
            {
                let mut b = lines(&[&meta(10), &u1]);
                b.extend_from_slice(g1.as_bytes());
                b
            },
        ),
        ("session-2026-05-01T10-00-empty0001.jsonl", Vec::new()),
        ("session-2026-05-01T10-00-empty0002.json", Vec::new()),
        (
            // A legacy file caught mid-rewrite.
            "session-2026-05-01T10-00-halfwrit1.json",
            br#"{
  "sessionId": "half-1",
  "projectHash": "ab",
  "messages": [
    {"id": "u1", "type": "user", "content": "hel"#
                .to_vec(),
        ),
        (
            // One line without projectHash: the legacy loader takes the whole file.
            "session-2026-05-01T10-00-oneline01.jsonl",
            format!(
                r#"{{"sessionId":"one-line-1","startTime":"2026-05-01T09:00:00Z","messages":[{},{}]}}"#,
                user("u1", "one line"),
                gemini("g1", "ok")
            )
            .into_bytes(),
        ),
        (
            // Garbage lines are skipped; no metadata at all: corrupted.
            "session-2026-05-01T10-00-nometa001.jsonl",
            lines(&[&u1, "not json", &g1]),
        ),
        (
            "session-2026-05-01T10-00-subagent1.jsonl",
            lines(&[
                r#"{"sessionId":"sub-1","projectHash":"ab","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"subagent"}"#,
                &u1,
                &g1,
            ]),
        ),
        (
            // A null part: Gemini's conversion throws on resume.
            "session-2026-05-01T10-00-nullpart1.jsonl",
            lines(&[&meta(11), &u1, r#"{"id":"g1","type":"gemini","content":[null,{"text":"x"}]}"#]),
        ),
        (
            // Not UTF-8: read as replacement characters, as Node's decoder does.
            "session-2026-05-01T10-00-latin1001.jsonl",
            {
                let mut b = lines(&[&meta(12)]);
                b.extend_from_slice(b"{\"id\":\"u1\",\"type\":\"user\",\"content\":\"caf\xe9\"}\n");
                b.extend(lines(&[&g1]));
                b
            },
        ),
        (
            // Every resume appends a metadata line with a new startTime.
            "session-2026-05-01T10-00-resumed01.jsonl",
            lines(&[
                &meta(13),
                &u1,
                &g1,
                &meta(13).replace("2026-05-01T10:00:00.000Z", "2026-05-02T08:00:00.000Z"),
                &u2,
                r#"{"$set":{"lastUpdated":"2026-05-02T08:00:05.000Z"}}"#,
            ]),
        ),
    ]
}

fn write_crafted(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    crafted()
        .into_iter()
        .map(|(name, bytes)| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        })
        .collect()
}

#[test]
fn jsonl_fixture() {
    let path = fixtures().join("session-2026-04-29T21-39-gemini_s.jsonl");
    let (s, c) = read_file(&path);
    assert_eq!(s.id, "gemini_stage0_jsonl");
    assert!(s.listed && s.resumable, "{s:?}");
    assert_eq!(s.created_at.as_deref(), Some("2026-04-29T21:39:22.319Z"));
    assert_eq!(s.updated_at.as_deref(), Some("2026-04-29T21:39:33.156Z"));
    assert_eq!(s.preview.as_deref(), Some("Say hello and list files."));
    assert_eq!(s.cwd, None, "the file names no cwd; its folder does");
    assert_eq!(
        Value::Array(c),
        json!([
            {"id":"g-user-1","role":"user","parts":[{"text":"Say hello and list files."}]},
            {"id":"g-assistant-1","role":"model","parts":[{"functionCall":{"id":"run_shell_command_stage0","name":"run_shell_command","args":{"command":"ls -F","description":"List files in the current directory."}}}]},
            {"id":"g-assistant-1_response","role":"user","parts":[{"functionResponse":{"id":"run_shell_command_stage0","name":"run_shell_command","response":{"output":"Output: AgentSessions/\nREADME.md\nProcess Group PGID: 12345"}}}]},
            {"id":"g-assistant-2","role":"model","parts":[{"text":"Hello! I listed the files."}]}
        ])
    );
    assert_eq!(s.messages, 4);
    assert_eq!(s.roles.get("model"), Some(&2));
    // The stored bytes are kept: the parts are byte ranges of the file.
    let bytes = std::fs::read(&path).unwrap();
    let mut r = GeminiReader::new("x.jsonl");
    let tail = feed_all(&mut r, &bytes);
    let first = render_message(&r.conversation(tail)[0], &bytes);
    assert_eq!(
        String::from_utf8(first).unwrap(),
        r#"{"id":"g-user-1","role":"user","parts":[{"text":"Say hello and list files."}]}"#
    );
    check_incremental("x.jsonl", &bytes);
}

#[test]
fn legacy_json_fixtures() {
    let (s, c) = read_file(&fixtures().join("session-2025-12-16T23-47-b4f17607.json"));
    assert_eq!(s.id, "session-2025-12-16T23-47-b4f17607");
    assert!(s.listed && s.resumable);
    assert_eq!(s.created_at.as_deref(), Some("2025-12-16T23:47:00.000Z"));
    assert_eq!(s.updated_at.as_deref(), Some("2025-12-16T23:48:00.000Z"));
    assert_eq!((s.entries, s.malformed_lines), (1, 0));
    // info and `type: model` messages are dropped; thoughts become thought parts.
    let roles: Vec<&str> = c.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "model", "user", "model", "user", "user"]);
    assert_eq!(
        c[1]["parts"][0],
        json!({"text":"Placeholder thoughts for schema coverage.","thought":true})
    );
    assert_eq!(c[2]["id"], "m2_response");

    let (s, c) = read_file(&fixtures().join("session-2024-01-01T10-00-thinking_only.json"));
    assert!(s.resumable);
    assert_eq!(
        c[1]["parts"],
        json!([
            {"text":"**Understanding request** The user wants an explanation of the system.","thought":true},
            {"text":"**Planning response** I should describe the config loading flow.","thought":true},
            {"text":"Here is how it works: the system reads the config file on startup."}
        ])
    );

    // No id on the tool call: the key is left out, as JSON.stringify does.
    let (_, c) = read_file(&fixtures().join("session-2024-01-01T10-00-tool_calls.json"));
    assert_eq!(
        c[1]["parts"][2],
        json!({"functionCall":{"name":"read_file","args":{"file_path":"main.go"}}})
    );
    assert_eq!(c.len(), 2, "no result, no response turn");
}

#[test]
fn files_gemini_refuses() {
    let (s, c) = read_file(&fixtures().join("session-2025-12-17T00-00-drift.json"));
    assert!(!s.resumable && !s.listed && c.is_empty());
    assert!(
        s.not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("no sessionId"),
        "{s:?}"
    );
    let (s, c) = read_file(&fixtures().join("session-2024-01-01T10-00-system_messages.json"));
    assert!(!s.resumable && !s.listed && c.is_empty());
    assert_eq!(s.id, "sess-uuid-3", "still named");
    assert!(
        s.not_resumable_reason
            .unwrap()
            .contains("no message Gemini can resume")
    );
}

fn crafted_one(name: &str) -> (ForeignSummary, Vec<Value>) {
    let (_, bytes) = crafted().into_iter().find(|(n, _)| *n == name).unwrap();
    read(name, &bytes)
}

fn ids(c: &[Value]) -> Vec<&str> {
    c.iter().map(|m| m["id"].as_str().unwrap()).collect()
}

#[test]
fn replay_rules() {
    let (_, c) = crafted_one("session-2026-05-01T10-00-rewind001.jsonl");
    assert_eq!(ids(&c), ["u1", "g1", "u3"]);
    let (_, c) = crafted_one("session-2026-05-01T10-00-rewind002.jsonl");
    assert_eq!(ids(&c), ["u3"], "an unknown rewind target drops everything");
    let (s, c) = crafted_one("session-2026-05-01T10-00-repeat001.jsonl");
    assert_eq!(ids(&c), ["u1", "g1", "g1_response", "u2"]);
    assert_eq!(s.updated_at.as_deref(), Some("2026-05-01T10:05:00.000Z"));
    assert_eq!(
        c[1]["parts"][0],
        json!({"text":"**Plan** list it","thought":true})
    );
    assert_eq!(
        c[2]["parts"],
        json!([
            {"functionResponse":{"id":"ls_1","name":"list_directory","response":{"output":"a.txt"}}},
            {"functionResponse":{"id":"rd_2","name":"read_file","response":{"output":"plain string result"}}},
            {"functionResponse":{"name":"other","response":{}}}
        ])
    );
    let (s, c) = crafted_one("session-2026-05-01T10-00-checkpt01.jsonl");
    assert_eq!(ids(&c), ["x1", "x2", "u3"]);
    assert_eq!(s.title.as_deref(), Some("A summary"));
    assert_eq!(
        s.preview.as_deref(),
        Some("first question"),
        "the first prompt ever seen"
    );
    let (s, c) = crafted_one("session-2026-05-01T10-00-dropped01.jsonl");
    assert_eq!(ids(&c), ["c7", "u1", "g1"]);
    // A long first prompt is kept to 1,000 characters (Gemini keeps it whole).
    let preview = s.preview.unwrap();
    assert_eq!(preview.chars().count(), 1000);
    assert!(preview.starts_with("xxxx"));
    let (s, c) = crafted_one("session-2026-05-01T10-00-resumed01.jsonl");
    assert_eq!(ids(&c), ["u1", "g1", "u2"]);
    assert_eq!(
        s.created_at.as_deref(),
        Some("2026-05-01T10:00:00.000Z"),
        "the first startTime: a resume does not rename the session"
    );
    assert_eq!(s.updated_at.as_deref(), Some("2026-05-02T08:00:05.000Z"));
    let (s, c) = crafted_one("session-2026-05-01T10-00-oneline01.jsonl");
    assert_eq!((s.id.as_str(), s.resumable), ("one-line-1", true));
    assert_eq!(ids(&c), ["u1", "g1"]);
    let (s, c) = crafted_one("session-2026-05-01T10-00-nonewline.jsonl");
    assert_eq!(ids(&c), ["u1", "g1"]);
    assert_eq!(s.malformed_lines, 0);
    let (s, c) = crafted_one("session-2026-05-01T10-00-torntail1.jsonl");
    assert_eq!(ids(&c), ["u1", "g1"]);
    assert_eq!(s.malformed_lines, 1);
}

#[test]
fn bad_files_appear_not_resumable_with_a_reason() {
    for name in [
        "session-2026-05-01T10-00-empty0001.jsonl",
        "session-2026-05-01T10-00-empty0002.json",
        "session-2026-05-01T10-00-halfwrit1.json",
        "session-2026-05-01T10-00-nometa001.jsonl",
        "session-2026-05-01T10-00-subagent1.jsonl",
        "session-2026-05-01T10-00-nullpart1.jsonl",
        "session-2026-05-01T10-00-onlycmds1.jsonl",
    ] {
        let (s, c) = crafted_one(name);
        assert!(!s.resumable, "{name}");
        assert!(c.is_empty(), "{name}");
        assert!(s.not_resumable_reason.is_some(), "{name}");
    }
    let (s, _) = crafted_one("session-2026-05-01T10-00-nullpart1.jsonl");
    assert!(s.listed, "listing does not convert; only the resume throws");
}

#[test]
fn crafted_files_incremental_equals_whole() {
    for (name, bytes) in crafted() {
        check_incremental(name, &bytes);
    }
}

#[test]
fn cwd_comes_from_the_project_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(".gemini");
    let chat = |slug: &str| root.join("tmp").join(slug).join("chats/session-x.jsonl");
    std::fs::create_dir_all(root.join("tmp/proj/chats")).unwrap();
    std::fs::write(root.join("tmp/proj/.project_root"), "/home/u/proj\n").unwrap();
    assert_eq!(
        project_cwd(&root, &chat("proj")).as_deref(),
        Some("/home/u/proj")
    );
    // No marker: the registry's reverse lookup.
    std::fs::write(
        root.join("projects.json"),
        r#"{"projects":{"/home/u/other":"other","/home/u/old one":"x"}}"#,
    )
    .unwrap();
    assert_eq!(
        project_cwd(&root, &chat("other")).as_deref(),
        Some("/home/u/other")
    );
    // Before 0.29: the folder is the SHA-256 of the path, matched against known paths.
    let hashed = "b6e1b1fdbfc3a0a4cc7d62bdaf63fb13c9f3b2da4bba8f5de36d3c4bca2fe12c";
    let known = fen_fs::sources::digest::sha256_hex(b"/home/u/old one");
    assert_eq!(
        project_cwd(&root, &chat(&known)).as_deref(),
        Some("/home/u/old one")
    );
    assert_eq!(project_cwd(&root, &chat(hashed)), None, "unknown digest");
    std::fs::write(
        root.join("trustedFolders.json"),
        r#"{"/srv/trusted":"TRUST_FOLDER"}"#,
    )
    .unwrap();
    let trusted = fen_fs::sources::digest::sha256_hex(b"/srv/trusted");
    assert_eq!(
        project_cwd(&root, &chat(&trusted)).as_deref(),
        Some("/srv/trusted")
    );
    assert_eq!(project_cwd(&root, &chat("nothing")), None);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(META.as_bytes().to_vec()),
            Just(user("u1", "q").into_bytes()),
            Just(gemini("g1", "r").into_bytes()),
            Just(br#"{"$rewindTo":"u1"}"#.to_vec()),
            Just(br#"{"$set":{"messages":[{"id":"z","type":"user","content":"z"}]}}"#.to_vec()),
            Just(br#"{"id":"g2","type":"gemini","content":[null],"toolCalls":[null,{"result":[1,"x"]}]}"#.to_vec()),
            Just(b"null".to_vec()),
            Just(b"\n".to_vec()),
            Just(vec![0xff, 0x00, b'{']),
            proptest::collection::vec(any::<u8>(), 0..40),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn never_panics_and_incremental_matches(parts in proptest::collection::vec((piece(), any::<bool>()), 0..12), legacy in any::<bool>()) {
            let mut bytes = Vec::new();
            for (p, nl) in parts {
                bytes.extend_from_slice(&p);
                if nl { bytes.push(b'\n'); }
            }
            let name = if legacy { "session-x.json" } else { "session-x.jsonl" };
            let mut r = GeminiReader::new(name);
            let tail = feed_all(&mut r, &bytes);
            let _ = r.summary(tail);
            for m in r.conversation(tail) {
                let v: Value = serde_json::from_slice(&render_message(&m, &bytes)).expect("valid JSON");
                prop_assert!(v.is_object());
            }
            check_incremental(name, &bytes);
        }
    }
}

// ---------------------------------------------------------------------------
// Gemini's own loader as the oracle

/// Runs tests/gemini/oracle.mjs over `files` with the installed Gemini CLI.
fn oracle(test: &str, files: &[PathBuf]) -> Option<Value> {
    let bin = support::agent_bin(test, "gemini")?;
    let bundle = std::fs::canonicalize(&bin).unwrap();
    let bundle = bundle.parent().unwrap();
    let out = std::process::Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gemini/oracle.mjs"))
        .arg(bundle)
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn every_file_reads_as_gemini_loads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = fixture_files();
    files.extend(write_crafted(&tmp.path().join("chats")));
    files.extend(recorded_files());
    let Some(o) = oracle("every_file_reads_as_gemini_loads_it", &files) else {
        return;
    };
    let mut compared = 0;
    for file in &files {
        let key = file.to_str().unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        let want = &o["files"][key];
        let (s, c) = read_file(file);
        let listing = o["listings"][file.parent().unwrap().to_str().unwrap()]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["fileName"] == name);
        assert_eq!(s.listed, listing.is_some(), "{name}: listed {s:?}");
        let loads = want["record"].is_object() && want["record"].get("error").is_none();
        if !loads || listing.is_none() {
            assert!(!s.resumable && c.is_empty(), "{name}: {s:?}");
            continue;
        }
        let l = listing.unwrap();
        assert_eq!(s.id, l["id"].as_str().unwrap(), "{name}");
        assert_eq!(s.updated_at.as_deref(), l["lastUpdated"].as_str(), "{name}");
        // fen-fs keeps 1,000 characters of it.
        let first = l["firstUserMessage"]
            .as_str()
            .filter(|f| *f != "Empty conversation")
            .map(|f| f.chars().take(1000).collect::<String>().trim().to_string());
        assert_eq!(s.preview, first, "{name}");
        if s.resumable {
            assert_eq!(Value::Array(c), want["history"], "{name}");
            compared += 1;
        } else {
            // Listed, but the conversion throws on resume.
            assert!(want["history"].is_null(), "{name}: {}", want["history"]);
        }
    }
    assert!(compared >= 15, "{compared}");
}

/// What Gemini 0.61.0 itself wrote on a resume in a later minute than the session's
/// file was created in (the usual case): a new file holding only context, not listed,
/// and in the session's file a `$set.messages` keeping the tool call's result beside
/// the `<id>_response` turn, so the result is resumed twice (as Gemini's loader
/// does; `every_file_reads_as_gemini_loads_it` checks it against Gemini). In the
/// same minute, Gemini rewrote the history without the result: once.
#[test]
fn a_resume_in_a_later_minute_repeats_the_tool_result_as_gemini_does() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gemini/recorded");
    let turns = |c: &[Value]| -> Vec<String> {
        c.iter()
            .map(|t| {
                let part = t["parts"][0].as_object().unwrap();
                let kind = part.keys().next().unwrap().clone();
                format!("{} {kind}", t["role"].as_str().unwrap())
            })
            .collect()
    };
    let (s, c) = read_file(&dir.join("session-2026-11-26T11-55-a1f5dba8.jsonl"));
    assert!(s.listed && s.resumable, "{s:?}");
    assert_eq!(
        turns(&c),
        [
            "user text",
            "model functionCall",
            "user functionResponse",
            "user functionResponse",
            "user functionResponse",
            "model text",
            "user text",
            "model text"
        ]
    );
    assert_eq!(c[2]["id"], c[3]["id"], "the call's result, twice");
    let (context_only, none) = read_file(&dir.join("session-2026-11-26T11-56-a1f5dba8.jsonl"));
    assert_eq!(context_only.id, s.id);
    assert!(!context_only.listed && !context_only.resumable && none.is_empty());

    let (s, c) = read_file(&dir.join("session-2026-11-26T11-55-c277f996.jsonl"));
    assert!(s.listed && s.resumable, "{s:?}");
    assert_eq!(turns(&c).len(), 7, "{c:?}");
    for f in recorded_files() {
        check_incremental(
            &f.file_name().unwrap().to_string_lossy(),
            &std::fs::read(&f).unwrap(),
        );
    }
}
