//! Amp (Sourcegraph) threads. Amp's CLI is closed source: this reader is built from
//! what its public readers read (AgentsView `internal/parser/amp.go`, ccusage
//! `adapter/amp/`, cass's `connectors/amp.rs`), not from Amp's code, and says so
//! (`resume_rules: "best effort"`).
//!
//! Amp keeps one JSON document per thread, `<data>/threads/T-<uuid>.json` (`<data>`:
//! `$AMP_DATA_DIR` as ccusage reads it, else `$XDG_DATA_HOME/amp`, else
//! `~/.local/share/amp`), rewritten whole at every change. Each thread is a unit
//! (`units.rs`) keyed by its file, whose dump is one line for the thread without its
//! messages, then one line per message as stored (whitespace dropped, bytes kept).
//! A file that is not whole JSON (caught mid-rewrite, or damaged) shows with its
//! id and why; its stamp changes once the write completes, so it is read again.

pub mod kind;
pub mod neutral;
pub mod reader;
pub mod usage;

pub use neutral::to_neutral;
pub use reader::AmpReader;

use super::units::{Dump, Signature, UnitInfo, UnitSource};
use crate::sources::json_text::ObjectWriter;
use crate::store::index::FileStamp;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::path::{Path, PathBuf};

/// A thread file larger than this is not read (a damaged or hostile file).
const MAX_THREAD_BYTES: u64 = 512 << 20;

/// The data folder Amp uses.
pub fn default_root() -> Option<PathBuf> {
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("AMP_DATA_DIR")
        .or_else(|| env("XDG_DATA_HOME").map(|d| d.join("amp")))
        .or_else(|| env("HOME").map(|h| h.join(".local/share/amp")))
}

/// The threads folder of a data folder.
pub fn threads_dir(root: &Path) -> PathBuf {
    root.join("threads")
}

/// Whether `root` (a data folder) holds Amp threads.
pub fn present(root: &Path) -> bool {
    std::fs::symlink_metadata(threads_dir(root)).is_ok_and(|m| m.is_dir())
}

/// A thread file's name: `<id>.json` (Amp names them `T-<uuid>.json`).
pub fn is_thread_name(name: &str) -> bool {
    name.len() > ".json".len() && name.ends_with(".json") && !name.starts_with('.')
}

fn stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

fn signature_of(s: FileStamp) -> Signature {
    Signature {
        hash: crate::store::atomic::checksum(&[
            &s.dev.to_le_bytes(),
            &s.ino.to_le_bytes(),
            &s.size.to_le_bytes(),
            &s.mtime_ns.to_le_bytes(),
            &s.ctime_ns.to_le_bytes(),
        ]),
        updated_ms: (s.mtime_ns / 1_000_000) as i64,
    }
}

#[derive(Deserialize)]
struct Messages<'a> {
    #[serde(borrow, default)]
    messages: Option<Vec<&'a RawValue>>,
}

/// One thread file as a dump: the thread without `messages`, then each message.
pub fn dump_thread(bytes: &[u8], id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let whole = std::str::from_utf8(bytes).ok().and_then(|text| {
        let doc: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
        let messages: Messages = serde_json::from_str(text).ok()?;
        Some((doc, messages))
    });
    let Some((mut doc, messages)) = whole else {
        let mut w = ObjectWriter::default();
        w.string("id", id);
        out.extend_from_slice(w.finish().as_bytes());
        out.push(b'\n');
        let mut w = ObjectWriter::default();
        w.string(
            "fen_unreadable",
            "the thread file is not whole JSON (damaged, or caught while Amp rewrote it)",
        );
        out.extend_from_slice(w.finish().as_bytes());
        out.push(b'\n');
        return out;
    };
    doc.remove("messages");
    if !doc.contains_key("id") {
        doc.insert("id".into(), serde_json::Value::String(id.into()));
    }
    out.extend_from_slice(serde_json::Value::Object(doc).to_string().as_bytes());
    out.push(b'\n');
    for m in messages.messages.unwrap_or_default() {
        // Whitespace out, every byte of strings and numbers kept.
        let line = crate::sources::json_text::minify(m.get()).unwrap_or_default();
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Amp's threads folder as units.
pub struct AmpUnits {
    root: PathBuf,
}

impl AmpUnits {
    pub fn new(root: &Path) -> Self {
        AmpUnits {
            root: root.to_path_buf(),
        }
    }
}

impl UnitSource for AmpUnits {
    /// The threads folder (every thread file is rewritten there) and where it comes.
    fn watched(&self) -> Vec<PathBuf> {
        vec![threads_dir(&self.root), self.root.clone()]
    }

    fn list(&self) -> Vec<UnitInfo> {
        let Ok(rd) = std::fs::read_dir(threads_dir(&self.root)) else {
            return Vec::new();
        };
        let mut out: Vec<UnitInfo> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter(|e| is_thread_name(&e.file_name().to_string_lossy()))
            .map(|e| UnitInfo {
                key: e.path(),
                cwd: None,
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    fn signature(&self, key: &Path) -> Option<Signature> {
        stamp(key).map(signature_of)
    }

    fn dump(&self, key: &Path) -> Option<Dump> {
        let (file, meta) = crate::store::open::open_regular(key).ok()?;
        let before = FileStamp::of(&meta);
        let id = key
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if meta.len() > MAX_THREAD_BYTES {
            let mut w = ObjectWriter::default();
            w.string("id", &id);
            let mut bytes = w.finish().into_bytes();
            bytes.push(b'\n');
            let mut w = ObjectWriter::default();
            w.string("fen_unreadable", "the thread file is larger than 512 MiB");
            bytes.extend_from_slice(w.finish().as_bytes());
            bytes.push(b'\n');
            return Some(Dump {
                bytes,
                signature: signature_of(before),
                transient: false,
            });
        }
        let mut raw = Vec::with_capacity(meta.len() as usize);
        use std::io::Read;
        (&file).read_to_end(&mut raw).ok()?;
        Some(Dump {
            bytes: dump_thread(&raw, &id),
            signature: signature_of(before),
            transient: false,
        })
    }

    fn source_path(&self, key: &Path) -> PathBuf {
        key.to_path_buf()
    }
}
