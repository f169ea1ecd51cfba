//! fen-fs: a session store for AI coding agents, served as a FUSE filesystem.
//!
//! The layers, each calling only those below it (docs/architecture.md):
//! `commands` (the CLI, with clap) → `daemon` (mount lifecycle) → `fuse` (the only
//! user of fuser) → `tree` (the mount's tree as plain Rust) → `sources` (one per kind
//! of store) and `ctl` (control files) → `views` → `store` (files on disk); `check`
//! is `fen-fs fsck`.

//!
//! Without the `full` feature only the bottom layers build (`store`, `ctl`, `json`,
//! `check`): what the fuzz targets exercise, without tantivy, SQLite, fuser or clap.

pub mod check;
pub mod ctl;
pub mod error;
pub mod json;
pub mod store;

pub use error::{Error, Result};

#[cfg(feature = "full")]
pub mod agent;
#[cfg(feature = "full")]
pub mod background;
#[cfg(feature = "full")]
pub mod commands;
#[cfg(feature = "full")]
pub mod config;
#[cfg(feature = "full")]
pub mod daemon;
#[cfg(feature = "full")]
pub mod dates;
#[cfg(feature = "full")]
pub mod export;
#[cfg(feature = "full")]
pub mod fuse;
#[cfg(feature = "full")]
pub mod history;
pub mod host;
#[cfg(feature = "full")]
pub mod keep;
#[cfg(feature = "full")]
pub mod mcp;
#[cfg(feature = "full")]
pub mod mount_table;
#[cfg(feature = "full")]
pub mod neutral;
#[cfg(feature = "full")]
pub mod redact;
#[cfg(feature = "full")]
pub mod resume;
#[cfg(feature = "full")]
pub mod search;
#[cfg(feature = "full")]
pub mod sources;
#[cfg(feature = "full")]
pub mod sync;
#[cfg(feature = "full")]
pub mod tree;
#[cfg(feature = "full")]
pub mod usage;
#[cfg(feature = "full")]
pub mod usage_record;
#[cfg(feature = "full")]
pub mod views;
#[cfg(feature = "full")]
pub mod web;
#[cfg(feature = "full")]
pub mod workers;
