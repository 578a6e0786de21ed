//! Hostile request bodies sent to `POST /upload` (issue 42): the cases, sending one to a server,
//! and judging what came back. `framebench check --conformance` reports them per server, beside
//! what each does with a body far over its limit; tests/testsuite/bodies.rs gates them against the
//! outcomes docs/methodology/bodies.md records.
//!
//! A server must refuse each case (a 4xx, or closing the connection) within [`TIMEOUT`], and no
//! handler may see a wrong body: the `upload` answer is the length and digest of the body the
//! handler was given, so a 200 says exactly what the framework handed on.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use bytes::Bytes;

use super::fnv1a64;
use crate::http1::parse_response;

/// How long a server may take to answer or close before the case counts as a hang.
pub const TIMEOUT: Duration = Duration::from_secs(8);

/// The over-limit body: past every default limit of the frameworks measured (the largest is
/// trillium's 10 MB), so each shows what it does past its own.
pub const OVER: usize = 16 * 1024 * 1024;

/// The over-limit case's name, a column of the report.
pub const OVER_NAME: &str = "16 MiB";
/// What the over-limit case sends.
pub const OVER_WHAT: &str = "16 MiB with `Content-Length`, over every default limit: recorded, \
    not judged (the limits: docs/methodology/bodies.md, \"Body limits\")";

/// What a server did with a hostile request.
#[derive(Debug)]
pub enum Outcome {
    /// It answered, with this status and body.
    Status(u16, Bytes),
    /// It closed (or reset) the connection without an answer.
    Closed,
}

/// Sends `bytes` on a new connection (then closes its writing half when `half_close`), and reads
/// the answer or the close. `Err` is a hang: no answer and no close within [`TIMEOUT`].
pub fn send(addr: SocketAddr, bytes: &[u8], half_close: bool) -> anyhow::Result<Outcome> {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    // The server may close before reading everything: a failed write is a closed connection.
    if s.write_all(bytes).is_err() {
        return Ok(Outcome::Closed);
    }
    if half_close {
        let _ = s.shutdown(Shutdown::Write);
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if let Ok(Some((res, _))) = parse_response(&buf, false) {
                    return Ok(Outcome::Status(res.status().as_u16(), res.into_body()));
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                anyhow::bail!("no answer and no close within {TIMEOUT:?} (hang)");
            }
            Err(_) => break, // reset
        }
    }
    match parse_response(&buf, true) {
        Ok(Some((res, _))) => Ok(Outcome::Status(res.status().as_u16(), res.into_body())),
        _ => Ok(Outcome::Closed),
    }
}

/// A case: its name (a column of the report), the bytes, whether the client then closes its
/// writing half, and the body a 200 may have digested (`None`: any 200 is wrong).
pub struct Case {
    /// The report's column heading and the test's name for it.
    pub name: &'static str,
    /// What it sends, for the report's legend.
    pub what: &'static str,
    /// The whole request.
    pub bytes: Vec<u8>,
    /// Whether the client closes its writing half after sending.
    pub half_close: bool,
    /// The body a handler may rightly have been given.
    pub right: Option<Vec<u8>>,
}

impl Case {
    /// Sends the case to `addr` ([`send`]).
    pub fn send(&self, addr: SocketAddr) -> anyhow::Result<Outcome> {
        send(addr, &self.bytes, self.half_close)
    }
}

/// `POST /upload` with `headers` (each ending in CRLF) and `body`, closing the connection.
fn post(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n\
         {headers}Connection: close\r\n\r\n"
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The hostile cases, in the report's order. Each must be refused.
pub fn cases() -> Vec<Case> {
    vec![
        // RFC 9112 §6.3: with both, Transfer-Encoding wins (or the server refuses). A handler
        // that digests `hello` read the length instead: the smuggling shape.
        Case {
            name: "cl+te",
            what: "`Content-Length: 5` and `Transfer-Encoding: chunked` with an 11-byte chunked \
                   body: RFC 9112 §6.3 says Transfer-Encoding wins (`read all`) or the server \
                   refuses",
            bytes: post(
                "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                b"b\r\nhello world\r\n0\r\n\r\n",
            ),
            half_close: false,
            right: Some(b"hello world".to_vec()),
        },
        Case {
            name: "length -1",
            what: "`Content-Length: -1`",
            bytes: post("Content-Length: -1\r\n", b"abc"),
            half_close: true,
            right: None,
        },
        Case {
            name: "length abc",
            what: "`Content-Length: abc`",
            bytes: post("Content-Length: abc\r\n", b"abc"),
            half_close: true,
            right: None,
        },
        // 0x10 bytes announced, 3 sent, then the end of the body: the chunk size lies.
        Case {
            name: "lying chunk",
            what: "a chunk announced as 16 bytes, 3 sent, then the last chunk and the client's \
                   close",
            bytes: post("Transfer-Encoding: chunked\r\n", b"10\r\nabc\r\n0\r\n\r\n"),
            half_close: true,
            right: None,
        },
        // 512 of 1,024 announced bytes, then the client closes.
        Case {
            name: "half body",
            what: "512 of 1,024 announced bytes, then the client's close",
            bytes: post("Content-Length: 1024\r\n", &[b'x'; 512]),
            half_close: true,
            right: None,
        },
    ]
}

/// The body over every default limit ([`OVER`] bytes with `Content-Length`): recorded, not
/// judged. Reading it all is `right`.
pub fn over_limit() -> Case {
    let body = vec![b'x'; OVER];
    Case {
        name: OVER_NAME,
        what: OVER_WHAT,
        bytes: post(&format!("Content-Length: {OVER}\r\n"), &body),
        half_close: false,
        right: Some(body),
    }
}

/// What a case came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Refused: a 4xx (its status) or a closed connection (`None`).
    Refused(Option<u16>),
    /// A 200 whose digest is of the body the client sent: the handler was given the right one.
    Right,
    /// A 200 whose digest is of other bytes: the handler was given a wrong body, this answer.
    Wrong(String),
    /// Another status.
    Other(u16),
    /// No answer and no close within [`TIMEOUT`].
    Hang,
}

impl Verdict {
    /// Judges `outcome` of `case`.
    pub fn of(case: &Case, outcome: &anyhow::Result<Outcome>) -> Verdict {
        match outcome {
            Err(_) => Verdict::Hang,
            Ok(Outcome::Closed) => Verdict::Refused(None),
            Ok(Outcome::Status(s, _)) if (400..500).contains(s) => Verdict::Refused(Some(*s)),
            Ok(Outcome::Status(200, body)) => match &case.right {
                Some(right) if digest_of(body, right) => Verdict::Right,
                _ => Verdict::Wrong(start(body)),
            },
            Ok(Outcome::Status(s, _)) => Verdict::Other(*s),
        }
    }

    /// Whether a hostile case may end so: refused, or the right body handed on.
    pub fn passes(&self) -> bool {
        matches!(self, Verdict::Refused(_) | Verdict::Right)
    }

    /// The verdict in a report cell: `400`, `closed`, `read all` (the right body),
    /// `WRONG`, `HANG`, or another status.
    pub fn cell(&self) -> String {
        match self {
            Verdict::Refused(Some(s)) | Verdict::Other(s) => s.to_string(),
            Verdict::Refused(None) => "closed".into(),
            Verdict::Right => "read all".into(),
            Verdict::Wrong(_) => "WRONG".into(),
            Verdict::Hang => "HANG".into(),
        }
    }
}

/// What a server did, in a few words: `closed`, the status and the start of the body, or the
/// hang. tests/testsuite/bodies.rs matches its recorded outcomes against this.
pub fn said(outcome: &anyhow::Result<Outcome>) -> String {
    match outcome {
        Ok(Outcome::Status(s, body)) => format!("{s} {}", start(body)),
        Ok(Outcome::Closed) => "closed".into(),
        Err(e) => format!("{e}"),
    }
}

/// The first 40 bytes of an answer's body, as text: enough for the `upload` answer (a length
/// and a 16-digit digest), short for anything else.
fn start(body: &Bytes) -> String {
    String::from_utf8_lossy(&body[..body.len().min(40)]).into()
}

/// Whether the server at `addr` still answers `GET /` as the oracle's hello (`Err`: what it
/// did instead), after a case.
pub fn still_serving(addr: SocketAddr) -> anyhow::Result<()> {
    match crate::check::raw_get(addr, "/") {
        Ok(got) if got.status == 200 && got.body[..] == *super::HELLO.as_bytes() => Ok(()),
        other => anyhow::bail!("`GET /` got {other:?}"),
    }
}

/// Whether a 200's body is the `upload` answer for `right`, the body the client sent.
fn digest_of(body: &Bytes, right: &[u8]) -> bool {
    body[..] == *format!("{} {:016x}", right.len(), fnv1a64(right)).as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &str) -> anyhow::Result<Outcome> {
        Ok(Outcome::Status(
            200,
            Bytes::copy_from_slice(body.as_bytes()),
        ))
    }

    #[test]
    fn a_200_passes_only_with_the_digest_of_the_body_sent() {
        let cases = cases();
        let cl_te = &cases[0];
        let right = format!("11 {:016x}", fnv1a64(b"hello world"));
        assert_eq!(Verdict::of(cl_te, &answer(&right)), Verdict::Right);
        // Content-Length won: the handler was given `hello`.
        let five = format!("5 {:016x}", fnv1a64(b"hello"));
        let wrong = Verdict::of(cl_te, &answer(&five));
        assert_eq!(wrong, Verdict::Wrong(five));
        assert!(!wrong.passes());
        // A case with no right body: any 200 is wrong, a refusal passes, a 500 does not.
        let half = &cases[4];
        assert!(!Verdict::of(half, &answer(&right)).passes());
        let refused = Verdict::of(half, &Ok(Outcome::Status(400, Bytes::new())));
        assert_eq!((refused.passes(), refused.cell()), (true, "400".to_owned()));
        assert!(Verdict::of(half, &Ok(Outcome::Closed)).passes());
        assert!(!Verdict::of(half, &Ok(Outcome::Status(500, Bytes::new()))).passes());
        assert_eq!(
            Verdict::of(half, &Err(anyhow::anyhow!("hang"))),
            Verdict::Hang
        );
    }
}
