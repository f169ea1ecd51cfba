//! Races found in review: concurrent renders of index.json, concurrent claims of one
//! session-id, and a handle that reads the log before it writes.

mod support;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Readers render index.json while files are created and deleted behind the mount's
/// back; once that stops, index.json lists exactly the files that remain.
#[test]
fn index_json_converges_under_concurrent_renders() {
    let Some(m) = support::Mount::with_args("index_json_converges", &["--fsync", "no"]) else {
        return;
    };
    let s = m.create_session("/home/u/race", "first");
    let ns = s.parent().unwrap().to_path_buf();
    let ns_store = m.backing_namespace(&ns);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (stop, index) = (stop.clone(), ns.join("index.json"));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::fs::read(&index);
                }
            })
        })
        .collect();
    for i in 0..60 {
        let path = ns_store.join(format!(
            "2030-01-01T00-00-{:02}-000Z_race-{i}.jsonl",
            i % 60
        ));
        std::fs::write(
            &path,
            format!("{{\"type\":\"session\",\"version\":2,\"id\":\"race-{i}\",\"timestamp\":\"2030-01-01T00:00:00.000Z\",\"cwd\":\"/home/u/race\"}}\n"),
        )
        .unwrap();
        if i % 3 == 0 {
            std::fs::remove_file(&path).unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    let list: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ns.join("index.json")).unwrap()).unwrap();
    let mut listed: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["dir"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(&ns_store)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".jsonl")
                .map(String::from)
        })
        .collect();
    on_disk.sort();
    assert_eq!(listed, on_disk);
}

/// Eight creators racing for one session-id: exactly one wins, the rest get EEXIST.
#[test]
fn one_session_id_one_session() {
    let Some(m) = support::Mount::new("one_session_id_one_session") else {
        return;
    };
    let ctl = m.path("ctl");
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let replies: Vec<String> = (0..8)
        .map(|i| {
            let (ctl, barrier) = (ctl.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().read(true).write(true).open(&ctl).unwrap();
                barrier.wait();
                let _ = f.write_all(
                    format!("{{\"cwd\":\"/r{i}\",\"session-id\":\"dup\",\"role\":\"user\",\"content\":\"{i}\"}}\n").as_bytes(),
                );
                let mut reply = String::new();
                f.read_to_string(&mut reply).unwrap();
                reply
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let oks = replies.iter().filter(|r| r.starts_with("ok ")).count();
    assert_eq!(oks, 1, "{replies:?}");
    assert!(
        replies
            .iter()
            .filter(|r| !r.starts_with("ok "))
            .all(|r| r.starts_with("err EEXIST")),
        "{replies:?}"
    );
    let files = support::session_files(&m.store);
    assert_eq!(
        files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with("_dup.jsonl"))
            .count(),
        1
    );
}

/// A handle that first reads the log, then writes, reads its own reply.
#[test]
fn reply_after_reading_the_log() {
    let Some(m) = support::Mount::new("reply_after_reading_the_log") else {
        return;
    };
    let s = m.create_session("/home/u/log", "first");
    support::ctl_ok(&s, r#"{"role":"assistant","content":"fill the log"}"#);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.join("ctl"))
        .unwrap();
    let mut log = vec![0u8; 4096];
    let n = f.read(&mut log).unwrap();
    assert!(n > 0 && String::from_utf8_lossy(&log[..n]).contains("pid="));
    f.write_all(b"{\"role\":\"user\",\"content\":\"mine\"}\n")
        .unwrap();
    let mut reply = String::new();
    f.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("ok "), "{reply:?}");
    assert_eq!(reply.lines().count(), 1, "{reply:?}");
}
