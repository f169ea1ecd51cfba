//! OpenClaw (AGENT-FORMATS-MORE.md §5): its agents write pi's session format (v3
//! header, entries in a parent-linked tree) through pi's own session manager, so
//! [`super::pi::PiReader`] reads them as pi resumes them. What is OpenClaw's own is
//! where the files are (`agents/<agent>/sessions/`) and which of them are sessions
//! (OCL `src/config/sessions/artifacts.ts`, `isPrimarySessionTranscriptFileName`).

pub mod kind;

/// OpenClaw's messages are pi's AgentMessages: pi's conversion.
pub use super::pi::to_neutral;

/// Whether a file of `agents/<agent>/sessions/` is a session transcript:
/// `<id>.jsonl` or `<id>-topic-<topic>.jsonl`, not a trajectory log
/// (`*.trajectory.jsonl`), a pre-compaction twin (`<id>.checkpoint.<uuid>.jsonl`) or
/// a backup (`*.jsonl.bak|reset|deleted.<time>`, which do not end in `.jsonl`).
pub fn is_session_file_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".jsonl") else {
        return false;
    };
    !stem.is_empty() && !stem.ends_with(".trajectory") && !is_checkpoint(stem)
}

/// `<id>.checkpoint.<uuid>` (the stem of a checkpoint twin).
fn is_checkpoint(stem: &str) -> bool {
    let Some((_, uuid)) = stem.rsplit_once(".checkpoint.") else {
        return false;
    };
    let b = uuid.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::is_session_file_name as is;

    #[test]
    fn artifacts_are_not_sessions() {
        assert!(is("0e4b6f1c-1111-4222-8333-444455556666.jsonl"));
        assert!(is("main-topic-release.jsonl"));
        assert!(is("my.checkpoint.notes.jsonl"));
        assert!(!is("s.trajectory.jsonl"));
        assert!(!is("s.trajectory-path.json"));
        assert!(!is(
            "s.checkpoint.0e4b6f1c-1111-4222-8333-444455556666.jsonl"
        ));
        assert!(!is("s.jsonl.reset.2026-01-01T00-00-00.000Z"));
        assert!(!is("s.jsonl.bak.2026-01-01T00-00-00Z"));
        assert!(!is("sessions.json"));
        assert!(!is(".jsonl"));
    }
}
