//! What a `raw` connection's bytes go through: the socket itself, or TLS on it. The event loop
//! is generic over it, so that the plain loop compiles to what it was, and the TLS reference
//! is the same loop with rustls between the socket and the request buffer.
//!
//! The TLS reference is rustls's buffered `ServerConnection` on raw's own mio loop, through
//! the reads and flushes the load driver uses too ([`crate::transport::tls`]). It leaves out
//! what a production TLS server adds around that: no handshake bound of its own beyond raw's
//! idle sweep (a connection silent for the keep-alive timeout is closed, mid-handshake or
//! not), no close_notify when it closes, and no kernel TLS offload.

use std::io::{self, Read, Write};
use std::sync::Arc;

use mio::net::TcpStream as MioStream;

/// A connection's bytes, as the event loop reads and writes them.
pub(super) trait Wire: Read + Write + Sized {
    /// Whether writes may stay buffered in it after `write` (TLS records waiting for the
    /// socket): the loop then flushes after writing, and asks for writable while it holds any.
    const BUFFERED: bool;
    /// Whether a read shorter than its room emptied the socket (plain TCP; not TLS, whose
    /// plaintext says nothing about the socket).
    const SHORT_READ_DRAINS: bool;
    /// The wire of an accepted socket.
    fn accept(socket: MioStream, tls: Option<&Arc<rustls::ServerConfig>>) -> io::Result<Self>;
    /// Its socket, to register with the poll.
    fn socket(&mut self) -> &mut MioStream;
    /// Whether it holds bytes for the socket (always false for plain TCP).
    fn holds_writes(&self) -> bool;
}

impl Wire for MioStream {
    const BUFFERED: bool = false;
    const SHORT_READ_DRAINS: bool = true;

    fn accept(socket: MioStream, _: Option<&Arc<rustls::ServerConfig>>) -> io::Result<Self> {
        Ok(socket)
    }

    fn socket(&mut self) -> &mut MioStream {
        self
    }

    fn holds_writes(&self) -> bool {
        false
    }
}

/// A TLS connection: rustls's server state on the socket.
pub(super) struct Tls {
    socket: MioStream,
    tls: rustls::ServerConnection,
}

impl Wire for Tls {
    const BUFFERED: bool = true;
    const SHORT_READ_DRAINS: bool = false;

    fn accept(socket: MioStream, tls: Option<&Arc<rustls::ServerConfig>>) -> io::Result<Self> {
        let config = tls.ok_or_else(|| io::Error::other("raw: TLS without a configuration"))?;
        let tls = rustls::ServerConnection::new(Arc::clone(config)).map_err(io::Error::other)?;
        Ok(Tls { socket, tls })
    }

    fn socket(&mut self) -> &mut MioStream {
        &mut self.socket
    }

    fn holds_writes(&self) -> bool {
        self.tls.wants_write()
    }
}

impl Read for Tls {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        crate::transport::tls::read(&mut self.tls, &mut self.socket, buf)
    }
}

impl Write for Tls {
    /// Takes what rustls's buffer has room for and sends what the socket takes; `WouldBlock`
    /// when rustls took nothing (its buffer waits for the socket).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.tls.writer().write(buf)?;
        crate::transport::tls::flush(&mut self.tls, &mut self.socket)?;
        match n {
            0 if !buf.is_empty() => Err(io::ErrorKind::WouldBlock.into()),
            n => Ok(n),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        crate::transport::tls::flush(&mut self.tls, &mut self.socket)
    }
}
