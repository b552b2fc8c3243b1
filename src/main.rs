use clap::Parser;

/// mimalloc instead of glibc malloc: the server's threads (HTTP workers and the writer) allocate
/// and free across threads all the time, where glibc's arenas spend their time consolidating.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    match hooklog::cli::Cli::try_parse() {
        Ok(cli) => cli.run(),
        // `hooklog hook` runs inside an agent: a bad flag must not print or fail there (exit
        // code 2 would block a Claude Code tool call), nor lose the event: it runs with the
        // defaults instead.
        Err(e)
            if e.kind() != clap::error::ErrorKind::DisplayHelp
                && std::env::args_os().nth(1).is_some_and(|a| a == "hook") =>
        {
            hooklog::cli::forwarder::HookArgs::fallback().run()
        }
        Err(e) => e.exit(),
    }
}
