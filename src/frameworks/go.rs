//! The Go peers of the seed articles: `go-nethttp` (the standard library's net/http) and
//! `go-fiber` (Fiber v2 on fasthttp), two programs of the Go module in `peers/go/`.
//!
//! They are loopback-only frameworks behind the same trait: `serve` builds the program with
//! `go build` into `target/go-peers/` (skipped when the binary is newer than every source
//! file), starts it as a child process with the already-bound listener as file descriptor 3,
//! `GOMAXPROCS` set to `threads`, and the logging and io variants as flags, and waits for its
//! `listening on` line. Shutdown sends SIGTERM, then SIGKILL after [`server::GRACE`], and waits
//! for the child. Without `go` on the PATH both are skipped with a message saying how to
//! install it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::os::fd::AsRawFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context as _};

use crate::framework::{Config, Framework, Request, Response, ServerHandle};
use crate::server;

/// How to install Go, for the skip message.
const INSTALL: &str = "install Go 1.22 or later (`apt-get install golang-go`, or https://go.dev/dl/) and put `go` on the PATH";

/// One Go program of `peers/go/cmd/`.
pub trait Program: 'static {
    /// Registry name.
    const NAME: &'static str;
    /// Folder under `peers/go/cmd/`.
    const CMD: &'static str;
    /// What `list` shows in the crate column.
    const WHAT: &'static str;
    /// The version `list` shows.
    fn version() -> String;
}

/// net/http.
pub struct NetHttp;
/// Fiber v2.
pub struct Fiber;

impl Program for NetHttp {
    const NAME: &'static str = "go-nethttp";
    const CMD: &'static str = "nethttp";
    const WHAT: &'static str = "net/http";
    fn version() -> String {
        go_version().unwrap_or_else(|| "?".into())
    }
}

impl Program for Fiber {
    const NAME: &'static str = "go-fiber";
    const CMD: &'static str = "fiber";
    const WHAT: &'static str = "fiber";
    fn version() -> String {
        let fiber = module_version("github.com/gofiber/fiber/v2").unwrap_or("?");
        match go_version() {
            Some(go) => format!("{fiber} ({go})"),
            None => fiber.to_owned(),
        }
    }
}

/// A Go peer behind the framebench trait.
pub struct GoPeer<P: Program> {
    config: Config,
    binary: PathBuf,
    _program: std::marker::PhantomData<P>,
}

/// `peers/go/` of this checkout.
pub fn module_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/go")
}

/// The `go` toolchain version (`go1.26.8`), or `None` without `go` on the PATH.
pub fn go_version() -> Option<String> {
    static VERSION: OnceLock<Option<String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = Command::new("go")
                .args(["env", "GOVERSION"])
                .stderr(Stdio::null())
                .output()
                .ok()?;
            let v = String::from_utf8(out.stdout).ok()?.trim().to_owned();
            (out.status.success() && !v.is_empty()).then_some(v)
        })
        .clone()
}

/// The version `peers/go/go.mod` requires of `module`, read at compile time.
pub fn module_version(module: &str) -> Option<&'static str> {
    const GO_MOD: &str = include_str!("../../peers/go/go.mod");
    GO_MOD.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let first = words.next()?;
        let (name, version) = if first == "require" {
            (words.next()?, words.next()?)
        } else {
            (first, words.next()?)
        };
        (name == module).then(|| version.trim_start_matches('v'))
    })
}

/// Newest modification time of the module's sources.
fn newest_source(dir: &Path) -> std::io::Result<SystemTime> {
    let mut newest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            newest = newest.max(newest_source(&path)?);
        } else {
            newest = newest.max(entry.metadata()?.modified()?);
        }
    }
    Ok(newest)
}

/// Builds `peers/go/cmd/<cmd>` into `target/go-peers/<cmd>` unless it is up to date.
fn build_binary(cmd: &str) -> anyhow::Result<PathBuf> {
    // One build at a time in this process: two apps of the same peer share the binary.
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let module = module_dir();
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/go-peers");
    let binary = out_dir.join(cmd);
    let sources = newest_source(&module).context("cannot read peers/go")?;
    let built = std::fs::metadata(&binary).and_then(|m| m.modified()).ok();
    if built.is_some_and(|b| b >= sources) {
        return Ok(binary);
    }
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    // Built under a name of this process, then renamed: another process (tests run several)
    // never executes a half-written binary.
    let partial = out_dir.join(format!("{cmd}.{}.partial", std::process::id()));
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&partial)
        .arg(format!("./cmd/{cmd}"))
        .current_dir(&module)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("go not found on the PATH: {INSTALL}"))?;
    if !out.status.success() {
        bail!(
            "go build ./cmd/{cmd} failed (run `go mod download` in peers/go first when offline): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    std::fs::rename(&partial, &binary)
        .with_context(|| format!("cannot move the build to {}", binary.display()))?;
    Ok(binary)
}

impl<P: Program> Framework for GoPeer<P> {
    const NAME: &'static str = P::NAME;
    const CRATE: &'static str = P::WHAT;
    const MAJOR: &'static str = "";
    const IN_PROCESS: bool = false;

    fn available() -> Result<(), String> {
        match go_version() {
            Some(_) => Ok(()),
            None => Err(format!("`go` not found: {INSTALL}")),
        }
    }

    fn version() -> Option<&'static str> {
        static VERSIONS: OnceLock<Mutex<Vec<(&'static str, &'static str)>>> = OnceLock::new();
        let mut known = VERSIONS.get_or_init(Default::default).lock().ok()?;
        if let Some((_, v)) = known.iter().find(|(n, _)| *n == P::NAME) {
            return Some(v);
        }
        let v: &'static str = Box::leak(P::version().into_boxed_str());
        known.push((P::NAME, v));
        Some(v)
    }

    fn build(config: &Config) -> anyhow::Result<Self> {
        <Self as Framework>::available().map_err(|e| anyhow!(e))?;
        Ok(GoPeer {
            config: config.clone(),
            binary: build_binary(P::CMD)?,
            _program: std::marker::PhantomData,
        })
    }

    fn dispatch(&self, _: Request) -> anyhow::Result<Response> {
        bail!("{} runs in its own process: loopback only", P::NAME)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let addr = listener.local_addr()?;
        let options = self.config.options;
        let fd = listener.as_raw_fd();
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--fd3")
            .arg("--fixtures")
            .arg(self.config.fixtures.root())
            .args(["--logging", &options.logging.to_string()])
            .args(["--io", &options.io.to_string()])
            .env("GOMAXPROCS", options.threads.max(1).to_string())
            // The redis scenario's Redis, when the harness gave one (else /get answers 503).
            .args(
                self.config
                    .fixtures
                    .redis_url()
                    .map(|url| ["--redis", url])
                    .into_iter()
                    .flatten(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: between fork and exec only async-signal-safe calls: dup2 and fcntl.
        unsafe {
            cmd.pre_exec(move || {
                if fd == 3 {
                    if libc::fcntl(3, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(fd, 3) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.binary.display()))?;
        // The child has its own copy of the socket now.
        drop(listener);
        let stdout = child.stdout.take().expect("stdout is piped");
        let (ready_tx, ready_rx) = mpsc::channel();
        // Reads the `listening on` line, then passes the child's output (request lines with
        // logging=stdout) on to ours until the child exits.
        let forward = std::thread::Builder::new()
            .name(format!("fb-{}", P::NAME))
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
            })?;
        let child = Arc::new(Mutex::new(child));
        let first = ready_rx.recv_timeout(Duration::from_secs(10));
        let ok = matches!(&first, Ok(line) if line.starts_with("listening on "));
        let stop_child = Arc::clone(&child);
        let stop = move || stop_child_process(&stop_child);
        if !ok {
            stop();
            let _ = forward.join();
            return Err(match first {
                Ok(line) => anyhow!("{}: unexpected first line {line:?}", P::NAME),
                Err(_) => anyhow!("{} did not start within 10 s", P::NAME),
            });
        }
        Ok(ServerHandle::new(addr, stop, vec![forward]))
    }
}

/// SIGTERM, then SIGKILL if the child is still there after [`server::GRACE`]; then reaps it.
fn stop_child_process(child: &Mutex<Child>) {
    let mut child = child.lock().unwrap_or_else(|e| e.into_inner());
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signalling our own child, which has not been reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let deadline = Instant::now() + server::GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fiber_version_comes_from_go_mod() {
        let v = module_version("github.com/gofiber/fiber/v2").unwrap();
        assert!(v.starts_with("2."), "{v}");
        assert_eq!(module_version("example.com/not-required"), None);
    }

    #[test]
    fn sources_are_found() {
        assert!(newest_source(&module_dir()).unwrap() > SystemTime::UNIX_EPOCH);
    }
}
