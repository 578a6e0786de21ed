//! The Go peers of the seed articles: `go-nethttp` (the standard library's net/http) and
//! `go-fiber` (Fiber v2 on fasthttp), two programs of the Go module in `peers/go/`.
//!
//! They are loopback-only frameworks behind the same trait. [`prepare`] builds a peer's program
//! ([`Program::CMD`]) with `go build` into `target/go-peers/` (skipped when the binary is newer
//! than every source file) once per process, under its own bound ([`BUILD_TIMEOUT`]) and before
//! anything is timed: [`Framework::available`] calls it, so every command builds them before it
//! starts a server, and no server start-up timeout ever runs during a build. `serve` starts the
//! binary through [`child::serve_on`]: a child process with the already-bound listener as file
//! descriptor 3 and the flags every server child takes (`--threads`, which sets `GOMAXPROCS`,
//! and the logging and io variants); it waits for its `listening on` line, and shutdown sends
//! SIGTERM, then SIGKILL, and waits for the child. Without `go`, or when the build fails, both
//! are skipped with one line saying why.

use std::net::TcpListener;
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context as _};

use crate::framework::{About, Config, Framework, Protocol, Support, Transport, Request, Response, ServerHandle, Version};
use crate::outcome::NotRun;
use crate::child;
use crate::tools::{self, Tool};

/// One Go program of `peers/go/cmd/`.
pub(crate) trait Program: 'static {
    /// Registry name.
    const NAME: &'static str;
    /// Folder under `peers/go/cmd/`.
    const CMD: &'static str;
    /// What `list` shows in the crate column.
    const WHAT: &'static str;
    /// The version `list` shows.
    fn version() -> String;
    /// Its row in the README's framework table ([`Framework::ABOUT`]).
    const ABOUT: About;
    /// The protocols it states ([`Framework::PROTOCOLS`]).
    const PROTOCOLS: &'static [(Protocol, Support)];
    /// The transports it states ([`Framework::TRANSPORTS`]).
    const TRANSPORTS: &'static [(Transport, Support)];
}

/// net/http.
pub(crate) struct NetHttp;
/// Fiber v2.
pub(crate) struct Fiber;

impl Program for NetHttp {
    const NAME: &'static str = "go-nethttp";
    const CMD: &'static str = "nethttp";
    const WHAT: &'static str = "net/http";
    const ABOUT: About = About {
        crate_label: Some("Go net/http"),
        version: Version::Other(|| "the `go` toolchain's".to_owned()),
        companions: &[],
        static_files: "`http.FileServer`",
        in_process: "– (own process)",
        server: "`peers/go/cmd/nethttp`, built with `go build`, `GOMAXPROCS=--threads`",
    };
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`http.Server.Protocols` with `SetUnencryptedHTTP2` (Go 1.24+), set only under \
         `--protocol h2c`: it then peeks for the preface on every connection",)),
        (Protocol::H2, Support::Supported("`ServeTLS`'s own HTTP/2 (golang.org/x/net's, bundled), ALPN `h2` alone offered under `--protocol h2`")),
        (Protocol::Ws, Support::Supported("gorilla/websocket's `Upgrader` and `ReadMessage`/`WriteMessage`, as its echo example")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported(
            "crypto/tls: `http.Server.TLSConfig` and `ServeTLS` with the certificate in memory, \
             an empty `TLSNextProto` (HTTP/1.1 only)",
        ),
    )];
    fn version() -> String {
        go_version().unwrap_or_else(|| "(no go)".into())
    }
}

impl Program for Fiber {
    const NAME: &'static str = "go-fiber";
    const CMD: &'static str = "fiber";
    const WHAT: &'static str = "fiber";
    const ABOUT: About = About {
        crate_label: Some("Fiber v2 (fasthttp)"),
        version: Version::Other(|| {
            let fiber = module_version("github.com/gofiber/fiber/v2").unwrap_or("?");
            format!("{fiber}, pinned in `peers/go/go.mod`")
        }),
        companions: &[],
        static_files: "`app.Static`",
        in_process: "– (own process)",
        server: "`peers/go/cmd/fiber`, built with `go build`, `GOMAXPROCS=--threads`",
    };
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Unsupported("fasthttp, under Fiber, has no HTTP/2 (its README: support is in progress)")),
        (Protocol::H2, Support::Unsupported("fasthttp, under Fiber, has no HTTP/2 (its README: support is in progress)")),
        (Protocol::Ws, Support::Supported("Fiber's websocket middleware (gofiber/contrib/websocket on fasthttp/websocket)")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("crypto/tls: `tls.NewListener` handed to `app.Listener`"),
    )];
    fn version() -> String {
        let fiber = module_version("github.com/gofiber/fiber/v2").unwrap_or("?");
        match go_version() {
            Some(go) => format!("{fiber} ({go})"),
            None => fiber.to_owned(),
        }
    }
}

/// A Go peer behind the framebench trait.
pub(crate) struct GoPeer<P: Program> {
    config: Config,
    binary: PathBuf,
    _program: std::marker::PhantomData<P>,
}

/// `peers/go/` of this checkout.
pub(crate) fn module_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/go")
}

/// The `go` toolchain version (`go1.26.8`), or `None` without `go` (see [`Tool::Go`]).
pub(crate) fn go_version() -> Option<String> {
    static VERSION: OnceLock<Option<String>> = OnceLock::new();
    VERSION
        .get_or_init(|| tools::go_version_of(Tool::Go.path().ok()?))
        .clone()
}

/// The version `peers/go/go.mod` requires of `module`, read at compile time.
pub(crate) fn module_version(module: &str) -> Option<&'static str> {
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

/// How long building the peers may take: a first build downloads the modules and compiles
/// Fiber. A bound of its own, never a server's start-up timeout.
pub(crate) const BUILD_TIMEOUT: Duration = Duration::from_secs(600);

/// Where the built peers go: `$FRAMEBENCH_GO_PEERS_DIR`, else `target/go-peers/`.
pub(crate) fn bin_dir() -> PathBuf {
    let dir = std::env::var_os("FRAMEBENCH_GO_PEERS_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/go-peers"),
            PathBuf::from,
        );
    // Absolute: `go build` runs in peers/go, where a relative `-o` would land.
    std::env::current_dir().map_or(dir.clone(), |cwd| cwd.join(dir))
}

/// Builds the Go program `cmd` (a folder of `peers/go/cmd/`, a [`Program::CMD`]) when a source
/// is newer than its binary, once per process, before anything is timed: every command that
/// serves a peer calls this (through [`Framework::available`]) before it starts a server. Each
/// peer builds only its own program, so no list of them is kept beside the `Program` impls.
/// Prints a progress line when it builds. `Err` says why the peer is skipped (no `go`, or the
/// build failed, which it prints once).
pub(crate) fn prepare(cmd: &'static str) -> Result<(), &'static str> {
    static BUILT: Mutex<Vec<(&str, Result<(), &str>)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, done)) = built.iter().find(|(c, _)| *c == cmd) {
        return *done;
    }
    // A copied binary pointed at prebuilt peers (FRAMEBENCH_GO_PEERS_DIR) on a machine without
    // the sources: nothing to build them from or to be stale against, so they run as they are.
    if !module_dir().is_dir() {
        let binary = bin_dir().join(cmd);
        let done = if binary.is_file() {
            tools::say_once(&format!(
                "the Go peers run as built in {} (no peers/go sources here to build them from)",
                bin_dir().display()
            ));
            Ok(())
        } else {
            Err(&*Box::leak(
                format!(
                    "no peers/go sources here and no prebuilt {}: point FRAMEBENCH_GO_PEERS_DIR \
                     at a folder of built peers",
                    binary.display()
                )
                .into_boxed_str(),
            ))
        };
        built.push((cmd, done));
        return done;
    }
    let done = Tool::Go
        .path()
        .map_err(|_| Tool::Go.skip())
        .and_then(|go| {
            build(go, cmd).map_err(|e| {
                let why: &'static str =
                    Box::leak(format!("go build failed: {e:#}").into_boxed_str());
                // Required, the caller fails with this reason instead; nothing is skipped.
                if !Tool::Go.required() {
                    tools::say_once(&format!("{why}; the Go peers are skipped"));
                }
                why
            })
        });
    built.push((cmd, done));
    done
}

/// Builds `cmd` with `go` when it is stale, holding a lock on the output folder so that
/// concurrent processes (test binaries, a user's second terminal) build it once between them.
fn build(go: &Path, cmd: &str) -> anyhow::Result<()> {
    let dir = bin_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let _lock = DirLock::take(&dir)?;
    // Left by a run that was killed mid-build (SIGKILL): nobody else builds while we hold the
    // lock, so any scratch folder here is stale.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(".build-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let sources = newest_source(&module_dir()).context("cannot read peers/go")?;
    let built = std::fs::metadata(dir.join(cmd)).and_then(|m| m.modified());
    if built.is_ok_and(|b| b >= sources) {
        return Ok(());
    }
    let bound = crate::build_step::build_timeout(BUILD_TIMEOUT);
    eprintln!(
        "building the Go peer ./cmd/{cmd} with `go build` (first run only: module download and \
         compile, at most {:.0} s)…",
        bound.as_secs_f64()
    );
    let start = Instant::now();
    let scratch = dir.join(format!(".build-{cmd}-{}", std::process::id()));
    let mut command = Command::new(go);
    command
        .args(["build", "-o"])
        .arg(scratch.join(cmd))
        .arg(format!("./cmd/{cmd}"))
        .current_dir(module_dir());
    crate::build_step::build_step(command, &scratch, start + bound, |scratch| {
        std::fs::rename(scratch.join(cmd), dir.join(cmd))
    })
    .with_context(|| format!("./cmd/{cmd}"))?;
    eprintln!(
        "built ./cmd/{cmd} in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// An exclusive `flock` on `<dir>/.lock`, released when dropped.
struct DirLock(std::fs::File);

impl DirLock {
    /// Waits for the lock, saying so once, for at most the build bound; Ctrl-C ends the wait
    /// (and the run, with 130).
    fn take(dir: &Path) -> anyhow::Result<DirLock> {
        let path = dir.join(".lock");
        let file = std::fs::File::create(&path).with_context(|| path.display().to_string())?;
        let deadline = Instant::now() + crate::build_step::build_timeout(BUILD_TIMEOUT);
        let mut said = false;
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(DirLock(file));
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                bail!("cannot lock {}: {e}", path.display());
            }
            if !said {
                eprintln!("waiting for another framebench to finish building the Go peers…");
                said = true;
            }
            if crate::interrupt::interrupted().load(std::sync::atomic::Ordering::Relaxed) {
                eprintln!("interrupted");
                std::process::exit(130);
            }
            if Instant::now() > deadline {
                bail!("{} stayed locked by another build", path.display());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // SAFETY: unlocking the descriptor we locked.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

impl<P: Program> Framework for GoPeer<P> {
    const NAME: &'static str = P::NAME;
    const CRATE: &'static str = P::WHAT;
    const VERSION_PREFIX: &'static str = "";
    const ABOUT: About = P::ABOUT;
    const IN_PROCESS: bool = false;
    const TOOL: Option<Tool> = Some(Tool::Go);
    const PROTOCOLS: &'static [(Protocol, Support)] = P::PROTOCOLS;
    const TRANSPORTS: &'static [(Transport, Support)] = P::TRANSPORTS;
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn available() -> Result<(), NotRun> {
        prepare(P::CMD).map_err(|why| NotRun::Skipped(why.to_owned()))
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
        <Self as Framework>::available()?;
        Ok(GoPeer {
            config: config.clone(),
            binary: bin_dir().join(P::CMD),
            _program: std::marker::PhantomData,
        })
    }

    fn dispatch(&self, _: Request) -> anyhow::Result<Response> {
        bail!("{} runs in its own process: loopback only", P::NAME)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--fd3")
            .arg("--fixtures")
            .arg(self.config.fixtures.root());
        child::server_args(&mut cmd, self.config.options, self.config.redis.as_deref())
            .stdin(Stdio::null());
        child::serve_on(P::NAME, cmd, listener)
    }
}
