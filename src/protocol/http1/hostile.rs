//! Sends the oracle's hostile request bodies ([`crate::oracle::hostile`]) to a server, byte for
//! byte, and reads what it did.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};

use super::parse_response;
use crate::oracle::hostile::{Case, Outcome, TIMEOUT};
use crate::oracle::HELLO;

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

/// Sends `case` to `addr` ([`send`]).
pub fn send_case(addr: SocketAddr, case: &Case) -> anyhow::Result<Outcome> {
    send(addr, &case.bytes, case.half_close)
}

/// Whether the server at `addr` still answers `GET /` as the oracle's hello (`Err`: what it
/// did instead), after a case.
pub fn still_serving(addr: SocketAddr) -> anyhow::Result<()> {
    match super::raw_get(addr, "/") {
        Ok(got) if got.status == 200 && got.body[..] == *HELLO.as_bytes() => Ok(()),
        other => Err(anyhow::anyhow!("`GET /` got {other:?}")),
    }
}
