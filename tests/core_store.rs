//! The store's layout (SPEC §1): names, modes, what is ignored; `resolve` and
//! `cli::list` over sessions written through the core.

mod core_support;

use core_support::*;
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::store::naming::{is_valid_session_id, slug, stamp};
use fen_fs::views::listing::{Listing, render_json};
use std::os::unix::fs::PermissionsExt;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn modes_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("deep/er/store");
    let store = Store::open(&root, FsyncMode::No).unwrap();
    assert_eq!(mode(&root), 0o700, "store folder is 0700");
    let (s, _) = create_simple(&store, "/home/u/proj", "secret");
    assert_eq!(
        mode(&root.join("--home-u-proj--")),
        0o700,
        "namespace folder"
    );
    assert_eq!(mode(&s.path), 0o600, "session files are 0600");
    append(&store, &s, &[r#"{"role":"assistant","content":"x"}"#]);
    assert_eq!(mode(&s.path), 0o600);
    // Re-opening an existing store changes nothing.
    let again = Store::open(&root, FsyncMode::Always).unwrap();
    assert_eq!(again.all_sessions().unwrap().len(), 1);
    assert_eq!(mode(&root), 0o700);
}

#[test]
fn layout_and_names() {
    assert_eq!(slug("/home/u/proj"), "--home-u-proj--");
    assert_eq!(slug("/"), "----");
    assert_eq!(slug("/a-b"), slug("/a/b"));
    assert_eq!(slug("/x:y\\z"), "--x-y-z--");
    assert_eq!(
        slug("//double"),
        "---double--",
        "only one leading slash is stripped"
    );
    let t = chrono::DateTime::parse_from_rfc3339("2026-11-21T14:03:11.123Z")
        .unwrap()
        .to_utc();
    assert_eq!(stamp(t), "2026-11-21T14-03-11-123Z");
    assert!(is_valid_session_id("A-z_0"));
    assert!(!is_valid_session_id("a.b"));

    let (_tmp, store) = temp_store();
    let (s, _) = create_simple(&store, "/", "root cwd");
    assert_eq!(s.namespace, "----");
    assert_eq!(
        s.path,
        store.root.join("----").join(format!("{}.jsonl", s.dir))
    );
    let (dir_stamp, id) = s.dir.split_once('_').unwrap();
    assert_eq!(id, s.session_id());
    assert_eq!(dir_stamp.len(), 24);
    assert!(dir_stamp.ends_with('Z'));
    // The header keeps the real cwd even though the slug is lossy.
    let (a, _) = create_simple(&store, "/a-b", "dash");
    let (b, _) = create_simple(&store, "/a/b", "slash");
    assert_eq!(a.namespace, b.namespace);
    assert_eq!(a.current().unwrap().cwd(), Some("/a-b"));
    assert_eq!(b.current().unwrap().cwd(), Some("/a/b"));
    assert_eq!(store.namespaces().unwrap(), ["----", "--a-b--"]);
    let mut dirs = vec![a.dir.clone(), b.dir.clone()];
    dirs.sort();
    assert_eq!(store.session_dirs("--a-b--").unwrap(), dirs);
}

#[test]
fn the_store_ignores_what_is_not_a_session() {
    let (_tmp, store) = temp_store();
    let (s, _) = create_simple(&store, "/p", "real");
    let ns = store.root.join(&s.namespace);
    std::fs::write(ns.join("notes.txt"), "x").unwrap();
    std::fs::write(ns.join(".jsonl"), "x").unwrap();
    std::fs::create_dir(ns.join("sub.jsonl")).unwrap();
    std::fs::create_dir(store.root.join("--empty--")).unwrap();
    std::fs::create_dir(store.root.join("--only-junk--")).unwrap();
    std::fs::write(store.root.join("--only-junk--/a.json"), "[]").unwrap();
    std::fs::write(store.root.join("stray.jsonl"), "{}\n").unwrap();
    // Symbolic links are never followed: neither to files nor to folders.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("t.jsonl");
    std::fs::write(&target, header_line("evil", "/evil")).unwrap();
    std::os::unix::fs::symlink(&target, ns.join("2026-01-01T00-00-00-000Z_evil.jsonl")).unwrap();
    std::os::unix::fs::symlink(outside.path(), store.root.join("--linked--")).unwrap();

    assert_eq!(
        store.namespaces().unwrap(),
        std::slice::from_ref(&s.namespace)
    );
    assert_eq!(
        store.session_dirs(&s.namespace).unwrap(),
        std::slice::from_ref(&s.dir)
    );
    assert_eq!(store.all_sessions().unwrap().len(), 1);
    assert_eq!(
        err_of(store.session(&s.namespace, "2026-01-01T00-00-00-000Z_evil")).errno,
        libc::ENOENT
    );
    assert!(store.session_dirs("--linked--").is_err());
    // `has_sessions` stops at the first session file; only a real one counts.
    let fakes = store.root.join("--fakes--");
    std::fs::create_dir(&fakes).unwrap();
    std::fs::write(fakes.join(".jsonl"), "x").unwrap();
    std::fs::create_dir(fakes.join("sub.jsonl")).unwrap();
    std::os::unix::fs::symlink(&target, fakes.join("link.jsonl")).unwrap();
    for ns in [
        "--fakes--",
        "--empty--",
        "--only-junk--",
        "--linked--",
        "--none--",
    ] {
        assert!(!store.has_sessions(ns), "{ns}");
    }
    assert!(store.has_sessions(&s.namespace));
    assert_eq!(
        store.namespaces().unwrap(),
        std::slice::from_ref(&s.namespace)
    );
    assert_eq!(err_of(store.resolve("evil")).errno, libc::ENOENT);
    let link = ns.join("2026-01-01T00-00-00-000Z_evil.jsonl");
    assert_eq!(
        err_of(store.resolve(link.to_str().unwrap())).errno,
        libc::ENOENT
    );
    assert_eq!(fen_fs::commands::list::list(&store, None).unwrap().len(), 1);
    // Creating a session never writes through a symlinked namespace.
    let e = err_of(store.create_session(
        "/linked",
        None,
        &fen_fs::ctl::grammar::parse_session_line(br#"{"role":"user","content":"x"}"#).unwrap(),
        &fen_fs::ctl::grammar::check_against,
    ));
    assert_ne!(e.errno, 0);
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        1,
        "nothing written outside"
    );
}

#[test]

fn list_by_cwd_with_a_symlinked_namespace_is_empty() {
    let (_tmp, store) = temp_store();
    create_simple(&store, "/p", "real");
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), store.root.join("--linked--")).unwrap();
    assert!(
        fen_fs::commands::list::list(&store, Some("/linked"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn resolve_by_id_prefix_dir_and_path() {
    let (_tmp, store) = temp_store();
    let (a, _) = create(
        &store,
        r#"{"cwd":"/r","session-id":"alpha-1","role":"user","content":"a"}"#,
    );
    let (b, _) = create(
        &store,
        r#"{"cwd":"/r","session-id":"alpha-2","role":"user","content":"b"}"#,
    );
    let (c, _) = create(
        &store,
        r#"{"cwd":"/elsewhere","session-id":"beta","role":"user","content":"c"}"#,
    );
    let (u1, _) = create_simple(&store, "/r", "uuid one");
    let (u2, _) = create_simple(&store, "/r", "uuid two");

    let same = |x: &fen_fs::store::session::Session, y: &fen_fs::store::session::Session| {
        assert_eq!(x.path, y.path);
        assert_eq!(x.dir, y.dir);
        assert_eq!(x.namespace, y.namespace);
    };
    same(&store.resolve("alpha-1").unwrap(), &a);
    same(&store.resolve("alpha-2").unwrap(), &b);
    same(&store.resolve("bet").unwrap(), &c);
    same(&store.resolve("b").unwrap(), &c);
    let e = err_of(store.resolve("alpha"));
    assert_eq!(
        e.errno,
        libc::EINVAL,
        "an ambiguous prefix is EINVAL: {}",
        e.reason
    );
    assert_eq!(err_of(store.resolve("gamma")).errno, libc::ENOENT);

    // UUID ids: the full id, a unique prefix, and a prefix both share.
    let (i1, i2) = (u1.session_id().to_string(), u2.session_id().to_string());
    same(&store.resolve(&i1).unwrap(), &u1);
    let common = i1
        .chars()
        .zip(i2.chars())
        .take_while(|(x, y)| x == y)
        .count();
    same(&store.resolve(&i1[..common + 1]).unwrap(), &u1);
    same(&store.resolve(&i2[..common + 1]).unwrap(), &u2);
    if common > 0 {
        assert_eq!(err_of(store.resolve(&i1[..common])).errno, libc::EINVAL);
    }
    // The folder name and a file path.
    same(&store.resolve(&u2.dir).unwrap(), &u2);
    let by_path = store.resolve(u1.path.to_str().unwrap()).unwrap();
    same(&by_path, &u1);
    assert_eq!(
        conversation_items(&by_path),
        [r#"{"role":"user","content":"uuid one"}"#]
    );
    assert_eq!(
        err_of(store.resolve("/no/such/file.jsonl")).errno,
        libc::ENOENT
    );
    assert_eq!(
        err_of(store.resolve(store.root.to_str().unwrap())).errno,
        libc::ENOENT
    );
}

#[test]
fn list_newest_first_and_by_cwd() {
    let (_tmp, store) = temp_store();
    let (a, _) = create_simple(&store, "/a-b", "first session");
    std::thread::sleep(std::time::Duration::from_millis(3));
    let (b, _) = create_simple(&store, "/a/b", "second session");
    std::thread::sleep(std::time::Duration::from_millis(3));
    let (c, _) = create_simple(&store, "/c", "third session");
    std::thread::sleep(std::time::Duration::from_millis(3));
    append(
        &store,
        &a,
        &[
            r#"{"type":"title","title":"A title"}"#,
            r#"{"role":"assistant","content":"x"}"#,
        ],
    );

    let all = fen_fs::commands::list::list(&store, None).unwrap();
    let dirs: Vec<&str> = all.iter().map(|l| l.dir.as_str()).collect();
    assert_eq!(
        dirs,
        [a.dir.as_str(), c.dir.as_str(), b.dir.as_str()],
        "newest update first"
    );
    let la = &all[0];
    assert_eq!(la.id, a.session_id());
    assert_eq!(la.cwd.as_deref(), Some("/a-b"));
    assert_eq!(la.title.as_deref(), Some("A title"));
    assert_eq!(la.preview.as_deref(), Some("first session"));
    assert_eq!(la.messages, 2);
    let m = meta(&a);
    assert_eq!(la.created_at.as_deref(), m["created_at"].as_str());
    assert_eq!(la.updated_at.as_deref(), m["updated_at"].as_str());
    assert_eq!(all[1].title, None);
    assert_eq!(all[1].messages, 1);

    // Only sessions whose header cwd matches, although /a-b and /a/b share a folder.
    let ab = fen_fs::commands::list::list(&store, Some("/a/b")).unwrap();
    assert_eq!(ab.len(), 1);
    assert_eq!(ab[0].dir, b.dir);
    assert_eq!(
        fen_fs::commands::list::list(&store, Some("/a-b")).unwrap()[0].dir,
        a.dir
    );
    assert!(
        fen_fs::commands::list::list(&store, Some("/nowhere"))
            .unwrap()
            .is_empty()
    );

    // index.json / list --json: an array, one object per line, round-trips.
    let json = render_json(&all);
    let text = std::str::from_utf8(&json).unwrap();
    assert!(text.starts_with("[\n") && text.ends_with("\n]\n"));
    assert_eq!(text.lines().count(), all.len() + 2);
    let back: Vec<Listing> = serde_json::from_slice(&json).unwrap();
    assert_eq!(back, all);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let keys: Vec<&String> = v[0].as_object().unwrap().keys().collect();
    for k in [
        "dir",
        "id",
        "cwd",
        "title",
        "preview",
        "created_at",
        "updated_at",
        "messages",
    ] {
        assert!(keys.iter().any(|x| *x == k), "index.json lacks {k}");
    }
    assert_eq!(render_json::<fen_fs::views::listing::Listing>(&[]), b"[]\n");
}

#[test]
fn preview_is_the_first_user_message_on_one_line() {
    let (_tmp, store) = temp_store();
    let long = "word ".repeat(60);
    let (s, _) = create(
        &store,
        r#"{"cwd":"/p","role":"system","content":"you are helpful"}"#,
    );
    append(
        &store,
        &s,
        &[&format!(
            r#"{{"role":"user","content":[{{"type":"text","text":"Line one\nline two"}},{{"type":"text","text":{}}}]}}"#,
            q(&long)
        )],
    );
    append(&store, &s, &[r#"{"role":"user","content":"later"}"#]);
    let p = meta(&s)["preview"].as_str().unwrap().to_string();
    assert!(p.starts_with("Line one line two word word"), "{p}");
    assert!(!p.contains('\n'));
    assert!(p.chars().count() <= 120, "{}", p.chars().count());
    assert!(p.ends_with('…'));
}

/// A namespace of many sessions no cache has seen is listed on a few threads: each
/// listing is its own session's, in the order of their updates, and a listing after
/// a few changed is the same as one of a store read afresh.
#[test]
fn a_big_namespace_lists_each_session_as_written() {
    let (_tmp, store) = temp_store();
    let mut made = Vec::new();
    for i in 0..40 {
        let (s, _) = create_simple(&store, "/big", &format!("session {i}"));
        let mut lines = vec![format!(r#"{{"type":"title","title":"Title {i}"}}"#)];
        for k in 0..(i % 5) {
            lines.push(format!(r#"{{"role":"assistant","content":"reply {k}"}}"#));
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        append(&store, &s, &lines);
        made.push(s);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let check = |all: &[Listing], changed: &[usize]| {
        assert_eq!(all.len(), made.len());
        for (rank, l) in all.iter().enumerate() {
            let i = made
                .iter()
                .position(|s| s.dir == l.dir)
                .expect("a session made");
            assert_eq!(l.id, made[i].session_id());
            let title = if changed.contains(&i) {
                format!("Changed {i}")
            } else {
                format!("Title {i}")
            };
            assert_eq!(l.title.as_deref(), Some(title.as_str()), "rank {rank}");
            assert_eq!(l.preview.as_deref(), Some(format!("session {i}").as_str()));
            let extra = usize::from(changed.contains(&i));
            assert_eq!(l.messages, 1 + i % 5 + extra, "session {i}");
        }
    };
    let first = fen_fs::commands::list::list(&store, None).unwrap();
    check(&first, &[]);
    // Newest update first: made last, listed first (none was changed since).
    let order: Vec<&str> = first.iter().map(|l| l.dir.as_str()).collect();
    let made_order: Vec<&str> = made.iter().rev().map(|s| s.dir.as_str()).collect();
    assert_eq!(order, made_order);
    for i in [3, 17, 38] {
        append(
            &store,
            &made[i],
            &[
                &format!(r#"{{"type":"title","title":"Changed {i}"}}"#),
                r#"{"role":"user","content":"more"}"#,
            ],
        );
    }
    let again = fen_fs::commands::list::list(&store, None).unwrap();
    check(&again, &[3, 17, 38]);
    let afresh = Store::open(store.root.clone(), FsyncMode::No).unwrap();
    assert_eq!(again, fen_fs::commands::list::list(&afresh, None).unwrap());
}
