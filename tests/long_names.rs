//! Issue 12, case 9: a cwd whose slug is longer than a file name gets a cut
//! namespace name (with a stable hash) and works like any other; names in the store
//! that are not UTF-8 are reported by fsck, not dropped without a word.

mod support;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use support::{fen_fs, out_text};

/// A normalized absolute cwd of exactly `len` bytes, with non-ASCII characters (so
/// the cut must fall on a character boundary) and `/`, `:` to map.
fn long_cwd(len: usize) -> String {
    let mut cwd = String::from("/home/u");
    let parts = ["/projé", "/a:b", "/naïve-dir", "/x"];
    let mut i = 0;
    while cwd.len() < len {
        cwd.push_str(parts[i % parts.len()]);
        i += 1;
    }
    while cwd.len() > len || cwd.ends_with('/') || !cwd.is_char_boundary(cwd.len()) {
        let mut cut = cwd.len() - 1;
        while !cwd.is_char_boundary(cut) {
            cut -= 1;
        }
        cwd.truncate(cut);
    }
    while cwd.len() < len {
        cwd.push('z');
    }
    assert_eq!(cwd.len(), len);
    cwd
}

fn run(args: &[&OsStr]) -> std::process::Output {
    fen_fs().args(args).output().expect("run fen-fs")
}

#[test]
fn sessions_of_long_cwds_work() {
    let Some(m) = support::Mount::with_args("sessions_of_long_cwds_work", &["--fsync", "no"])
    else {
        return;
    };
    for len in [300, 4000] {
        let cwd = long_cwd(len);
        let s = m.create_session(&cwd, "first");
        let name = s.parent().unwrap().file_name().unwrap().to_str().unwrap();
        assert!(
            name.len() <= 255,
            "{len}: mount name of {} bytes",
            name.len()
        );

        // `fen-fs slug` prints the folder the mount shows, `--on-disk` the store's.
        let o = run(&["slug".as_ref(), cwd.as_ref()]);
        assert!(o.status.success(), "{}", out_text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim_end(), name);
        let o = run(&["slug".as_ref(), "--on-disk".as_ref(), cwd.as_ref()]);
        let on_disk = String::from_utf8(o.stdout).unwrap().trim_end().to_string();
        assert!(
            on_disk.len() <= 200,
            "{len}: store folder of {}",
            on_disk.len()
        );
        assert!(on_disk.starts_with("--home-u-proj") && on_disk.ends_with("--"));
        let backing = m.store.join(&on_disk);
        assert!(backing.is_dir(), "{}", backing.display());
        assert_eq!(m.backing_namespace(s.parent().unwrap()), backing);

        // Append, then every view.
        support::ctl_ok(&s, r#"{"role":"assistant","content":"second"}"#);
        let transcript = std::fs::read_to_string(s.join("transcript.jsonl")).unwrap();
        let header: serde_json::Value =
            serde_json::from_str(transcript.lines().next().unwrap()).unwrap();
        assert_eq!(header["cwd"], cwd.as_str());
        assert_eq!(transcript.lines().count(), 3);
        let conv: serde_json::Value =
            serde_json::from_slice(&std::fs::read(s.join("conversation.json")).unwrap()).unwrap();
        assert!(conv.to_string().contains("second"), "{conv}");
        let summary = std::fs::read_to_string(s.join("summary.txt")).unwrap();
        assert!(summary.contains("messages  2"), "{summary}");
        let meta = support::meta(&s);
        assert_eq!(meta["messages"], 2);
        assert_eq!(meta["cwd"], cwd.as_str());
        assert_eq!(meta["namespace"], name);

        // Listed: in the mount's root, the namespace's index.json and latest, the CLI.
        let root: Vec<_> = std::fs::read_dir(&m.mp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(root.iter().any(|n| n == name), "{root:?}");
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(s.parent().unwrap().join("index.json")).unwrap())
                .unwrap();
        assert_eq!(index.as_array().unwrap().len(), 1, "{index}");
        assert_eq!(index[0]["cwd"], cwd.as_str());
        let latest = std::fs::read_link(s.parent().unwrap().join("latest")).unwrap();
        assert_eq!(latest, Path::new(s.file_name().unwrap()));
        let o = run(&[
            "list".as_ref(),
            "--json".as_ref(),
            "--no-detect".as_ref(),
            "--store".as_ref(),
            m.store.as_os_str(),
            "--cwd".as_ref(),
            cwd.as_ref(),
        ]);
        assert!(o.status.success(), "{}", out_text(&o));
        let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

        // The caches named after the namespace fit beside it (written on umount at
        // the latest; here once index.json is rendered).
        let cache = m.store.join(".fen-cache");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !cache.join(format!("{on_disk}.index")).exists()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(cache.join(format!("{on_disk}.index")).is_file(), "{len}");

        // A second session of the same cwd lands in the same folder.
        let again = m.create_session(&cwd, "again");
        assert_eq!(again.parent(), s.parent());

        // The trash keeps it under the same folder name, and gives it back.
        let bytes = std::fs::read(m.backing_file(&s)).unwrap();
        std::fs::remove_dir(&s).unwrap();
        let trashed = std::fs::read_dir(m.store.join(".trash").join(&on_disk))
            .unwrap()
            .count();
        assert_eq!(trashed, 1);
        let dir = s.file_name().unwrap();
        let o = run(&[
            "restore".as_ref(),
            "--store".as_ref(),
            m.store.as_os_str(),
            dir,
        ]);
        assert!(o.status.success(), "{}", out_text(&o));
        assert_eq!(std::fs::read(s.join("transcript.jsonl")).unwrap(), bytes);
    }
    // The caches named after the namespaces were written (and fit).
    let o = run(&["fsck".as_ref(), "--store".as_ref(), m.store.as_os_str()]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        !m.daemon_log().contains("name too long"),
        "{}",
        m.daemon_log()
    );
}

/// A session file and a namespace folder whose names are not UTF-8 are reported by
/// fsck (which then fails) with their bytes escaped, and the store's other sessions
/// are still checked.
#[test]
fn fsck_reports_names_that_are_not_utf8() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let line = |cwd: &str| {
        format!(
            "{{\"type\":\"session\",\"version\":2,\"id\":\"x\",\"timestamp\":\"2026-11-21T00:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n"
        )
    };
    let good = store.join("--home-u-p--");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::write(
        good.join("2026-11-21T00-00-00-000Z_good.jsonl"),
        line("/home/u/p"),
    )
    .unwrap();
    std::fs::write(
        good.join(OsStr::from_bytes(b"2026-11-21T00-00-00-000Z_b\xffd.jsonl")),
        line("/home/u/p"),
    )
    .unwrap();
    let bad_ns = store.join(OsStr::from_bytes(b"--home-u-\xe9t\xe9--"));
    std::fs::create_dir_all(&bad_ns).unwrap();
    std::fs::write(bad_ns.join("2026-11-21T00-00-00-000Z_s.jsonl"), line("/x")).unwrap();

    let o = run(&["fsck".as_ref(), "--store".as_ref(), store.as_os_str()]);
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        text.contains(
            "skipped: name is not UTF-8: --home-u-p--/2026-11-21T00-00-00-000Z_b\\xffd.jsonl"
        ),
        "{text}"
    );
    assert!(
        text.contains("skipped: name is not UTF-8: --home-u-\\xe9t\\xe9--"),
        "{text}"
    );
    assert!(
        text.contains("checked 1 session, 0 with problems; 2 names skipped (not UTF-8)"),
        "{text}"
    );

    // A mount shows the other session and says in its log what it skipped.
    let Some(m) = support::Mount::on_store("fsck_reports_names_that_are_not_utf8", &store, &[])
    else {
        return;
    };
    let ns = m.path("home-u-p");
    let shown: Vec<_> = std::fs::read_dir(&ns)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(shown.len(), 3, "{shown:?}");
    let root: Vec<_> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(root.len(), 4, "ctl, search, usage and home-u-p: {root:?}");
    let log = m.daemon_log();
    assert!(
        log.contains("--home-u-p--/2026-11-21T00-00-00-000Z_b\\xffd.jsonl: name is not UTF-8"),
        "{log}"
    );
    assert!(
        log.contains("--home-u-\\xe9t\\xe9--: name is not UTF-8"),
        "{log}"
    );
}
