//! Round trip through the core: create and append via the ctl grammar and the store,
//! then read back every view; the file is a linear, strictly increasing chain.

mod core_support;

use core_support::*;
use fen_fs::ctl::grammar::{check_against, parse_root_line, parse_session_line};
use fen_fs::store::entry::NewEntry;
use fen_fs::views::{ViewKind, snapshot};
use serde_json::Value;

#[test]
fn round_trip_every_view() {
    let (_tmp, store) = temp_store();
    let (s, first) = create(
        &store,
        r#"{"cwd":"/home/u/proj","role":"user","content":"Please   fix\nthe build"}"#,
    );
    assert_eq!(s.namespace, "--home-u-proj--");
    let ids = append(
        &store,
        &s,
        &[
            r#"{"role":"assistant",   "content":[{"type":"text","text":"On it."}], "x-extra":{"k":[1,2]}}"#,
            r#"{"type":"bash","command":"cargo build","exit":0}"#,
            r#"{"type":"message","message": {"role":"tool" , "content":"ok"} }"#,
        ],
    );
    assert_eq!(ids.len(), 3);
    append(&store, &s, &[r#"{"type":"title","title":"Fix the build"}"#]);
    append(
        &store,
        &s,
        &[r#"{"type":"metadata","data":{"model":"m1","effort":"low"}}"#],
    );
    append(
        &store,
        &s,
        &[r#"{"type":"metadata","data":{"model":"m2"}}"#],
    );
    append(&store, &s, &[r#"{"role":"user","content":"thanks"}"#]);

    // transcript.jsonl is the file, byte for byte.
    let transcript = read_view(&s, ViewKind::Transcript);
    assert_eq!(transcript, std::fs::read(&s.path).unwrap());

    // The file: header, then a linear chain of strictly increasing ids.
    let entries = assert_well_formed(&s.path);
    assert_eq!(entries.len(), 8);
    assert_eq!(entries[0]["id"], first.as_str());
    assert_eq!(
        &entries[1..4]
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        &ids
    );
    let types: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "message", "message", "bash", "message", "title", "metadata", "metadata", "message"
        ]
    );
    assert_eq!(
        entries[2]["command"], "cargo build",
        "custom entries are kept verbatim"
    );

    // conversation.json: the writers' message bytes, exactly, one per line.
    let items = conversation_items(&s);
    assert_eq!(
        items,
        [
            r#"{"role":"user","content":"Please   fix\nthe build"}"#,
            r#"{"role":"assistant",   "content":[{"type":"text","text":"On it."}], "x-extra":{"k":[1,2]}}"#,
            r#"{"role":"tool" , "content":"ok"}"#,
            r#"{"role":"user","content":"thanks"}"#,
        ]
    );

    // meta.json
    let m = meta(&s);
    let header = &file_lines(&s.path)[0];
    assert_eq!(m["id"], header["id"]);
    assert_eq!(m["dir"], s.dir.as_str());
    assert_eq!(m["namespace"], "home-u-proj");
    assert_eq!(m["cwd"], "/home/u/proj");
    assert_eq!(m["version"], 2);
    assert_eq!(m["title"], "Fix the build");
    assert_eq!(
        m["preview"], "Please fix the build",
        "one line, whitespace collapsed"
    );
    assert_eq!(m["created_at"], header["timestamp"]);
    assert_eq!(m["updated_at"], entries[7]["timestamp"]);
    assert_eq!(m["entries"], 8);
    assert_eq!(m["messages"], 4);
    assert_eq!(
        m["roles"],
        serde_json::json!({"user":2,"assistant":1,"tool":1})
    );
    assert_eq!(m["compactions"], 0);
    assert!(m["last_compaction"].is_null());
    assert_eq!(m["custom_entries"], serde_json::json!({"bash":1}));
    assert_eq!(
        m["metadata"],
        serde_json::json!({"model":"m2","effort":"low"})
    );
    assert_eq!(m["malformed_lines"], 0);
    assert_eq!(m["transcript_tokens"], tokens(&items));
    assert_eq!(m["context_tokens"], tokens(&items));
    assert_eq!(m["last_entry_id"], entries[7]["id"]);
    assert_eq!(m["size_bytes"], std::fs::metadata(&s.path).unwrap().len());
    assert_eq!(m["writers"], 0);
    let meta_keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "id",
        "dir",
        "namespace",
        "cwd",
        "version",
        "title",
        "preview",
        "created_at",
        "updated_at",
        "entries",
        "messages",
        "roles",
        "compactions",
        "last_compaction",
        "custom_entries",
        "metadata",
        "malformed_lines",
        "transcript_tokens",
        "context_tokens",
        "last_entry_id",
        "size_bytes",
        "writers",
    ] {
        assert!(meta_keys.contains(&k), "meta.json lacks {k}");
    }
    let w = snapshot(&s, ViewKind::Meta, 3).unwrap();
    let w: Value = serde_json::from_slice(&w.read_at(0, 1 << 20).unwrap()).unwrap();
    assert_eq!(w["writers"], 3);

    // summary.txt: for people, narrow.
    let text = summary(&s);
    assert!(text.starts_with("Fix the build\n"), "{text}");
    assert!(text.contains(m["id"].as_str().unwrap()));
    assert!(text.contains("/home/u/proj"));
    assert!(text.contains("First request:"));
    assert!(
        text.contains("Please fix") && text.contains("the build"),
        "{text}"
    );
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "summary line too wide: {line:?}"
        );
    }
}

#[test]
fn compaction_round_trip_and_computed_tokens() {
    let (_tmp, store) = temp_store();
    let (s, m1) = create_simple(&store, "/w", "first question");
    let ids = append(
        &store,
        &s,
        &[
            r#"{"role":"assistant","content":"first answer, quite a bit longer than the question"}"#,
            r#"{"role":"user","content":"second question"}"#,
        ],
    );
    let before = meta(&s)["context_tokens"].as_u64().unwrap();
    let c = append(
        &store,
        &s,
        &[&format!(
            r#"{{"type":"compaction","summary":"They talked.","first-kept-entry-id":"{}"}}"#,
            ids[1]
        )],
    );
    let items = conversation_items(&s);
    let expected = vec![
        synthetic("They talked."),
        r#"{"role":"user","content":"second question"}"#.to_string(),
    ];
    assert_eq!(items, expected);
    let m = meta(&s);
    let entries = assert_well_formed(&s.path);
    let ce = entries.last().unwrap();
    assert_eq!(ce["id"], c[0].as_str());
    assert_eq!(
        ce["tokens-before"], before,
        "tokens-before is the context before"
    );
    assert_eq!(
        ce["tokens-after"],
        tokens(&expected),
        "tokens-after is the context after"
    );
    assert_eq!(ce["trigger"], "manual", "trigger defaults to manual");
    assert_eq!(m["context_tokens"], tokens(&expected));
    assert_eq!(m["compactions"], 1);
    assert_eq!(m["last_compaction"]["id"], c[0].as_str());
    assert_eq!(m["last_compaction"]["timestamp"], ce["timestamp"]);
    assert_eq!(m["last_compaction"]["tokens_before"], before);
    assert_eq!(m["last_compaction"]["tokens_after"], tokens(&expected));
    assert_eq!(m["last_compaction"]["trigger"], "manual");
    assert_eq!(
        m["messages"], 3,
        "meta counts message entries of the transcript"
    );
    let text = summary(&s);
    assert!(
        text.contains("They talked."),
        "summary.txt shows the latest compaction summary:\n{text}"
    );
    assert!(text.contains("first question"));

    // Given values are kept, not recomputed.
    append(
        &store,
        &s,
        &[
            r#"{"type":"compaction","summary":"again","first-kept-entry-id":null,"tokens-before":1000,"tokens-after":7,"trigger":"auto","guidance":"be brief"}"#,
        ],
    );
    let ce = assert_well_formed(&s.path).pop().unwrap();
    assert_eq!(ce["tokens-before"], 1000);
    assert_eq!(ce["tokens-after"], 7);
    assert_eq!(ce["trigger"], "auto");
    assert_eq!(ce["guidance"], "be brief");
    let m = meta(&s);
    assert_eq!(m["last_compaction"]["trigger"], "auto");
    assert_eq!(m["last_compaction"]["tokens_before"], 1000);
    assert_eq!(conversation_items(&s), vec![synthetic("again")]);

    // Replacement form; computed tokens-after counts the replacement messages.
    let r = append(
        &store,
        &s,
        &[
            r#"{"role":"user","content":"after null"}"#,
            r#"{"type":"compaction","summary":"r","messages":[{"role":"user","content":"R1"}, {"role":"assistant","content":"R2"}]}"#,
        ],
    );
    let ce = assert_well_formed(&s.path).pop().unwrap();
    assert_eq!(ce["id"], r[1].as_str());
    let expected = vec![
        r#"{"role":"user","content":"R1"}"#.to_string(),
        r#"{"role":"assistant","content":"R2"}"#.to_string(),
    ];
    assert_eq!(conversation_items(&s), expected);
    assert_eq!(ce["tokens-after"], tokens(&expected));
    let before_batch = vec![
        synthetic("again"),
        r#"{"role":"user","content":"after null"}"#.to_string(),
    ];
    assert_eq!(
        ce["tokens-before"],
        tokens(&before_batch),
        "counts the batch's earlier lines"
    );
    assert_eq!(meta(&s)["context_tokens"], tokens(&expected));
    let _ = m1;
}

#[test]
fn a_batch_is_all_or_nothing() {
    let (_tmp, store) = temp_store();
    let (s, _) = create_simple(&store, "/w", "hi");
    let before = std::fs::read(&s.path).unwrap();
    let good = parse_session_line(br#"{"role":"assistant","content":"fine"}"#).unwrap();
    let bad = parse_session_line(
        br#"{"type":"compaction","summary":"s","first-kept-entry-id":"0190aaaa-0000-7000-8000-000000000000"}"#,
    )
    .unwrap();
    let err = s
        .append(&[good.clone(), bad], &check_against, store.append)
        .unwrap_err();
    assert_eq!(err.errno, libc::EINVAL);
    assert_eq!(
        std::fs::read(&s.path).unwrap(),
        before,
        "nothing of a failed batch is written"
    );
    // A compaction cannot keep a message of its own batch: its id is not known yet.
    let later = s.append(&[good], &check_against, store.append).unwrap();
    assert_eq!(later.len(), 1);
    // first-kept must name a *message* entry: a custom entry's id is refused.
    let custom = append(&store, &s, &[r#"{"type":"note","text":"n"}"#]);
    let line = format!(
        r#"{{"type":"compaction","summary":"s","first-kept-entry-id":"{}"}}"#,
        custom[0]
    );
    let before = std::fs::read(&s.path).unwrap();
    assert_eq!(
        try_append(&store, &s, &[&line]).unwrap_err().errno,
        libc::EINVAL
    );
    assert_eq!(std::fs::read(&s.path).unwrap(), before);
    assert_well_formed(&s.path);
}

#[test]
fn snapshots_never_shift() {
    let (_tmp, store) = temp_store();
    let (s, first) = create_simple(&store, "/w", "one");
    append(&store, &s, &[r#"{"role":"assistant","content":"two"}"#]);
    let conv = snapshot(&s, ViewKind::Conversation, 0).unwrap();
    let meta_snap = snapshot(&s, ViewKind::Meta, 0).unwrap();
    let sum_snap = snapshot(&s, ViewKind::Summary, 0).unwrap();
    let tr = snapshot(&s, ViewKind::Transcript, 0).unwrap();
    let conv0 = conv.read_at(0, 1 << 20).unwrap();
    let meta0 = meta_snap.read_at(0, 1 << 20).unwrap();
    let sum0 = sum_snap.read_at(0, 1 << 20).unwrap();
    let tr0 = tr.read_at(0, 1 << 20).unwrap();
    let size0 = conv.size();

    append(&store, &s, &[r#"{"role":"user","content":"three"}"#]);
    append(
        &store,
        &s,
        &[&format!(
            r#"{{"type":"compaction","summary":"x","first-kept-entry-id":"{first}"}}"#
        )],
    );
    append(&store, &s, &[r#"{"type":"title","title":"T"}"#]);

    assert_eq!(conv.size(), size0);
    assert_eq!(
        conv.read_at(0, 1 << 20).unwrap(),
        conv0,
        "an open conversation.json never shifts"
    );
    assert_eq!(meta_snap.read_at(0, 1 << 20).unwrap(), meta0);
    assert_eq!(sum_snap.read_at(0, 1 << 20).unwrap(), sum0);
    // The transcript is append-only: what was read stays, and the handle sees growth.
    let tr1 = tr.read_at(0, 1 << 20).unwrap();
    assert!(tr1.starts_with(&tr0) && tr1.len() > tr0.len());
    assert_eq!(tr.size(), tr1.len() as u64);

    // A new open shows everything.
    let items = conversation_items(&s);
    assert_eq!(items.len(), 4);
    assert_eq!(items[0], synthetic("x"));
    assert_eq!(meta(&s)["title"], "T");

    // An open snapshot outlives the file's removal (it holds the descriptor).
    let conv2 = snapshot(&s, ViewKind::Conversation, 0).unwrap();
    let bytes2 = conv2.read_at(0, 1 << 20).unwrap();
    std::fs::remove_file(&s.path).unwrap();
    assert_eq!(conv2.read_at(0, 1 << 20).unwrap(), bytes2);
    assert_eq!(conv.read_at(0, 1 << 20).unwrap(), conv0);
    assert_eq!(err_of(snapshot(&s, ViewKind::Meta, 0)).errno, libc::ENOENT);
}

#[test]
fn root_lines_and_session_creation() {
    let (_tmp, store) = temp_store();
    let r = parse_root_line(br#"{"cwd":"/p/q","session-id":"my_Session-1","type":"message","message":{"role":"user", "content":"hey"}}"#).unwrap();
    assert_eq!(r.cwd, "/p/q");
    assert_eq!(r.session_id.as_deref(), Some("my_Session-1"));
    assert_eq!(
        r.first.message_raw(),
        Some(r#"{"role":"user", "content":"hey"}"#)
    );
    let (s, id) = store
        .create_session(&r.cwd, r.session_id.as_deref(), &r.first, &check_against)
        .unwrap();
    assert_eq!(s.session_id(), "my_Session-1");
    assert!(s.dir.ends_with("_my_Session-1"));
    let name = s.path.file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with("_my_Session-1.jsonl"));
    let stamp = &name[..24];
    assert_eq!(stamp.len(), 24);
    assert!(
        chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%dT%H-%M-%S-%3fZ").is_ok(),
        "{stamp}"
    );
    let lines = file_lines(&s.path);
    assert_eq!(lines.len(), 2, "header and first entry, nothing else");
    assert_eq!(lines[0]["id"], "my_Session-1");
    assert_eq!(lines[0]["cwd"], "/p/q");
    assert_eq!(lines[1]["id"], id.as_str());
    assert!(lines[1]["parent-id"].is_null());
    assert_eq!(
        conversation_items(&s),
        [r#"{"role":"user", "content":"hey"}"#]
    );

    // The same session-id again is refused; an invalid one too.
    let again = store.create_session("/other", Some("my_Session-1"), &r.first, &check_against);
    assert_eq!(err_of(again).errno, libc::EEXIST);
    for bad in ["", "a/b", "..", "a b", &"x".repeat(65)] {
        let e = err_of(store.create_session("/p", Some(bad), &r.first, &check_against));
        assert_eq!(e.errno, libc::EINVAL, "{bad:?}");
    }
    // The first entry is checked too: a compaction cannot keep a message of a new session.
    let c =
        parse_session_line(br#"{"type":"compaction","summary":"s","first-kept-entry-id":"nope"}"#)
            .unwrap();
    assert_eq!(
        err_of(store.create_session("/p", None, &c, &check_against)).errno,
        libc::EINVAL
    );
    // Generated ids are lowercase UUIDv7.
    let (s2, _) = create_simple(&store, "/p/q", "x");
    let u = uuid::Uuid::parse_str(s2.session_id()).unwrap();
    assert_eq!(u.get_version_num(), 7);
    assert_eq!(s2.session_id(), u.hyphenated().to_string());
    // Root shorthand without routing fields keeps the rest of the message.
    let r = parse_root_line(br#"{"role":"user","cwd":"/p","content":{"a":1},"name":"n"}"#).unwrap();
    let raw: Value = serde_json::from_str(r.first.message_raw().unwrap()).unwrap();
    assert_eq!(
        raw,
        serde_json::json!({"role":"user","content":{"a":1},"name":"n"})
    );
}

#[test]
fn grammar_rejects_with_einval() {
    let bad_session: &[&[u8]] = &[
        b"",
        b"not json",
        b"[]",
        b"\"str\"",
        b"{}",
        br#"{"content":"no role"}"#,
        br#"{"role":5}"#,
        br#"{"role":"user","id":"x"}"#,
        br#"{"role":"user","parent-id":null}"#,
        br#"{"role":"user","timestamp":"2026-01-01T00:00:00.000Z"}"#,
        br#"{"type":"message"}"#,
        br#"{"type":"message","message":{"content":"x"}}"#,
        br#"{"type":"message","message":"x"}"#,
        br#"{"type":7}"#,
        br#"{"type":""}"#,
        br#"{"type":"session","version":2}"#,
        br#"{"type":"title"}"#,
        br#"{"type":"metadata","data":[1]}"#,
        br#"{"type":"metadata"}"#,
        br#"{"type":"compaction","first-kept-entry-id":null}"#,
        br#"{"type":"compaction","summary":3,"first-kept-entry-id":null}"#,
        br#"{"type":"compaction","summary":"s","first-kept-entry-id":5}"#,
        br#"{"type":"compaction","summary":"s","messages":[{"content":"x"}]}"#,
        br#"{"type":"compaction","summary":"s","messages":{"role":"user"}}"#,
        br#"{"type":"compaction","summary":"s","first-kept-entry-id":null,"tokens-before":-1}"#,
        br#"{"type":"compaction","summary":"s","first-kept-entry-id":null,"trigger":"sometimes"}"#,
        br#"{"type":"compaction","summary":"s","first-kept-entry-id":null,"guidance":1}"#,
        b"{\"role\":\"user\",\"content\":\"\xc3\x28\"}",
    ];
    for line in bad_session {
        let e = parse_session_line(line).unwrap_err();
        assert_eq!(e.errno, libc::EINVAL, "{}", String::from_utf8_lossy(line));
        assert!(!e.reason.is_empty());
    }
    let bad_root: &[&[u8]] = &[
        br#"{"role":"user","content":"no cwd"}"#,
        br#"{"cwd":3,"role":"user"}"#,
        br#"{"cwd":"relative/path","role":"user"}"#,
        br#"{"cwd":"/p"}"#,
        br#"{"cwd":"/p","session-id":"","role":"user"}"#,
        br#"{"cwd":"/p","session-id":7,"role":"user"}"#,
        br#"{"cwd":"/p","role":"user","id":"x"}"#,
    ];
    for line in bad_root {
        let e = parse_root_line(line).unwrap_err();
        assert_eq!(e.errno, libc::EINVAL, "{}", String::from_utf8_lossy(line));
    }
    // Valid odd cases: whitespace around the object, unknown types, unknown fields.
    let e = parse_session_line(b"  {\"role\":\"x-agent\",\"content\":null}\r\n").unwrap();
    assert_eq!(
        e.message_raw(),
        Some(r#"{"role":"x-agent","content":null}"#)
    );
    let e = parse_session_line(br#"{"type":"reasoning","text":"hmm","nested":{"a":[1]}}"#).unwrap();
    assert_eq!(e.kind, "reasoning");
    assert_eq!(
        e,
        NewEntry {
            kind: "reasoning".into(),
            fields: e.fields.clone(),
            compaction: None
        }
    );
    let e = parse_session_line(br#"{"type":"title","title":"t","extra":1}"#).unwrap();
    assert_eq!(e.kind, "title");
}

#[test]
fn append_to_a_deleted_file_is_enoent() {
    let (_tmp, store) = temp_store();
    let (s, _) = create_simple(&store, "/w", "hi");
    std::fs::remove_file(&s.path).unwrap();
    let e = try_append(&store, &s, &[r#"{"role":"user","content":"x"}"#]).unwrap_err();
    assert_eq!(e.errno, libc::ENOENT);
    assert!(
        !s.path.exists(),
        "an append never re-creates a deleted session"
    );
}

#[test]
fn fsync_always_with_concurrent_threads() {
    // Group commit path: several threads, one Session, fsync=always.
    let dir = tempfile::tempdir().unwrap();
    let store = fen_fs::store::Store::open(
        dir.path().join("s"),
        fen_fs::store::durability::FsyncMode::Always,
    )
    .unwrap();
    let (s, _) = create_simple(&store, "/w", "start");
    std::thread::scope(|scope| {
        for t in 0..3 {
            let (s, store) = (&s, &store);
            scope.spawn(move || {
                for i in 0..3 {
                    let line = format!(r#"{{"role":"user","content":"t{t}-{i}"}}"#);
                    append(store, s, &[&line]);
                }
            });
        }
    });
    let entries = assert_well_formed(&s.path);
    assert_eq!(entries.len(), 1 + 9);
    assert_eq!(conversation_items(&s).len(), 10);
}
