//! The persisted index of a large session (`.fen-cache/index/…`): a remount uses it,
//! and what was appended meanwhile behind the mount's back still shows, exactly as a
//! from-scratch parse shows it.

mod support;
use std::io::Write;

fn show(store: &std::path::Path, file: &std::path::Path, view: &str) -> Vec<u8> {
    // A session file path is parsed from scratch (no store, no cache).
    let out = support::fen_fs()
        .args(["show", "--view", view])
        .arg(file)
        .env("FEN_FS_STORE", store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::out_text(&out));
    out.stdout
}

#[test]
fn remount_uses_the_persisted_index_and_sees_later_appends() {
    let Some(m) = support::Mount::with_args("remount_uses_the_persisted_index", &["--fsync", "no"])
    else {
        return;
    };
    let s = m.create_session("/home/u/big", "start");
    let big = "x".repeat(64 * 1024);
    for i in 0..24 {
        support::ctl_ok(&s, &format!(r#"{{"role":"tool","content":"{i} {big}"}}"#));
    }
    let first = support::ctl_ok(&s, r#"{"role":"user","content":"keep from here"}"#);
    support::ctl_ok(
        &s,
        &format!(r#"{{"type":"compaction","summary":"big","first-kept-entry-id":"{first}"}}"#),
    );
    let backing = m.backing_file(&s);
    assert!(std::fs::metadata(&backing).unwrap().len() > 1 << 20);
    let before = std::fs::read(s.join("conversation.json")).unwrap();
    assert_eq!(before, show(&m.store, &backing, "conversation"));

    let out = m.umount();
    assert!(out.status.success(), "{}", support::out_text(&out));
    let ns = m.backing_namespace(s.parent().unwrap());
    let ns = ns.file_name().unwrap();
    let dir = s.file_name().unwrap().to_string_lossy().to_string();
    let cache = m
        .store
        .join(".fen-cache/index")
        .join(ns)
        .join(format!("{dir}.idx"));
    assert!(cache.exists(), "no persisted index at {}", cache.display());

    // Behind the mount's back, while unmounted: one more entry.
    let last_id = support::last_id(&backing);
    let next = uuid::Uuid::now_v7();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&backing)
        .unwrap();
    writeln!(f, "{{\"type\":\"message\",\"id\":\"{next}\",\"parent-id\":\"{last_id}\",\"timestamp\":\"2026-11-21T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"while unmounted\"}}}}").unwrap();
    drop(f);

    m.mount();
    let after = std::fs::read(s.join("conversation.json")).unwrap();
    assert_eq!(after, show(&m.store, &backing, "conversation"));
    assert!(String::from_utf8_lossy(&after).contains("while unmounted"));
    let meta = support::meta(&s);
    assert_eq!(meta["messages"], 27);
    assert_eq!(meta["last_entry_id"], next.to_string());

    // A damaged cache is ignored, not trusted.
    m.umount();
    std::fs::write(&cache, b"not an index").unwrap();
    m.mount();
    assert_eq!(std::fs::read(s.join("conversation.json")).unwrap(), after);
}
