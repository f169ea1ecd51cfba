//! Incremental loading: after another writer appends, a refresh parses only the new
//! bytes (`Refresh::Grew(n)`, n = bytes appended) and the index equals a from-scratch
//! load; truncation or replacement reloads.

mod core_support;

use core_support::*;
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::store::index::{Refresh, SessionIndex};

#[test]
fn another_store_instance_sees_appends_incrementally() {
    let (tmp, a) = temp_store();
    let (sa, first) = create_simple(&a, "/proj", "first");
    // A second, independent store on the same root (another mount, the CLI).
    let b = Store::open(tmp.path().join("store"), FsyncMode::No).unwrap();
    let sb = b.session(&sa.namespace, &sa.dir).unwrap();
    assert_eq!(sb.refresh().unwrap(), Refresh::Reloaded, "first look loads");
    assert_eq!(sb.refresh().unwrap(), Refresh::Unchanged);
    // A loaded SessionIndex kept by hand, refreshed the same way.
    let mut kept = SessionIndex::load(&sa.path).unwrap();

    let rounds: Vec<Vec<String>> = vec![
        vec![r#"{"role":"assistant","content":"answer"}"#.into()],
        vec![
            r#"{"type":"bash","cmd":"make"}"#.into(),
            r#"{"type":"title","title":"Build"}"#.into(),
            r#"{"type":"metadata","data":{"k":"v"}}"#.into(),
            r#"{"role":"user","content":"more"}"#.into(),
        ],
        vec![format!(
            r#"{{"type":"compaction","summary":"S","first-kept-entry-id":"{first}"}}"#
        )],
        vec![
            r#"{"role":"tool","content":"t"}"#.into(),
            r#"{"type":"compaction","summary":"R","messages":[{"role":"user","content":"r"}]}"#
                .into(),
            r#"{"role":"user","content":"after"}"#.into(),
        ],
    ];
    for lines in &rounds {
        let before = file_len(&sa.path);
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        append(&a, &sa, &refs);
        let grew = file_len(&sa.path) - before;
        assert_eq!(
            sb.refresh().unwrap(),
            Refresh::Grew(grew),
            "only the new bytes are parsed"
        );
        assert_eq!(sb.refresh().unwrap(), Refresh::Unchanged);
        assert_eq!(kept.refresh(&sa.path).unwrap(), Refresh::Grew(grew));
        let full = SessionIndex::load(&sa.path).unwrap();
        assert_index_eq(&sb.current().unwrap(), &full);
        assert_index_eq(&kept, &full);
        assert_index_eq(&sa.current().unwrap(), &full);
        assert_eq!(conversation_bytes(&sb), conversation_bytes(&sa));
        assert_eq!(meta(&sb)["context_tokens"], meta(&sa)["context_tokens"]);
    }
    // And B can append too; A then sees B's entry.
    let before = file_len(&sa.path);
    append(&b, &sb, &[r#"{"role":"assistant","content":"from b"}"#]);
    let grew = file_len(&sa.path) - before;
    assert_eq!(sa.refresh().unwrap(), Refresh::Grew(grew));
    assert_index_eq(
        &sa.current().unwrap(),
        &SessionIndex::load(&sa.path).unwrap(),
    );
    assert_well_formed(&sa.path);
}

#[test]
fn a_line_written_in_pieces_is_parsed_once_complete() {
    let (_tmp, store) = temp_store();
    let (s, first) = create_simple(&store, "/w", "hi");
    assert_eq!(s.refresh().unwrap(), Refresh::Unchanged);
    let line = format!(
        "{{\"type\":\"message\",\"id\":\"0fff0000-0000-7000-8000-000000000001\",\"parent-id\":\"{first}\",\"timestamp\":\"2030-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":\"split\"}}}}\n"
    );
    let (a, b) = line.as_bytes().split_at(40);
    raw_append(&s.path, a);
    assert_eq!(
        s.refresh().unwrap(),
        Refresh::Grew(0),
        "a partial line is not parsed yet"
    );
    {
        let idx = s.current().unwrap();
        assert!(idx.torn_tail);
        assert_eq!(idx.message_count(), 1);
    }
    assert_eq!(conversation_items(&s).len(), 1);
    raw_append(&s.path, b);
    assert_eq!(s.refresh().unwrap(), Refresh::Grew(line.len() as u64));
    let full = SessionIndex::load(&s.path).unwrap();
    assert_index_eq(&s.current().unwrap(), &full);
    assert!(!full.torn_tail);
    assert_eq!(full.malformed_total(), 0);
    assert_eq!(
        conversation_items(&s)[1],
        r#"{"role":"assistant","content":"split"}"#
    );
    // The core's next append chains to the foreign entry, whose id is far in the future.
    append(&store, &s, &[r#"{"role":"user","content":"next"}"#]);
    let lines = assert_well_formed(&s.path);
    assert_eq!(lines.len(), 3);
}

#[test]
fn compaction_validity_is_the_same_incrementally() {
    // The compaction's first-kept target is parsed in an earlier refresh than the
    // compaction itself; and a compaction naming a message that arrives only later
    // stays invalid.
    let (_tmp, store) = temp_store();
    let text = format!(
        "{}{{\"type\":\"message\",\"id\":\"{}\",\"parent-id\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"a\"}}}}\n",
        header_line("inc", "/i"),
        uid(1)
    );
    let s = hand_session(
        &store,
        "--i--",
        "2026-01-01T00-00-00-000Z_inc",
        text.as_bytes(),
    );
    let mut kept = SessionIndex::load(&s.path).unwrap();
    let c_bad = format!(
        "{{\"type\":\"compaction\",\"id\":\"{}\",\"parent-id\":\"{}\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"summary\":\"bad\",\"first-kept-entry-id\":\"{}\"}}\n",
        uid(2),
        uid(1),
        uid(3)
    );
    raw_append(&s.path, c_bad.as_bytes());
    assert_eq!(
        kept.refresh(&s.path).unwrap(),
        Refresh::Grew(c_bad.len() as u64)
    );
    let m3 = format!(
        "{{\"type\":\"message\",\"id\":\"{}\",\"parent-id\":\"{}\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"b\"}}}}\n",
        uid(3),
        uid(2)
    );
    let c_good = format!(
        "{{\"type\":\"compaction\",\"id\":\"{}\",\"parent-id\":\"{}\",\"timestamp\":\"2026-01-01T00:00:03.000Z\",\"summary\":\"good\",\"first-kept-entry-id\":\"{}\"}}\n",
        uid(4),
        uid(3),
        uid(1)
    );
    raw_append(&s.path, m3.as_bytes());
    assert_eq!(
        kept.refresh(&s.path).unwrap(),
        Refresh::Grew(m3.len() as u64)
    );
    assert_eq!(kept.latest_valid_compaction, None);
    raw_append(&s.path, c_good.as_bytes());
    assert_eq!(
        kept.refresh(&s.path).unwrap(),
        Refresh::Grew(c_good.len() as u64)
    );
    let full = SessionIndex::load(&s.path).unwrap();
    assert_index_eq(&kept, &full);
    assert_eq!(full.latest_valid_compaction, Some(1));
    assert!(!full.compactions[0].is_valid());
    assert_eq!(
        conversation_items(&s),
        [
            synthetic("good"),
            r#"{"role":"user","content":"a"}"#.to_string(),
            r#"{"role":"user","content":"b"}"#.to_string()
        ]
    );
}

#[test]
fn truncation_and_replacement_reload() {
    let (_tmp, store) = temp_store();
    let (s, _) = create_simple(&store, "/w", "one");
    append(&store, &s, &[r#"{"role":"assistant","content":"two"}"#]);
    append(&store, &s, &[r#"{"role":"user","content":"three"}"#]);
    assert_eq!(conversation_items(&s).len(), 3);
    let bytes = std::fs::read(&s.path).unwrap();

    // Truncated behind our back (readers never do this; someone else might).
    let cut = bytes.len()
        - (bytes.len()
            - 1
            - bytes[..bytes.len() - 1]
                .iter()
                .rposition(|&b| b == b'\n')
                .unwrap());
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&s.path)
        .unwrap();
    f.set_len(cut as u64).unwrap();
    drop(f);
    assert_eq!(s.refresh().unwrap(), Refresh::Reloaded);
    assert_index_eq(&s.current().unwrap(), &SessionIndex::load(&s.path).unwrap());
    assert_eq!(conversation_items(&s).len(), 2);

    // Replaced by a different file (new inode) that happens to be longer.
    let mut other = bytes.clone();
    other.extend(b"garbage\n");
    let tmp = s.path.with_extension("tmp");
    std::fs::write(&tmp, &other).unwrap();
    std::fs::rename(&tmp, &s.path).unwrap();
    assert_eq!(s.refresh().unwrap(), Refresh::Reloaded);
    let full = SessionIndex::load(&s.path).unwrap();
    assert_index_eq(&s.current().unwrap(), &full);
    assert_eq!(full.malformed_lines, 1);
    assert_eq!(conversation_items(&s).len(), 3);

    // Rewritten in place at the same size (same inode, new mtime): reloaded too.
    std::thread::sleep(std::time::Duration::from_millis(30));
    let now = std::fs::read(&s.path).unwrap();
    let pos = now.windows(5).rposition(|w| w == b"three").unwrap();
    let mut edited = now.clone();
    edited[pos..pos + 5].copy_from_slice(b"THREE");
    std::fs::write(&s.path, &edited).unwrap();
    assert_eq!(file_len(&s.path), now.len() as u64);
    assert_eq!(s.refresh().unwrap(), Refresh::Reloaded);
    assert_eq!(
        conversation_items(&s)[2],
        r#"{"role":"user","content":"THREE"}"#
    );

    // An append after the reload chains to the last entry of the new file.
    append(&store, &s, &[r#"{"role":"assistant","content":"four"}"#]);
    assert_eq!(conversation_items(&s).len(), 4);
    assert_index_eq(&s.current().unwrap(), &SessionIndex::load(&s.path).unwrap());
}

#[test]
fn a_deleted_session_disappears_from_the_store() {
    let (_tmp, store) = temp_store();
    let (s, _) = create_simple(&store, "/w", "one");
    assert!(store.session(&s.namespace, &s.dir).is_ok());
    std::fs::remove_file(&s.path).unwrap();
    assert_eq!(
        err_of(store.session(&s.namespace, &s.dir)).errno,
        libc::ENOENT
    );
    assert!(err_of(s.refresh()).errno == libc::ENOENT);
    assert!(store.all_sessions().unwrap().is_empty());
    assert!(store.namespaces().unwrap().is_empty());
}
