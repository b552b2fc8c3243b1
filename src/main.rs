use clap::Parser;

/// mimalloc instead of glibc malloc: the server's threads (HTTP workers and the writer) allocate
/// and free across threads all the time, where glibc's arenas spend their time consolidating.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    hooklog::cli::Cli::parse().run()
}
