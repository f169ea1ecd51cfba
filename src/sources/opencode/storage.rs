//! OpenCode before 1.2: one pretty-printed JSON file per session, message and part
//! under `<data>/storage/` (AGENT-FORMATS-MORE.md §1.5): `session/<project>/<id>.json`,
//! `message/<session>/<id>.json`, `part/<message>/<id>.json`, listed in id order.
//! OpenCode rewrites these files whole in place (a truncating write, not a rename), so
//! a reader can meet an empty or half file: such a dump is retried, and after a few
//! tries shown as unreadable for now, never half (its stamp changes once the write
//! completes, so the next access reads it again).

use crate::sources::json_text::minify;
use crate::sources::units::{Dump, Signature};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A session file: `storage/session/<project>/<id>.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageSession {
    pub id: String,
    pub file: PathBuf,
}

pub fn storage_dir(root: &Path) -> PathBuf {
    root.join("storage")
}

/// `*.json` regular files of a folder (links and other kinds skipped), sorted by
/// name: OpenCode's own order (ids ascending).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every session file.
pub fn list(root: &Path) -> Vec<StorageSession> {
    let sessions = storage_dir(root).join("session");
    let Ok(projects) = std::fs::read_dir(&sessions) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in projects.flatten() {
        if !p.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for file in json_files(&p.path()) {
            out.push(StorageSession {
                id: stem(&file),
                file,
            });
        }
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

/// The files of a session: its file, its messages, and each message's parts.
fn files(root: &Path, s: &StorageSession) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let storage = storage_dir(root);
    json_files(&storage.join("message").join(&s.id))
        .into_iter()
        .map(|m| {
            let parts = json_files(&storage.join("part").join(stem(&m)));
            (m, parts)
        })
        .collect()
}

/// A signature of every file of the session (their stamps): any rewrite changes it.
pub fn signature(root: &Path, s: &StorageSession) -> Option<Signature> {
    let meta = std::fs::symlink_metadata(&s.file)
        .ok()
        .filter(|m| m.is_file())?;
    let mut bytes = Vec::new();
    let mut newest = meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000;
    let mut add = |p: &Path| {
        bytes.extend_from_slice(p.as_os_str().as_encoded_bytes());
        if let Ok(m) = std::fs::symlink_metadata(p) {
            for v in [
                m.ino() as i64,
                m.len() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            newest = newest.max(m.mtime() * 1000 + m.mtime_nsec() / 1_000_000);
        }
    };
    add(&s.file);
    for (m, parts) in files(root, s) {
        add(&m);
        for p in parts {
            add(&p);
        }
    }
    Some(Signature {
        hash: crate::store::atomic::checksum(&[&bytes]),
        updated_ms: newest,
    })
}

/// Files larger than this are not read (a planted huge file cannot cost memory).
const MAX_FILE: u64 = 256 << 20;

fn read_json(path: &Path) -> Result<String, String> {
    let name = || path.display().to_string();
    let (file, meta) =
        crate::store::open::open_regular(path).map_err(|e| format!("{}: {}", name(), e.reason))?;
    if meta.len() > MAX_FILE {
        return Err(format!("{} is larger than {MAX_FILE} bytes", name()));
    }
    let mut text = String::new();
    file.take(MAX_FILE)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", name()))?;
    minify(&text).ok_or_else(|| {
        format!(
            "{} is empty or not complete JSON (OpenCode may be rewriting it)",
            name()
        )
    })
}

/// How often a dump meeting a half-written file is tried again, and how long apart.
const TRIES: u32 = 4;
const PAUSE: std::time::Duration = std::time::Duration::from_millis(15);

/// The session's files as JSON Lines (each file minified to one line), with the
/// signature of what was read; a dump that keeps meeting a half-written file holds one
/// `fen_unreadable` line saying which. `None`: the session file is gone.
pub fn dump(root: &Path, s: &StorageSession) -> Option<Dump> {
    let mut last = String::new();
    let mut read_at = None;
    for attempt in 0..TRIES {
        if attempt > 0 {
            std::thread::sleep(PAUSE);
        }
        let before = signature(root, s)?;
        read_at = Some(before);
        match read_all(root, s) {
            Ok(bytes) if signature(root, s) == Some(before) => {
                return Some(Dump {
                    bytes,
                    signature: before,
                    transient: false,
                });
            }
            Ok(_) => last = "its files changed while being read".into(),
            Err(why) => last = why,
        }
    }
    // The signature from before the last read, never one taken after it: a rewrite
    // finished since then must not be named as the state these bytes show (it would
    // be served as current until the next change).
    let signature = read_at?;
    log::warn!("opencode: {}: {last}", s.file.display());
    // The session's own file when it is whole (its id and directory place it), then
    // why the rest is not shown.
    let mut bytes = read_json(&s.file)
        .map(|l| l.into_bytes())
        .unwrap_or_default();
    if !bytes.is_empty() {
        bytes.push(b'\n');
    }
    let mut w = crate::sources::json_text::ObjectWriter::default();
    w.string("fen_unreadable", &last);
    bytes.extend_from_slice(w.finish().as_bytes());
    bytes.push(b'\n');
    // Not transient: a half file is shown as such until it is whole (its stamp then
    // changes and it is read again), never as an older state of the session.
    Some(Dump {
        bytes,
        signature,
        transient: false,
    })
}

fn read_all(root: &Path, s: &StorageSession) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let line = |out: &mut Vec<u8>, text: String| {
        out.extend_from_slice(text.as_bytes());
        out.push(b'\n');
    };
    line(&mut out, read_json(&s.file)?);
    for (m, parts) in files(root, s) {
        line(&mut out, read_json(&m)?);
        for p in parts {
            line(&mut out, read_json(&p)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A dump's signature must describe a state no newer than its bytes. Taken after
    /// a failed read, it could name the rewrite that came next: the half file was then
    /// served as current until the next change (a CI run read `[]` after the rewrite).
    #[test]
    fn a_dump_that_names_the_current_state_shows_that_state() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let write = |rel: &str, text: &str| {
            let p = root.join("storage").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        };
        let file = write("session/global/ses_a.json", r#"{"id":"ses_a"}"#);
        write("part/msg_1/prt_1.json", r#"{"id":"prt_1","text":"hi"}"#);
        let whole = r#"{"id":"msg_1","role":"user","time":{"created":1}}"#;
        let half = r#"{"id":"msg_1","role":"#;
        let msg = write("message/ses_a/msg_1.json", half);
        let s = StorageSession {
            id: "ses_a".into(),
            file,
        };
        // OpenCode rewriting the message in place, mostly caught half.
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (msg, stop) = (msg.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    std::fs::write(&msg, if n % 3 == 2 { whole } else { half }).unwrap();
                    n += 1;
                    std::thread::sleep(std::time::Duration::from_millis(3));
                }
            })
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(4);
        let (mut dumps, mut named_current) = (0, 0);
        while std::time::Instant::now() < deadline {
            let d = dump(&root, &s).unwrap();
            dumps += 1;
            // The state now, when it held still while being looked at.
            let now = signature(&root, &s).unwrap();
            let text = std::fs::read_to_string(&msg).unwrap();
            if d.signature != now || signature(&root, &s) != Some(now) {
                continue;
            }
            named_current += 1;
            let shown_whole = !String::from_utf8_lossy(&d.bytes).contains("fen_unreadable");
            assert_eq!(
                shown_whole,
                text == whole,
                "dump {dumps} names the current state but shows another"
            );
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert!(named_current > 0, "no dump named the current state");
    }
}
