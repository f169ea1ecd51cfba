//! Session sources: one per kind of store (fen's own, pi, Claude Code, Codex).

pub mod claude;
pub mod codex;
pub mod foreign;
pub mod pi;
