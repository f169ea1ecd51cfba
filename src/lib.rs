//! fen-fs: a session store for AI coding agents, served as a FUSE filesystem.
//!
//! The layers, each calling only those below it (README: Architecture):
//! `commands` (the CLI, with clap) → `daemon` (mount lifecycle) → `fuse` (the only
//! user of fuser) → `tree` (the mount's tree as plain Rust) → `sources` (one per kind
//! of store) and `ctl` (control files) → `views` → `store` (files on disk); `check`
//! is `fen-fs fsck`.

pub mod agent;
pub mod error;
pub mod json;
pub mod neutral;
pub mod search;

pub use error::{Error, Result};
pub mod check;
pub mod commands;
pub mod ctl;
pub mod daemon;
pub mod fuse;
pub mod mount_table;
pub mod sources;
pub mod store;
pub mod tree;
pub mod views;
