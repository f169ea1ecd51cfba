//! Mounted tests of `ctl` as a file for everyday tools (issue 13): `stat` says the
//! size of its log, so `tar`, `rsync` and `cp -r` copy the mount and the copy of a
//! `ctl` is its log; `tail`, `less` and `tail -f` read it; reading it changes no
//! folder's mtime (only a real append does).
mod support;
use support::out_text;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn cat(path: &Path) -> Vec<u8> {
    let out = Command::new("cat").arg(path).output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    out.stdout
}

fn stat(fmt: &str, path: &Path) -> String {
    let out = Command::new("stat")
        .args(["-c", fmt])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn has(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A mount with one session whose `ctl` log holds ok and err replies.
fn mount_with_log(test: &str) -> Option<(support::Mount, PathBuf)> {
    let m = support::Mount::new(test)?;
    let s = m.create_session("/home/u/proj", "first");
    support::ctl_ok(&s, r#"{"role":"assistant","content":"second"}"#);
    // A refused line (the write fails with EINVAL): its reply is logged too.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.join("ctl"))
        .unwrap();
    assert!(f.write_all(b"{\"id\":\"a\",\"role\":\"user\"}\n").is_err());
    let mut bad = String::new();
    f.read_to_string(&mut bad).unwrap();
    assert!(bad.starts_with("err EINVAL"), "{bad:?}");
    Some((m, s))
}

#[test]
fn stat_size_is_the_log_and_copies_copy_it() {
    let Some((m, s)) = mount_with_log("stat_size_is_the_log_and_copies_copy_it") else {
        return;
    };
    let ctls = [m.path("ctl"), s.join("ctl")];
    for ctl in &ctls {
        let log = cat(ctl);
        assert!(log.ends_with(b"\n"), "{}", ctl.display());
        assert_eq!(stat("%s", ctl), log.len().to_string(), "{}", ctl.display());
    }
    // Folder attributes are cached for a second: let the appends' mtimes settle, or
    // tar rightly says a folder "changed as we read it".
    std::thread::sleep(Duration::from_millis(1100));

    let tmp = m.tmp.path();
    let mp = m.mp.to_str().unwrap();
    let copies = tmp.join("copies");
    std::fs::create_dir(&copies).unwrap();
    let mut runs = vec![
        (
            "tar",
            "mkdir tar && tar -cf - -C \"$1\" . | tar -xf - -C tar",
        ),
        ("cp", "cp -r \"$1\" cp"),
    ];
    if has("rsync") {
        runs.push(("rsync", "rsync -a \"$1\"/ rsync/"));
    } else {
        eprintln!("*** rsync not installed: its part of this test is skipped ***");
    }
    for (name, script) in runs {
        let out = support::sh_in(&copies, &format!("set -e; {script}"), &[mp]);
        assert!(out.status.success(), "{name}: {}", out_text(&out));
        let copy = copies.join(name);
        for ctl in &ctls {
            let rel = ctl.strip_prefix(&m.mp).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&std::fs::read(copy.join(rel)).unwrap()),
                String::from_utf8_lossy(&cat(ctl)),
                "{name}: {}",
                rel.display()
            );
        }
    }
}

#[test]
fn reading_or_closing_ctl_changes_no_mtime() {
    let Some((m, s)) = mount_with_log("reading_or_closing_ctl_changes_no_mtime") else {
        return;
    };
    let ns = s.parent().unwrap().to_path_buf();
    let folders = [m.mp.clone(), ns, s.clone()];
    let mtimes = || folders.iter().map(|f| stat("%y", f)).collect::<Vec<_>>();
    // Past the folders' attribute TTL (1 s): each stat asks the daemon.
    std::thread::sleep(Duration::from_millis(1100));
    let before = mtimes();
    let ctl = s.join("ctl");
    cat(&ctl);
    cat(&m.path("ctl"));
    // An open for writing closed without a line, and a refused line: nothing appended.
    let out = support::sh_in(&s, ": >> ctl; : > ctl; echo 'not json' > ctl", &[]);
    assert!(!out.status.success(), "{}", out_text(&out));
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(mtimes(), before);

    // A real append moves the session's and the namespace's mtimes at once (the
    // kernel's cached folder attributes are dropped by the notifier thread, which
    // gathers a burst for 2 ms first: allow it a moment, far below the 1 s TTL).
    support::ctl_ok(&s, r#"{"role":"user","content":"third"}"#);
    let deadline = std::time::Instant::now() + Duration::from_millis(500);
    let mut after = mtimes();
    while (after[1] == before[1] || after[2] == before[2]) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        after = mtimes();
    }
    assert_ne!(after[1], before[1]);
    assert_ne!(after[2], before[2]);
}

#[test]
fn tail_and_less_read_the_log() {
    let Some((m, s)) = mount_with_log("tail_and_less_read_the_log") else {
        return;
    };
    for ctl in [m.path("ctl"), s.join("ctl")] {
        let log = String::from_utf8(cat(&ctl)).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        let want = lines[lines.len().saturating_sub(2)..].join("\n") + "\n";
        let out = support::sh_in(&m.mp, "tail -n 2 \"$1\"", &[ctl.to_str().unwrap()]);
        assert!(out.status.success(), "{}", out_text(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), want);
        let out = support::sh_in(
            &m.mp,
            "LESS= less -FX \"$1\" < /dev/null",
            &[ctl.to_str().unwrap()],
        );
        assert!(out.status.success(), "{}", out_text(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), log);
    }
}

/// `tail -f` polls the size (fstat, which reaches the daemon without the handle) and
/// reads on from its offset. It must keep working once the log is a full ring of 64
/// lines, whose size no longer grows.
#[test]
fn tail_f_shows_new_replies() {
    let Some((_m, s)) = mount_with_log("tail_f_shows_new_replies") else {
        return;
    };
    let ctl = s.join("ctl");
    let many: String = (0..70)
        .map(|i| format!("{{\"role\":\"user\",\"content\":\"m{i}\"}}\n"))
        .collect();
    std::fs::write(&ctl, many).unwrap();
    assert_eq!(String::from_utf8(cat(&ctl)).unwrap().lines().count(), 64);

    let mut tail = Command::new("tail")
        .args(["-f", "-n", "1", "-s", "0.2"])
        .arg(&ctl)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = tail.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(first.contains(" ok "), "{first:?}");

    let mut seen = Vec::new();
    for i in 0..3 {
        let id = support::ctl_ok(&s, &format!(r#"{{"role":"user","content":"new{i}"}}"#));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !seen.iter().any(|l: &String| l.ends_with(&id)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => seen.push(l),
                Err(_) => panic!("tail -f did not show {id} within 5 s; saw {seen:?}"),
            }
        }
    }
    let _ = tail.kill();
    let out = tail.wait_with_output().unwrap();
    // No "file truncated" (the size it saw never went below what it had read).
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.len(), 3, "{seen:?}");
}
