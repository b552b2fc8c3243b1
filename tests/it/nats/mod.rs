//! A real `nats-server` with JetStream for the many-machines tests, on a free port with its
//! store in a temporary directory, killed with `kill -9` when asked (or dropped). A machine
//! without `nats-server` skips those tests with a message; under `CI=true` a missing server
//! fails them instead (`.ci/run` installs it).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `nats-server`, or `None` after saying it is missing (a panic under CI).
pub fn nats_server() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|dir| dir.join("nats-server"))
        .find(|path| path.is_file());
    if found.is_some() {
        return found;
    }
    let message = "nats-server not found (apt-get install nats-server)";
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("CI runs the NATS tests: {message}");
    }
    eprintln!("SKIPPED: this NATS test did not run: {message}");
    None
}

pub struct Nats {
    binary: PathBuf,
    child: Option<Child>,
    pub port: u16,
    args: Vec<OsString>,
}

impl Nats {
    /// Starts `nats-server -js` on `port` with its store under `store`, and waits until it
    /// accepts connections.
    pub fn start(binary: &Path, port: u16, store: &Path) -> Nats {
        let port_arg = port.to_string();
        let args = ["-js", "-a", "127.0.0.1", "-p", &port_arg, "-sd"];
        let mut args: Vec<OsString> = args.iter().map(OsString::from).collect();
        args.push(store.into());
        Nats::start_with(binary, port, args)
    }

    /// Starts `nats-server -c config` (a cluster node: JetStream, its store, its client
    /// `port` and its routes all set in the file), and waits until it accepts connections.
    pub fn start_config(binary: &Path, port: u16, config: &Path) -> Nats {
        Nats::start_with(binary, port, vec!["-c".into(), config.into()])
    }

    fn start_with(binary: &Path, port: u16, args: Vec<OsString>) -> Nats {
        let mut nats = Nats {
            binary: binary.to_path_buf(),
            child: None,
            port,
            args,
        };
        nats.restart();
        nats
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts it again (same port, same store, same configuration) after [`Nats::kill`].
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new(&self.binary)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "nats-server did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL");
            child.wait().unwrap();
        }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.kill();
    }
}
