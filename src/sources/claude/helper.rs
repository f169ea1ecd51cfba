//! A forked helper run's transcript (`agent-a<label>-<16 hex>.jsonl`: a `/btw` side
//! question, a compaction...), as versions before 2.1.330 recorded some: the parent's
//! messages replayed, then the helper's one request. Not a session (never shown); it
//! is indexed only so that it is kept (§11) with its session, and its usage counted
//! from the copy once its file is gone. Its lines are not parsed: only counted.

use super::SubagentFile;
use crate::sources::foreign::{ForeignReader, ForeignSummary, MessagePieces};

#[derive(borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct HelperRun {
    file: SubagentFile,
    lines: u64,
}

impl HelperRun {
    pub fn new(file: SubagentFile) -> Self {
        HelperRun { file, lines: 0 }
    }
}

impl ForeignReader for HelperRun {
    fn feed(&mut self, _offset: u64, bytes: &[u8]) -> u64 {
        let Some(last) = memchr::memrchr(b'\n', bytes) else {
            return 0;
        };
        self.lines += memchr::memchr_iter(b'\n', &bytes[..=last]).count() as u64;
        last as u64 + 1
    }

    fn summary(&self, _tail: &[u8]) -> ForeignSummary {
        ForeignSummary {
            id: self.file.agent_id.clone(),
            parent_id: self.file.parent_id.clone(),
            hidden: true,
            entries: self.lines,
            not_resumable_reason: Some(
                "A forked helper run (a side question, a compaction...): it replays its parent's messages, and is not a session of its own.".into(),
            ),
            ..ForeignSummary::default()
        }
    }

    fn conversation(&self, _tail: &[u8]) -> Vec<MessagePieces> {
        Vec::new()
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        crate::sources::foreign::save_borsh(self)
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        crate::sources::foreign::restore_borsh(self, state)
    }
}
