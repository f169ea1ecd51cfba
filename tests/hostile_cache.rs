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

fn last_id(backing: &Path) -> String {
    std::fs::read_to_string(backing)
        .unwrap()
        .lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<serde_json::Value>(l).ok()?["id"]
                .as_str()
                .map(String::from)
        })
        .unwrap()
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
    append_raw(&backing, below, &last_id(&backing), "near the top");
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
