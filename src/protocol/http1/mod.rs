//! A minimal HTTP/1.1 client side: connect with bounds, encode a GET, parse a response
//! (Content-Length, chunked or read-to-close). The one request encoder of `check`, the benches'
//! keep-alive client and the load driver; also used by the tests and the in-process path of the
//! hyper 0.10 frameworks, which can only produce bytes.

pub mod hostile;
pub(crate) mod rules;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use bytes::Bytes;

use super::TIMEOUT;
use crate::options::Transport;
use crate::oracle::{self, Expected, Instance, Observed};
use crate::transport::tls;

/// Parses one complete response from `buf`. With `eof`, a response without framing ends at the
/// end of `buf`. Returns the response and the number of bytes it used, or `None` if more bytes
/// are needed.
pub(crate) fn parse_response(
    buf: &[u8],
    eof: bool,
) -> anyhow::Result<Option<(http::Response<Bytes>, usize)>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    let head_len = match res.parse(buf).context("malformed response head")? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Ok(None),
    };
    let mut builder = http::Response::builder().status(res.code.unwrap_or(0));
    let mut length = None;
    let mut chunked = false;
    for h in res.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)?.trim().parse::<usize>()?;
            length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = String::from_utf8_lossy(h.value)
                .to_ascii_lowercase()
                .contains("chunked");
        }
        builder = builder.header(h.name, h.value);
    }
    let rest = &buf[head_len..];
    let (body, used) = if res.code.is_some_and(bodyless) {
        (Vec::new(), 0)
    } else if chunked {
        match dechunk(rest)? {
            Some((body, used)) => (body, used),
            None => return Ok(None),
        }
    } else if let Some(len) = length {
        if rest.len() < len {
            return Ok(None);
        }
        (rest[..len].to_vec(), len)
    } else if eof {
        (rest.to_vec(), rest.len())
    } else {
        return Ok(None);
    };
    let response = builder
        .body(Bytes::from(body))
        .map_err(|e| anyhow!("bad response: {e}"))?;
    Ok(Some((response, head_len + used)))
}

/// Whether a response with `status` ends at the empty line after its head, whatever its
/// headers say (RFC 9112 §6.3, rule 1): every 1xx, 204 and 304. ntex 3.12.3 sends its `101` to a
/// WebSocket upgrade with `Transfer-Encoding: chunked`; read as a chunked body, that answer never
/// ends.
fn bodyless(status: u16) -> bool {
    status == 204 || status == 304 || (100..200).contains(&status)
}

fn dechunk(mut buf: &[u8]) -> anyhow::Result<Option<(Vec<u8>, usize)>> {
    let total = buf.len();
    let mut body = Vec::new();
    loop {
        let Some(line_end) = buf.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size_text = std::str::from_utf8(&buf[..line_end])?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).context("bad chunk size")?;
        buf = &buf[line_end + 2..];
        if size == 0 {
            // Skip trailers up to the empty line.
            let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
                return Ok(None);
            };
            if end != 0 {
                bail!("chunk trailers are not supported");
            }
            buf = &buf[2..];
            return Ok(Some((body, total - buf.len())));
        }
        if buf.len() < size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[..size]);
        buf = &buf[size + 2..];
    }
}

/// Connects to `addr` with Nagle's delay off. `timeout` bounds the connect, every read and every
/// write, so a broken server fails the caller instead of hanging it.
pub(crate) fn connect(addr: SocketAddr, timeout: Duration) -> anyhow::Result<TcpStream> {
    let stream =
        TcpStream::connect_timeout(&addr, timeout).with_context(|| format!("connect {addr}"))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    Ok(stream)
}

/// Sends `raw` bytes on a new connection to `addr` and reads one response, or until close.
/// Bounded by `timeout` for connect, every read and every write.
pub(crate) fn exchange(
    addr: SocketAddr,
    raw: &[u8],
    timeout: Duration,
) -> anyhow::Result<http::Response<Bytes>> {
    exchange_on(&mut connect(addr, timeout)?, raw)
}

/// [`exchange`] on a connection already open (a TLS one, for one).
pub(crate) fn exchange_on(
    stream: &mut (impl Read + Write),
    raw: &[u8],
) -> anyhow::Result<http::Response<Bytes>> {
    stream.write_all(raw)?;
    stream.flush()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            // A reset after the server answered and closed still leaves a complete answer, as
            // does a TLS close without its close_notify alert.
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionReset
                    || e.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                0
            }
            Err(e) => return Err(e).context("reading the response"),
        };
        if n == 0 {
            return match parse_response(&buf, true)? {
                Some((res, _)) => Ok(res),
                None if buf.is_empty() => bail!("connection closed without a response"),
                None => bail!("connection closed mid-response"),
            };
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some((res, _)) = parse_response(&buf, false)? {
            return Ok(res);
        }
    }
}

/// What a request asks of its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connection {
    /// Keep it open for the next request (HTTP/1.1's default, as wrk sends it).
    KeepAlive,
    /// Close it after the response (`Connection: close`).
    Close,
}

/// A `GET` for `target`, byte for byte as given (no normalisation).
pub(crate) fn get_request(target: &str, connection: Connection) -> Vec<u8> {
    let close = match connection {
        Connection::KeepAlive => "",
        Connection::Close => "Connection: close\r\n",
    };
    format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n{close}\r\n").into_bytes()
}

/// Appends `instance` to `out` as a client sends it: the method, the target and `Host`, the
/// connection's wish, then for a body its `Content-Type` and either `Content-Length` or
/// `Transfer-Encoding: chunked` with the body in [`crate::oracle::CHUNKS`] chunks. A `GET` is
/// byte for byte [`get_request`]'s.
pub(crate) fn encode_instance(instance: &Instance, connection: Connection, out: &mut Vec<u8>) {
    use std::fmt::Write as _;
    let mut head = String::with_capacity(160);
    let close = match connection {
        Connection::KeepAlive => "",
        Connection::Close => "Connection: close\r\n",
    };
    let _ = write!(
        head,
        "{} {} HTTP/1.1\r\nHost: localhost\r\n{close}",
        instance.method.as_str(),
        instance.target
    );
    if let Some(content_type) = instance.content_type {
        let _ = write!(head, "Content-Type: {content_type}\r\n");
    }
    let body = &instance.body[..];
    if instance.chunked {
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        out.extend_from_slice(head.as_bytes());
        let size = body.len().div_ceil(crate::oracle::CHUNKS).max(1);
        for chunk in body.chunks(size) {
            out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        return;
    }
    if instance.method == crate::oracle::Method::Post {
        let _ = write!(head, "Content-Length: {}\r\n", body.len());
    }
    head.push_str("\r\n");
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(body);
}

/// [`encode_instance`] into a vector of its own.
pub(crate) fn instance_request(instance: &Instance, connection: Connection) -> Vec<u8> {
    let mut out = Vec::with_capacity(instance.body.len() + 200);
    encode_instance(instance, connection, &mut out);
    out
}

/// Any in-process request as a client would send it over HTTP/1.1: for the in-process paths
/// that can only parse bytes (hyper 0.10's, hyperlane's).
pub(crate) fn encode_request(req: &http::Request<Bytes>) -> anyhow::Result<Vec<u8>> {
    let version = match req.version() {
        http::Version::HTTP_09 | http::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    };
    let target = req
        .uri()
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    let mut out = Vec::with_capacity(128 + req.body().len());
    write!(out, "{} {target} {version}\r\n", req.method())?;
    if !req.headers().contains_key(http::header::HOST) {
        if let Some(authority) = req.uri().authority() {
            write!(out, "host: {authority}\r\n")?;
        }
    }
    for (name, value) in req.headers() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !req.body().is_empty() && !req.headers().contains_key(http::header::CONTENT_LENGTH) {
        write!(out, "content-length: {}\r\n", req.body().len())?;
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(req.body());
    Ok(out)
}

/// Sends `GET target` byte for byte on a new connection (no client-side normalisation).
pub fn raw_get(addr: SocketAddr, target: &str) -> anyhow::Result<Observed> {
    send_bytes(addr, &get_request(target, Connection::Close))
}

/// Sends `request` on a new connection and reads the one answer.
fn send_bytes(addr: SocketAddr, request: &[u8]) -> anyhow::Result<Observed> {
    Ok(Observed::from_response(&exchange(addr, request, TIMEOUT)?))
}

/// The size of one response that [`precheck`] read and found as the oracle expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checked {
    /// Bytes of the whole response, head and body.
    pub(crate) len: usize,
    /// Bytes of its body.
    pub(crate) body_len: usize,
}

/// Connects to `addr`, sends `depth` requests of `expected`'s scenario in one write, taking
/// `requests` in turn, and checks every answer against the oracle: what every loopback
/// measurement does before it starts. With `depth > 1` this is the pipelining check (with
/// bodies, for a body scenario). Bounded by `timeout`.
pub(crate) fn precheck(
    transport: Transport,
    addr: SocketAddr,
    expected: &Expected,
    requests: &[Instance],
    depth: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Checked>> {
    // Each error is flattened to one line (`{e:#}` of a chain): the callers print it with `{e}`.
    match transport {
        Transport::Tcp => {
            let mut stream = connect(addr, timeout).map_err(|e| anyhow!("{e:#}"))?;
            precheck_on(&mut stream, expected, requests, depth, timeout)
        }
        Transport::Tls => {
            let mut stream = tls::connect(addr, timeout).map_err(|e| anyhow!("{e:#}"))?;
            precheck_on(&mut stream, expected, requests, depth, timeout)
        }
    }
}

/// [`precheck`] on an open keep-alive connection, which stays in step for the next request:
/// exactly `depth` responses are read, and any byte after the last one is an error.
pub(crate) fn precheck_on(
    stream: &mut (impl Read + Write),
    expected: &Expected,
    requests: &[Instance],
    depth: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Checked>> {
    anyhow::ensure!(!requests.is_empty(), "no request to send");
    let sent: Vec<&Instance> = requests.iter().cycle().take(depth.max(1)).collect();
    let mut bytes = Vec::new();
    for instance in &sent {
        encode_instance(instance, Connection::KeepAlive, &mut bytes);
    }
    let written = Instant::now();
    stream
        .write_all(&bytes)
        .and_then(|()| stream.flush())
        .map_err(|e| anyhow!("writing: {e}"))?;
    read_checked(stream, expected, &sent, written, written + timeout)
}

/// Reads one response per request of `sent` off `stream` and checks each against `expected`
/// and its own request, and that none came sooner after `written` (when the requests went out)
/// than its request asked the server to wait ([`Instance::check_not_early`]).
fn read_checked(
    stream: &mut impl Read,
    expected: &Expected,
    sent: &[&Instance],
    written: Instant,
    deadline: Instant,
) -> anyhow::Result<Vec<Checked>> {
    let depth = sent.len();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let mut checked = Vec::with_capacity(depth);
    while checked.len() < depth {
        match parse_response(&buf, false).map_err(|e| anyhow!("{e:#}"))? {
            Some((res, used)) => {
                let instance = sent[checked.len()];
                expected
                    .check_instance(instance, &Observed::from_response(&res))
                    .and_then(|()| instance.check_not_early(written.elapsed()))
                    .map_err(|e| anyhow!("response {} of {depth}: {e}", checked.len() + 1))?;
                checked.push(Checked {
                    len: used,
                    body_len: res.body().len(),
                });
                buf.drain(..used);
                continue;
            }
            None if Instant::now() > deadline => anyhow::bail!("timed out"),
            None => {}
        }
        let n = stream
            .read(&mut chunk)
            .map_err(|e| anyhow!("reading: {e}"))?;
        if n == 0 {
            anyhow::bail!(
                "connection closed after {} of {depth} responses",
                checked.len()
            );
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if !buf.is_empty() {
        anyhow::bail!("{} bytes after response {depth}", buf.len());
    }
    Ok(checked)
}

/// A reqwest client for loopback checks: no proxy, bounded by [`TIMEOUT`].
pub fn client() -> anyhow::Result<reqwest::blocking::Client> {
    Ok(reqwest::blocking::Client::builder()
        .timeout(TIMEOUT)
        .no_proxy()
        .build()?)
}

/// Sends `instance` with reqwest (keep-alive, as a typical client). reqwest decides how a body
/// goes out (always `Content-Length` for a body it holds whole), so a chunked instance is sent
/// by [`wire_send`] instead.
pub fn reqwest_send(
    client: &reqwest::blocking::Client,
    addr: SocketAddr,
    instance: &Instance,
) -> anyhow::Result<Observed> {
    anyhow::ensure!(
        !instance.chunked,
        "reqwest chooses its own framing: send a chunked body with wire_send"
    );
    let method = reqwest::Method::from_bytes(instance.method.as_str().as_bytes())?;
    let mut request = client.request(method, format!("http://{addr}{}", instance.target));
    if let Some(content_type) = instance.content_type {
        request = request.header(reqwest::header::CONTENT_TYPE, content_type);
    }
    if instance.method == oracle::Method::Post {
        request = request.body(instance.body.clone());
    }
    let res = request
        .send()
        .with_context(|| format!("{} {}", instance.method.as_str(), instance.target))?;
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = res.bytes()?;
    Ok(Observed {
        status,
        content_type,
        body,
    })
}

/// Sends `instance` byte for byte as [`encode_instance`] writes it, on a new connection
/// that asks to close.
pub fn wire_send(addr: SocketAddr, instance: &Instance) -> anyhow::Result<Observed> {
    send_bytes(addr, &instance_request(instance, Connection::Close))
}

/// `check`'s HTTP/1.1 client: reqwest, as a typical client, for a body it may frame itself;
/// the wire for a chunked body and for the traversals, byte for byte.
pub(crate) struct Checker {
    client: reqwest::blocking::Client,
    addr: SocketAddr,
}

impl Checker {
    /// A client for the server at `addr`.
    pub(crate) fn new(addr: SocketAddr) -> anyhow::Result<Checker> {
        Ok(Checker {
            client: client()?,
            addr,
        })
    }
}

impl super::Exchange for Checker {
    fn observe(&mut self, instance: &Instance) -> anyhow::Result<Observed> {
        match instance.chunked {
            true => wire_send(self.addr, instance),
            false => reqwest_send(&self.client, self.addr, instance),
        }
    }

    fn get(&mut self, target: &str) -> anyhow::Result<Observed> {
        raw_get(self.addr, target)
    }
}

/// `GET target` over TLS to the server at `addr` (which serves this process's certificate: one
/// it started), on a new connection with a full handshake: the status, and the TLS version
/// negotiated. For the tests of hostile TLS input.
#[doc(hidden)]
pub fn tls_get_status(addr: SocketAddr, target: &str) -> anyhow::Result<(u16, String)> {
    let mut stream = tls::connect(addr, TIMEOUT)?;
    let res = exchange_on(&mut stream, &get_request(target, Connection::Close))?;
    let version = stream
        .conn
        .protocol_version()
        .map_or_else(|| "?".to_owned(), |v| format!("{v:?}"));
    Ok((res.status().as_u16(), version))
}

/// `check`'s HTTP/1.1 client over TLS: every request byte for byte as [`encode_instance`]
/// writes it, on a new connection (a full handshake) that asks to close. reqwest is not used
/// here: it would bring a TLS stack of its own.
pub(crate) struct TlsChecker {
    addr: SocketAddr,
}

impl TlsChecker {
    /// A client for the TLS server at `addr`.
    pub(crate) fn new(addr: SocketAddr) -> TlsChecker {
        TlsChecker { addr }
    }

    fn send(&self, request: &[u8]) -> anyhow::Result<Observed> {
        let mut stream = tls::connect(self.addr, TIMEOUT)?;
        Ok(Observed::from_response(&exchange_on(&mut stream, request)?))
    }
}

impl super::Exchange for TlsChecker {
    fn observe(&mut self, instance: &Instance) -> anyhow::Result<Observed> {
        self.send(&instance_request(instance, Connection::Close))
    }

    fn get(&mut self, target: &str) -> anyhow::Result<Observed> {
        self.send(&get_request(target, Connection::Close))
    }
}

/// Status and total length of the first response in `data`, or `None` if it is incomplete: the
/// load client's framing, which reads only Content-Length, chunked, or no body for
/// 1xx/204/304 (the full parse is [`parse_response`]).
pub(crate) fn frame_fast(data: &[u8]) -> anyhow::Result<Option<(u16, usize)>> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut res = httparse::Response::new(&mut headers);
    let head = match res.parse(data) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => bail!("malformed response head: {e}"),
    };
    let status = res.code.unwrap_or(0);
    if bodyless(status) {
        return Ok(Some((status, head)));
    }
    let mut length = None;
    for h in res.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
            if length.is_none() {
                bail!("bad content-length");
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            && h.value
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"chunked"))
        {
            // Rare on these routes: take the full parser's slow path.
            return match parse_response(data, false) {
                Ok(Some((_, used))) => Ok(Some((status, used))),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
        }
    }
    let body = match length {
        Some(n) => n,
        None => bail!("response without Content-Length or chunked framing"),
    };
    if data.len() < head + body {
        return Ok(None);
    }
    Ok(Some((status, head + body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_length_chunked_and_partial() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP";
        assert_eq!(frame_fast(r).unwrap(), Some((200, 40)));
        assert_eq!(frame_fast(&r[..39]).unwrap(), None);
        let c = b"HTTP/1.1 404 NF\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
        assert_eq!(frame_fast(c).unwrap(), Some((404, c.len())));
        assert_eq!(frame_fast(&c[..c.len() - 2]).unwrap(), None);
        assert!(frame_fast(b"HTTP/1.1 200 OK\r\n\r\nbody").is_err());
        assert!(frame_fast(b"garbage\r\n\r\n").is_err());
    }

    /// A 1xx, 204 or 304 ends at its head, whatever framing headers it carries: ntex 3.12.3's
    /// `101` to a WebSocket upgrade says `Transfer-Encoding: chunked`, and the frames follow.
    #[test]
    fn a_bodyless_status_ends_at_its_head_whatever_its_headers() {
        let ntex = b"HTTP/1.1 101 Switching Protocols\r\ntransfer-encoding: chunked\r\n\
                     connection: upgrade\r\nupgrade: websocket\r\n\r\n";
        let frames = [ntex.as_slice(), b"\x81\x02hi"].concat();
        assert_eq!(frame_fast(&frames).unwrap(), Some((101, ntex.len())));
        let (r, n) = parse_response(&frames, false).unwrap().unwrap();
        assert_eq!(
            (r.status().as_u16(), r.body().len(), n),
            (101, 0, ntex.len())
        );
        for head in [
            &b"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n"[..],
            b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            let next = [head, b"HTTP/1.1 200 OK\r\n"].concat();
            assert_eq!(frame_fast(&next).unwrap().map(|f| f.1), Some(head.len()));
            assert_eq!(
                parse_response(&next, false).unwrap().map(|f| f.1),
                Some(head.len())
            );
        }
    }

    #[test]
    fn parses_length_chunked_and_partial() {
        let (r, n) = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiXX", false)
            .unwrap()
            .unwrap();
        assert_eq!(
            (r.status().as_u16(), &r.body()[..], n),
            (200, &b"hi"[..], 40)
        );
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n3;ext=1\r\n th\r\n0\r\n\r\n";
        let (r, n) = parse_response(chunked, false).unwrap().unwrap();
        assert_eq!((&r.body()[..], n), (&b"hi th"[..], chunked.len()));
        assert!(parse_response(&chunked[..chunked.len() - 2], false)
            .unwrap()
            .is_none());
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi", false)
                .unwrap()
                .is_none()
        );
        let (r, _) = parse_response(b"HTTP/1.1 404 Not Found\r\n\r\nbye", true)
            .unwrap()
            .unwrap();
        assert_eq!(&r.body()[..], b"bye");
        assert!(parse_response(b"garbage\r\n\r\n", true).is_err());
    }

    #[test]
    fn encodes_keep_alive_and_closing_gets() {
        assert_eq!(
            get_request("/json", Connection::KeepAlive),
            b"GET /json HTTP/1.1\r\nHost: localhost\r\n\r\n"
        );
        assert_eq!(
            get_request("/%2e%2e/x", Connection::Close),
            b"GET /%2e%2e/x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn encodes_instances() {
        use crate::oracle::{scenario, BODY_SIZE};
        let hello = scenario("hello").unwrap().instance(0, BODY_SIZE);
        assert_eq!(
            instance_request(&hello, Connection::KeepAlive),
            get_request("/", Connection::KeepAlive)
        );
        let upload = scenario("upload").unwrap().instance(0, 10);
        let raw = instance_request(&upload, Connection::Close);
        let head = b"POST /upload HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
              Content-Type: application/octet-stream\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(&raw[..head.len()], head);
        assert_eq!(&raw[head.len()..], &upload.body[..]);
        let chunked = scenario("upload_chunked").unwrap().instance(0, 10);
        let raw = instance_request(&chunked, Connection::KeepAlive);
        let text = String::from_utf8_lossy(&raw);
        assert!(
            text.contains("Transfer-Encoding: chunked\r\n\r\n3\r\n"),
            "{text}"
        );
        assert!(raw.ends_with(b"\r\n0\r\n\r\n"));
        // 10 bytes in chunks of 3, 3, 3, 1: their bytes, in order, are the body.
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut parsed = httparse::Request::new(&mut headers);
        let httparse::Status::Complete(head_len) = parsed.parse(&raw).unwrap() else {
            panic!("a complete head");
        };
        let (body, used) = dechunk(&raw[head_len..]).unwrap().unwrap();
        assert_eq!((&body[..], head_len + used), (&chunked.body[..], raw.len()));
    }

    #[test]
    fn encodes_requests() {
        let req = http::Request::get("http://example.com/a?b=c")
            .body(Bytes::from_static(b"xy"))
            .unwrap();
        let raw = encode_request(&req).unwrap();
        assert_eq!(
            raw,
            b"GET /a?b=c HTTP/1.1\r\nhost: example.com\r\ncontent-length: 2\r\n\r\nxy"
        );
    }

    /// A server on 127.0.0.1:0 that answers each request it reads with the right body of a
    /// `delay` request, after `wait`.
    fn delay_server(wait: Duration) -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            while matches!(s.read(&mut buf), Ok(1..)) {
                std::thread::sleep(wait);
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n\
                     Content-Length: 2\r\n\r\n{}",
                    oracle::DELAY_MS
                );
                if s.write_all(answer.as_bytes()).is_err() {
                    return;
                }
            }
        });
        addr
    }

    #[test]
    fn the_check_before_load_fails_an_answer_sooner_than_its_wait() {
        let fixtures = crate::fixtures::Fixtures::load_default().unwrap();
        let delay = oracle::loopback_scenario("delay").unwrap();
        let expected = delay.expected(&fixtures).unwrap();
        let requests = delay.instances(crate::cell::RING);
        let early = precheck(
            Transport::Tcp,
            delay_server(Duration::ZERO),
            &expected,
            &requests,
            1,
            TIMEOUT,
        )
        .unwrap_err()
        .to_string();
        assert!(early.contains("before the 10 ms"), "{early}");
        let wait = Duration::from_millis(oracle::DELAY_MS);
        precheck(
            Transport::Tcp,
            delay_server(wait),
            &expected,
            &requests,
            1,
            TIMEOUT,
        )
        .unwrap();
    }
}
