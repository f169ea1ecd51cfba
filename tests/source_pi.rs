//! PiReader against pi itself: sessions written by pi's SessionManager (and hand-made
//! files) must read as pi's `open().buildSessionContext()` and `list()` see them.
//! Needs `scripts/install-pi`; without it the oracle tests say SKIPPED (or fail when
//! FEN_FS_REQUIRE_PI=1).

use fen_fs::sources::{foreign::*, pi::PiReader};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Oracle {
    pi_dir: PathBuf,
    tmp: tempfile::TempDir,
}

impl Oracle {
    fn get() -> Option<Oracle> {
        let pi_dir = std::env::var_os("FEN_FS_PI_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pi-agent"));
        let pkg = pi_dir.join("node_modules/@mariozechner/pi-coding-agent/package.json");
        if !pkg.exists() {
            if std::env::var("FEN_FS_REQUIRE_PI").as_deref() == Ok("1") {
                panic!(
                    "pi package not installed in {} (run scripts/install-pi)",
                    pi_dir.display()
                );
            }
            eprintln!("SKIPPED: pi package not installed (run scripts/install-pi)");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        Some(Oracle { pi_dir, tmp })
    }

    fn run(&self, args: &[&str]) -> Value {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi/oracle.mjs");
        let out = Command::new("node")
            .arg(script)
            .args(args)
            .env("PI_DIR", &self.pi_dir)
            .env("HOME", self.tmp.path().join("home"))
            .env("PI_CODING_AGENT_DIR", self.tmp.path().join("agent"))
            .output()
            .expect("node runs");
        assert!(
            out.status.success(),
            "oracle {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("oracle prints JSON")
    }

    /// What pi's resume makes of each file, from one run of node (each start of
    /// it loads pi's modules: about a second).
    fn contexts(&self, files: &[&Path]) -> serde_json::Map<String, Value> {
        let mut args = vec!["contexts"];
        args.extend(files.iter().map(|f| f.to_str().unwrap()));
        match self.run(&args) {
            Value::Object(m) => m,
            other => panic!("pi's contexts: {other}"),
        }
    }

    /// `list()` of a folder, keyed by file path.
    fn list(&self, dir: &Path) -> Vec<Value> {
        self.run(&["list", dir.to_str().unwrap()])
            .as_array()
            .unwrap()
            .clone()
    }
}

fn read(bytes: &[u8]) -> (ForeignSummary, Vec<Value>, Vec<Vec<u8>>) {
    let mut r = PiReader::new();
    let tail = feed_all(&mut r, bytes);
    let conv = r.conversation(tail);
    let rendered: Vec<Vec<u8>> = conv.iter().map(|m| render_message(m, bytes)).collect();
    let values = rendered
        .iter()
        .map(|m| {
            let text = well_formed(&String::from_utf8_lossy(m));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
        })
        .collect();
    (r.summary(tail), values, rendered)
}

/// Lone surrogate escapes (which JSON.parse keeps and serde_json refuses) as U+FFFD,
/// as the oracle prints them (`toWellFormed`).
fn well_formed(text: &str) -> String {
    let hex = |s: &str| s.get(2..6).and_then(|h| u16::from_str_radix(h, 16).ok());
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("\\u") {
        // Skip an escaped backslash: `\\u` is not an escape of `u`.
        let backslashes = rest[..i].chars().rev().take_while(|&c| c == '\\').count();
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(n) = hex(rest).filter(|_| backslashes % 2 == 0) else {
            out.push_str(&rest[..2]);
            rest = &rest[2..];
            continue;
        };
        if (0xD800..0xDC00).contains(&n)
            && rest[6..].starts_with("\\u")
            && hex(&rest[6..]).is_some_and(|l| (0xDC00..0xE000).contains(&l))
        {
            out.push_str(&rest[..12]);
            rest = &rest[12..];
        } else if (0xD800..0xE000).contains(&n) {
            out.push_str("\\ufffd");
            rest = &rest[6..];
        } else {
            out.push_str(&rest[..6]);
            rest = &rest[6..];
        }
    }
    out.push_str(rest);
    out
}

/// Feeds `bytes` in uneven chunks, as a follower of appends would, and checks the result
/// equals one whole read.
fn check_incremental(bytes: &[u8]) {
    let mut whole = PiReader::new();
    let tail = feed_all(&mut whole, bytes);
    let want = (whole.summary(tail), whole.conversation(tail));
    for step in [1usize, 7, 64, 1000] {
        let mut r = PiReader::new();
        let mut consumed = 0usize;
        let mut avail = 0usize;
        while avail < bytes.len() {
            avail = (avail + step).min(bytes.len());
            consumed += r.feed(consumed as u64, &bytes[consumed..avail]) as usize;
            // Mid-way summaries must not disturb later feeds.
            let _ = r.summary(&bytes[consumed..avail]);
        }
        let tail = &bytes[consumed..];
        assert_eq!((r.summary(tail), r.conversation(tail)), want, "step {step}");
    }
}

fn opt_str(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// Checks one file against pi's open() and list() (`listed`: list()'s entry, if any).
fn check_against_pi(ctx: &Value, file: &Path, listed: Option<&Value>) {
    let bytes = std::fs::read(file).unwrap();
    let (s, msgs, _) = read(&bytes);
    let name = file.display();
    let pi_resumes = ctx["ok"] == json!(true) && ctx["startedOver"] == json!(false);
    assert_eq!(
        s.resumable, pi_resumes,
        "{name}: resumable; pi said {ctx}; we said {s:?}"
    );
    if pi_resumes {
        assert_eq!(
            Value::Array(msgs.clone()),
            ctx["messages"],
            "{name}: conversation"
        );
        assert_eq!(s.messages, msgs.len() as u64);
    } else {
        assert!(msgs.is_empty());
        assert!(s.not_resumable_reason.is_some());
    }
    assert_eq!(s.listed, listed.is_some(), "{name}: listed; {s:?}");
    if let Some(l) = listed {
        assert_eq!(s.id, l["id"].as_str().unwrap_or(""), "{name}: id");
        assert_eq!(
            s.cwd.as_deref().unwrap_or(""),
            l["cwd"].as_str().unwrap(),
            "{name}: cwd"
        );
        assert_eq!(s.title, opt_str(&l["name"]), "{name}: title");
        let first = l["firstMessage"].as_str().unwrap();
        let want_preview = (first != "(no messages)").then(|| {
            let one: String = first
                .chars()
                .map(|c| if c < ' ' || c == '\u{7f}' { ' ' } else { c })
                .collect();
            one.trim().to_string()
        });
        assert_eq!(s.preview, want_preview, "{name}: preview");
        assert_eq!(s.created_at, opt_str(&l["created"]), "{name}: created");
        if s.updated_at.is_some() {
            assert_eq!(s.updated_at, opt_str(&l["modified"]), "{name}: modified");
        }
    }
    check_incremental(&bytes);
}

fn listed_by_path<'a>(list: &'a [Value], file: &Path) -> Option<&'a Value> {
    list.iter().find(|l| l["path"].as_str() == file.to_str())
}

#[test]
fn sessions_written_by_pi_read_as_pi_reads_them() {
    let Some(o) = Oracle::get() else { return };
    let dir = o.tmp.path().join("sessions");
    let written = o.run(&["write", dir.to_str().unwrap(), "/proj/x"]);
    let list = o.list(&dir);
    let files = written.as_object().unwrap();
    assert!(files.len() >= 10);
    let paths: Vec<PathBuf> = files
        .values()
        .map(|f| PathBuf::from(f.as_str().unwrap()))
        .collect();
    let ctxs = o.contexts(&paths.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    for (scenario, file) in files.keys().zip(&paths) {
        eprintln!("scenario {scenario}");
        let l = listed_by_path(&list, file);
        assert!(l.is_some(), "{scenario}: pi lists it");
        check_against_pi(&ctxs[file.to_str().unwrap()], file, l);
    }
    // A few facts pinned, so the oracle comparison cannot pass vacuously.
    let read_scenario = |n: &str| read(&std::fs::read(files[n].as_str().unwrap()).unwrap());
    let (s, msgs, _) = read_scenario("compaction");
    assert_eq!(msgs[0]["role"], "compactionSummary");
    assert_eq!(msgs[0]["summary"], "summary again");
    assert_eq!(s.compactions, 2);
    let (s, _, _) = read_scenario("renamed");
    assert_eq!(s.title.as_deref(), Some("Second name"));
    let (s, _, _) = read_scenario("renameCleared");
    assert_eq!(s.title, None);
    let (s, msgs, _) = read_scenario("custom");
    assert_eq!(s.roles.get("custom"), Some(&2));
    assert_eq!(
        msgs.iter().filter(|m| m["role"] == "bashExecution").count(),
        1
    );
    // An empty summary is no message; the other branch summary is off the path.
    let (_, msgs, _) = read_scenario("branchSummary");
    assert_eq!(
        msgs.iter().filter(|m| m["role"] == "branchSummary").count(),
        0
    );
    let (_, msgs, _) = read_scenario("branchFromRoot");
    assert_eq!(msgs[0]["role"], "branchSummary");
    assert_eq!(msgs[0]["fromId"], "root");
    // Stored messages are served as ranges of the file, not copies.
    let bytes = std::fs::read(files["linear"].as_str().unwrap()).unwrap();
    let mut r = PiReader::new();
    let tail = feed_all(&mut r, &bytes);
    assert!(
        r.conversation(tail)
            .iter()
            .all(|m| matches!(m[..], [Piece::Range { .. }]))
    );
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"sess-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn line_user(id: &str, parent: Option<&str>, text: &str) -> String {
    json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:01.000Z",
        "message":{"role":"user","content":text,"timestamp":1767225601000u64}})
    .to_string()
}

fn line_assistant(id: &str, parent: &str, text: &str) -> String {
    json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:02.000Z",
        "message":{"role":"assistant","content":[{"type":"text","text":text}],"provider":"p","model":"m","timestamp":1767225602000u64}})
    .to_string()
}

/// Hand-made files, each checked against pi (on a copy: pi may rewrite what it opens).
fn crafted() -> Vec<(&'static str, Vec<u8>)> {
    let u1 = line_user("u1", None, "hello");
    let a1 = line_assistant("a1", "u1", "hi");
    let u2 = line_user("u2", Some("a1"), "again\u{0}\tnow");
    let base = format!("{HEADER}\n{u1}\n{a1}\n{u2}\n");
    let v1 = [
        r#"{"type":"session","id":"v1-sess","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/old"}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"v1 first","timestamp":1}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"r"}],"timestamp":2}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"kept","timestamp":3}}"#,
        r#"{"type":"thinking_level_change","timestamp":"2025-01-01T00:00:04.000Z","thinkingLevel":"low"}"#,
        r#"{"type":"compaction","timestamp":"2025-01-01T00:00:05.000Z","summary":"v1 sum","firstKeptEntryIndex":3,"tokensBefore":7}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:06.000Z","message":{"role":"hookMessage","customType":"h","content":"hook","display":true,"timestamp":6}}"#,
    ]
    .join("\n")
        + "\n";
    let v1_later_index = v1.replace(r#""firstKeptEntryIndex":3"#, r#""firstKeptEntryIndex":6"#);
    let v1_bad_index = v1.replace(r#""firstKeptEntryIndex":3"#, r#""firstKeptEntryIndex":0"#);
    let v2 = [
        r#"{"type":"session","version":2,"id":"v2-sess","timestamp":"2025-06-01T00:00:00.000Z","cwd":"/v2"}"#,
        r#"{"type":"message","id":"m1","parentId":null,"timestamp":"2025-06-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"v2 q"}],"timestamp":10}}"#,
        r#"{"type":"message","id":"m2","parentId":"m1","timestamp":"2025-06-01T00:00:02.000Z","message":{"role" : "hookMessage","customType":"x","content":"h2","display":false,"timestamp":11}}"#,
        r#"{"type":"custom_message","id":"m3","parentId":"m2","timestamp":"2025-06-01T00:00:03.000Z","customType":"c","content":"cm","display":true}"#,
    ]
    .join("\n")
        + "\n";
    let mut non_utf8 = format!("{HEADER}\n").into_bytes();
    non_utf8.extend_from_slice(b"{\"type\":\"message\",\"id\":\"x1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"bad \xff\xfe bytes \xe2\x82\",\"timestamp\":5}}\n");
    non_utf8.extend_from_slice(format!("{}\n", line_assistant("x2", "x1", "ok")).as_bytes());
    let mut bom = vec![0xEF, 0xBB, 0xBF];
    bom.extend_from_slice(base.as_bytes());
    vec![
        ("plain", base.clone().into_bytes()),
        ("garbage lines", format!("{HEADER}\nnot json\n{u1}\n{{\"half\":\n\n   \n{a1}\n[1,2]\n42\n\"str\"\n{u2}\n").into_bytes()),
        ("torn tail", format!("{base}{{\"type\":\"message\",\"id\":\"t\",\"par").into_bytes()),
        ("complete tail without newline", format!("{base}{}", line_assistant("a2", "u2", "tail")).into_bytes()),
        ("tail of spaces", format!("{base}  \t").into_bytes()),
        ("empty", Vec::new()),
        ("blank lines only", b"\n\n  \n".to_vec()),
        ("header without id", format!("{{\"type\":\"session\",\"version\":3,\"cwd\":\"/w\"}}\n{u1}\n").into_bytes()),
        ("no header", format!("{u1}\n{a1}\n").into_bytes()),
        ("garbage before header", format!("nope\n{base}").into_bytes()),
        ("crlf", base.replace('\n', "\r\n").into_bytes()),
        ("bom", bom),
        ("non utf-8", non_utf8),
        ("null line", format!("{base}null\n").into_bytes()),
        ("primitive last", format!("{base}17\n").into_bytes()),
        ("array last", format!("{base}[]\n").into_bytes()),
        ("leaf id null", format!("{base}{{\"type\":\"label\",\"id\":null,\"parentId\":\"u2\"}}\n").into_bytes()),
        ("message missing on path", format!("{base}{{\"type\":\"message\",\"id\":\"z\",\"parentId\":\"u2\"}}\n").into_bytes()),
        ("message missing off path", format!("{HEADER}\n{u1}\n{{\"type\":\"message\",\"id\":\"z\",\"parentId\":\"u1\"}}\n{a1}\n").into_bytes()),
        ("numeric name", format!("{base}{{\"type\":\"session_info\",\"id\":\"s\",\"parentId\":\"u2\",\"name\":5}}\n").into_bytes()),
        ("null content", format!("{base}{}\n", r#"{"type":"message","id":"n","parentId":"u2","message":{"role":"user","content":null}}"#).into_bytes()),
        ("odd text blocks", format!("{HEADER}\n{}\n", r#"{"type":"message","id":"n","parentId":null,"message":{"role":"user","content":[{"type":"text","text":""},{"type":"image"},{"type":"text","text":3},"s",{"type":"text"},{"type":"text","text":"end"}]}}"#).into_bytes()),
        ("duplicate keys", format!("{HEADER}\n{}\n", r#"{"type":"message","id":"d","parentId":null,"message":{"role":"user","content":"one"},"message":{"role":"user","content":"two"}}"#).into_bytes()),
        ("lone surrogate", format!("{HEADER}\n{}\n", r#"{"type":"message","id":"d","parentId":null,"message":{"role":"user","content":"x\ud800y"}}"#).into_bytes()),
        ("compaction keeps nothing off path", format!("{base}{}\n", r#"{"type":"compaction","id":"c","parentId":"u2","timestamp":"bad","summary":"s","firstKeptEntryId":"zz","tokensBefore":1}"#).into_bytes()),
        ("compaction without fields", format!("{base}{}\n", r#"{"type":"compaction","id":"c","parentId":"u2","firstKeptEntryId":"a1"}"#).into_bytes()),
        ("branch summary from root", format!("{base}{}\n", r#"{"type":"branch_summary","id":"b","parentId":null,"timestamp":"2026-02-02T00:00:00Z","fromId":"root","summary":"gone"}"#).into_bytes()),
        ("header version string", base.replacen("\"version\":3", "\"version\":\"2\"", 1).into_bytes()),
        ("v1", v1.into_bytes()),
        ("v1 later index", v1_later_index.into_bytes()),
        ("v1 index on header", v1_bad_index.into_bytes()),
        ("v1 with primitive", format!("{{\"type\":\"session\",\"id\":\"q\",\"cwd\":\"/q\"}}\n{u1}\n7\n").into_bytes()),
        ("v2", v2.into_bytes()),
        ("v3 keeps hookMessage", format!("{HEADER}\n{}\n", r#"{"type":"message","id":"h","parentId":null,"message":{"role":"hookMessage","content":"k"}}"#).into_bytes()),
        ("version NaN migrates nothing", format!("{}\n{}\n", HEADER.replace("\"version\":3", "\"version\":\"abc\""), r#"{"type":"message","id":"h","parentId":null,"message":{"role":"hookMessage","content":"k"}}"#).into_bytes()),
        ("rename then garbage", format!("{base}{}\n", r#"{"type":"session_info","id":"s","parentId":"u2","name":"  Named  "}"#).into_bytes()),
    ]
}

#[test]
fn crafted_files_read_as_pi_reads_them() {
    let Some(o) = Oracle::get() else { return };
    let dir = o.tmp.path().join("crafted");
    std::fs::create_dir_all(&dir).unwrap();
    let cases = crafted();
    let mut paths = Vec::new();
    for (i, (name, bytes)) in cases.iter().enumerate() {
        let p = dir.join(format!("{i:02}.jsonl"));
        std::fs::write(&p, bytes).unwrap();
        paths.push((name, p));
    }
    let list = o.list(&dir);
    let ctxs = o.contexts(&paths.iter().map(|(_, p)| p.as_path()).collect::<Vec<_>>());
    for (name, p) in &paths {
        eprintln!("case {name}");
        check_against_pi(&ctxs[p.to_str().unwrap()], p, listed_by_path(&list, p));
    }
}

#[test]
fn crafted_files_pinned_facts() {
    let cases: std::collections::HashMap<_, _> = crafted().into_iter().collect();
    let (s, msgs, _) = read(&cases["v1"]);
    assert!(s.resumable);
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert_eq!(msgs[0]["role"], "compactionSummary");
    assert_eq!(msgs[1]["content"], "kept");
    assert_eq!(msgs[2]["role"], "custom");
    let (s, _, _) = read(&cases["torn tail"]);
    assert_eq!(s.malformed_lines, 1);
    assert_eq!(s.entries, 4);
    let (s, msgs, _) = read(&cases["complete tail without newline"]);
    assert_eq!(s.messages, 4);
    assert_eq!(msgs[3]["content"][0]["text"], "tail");
    for n in [
        "empty",
        "no header",
        "null line",
        "header without id",
        "v1 with primitive",
        "message missing on path",
    ] {
        let (s, msgs, _) = read(&cases[n]);
        assert!(
            !s.resumable && msgs.is_empty() && s.not_resumable_reason.is_some(),
            "{n}: {s:?}"
        );
    }
    let (s, _, _) = read(&cases["plain"]);
    assert_eq!(s.preview.as_deref(), Some("hello"));
    assert_eq!(s.roles.get("user"), Some(&2));
    assert_eq!(s.updated_at.as_deref(), Some("2026-01-01T00:00:02.000Z"));
}

#[test]
fn parent_loop_is_not_resumable() {
    // pi would spin forever walking this path; the reader must say why instead.
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        line_user("a", Some("b"), "x"),
        line_assistant("b", "a", "y")
    );
    let (s, msgs, _) = read(text.as_bytes());
    assert!(!s.resumable && msgs.is_empty());
    assert!(s.not_resumable_reason.unwrap().contains("loop"));
    check_incremental(text.as_bytes());
}

#[test]
fn crafted_files_incremental_equals_whole() {
    for (name, bytes) in crafted() {
        eprintln!("case {name}");
        check_incremental(&bytes);
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(HEADER.as_bytes().to_vec()),
            Just(line_user("u1", None, "q").into_bytes()),
            Just(line_assistant("a1", "u1", "r").into_bytes()),
            Just(line_user("u1", Some("a1"), "loop").into_bytes()),
            Just(br#"{"type":"compaction","id":"c","parentId":"a1","firstKeptEntryId":"u1","summary":"s"}"#.to_vec()),
            Just(br#"{"type":"branch_summary","id":"b","parentId":"u1","summary":"s","fromId":"u1"}"#.to_vec()),
            Just(br#"{"type":"session","id":"v","cwd":"/"}"#.to_vec()),
            Just(b"null".to_vec()),
            Just(b"\n".to_vec()),
            Just(vec![0xff, 0x00, b'{']),
            proptest::collection::vec(any::<u8>(), 0..40),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn never_panics_and_incremental_matches(parts in proptest::collection::vec((piece(), any::<bool>()), 0..12)) {
            let mut bytes = Vec::new();
            for (p, nl) in parts {
                bytes.extend_from_slice(&p);
                if nl { bytes.push(b'\n'); }
            }
            let mut r = PiReader::new();
            let tail = feed_all(&mut r, &bytes);
            let _ = r.summary(tail);
            for m in r.conversation(tail) {
                let _ = render_message(&m, &bytes);
            }
            check_incremental(&bytes);
        }
    }
}
