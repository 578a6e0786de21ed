//! The load client over TLS: each connection's bytes go through its rustls
//! `ClientConnection` on the same non-blocking socket and the same event loop as plain TCP
//! (its reads and flushes are [`crate::transport::tls`]'s, which `raw`'s TLS server shares).
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

use std::io::Write as _;

use crate::transport::tls::flush;

use super::conn::Worker;

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
