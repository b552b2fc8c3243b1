use clap::Parser;

fn main() -> anyhow::Result<()> {
    hooklog::cli::Cli::parse().run()
}
