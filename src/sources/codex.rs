//! Reader of codex session files (see ForeignReader).
