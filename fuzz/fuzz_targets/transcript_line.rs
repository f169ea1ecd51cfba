//! The transcript loader on arbitrary bytes: never panics, and a refresh after an
//! append of arbitrary bytes equals a from-scratch load (incremental == full).
#![no_main]
use fen_fs::store::index::SessionIndex;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |&b| b as usize % (data.len().max(1)));
    let mut incremental = SessionIndex::new();
    let used = incremental.ingest(0, &data[..split]);
    let rest = &data[used..];
    incremental.ingest(used as u64, rest);
    let mut full = SessionIndex::new();
    full.ingest(0, data);
    assert_eq!(incremental.entries, full.entries);
    assert_eq!(incremental.malformed_lines, full.malformed_lines);
    assert_eq!(incremental.parsed_len, full.parsed_len);
    assert_eq!(*incremental.messages.read().unwrap(), *full.messages.read().unwrap());
    assert_eq!(incremental.compactions, full.compactions);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = fen_fs::store::line::parse_line(text);
    }
});
