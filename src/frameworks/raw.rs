//! `raw`: the loopback ceiling. A hand-written HTTP/1.1 responder on std sockets, one thread per
//! connection, answering every scenario path with bytes encoded at startup. It parses only the
//! request line and the end of the head, supports keep-alive and pipelining, and sends no
//! `Date` header. Nothing a framework does can cost less, so loopback results are read as a
//! fraction of it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::bail;

use crate::framework::{Config, Framework, Request, Response, ServerHandle};
use crate::options::KEEP_ALIVE;
use crate::server::{self, Threads};

/// Largest request head accepted; longer ones get 431.
const MAX_HEAD: usize = 16 * 1024;

/// The loopback ceiling.
pub struct Raw {
    routes: Arc<Vec<(&'static str, Vec<u8>)>>,
}

impl Framework for Raw {
    const NAME: &'static str = "raw";
    const CRATE: &'static str = "framebench";
    const VERSION_PREFIX: &'static str = "";
    const COUNTS_REQUESTS: bool = true;
    const BASELINE: bool = true;
    const IN_PROCESS: bool = false;

    fn build(config: &Config) -> anyhow::Result<Self> {
        let routes = super::canned(&config.fixtures)?
            .into_iter()
            .map(|c| {
                (
                    c.path,
                    encode(c.status, "OK", c.content_type, &c.body, false),
                )
            })
            .collect();
        Ok(Raw {
            routes: Arc::new(routes),
        })
    }

    fn dispatch(&self, _req: Request) -> anyhow::Result<Response> {
        bail!("raw is loopback only: it is a socket server (use null for the in-process floor)")
    }

    // Fairness: raw ignores `threads` and gives every connection its own thread, because it is
    // the ceiling and must never be the one that starves connections.
    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let routes = Arc::clone(&self.routes);
        // Fairness: `serve --max-requests` counts in the request loop; when no limit is set
        // that is one predictable branch per request (docs/methodology.md).
        let limit = crate::server::limit::active();
        let handler = Arc::new(
            move |stream: TcpStream, _peer: SocketAddr, stop: &AtomicBool| {
                let _ = connection(stream, &routes, stop, limit);
            },
        );
        Ok(server::serve(listener, Threads::PerConnection, handler)?)
    }
}

fn encode(status: u16, reason: &str, content_type: &str, body: &[u8], close: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn connection(
    mut stream: TcpStream,
    routes: &[(&'static str, Vec<u8>)],
    stop: &AtomicBool,
    limit: Option<&crate::server::limit::Limit>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(KEEP_ALIVE))?;
    let not_found = encode(404, "Not Found", crate::oracle::TEXT_PLAIN, b"", false);
    let mut buf = vec![0u8; MAX_HEAD];
    let mut filled = 0;
    let mut out = Vec::with_capacity(64 * 1024);
    while !stop.load(Ordering::Relaxed) {
        let n = stream.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(());
        }
        filled += n;
        let mut start = 0;
        // Answer every complete request in the buffer: pipelined requests get one write.
        while let Some(end) = find_head_end(&buf[start..filled]) {
            let head = &buf[start..start + end];
            start += end + 4;
            match request_path(head) {
                Some(path) => {
                    let res = routes
                        .iter()
                        .find(|(p, _)| p.as_bytes() == path)
                        .map_or(&not_found, |(_, r)| r);
                    out.extend_from_slice(res);
                    if let Some(limit) = limit {
                        limit.record();
                    }
                }
                None => {
                    out.extend_from_slice(&encode(400, "Bad Request", "text/plain", b"", true));
                    stream.write_all(&out)?;
                    return Ok(());
                }
            }
        }
        if !out.is_empty() {
            stream.write_all(&out)?;
            out.clear();
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        if filled == buf.len() {
            let res = encode(
                431,
                "Request Header Fields Too Large",
                "text/plain",
                b"",
                true,
            );
            stream.write_all(&res)?;
            return Ok(());
        }
    }
    Ok(())
}

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
}
