//! The `fen-fs` binary: parses the command line and runs it (`commands`).

use clap::Parser;
use fen_fs::commands::{Cli, run};
use std::process::ExitCode;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fen-fs: {}", e.reason);
            ExitCode::from(1)
        }
    }
}
