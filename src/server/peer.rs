//! A server that runs in a child process of its own: the Go peers, and may-minihttp, whose
//! coroutine workers never exit. The parent binds the listener; the child gets it as file
//! descriptor 3, prints `listening on …` once it serves, and is stopped by a signal.
//!
//! [`spawn`] is the one place this happens: it hands the socket over, waits for the line (at
//! most [`STARTUP`]), forwards the child's later stdout (request lines with logging=stdout) to
//! ours, and returns a [`ServerHandle`] whose stop sends SIGTERM, then SIGKILL after
//! [`crate::server::GRACE`], and reaps the child. A child that does not start is stopped before
//! the error returns.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::os::fd::AsRawFd as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _};

use crate::framework::{Config, ServerHandle};
use crate::server::GRACE;

/// How long a child may take to print its `listening on` line.
pub const STARTUP: Duration = Duration::from_secs(10);

/// The descriptor the child finds the listener on.
pub const LISTENER_FD: i32 = 3;

/// Adds the variant flags every child takes: `--logging`, `--io`, and `--redis URL` when the
/// harness gave a Redis (without one, `/get` answers 503).
pub fn variant_args<'a>(cmd: &'a mut Command, config: &Config) -> &'a mut Command {
    let options = config.options;
    cmd.args(["--logging", &options.logging.to_string()])
        .args(["--io", &options.io.to_string()])
        .args(
            config
                .redis
                .as_deref()
                .map(|url| ["--redis", url])
                .into_iter()
                .flatten(),
        )
}

/// Starts `cmd` (arguments, environment and stdin already set by the caller) with `listener` as
/// descriptor [`LISTENER_FD`], and returns once it printed `listening on …`. `name` is for
/// messages and the forwarding thread.
pub fn spawn(name: &str, mut cmd: Command, listener: TcpListener) -> anyhow::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    let fd = listener.as_raw_fd();
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
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
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", cmd.get_program().to_string_lossy()))?;
    // The child has its own copy of the socket now.
    drop(listener);
    let stdout = child.stdout.take().expect("stdout is piped");
    let (ready_tx, ready_rx) = mpsc::channel();
    // Reads the `listening on` line, then passes the child's output on to ours until the child
    // exits.
    let forward = std::thread::Builder::new()
        .name(format!("fb-{name}"))
        .spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = ready_tx.send(first);
            }
            drop(ready_tx);
            let stdout = std::io::stdout();
            for line in lines.map_while(Result::ok) {
                let _ = writeln!(stdout.lock(), "{line}");
            }
        });
    let forward = match forward {
        Ok(forward) => forward,
        Err(e) => {
            stop(&Mutex::new(child));
            return Err(e.into());
        }
    };
    let child = Arc::new(Mutex::new(child));
    let first = ready_rx.recv_timeout(STARTUP);
    let ok = matches!(&first, Ok(line) if line.starts_with("listening on "));
    let stop_child = Arc::clone(&child);
    let stop_it = move || stop(&stop_child);
    if !ok {
        stop_it();
        let _ = forward.join();
        return Err(match first {
            Ok(line) => anyhow!("{name}: unexpected first line {line:?}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                anyhow!("{name} did not start within {} s", STARTUP.as_secs())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                anyhow!("{name} exited before it listened (its error is on stderr)")
            }
        });
    }
    Ok(ServerHandle::new(addr, stop_it, vec![forward]))
}

/// SIGTERM, then SIGKILL if the child is still there after [`GRACE`]; then reaps it.
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
