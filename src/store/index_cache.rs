//! The persisted session index: a remount need not re-parse a large unchanged (or
//! only appended-to) transcript. One file per session under
//! `layout::session_index_cache`: a JSON line with the index's
//! counters and its `FileStamp`, then the message table as 48-byte records.
//!
//! It is trusted exactly as far as the in-memory index is: same device and inode,
//! and the file at least as long as what was parsed (append-only growth is then
//! parsed incrementally). Anything else, or any damage to the cache file, means a
//! full parse. Written atomically; safe to delete.

use super::index::{MessageRec, SessionIndex};
use std::path::Path;

/// Transcripts smaller than this are parsed faster than their cache is read.
pub const MIN_BYTES: u64 = 1 << 20;
const VERSION: u32 = 1;
const RECORD: usize = 48;

#[derive(serde::Serialize, serde::Deserialize)]
struct Head {
    version: u32,
    records: usize,
    index: SessionIndex,
}

/// The cached index, if it describes an earlier (or the same) state of the file
/// whose current (dev, inode, size) are given.
pub fn load(cache: &Path, dev: u64, ino: u64, size: u64) -> Option<SessionIndex> {
    let bytes = std::fs::read(cache).ok()?;
    let nl = memchr::memchr(b'\n', &bytes)?;
    let head: Head = serde_json::from_slice(&bytes[..nl]).ok()?;
    let body = &bytes[nl + 1..];
    if head.version != VERSION || body.len() != head.records * RECORD {
        return None;
    }
    let idx = head.index;
    if idx.file.dev != dev || idx.file.ino != ino || idx.parsed_len > size || idx.file.size > size {
        return None;
    }
    let records: Vec<MessageRec> = body.chunks_exact(RECORD).map(decode).collect();
    *idx.messages.write().unwrap() = records;
    Some(idx)
}

/// Best effort: a cache that cannot be written costs the next remount a parse.
pub fn save(cache: &Path, idx: &SessionIndex) {
    let table = idx.messages.read().unwrap();
    let head = Head {
        version: VERSION,
        records: table.len(),
        index: idx.clone(),
    };
    let Ok(mut bytes) = serde_json::to_vec(&head) else {
        return;
    };
    bytes.push(b'\n');
    bytes.reserve(table.len() * RECORD);
    for m in table.iter() {
        encode(m, &mut bytes);
    }
    drop(table);
    super::atomic::replace_file(cache, &bytes);
}

fn encode(m: &MessageRec, out: &mut Vec<u8>) {
    out.extend_from_slice(&m.start.to_le_bytes());
    out.extend_from_slice(&m.len.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&m.key[0].to_le_bytes());
    out.extend_from_slice(&m.key[1].to_le_bytes());
    out.extend_from_slice(&m.out_end.to_le_bytes());
    out.extend_from_slice(&m.tokens_end.to_le_bytes());
}

fn decode(b: &[u8]) -> MessageRec {
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    MessageRec {
        start: u64_at(0),
        len: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
        key: [u64_at(16), u64_at(24)],
        out_end: u64_at(32),
        tokens_end: u64_at(40),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_validation() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        let mut text =
            String::from("{\"type\":\"session\",\"version\":2,\"id\":\"x\",\"cwd\":\"/p\"}\n");
        for i in 0..100 {
            text.push_str(&format!(
                "{{\"type\":\"message\",\"id\":\"id-{i:03}\",\"message\":{{\"role\":\"user\",\"content\":\"m{i}\"}}}}\n"
            ));
        }
        text.push_str(
            "{\"type\":\"compaction\",\"summary\":\"s\",\"first-kept-entry-id\":\"id-050\"}\n",
        );
        std::fs::write(&file, &text).unwrap();
        let idx = SessionIndex::load(&file).unwrap();
        let cache = dir.path().join("c/s.idx");
        save(&cache, &idx);
        let (dev, ino, size) = (idx.file.dev, idx.file.ino, idx.file.size);
        let back = load(&cache, dev, ino, size).expect("loads");
        assert_eq!(
            *back.messages.read().unwrap(),
            *idx.messages.read().unwrap()
        );
        assert_eq!(back.compactions, idx.compactions);
        assert_eq!(back.file, idx.file);
        assert_eq!(back.roles, idx.roles);
        assert_eq!(back.parsed_len, idx.parsed_len);
        assert!(load(&cache, dev, ino + 1, size).is_none(), "another inode");
        assert!(load(&cache, dev, ino, size - 1).is_none(), "a shorter file");
        std::fs::write(&cache, b"garbage").unwrap();
        assert!(load(&cache, dev, ino, size).is_none(), "damaged cache");
    }
}
