//! `fen-fs mcp` (SPEC §14): a Model Context Protocol server on stdio, on the official
//! Rust SDK (rmcp), that lets agents ask the history of past sessions: read-only
//! tools over what the library reads (fen's store, other agents' sources, the search
//! index), with or without a mount.
//!
//! - `crate::history`: what the tools read, shared for the life of the server (the
//!   web server reads the same);
//! - `tool`: what one tool is (the `Tool` trait), and answers kept under a size cap;
//! - `tools/`: one file per tool, listed in `tools::all`;
//! - `server`: the rmcp handler that lists and calls them.

pub mod server;
pub mod tool;
pub mod tools;

use crate::error::{Error, Result};
use rmcp::ServiceExt;

/// Serves the tools over `history` on stdin/stdout until the client closes stdin.
pub fn serve(history: crate::history::History) -> Result<()> {
    // Before any thread of the server starts.
    crate::workers::limit_malloc_arenas();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the MCP server", &e))?;
    let history = std::sync::Arc::new(history);
    let served = runtime.block_on(async {
        let running = server::Server::new(history.clone())
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::invalid(format!("MCP: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| Error::invalid(format!("MCP: {e}")))?;
        Ok::<(), Error>(())
    });
    // A search index update still running stops and commits what it has.
    history.stop();
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served
}
