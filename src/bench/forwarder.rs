//! `hooklog bench hook`: what one run of `hooklog hook` costs, start-up included: the process
//! is started, given a ~700 byte Claude Code payload on stdin, and timed until it exits. Also
//! the same runs with no server (each spools its event), and how fast `spool flush` delivers
//! that backlog.

use super::Server;
use crate::config::Durability;
use anyhow::{Context, bail};
use clap::Args;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct HookBenchArgs {
    /// Runs per measurement.
    #[arg(long, default_value_t = 500)]
    pub runs: usize,
    /// Durability of the server this command starts.
    #[arg(long, value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
}

impl HookBenchArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let exe = std::env::current_exe().context("finding the hooklog binary")?;
        let scratch = tempfile::tempdir()?;
        let spool = scratch.path().join("spool");
        println!("hooklog bench hook: {} runs per measurement", self.runs);

        let floor = time_runs(self.runs, |_| {
            let status = Command::new(&exe)
                .arg("--version")
                .stdout(Stdio::null())
                .status()?;
            anyhow::ensure!(status.success());
            Ok(())
        })?;
        report("process start-up alone (hooklog --version)", &floor);

        let mut server = Server::start(self.durability)?;
        let url = server.url();
        let delivered = time_runs(self.runs, |i| hook(&exe, &spool, &url, i))?;
        report("start-up + one delivery (server up)", &delivered);
        if spooled(&spool)? != 0 {
            bail!("events were left in the spool with the server up");
        }
        server.stop();

        // The port the server had is closed now: every run spools its event.
        let down = time_runs(self.runs, |i| hook(&exe, &spool, &url, self.runs + i))?;
        report("start-up + spooling (server down)", &down);
        let backlog = spooled(&spool)?;

        let mut server = Server::start(self.durability)?;
        let started = Instant::now();
        let flushed = Command::new(&exe)
            .args(["spool", "flush", "--url", &server.url()])
            .env("HOOKLOG_SPOOL", &spool)
            .stdout(Stdio::null())
            .status()?;
        let took = started.elapsed();
        server.stop();
        anyhow::ensure!(flushed.success(), "spool flush failed");
        println!(
            "spool flush: {backlog} events in {:.1} ms, {:.0} events/s",
            took.as_secs_f64() * 1e3,
            backlog as f64 / took.as_secs_f64()
        );
        Ok(())
    }
}

fn hook(exe: &Path, spool: &Path, url: &str, i: usize) -> anyhow::Result<()> {
    let mut child = Command::new(exe)
        .arg("hook")
        .env("HOOKLOG_URL", url)
        .env("HOOKLOG_SPOOL", spool)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let payload = super::ingest::hook_payload(i, 50);
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(payload.as_bytes())?;
    child.wait()?;
    Ok(())
}

fn spooled(spool: &Path) -> anyhow::Result<usize> {
    Ok(
        crate::forward::spool::Spool::open(spool, Default::default())?
            .list()?
            .len(),
    )
}

fn time_runs(
    runs: usize,
    mut run: impl FnMut(usize) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs {
        let started = Instant::now();
        run(i)?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times)
}

fn report(what: &str, sorted: &[Duration]) {
    let at = |q: f64| {
        let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[i].as_secs_f64() * 1e3
    };
    println!(
        "{what}: median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
}
