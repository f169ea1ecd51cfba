//! Issue 12: hostile stores and caches. Follow no link, trust no cache, hang no
//! client: each test plants what a hostile (or just unlucky) store can hold and
//! checks that every view is what a mount without any cache shows.

mod support;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn append_raw(backing: &Path, id: &str, parent: &str, content: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(backing)
        .unwrap();
    writeln!(f, "{{\"type\":\"message\",\"id\":\"{id}\",\"parent-id\":\"{parent}\",\"timestamp\":\"2026-11-21T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{content}\"}}}}").unwrap();
}

/// Case 6: one line over the limit fails with EFBIG however the kernel splits the
/// `write(2)`; nothing of it is appended, and the handle goes on working.
#[test]
fn oversize_line_in_one_write_is_efbig() {
    let Some(m) =
        support::Mount::with_args("oversize_line_in_one_write_is_efbig", &["--fsync", "no"])
    else {
        return;
    };
    let s = m.create_session("/home/u/big", "start");
    let backing = m.backing_file(&s);
    let before = std::fs::read(&backing).unwrap();
    let mut line = br#"{"role":"user","content":""#.to_vec();
    line.extend(std::iter::repeat_n(b'x', 17 << 20));
    line.extend_from_slice(b"\"}\n");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(s.join("ctl"))
        .unwrap();
    let e = f.write_all(&line).expect_err("17 MiB line accepted");
    assert_eq!(e.raw_os_error(), Some(libc::EFBIG), "{e}");
    assert_eq!(std::fs::read(&backing).unwrap(), before);
    // The same handle takes the next line.
    f.write_all(b"{\"role\":\"user\",\"content\":\"after\"}\n")
        .unwrap();
    drop(f);
    assert_eq!(support::meta(&s)["messages"], 2);
}

/// Case 7: after the largest UUIDv7 no id is left: the append fails, no id repeats.
#[test]
fn ids_at_the_top_of_the_space_never_repeat() {
    let Some(m) = support::Mount::new("ids_at_the_top_of_the_space_never_repeat") else {
        return;
    };
    let s = m.create_session("/home/u/top", "start");
    let backing = m.backing_file(&s);
    let below = "ffffffff-ffff-7fff-bfff-fffffffffffe";
    append_raw(&backing, below, &support::last_id(&backing), "near the top");
    let top = support::ctl_ok(&s, r#"{"role":"user","content":"the top"}"#);
    assert_eq!(top, "ffffffff-ffff-7fff-bfff-ffffffffffff");
    let before = std::fs::read(&backing).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.join("ctl"))
        .unwrap();
    let e = f
        .write_all(b"{\"role\":\"user\",\"content\":\"past it\"}\n")
        .expect_err("an id past the largest UUIDv7");
    assert_eq!(e.raw_os_error(), Some(libc::EOVERFLOW), "{e}");
    let mut reply = String::new();
    std::io::Read::read_to_string(&mut f, &mut reply).unwrap();
    assert!(reply.starts_with("err EOVERFLOW"), "{reply}");
    assert_eq!(std::fs::read(&backing).unwrap(), before);
}

/// Case 8: under umask 000 the log, the store, its folders and files are private.
#[test]
fn created_files_are_private_whatever_the_umask() {
    if !support::fuse_available("created_files_are_private_whatever_the_umask") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mp, store, log) = (
        tmp.path().join("mnt"),
        tmp.path().join("store"),
        tmp.path().join("daemon.log"),
    );
    std::fs::create_dir(&mp).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$0\" mount \"$1\" --store \"$2\" --log-file \"$3\"")
        .arg(support::bin())
        .arg(&mp)
        .arg(&store)
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::out_text(&out));
    let reply = support::ctl(
        &mp.join("ctl"),
        r#"{"cwd":"/home/u/p","role":"user","content":"hi"}"#,
    );
    assert!(reply.starts_with("ok "), "{reply}");
    let rel = reply.split_whitespace().nth(2).unwrap();
    let ns = Path::new(rel).parent().unwrap();
    std::fs::read(mp.join(ns).join("index.json")).unwrap();
    let out = Command::new(support::bin())
        .arg("umount")
        .arg(&mp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::out_text(&out));
    assert_eq!(mode(&log), 0o600, "log file");
    assert_eq!(mode(&store), 0o700, "store");
    let mut stack: Vec<PathBuf> = vec![store.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let Ok(md) = std::fs::symlink_metadata(&p) else {
                continue; // a cache file replaced meanwhile
            };
            let m = md.permissions().mode() & 0o7777;
            if md.is_dir() {
                assert_eq!(m, 0o700, "{}", p.display());
                stack.push(p);
            } else {
                assert_eq!(m, 0o600, "{}", p.display());
            }
        }
    }
}

/// Every view of every session in the mount, by path relative to the mount point.
fn views(mp: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut nss: Vec<_> = std::fs::read_dir(mp)
        .unwrap()
        .flatten()
        // Namespaces: every folder but `search/` (the queries') and `usage/`.
        .filter(|e| {
            e.file_type().unwrap().is_dir() && e.file_name() != "search" && e.file_name() != "usage"
        })
        .map(|e| e.path())
        .collect();
    nss.sort();
    for ns in nss {
        let rel = |p: &Path| p.strip_prefix(mp).unwrap().display().to_string();
        out.push((
            rel(&ns.join("index.json")),
            std::fs::read(ns.join("index.json")).unwrap(),
        ));
        let latest = std::fs::read_link(ns.join("latest")).unwrap();
        out.push((
            rel(&ns.join("latest")),
            latest.into_os_string().into_encoded_bytes(),
        ));
        let mut sessions: Vec<_> = std::fs::read_dir(&ns)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.path())
            .collect();
        sessions.sort();
        for s in sessions {
            for v in [
                "conversation.json",
                "meta.json",
                "summary.txt",
                "transcript.jsonl",
            ] {
                out.push((rel(&s.join(v)), std::fs::read(s.join(v)).unwrap()));
            }
        }
    }
    out
}

/// A store with a small and a large (persisted index) session in two namespaces.
fn populated(test: &str) -> Option<support::Mount> {
    let m = support::Mount::with_args(test, &["--fsync", "no"])?;
    let a = m.create_session("/home/u/a", "small one");
    support::ctl_ok(&a, r#"{"type":"title","title":"A"}"#);
    let b = m.create_session("/home/u/b", "big one");
    let big = "x".repeat(64 * 1024);
    for i in 0..20 {
        support::ctl_ok(&b, &format!(r#"{{"role":"tool","content":"{i} {big}"}}"#));
    }
    m.create_session("/home/u/b", "second of b");
    Some(m)
}

fn assert_empty(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "written outside the store: {left:?}");
}

/// Case 1: links in `.fen-cache` (the folder, `index/`, `index/<ns>`, a cache file)
/// are not followed: nothing is written where they point.
#[test]
fn links_in_the_cache_are_not_followed() {
    let Some(m) = populated("links_in_the_cache_are_not_followed") else {
        return;
    };
    let expected = views(&m.mp);
    m.umount();
    let outside = m.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let cache = m.store.join(".fen-cache");
    let names: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    for variant in ["folder", "index", "index-ns", "file"] {
        std::fs::remove_dir_all(&cache).unwrap();
        match variant {
            "folder" => std::os::unix::fs::symlink(&outside, &cache).unwrap(),
            "index" => {
                std::fs::create_dir(&cache).unwrap();
                std::os::unix::fs::symlink(&outside, cache.join("index")).unwrap();
            }
            "index-ns" => {
                std::fs::create_dir_all(cache.join("index")).unwrap();
                std::os::unix::fs::symlink(&outside, cache.join("index/--home-u-b--")).unwrap();
            }
            _ => {
                std::fs::create_dir(&cache).unwrap();
                for n in &names {
                    std::os::unix::fs::symlink(outside.join(n), cache.join(n)).unwrap();
                }
            }
        }
        m.mount();
        assert_eq!(views(&m.mp), expected, "{variant}");
        m.umount();
        assert_empty(&outside);
        if variant == "folder" {
            std::fs::remove_file(&cache).unwrap();
            std::fs::create_dir(&cache).unwrap();
        }
    }
}

/// Case 2: a namespace folder swapped for a link while mounted is not followed, for
/// reads nor for appends.
#[test]
fn a_namespace_swapped_for_a_link_is_not_followed() {
    let Some(m) = support::Mount::new("a_namespace_swapped_for_a_link_is_not_followed") else {
        return;
    };
    let s = m.create_session("/home/u/ns", "mine");
    std::fs::read(s.join("conversation.json")).unwrap();
    let backing = m.backing_file(&s);
    let ns_dir = backing.parent().unwrap().to_path_buf();
    let outside = m.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let planted = outside.join(backing.file_name().unwrap());
    let text = std::fs::read_to_string(&backing)
        .unwrap()
        .replace("mine", "planted");
    std::fs::write(&planted, &text).unwrap();
    std::fs::rename(&ns_dir, m.tmp.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, &ns_dir).unwrap();
    let conv = std::fs::read(s.join("conversation.json")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&conv).contains("planted"));
    // The session is gone from the mount, or its ctl refuses: either way, no append.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.join("ctl"))
    {
        let _ = f.write_all(b"{\"role\":\"user\",\"content\":\"x\"}\n");
    }
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), text);
}

/// Case 3: a large session rewritten in place (same inode) and grown while unmounted
/// is parsed again, not served from its persisted index.
#[test]
fn a_rewritten_file_is_not_served_from_its_cache() {
    let Some(m) = populated("a_rewritten_file_is_not_served_from_its_cache") else {
        return;
    };
    m.umount();
    let b = support::session_files(&m.store)
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&b).unwrap());
    let text = std::fs::read_to_string(&b).unwrap();
    // Same lines with other content, and longer.
    let rewritten = text.replace("\"content\":\"", "\"content\":\"rewritten ");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&b)
        .unwrap()
        .write_all(rewritten.as_bytes())
        .unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&b).unwrap()),
        ino
    );
    m.mount();
    let fresh = Command::new(support::bin())
        .args(["show", "--view", "conversation"])
        .arg(&b)
        .env("FEN_FS_STORE", m.tmp.path().join("none"))
        .output()
        .unwrap();
    let ns = b.parent().unwrap().file_name().unwrap().to_string_lossy();
    let ns = fen_fs::store::naming::mount_name(&ns);
    let dir = b.file_stem().unwrap().to_string_lossy();
    let conv = std::fs::read(m.mp.join(&ns).join(&*dir).join("conversation.json")).unwrap();
    assert_eq!(conv, fresh.stdout);
    assert!(String::from_utf8_lossy(&conv).contains("rewritten"));
}

/// Case 4: FIFOs planted as cache files and as the lock file hang no client.
#[test]
fn fifos_in_the_cache_hang_no_client() {
    let Some(m) = populated("fifos_in_the_cache_hang_no_client") else {
        return;
    };
    let expected = views(&m.mp);
    m.umount();
    let cache = m.store.join(".fen-cache");
    let names: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    for p in names.into_iter().filter(|p| p.is_file()) {
        mkfifo(&p);
    }
    mkfifo(&cache.join("session-ids.lock"));
    m.mount();
    let mp = m.mp.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let v = views(&mp);
        let reply = support::ctl(
            &mp.join("ctl"),
            r#"{"cwd":"/home/u/c","session-id":"named","role":"user","content":"hi"}"#,
        );
        tx.send((v, reply)).unwrap();
    });
    let (v, reply) = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a client hung on a FIFO");
    assert_eq!(v, expected);
    assert!(reply.starts_with("ok "), "{reply}");
}

fn mkfifo(p: &Path) {
    let _ = std::fs::remove_file(p);
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Case 5: a damaged cache file whose first line is intact is not served.
#[test]
fn damaged_caches_are_rebuilt() {
    let Some(m) = populated("damaged_caches_are_rebuilt") else {
        return;
    };
    let expected = views(&m.mp);
    m.umount();
    let cache = m.store.join(".fen-cache");
    for e in std::fs::read_dir(&cache).unwrap().flatten() {
        if !e.file_type().unwrap().is_file() {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap();
        let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
            continue;
        };
        let mut damaged = bytes[..=nl].to_vec();
        damaged.extend_from_slice(b"[{\"dir\":\"../../etc\",\"size_bytes\":99999999999}");
        std::fs::write(e.path(), damaged).unwrap();
    }
    m.mount();
    assert_eq!(views(&m.mp), expected);
}

/// Caches full of random bytes, links and FIFOs: every view still equals a mount
/// without any cache, and nothing is written outside the store.
#[test]
fn fuzzed_cache_changes_no_view() {
    let Some(m) = populated("fuzzed_cache_changes_no_view") else {
        return;
    };
    m.umount();
    let cache = m.store.join(".fen-cache");
    let real: Vec<PathBuf> = {
        let mut v = Vec::new();
        let mut stack = vec![cache.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    v.push(e.path().strip_prefix(&cache).unwrap().to_path_buf());
                }
            }
        }
        v
    };
    std::fs::remove_dir_all(&cache).unwrap();
    m.mount();
    let expected = views(&m.mp);
    m.umount();
    let outside = m.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let mut rng = support::Rng(0x9e3779b97f4a7c15);
    for round in 0..6 {
        let _ = std::fs::remove_dir_all(&cache);
        for rel in &real {
            let p = cache.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            match rng.range(0, 3) {
                0 => {
                    let n = rng.range(0, 4096) as usize;
                    let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                    std::fs::write(&p, bytes).unwrap();
                }
                1 => {
                    std::os::unix::fs::symlink(outside.join(rel.file_name().unwrap()), &p).unwrap()
                }
                2 => mkfifo(&p),
                _ => {
                    // A real-looking cache: the header line kept, the rest noise.
                    std::fs::write(&p, format!("{:x}\n{{}}\n", rng.next())).unwrap();
                }
            }
        }
        m.mount();
        assert_eq!(views(&m.mp), expected, "round {round}");
        m.umount();
        assert_empty(&outside);
    }
}
