//! A framework's server as a child process (`framebench serve`), optionally pinned to one core
//! with `taskset`, so that the loopback benches measure a server that shares no core with the
//! client.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use crate::options::Options;

/// How long a child server may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Cores to pin the server and the client to, when the machine has two or more and `taskset`
/// is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinning {
    /// The server's core.
    pub server: usize,
    /// The client's core.
    pub client: usize,
}

/// `Some` when pinning is possible: at least two cores and `taskset` on the PATH.
pub fn pinning() -> Option<Pinning> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let taskset = Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (cores >= 2 && taskset).then_some(Pinning {
        server: 0,
        client: 1,
    })
}

/// Pins the calling process's main thread (and the threads it starts later) to `cpu`. Call it
/// from the main thread.
pub fn pin_self(cpu: usize) -> anyhow::Result<()> {
    let status = Command::new("taskset")
        .args([
            "-p",
            "-c",
            &cpu.to_string(),
            &std::process::id().to_string(),
        ])
        .stdout(Stdio::null())
        .status()
        .context("taskset")?;
    if !status.success() {
        bail!("taskset -p -c {cpu} failed: {status}");
    }
    Ok(())
}

/// A running `framebench serve` child. Dropping it sends SIGTERM and waits (at most 5 s, then
/// SIGKILL).
pub struct ServerProcess {
    child: Child,
    addr: SocketAddr,
}

impl ServerProcess {
    /// Starts `bin serve framework` on 127.0.0.1:0 with `options`, on core `cpu` if given, and
    /// waits for its `listening on http://IP:PORT` line.
    pub fn spawn(
        bin: &Path,
        framework: &str,
        options: Options,
        cpu: Option<usize>,
    ) -> anyhow::Result<Self> {
        let mut cmd = match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &cpu.to_string()]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.args(["serve", framework, "--addr", "127.0.0.1:0"])
            .args(["--threads", &options.threads.to_string()])
            .args(["--logging", &options.logging.to_string()])
            .args(["--io", &options.io.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("child stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = tx.send(BufReader::new(stdout).read_line(&mut line).map(|_| line));
        });
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e).context("reading the server's address");
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{framework} did not print its address within {START_TIMEOUT:?}");
            }
        };
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|a| a.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{framework}: unexpected first line {line:?}");
        };
        Ok(ServerProcess { child, addr })
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
