//! Sessions kept as whole JSON files that their agent rewrites on every update (Cline's
//! `<id>.messages.json`, the task folders of Cline's and Roo Code's VS Code
//! extensions): read strictly read-only, each file as one JSON document, and turned
//! into a unit's JSON Lines dump (`sources/units.rs`) that a reader is fed like a
//! file. Nothing is re-encoded: each file's top-level fields and each element of its
//! array keep their stored bytes, whitespace dropped.
//!
//! A dump is sections, one per file, each a header line naming the file
//! (`{"fen_file": NAME, ...the file's other top-level fields}`) followed by the file's
//! array, one element a line. A file that cannot be read now (cut short while its
//! agent rewrites it, not UTF-8, not JSON) is a header saying why
//! (`{"fen_file": NAME, "fen_unreadable": WHY}`), so the session still shows, not
//! resumable, and is read again once the file changes.
//!
//! Such a file is rewritten whole, never appended to: any change reads it anew (the
//! unit's signature is its files' stamps).

use super::json_text::{ObjectWriter, minify};
use super::units::Signature;
use crate::json::RawObject;
use serde_json::value::RawValue;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Files larger than this are not read (a planted huge file cannot cost memory).
pub const MAX_FILE: u64 = 256 << 20;

/// One file of a session as read now.
#[derive(Debug, Clone, PartialEq)]
pub enum FileRead {
    /// There is no such file.
    Absent,
    /// Its text, a whole JSON document.
    Json(String),
    /// Why it cannot be read now.
    Bad(String),
}

/// How often a file caught half written is read again, and how long apart.
const TRIES: usize = 3;
const PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// Reads `path` (read-only, no link followed, a regular file) as one JSON document;
/// a file being rewritten (empty or cut short) is tried again a few times. `agent`
/// names who may be rewriting it, for the reason.
pub fn read(path: &Path, agent: &str) -> FileRead {
    let mut last = FileRead::Absent;
    for attempt in 0..TRIES {
        if attempt > 0 {
            std::thread::sleep(PAUSE);
        }
        last = read_once(path, agent);
        match &last {
            FileRead::Bad(why) if why.contains("not complete JSON") => continue,
            _ => return last,
        }
    }
    last
}

fn read_once(path: &Path, agent: &str) -> FileRead {
    let name = || path.display().to_string();
    let (file, meta) = match crate::store::open::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.errno == libc::ENOENT => return FileRead::Absent,
        Err(e) => return FileRead::Bad(format!("{}: {}", name(), e.reason)),
    };
    if meta.len() > MAX_FILE {
        return FileRead::Bad(format!("{} is larger than {MAX_FILE} bytes", name()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    if let Err(e) = file.take(MAX_FILE).read_to_end(&mut bytes) {
        return FileRead::Bad(format!("{}: {e}", name()));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return FileRead::Bad(format!("{} is not UTF-8", name()));
    };
    if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err() {
        return FileRead::Bad(format!(
            "{} is empty or not complete JSON ({agent} may be rewriting it)",
            name()
        ));
    }
    FileRead::Json(text)
}

/// Appends one file's section to a dump: its header line, then (when the file is an
/// array, or an object whose `array` field is one) each element on a line of its own.
/// An absent file adds nothing.
pub fn dump_file(out: &mut Vec<u8>, name: &str, read: &FileRead, array: Option<&str>) {
    let text = match read {
        FileRead::Absent => return,
        FileRead::Bad(why) => return push_unreadable(out, name, why),
        FileRead::Json(text) => text,
    };
    let trimmed = text.trim_start();
    let mut header = ObjectWriter::default();
    header.string("fen_file", name);
    let elements: Vec<&RawValue> = if trimmed.starts_with('[') {
        match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(v) => v,
            Err(e) => return push_unreadable(out, name, &e.to_string()),
        }
    } else {
        let obj = match RawObject::parse(text) {
            Ok(o) => o,
            Err(e) => return push_unreadable(out, name, &format!("not a JSON object: {e}")),
        };
        let mut elements = Vec::new();
        for (k, v) in &obj.fields {
            if array == Some(k.as_ref()) && v.get().trim_start().starts_with('[') {
                match serde_json::from_str::<Vec<&RawValue>>(v.get()) {
                    Ok(e) => elements = e,
                    Err(e) => return push_unreadable(out, name, &e.to_string()),
                }
                continue;
            }
            header.raw(k, &minify(v.get()).unwrap_or_else(|| v.get().to_string()));
        }
        elements
    };
    out.extend_from_slice(header.finish().as_bytes());
    out.push(b'\n');
    for e in elements {
        let line = minify(e.get()).unwrap_or_else(|| e.get().to_string());
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
}

/// Appends a header saying why `name` cannot be read now.
pub fn push_unreadable(out: &mut Vec<u8>, name: &str, why: &str) {
    let mut w = ObjectWriter::default();
    w.string("fen_file", name).string("fen_unreadable", why);
    out.extend_from_slice(w.finish().as_bytes());
    out.push(b'\n');
}

/// Appends a header line of fen-fs's own (`{"fen_file": name, ...fields}`, `fields`
/// JSON texts): what a dump says that no file of the session holds.
pub fn push_header(out: &mut Vec<u8>, name: &str, fields: &[(&str, String)]) {
    let mut w = ObjectWriter::default();
    w.string("fen_file", name);
    for (k, v) in fields {
        w.raw(k, v);
    }
    out.extend_from_slice(w.finish().as_bytes());
    out.push(b'\n');
}

/// The signature of a session made of `files` (their stamps; `extra` bytes of what
/// else the dump takes, such as an index entry), and its newest mtime as the
/// session's last update; `None` when none of the files exists.
pub fn signature(files: &[PathBuf], extra: &[u8]) -> Option<Signature> {
    let mut bytes = Vec::with_capacity(files.len() * 64 + extra.len());
    let mut newest: Option<i64> = None;
    for p in files {
        bytes.extend_from_slice(p.as_os_str().as_encoded_bytes());
        let Ok(m) = std::fs::symlink_metadata(p) else {
            bytes.push(0);
            continue;
        };
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
        let ms = m.mtime() * 1000 + m.mtime_nsec() / 1_000_000;
        newest = Some(newest.map_or(ms, |n| n.max(ms)));
    }
    bytes.extend_from_slice(extra);
    Some(Signature {
        hash: crate::store::atomic::checksum(&[&bytes]),
        updated_ms: newest?,
    })
}

/// The name of the file a dump line's section header names (`None`: not a header).
pub fn header_name(fen_file: Option<&RawValue>) -> Option<String> {
    fen_file.and_then(crate::json::as_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_becomes_a_header_and_its_array_one_element_a_line() {
        let mut out = Vec::new();
        let text = "{\n  \"version\": 1,\n  \"messages\": [\n    {\"a\": \"x y\"},\n    {\"b\": [1, 2]}\n  ],\n  \"t\": \"\\u00e9\"\n}";
        dump_file(
            &mut out,
            "s.messages.json",
            &FileRead::Json(text.into()),
            Some("messages"),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"fen_file\":\"s.messages.json\",\"version\":1,\"t\":\"\\u00e9\"}\n{\"a\":\"x y\"}\n{\"b\":[1,2]}\n"
        );
        let mut out = Vec::new();
        dump_file(
            &mut out,
            "h.json",
            &FileRead::Json("[{\"x\":1}]".into()),
            None,
        );
        assert_eq!(out, b"{\"fen_file\":\"h.json\"}\n{\"x\":1}\n");
        let mut out = Vec::new();
        dump_file(&mut out, "h.json", &FileRead::Bad("cut".into()), None);
        assert_eq!(
            out,
            b"{\"fen_file\":\"h.json\",\"fen_unreadable\":\"cut\"}\n"
        );
    }

    #[test]
    fn a_half_written_file_says_so_and_a_missing_one_is_absent() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("a.json");
        assert_eq!(read(&p, "X"), FileRead::Absent);
        std::fs::write(&p, "{\"a\": [1, 2").unwrap();
        match read(&p, "X") {
            FileRead::Bad(why) => assert!(why.contains("X may be rewriting it"), "{why}"),
            other => panic!("{other:?}"),
        }
        std::fs::write(&p, "{\"a\": [1, 2]}").unwrap();
        assert!(matches!(read(&p, "X"), FileRead::Json(_)));
        assert!(signature(std::slice::from_ref(&p), b"").is_some());
        assert!(signature(&[tmp.path().join("none")], b"").is_none());
    }
}
