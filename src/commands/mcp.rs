//! `fen-fs mcp`: the MCP server on stdio (the work is `crate::mcp`'s).

use crate::error::Result;
use crate::history::History;
use crate::sources::ForeignOptions;
use crate::sources::peers::PeerOptions;
use crate::store::Store;
use std::process::ExitCode;

/// Serves until the client closes stdin. `store_args` are the `--store`, `--source`,
/// `--no-detect`, `--peers` and `--map` options it was given, for the commands it
/// prints.
pub fn run(
    store: Store,
    foreign: ForeignOptions,
    peers: &PeerOptions,
    store_args: Vec<String>,
) -> Result<ExitCode> {
    crate::mcp::serve(History::new(store, foreign, peers, store_args)?)?;
    Ok(ExitCode::SUCCESS)
}
