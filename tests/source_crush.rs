//! The Crush reader, built from Crush's public source (no installable build here):
//! databases made with the tables its migrations create (tests/crush_support), found
//! through `projects.json` and under a searched folder, read strictly read-only.

mod crush_support;

use fen_fs::sources::crush::{CrushReader, CrushUnits, to_neutral, usage::CrushUsage};
use fen_fs::sources::foreign::*;
use fen_fs::sources::units::UnitSource;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under `dir` with its bytes and mtime.
fn state(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(
                    e.path(),
                    (std::fs::read(e.path()).unwrap(), m.modified().unwrap()),
                );
            }
        }
    }
    out
}

fn read(units: &CrushUnits, key: &Path) -> (ForeignSummary, Vec<Value>, Vec<u8>) {
    let bytes = units.dump(key).unwrap().bytes;
    let mut r = CrushReader::new();
    let tail = feed_all(&mut r, &bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    (r.summary(tail), conv, bytes)
}

#[test]
fn sessions_read_from_the_summary_on_without_touching_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    // One project registered in projects.json, one found under a searched folder.
    let registered = tmp.path().join("work/registered");
    let searched = tmp.path().join("search/deep/found");
    let _a = crush_support::project_with_sessions(&registered);
    let _b = crush_support::project_with_sessions(&searched);
    let global = tmp.path().join("global");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        global.join("projects.json"),
        json!({"projects": [{"path": registered, "data_dir": ".crush",
                             "last_accessed": "2026-11-27T10:00:00Z"}]})
        .to_string(),
    )
    .unwrap();
    let before = (state(&registered), state(&searched));
    let units = CrushUnits::new(&global, vec![tmp.path().join("search")]);
    let list = units.list();
    assert_eq!(list.len(), 4, "{list:?}");
    let root_key = registered.join(".crush/crush.db/s-root");
    let info = list.iter().find(|u| u.key == root_key).unwrap();
    assert_eq!(info.cwd.as_deref(), registered.to_str());
    let (s, conv, dump) = read(&units, &root_key);
    assert_eq!(s.id, "s-root");
    assert_eq!(s.title.as_deref(), Some("Fix the flux capacitor"));
    assert_eq!(s.preview.as_deref(), Some("please fix quasar_widget"));
    assert_eq!(s.cwd.as_deref(), registered.to_str());
    assert!(s.resumable && s.listed);
    assert_eq!(s.compactions, 1);
    assert_eq!(s.created_at.as_deref(), Some("2026-09-21T14:13:20+00:00"));
    // From the summary on, the summary as a user message.
    assert_eq!(conv.len(), 2);
    assert_eq!(conv[0]["id"], "m5");
    assert_eq!(conv[0]["role"], "user");
    assert_eq!(conv[1]["parts"][0]["data"]["text"], "and now the tests");
    // Before the summary: still searchable, out of the conversation.
    let mut r = CrushReader::new();
    let tail = feed_all(&mut r, &dump);
    let all = r.messages(tail, true);
    assert_eq!(all.len(), 6);
    assert!(!all[1].in_conversation && all[4].summary);
    let call = to_neutral(&serde_json::from_slice(&render_message(&all[1].pieces, &dump)).unwrap())
        .unwrap();
    assert!(format!("{:?}", call.parts).contains("ToolCall"));
    // The child session: a session of its own, which Crush does not list.
    let (child, _, _) = read(&units, &registered.join(".crush/crush.db/s-child"));
    assert_eq!(child.parent_id.as_deref(), Some("s-root"));
    assert!(!child.listed);
    // Usage: the session's totals and Crush's cost.
    let mut u = CrushUsage::new(Default::default());
    let out = fen_fs::usage_record::read_all(&mut u, &dump);
    assert_eq!(out.records.len(), 1);
    assert_eq!(
        (out.records[0].tokens.input, out.records[0].tokens.output),
        (1200, 300)
    );
    assert_eq!(out.records[0].recorded_cost, Some(0.0125));
    assert_eq!(out.records[0].model.as_deref(), Some("gpt-4o"));
    // Nothing in the projects' folders changed: no -shm, no lock, no checkpoint.
    assert!(
        before == (state(&registered), state(&searched)),
        "the databases' folders changed"
    );
}

#[test]
fn a_new_message_shows_and_a_broken_database_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("p");
    let db = crush_support::project_with_sessions(&project);
    // A database that is none (the folder walk finds both at once).
    let broken = tmp.path().join("q/.crush/crush.db");
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(&broken, b"not a database at all, just some bytes").unwrap();
    let units = CrushUnits::new(&tmp.path().join("global"), vec![tmp.path().to_path_buf()]);
    let listed = units.list();
    let key = project.join(".crush/crush.db/s-root");
    assert!(listed.iter().any(|u| u.key == key), "{listed:?}");
    let sig = units.signature(&key).unwrap();
    db.message(
        "m7",
        "s-root",
        "assistant",
        crush_support::Db::text("assistant", "tests pass"),
        1_790_000_010,
    );
    assert_ne!(
        units.signature(&key).unwrap(),
        sig,
        "a new row changes the signature"
    );
    let (_, conv, _) = read(&units, &key);
    assert_eq!(conv.len(), 3);
    let list = units.list();
    let bad = list.iter().find(|u| u.key.starts_with(&broken)).unwrap();
    let (s, conv, _) = read(&units, &bad.key);
    assert!(!s.resumable && conv.is_empty());
    assert!(s.not_resumable_reason.unwrap().contains("cannot be read"));
}
