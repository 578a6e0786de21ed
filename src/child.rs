//! A framework served by a child process, `framebench serve <fw> ...` on 127.0.0.1:0, pinned to
//! the server CPUs ([`crate::pinning`]). The load driver (and through it the quick compare) and
//! the loopback benches start their servers here. What it prints on stderr is kept for the
//! report, and a crash cannot take its parent down: [`ServerProcess::exited`] says so. Dropping it
//! stops it (SIGTERM, then SIGKILL).

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};

use crate::options::Options;
use crate::pinning::pin_current_thread;

/// How long a server may take to print its address.
const STARTUP: Duration = Duration::from_secs(20);
/// How much of the server's stderr is kept.
const STDERR_KEEP: usize = 4096;

/// A running `framebench serve` child.
pub struct ServerProcess {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// The framebench binary to run `serve` with: `FRAMEBENCH_BIN`, else this executable.
pub fn framebench_exe() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("FRAMEBENCH_BIN") {
        return Ok(p.into());
    }
    std::env::current_exe().context("cannot find the framebench executable")
}

/// The framebench binary itself, for a framework served by a child framebench process
/// (`framebench child <name>`): `FRAMEBENCH_BIN`, else this executable when it is framebench,
/// else the `framebench` that cargo built beside a test or bench binary (`target/<profile>/`
/// above its `deps/`). The error is one line.
pub fn framebench_binary() -> Result<PathBuf, String> {
    let exe = framebench_exe().map_err(|e| format!("{e:#}"))?;
    let path = if std::env::var_os("FRAMEBENCH_BIN").is_some()
        || exe.file_name().is_some_and(|n| n == "framebench")
    {
        exe
    } else {
        let dir = exe.parent().unwrap_or(Path::new("."));
        let dir = if dir.file_name().is_some_and(|n| n == "deps") {
            dir.parent().unwrap_or(dir)
        } else {
            dir
        };
        dir.join("framebench")
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "no framebench binary at {} to serve it from: build it with `cargo build --release` \
             or point FRAMEBENCH_BIN at one",
            path.display()
        ))
    }
}

impl ServerProcess {
    /// Starts `exe serve name` (`exe` is the framebench binary, see [`framebench_exe`]) with
    /// `options`, pinned to `cpus` (empty: where this process may run), and waits for its
    /// address.
    pub fn start(exe: &Path, name: &str, options: Options, cpus: &[usize]) -> anyhow::Result<Self> {
        let mut cmd = Command::new(exe);
        cmd.args(["serve", name, "--threads"])
            .arg(options.threads.to_string())
            .args(["--logging", &options.logging.to_string()])
            .args(["--io", &options.io.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let cpus = cpus.to_vec();
        // SAFETY: the closure only makes the sched_setaffinity syscall, which is
        // async-signal-safe; every thread the server starts inherits the mask.
        unsafe {
            cmd.pre_exec(move || {
                pin_current_thread(&cpus);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", exe.display()))?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut err) = child.stderr.take() {
            let keep = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut chunk = [0u8; 1024];
                while let Ok(n) = err.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut k = keep.lock().unwrap_or_else(|e| e.into_inner());
                    k.extend_from_slice(&chunk[..n]);
                    if k.len() > STDERR_KEEP {
                        let cut = k.len() - STDERR_KEEP;
                        k.drain(..cut);
                    }
                }
            });
        }
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            // With --logging stdout the server keeps printing: drain it so it never blocks.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let mut server = ServerProcess {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stderr,
        };
        let deadline = Instant::now() + STARTUP;
        let line = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => break line,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(_) => bail!(
                    "{name} server did not print its address: {}",
                    server.stderr_text()
                ),
            }
        };
        let url = line
            .trim()
            .strip_prefix("listening on http://")
            .ok_or_else(|| {
                anyhow!(
                    "{name} server: unexpected first line {:?} {}",
                    line.trim(),
                    server.stderr_text()
                )
            })?;
        server.addr = url
            .parse()
            .with_context(|| format!("{name} server printed a bad address {url:?}"))?;
        Ok(server)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(description)` once the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    /// The end of what it printed on stderr, on one line.
    pub fn stderr_text(&self) -> String {
        // Give the reader thread a moment to collect the last words of a dying server.
        std::thread::sleep(Duration::from_millis(50));
        let k = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&k);
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            "(nothing on stderr)".into()
        } else {
            format!("stderr: {text}")
        }
    }

    /// Stops it: SIGTERM, then SIGKILL after half a second (a pool blocked on starved
    /// connections may not notice SIGTERM sooner; nothing it does then is measured).
    pub fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        // SAFETY: kill on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
