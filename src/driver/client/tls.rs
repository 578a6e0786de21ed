//! The load client over TLS: each connection's bytes go through its rustls
//! `ClientConnection` on the same non-blocking socket and the same event loop as plain TCP.
//!
//! - **Writes**: a batch of requests goes into rustls as plaintext (buffered until the
//!   handshake is done), and its records go out until the socket would block; a writable
//!   event sends the rest.
//! - **Reads**: records come in until the socket would block (every read of a TLS connection
//!   goes on to EAGAIN: a short read of plaintext says nothing about the socket, so
//!   `Worker::read`'s stop after a short read does not apply), and the plaintext is framed as
//!   over TCP. A TCP close without TLS's close_notify ends the connection as a close does.
//! - **Handshakes**: counted when one completes inside the recorded window, and whether it
//!   resumed a session (`handshake_kind`). A connection's first request is sent with the
//!   handshake, so its latency includes it; the TCP connect is timed apart, as over TCP.

use std::io::{self, Read as _, Write as _};

use mio::net::TcpStream;
use rustls::ClientConnection;

use super::conn::Worker;

/// Reads plaintext into `buf`: what rustls holds, else records from the socket until some
/// plaintext comes or the socket would block. `Ok(0)` is the end of the connection.
pub(super) fn read(
    tls: &mut ClientConnection,
    sock: &mut TcpStream,
    buf: &mut [u8],
) -> io::Result<usize> {
    loop {
        match tls.reader().read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // The server closed the TCP connection without close_notify.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        match tls.read_tls(sock) {
            Ok(0) => {
                tls.process_new_packets().map_err(invalid)?;
                return match tls.reader().read(buf) {
                    Ok(n) => Ok(n),
                    Err(_) => Ok(0),
                };
            }
            Ok(_) => {
                tls.process_new_packets().map_err(invalid)?;
                // Handshake messages, and requests the handshake held back, go out now.
                flush(tls, sock)?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Sends the records rustls holds until there are none or the socket would block.
pub(super) fn flush(tls: &mut ClientConnection, sock: &mut TcpStream) -> io::Result<()> {
    while tls.wants_write() {
        match tls.write_tls(sock) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn invalid(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}"))
}

impl Worker<'_> {
    /// Connection `i`'s write over TLS: the rest of the current write into rustls, as much
    /// as it takes, and its records out, until all is sent or the socket would block.
    pub(super) fn write_tls(&mut self, i: usize, batch: &[u8]) {
        let c = &mut self.conns[i];
        let (Some(sock), Some(tls)) = (c.stream.as_mut(), c.tls.as_mut()) else {
            return;
        };
        let failed = 'write: loop {
            let before = c.unsent;
            while c.unsent > 0 {
                let from = batch.len() - c.unsent;
                match tls.writer().write(&batch[from..]) {
                    Ok(0) => break,
                    Ok(n) => c.unsent -= n,
                    Err(e) => break 'write Some(e),
                }
            }
            if let Err(e) = flush(tls, sock) {
                break Some(e);
            }
            // rustls took everything; or its buffer is full and the socket would block (the
            // next writable event goes on); or the handshake holds the plaintext back (the
            // read that completes it goes on, see `Worker::read`).
            if c.unsent == 0 || tls.wants_write() || c.unsent == before {
                break None;
            }
        };
        if let Some(e) = failed {
            // The read side reports the close; count it there.
            c.unsent = 0;
            if self.result.first_error.is_none() {
                self.result.first_error = Some(format!("write: {e}"));
            }
        }
    }

    /// Counts connection `i`'s handshake once it is done, if inside the recorded window.
    pub(super) fn note_handshake(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(tls) = c.tls.as_ref() else {
            return;
        };
        if c.handshaken || tls.is_handshaking() {
            return;
        }
        c.handshaken = true;
        let now = std::time::Instant::now();
        if now >= self.record_from && now <= self.end {
            self.result.handshakes += 1;
            if tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
                self.result.resumed += 1;
            }
        }
    }
}
