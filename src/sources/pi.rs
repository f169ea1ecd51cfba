//! Reader of pi session files (see ForeignReader).

use super::foreign::{ForeignReader, ForeignSummary, MessagePieces};

/// Placeholder until the pi reader lands.
#[derive(Default)]
pub struct PiReader;

impl PiReader {
    pub fn new() -> Self {
        PiReader
    }
}

impl ForeignReader for PiReader {
    fn feed(&mut self, _offset: u64, bytes: &[u8]) -> u64 {
        bytes.len() as u64
    }
    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        ForeignSummary::default()
    }
    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        Vec::new()
    }
}
