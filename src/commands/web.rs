//! `fen-fs web`: the history in a browser (the work is `crate::web`'s).

use crate::error::Result;
use crate::history::History;
use crate::sources::ForeignOptions;
use crate::sources::peers::PeerOptions;
use crate::store::Store;
use std::process::ExitCode;

/// Serves until SIGINT or SIGTERM. `store_args` are the `--store`, `--source`,
/// `--no-detect`, `--peers` and `--map` options it was given, for the commands its
/// pages print.
pub fn run(
    store: Store,
    foreign: ForeignOptions,
    peers: &PeerOptions,
    store_args: Vec<String>,
    options: crate::web::Options,
) -> Result<ExitCode> {
    crate::web::serve(History::new(store, foreign, peers, store_args)?, options)?;
    Ok(ExitCode::SUCCESS)
}
