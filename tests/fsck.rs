//! `fen-fs fsck`: hand-written transcripts with one problem each, a clean file written
//! through the core, and the real binary (exit codes, files left untouched).

use fen_fs::check::{Before, ParentRef, ProblemKind, Report, check_file, check_reader};
use fen_fs::ctl::grammar::{check_against, parse_root_line, parse_session_line};
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::store::index::SessionIndex;
use std::path::{Path, PathBuf};
use std::process::Command;

const SID: &str = "0193a000-0000-7000-8000-000000000000";

fn id(n: u32) -> String {
    format!("0193a000-0000-7000-8000-{n:012x}")
}

fn header() -> String {
    format!(
        r#"{{"type":"session","version":2,"id":"{SID}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/u/proj"}}"#
    )
}

/// An entry line with id `n` and parent `parent` (0: null), plus `fields`.
fn entry(kind: &str, n: u32, parent: u32, fields: &str) -> String {
    let parent = if parent == 0 {
        "null".to_string()
    } else {
        format!("\"{}\"", id(parent))
    };
    format!(
        r#"{{"type":"{kind}","id":"{}","parent-id":{parent},"timestamp":"2026-01-01T00:00:00.000Z"{fields}}}"#,
        id(n)
    )
}

fn msg(n: u32, parent: u32) -> String {
    entry(
        "message",
        n,
        parent,
        r#","message":{"role":"user","content":"hi"}"#,
    )
}

fn file(lines: &[String]) -> Vec<u8> {
    let mut out = String::new();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.into_bytes()
}

fn check(bytes: &[u8]) -> Report {
    check_reader(bytes, 1 << 20).unwrap()
}

/// (line, kind) of every problem and note.
fn kinds(r: &Report) -> Vec<(u64, ProblemKind)> {
    r.problems
        .iter()
        .map(|p| (p.line, p.kind.clone()))
        .collect()
}

fn assert_clean(r: &Report) {
    assert!(
        r.problems.is_empty(),
        "expected clean, got {:#?}",
        r.problems
    );
    assert!(r.is_clean());
}

#[test]
fn hand_written_clean_file() {
    let bytes = file(&[
        header(),
        msg(1, 0),
        entry(
            "message",
            2,
            1,
            r#","message":{"role":"assistant","content":"ho"}"#,
        ),
        entry("bash", 3, 2, r#","cmd":"ls""#),
        entry("title", 4, 3, r#","title":"t""#),
        entry("metadata", 5, 4, r#","data":{"k":1}"#),
        entry(
            "compaction",
            6,
            5,
            &format!(r#","summary":"s","first-kept-entry-id":"{}""#, id(2)),
        ),
        entry(
            "compaction",
            7,
            6,
            r#","summary":"s","first-kept-entry-id":null"#,
        ),
        entry(
            "compaction",
            8,
            7,
            r#","summary":"s","messages":[{"role":"user","content":"x"}]"#,
        ),
        msg(9, 8),
    ]);
    let r = check(&bytes);
    assert_clean(&r);
    assert_eq!(r.lines, 10);
    assert_eq!(r.entries, 9);
    assert_eq!(r.version, Some(2));
}

#[test]
fn malformed_lines_with_numbers_and_reasons() {
    let mut bytes = file(&[
        header(),
        msg(1, 0),
        "not json at all".into(),
        "[1,2]".into(),
        r#"{"no":"type"}"#.into(),
        r#"{"type":"message","message":{"content":"no role"}}"#.into(),
    ]);
    bytes.extend_from_slice(b"{\"type\":\"x\xff\"}\n");
    bytes.extend_from_slice(b"\0\0\0\0\n");
    bytes.extend_from_slice(&file(&[msg(2, 1)]));
    let r = check(&bytes);
    let k = kinds(&r);
    assert_eq!(k.len(), 6, "{k:#?}");
    let expect = [
        (3, "not JSON ("),
        (4, "not a JSON object (got an array)"),
        (5, "no string \"type\""),
    ];
    for (line, prefix) in expect {
        let (l, ProblemKind::Malformed(why)) = &k[line as usize - 3] else {
            panic!("{k:?}")
        };
        assert_eq!(*l, line);
        assert!(why.starts_with(prefix), "line {line}: {why}");
    }
    assert!(matches!(&k[3], (6, ProblemKind::Malformed(w)) if w.contains("role")));
    assert!(matches!(&k[4], (7, ProblemKind::Malformed(w)) if w.contains("UTF-8")));
    assert!(matches!(&k[5], (8, ProblemKind::Malformed(w)) if w.contains("4 NUL")));
    assert_eq!(r.problem_count(), 6);
    let shown = fen_fs::check::render("ns/dir", &r);
    assert!(shown.starts_with("ns/dir: 6 problems\n"), "{shown}");
    assert!(
        shown.contains("  line 3: malformed: not JSON (expected"),
        "{shown}"
    );
}

#[test]
fn nul_run_then_a_valid_entry_on_the_same_line() {
    let mut bytes = file(&[header(), msg(1, 0)]);
    bytes.extend_from_slice(&[0u8; 5000]);
    bytes.extend_from_slice(&file(&[msg(2, 1)]));
    let r = check(&bytes);
    assert_eq!(kinds(&r).len(), 1);
    assert!(matches!(&kinds(&r)[0], (3, ProblemKind::Malformed(w)) if w.contains("5000 NUL")));
    assert_eq!(r.entries, 2, "the entry after the NULs is read");
}

#[test]
fn torn_tail() {
    let mut bytes = file(&[header(), msg(1, 0)]);
    bytes.extend_from_slice(br#"{"type":"message","id":"#);
    let r = check(&bytes);
    assert_eq!(kinds(&r), vec![(3, ProblemKind::TornTail { bytes: 23 })]);
    assert_eq!(r.lines, 3);
}

#[test]
fn bom_crlf_trailing_blanks_and_blank_lines_are_fine() {
    let text = format!(
        "\u{feff}{}\r\n{} \t\r\n\n   \n{}\r\n",
        header(),
        msg(1, 0),
        msg(2, 1)
    );
    assert_clean(&check(text.as_bytes()));
    // A BOM anywhere but at the start of line 1 is not JSON.
    let text = format!("{}\n\u{feff}{}\n", header(), msg(1, 0));
    let r = check(text.as_bytes());
    assert!(
        matches!(&kinds(&r)[..], [(2, ProblemKind::Malformed(_))]),
        "{r:?}"
    );
}

#[test]
fn broken_chain() {
    let bytes = file(&[
        header(),
        msg(1, 0),
        msg(2, 1),
        msg(3, 1),  // fork: 1 is already the parent of line 3
        msg(4, 99), // names no entry
        msg(5, 2),  // names line 3, not the entry before it (line 5)
        // no parent-id; a parent-id that is a number; a second null parent
        entry("bash", 6, 0, "").replace(r#","parent-id":null"#, ""),
        entry("bash", 7, 6, "").replace(&format!("\"{}\"", id(6)), "7"),
        entry("bash", 8, 0, ""),
    ]);
    let r = check(&bytes);
    assert_eq!(
        kinds(&r),
        vec![
            (
                4,
                ProblemKind::Fork {
                    parent: Some(id(1)),
                    other_line: 3
                }
            ),
            (
                5,
                ProblemKind::BrokenChain {
                    found: ParentRef::Id(id(99)),
                    before: Before::Entry { id: id(3), line: 4 },
                    names_line: None,
                }
            ),
            (
                6,
                ProblemKind::BrokenChain {
                    found: ParentRef::Id(id(2)),
                    before: Before::Entry { id: id(4), line: 5 },
                    names_line: Some(3),
                }
            ),
            (
                7,
                ProblemKind::BrokenChain {
                    found: ParentRef::Absent,
                    before: Before::Entry { id: id(5), line: 6 },
                    names_line: None,
                }
            ),
            (
                8,
                ProblemKind::BrokenChain {
                    found: ParentRef::NotString,
                    before: Before::Entry { id: id(6), line: 7 },
                    names_line: None,
                }
            ),
            (
                9,
                ProblemKind::Fork {
                    parent: None,
                    other_line: 2
                }
            ),
        ]
    );
    let shown = fen_fs::check::render("x", &r);
    let want = format!(
        "line 6: broken chain: parent-id {} names line 3 (expected {}, the id of line 5)\n",
        id(2),
        id(4)
    );
    assert!(shown.contains(&want), "{shown}");
}

#[test]
fn first_entry_must_have_null_parent() {
    let bytes = file(&[header(), msg(1, 7)]);
    let r = check(&bytes);
    assert_eq!(
        kinds(&r),
        vec![(
            2,
            ProblemKind::BrokenChain {
                found: ParentRef::Id(id(7)),
                before: Before::Nothing,
                names_line: None,
            }
        )]
    );
}

#[test]
fn duplicate_and_decreasing_ids() {
    let bytes = file(&[
        header(),
        msg(1, 0),
        msg(5, 1),
        msg(3, 5), // smaller than 5
        msg(1, 3), // a duplicate of line 2
        msg(6, 1), // parent 1 again: also a fork of line 3's parent
    ]);
    let r = check(&bytes);
    let k = kinds(&r);
    assert_eq!(
        k[0],
        (
            4,
            ProblemKind::IdNotIncreasing {
                id: id(3),
                previous: id(5),
                previous_line: 3
            }
        )
    );
    assert_eq!(
        k[1],
        (
            5,
            ProblemKind::DuplicateId {
                id: id(1),
                first_line: 2
            }
        )
    );
    assert_eq!(
        k[2],
        (
            6,
            ProblemKind::Fork {
                parent: Some(id(1)),
                other_line: 3
            }
        )
    );
    assert_eq!(k.len(), 3, "{k:#?}");
}

#[test]
fn missing_id_in_a_v2_file() {
    let no_id = msg(2, 1).replace(&format!(r#""id":"{}","#, id(2)), "");
    let bytes = file(&[header(), msg(1, 0), no_id, msg(3, 2)]);
    let r = check(&bytes);
    // The entry after it cannot be linked: not reported.
    assert_eq!(kinds(&r), vec![(3, ProblemKind::MissingId)]);
    // Two entries with parent-id 1 are a fork, whether or not one of them has an id.
    let no_id = msg(2, 1).replace(&format!(r#""id":"{}","#, id(2)), "");
    let r = check(&file(&[header(), msg(1, 0), no_id, msg(3, 1)]));
    assert_eq!(
        kinds(&r),
        vec![
            (3, ProblemKind::MissingId),
            (
                4,
                ProblemKind::Fork {
                    parent: Some(id(1)),
                    other_line: 3
                }
            )
        ]
    );
}

#[test]
fn compactions_that_the_projection_ignores() {
    let bytes = file(&[
        header(),
        msg(1, 0),
        entry("bash", 2, 1, ""),
        entry(
            "compaction",
            3,
            2,
            &format!(r#","summary":5,"first-kept-entry-id":"{}""#, id(1)),
        ),
        entry(
            "compaction",
            4,
            3,
            &format!(r#","summary":"s","first-kept-entry-id":"{}""#, id(9)),
        ),
        entry(
            "compaction",
            5,
            4,
            &format!(r#","summary":"s","first-kept-entry-id":"{}""#, id(2)),
        ),
        entry(
            "compaction",
            6,
            5,
            r#","summary":"s","messages":[{"role":"user"},{"content":"x"}]"#,
        ),
        entry(
            "compaction",
            7,
            6,
            r#","summary":"s","messages":{"role":"user"}"#,
        ),
        entry("compaction", 8, 7, r#","summary":"s""#),
        entry(
            "compaction",
            9,
            8,
            r#","summary":"s","first-kept-entry-id":3"#,
        ),
        msg(10, 9),
        // names a message, but one after it
        entry(
            "compaction",
            11,
            10,
            &format!(r#","summary":"s","first-kept-entry-id":"{}""#, id(12)),
        ),
        msg(12, 11),
    ]);
    let r = check(&bytes);
    let k = kinds(&r);
    let lines: Vec<u64> = k.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![4, 5, 6, 7, 8, 9, 10, 12]);
    let why: Vec<String> = k
        .iter()
        .map(|(_, k)| match k {
            ProblemKind::IgnoredCompaction(w) => w.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(why[0].contains("summary"), "{}", why[0]);
    assert!(
        why[1].contains("names no message entry before"),
        "{}",
        why[1]
    );
    assert!(why[2].contains("not a message entry"), "{}", why[2]);
    assert!(why[3].contains("messages[1]"), "{}", why[3]);
    assert!(why[4].contains("not an array"), "{}", why[4]);
    assert!(
        why[5].contains("neither first-kept-entry-id nor messages"),
        "{}",
        why[5]
    );
    assert!(why[6].contains("neither a string nor null"), "{}", why[6]);
    assert!(
        why[7].contains("names no message entry before"),
        "{}",
        why[7]
    );
}

#[test]
fn version_1_files() {
    // No header, entries without ids: noted as missing header, no chain problems.
    let v1 =
        |role: &str| format!(r#"{{"type":"message","message":{{"role":"{role}","content":"x"}}}}"#);
    let r = check(&file(&[v1("user"), v1("assistant"), v1("user")]));
    assert_eq!(
        kinds(&r),
        vec![(1, ProblemKind::MissingHeader { ids: false })]
    );
    // A version-1 header: a note only, not a problem.
    let h1 = r#"{"type":"session","version":1,"id":"x","timestamp":"t","cwd":"/p"}"#.to_string();
    let r = check(&file(&[h1.clone(), v1("user"), v1("assistant")]));
    assert_eq!(kinds(&r), vec![(1, ProblemKind::Version1)]);
    assert!(r.is_clean());
    assert_eq!(r.problem_count(), 0);
    assert_eq!(r.note_count(), 1);
    let shown = fen_fs::check::render("ns/d", &r);
    assert!(shown.starts_with("ns/d: 1 note\n"), "{shown}");
    // A header without "version" is version 1 too.
    let h = r#"{"type":"session","id":"x","cwd":"/p"}"#.to_string();
    assert_eq!(
        kinds(&check(&file(&[h, v1("user")]))),
        vec![(1, ProblemKind::Version1)]
    );
    // Compactions are still checked in version 1.
    let c = r#"{"type":"compaction","summary":"s","first-kept-entry-id":"nope"}"#.to_string();
    let r = check(&file(&[h1, v1("user"), c]));
    assert!(
        matches!(&kinds(&r)[1], (3, ProblemKind::IgnoredCompaction(_))),
        "{r:?}"
    );
}

#[test]
fn headerless_file_with_ids_is_checked_as_version_2() {
    let r = check(&file(&[msg(1, 0), msg(2, 2)]));
    assert_eq!(r.version, None);
    let k = kinds(&r);
    assert_eq!(k[0], (1, ProblemKind::MissingHeader { ids: true }));
    assert!(matches!(
        k[1],
        (2, ProblemKind::Fork { .. }) | (2, ProblemKind::BrokenChain { .. })
    ));
    // Header on line 1 is malformed: both are reported.
    let r = check(&file(&["{\"type\":\"sess".into(), msg(1, 0)]));
    let k = kinds(&r);
    assert!(matches!(k[0], (1, ProblemKind::Malformed(_))));
    assert_eq!(k[1], (1, ProblemKind::MissingHeader { ids: true }));
    // An empty file has no header.
    assert_eq!(
        kinds(&check(b"")),
        vec![(1, ProblemKind::MissingHeader { ids: false })]
    );
}

#[test]
fn stray_header() {
    let r = check(&file(&[header(), msg(1, 0), header(), msg(2, 1)]));
    assert_eq!(kinds(&r), vec![(3, ProblemKind::StrayHeader)]);
}

#[test]
fn overlong_line_is_not_loaded() {
    let mut bytes = file(&[header(), msg(1, 0)]);
    bytes.extend(std::iter::repeat_n(b'x', 10_000));
    bytes.push(b'\n');
    bytes.extend_from_slice(&file(&[msg(3, 2)]));
    let r = check_reader(&bytes[..], 4096).unwrap();
    // The long line is not checked, so the link after it is not either.
    assert_eq!(kinds(&r), vec![(3, ProblemKind::TooLong { bytes: 10_000 })]);
}

/// fsck counts malformed lines (plus a torn tail) exactly as the index does.
#[test]
fn malformed_count_matches_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases: Vec<Vec<u8>> = vec![
        file(&[header(), msg(1, 0)]),
        file(&[header(), "x".into(), "[]".into(), "{}".into(), msg(1, 0)]),
    ];
    let mut c = file(&[header()]);
    c.extend_from_slice(b"\0\0{\"a\":1}\n\0\0\n\xff\xfe\n\xEF\xBB\xBF{}\n  \r\n");
    c.extend_from_slice(&file(&[msg(1, 0)]));
    c.extend_from_slice(b"{\"type\":");
    cases.push(c);
    let mut c = b"\xEF\xBB\xBF\0\0".to_vec();
    c.extend_from_slice(&file(&[header(), msg(1, 0)]));
    c.extend_from_slice(b"   ");
    cases.push(c);
    for (i, bytes) in cases.iter().enumerate() {
        let path = dir.path().join(format!("{i}.jsonl"));
        std::fs::write(&path, bytes).unwrap();
        let idx = SessionIndex::load(&path).unwrap();
        let r = check_file(&path).unwrap();
        let ours = r
            .problems
            .iter()
            .filter(|p| {
                matches!(
                    p.kind,
                    ProblemKind::Malformed(_) | ProblemKind::TornTail { .. }
                )
            })
            .count() as u64;
        assert_eq!(ours, idx.malformed_total(), "case {i}: {:#?}", r.problems);
        assert_eq!(r.entries, idx.entries, "case {i}");
    }
}

/// Writes a session through the core: header, messages, custom entries, compactions.
fn core_session(store: &Store, cwd: &str) -> PathBuf {
    let r =
        parse_root_line(format!(r#"{{"cwd":"{cwd}","role":"user","content":"hello"}}"#).as_bytes())
            .unwrap();
    let (s, first) = store
        .create_session(&r.cwd, None, &r.first, &check_against)
        .unwrap();
    let lines = [
        r#"{"role":"assistant","content":"hi"}"#.to_string(),
        r#"{"type":"bash","cmd":"ls","output":"a\nb"}"#.to_string(),
        r#"{"type":"title","title":"greeting"}"#.to_string(),
        r#"{"type":"metadata","data":{"model":"m"}}"#.to_string(),
        format!(r#"{{"type":"compaction","summary":"said hi","first-kept-entry-id":"{first}"}}"#),
        r#"{"type":"compaction","summary":"s","messages":[{"role":"user","content":"r"}]}"#
            .to_string(),
        r#"{"role":"user","content":"more"}"#.to_string(),
    ];
    for l in &lines {
        let e = parse_session_line(l.as_bytes()).unwrap();
        s.append(&[e], &check_against, store.append).unwrap();
    }
    let batch: Vec<_> = (0..3)
        .map(|i| {
            parse_session_line(format!(r#"{{"role":"user","content":"b{i}"}}"#).as_bytes()).unwrap()
        })
        .collect();
    s.append(&batch, &check_against, store.append).unwrap();
    s.path.clone()
}

#[test]
fn a_file_written_by_the_core_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store"), FsyncMode::No).unwrap();
    let path = core_session(&store, "/home/u/proj");
    let r = check_file(&path).unwrap();
    assert_clean(&r);
    assert_eq!(r.entries, 11);
    assert_eq!(r.version, Some(2));
}

#[test]
fn symlinks_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.jsonl");
    std::fs::write(&target, file(&[header(), msg(1, 0)])).unwrap();
    let link = dir.path().join("l.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(check_file(&target).is_ok());
    assert!(check_file(&link).is_err());
    assert!(check_file(dir.path()).is_err());
}

fn fsck(store: &Path, session: Option<&str>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fen-fs"));
    cmd.arg("fsck")
        .arg("--store")
        .arg(store)
        .env_remove("FEN_FS_STORE");
    if let Some(s) = session {
        cmd.arg(s);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every file's bytes and mtime under `root`.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    for ns in std::fs::read_dir(root).unwrap() {
        let ns = ns.unwrap().path();
        if !ns.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&ns).unwrap() {
            let p = f.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            out.push((p.clone(), std::fs::read(&p).unwrap(), m.modified().unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn binary_exit_codes_and_files_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let store = Store::open(&root, FsyncMode::No).unwrap();
    let clean = core_session(&store, "/home/u/proj");
    core_session(&store, "/home/u/other");

    let (code, out, err) = fsck(&root, None);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, "checked 2 sessions, 0 with problems\n");

    // An empty store is clean; a missing one is an error naming it (a mistyped
    // --store must not look like an empty store).
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let (code, out, _) = fsck(&dir.path().join("empty"), None);
    assert_eq!(
        (code, out.as_str()),
        (0, "checked 0 sessions, 0 with problems\n")
    );
    let (code, _, err) = fsck(&dir.path().join("nothing"), None);
    assert_eq!(code, 1);
    assert!(err.contains("no fen-fs store at"), "{err}");

    // A session written by hand with problems, plus a torn tail.
    let ns = root.join("--home-u-broken--");
    std::fs::create_dir(&ns).unwrap();
    let broken = ns.join(format!("2026-01-01T00-00-00-000Z_{SID}.jsonl"));
    let mut bytes = file(&[header(), msg(1, 0), "oops".into(), msg(2, 7)]);
    bytes.extend_from_slice(b"{\"type\"");
    std::fs::write(&broken, &bytes).unwrap();
    let before = snapshot(&root);

    let (code, out, err) = fsck(&root, None);
    assert_eq!(code, 1, "{out}{err}");
    let dir_name = broken.file_stem().unwrap().to_str().unwrap();
    let expected_head = format!("--home-u-broken--/{dir_name}: 3 problems\n");
    assert!(out.starts_with(&expected_head), "{out}");
    assert!(
        out.contains("  line 3: malformed: not JSON (expected value at line 1 column 1)\n"),
        "{out}"
    );
    assert!(out.contains("  line 4: broken chain: parent-id "), "{out}");
    assert!(
        out.contains("  line 5: torn tail: 7 bytes without a final newline\n"),
        "{out}"
    );
    assert!(
        out.ends_with("checked 3 sessions, 1 with problems\n"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 5, "{out}");

    // One session: by id prefix, by path.
    let (code, out, _) = fsck(&root, Some(&SID[..13]));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.ends_with("checked 1 session, 1 with problems\n"),
        "{out}"
    );
    let (code, out, _) = fsck(&root, Some(clean.to_str().unwrap()));
    assert_eq!(
        (code, out.as_str()),
        (0, "checked 1 session, 0 with problems\n")
    );
    let (code, _, err) = fsck(&root, Some("no-such-session"));
    assert_eq!(code, 1);
    assert!(err.contains("no session matches"), "{err}");

    assert_eq!(snapshot(&root), before, "fsck changed the store");
}

#[test]
fn binary_v1_note_is_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let ns = dir.path().join("--p--");
    std::fs::create_dir_all(&ns).unwrap();
    let f = ns.join("2026-01-01T00-00-00-000Z_old.jsonl");
    std::fs::write(
        &f,
        "{\"type\":\"session\",\"version\":1,\"id\":\"old\",\"cwd\":\"/p\"}\n\
         {\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n",
    )
    .unwrap();
    let (code, out, err) = fsck(dir.path(), None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("--p--/2026-01-01T00-00-00-000Z_old: 1 note\n  line 1: note: version-1"),
        "{out}"
    );
    assert!(
        out.ends_with("checked 1 session, 0 with problems\n"),
        "{out}"
    );
}
