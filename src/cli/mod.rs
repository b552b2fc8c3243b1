//! The command line: one file per subcommand, each an `Args` struct with `run()`.

pub mod bench;
pub mod rebuild;
pub mod serve;
pub mod tail;

use clap::{Parser, Subcommand};

/// hooklog: the black box recorder for coding agents.
#[derive(Parser)]
#[command(name = "hooklog", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the server.
    Serve(serve::ServeArgs),
    /// Follow a session, or every event, as readable lines (or JSON with --json).
    Tail(tail::TailArgs),
    /// Drop every projection and derive it again from the log (--check: compare, change nothing).
    Rebuild(rebuild::RebuildArgs),
    /// Load generators that measure hooklog.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

impl Cli {
    pub fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Serve(args) => args.run(),
            Command::Tail(args) => args.run(),
            Command::Rebuild(args) => args.run(),
            Command::Bench(command) => command.run(),
        }
    }
}
