//! Sends the oracle's hostile request bodies ([`crate::oracle::hostile`]) to a server, byte for
//! byte (over TLS under `--tls`, after the handshake), and reads what it did.

use std::io::{Read, Write};

use super::{get_request, parse_response, Connection};
use crate::oracle::hostile::{Case, Outcome, TIMEOUT};
use crate::oracle::HELLO;
use crate::transport::{Conn, Peer};

/// Sends `bytes` on a new connection (then closes its writing half when `half_close`), and reads
/// the answer or the close. `Err` is a hang: no answer and no close within [`TIMEOUT`].
pub fn send(peer: Peer, bytes: &[u8], half_close: bool) -> anyhow::Result<Outcome> {
    let mut s = Conn::connect(peer, TIMEOUT)?;
    // The server may close before reading everything: a failed write is a closed connection.
    if s.write_all(bytes).and_then(|()| s.flush()).is_err() {
        return Ok(Outcome::Closed);
    }
    if half_close {
        let _ = s.shutdown_write();
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

/// Sends `case` to `peer` ([`send`]).
pub fn send_case(peer: Peer, case: &Case) -> anyhow::Result<Outcome> {
    send(peer, &case.bytes, case.half_close)
}

/// Whether the server at `peer` still answers `GET /` as the oracle's hello (`Err`: what it
/// did instead), after a case.
pub fn still_serving(peer: Peer) -> anyhow::Result<()> {
    let got = Conn::connect(peer, TIMEOUT)
        .and_then(|mut c| super::exchange_on(&mut c, &get_request("/", Connection::Close)));
    match got {
        Ok(res) if res.status() == 200 && res.body()[..] == *HELLO.as_bytes() => Ok(()),
        Ok(res) => Err(anyhow::anyhow!(
            "`GET /` got status {} and {} bytes",
            res.status(),
            res.body().len()
        )),
        Err(e) => Err(anyhow::anyhow!("`GET /`: {e:#}")),
    }
}
