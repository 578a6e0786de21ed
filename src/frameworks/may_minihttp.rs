//! may-minihttp 0.1 on may 0.3: a small HTTP/1.1 server on stackful coroutines, the successor of
//! tokio-minihttp, which seed 002 used as its reference point. An app is one `HttpService`
//! whose `call` gets each parsed request and fills in a response; it has no router, no
//! static-file facility and no request logger, so the service routes by hand
//! ([`AppState::route`], the blocking twin of raw hyper's), static files come from
//! [`AppState::static_file`] for both io modes, and logging is a small wrapper around
//! [`Started`] in the service. It has no extractors either: `/sum` parses the query with
//! [`handlers::operands_from_query`] (`/delay` with [`handlers::wait_from_query`], then sleeps on
//! may's coroutine timer, `may::coroutine::sleep`, which parks the coroutine and not its
//! worker thread), and `/upload` and `/json_in` read the body through the
//! `Read` that `Request::body` returns, which reads `Content-Length` bytes and no more (no limit;
//! no chunked body), the JSON then read by serde_json.
//!
//! **Loopback only.** Its `Request` borrows the connection's `may::net::TcpStream` and is made
//! only by the crate's private decoder, so no request can be built from bytes through its public
//! API: there is no in-process path, and `dispatch` says so.
//!
//! **A child process.** may's worker threads never exit, so the server runs in a child
//! framebench process (`framebench child may-minihttp`, [`Framework::serve_child`]) that the
//! parent's `serve` starts through [`child::serve_on`] like the Go peers: the parent's listener is
//! handed over as descriptor 3 and put in the place of the socket may-minihttp binds itself
//! ([`swap_in`]), `threads` is may's worker count, and SIGTERM ends the process.
//! The child is the framebench binary itself rather than a binary of its own: it is built by
//! every cargo command that builds framebench, from the same sources and features, so nothing
//! has to be built at run time and nothing can be stale (docs/methodology/fairness.md says why a
//! separate package or `[[bin]]` was not used).

use std::io::{self, Read};
use std::net::TcpListener;
use std::os::fd::{AsRawFd as _, FromRawFd as _, RawFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context as _};
use may_minihttp::{HttpServer, HttpService, Request as MayRequest, Response as MayResponse};

use crate::fixtures::FIXTURES_ENV;
use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::outcome::NotRun;
use crate::handlers::{self, AppState, Reply};
use crate::logging::{self, Started};
use crate::child;
use crate::server;
use crate::store::SyncStore;

/// may-minihttp behind the framebench trait: what the parent keeps to start the child.
pub(crate) struct MayMinihttp {
    config: Config,
    binary: PathBuf,
}

/// The whole app: one service, cloned by may-minihttp for every connection.
#[derive(Clone)]
struct App {
    state: Arc<AppState<SyncStore>>,
    /// The log target when logging is on.
    log: Option<&'static str>,
    /// `Content-Type` lines already made, so a connection asks [`content_type_line`] once per
    /// type.
    types: Vec<(&'static str, &'static str)>,
}

/// Builds the app: the shared state (a blocking Redis pool, see [`App::route`]) and the logger
/// target of the logging variant.
fn app(config: &Config) -> App {
    let log = logging::target(config.options.logging);
    if log.is_some() {
        logging::install();
    }
    App {
        state: Arc::new(AppState::new_sync(config)),
        log,
        types: Vec::new(),
    }
}

/// Coroutine stack size, in words (may counts in `usize`s): 256 KiB, eight times what
/// may-minihttp's TechEmpower entry sets, because the template engine and the Redis client run
/// on it. Touched pages only are resident.
const STACK_WORDS: usize = 0x8000;

/// The largest request head (target and headers) answered; larger gets 431.
const MAX_HEAD: usize = 64 * 1024;

impl Framework for MayMinihttp {
    const NAME: &'static str = "may-minihttp";
    const CRATE: &'static str = "may_minihttp";
    const VERSION_PREFIX: &'static str = "0.1.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("may", "0.3.")],
        static_files: "our own small static path",
        in_process: "– (loopback only: its `Request` is made only by its own decoder, from a socket)",
        server: "`HttpServer(..).start` in a child `framebench child may-minihttp` process, the handed-over listener swapped in under it, `--threads` may workers",
    };
    const IN_PROCESS: bool = false;
    // No `--max-requests`: under callgrind (valgrind following the child) the child's count
    // did not grow with the requests it served (hello: 4,124,870 instructions for 20 requests,
    // 4,072,285 for 220; may 0.3.51, 2026-11-23), as if the work on may's coroutine stacks went
    // uncounted, so `callgrind_loopback` would report nothing true for it.
    const COUNTS_REQUESTS: bool = false;
    const NOTE: &'static str =
        "child process; no HEAD, no keep-alive timeout, at most 16 request headers";
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Unsupported("it parses HTTP/1 only and writes `HTTP/1.1` in every answer")),
        (Protocol::Ws, Support::Unsupported("its connection loop owns the socket and has no upgrade or hijack")),
    ];
    const CANNOT: &'static [(&'static str, &'static str)] = &[(
        "upload_chunked",
        "may-minihttp 0.1.11 reads a request body only by its Content-Length (src/request.rs:116-134), \
         so a chunked body is never read: its chunks are parsed as the next request, which fails \
         (src/request.rs:155) and closes the connection",
    )];

    fn available() -> Result<(), NotRun> {
        child::framebench_binary()
            .map(drop)
            .map_err(|e| NotRun::Skipped(format!("{e:#}")))
    }

    fn build(config: &Config) -> anyhow::Result<Self> {
        let binary = child::framebench_binary()?;
        Ok(MayMinihttp {
            config: config.clone(),
            binary,
        })
    }

    fn dispatch(&self, _: Request) -> anyhow::Result<Response> {
        bail!(
            "{} has no in-process path: its requests are made only by its own decoder, from a \
             socket (loopback only)",
            Self::NAME
        )
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let mut cmd = Command::new(&self.binary);
        cmd.args(["child", Self::NAME])
            .env(FIXTURES_ENV, self.config.fixtures.root());
        child::server_args(&mut cmd, self.config.options, self.config.redis.as_deref())
            // A pipe the child watches: it ends when we do, even by SIGKILL, so a child whose
            // parent died never keeps serving (see `exit_with_parent`).
            .stdin(Stdio::piped());
        child::serve_on(Self::NAME, cmd, listener)
    }

    fn serve_child(config: &Config) -> anyhow::Result<()> {
        // SAFETY: descriptor 3 is the listener `child::serve_on` handed over; nothing else in this
        // process owns it.
        let inherited = unsafe { TcpListener::from_raw_fd(child::LISTENER_FD) };
        let addr = inherited
            .local_addr()
            .context("descriptor 3 is not a listening socket")?;
        // may's threads pin themselves to cores by default; the harness pins the whole server
        // process instead (`crate::pinning`), as for every other server.
        may::config()
            .set_workers(config.options.threads.max(1))
            .set_stack_size(STACK_WORDS)
            .set_worker_pin(false);
        let mut signals = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
        ])
        .context("cannot install signal handlers")?;
        let before = listeners()?;
        // may-minihttp's only way to serve binds an address itself, so it binds a port nobody
        // knows, and the inherited listener is put in its place (`swap_in`).
        let _server = HttpServer(app(config))
            .start("127.0.0.1:0")
            .context("may-minihttp cannot start")?;
        let own = listeners()?
            .into_iter()
            .find(|fd| !before.contains(fd))
            .context("may-minihttp's listener was not found")?;
        swap_in(inherited, own)?;
        exit_with_parent();
        println!("listening on http://{addr}");
        let _ = io::Write::flush(&mut io::stdout());
        let _ = signals.forever().next();
        // may's workers never exit: returning ends the process, and them with it.
        Ok(())
    }
}

impl HttpService for App {
    fn call(&mut self, req: MayRequest<'_, '_, '_>, rsp: &mut MayResponse<'_>) -> io::Result<()> {
        let started = self
            .log
            .map(|target| Started::now(target, None, req.method(), req.path().to_owned()));
        let reply = self.route(req);
        let status = reply.status;
        self.respond(reply, rsp);
        if let Some(started) = started {
            started.finish(status);
        }
        Ok(())
    }
}

impl App {
    /// Every route: the head guard, then the query and body routes, then GET only and the path
    /// (`AppState::route`). The Redis route waits for Redis on the worker thread; the body routes
    /// read what is left of their body from may's socket, which parks only the coroutine.
    // Fairness: may has no Redis client of its own, so `/get` uses the blocking r2d2 pool the
    // blocking frameworks use; while it waits, the worker thread runs no other coroutine
    // (docs/methodology/fairness.md). The logger gets no peer address: may-minihttp's request does not
    // carry one, so its lines say `-`.
    fn route(&self, req: MayRequest<'_, '_, '_>) -> Reply {
        if head_len(&req) > MAX_HEAD {
            return Reply::error(431);
        }
        // HEAD is refused: may-minihttp writes every body it is given and counts it in
        // Content-Length, so it cannot answer HEAD as HTTP says.
        let get = req.method() == "GET";
        let post = req.method() == "POST";
        let (path, query) = match req.path().split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (req.path(), None),
        };
        // The query and body routes first; every other path as before.
        match path {
            "/sum" => sum(get, query),
            "/delay" => delay(get, query),
            "/upload" if post => upload(req.body()),
            "/json_in" if post => json_in(req.body()),
            "/upload" | "/json_in" => Reply::error(405),
            path => self.state.route(get, path, query),
        }
    }
}

/// `GET /sum?a=A&b=B`: the operands parsed from the raw query (may-minihttp has no query
/// extractor), 400 when one is missing or not a `u32`.
fn sum(get: bool, query: Option<&str>) -> Reply {
    if !get {
        return Reply::error(405);
    }
    handlers::operands_from_query(query).map_or_else(|| Reply::error(400), handlers::sum)
}

/// `GET /delay?ms=N`: the wait parsed from the raw query (400 when `ms` is not a `u64`), slept
/// with `may::coroutine::sleep`, which parks this connection's coroutine on may's timer.
fn delay(get: bool, query: Option<&str>) -> Reply {
    match (get, handlers::wait_from_query(query)) {
        (false, _) => Reply::error(405),
        (true, None) => Reply::error(400),
        (true, Some(wait)) => handlers::delay_blocking(wait, may::coroutine::sleep),
    }
}

/// `POST /upload`: the whole body, read to its end from `Request::body`, then digested; 400
/// when the body cannot be read.
fn upload(body: impl Read) -> Reply {
    match read_body(body) {
        Ok(body) => handlers::upload(&body),
        Err(_) => Reply::error(400),
    }
}

/// `POST /json_in`: the whole body, read to its end from `Request::body`, then deserialized
/// with serde_json; 400 when the body cannot be read or is not the operands' JSON.
fn json_in(body: impl Read) -> Reply {
    match read_body(body).map(|body| serde_json::from_slice(&body)) {
        Ok(Ok(operands)) => handlers::json_in(operands),
        Ok(Err(_)) | Err(_) => Reply::error(400),
    }
}

/// A request body, read to its end: `Content-Length` bytes, from may-minihttp's read buffer and
/// then the socket.
fn read_body(mut body: impl Read) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    body.read_to_end(&mut buf)?;
    Ok(buf)
}

impl App {
    /// The one conversion from [`Reply`] into may-minihttp's response: the status, the
    /// `Content-Type` line, and the body copied into the connection's body buffer (may-minihttp
    /// adds `Server`, `Date` and `Content-Length`). An error without a body is its status with
    /// an empty body: may-minihttp has no error pages.
    fn respond(&mut self, reply: Reply, rsp: &mut MayResponse<'_>) {
        if reply.status != 200 {
            let reason = http::StatusCode::from_u16(reply.status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("Unknown");
            rsp.status_code(usize::from(reply.status), reason);
        }
        if let Some(content_type) = reply.content_type {
            let line = match self.types.iter().find(|(t, _)| *t == content_type) {
                Some((_, line)) => line,
                None => {
                    let line = content_type_line(content_type);
                    self.types.push((content_type, line));
                    line
                }
            };
            rsp.header(line);
        }
        rsp.body_mut().extend_from_slice(&reply.body);
    }
}

/// `Content-Type: <content_type>` as the `&'static str` may-minihttp takes headers as: made once
/// per content type for the whole process (a handful), then shared.
fn content_type_line(content_type: &'static str) -> &'static str {
    static LINES: OnceLock<Mutex<Vec<(&'static str, &'static str)>>> = OnceLock::new();
    let mut lines = LINES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some((_, line)) = lines.iter().find(|(t, _)| *t == content_type) {
        return line;
    }
    let line: &'static str = Box::leak(format!("Content-Type: {content_type}").into_boxed_str());
    lines.push((content_type, line));
    line
}

/// The request head's size: target plus every header's name and value.
// Fairness: may-minihttp buffers a request head of any size before it parses it (a 4 MiB header
// is answered 200 otherwise); this check answers 431 instead, after the buffering, with one
// pass over at most 16 headers per request.
fn head_len(req: &MayRequest<'_, '_, '_>) -> usize {
    req.path().len()
        + req
            .headers()
            .iter()
            .map(|h| h.name.len() + h.value.len())
            .sum::<usize>()
}

/// Ends this process when the parent's end of our stdin closes: the parent exited, however it
/// exited.
fn exit_with_parent() {
    let _ = std::thread::Builder::new()
        .name("fb-parent".into())
        .spawn(|| {
            let mut stdin = io::stdin();
            let mut buf = [0u8; 64];
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
}

/// Puts the inherited listener in the place of may-minihttp's own (descriptor `own`): the same
/// descriptor number and the same registration with may's event loop, so may-minihttp accepts
/// from the socket the parent bound, including connections already waiting on it.
// Fairness: may-minihttp 0.1.11 cannot serve a listener it did not bind (`HttpServer::start`
// takes an address), and a socket bound anew would lose the connections that clients made to
// the parent's socket before the `listening on` line (the callgrind bench's client connects as
// soon as the port answers). `dup2` replaces may-minihttp's socket under its descriptor, which
// also ends that socket's registration with may's epoll instance, so the registration (its
// events and may's data pointer, read from /proc/self/fdinfo) is added again for the inherited
// socket. may-minihttp also leaves TCP_NODELAY off (its `set_nodelay` call is commented out):
// set on the listener, Linux copies it to every connection accepted. Neither happens per
// request (docs/methodology/fairness.md).
fn swap_in(inherited: TcpListener, own: RawFd) -> anyhow::Result<()> {
    let (epoll, mut event) = registration(own)?;
    inherited.set_nonblocking(true)?;
    server::nodelay_on_accepted(&inherited).context("cannot set TCP_NODELAY")?;
    // SAFETY: both descriptors are open; `own` is may-minihttp's listener, whose owner keeps
    // using the number, now for the inherited socket.
    if unsafe { libc::dup2(inherited.as_raw_fd(), own) } == -1 {
        bail!(
            "cannot swap the listener in: {}",
            io::Error::last_os_error()
        );
    }
    // SAFETY: `epoll` is may's epoll descriptor and `event` a valid epoll_event.
    if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, own, &mut event) } == -1 {
        bail!(
            "cannot register the listener with may: {}",
            io::Error::last_os_error()
        );
    }
    // Descriptor `own` keeps the socket; the inherited number is closed.
    drop(inherited);
    Ok(())
}

/// The epoll instance `fd` is registered with, and its registration (events and data), as
/// /proc/self/fdinfo shows them (`tfd: <fd> events: <hex> data: <hex> …`).
fn registration(fd: RawFd) -> anyhow::Result<(RawFd, libc::epoll_event)> {
    for epoll in descriptors()? {
        let is_epoll = std::fs::read_link(format!("/proc/self/fd/{epoll}"))
            .is_ok_and(|target| target.as_os_str() == "anon_inode:[eventpoll]");
        if !is_epoll {
            continue;
        }
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{epoll}"))?;
        for line in info.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["tfd:", tfd, "events:", events, "data:", data, ..] = words[..] {
                if tfd.parse() == Ok(fd) {
                    let event = libc::epoll_event {
                        events: u32::from_str_radix(events, 16)?,
                        u64: u64::from_str_radix(data, 16)?,
                    };
                    return Ok((epoll, event));
                }
            }
        }
    }
    bail!("may's epoll registration of descriptor {fd} was not found")
}

/// The descriptors of this process that are listening sockets.
fn listeners() -> anyhow::Result<Vec<RawFd>> {
    Ok(descriptors()?
        .into_iter()
        .filter(|&fd| listening(fd))
        .collect())
}

/// The open descriptors of this process.
fn descriptors() -> anyhow::Result<Vec<RawFd>> {
    let mut fds = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        if let Some(fd) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            fds.push(fd);
        }
    }
    Ok(fds)
}

/// Whether `fd` is a socket in the listening state (SO_ACCEPTCONN).
fn listening(fd: RawFd) -> bool {
    let mut on: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt with a c_int out-value of the size given; a descriptor that is not a
    // socket only makes it fail.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            std::ptr::from_mut(&mut on).cast(),
            &mut len,
        )
    };
    rc == 0 && on == 1
}
