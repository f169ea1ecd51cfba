//! fen-fs: a session store for AI coding agents, served as a FUSE filesystem.
//!
//! `store`, `views` and `ctl` are the plain-Rust core and know nothing of FUSE;
//! `fs` is the thin fuser adapter and `daemon` the mount lifecycle.

pub mod error;
pub mod json;

pub use error::{Error, Result};
pub mod catalog;
pub mod cli;
pub mod ctl;
pub mod daemon;
pub mod fs;
pub mod fsck;
pub mod sources;
pub mod store;
pub mod views;
pub mod watch;
