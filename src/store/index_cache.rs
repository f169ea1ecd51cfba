//! The persisted session index: a remount need not re-parse a large unchanged (or
//! only appended-to) transcript. One file per session under
//! `layout::session_index_cache`: a JSON line with the index's
//! counters and its `FileStamp`, then the message table as 48-byte records.
//!
//! A cache proves it belongs to the file before it is used: its own checksum, the
//! file's device, inode, and (unless the file only grew) size, mtime and ctime in
//! nanoseconds, and a hash of the first and last KiB of the parsed part
//! (`content_check`), so a file re-created on the same inode or rewritten in place
//! is parsed again. Anything else, or any damage to the cache file, means a full
//! parse; a cache is never fatal. Written atomically; safe to delete.
//!
//! Layout: `<checksum hex of the rest>\n<head JSON>\n<records>`.

use super::index::{FileStamp, MessageRec, SessionIndex, content_check};
use super::layout::CacheFile;
use std::fs::File;

/// Transcripts smaller than this are parsed faster than their cache is read.
pub const MIN_BYTES: u64 = 1 << 20;
const VERSION: u32 = 2;
/// A cache file larger than this is not read (a table of 48-byte records).
const MAX_CACHE_BYTES: u64 = 1 << 30;
const RECORD: usize = 48;

#[derive(serde::Serialize, serde::Deserialize)]
struct Head {
    version: u32,
    records: usize,
    index: SessionIndex,
}

/// The cached index, if it describes an earlier (or the same) state of the open
/// transcript `file`, whose current state is `now`.
/// `renamed_copies`: the file may be a longer copy of the one the index describes,
/// delivered by rename (another machine's store, §12): another inode is then the same
/// session when its bytes say so (the content check below).
pub fn load(
    cache: &CacheFile,
    file: &File,
    now: &FileStamp,
    renamed_copies: bool,
) -> Option<SessionIndex> {
    let bytes = super::atomic::read_file(cache, MAX_CACHE_BYTES)?;
    let nl = memchr::memchr(b'\n', &bytes)?;
    let sum = u64::from_str_radix(std::str::from_utf8(&bytes[..nl]).ok()?, 16).ok()?;
    let rest = &bytes[nl + 1..];
    if super::atomic::checksum(&[rest]) != sum {
        return None;
    }
    let nl = memchr::memchr(b'\n', rest)?;
    let head: Head = serde_json::from_slice(&rest[..nl]).ok()?;
    let body = &rest[nl + 1..];
    if head.version != VERSION || Some(body.len()) != head.records.checked_mul(RECORD) {
        return None;
    }
    let idx = head.index;
    let was = idx.file;
    let same_file = renamed_copies || (was.dev == now.dev && was.ino == now.ino);
    // Unchanged, or only grown (then the parsed part must still be there); a copy
    // delivered anew may have the same size.
    let state_ok = was == *now
        || (now.size > was.size && idx.parsed_len <= was.size)
        || (renamed_copies && now.size >= was.size && idx.parsed_len <= was.size);
    if !same_file || !state_ok || idx.parsed_len > now.size {
        return None;
    }
    if content_check(file, idx.parsed_len).ok()? != idx.check {
        return None;
    }
    let records: Vec<MessageRec> = body.chunks_exact(RECORD).map(decode).collect();
    // Offsets a damaged (or forged) table could hold must not reach a read.
    let mut out_end = 0;
    for r in &records {
        if r.start.checked_add(r.len as u64)? > idx.parsed_len || r.out_end < out_end {
            return None;
        }
        out_end = r.out_end;
    }
    *idx.messages.write().unwrap() = records;
    Some(idx)
}

/// Best effort: a cache that cannot be written costs the next remount a parse.
pub fn save(cache: &CacheFile, idx: &SessionIndex) {
    let table = idx.messages.read().unwrap();
    let head = Head {
        version: VERSION,
        records: table.len(),
        index: {
            let mut index = idx.clone();
            index.check = idx.content_hash();
            index
        },
    };
    let Ok(mut rest) = serde_json::to_vec(&head) else {
        return;
    };
    rest.push(b'\n');
    rest.reserve(table.len() * RECORD);
    for m in table.iter() {
        encode(m, &mut rest);
    }
    drop(table);
    let mut bytes = format!("{:x}\n", super::atomic::checksum(&[&rest])).into_bytes();
    bytes.extend_from_slice(&rest);
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
        let cache = CacheFile {
            root: dir.path().to_path_buf(),
            dirs: vec!["c".into()],
            name: "s.idx".into(),
        };
        save(&cache, &idx);
        let f = File::open(&file).unwrap();
        let now = idx.file;
        let back = load(&cache, &f, &now, false).expect("loads");
        assert_eq!(
            *back.messages.read().unwrap(),
            *idx.messages.read().unwrap()
        );
        assert_eq!(back.compactions, idx.compactions);
        assert_eq!(back.file, idx.file);
        assert_eq!(back.roles, idx.roles);
        assert_eq!(back.parsed_len, idx.parsed_len);
        let other = FileStamp {
            ino: now.ino + 1,
            ..now
        };
        assert!(load(&cache, &f, &other, false).is_none(), "another inode");
        // Another machine's store (§12): a copy of the same bytes delivered by rename
        // is the same session (its content says so), a shorter one is not.
        assert!(load(&cache, &f, &other, true).is_some(), "a copy, renamed");
        let shorter = FileStamp {
            size: now.size - 1,
            ..now
        };
        assert!(
            load(&cache, &f, &shorter, false).is_none(),
            "a shorter file"
        );
        let touched = FileStamp {
            ctime_ns: now.ctime_ns + 1,
            ..now
        };
        assert!(
            load(&cache, &f, &touched, false).is_none(),
            "changed in place"
        );
        let mut bytes = std::fs::read(cache.path()).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(cache.path(), &bytes).unwrap();
        assert!(load(&cache, &f, &now, false).is_none(), "damaged cache");
    }
}
