//! `raw`: the loopback reference. A hand-written HTTP/1.1 responder answering every scenario path
//! with bytes encoded at startup, on non-blocking sockets: one mio (epoll) event loop per
//! `threads`, each accepting from the shared listener and draining every readable connection,
//! answering all complete requests of one read with one write (pipelining included). It parses
//! only the request line, the end of the head and the `Connection`, `Content-Length` and
//! `Transfer-Encoding` headers (it closes after `Connection: close`, and after an HTTP/1.0
//! request without keep-alive; it reads a body by its length or decodes it chunked, up to
//! [`MAX_BODY`], and refuses a head it cannot frame with 400), computes the answers of the query
//! and body scenarios without allocating, answers `HEAD` with the head alone, supports keep-alive with the common idle timeout, and sends a `Date` header
//! formatted once a second. It skips the read that would only say EAGAIN, and polls
//! for [`SPIN`] before sleeping. Its own code costs least of every server here, and it makes the
//! fewest syscalls per request, so loopback results are read as a fraction of it; but it is a
//! reference, not a proven ceiling: may-minihttp has read above it at 2 and 32 connections on
//! this machine (docs/methodology/loopback.md, "Raw past the quick compare").
//!
//! It was one thread per connection on blocking sockets until 2026-11-23: at 32 connections on
//! one core its 32 threads lost to actix (issue 14), so it was not a ceiling.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use anyhow::{bail, Context as _};
use mio::net::{TcpListener as MioListener, TcpStream as MioStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::framework::{About, Config, Framework, Support, Transport, Request, Response, ServerHandle};
use crate::options::{Protocol, KEEP_ALIVE};
use crate::protocol::ws::handshake::{upgrade, Upgrade};
use crate::server::limit::Limit;

mod framing;
mod h2c;
mod wire;
mod ws;
use wire::Wire;
use framing::{dechunk_in_place, framing, Refusal};

/// Largest request head accepted; longer ones get 431.
const MAX_HEAD: usize = 16 * 1024;
/// Largest request body accepted; a longer one gets 413 and the connection is closed. The
/// read buffer grows to hold a head and such a body, from [`MAX_HEAD`].
const MAX_BODY: usize = 1 << 20;

/// The loopback reference.
pub(crate) struct Raw {
    routes: Arc<Routes>,
    /// The same answers for `--protocol h2c` ([`h2c`]).
    h2c: Arc<h2c::Answers>,
    threads: usize,
    protocol: Protocol,
    transport: Transport,
}

/// The encoded answers: one per scenario path, the 404 for every other path.
struct Routes {
    paths: Vec<(&'static str, Answer)>,
    not_found: Answer,
}

/// One answer encoded at startup, in two parts around the header lines it gets per response
/// (the `Date`; `Connection: close` on an error).
struct Answer {
    /// The status line and the fixed headers, each ended by CRLF.
    head: Vec<u8>,
    /// The blank line and the body.
    rest: Vec<u8>,
}

impl Answer {
    fn new(status: u16, reason: &str, content_type: &str, body: &[u8]) -> Answer {
        let mut rest = b"\r\n".to_vec();
        rest.extend_from_slice(body);
        Answer {
            head: format!(
                "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
                body.len()
            )
            .into_bytes(),
            rest,
        }
    }

    /// Appends this answer with the header lines `extra` to `out`; its head alone for `HEAD`.
    fn write(&self, out: &mut Vec<u8>, extra: &[u8], head_only: bool) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(extra);
        if head_only {
            out.extend_from_slice(b"\r\n");
        } else {
            out.extend_from_slice(&self.rest);
        }
    }
}

/// The `Date: …\r\n` line of an event loop, formatted once a second.
// Fairness: every framework sends a `Date` (`check --conformance`), most from a cache refreshed
// once a second as this one is, so the reference pays for one too (docs/methodology/conformance.md,
// "Conformance"). The wall clock is derived from the loop's one monotonic read per turn, not
// read again: under callgrind each clock read costs about 1,000 instructions.
struct DateLine {
    /// The wall clock at `base`.
    wall: std::time::SystemTime,
    base: Instant,
    /// The whole second `line` shows, since the epoch.
    second: u64,
    line: Vec<u8>,
}

impl DateLine {
    fn new(now: Instant) -> DateLine {
        let mut d = DateLine {
            wall: std::time::SystemTime::now(),
            base: now,
            second: u64::MAX,
            line: Vec::new(),
        };
        d.update(now);
        d
    }

    /// Reformats the line when `now` is in a new second.
    fn update(&mut self, now: Instant) {
        let wall = self.wall + now.saturating_duration_since(self.base);
        let second = wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if second != self.second {
            self.second = second;
            self.line = format!("Date: {}\r\n", httpdate::fmt_http_date(wall)).into_bytes();
        }
    }
}

impl Framework for Raw {
    const NAME: &'static str = "raw";
    const CRATE: &'static str = "framebench";
    const VERSION_PREFIX: &'static str = "";
    const ABOUT: About = About::own(
        "–",
        "hand-written HTTP/1.1 responder on non-blocking sockets, one mio event loop per server thread: the loopback reference (not a proven ceiling: docs/methodology/loopback.md, \"Raw past the quick compare\")",
    );
    const COUNTS_REQUESTS: bool = true;
    const COUNTS_MESSAGES: bool = true;
    const BASELINE: bool = true;
    const IN_PROCESS: bool = false;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("framebench's own: canned answers over the h2 crate's server, one listener of its own (the reference under `--protocol h2c`)")),
        (Protocol::H2, Support::Unsupported("raw's TLS reference loop speaks HTTP/1.1 only; its h2c server is a plaintext listener of its own")),
        (Protocol::Ws, Support::Supported("framebench's own: frames unmasked in place and echoed on raw's mio loop, the reference under `--protocol ws` (what it leaves out: src/frameworks/raw/ws.rs)")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("framebench's own: rustls's `ServerConnection` on raw's mio loop, the TLS reference (what it leaves out: docs/methodology/tls.md)"),
    )];
    // Fairness: raw answers every complete request of a read in that read's write, from its
    // event loop, and has no timer. One written for it (a timer wheel per loop, answers held
    // back in pipelining order) would put framebench's own timer beside the frameworks' and
    // be no reference: a delay load is read against arithmetic instead, its connections over
    // the wait (docs/methodology/delay.md).
    const CANNOT: &'static [(&'static str, &'static str)] = &[(
        "delay",
        "the loopback reference answers each read at once from its event loop and has no \
         timer; a delay load is read against connections ÷ the wait instead",
    )];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let canned = super::canned(&config.fixtures)?;
        let h2c = h2c::Answers {
            paths: canned
                .iter()
                .map(|c| {
                    Ok(h2c::Canned {
                        path: c.path,
                        status: http::StatusCode::from_u16(c.status)?,
                        content_type: http::HeaderValue::from_static(c.content_type),
                        body: c.body.clone(),
                    })
                })
                .collect::<anyhow::Result<_>>()?,
            not_found: h2c::Canned {
                path: "",
                status: http::StatusCode::NOT_FOUND,
                content_type: http::HeaderValue::from_static(crate::oracle::TEXT_PLAIN),
                body: Bytes::new(),
            },
        };
        let routes = canned
            .into_iter()
            .map(|c| {
                (
                    c.path,
                    Answer::new(c.status, "OK", c.content_type, &c.body),
                )
            })
            .collect();
        Ok(Raw {
            routes: Arc::new(Routes {
                paths: routes,
                not_found: Answer::new(404, "Not Found", crate::oracle::TEXT_PLAIN, b""),
            }),
            h2c: Arc::new(h2c),
            threads: config.options.threads.max(1),
            protocol: config.options.protocol,
            transport: config.options.transport,
        })
    }

    fn dispatch(&self, _req: Request) -> anyhow::Result<Response> {
        bail!("raw is loopback only: it is a socket server (use null for the in-process floor)")
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        // Fairness: `serve --max-requests` counts in the request loop; when no limit is set
        // that is one predictable branch per request (docs/methodology/callgrind.md).
        let limit = crate::server::limit::active();
        if self.protocol == Protocol::H2c {
            let answers = Arc::clone(&self.h2c);
            return crate::server::spawn_work_stealing(listener, self.threads, move |l, stop| {
                h2c::serve(l, stop, answers, limit)
            });
        }
        let tls = match self.transport {
            Transport::Tls => Some(crate::transport::tls::server_config(self.protocol)?),
            Transport::Tcp => None,
        };
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut wakers = Vec::new();
        let mut threads = Vec::new();
        for i in 0..self.threads {
            let poll = Poll::new()?;
            let mut listener = MioListener::from_std(listener.try_clone()?);
            poll.registry()
                .register(&mut listener, LISTENER, Interest::READABLE)?;
            wakers.push(Arc::new(Waker::new(poll.registry(), WAKE)?));
            let (routes, stop, tls) = (Arc::clone(&self.routes), Arc::clone(&stop), tls.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("raw-{i}"))
                    .spawn(move || {
                        let served = match tls {
                            Some(tls) => event_loop::<wire::Tls>(
                                poll,
                                listener,
                                &routes,
                                &stop,
                                limit,
                                Some(&tls),
                            ),
                            None => {
                                event_loop::<MioStream>(poll, listener, &routes, &stop, limit, None)
                            }
                        };
                        if let Err(e) = served {
                            eprintln!("raw: event loop {i}: {e:#}");
                        }
                    })
                    .context("spawning a raw event loop")?,
            );
        }
        let stop_all = move || {
            stop.store(true, Ordering::SeqCst);
            for w in &wakers {
                let _ = w.wake();
            }
        };
        Ok(ServerHandle::new(addr, stop_all, threads))
    }
}

/// The listener's token in every event loop.
const LISTENER: Token = Token(usize::MAX);
/// The token of the waker that stops an event loop.
const WAKE: Token = Token(usize::MAX - 1);
/// How long a loop keeps polling without sleeping after its last event. A thread asleep in
/// `epoll_wait` must be woken by the next request, and on this project's machine (a VM, where a
/// wake-up is an interrupt between virtual CPUs) that costs both sides: the client pays the
/// wake-up inside its `write`, the server its return from sleep. With 2 connections and
/// `--threads 1`, raw answered 33–39 k req/s sleeping at once, 72–94 k polling for 20 µs first
/// and 85–125 k for 50 µs; from 16 connections on, events arrive faster than the spin lasts and
/// it changes nothing. 20 µs keeps most of the gain while an idle gap still shows as idle CPU
/// (70–78 % at 2 connections, marked `unsat`). No framework measured here spins: this is what
/// keeps raw ahead at low concurrency, and its CPU figures there include up to 20 µs of
/// polling per idle gap (docs/methodology/loopback.md).
const SPIN: Duration = Duration::from_micros(20);
/// Set to `1` (by the callgrind loopback bench) to sleep in `epoll_wait` at once after the last
/// event. Under libfaketime's frozen clock the spin never ends, so the count of a spinning raw
/// was its idle polling between two requests, not its work: 42,486 instructions per request in
/// the run of 78d4afe, more than every framework but trillium.
pub(crate) const NO_SPIN_ENV: &str = "FRAMEBENCH_RAW_NO_SPIN";

/// [`SPIN`], or none when [`NO_SPIN_ENV`] is set to `1`.
fn spin() -> Duration {
    static SPIN_NOW: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN_NOW.get_or_init(|| match std::env::var(NO_SPIN_ENV).as_deref() {
        Ok("1") => Duration::ZERO,
        _ => SPIN,
    })
}
/// Set to a number of bytes that each connection then holds beyond its own: the change that
/// tests/testsuite/memory.rs plants to see that `framebench memory` counts it to the byte.
pub(crate) const PLANT_ENV: &str = "FRAMEBENCH_RAW_PLANT";

/// [`PLANT_ENV`]'s bytes, 0 when unset.
fn planted() -> usize {
    static PLANTED: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PLANTED.get_or_init(|| {
        std::env::var(PLANT_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    })
}

/// How often a loop looks for connections idle longer than [`KEEP_ALIVE`].
const SWEEP: Duration = Duration::from_millis(500);
/// Unsent answers above which a connection is not read until its client reads (a client that
/// pipelines without reading cannot grow the server's memory without bound).
const MAX_PENDING: usize = 1 << 20;

/// One connection of an event loop, on its wire (the socket, or TLS on it).
struct Conn<W> {
    stream: W,
    /// Request bytes read and not yet answered.
    buf: Vec<u8>,
    filled: usize,
    /// Answers not yet written, from `sent` on.
    out: Vec<u8>,
    sent: usize,
    /// Whether it is registered for writable too (a write would block).
    writable: bool,
    /// Close once `out` is written (after a 400 or 431, or a WebSocket Close).
    closing: bool,
    /// After `GET /ws` was upgraded: the WebSocket echo's state, and every byte read is a frame.
    ws: Option<ws::Echo>,
    last_active: Instant,
    /// [`PLANT_ENV`]'s bytes, held as long as the connection: nothing else reads them.
    _planted: Box<[u8]>,
}

/// Accepts and serves until `stop`. Connections are slots of a `Vec`; a token is a slot index.
///
/// Over 80 lines on purpose: this is the reference server's hot loop, kept in one piece so
/// that its control flow (accept, read, answer, write, close, time out) reads in one place and
/// nothing on the path of a request hides behind a call.
fn event_loop<W: Wire>(
    mut poll: Poll,
    listener: MioListener,
    routes: &Routes,
    stop: &AtomicBool,
    limit: Option<&'static Limit>,
    tls: Option<&Arc<rustls::ServerConfig>>,
) -> anyhow::Result<()> {
    let mut events = Events::with_capacity(1024);
    let mut conns: Vec<Option<Conn<W>>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    // One clock read per turn of the loop, shared by the spin, the keep-alive stamps and the
    // sweep: under callgrind with libfaketime each read is about 1,000 instructions, and the
    // loop used to read the clock four times per busy turn and twice per idle spin, which made
    // most of raw's loopback count (docs/methodology/callgrind.md, "Time against the counts").
    let mut now = Instant::now();
    let mut date = DateLine::new(now);
    let mut last_sweep = now;
    let mut last_busy = now;
    let spin = spin();
    while !stop.load(Ordering::SeqCst) {
        // Poll without sleeping for SPIN after the last event, then sleep in epoll_wait.
        let wait = if now.duration_since(last_busy) < spin {
            Duration::ZERO
        } else {
            SWEEP
        };
        let polled = poll.poll(&mut events, Some(wait));
        now = Instant::now();
        date.update(now);
        if let Err(e) = polled {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e.into());
        }
        if !events.is_empty() {
            last_busy = now;
        }
        for event in events.iter() {
            match event.token() {
                WAKE => {}
                LISTENER => loop {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            // Every framebench server sets TCP_NODELAY on accepted connections.
                            let _ = stream.set_nodelay(true);
                            // One connection the loop cannot start or watch is dropped, not
                            // the loop.
                            let Ok(mut stream) = W::accept(stream, tls) else {
                                continue;
                            };
                            let slot = free.pop().unwrap_or_else(|| {
                                conns.push(None);
                                conns.len() - 1
                            });
                            let registered = poll.registry().register(
                                stream.socket(),
                                Token(slot),
                                Interest::READABLE,
                            );
                            if registered.is_err() {
                                free.push(slot);
                                continue;
                            }
                            conns[slot] = Some(Conn {
                                stream,
                                buf: vec![0; MAX_HEAD],
                                filled: 0,
                                out: Vec::with_capacity(64 * 1024),
                                sent: 0,
                                writable: false,
                                closing: false,
                                ws: None,
                                last_active: now,
                                _planted: vec![1; planted()].into_boxed_slice(),
                            });
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        // Out of descriptors or a connection reset before accept: try again at
                        // the next event.
                        Err(_) => break,
                    }
                },
                Token(slot) => {
                    let Some(conn) = conns.get_mut(slot).and_then(Option::as_mut) else {
                        continue;
                    };
                    conn.last_active = now;
                    let keep = drive(conn, routes, &date.line, limit).unwrap_or(false)
                        && interest(&poll, conn, slot).is_ok();
                    if !keep {
                        close(&poll, &mut conns, &mut free, slot);
                    }
                }
            }
        }
        if now.duration_since(last_sweep) >= SWEEP {
            last_sweep = now;
            for slot in 0..conns.len() {
                let idle = conns[slot]
                    .as_ref()
                    .is_some_and(|c| now.duration_since(c.last_active) >= KEEP_ALIVE);
                if idle {
                    close(&poll, &mut conns, &mut free, slot);
                }
            }
        }
    }
    Ok(())
}

fn close<W: Wire>(poll: &Poll, conns: &mut [Option<Conn<W>>], free: &mut Vec<usize>, slot: usize) {
    if let Some(mut conn) = conns[slot].take() {
        let _ = poll.registry().deregister(conn.stream.socket());
        free.push(slot);
    }
}

/// Registers for writable while answers wait to be written (or TLS records wait for the
/// socket), and stops when they are.
fn interest<W: Wire>(poll: &Poll, conn: &mut Conn<W>, slot: usize) -> std::io::Result<()> {
    let want = conn.sent < conn.out.len() || (W::BUFFERED && conn.stream.holds_writes());
    if want != conn.writable {
        let interest = if want {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        poll.registry()
            .reregister(conn.stream.socket(), Token(slot), interest)?;
        conn.writable = want;
    }
    Ok(())
}

/// Reads everything the socket has (the loop is edge-triggered), answers every complete request
/// in order, and writes as much as the socket takes. `Ok(false)`: close the connection.
fn drive<W: Wire>(
    conn: &mut Conn<W>,
    routes: &Routes,
    date: &[u8],
    limit: Option<&'static Limit>,
) -> std::io::Result<bool> {
    loop {
        // Read until the socket is empty, the client has closed, or too much waits unsent.
        while !conn.closing && conn.out.len() - conn.sent < MAX_PENDING {
            let room = conn.buf.len() - conn.filled;
            match conn.stream.read(&mut conn.buf[conn.filled..]) {
                // The client sent its last request: answer what it sent, then close.
                Ok(0) => conn.closing = true,
                Ok(n) => {
                    conn.filled += n;
                    answer(conn, routes, date, limit);
                    // A read shorter than its room emptied the socket, so the next read would
                    // only say EAGAIN: one syscall per request saved. Linux's epoll reports
                    // every later arrival as a new edge, so nothing is missed (tokio's
                    // `poll_read` clears readiness on a short read for the same reason).
                    if W::SHORT_READ_DRAINS && n < room {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let stopped_reading = !conn.closing && conn.out.len() - conn.sent >= MAX_PENDING;
        while conn.sent < conn.out.len() {
            match conn.stream.write(&conn.out[conn.sent..]) {
                Ok(0) => return Ok(false),
                Ok(n) => conn.sent += n,
                // The rest goes when the socket is writable again.
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        conn.out.clear();
        conn.sent = 0;
        // TLS records the socket did not take yet go when it is writable again.
        if W::BUFFERED {
            conn.stream.flush()?;
            if conn.stream.holds_writes() {
                return Ok(true);
            }
        }
        // Reading stopped with bytes maybe left in the socket: no new event will say so.
        if !stopped_reading {
            return Ok(!conn.closing);
        }
    }
}

/// Appends the answer to every complete request in the buffer to `out`, then keeps the rest;
/// on an upgraded connection, the echo of every complete frame ([`answer_ws`]).
fn answer<W>(conn: &mut Conn<W>, routes: &Routes, date: &[u8], limit: Option<&'static Limit>) {
    if conn.ws.is_some() {
        return answer_ws(conn);
    }
    let mut start = 0;
    while let Some(end) = find_head_end(&conn.buf[start..conn.filled]) {
        let head_end = start + end + 4;
        let head = &conn.buf[start..start + end];
        let (Some(target), Some(framing)) = (request_path(head), framing(head)) else {
            return refuse(conn, 400, "Bad Request");
        };
        // Where the target lies in the buffer: after the method and its space.
        let target = {
            let at = start + head.iter().position(|&b| b == b' ').unwrap_or(0) + 1;
            at..at + target.len()
        };
        if framing.length.is_some_and(|n| n > MAX_BODY) {
            return refuse(conn, 413, "Content Too Large");
        }
        // The body, once it is all in the buffer (decoded in place when chunked).
        let (body, next) = if framing.chunked {
            match dechunk_in_place(&mut conn.buf[head_end..conn.filled]) {
                Ok(Some((len, used))) => (head_end..head_end + len, head_end + used),
                Ok(None) => break,
                Err(Refusal::TooLarge) => return refuse(conn, 413, "Content Too Large"),
                Err(Refusal::Malformed) => return refuse(conn, 400, "Bad Request"),
            }
        } else {
            let len = framing.length.unwrap_or(0);
            if conn.filled - head_end < len {
                break;
            }
            (head_end..head_end + len, head_end + len)
        };
        // `GET /ws`: the WebSocket upgrade, after which the rest of the buffer is frames.
        if &conn.buf[target.clone()] == b"/ws" {
            match ws_upgrade(&conn.buf[start..head_end]) {
                Upgrade::Accept(switching) => {
                    conn.out.extend_from_slice(&switching);
                    conn.ws = Some(ws::Echo::new(limit));
                    conn.buf.copy_within(next..conn.filled, 0);
                    conn.filled -= next;
                    if let Some(limit) = limit {
                        limit.record();
                    }
                    return answer_ws(conn);
                }
                Upgrade::Refuse(_) => return refuse(conn, 400, "Bad Request"),
            }
        }
        let head_only = conn.buf[start..].starts_with(b"HEAD ");
        let post = conn.buf[start..].starts_with(b"POST ");
        let target = &conn.buf[target];
        if !computed(&mut conn.out, target, post, &conn.buf[body], date) {
            let res = routes
                .paths
                .iter()
                .find(|(p, _)| p.as_bytes() == target)
                .map_or(&routes.not_found, |(_, r)| r);
            // HEAD gets the head alone.
            res.write(&mut conn.out, date, head_only);
        }
        start = next;
        if let Some(limit) = limit {
            limit.record();
        }
        // Fairness: every framework closes after `Connection: close` (check
        // --conformance), and the churn load depends on it, so raw honours it too:
        // one scan of the head per request, which its numbers include.
        if framing.close {
            conn.closing = true;
            return;
        }
    }
    conn.buf.copy_within(start..conn.filled, 0);
    conn.filled -= start;
    if conn.filled == conn.buf.len() {
        match find_head_end(&conn.buf[..conn.filled]) {
            None => refuse(conn, 431, "Request Header Fields Too Large"),
            // A whole head whose body is still coming: room for the largest body raw reads.
            Some(_) if conn.buf.len() < MAX_HEAD + MAX_BODY => {
                let grown = (conn.buf.len() * 2).min(MAX_HEAD + MAX_BODY);
                conn.buf.resize(grown, 0);
            }
            Some(_) => refuse(conn, 413, "Content Too Large"),
        }
    }
}

/// The echo of every complete WebSocket frame in the buffer ([`ws::Echo`]), then the rest kept;
/// the buffer grows to hold a frame larger than it, up to [`ws::MAX_FRAME`].
fn answer_ws<W>(conn: &mut Conn<W>) {
    let Some(echo) = conn.ws.as_mut() else {
        return;
    };
    match echo.frames(&mut conn.buf[..conn.filled], &mut conn.out) {
        ws::Echoed::Close => conn.closing = true,
        ws::Echoed::More(used) => {
            conn.buf.copy_within(used..conn.filled, 0);
            conn.filled -= used;
            // The largest head is 14 bytes.
            let most = ws::MAX_FRAME + 14;
            if conn.filled == conn.buf.len() && conn.buf.len() < most {
                let grown = (conn.buf.len() * 2).min(most);
                conn.buf.resize(grown, 0);
            }
        }
    }
}

/// The answer to an upgrade request's head (its blank line included), as the handshake
/// module judges it.
fn ws_upgrade(head: &[u8]) -> Upgrade {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => upgrade(req.method.unwrap_or_default(), req.headers),
        _ => Upgrade::Refuse("a head httparse cannot read"),
    }
}

/// Answers `status` and closes the connection after it: a request raw cannot frame or take.
fn refuse<W>(conn: &mut Conn<W>, status: u16, reason: &str) {
    Answer::new(status, reason, "text/plain", b"").write(&mut conn.out, CLOSE, false);
    conn.closing = true;
}

/// Appends the answer to a query or body scenario's request (`GET /sum?…`, `POST /upload`,
/// `POST /json_in`), computed from it without allocating; `false` for every other route, which
/// is answered canned.
fn computed(out: &mut Vec<u8>, target: &[u8], post: bool, body: &[u8], date: &[u8]) -> bool {
    use crate::handlers::{operands_from_json, operands_from_query};
    use std::io::Write as _;
    // The answer's body, formatted on the stack: its length goes in the head before it.
    let mut text = [0u8; 64];
    let mut cursor = std::io::Cursor::new(&mut text[..]);
    let content_type = match target {
        t if t.starts_with(b"/sum?") || t == b"/sum" => {
            let query = std::str::from_utf8(&t[4..]).ok().and_then(|q| q.strip_prefix('?'));
            let Some(ops) = operands_from_query(query) else {
                Answer::new(400, "Bad Request", "text/plain", b"").write(out, date, false);
                return true;
            };
            let _ = write!(cursor, "{}", u64::from(ops.a) + u64::from(ops.b));
            crate::oracle::TEXT_PLAIN
        }
        b"/upload" if post => {
            let digest = crate::oracle::fnv1a64(body);
            let _ = write!(cursor, "{} {digest:016x}", body.len());
            crate::oracle::TEXT_PLAIN
        }
        b"/json_in" if post => {
            let Some(ops) = operands_from_json(body) else {
                Answer::new(400, "Bad Request", "text/plain", b"").write(out, date, false);
                return true;
            };
            let _ = write!(cursor, r#"{{"sum":{}}}"#, u64::from(ops.a) + u64::from(ops.b));
            crate::oracle::JSON
        }
        _ => return false,
    };
    let len = cursor.position() as usize;
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n"
    );
    out.extend_from_slice(date);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&text[..len]);
    true
}

/// The header line of the error answers, after which raw closes the connection.
const CLOSE: &[u8] = b"Connection: close\r\n";

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// The path of `GET /path HTTP/1.x`, or `None` if the request line is malformed.
fn request_path(head: &[u8]) -> Option<&[u8]> {
    let line = head.split(|&b| b == b'\r').next()?;
    let mut parts = line.split(|&b| b == b' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    let ok = parts.next().is_none()
        && !method.is_empty()
        && method.iter().all(u8::is_ascii_uppercase)
        && target.first() == Some(&b'/')
        && version.starts_with(b"HTTP/1.");
    ok.then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(request_path(b"GET / HTTP/1.1"), Some(&b"/"[..]));
        assert_eq!(
            request_path(b"GET /x HTTP/1.1\r\nHost: a"),
            Some(&b"/x"[..])
        );
        assert_eq!(request_path(b"garbage"), None);
        assert_eq!(request_path(b"GET x HTTP/1.1"), None);
        assert_eq!(request_path(b"GET / HTTP/1.1 extra"), None);
    }

    #[test]
    fn computed_answers() {
        let answer = |target: &[u8], post, body: &[u8]| {
            let mut out = Vec::new();
            assert!(computed(&mut out, target, post, body, b"Date: x\r\n"));
            let (res, _) = crate::protocol::http1::parse_response(&out, false).unwrap().unwrap();
            (res.status().as_u16(), res.into_body())
        };
        assert_eq!(
            answer(b"/sum?a=4000000000&b=1", false, b""),
            (200, bytes::Bytes::from("4000000001"))
        );
        assert_eq!(answer(b"/sum?a=x", false, b"").0, 400);
        assert_eq!(
            answer(b"/upload", true, b"a"),
            (200, format!("1 {:016x}", crate::oracle::fnv1a64(b"a")).into())
        );
        assert_eq!(
            answer(b"/json_in", true, br#"{"a":2,"b":3}"#),
            (200, bytes::Bytes::from(r#"{"sum":5}"#))
        );
        assert!(!computed(&mut Vec::new(), b"/upload", false, b"", b""));
        assert!(!computed(&mut Vec::new(), b"/", false, b"", b""));
    }
}
