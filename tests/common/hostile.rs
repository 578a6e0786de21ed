//! Sending hostile bytes to a server and reading what it does: shared by tests/malformed.rs
//! (malformed heads) and tests/bodies.rs (hostile bodies).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use bytes::Bytes;
use framebench::http1::parse_response;

/// How long a server may take to answer or close.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(8);

/// What the server did with a hostile request.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// It answered, with this status and body (tests/malformed.rs reads the status alone).
    Status(u16, #[allow(dead_code)] Bytes),
    /// It closed (or reset) the connection without an answer.
    Closed,
}

/// Sends `bytes` on a new connection (then closes its writing half when `half_close`), and reads
/// the answer or the close. `Err` is a hang: no answer and no close within [`TIMEOUT`].
pub(crate) fn send(addr: SocketAddr, bytes: &[u8], half_close: bool) -> anyhow::Result<Outcome> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
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
