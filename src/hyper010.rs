//! Shared plumbing for the frameworks built on hyper 0.10 (iron, nickel and the `null-hyper010`
//! baseline): in-process dispatch through a hyper 0.10 `Handler`, and a stoppable server with
//! hyper 0.10's own connection loop.
//!
//! In-process: hyper 0.10 has no request builder and its `Request` can only be parsed from a
//! stream, so [`dispatch`] encodes the request as HTTP/1.1 bytes, lets hyper parse them, calls
//! the handler with a `Response` writing into a buffer, and parses the bytes it wrote back into
//! an [`http::Response`]. `null-hyper010` answers through exactly this path, so its time is the
//! cost of the plumbing and can be subtracted.
//!
//! Loopback: hyper 0.10's `Listening::close` does not stop its threads, so [`serve`] runs on
//! [`crate::server`]'s pool and serves each connection with a copy of hyper 0.10's private
//! `Worker::handle_connection` and `keep_alive_loop` (hyper-0.10.16/src/server/mod.rs): the
//! same buffered reader and writer, request parser, `Expect: 100-continue` answer, keep-alive
//! decision and `Connection: close` header. Differences: one read timeout,
//! [`KEEP_ALIVE`](crate::options::KEEP_ALIVE), for every wait for a request (hyper applies its
//! keep-alive timeout after the first request and the framework's read timeout before it: iron
//! 30 s, nickel none); the stop flag is checked between requests; and a panic ends only its
//! connection (hyper's pool replaces the worker thread instead). Like hyper 0.10, a request it
//! cannot parse (garbage, a head over its ~400 KiB buffer, a truncated head) closes the
//! connection without a response.

use std::io::{self, BufWriter, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};

use hyper010::buffer::BufReader;
use hyper010::header::{Connection, Expect, Headers};
use hyper010::mime::{Attr, Mime, SubLevel, TopLevel, Value};
use hyper010::net::{HttpStream, NetworkStream};
use hyper010::server::{Handler, Request as HyperRequest, Response as HyperResponse};
use hyper010::status::StatusCode;
use hyper010::version::HttpVersion;

use crate::framework::{Request, Response, ServerHandle};
use crate::options::KEEP_ALIVE;
use crate::oracle::{JSON, TEXT_HTML, TEXT_PLAIN};
use crate::protocol::http1;
use crate::server;

/// The peer address in-process requests come from.
pub(crate) const PEER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 40000));
/// The local address in-process requests arrive at.
pub(crate) const IN_PROCESS_SERVER_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));

/// A content type in hyper 0.10's mime types, which iron and nickel share. The oracle's
/// constants are built directly, as a handler would write them; only a static file's type is
/// parsed.
pub(crate) fn mime(content_type: &str) -> Mime {
    let utf8 = || vec![(Attr::Charset, Value::Utf8)];
    match content_type {
        TEXT_PLAIN => Mime(TopLevel::Text, SubLevel::Plain, utf8()),
        TEXT_HTML => Mime(TopLevel::Text, SubLevel::Html, utf8()),
        JSON => Mime(TopLevel::Application, SubLevel::Json, vec![]),
        other => other
            .parse()
            .unwrap_or_else(|()| Mime(TopLevel::Application, SubLevel::OctetStream, vec![])),
    }
}

/// Sends one request through a hyper 0.10 handler without a socket.
///
/// The request is handled as a keep-alive one would be on a connection (no `Connection: close`
/// added to the response). Fails if hyper 0.10 cannot parse the request (its server would close
/// the connection) or the handler writes a response that does not parse.
pub(crate) fn dispatch<H: Handler>(handler: &H, req: Request) -> anyhow::Result<Response> {
    // Fairness: hyper 0.10 can only build a request by parsing bytes and only writes a response
    // as bytes, so this path includes encoding and parsing both; `null-hyper010` measures it.
    let head = http1::encode_request(&req)?;
    let len = head.len();
    let mut empty = Empty;
    let stream: &mut dyn NetworkStream = &mut empty;
    // The encoded request is the reader's buffer, as if one read had received all of it.
    let mut rdr = BufReader::from_parts(stream, head, 0, len);
    let mut out = Vec::with_capacity(1024);
    {
        let hyper_req = HyperRequest::new(&mut rdr, PEER)
            .map_err(|e| anyhow!("hyper 0.10 rejects the request (it would close): {e}"))?;
        let mut headers = Headers::new();
        let res = HyperResponse::new(&mut out, &mut headers);
        handler.handle(hyper_req, res);
    }
    parse_response(&out)
}

/// Serves `handler` on `listener` with a pool of `threads` connection threads.
pub(crate) fn serve<H: Handler + 'static>(
    listener: TcpListener,
    threads: usize,
    handler: H,
) -> anyhow::Result<ServerHandle> {
    // `serve --max-requests`: the counting wrapper exists only when a limit is set.
    match crate::server::limit::active() {
        Some(limit) => serve_pool(listener, threads, Counted(handler, limit)),
        None => serve_pool(listener, threads, handler),
    }
}

/// Counts each handled request for `serve --max-requests`.
struct Counted<H>(H, &'static crate::server::limit::Limit);

impl<H: Handler> Handler for Counted<H> {
    fn handle<'a, 'k>(
        &'a self,
        req: HyperRequest<'a, 'k>,
        res: HyperResponse<'a, hyper010::net::Fresh>,
    ) {
        self.0.handle(req, res);
        self.1.record();
    }
    fn check_continue(
        &self,
        v: (
            &hyper010::method::Method,
            &hyper010::uri::RequestUri,
            &Headers,
        ),
    ) -> StatusCode {
        self.0.check_continue(v)
    }
    fn on_connection_start(&self) {
        self.0.on_connection_start()
    }
    fn on_connection_end(&self) {
        self.0.on_connection_end()
    }
}

fn serve_pool<H: Handler + 'static>(
    listener: TcpListener,
    threads: usize,
    handler: H,
) -> anyhow::Result<ServerHandle> {
    let handler = Arc::new(handler);
    let conn = Arc::new(
        move |stream: TcpStream, peer: SocketAddr, stop: &AtomicBool| {
            // A panicking handler makes hyper 0.10's pool replace the thread; here the panic
            // ends only the connection (the client gets the 500 hyper's `Response` writes when
            // dropped during a panic, if the head was not sent yet).
            let _ = panic::catch_unwind(AssertUnwindSafe(|| {
                let _ = handle_connection(&*handler, stream, peer, stop);
            }));
        },
    );
    Ok(server::serve(listener, threads, conn)?)
}

/// hyper 0.10's `Worker::handle_connection`.
fn handle_connection<H: Handler>(
    handler: &H,
    stream: TcpStream,
    peer: SocketAddr,
    stop: &AtomicBool,
) -> io::Result<()> {
    handler.on_connection_start();
    let mut read_half = HttpStream(stream.try_clone()?);
    let mut write_half = HttpStream(stream);
    read_half.set_read_timeout(Some(KEEP_ALIVE))?;
    let read_half: &mut dyn NetworkStream = &mut read_half;
    let mut rdr = BufReader::new(read_half);
    let mut wrt = BufWriter::new(&mut write_half);
    while !stop.load(Ordering::Relaxed) && keep_alive_loop(handler, &mut rdr, &mut wrt, peer) {}
    handler.on_connection_end();
    rdr.get_mut().close(Shutdown::Both)
}

/// hyper 0.10's `Worker::keep_alive_loop`: serves one request, says whether to read another.
fn keep_alive_loop<H: Handler, W: Write>(
    handler: &H,
    rdr: &mut BufReader<&mut dyn NetworkStream>,
    wrt: &mut W,
    addr: SocketAddr,
) -> bool {
    // hyper 0.10 answers a request it cannot parse by closing (its TODO says "send a 400").
    let Ok(req) = HyperRequest::new(rdr, addr) else {
        return false;
    };
    if !handle_expect(handler, &req, wrt) {
        return false;
    }
    let mut keep_alive = hyper010::http::should_keep_alive(req.version, &req.headers);
    let version = req.version;
    let mut res_headers = Headers::new();
    if !keep_alive {
        res_headers.set(Connection::close());
    }
    {
        let mut res = HyperResponse::new(wrt, &mut res_headers);
        res.version = version;
        handler.handle(req, res);
    }
    // A keep-alive request stays so only if the response agrees.
    if keep_alive {
        keep_alive = hyper010::http::should_keep_alive(version, &res_headers);
    }
    keep_alive
}

/// hyper 0.10's `Worker::handle_expect`.
fn handle_expect<H: Handler, W: Write>(handler: &H, req: &HyperRequest, wrt: &mut W) -> bool {
    if req.version == HttpVersion::Http11 && req.headers.get() == Some(&Expect::Continue) {
        let status = handler.check_continue((&req.method, &req.uri, &req.headers));
        if write!(wrt, "{} {}\r\n\r\n", HttpVersion::Http11, status)
            .and_then(|()| wrt.flush())
            .is_err()
        {
            return false;
        }
        if status != StatusCode::Continue {
            return false;
        }
    }
    true
}

/// The stream behind an in-process request: everything is already buffered, so it has no
/// more bytes, and nothing is written to it.
struct Empty;

impl Read for Empty {
    fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
        Ok(0)
    }
}

impl Write for Empty {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl NetworkStream for Empty {
    fn peer_addr(&mut self) -> io::Result<SocketAddr> {
        Ok(PEER)
    }
    fn set_read_timeout(&self, _dur: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn set_write_timeout(&self, _dur: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
}

/// Parses the bytes a hyper 0.10 `Response` wrote: the whole output is one response.
fn parse_response(raw: &[u8]) -> anyhow::Result<Response> {
    match http1::parse_response(raw, true)? {
        Some((res, _)) => Ok(res),
        None => bail!(
            "hyper 0.10 wrote a truncated response ({} bytes)",
            raw.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_output_is_an_error() {
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello").is_err());
        let res = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello").unwrap();
        assert_eq!(&res.body()[..], b"hello");
    }
}
