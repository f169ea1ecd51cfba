//! Readers tolerate what crashes, foreign writers and older versions leave behind
//! (SPEC §1.1): nothing panics, malformed lines are counted, the rest is served.
//! Also: an append after a torn tail leaves the torn bytes alone and the new line whole.

mod core_support;

use core_support::*;
use fen_fs::store::Store;
use fen_fs::store::index::SessionIndex;
use fen_fs::store::session::Session;
use fen_fs::views::conversation::ConversationSnapshot;
use proptest::prelude::*;
use serde_json::Value;
use std::sync::Arc;

const NS: &str = "--t--";

fn entry(n: u64, parent: Option<u64>, body: &str) -> String {
    let parent = parent.map(|p| q(&uid(p))).unwrap_or_else(|| "null".into());
    format!(
        "{{\"type\":{body},\"id\":{},\"parent-id\":{parent},\"timestamp\":\"2026-01-02T03:04:05.{n:03}Z\"}}\n",
        q(&uid(n))
    )
}

/// A v2 message entry line (`\n`-terminated) and the message's bytes.
fn msg(n: u64, parent: Option<u64>, role: &str, content: &str) -> (String, String) {
    let raw = format!("{{\"role\":{},\"content\":{}}}", q(role), q(content));
    (
        entry(n, parent, &format!("\"message\",\"message\":{raw}")),
        raw,
    )
}

fn header() -> String {
    header_line("tol", "/t")
}

fn session(store: &Store, name: &str, bytes: &[u8]) -> Arc<Session> {
    hand_session(
        store,
        NS,
        &format!("2026-01-02T03-04-05-006Z_{name}"),
        bytes,
    )
}

/// Everything a reader can look at, checked for consistency; returns (meta, conversation items).
fn all_views(s: &Session) -> (Value, Vec<String>) {
    let tr = read_view(s, fen_fs::views::ViewKind::Transcript);
    assert_eq!(tr, std::fs::read(&s.path).unwrap());
    let items = conversation_items(s);
    let m = meta(s);
    assert_eq!(
        m["messages"].as_u64().unwrap() as usize,
        s.current().unwrap().message_count()
    );
    let _ = summary(s);
    (m, items)
}

#[test]
fn garbage_lines_are_counted_and_skipped() {
    let (_tmp, store) = temp_store();
    let (l1, m1) = msg(1, None, "user", "one");
    let (l2, m2) = msg(2, Some(1), "assistant", "two");
    let mut text = header().into_bytes();
    text.extend(l1.as_bytes());
    for bad in [
        &b"not json"[..],
        b"[1,2]",
        b"42",
        b"\"a string\"",
        b"{\"no\":\"type\"}",
        b"{\"type\":5}",
        b"{\"type\":\"message\"}",
        b"{\"type\":\"message\",\"message\":\"str\"}",
        b"{\"type\":\"message\",\"message\":{\"role\":\"\"}}",
        b"{\"type\":\"message\",\"message\":{\"role\":7}}",
        b"{\"type\":\"message\",\"message\":{\"content\":\"no role\"}}",
        b"{\"type\":\"x\"",
        b"\xff\xfe{\"type\":\"x\"}",
        b"{\"type\":\"x\"} trailing",
    ] {
        text.extend(bad);
        text.push(b'\n');
    }
    // Blank lines are not entries and not malformed.
    text.extend(b"\n   \n\t\r\n");
    // Known types with the wrong shape are shown in the transcript only.
    text.extend(entry(3, Some(2), "\"title\",\"title\":3").as_bytes());
    text.extend(entry(4, Some(3), "\"metadata\",\"data\":[1]").as_bytes());
    text.extend(l2.as_bytes());
    let s = session(&store, "garbage", &text);
    let idx = s.current().unwrap();
    assert_eq!(idx.malformed_lines, 14);
    assert!(!idx.torn_tail);
    assert_eq!(idx.malformed_total(), 14);
    assert_eq!(idx.entries, 4);
    assert_eq!(idx.title, None);
    assert!(idx.metadata.is_empty());
    assert_eq!(idx.custom_entries.get("title"), Some(&1));
    assert_eq!(idx.custom_entries.get("metadata"), Some(&1));
    drop(idx);
    let (m, items) = all_views(&s);
    assert_eq!(items, [m1, m2]);
    assert_eq!(m["malformed_lines"], 14);
    assert_eq!(m["entries"], 4);
    assert_eq!(m["cwd"], "/t");
}

#[test]
fn truncated_last_line_is_a_torn_tail() {
    let (_tmp, store) = temp_store();
    let (l1, m1) = msg(1, None, "user", "one");
    let (l2, _) = msg(2, Some(1), "assistant", "two");
    let torn = &l2[..l2.len() / 2];
    let text = format!("{}{l1}{torn}", header());
    let s = session(&store, "torn", text.as_bytes());
    let idx = s.current().unwrap();
    assert!(idx.torn_tail);
    assert_eq!(idx.malformed_lines, 0);
    assert_eq!(idx.malformed_total(), 1, "a torn tail counts as malformed");
    assert_eq!(idx.entries, 1);
    assert_eq!(idx.parsed_len as usize, header().len() + l1.len());
    assert_eq!(idx.last_entry_id.as_deref(), Some(uid(1).as_str()));
    drop(idx);
    let (m, items) = all_views(&s);
    assert_eq!(items, [m1]);
    assert_eq!(m["malformed_lines"], 1);
    assert_eq!(m["size_bytes"], text.len());
    assert_eq!(
        std::fs::read(&s.path).unwrap(),
        text.as_bytes(),
        "readers never repair"
    );
}

#[test]
fn nul_padding() {
    let (_tmp, store) = temp_store();
    let (l1, m1) = msg(1, None, "user", "one");
    let (l2, m2) = msg(2, Some(1), "assistant", "two");
    let (l3, m3) = msg(3, Some(2), "user", "three");

    // NULs at the end, no newline: a torn tail.
    let text = format!("{}{l1}{}", header(), "\0".repeat(4096));
    let s = session(&store, "nul-tail", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, std::slice::from_ref(&m1));
    assert_eq!(m["malformed_lines"], 1);
    assert!(s.current().unwrap().torn_tail);

    // A NUL-only line: one malformed line.
    let text = format!("{}{l1}{}\n{l2}", header(), "\0".repeat(100));
    let s = session(&store, "nul-line", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [m1.clone(), m2.clone()]);
    assert_eq!(m["malformed_lines"], 1);

    // NULs followed by a good entry on the same line (the writer resumed after a hole):
    // the run is one malformed line and the entry is still read, bytes exact.
    let text = format!("{}{l1}{}{l2}{l3}", header(), "\0".repeat(37));
    let s = session(&store, "nul-prefix", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [m1, m2, m3]);
    assert_eq!(m["malformed_lines"], 1);
    assert_eq!(m["entries"], 3);
}

#[test]
fn crlf_line_endings() {
    let (_tmp, store) = temp_store();
    let (l1, _m1) = msg(1, None, "user", "one");
    let (l2, m2) = msg(2, Some(1), "assistant", "two");
    let c = entry(
        3,
        Some(2),
        &format!(
            "\"compaction\",\"summary\":\"S\",\"first-kept-entry-id\":{}",
            q(&uid(2))
        ),
    );
    let (l4, m4) = msg(4, Some(3), "user", "four");
    let text: String = [header(), l1, l2, c, l4]
        .iter()
        .map(|l| l.replace('\n', "\r\n"))
        .collect();
    let s = session(&store, "crlf", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [synthetic("S"), m2, m4]);
    assert_eq!(m["malformed_lines"], 0);
    assert_eq!(m["cwd"], "/t");
    assert_eq!(m["last_compaction"]["id"], uid(3));
}

#[test]
fn utf8_bom() {
    let (_tmp, store) = temp_store();
    let (l1, m1) = msg(1, None, "user", "héllo ✓");
    let c = entry(
        2,
        Some(1),
        &format!(
            "\"compaction\",\"summary\":\"S\",\"first-kept-entry-id\":{}",
            q(&uid(1))
        ),
    );
    let text = format!("\u{feff}{}{l1}{c}", header());
    let s = session(&store, "bom", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [synthetic("S"), m1.clone()]);
    assert_eq!(m["malformed_lines"], 0);
    assert_eq!(m["cwd"], "/t", "the header after a BOM is read");
    assert_eq!(m["version"], 2);

    // A BOM before a first line that is an entry (no header).
    let (l1, m1) = msg(1, None, "user", "x");
    let (l2, m2) = msg(2, Some(1), "user", "y");
    let text = format!("\u{feff}{l1}{l2}");
    let s = session(&store, "bom-entry", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [m1, m2]);
    assert_eq!(m["malformed_lines"], 0);
    // A BOM anywhere else is not valid JSON: that line is malformed.
    let (l1, m1) = msg(1, None, "user", "x");
    let (l2, _) = msg(2, Some(1), "user", "y");
    let text = format!("{}{l1}\u{feff}{l2}", header());
    let s = session(&store, "bom-late", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [m1]);
    assert_eq!(m["malformed_lines"], 1);
}

#[test]
fn empty_file() {
    let (_tmp, store) = temp_store();
    let s = session(&store, "empty", b"");
    let idx = s.current().unwrap();
    assert_eq!(
        (idx.entries, idx.malformed_total(), idx.message_count()),
        (0, 0, 0)
    );
    assert!(idx.header.is_none());
    drop(idx);
    let (m, items) = all_views(&s);
    assert!(items.is_empty());
    assert_eq!(conversation_bytes(&s), b"[]\n");
    assert_eq!(m["id"], "empty", "the id comes from the file name");
    assert!(m["cwd"].is_null());
    assert_eq!(m["entries"], 0);
    assert_eq!(m["size_bytes"], 0);
    assert!(m["last_entry_id"].is_null());
    assert!(summary(&s).contains("(no messages yet)"));
    // Listings do not choke on it either.
    let all = fen_fs::commands::list::list(&store, None).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].messages, 0);
}

#[test]
fn header_only_file() {
    let (_tmp, store) = temp_store();
    let s = session(&store, "hdr", header().as_bytes());
    let (m, items) = all_views(&s);
    assert!(items.is_empty());
    assert_eq!(m["id"], "tol", "the header's id wins");
    assert_eq!(m["cwd"], "/t");
    assert_eq!(m["version"], 2);
    assert_eq!(m["entries"], 0);
    assert_eq!(m["malformed_lines"], 0);
    assert_eq!(m["created_at"], "2026-01-02T03:04:05.006Z");
    assert_eq!(
        m["updated_at"], "2026-01-02T03:04:05.006Z",
        "no entries: updated = created"
    );
    // Header without a trailing newline: a torn tail, no header.
    let h = header();
    let s = session(&store, "hdr-torn", h.trim_end().as_bytes());
    let (m, _) = all_views(&s);
    assert_eq!(m["malformed_lines"], 1);
    assert!(m["cwd"].is_null());
}

#[test]
fn file_without_header() {
    let (_tmp, store) = temp_store();
    let (l1, m1) = msg(1, None, "user", "one");
    let (l2, m2) = msg(2, Some(1), "assistant", "two");
    let s = session(&store, "nohdr", format!("{l1}{l2}").as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [m1, m2]);
    assert!(m["cwd"].is_null());
    assert_eq!(m["version"], 1);
    assert_eq!(m["entries"], 2);
    assert_eq!(m["id"], "nohdr");
    assert_eq!(m["preview"], "one");
    // A header that is not on the first line is not the header (and not an entry).
    let text = format!("{l1}{}{l2}", header());
    let s = session(&store, "latehdr", text.as_bytes());
    let (m, _) = all_views(&s);
    assert!(m["cwd"].is_null());
    assert_eq!(m["entries"], 2);
}

#[test]
fn unknown_types_and_fields() {
    let (_tmp, store) = temp_store();
    let hdr = "{\"type\":\"session\",\"version\":3,\"id\":\"u\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/u\",\"future\":{\"x\":1}}\n";
    let raw1 = r#"{"role":"user","content":"one","x-new":[1,{"a":null}]}"#;
    let lines = [
        format!(
            "{{\"type\":\"message\",\"id\":{},\"parent-id\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"unknown\":true,\"message\":{raw1}}}\n",
            q(&uid(1))
        ),
        entry(2, Some(1), "\"bash\",\"cmd\":\"ls\",\"output\":\"a\\nb\""),
        entry(3, Some(2), "\"bash\",\"cmd\":\"pwd\""),
        entry(
            4,
            Some(3),
            "\"tool-result\",\"message\":{\"role\":\"user\",\"content\":\"not a message\"}",
        ),
        entry(5, Some(4), "\"reasoning\""),
        entry(6, Some(5), "\"title\",\"title\":\"T\",\"extra\":1"),
        entry(
            7,
            Some(6),
            "\"metadata\",\"data\":{\"a\":1,\"b\":{\"c\":2}}",
        ),
        entry(8, Some(7), "\"metadata\",\"data\":{\"a\":3}"),
    ];
    let text = format!("{hdr}{}", lines.concat());
    let s = session(&store, "unknown", text.as_bytes());
    let (m, items) = all_views(&s);
    assert_eq!(items, [raw1]);
    assert_eq!(
        m["custom_entries"],
        serde_json::json!({"bash":2,"tool-result":1,"reasoning":1})
    );
    assert_eq!(m["title"], "T");
    assert_eq!(m["metadata"], serde_json::json!({"a":3,"b":{"c":2}}));
    assert_eq!(m["entries"], 8);
    assert_eq!(m["malformed_lines"], 0);
    assert_eq!(m["version"], 3);
    assert_eq!(m["last_entry_id"], uid(8));
}

#[test]
fn version_one_files() {
    let (_tmp, store) = temp_store();
    let text = concat!(
        "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/old\"}\n",
        "{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:01Z\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n",
        "{\"type\":\"bash\",\"cmd\":\"ls\"}\n",
        "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"b\"}}\n",
        "{\"type\":\"title\",\"title\":\"Old\"}\n",
    );
    let s = session(&store, "old", text.as_bytes());
    let idx = s.current().unwrap();
    assert_eq!(idx.version(), 1);
    assert_eq!(idx.last_entry_id, None);
    assert_eq!(idx.entries, 4);
    drop(idx);
    let (m, items) = all_views(&s);
    assert_eq!(
        items,
        [
            r#"{"role":"user","content":"a"}"#,
            r#"{"role":"assistant","content":"b"}"#
        ]
    );
    assert_eq!(m["version"], 1);
    assert_eq!(m["title"], "Old");
    assert!(m["last_entry_id"].is_null());
    assert_eq!(m["updated_at"], "2025-01-01T00:00:01Z");

    // Appending through the core still works and starts a chain.
    let ids = append(&store, &s, &[r#"{"role":"user","content":"c"}"#]);
    let bytes = std::fs::read(&s.path).unwrap();
    assert!(bytes.starts_with(text.as_bytes()));
    let last: Value =
        serde_json::from_slice(bytes[text.len()..].strip_suffix(b"\n").unwrap()).unwrap();
    assert_eq!(last["id"], ids[0].as_str());
    assert!(last["parent-id"].is_null());
    assert_eq!(conversation_items(&s).len(), 3);
}

#[test]
fn append_after_a_torn_tail() {
    let (_tmp, store) = temp_store();
    let (l1, m1) = msg(1, None, "user", "one");
    let (l2, _) = msg(2, Some(1), "assistant", "two");
    for (name, tail) in [
        ("half", l2[..l2.len() - 7].to_string()),
        ("nul", "\0".repeat(512)),
        ("brace", "{".to_string()),
    ] {
        let old = format!("{}{l1}{tail}", header());
        let s = session(&store, name, old.as_bytes());
        assert_eq!(meta(&s)["malformed_lines"], 1);
        let ids = append(&store, &s, &[r#"{"role":"user","content":"new"}"#]);
        let bytes = std::fs::read(&s.path).unwrap();
        assert!(
            bytes.starts_with(old.as_bytes()),
            "{name}: the torn bytes are left alone"
        );
        assert_eq!(
            bytes[old.len()],
            b'\n',
            "{name}: a newline ends the torn line first"
        );
        let new_line = &bytes[old.len() + 1..];
        assert!(new_line.ends_with(b"\n"));
        assert_eq!(
            new_line.iter().filter(|&&b| b == b'\n').count(),
            1,
            "{name}: one whole line"
        );
        let v: Value = serde_json::from_slice(new_line).expect("the new entry is whole");
        assert_eq!(v["id"], ids[0].as_str());
        assert_eq!(
            v["parent-id"],
            uid(1),
            "{name}: chained to the last good entry"
        );
        assert_eq!(
            v["message"],
            serde_json::json!({"role":"user","content":"new"})
        );

        let (m, items) = all_views(&s);
        assert_eq!(
            items,
            [m1.clone(), r#"{"role":"user","content":"new"}"#.to_string()]
        );
        assert_eq!(
            m["malformed_lines"], 1,
            "{name}: the torn line is now one malformed line"
        );
        assert!(!s.current().unwrap().torn_tail);
        // The next append needs no extra newline.
        let len = bytes.len();
        append(&store, &s, &[r#"{"role":"assistant","content":"ok"}"#]);
        let bytes = std::fs::read(&s.path).unwrap();
        assert_eq!(bytes[len], b'{');
        let full = SessionIndex::load(&s.path).unwrap();
        assert_index_eq(&s.current().unwrap(), &full);
    }
}

#[test]
fn append_after_a_foreign_torn_write_to_a_core_session() {
    let (_tmp, store) = temp_store();
    let (s, first) = create_simple(&store, "/w", "hi");
    let before = std::fs::read(&s.path).unwrap();
    raw_append(&s.path, b"{\"type\":\"message\",\"message\":{\"ro");
    let ids = append(&store, &s, &[r#"{"role":"assistant","content":"hello"}"#]);
    let bytes = std::fs::read(&s.path).unwrap();
    let torn_end = before.len() + 32;
    assert_eq!(
        &bytes[..torn_end],
        [&before[..], b"{\"type\":\"message\",\"message\":{\"ro"].concat()
    );
    assert_eq!(bytes[torn_end], b'\n');
    let v: Value = serde_json::from_slice(&bytes[torn_end + 1..bytes.len() - 1]).unwrap();
    assert_eq!(v["parent-id"], first.as_str());
    assert_eq!(v["id"], ids[0].as_str());
    assert_eq!(meta(&s)["malformed_lines"], 1);
    assert_eq!(conversation_items(&s).len(), 2);
}

// ---------------------------------------------------------------------------------
// Nothing panics, whatever the bytes: a fuzz over fragments of real and broken lines.

fn fragment() -> impl Strategy<Value = Vec<u8>> {
    let (l1, _) = msg(1, None, "user", "one");
    let (l2, _) = msg(2, Some(1), "assistant", "two");
    let c1 = entry(
        3,
        Some(2),
        &format!(
            "\"compaction\",\"summary\":\"S\",\"first-kept-entry-id\":{}",
            q(&uid(1))
        ),
    );
    let c2 = entry(
        4,
        Some(3),
        "\"compaction\",\"summary\":\"R\",\"messages\":[{\"role\":\"user\",\"content\":\"r\"}]",
    );
    let c3 = entry(
        5,
        Some(4),
        "\"compaction\",\"summary\":\"N\",\"first-kept-entry-id\":null",
    );
    let c4 = entry(
        6,
        Some(5),
        &format!(
            "\"compaction\",\"summary\":7,\"first-kept-entry-id\":{}",
            q(&uid(2))
        ),
    );
    let t = entry(7, Some(6), "\"title\",\"title\":\"T\"");
    let lines: Vec<Vec<u8>> = [header(), l1, l2, c1, c2, c3, c4, t]
        .into_iter()
        .map(String::into_bytes)
        .collect();
    let whole = proptest::sample::select(lines.clone());
    let cut = (
        proptest::sample::select(lines),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(l, i)| l[..i.index(l.len())].to_vec());
    prop_oneof![
        4 => whole,
        1 => cut,
        1 => Just(b"\n".to_vec()),
        1 => Just(b"\r\n".to_vec()),
        1 => Just(vec![0u8; 17]),
        1 => Just("\u{feff}".as_bytes().to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..12),
        1 => Just(b"{\"type\":\"x\"}\n".to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(frags in proptest::collection::vec(fragment(), 0..24)) {
        let bytes: Vec<u8> = frags.concat();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        // Cheap in-memory load (the same parser the store uses), fed in two pieces.
        let mut idx = SessionIndex::new();
        let split = bytes.len() / 3;
        let used = idx.ingest(0, &bytes[..split]);
        let used2 = idx.ingest(used as u64, &bytes[used..]);
        idx.torn_tail = used + used2 < bytes.len();
        let mut whole = SessionIndex::new();
        let n = whole.ingest(0, &bytes);
        prop_assert_eq!(n, used + used2);
        prop_assert_eq!(whole.malformed_lines, idx.malformed_lines);
        prop_assert_eq!(&*whole.messages.read().unwrap(), &*idx.messages.read().unwrap());
        prop_assert_eq!(&whole.compactions, &idx.compactions);

        let file = std::fs::File::open(&path).unwrap();
        let conv = ConversationSnapshot::new(&idx, file.try_clone().unwrap()).unwrap();
        let out = conv.read_at(0, bytes.len() + 4096).unwrap();
        prop_assert_eq!(out.len() as u64, conv.size());
        let v: Value = serde_json::from_slice(&out).expect("conversation.json is JSON");
        prop_assert!(v.is_array());
        let session = Session::new("--x--".into(), "x".into(), path.clone(), None);
        let m: Value = serde_json::from_slice(&fen_fs::views::meta::render(&session, &idx, 0)).unwrap();
        prop_assert_eq!(m["malformed_lines"].as_u64().unwrap(), idx.malformed_total());
        let _ = fen_fs::views::summary::render(&session, &idx, &file);
    }
}
