//! The one process layer: every server framebench runs as a child process starts, is waited
//! for and is stopped here.
//!
//! - [`ServerProcess::start`]: `framebench serve <fw>` on 127.0.0.1:0, pinned to the server
//!   CPUs ([`crate::pinning`]), for the load driver (and through it the quick compare),
//!   `deltas` and the loopback benches. What it prints on stderr is kept for the report, and a
//!   crash cannot take its parent down: [`ServerProcess::exited`] says so.
//! - [`serve_on`]: a framework whose server is a program of its own (the Go peers, and
//!   may-minihttp, whose coroutine workers never exit): the parent binds the listener and the
//!   child gets it as descriptor [`LISTENER_FD`]; its later stdout (request lines with
//!   logging=stdout) is forwarded to ours, its stderr is ours.
//!
//! Both take their variant flags from one builder ([`server_args`]), wait at most
//! [`STARTUP`] for the `listening on http://ADDR` line (which every child prints once it
//! serves), and stop the child the same way ([`stop`]: SIGTERM, then SIGKILL after
//! [`crate::options::GRACE`], then reap).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _};

use crate::framework::ServerHandle;
use crate::options::Options;
use crate::options::GRACE;
use crate::pinning::pin_current_thread;

/// How long a child may take to print its `listening on` line: a server's start-up, never a
/// build (the Go peers are built before, under their own bound).
pub(crate) const STARTUP: Duration = Duration::from_secs(20);
/// How much of a [`ServerProcess`]'s stderr is kept.
const STDERR_KEEP: usize = 4096;
/// The descriptor a [`serve_on`] child finds its listener on.
pub(crate) const LISTENER_FD: i32 = 3;

/// The framebench binary to run `serve` with: `FRAMEBENCH_BIN`, else this executable.
pub(crate) fn framebench_exe() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("FRAMEBENCH_BIN") {
        return Ok(p.into());
    }
    std::env::current_exe().context("cannot find the framebench executable")
}

/// The framebench binary itself, for a framework served by a child framebench process
/// (`framebench child <name>`): `FRAMEBENCH_BIN`, else this executable when it is framebench,
/// else the `framebench` that cargo built beside a test or bench binary (`target/<profile>/`
/// above its `deps/`. The error (shown with `{:#}`) is one line.
pub(crate) fn framebench_binary() -> anyhow::Result<PathBuf> {
    let exe = framebench_exe()?;
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
        Err(anyhow!(
            "no framebench binary at {} to serve it from: build it with `cargo build --release` \
             or point FRAMEBENCH_BIN at one",
            path.display()
        ))
    }
}

/// The flags every server child takes, `framebench serve`, `framebench child` and the Go
/// peers alike: `--threads N --logging L --io I`, and `--redis URL` when there is a Redis to
/// use as given (`serve` without it starts its own; a peer without it answers `/get` with 503).
/// `--runtime per-core` is passed only when asked for: the Go peers do not take it, and only a
/// framework that offers the choice is ever started with it. `--protocol h2c` likewise, to a
/// framework that serves it ([`crate::framework::Framework::PROTOCOLS`]), and `--tls` with the
/// run's certificate in the environment ([`crate::transport::tls::CERT_ENV`]).
pub(crate) fn server_args<'a>(
    cmd: &'a mut Command,
    options: Options,
    redis: Option<&str>,
) -> &'a mut Command {
    cmd.args(["--threads", &options.threads.to_string()])
        .args(["--logging", &options.logging.to_string()])
        .args(["--io", &options.io.to_string()])
        .args(
            (options.runtime != crate::options::Runtime::WorkStealing)
                .then(|| ["--runtime".to_owned(), options.runtime.to_string()])
                .into_iter()
                .flatten(),
        )
        .args(
            (!options.protocol.is_default())
                .then(|| ["--protocol".to_owned(), options.protocol.to_string()])
                .into_iter()
                .flatten(),
        )
        .args(redis.map(|url| ["--redis", url]).into_iter().flatten());
    if options.transport == crate::options::Transport::Tls {
        cmd.arg("--tls");
        // The run's certificate, in the child's environment: never a file on disk. Without
        // one the child says so in one line and exits.
        match crate::transport::tls::identity() {
            Ok(id) => cmd.envs(id.env()),
            Err(_) => cmd.envs([
                (crate::transport::tls::CERT_ENV, ""),
                (crate::transport::tls::KEY_ENV, ""),
            ]),
        };
    }
    cmd
}

/// A running `framebench serve` child. Dropping it stops it ([`stop`]).
pub struct ServerProcess {
    child: Arc<Mutex<Child>>,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl ServerProcess {
    /// Starts `exe serve name` (`exe` is the framebench binary, see [`framebench_exe`]) with
    /// `options`, pinned to `cpus` (empty: where this process may run), and waits for its
    /// address.
    pub fn start(exe: &Path, name: &str, options: Options, cpus: &[usize]) -> anyhow::Result<Self> {
        Self::start_with(exe, name, options, cpus, &[])
    }

    /// [`ServerProcess::start`] with `extra` flags after the others (`--heap FILE`).
    pub(crate) fn start_with(
        exe: &Path,
        name: &str,
        options: Options,
        cpus: &[usize],
        extra: &[&std::ffi::OsStr],
    ) -> anyhow::Result<Self> {
        let mut cmd = Command::new(exe);
        cmd.args(["serve", name]);
        server_args(&mut cmd, options, None)
            .args(extra)
            .stdin(Stdio::null())
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
        let mut child = spawn(&mut cmd)?;
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
        // With --logging stdout the server keeps printing: drain it so it never blocks.
        let started = listening(name, child, |mut rest| {
            let _ = std::io::copy(&mut rest, &mut std::io::sink());
        });
        match started {
            Ok((child, addr, _)) => Ok(ServerProcess {
                child,
                addr,
                stderr,
            }),
            Err(e) => {
                let text = stderr_text(&stderr);
                Err(e.context(text))
            }
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// Seconds on a CPU so far, of it and its children ([`crate::proc::tree_cpu_times`]).
    fn cpu_seconds(&self) -> f64 {
        crate::proc::tree_cpu_times(self.pid()).map_or(0.0, |t| t.total())
    }

    /// `Some(description)` once the process has exited.
    pub(crate) fn exited(&mut self) -> Option<String> {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    /// The end of what it printed on stderr, on one line.
    pub(crate) fn stderr_text(&self) -> String {
        stderr_text(&self.stderr)
    }

    /// Stops it ([`stop`]).
    pub(crate) fn stop(&mut self) {
        stop(&self.child);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The end of what a child printed on stderr, on one line.
fn stderr_text(kept: &Mutex<Vec<u8>>) -> String {
    // Give the reader thread a moment to collect the last words of a dying server.
    std::thread::sleep(Duration::from_millis(50));
    let k = kept.lock().unwrap_or_else(|e| e.into_inner());
    let text = String::from_utf8_lossy(&k);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        "(nothing on stderr)".into()
    } else {
        format!("stderr: {text}")
    }
}

/// Starts `cmd` (its program, arguments, environment and stdin already set by the caller, its
/// stderr ours) with `listener` as descriptor [`LISTENER_FD`], and returns once it printed
/// `listening on …`; its later stdout is forwarded to ours until it exits. `name` is for
/// messages and the forwarding thread.
pub(crate) fn serve_on(
    name: &str,
    mut cmd: Command,
    listener: TcpListener,
) -> anyhow::Result<ServerHandle> {
    let fd = listener.as_raw_fd();
    cmd.stderr(Stdio::inherit());
    // SAFETY: between fork and exec only async-signal-safe calls: dup2 and fcntl.
    unsafe {
        cmd.pre_exec(move || {
            if fd == LISTENER_FD {
                if libc::fcntl(LISTENER_FD, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, LISTENER_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = spawn(&mut cmd)?;
    // The child has its own copy of the socket now.
    drop(listener);
    let (child, addr, forward) = listening(name, child, |rest| {
        let stdout = std::io::stdout();
        for line in rest.lines().map_while(Result::ok) {
            let _ = writeln!(stdout.lock(), "{line}");
        }
    })?;
    Ok(ServerHandle::new(addr, move || stop(&child), vec![forward]))
}

/// Spawns `cmd` with its stdout piped (for the `listening on` line).
fn spawn(cmd: &mut Command) -> anyhow::Result<Child> {
    cmd.stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", cmd.get_program().to_string_lossy()))
}

/// Waits at most [`STARTUP`] for `child`'s first line, `listening on http://ADDR`, on a thread
/// that then hands the rest of its stdout to `rest` until the child exits. A child that does
/// not start is stopped before the error returns.
fn listening(
    name: &str,
    child: Child,
    rest: impl FnOnce(BufReader<ChildStdout>) + Send + 'static,
) -> anyhow::Result<(Arc<Mutex<Child>>, SocketAddr, JoinHandle<()>)> {
    let child = Arc::new(Mutex::new(child));
    let stdout = child
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .stdout
        .take()
        .ok_or_else(|| anyhow!("{name}: no stdout"))?;
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::Builder::new()
        .name(format!("fb-{name}"))
        .spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            if reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                let _ = tx.send(line);
            }
            drop(tx);
            rest(reader);
        });
    let reader = match reader {
        Ok(reader) => reader,
        Err(e) => {
            stop(&child);
            return Err(e.into());
        }
    };
    let first = rx.recv_timeout(STARTUP);
    let addr = match &first {
        Ok(line) => line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|url| {
                url.strip_prefix("http://")
                    .or_else(|| url.strip_prefix("https://"))
            })
            .and_then(|a| a.parse::<SocketAddr>().ok())
            .ok_or_else(|| anyhow!("{name}: unexpected first line {:?}", line.trim())),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(anyhow!(
            "{name} did not print its address within {} s",
            STARTUP.as_secs()
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(anyhow!("{name} exited before it listened"))
        }
    };
    match addr {
        Ok(addr) => Ok((child, addr, reader)),
        Err(e) => {
            stop(&child);
            let _ = reader.join();
            Err(e)
        }
    }
}

/// The one way a child is stopped: SIGTERM, then SIGKILL if it is still there after
/// [`GRACE`] (the time an in-process server gets to close its connections); then reaped.
/// Nothing a server does while it stops is measured.
fn stop(child: &Mutex<Child>) {
    let mut child = child.lock().unwrap_or_else(|e| e.into_inner());
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signalling our own child, which has not been reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The share of one core under which servers started together count as quiet ([`settle`]).
/// Idle, the 23 servers of the registry keep their core 2.4 % busy together (their timers: a
/// `Date` cache, keep-alive sweeps; `scripts/idle-servers.sh` at 31636f8, 2026-11-26), so 2 %,
/// the bound of commit 7561727, waited for a lucky window (28.6 s in its run); 5 % clears that
/// floor and still catches a server that is busy starting.
pub const QUIET_SHARE: f64 = 0.05;
/// The window over which [`settle`] measures that share.
const QUIET_WINDOW: Duration = Duration::from_millis(250);

/// What [`settle`] saw: how long it waited, and whether the servers went quiet in that time.
#[derive(Debug, Clone, Copy)]
pub struct Settled {
    /// From the call to the first quiet window, or to `bound`.
    pub waited: Duration,
    /// Whether a window under [`QUIET_SHARE`] came before `bound`.
    pub quiet: bool,
}

/// Waits until `servers`, together, use less than [`QUIET_SHARE`] of one core over a
/// [`QUIET_WINDOW`], or until `bound` has passed.
///
/// Servers started together share the server's core (the loopback bench starts every framework
/// before its first cell). Work one of them does after it prints its address (a runtime
/// spawning workers, a Go peer's first collections, a pool filling) would otherwise land in the
/// first cells, which are measured on another server's behalf.
pub fn settle(servers: &[&ServerProcess], bound: Duration) -> Settled {
    let started = Instant::now();
    let used = || servers.iter().map(|s| s.cpu_seconds()).sum::<f64>();
    let mut before = used();
    loop {
        std::thread::sleep(QUIET_WINDOW);
        let now = used();
        let waited = started.elapsed();
        let quiet = now - before < QUIET_SHARE * QUIET_WINDOW.as_secs_f64();
        if quiet || waited >= bound {
            return Settled { waited, quiet };
        }
        before = now;
    }
}
