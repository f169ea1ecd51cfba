//! Several processes (and several independent stores inside one process) append to one
//! session file at once: `flock` + one `write(2)` per batch keep every line whole, the
//! parent chain linear, ids strictly increasing, and nothing lost.
//!
//! The child processes are this test binary itself, re-run with `--exact
//! child_writer` and `FEN_CORE_CHILD_*` variables telling it to act as a writer.

mod core_support;

use core_support::*;
use fen_fs::ctl::grammar::{check_against, parse_session_line};
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::store::index::SessionIndex;
use serde_json::Value;
use std::collections::HashMap;
use std::process::{Command, Stdio};

const CHILDREN: usize = 3;
const THREADS: usize = 1;

/// Batches per writer; `FEN_CORE_STRESS_BATCHES` raises it for a heavier run (the
/// children inherit the variable, so parent and children agree).
fn batches() -> usize {
    std::env::var("FEN_CORE_STRESS_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// Batch `b` of writer `who`: 1 to 3 entries (a custom entry now and then), every
/// message tagged with its writer, batch and position so the parent can check them.
fn batch_lines(who: &str, b: usize) -> Vec<String> {
    let n = b % 3 + 1;
    (0..n)
        .map(|k| {
            if k == 1 && b.is_multiple_of(2) {
                format!(r#"{{"type":"progress","who":"{who}","batch":{b},"k":{k}}}"#)
            } else {
                format!(r#"{{"role":"user","content":"x","who":"{who}","batch":{b},"k":{k}}}"#)
            }
        })
        .collect()
}

fn entries_per_writer() -> usize {
    (0..batches()).map(|b| b % 3 + 1).sum()
}

fn write_batches(store: &Store, path: &str, who: &str) {
    let s = store.resolve(path).expect("resolve session path");
    for b in 0..batches() {
        let entries: Vec<_> = batch_lines(who, b)
            .iter()
            .map(|l| parse_session_line(l.as_bytes()).unwrap())
            .collect();
        let ids = s
            .append(&entries, &check_against, store.append)
            .expect("append");
        assert_eq!(ids.len(), entries.len());
    }
}

/// Runs only as a child of `processes_and_threads_append_to_one_file`.
#[test]
fn child_writer() {
    let Ok(path) = std::env::var("FEN_CORE_CHILD_PATH") else {
        return;
    };
    let root = std::env::var("FEN_CORE_CHILD_ROOT").unwrap();
    let who = std::env::var("FEN_CORE_CHILD_WHO").unwrap();
    let store = Store::open(root, FsyncMode::No).unwrap();
    write_batches(&store, &path, &who);
}

#[test]
fn processes_and_threads_append_to_one_file() {
    let (tmp, store) = temp_store();
    let (s, first) = create_simple(&store, "/shared", "start");
    let path = s.path.to_str().unwrap().to_string();
    let exe = std::env::current_exe().unwrap();

    let children: Vec<_> = (0..CHILDREN)
        .map(|i| {
            Command::new(&exe)
                .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
                .env("FEN_CORE_CHILD_PATH", &path)
                .env("FEN_CORE_CHILD_ROOT", &store.root)
                .env("FEN_CORE_CHILD_WHO", format!("p{i}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn child writer")
        })
        .collect();
    // Meanwhile, threads of this process append through their own Store instances
    // (separate descriptors, so only flock keeps them apart) and one shared Session.
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let root = tmp.path().join("store");
            let path = &path;
            scope.spawn(move || {
                let own = Store::open(root, FsyncMode::No).unwrap();
                write_batches(&own, path, &format!("t{t}"));
            });
        }
        let (store, s) = (&store, &s);
        scope.spawn(move || {
            for b in 0..batches() {
                let lines = batch_lines("shared", b);
                let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
                append(store, s, &refs);
            }
        });
    });
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child {i} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "child {i} ran its writer test"
        );
    }

    // Every line parses (no interleaving), one linear chain, ids strictly increasing.
    let entries = assert_well_formed(&s.path);
    let writers = CHILDREN + THREADS + 1;
    assert_eq!(
        entries.len(),
        1 + writers * entries_per_writer(),
        "no entry lost or doubled"
    );
    assert_eq!(entries[0]["id"], first.as_str());

    // Each batch is contiguous and in order; each writer's batches are in order.
    let mut next_batch: HashMap<String, usize> = HashMap::new();
    let mut i = 1;
    while i < entries.len() {
        let e = &entries[i];
        let tag = if e["type"] == "message" {
            &e["message"]
        } else {
            e
        };
        let who = tag["who"].as_str().unwrap().to_string();
        let b = tag["batch"].as_u64().unwrap() as usize;
        let expected_b = next_batch.entry(who.clone()).or_default();
        assert_eq!(b, *expected_b, "{who}'s batches in order");
        *expected_b += 1;
        let lines = batch_lines(&who, b);
        for (k, line) in lines.iter().enumerate() {
            let e = &entries[i + k];
            let want: Value = serde_json::from_str(line).unwrap();
            let got = if e["type"] == "message" {
                e["message"].clone()
            } else {
                let mut o = e.as_object().unwrap().clone();
                for r in ["id", "parent-id", "timestamp"] {
                    o.remove(r);
                }
                Value::Object(o)
            };
            assert_eq!(got, want, "batch {who}/{b} is contiguous");
        }
        i += lines.len();
    }
    assert_eq!(next_batch.len(), writers);
    assert!(next_batch.values().all(|&n| n == batches()));

    // The views agree with the file.
    let full = SessionIndex::load(&s.path).unwrap();
    assert_index_eq(&s.current().unwrap(), &full);
    assert_eq!(full.malformed_total(), 0);
    assert!(full.ids_monotonic);
    let msgs = entries.iter().filter(|e| e["type"] == "message").count();
    assert_eq!(conversation_items(&s).len(), msgs);
}
