//! `fen-fs export SESSION [--format html|md|json] [-o FILE] [--no-redact]
//! [--redact-paths]`: what it prints, apart from its options (the work is
//! `crate::export`'s).

use crate::error::{Error, Result};
use crate::export::{self, Format, Options};
use crate::store::Store;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// What the command was asked.
pub struct Args {
    pub session: String,
    pub options: Options,
    /// The file to write (`None` or `-`: stdout).
    pub output: Option<PathBuf>,
    pub store_root: PathBuf,
    /// Whether the store was named (`--store`, `$FEN_FS_STORE`): then it must exist.
    pub store_named: bool,
    pub foreign: crate::sources::ForeignOptions,
    pub peers: crate::sources::peers::PeerOptions,
}

pub fn parse_format(s: &str) -> std::result::Result<Format, String> {
    Format::from_name(s).ok_or_else(|| format!("one of {}", Format::NAMES.join(", ")))
}

/// Runs `fen-fs export`: exit 2 when no session (or more than one) matches.
pub fn run(args: Args) -> Result<ExitCode> {
    let by_path = args.session.contains('/') || args.session.ends_with(".jsonl");
    if args.store_named && !by_path && !args.store_root.is_dir() {
        eprintln!(
            "fen-fs: no fen-fs store at {} (mistyped --store?)",
            args.store_root.display()
        );
        return Ok(ExitCode::from(2));
    }
    let store = Arc::new(Store::open_existing(&args.store_root));
    let foreign = super::list::foreign_sources(&args.foreign, &store);
    let peers = super::list::peer_sources(&args.peers, &store)?;
    let found = match export::find(&store, &foreign, &peers, &args.session) {
        Ok(f) => f,
        Err(e) if matches!(e.errno, libc::ENOENT | libc::EINVAL) => {
            eprintln!("fen-fs: {}", e.reason);
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e),
    };
    let mut options = args.options;
    if options.format == Format::Html {
        options.counted = export::counted(&found.source, &found.ns, &found.dir, &store.root);
    }
    let source = found.source.as_ref();
    let report = match args.output.as_deref().filter(|p| p.as_os_str() != "-") {
        Some(path) => export::to_path(source, &found.ns, &found.dir, &options, path)?,
        None => {
            let (mut file, report) = export::to_temp(source, &found.ns, &found.dir, &options)?;
            let mut stdout = std::io::stdout().lock();
            match std::io::copy(&mut file, &mut stdout).and_then(|_| stdout.flush()) {
                Ok(()) => {}
                // A reader that went away (`| head`) wanted no more.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(Error::io("stdout", &e)),
            }
            report
        }
    };
    eprintln!("fen-fs: {}", report.summary());
    Ok(ExitCode::SUCCESS)
}
