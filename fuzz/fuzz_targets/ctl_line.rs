//! The ctl validator on arbitrary bytes: never panics, and whatever it accepts
//! serializes to a line the transcript parser reads back as one valid entry.
#![no_main]
use fen_fs::ctl::grammar::{parse_root_line, parse_session_line};
use fen_fs::store::line::{parse_line, Line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_root_line(data);
    if let Ok(entry) = parse_session_line(data) {
        let line = entry.to_line("01a20047-3e58-758d-a5b9-92bfe92870b7", None, "2026-01-01T00:00:00.000Z", &[]);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        match parse_line(&line[..line.len() - 1]) {
            Line::Entry(_) => {}
            Line::Malformed(why) => panic!("accepted line reads back malformed: {why}: {line}"),
            Line::Header(_) => panic!("accepted line reads back as a header: {line}"),
        }
    }
});
