//! The transports a protocol runs over: plain TCP, or TLS on TCP (`--tls`). A transport sits
//! under a protocol ([`crate::protocol`]): HTTP/1.1 runs over either. What a framework serves
//! over is data in its file ([`crate::framework::Framework::TRANSPORTS`]), asked through
//! [`crate::framework::Entry::lacks`]; every other module asks a [`Transport`] value.
//!
//! [`tls`] holds the run's certificate, the rustls configurations both sides use, the tokio
//! servers' acceptor and the blocking client the checks use. The load driver's TLS connection
//! is the driver's own (`crate::driver::client`), on the same client configuration. [`Conn`]
//! is a blocking connection over either transport, for the checks that write bytes of their
//! own (the conformance rules, the hostile bodies) and for `memory`'s idle connections.

pub(crate) mod tls;

pub use tls::{use_seed, SEED_ENV};

use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::Context as _;

use crate::options::Transport;

/// Where a server listens, and what it serves over there: what a check connects to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub(crate) addr: SocketAddr,
    pub(crate) transport: Transport,
}

impl Peer {
    /// A server on plain TCP.
    pub fn tcp(addr: SocketAddr) -> Peer {
        Peer {
            addr,
            transport: Transport::Tcp,
        }
    }

    /// A server on `transport`.
    pub fn new(addr: SocketAddr, transport: Transport) -> Peer {
        Peer { addr, transport }
    }
}

/// A blocking connection to a [`Peer`], with TCP_NODELAY and every read and write bounded by
/// the timeout it was opened with; over TLS, with the handshake done (a full one).
pub(crate) enum Conn {
    Tcp(TcpStream),
    Tls(Box<tls::Stream>),
}

impl Conn {
    /// Connects to `peer`, bounded by `timeout` for the connect, a handshake, and every read
    /// and write after.
    pub(crate) fn connect(peer: Peer, timeout: Duration) -> anyhow::Result<Conn> {
        Ok(match peer.transport {
            Transport::Tcp => {
                let stream = TcpStream::connect_timeout(&peer.addr, timeout)
                    .with_context(|| format!("connect {}", peer.addr))?;
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(timeout))?;
                stream.set_write_timeout(Some(timeout))?;
                Conn::Tcp(stream)
            }
            Transport::Tls => Conn::Tls(Box::new(tls::connect(peer.addr, timeout)?)),
        })
    }

    /// The TCP connection under it.
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Tcp(s) => s,
            Conn::Tls(s) => &s.sock,
        }
    }

    /// Ends the writing half: over TLS a close_notify alert first, as a TLS client half-closes.
    pub(crate) fn shutdown_write(&mut self) -> std::io::Result<()> {
        if let Conn::Tls(s) = self {
            s.conn.send_close_notify();
            s.flush()?;
        }
        self.tcp().shutdown(Shutdown::Write)
    }

    /// Whether the server has closed it, or sent it anything (which an idle HTTP/1.1
    /// connection never gets), looking without waiting. Over TLS, records that carry no data
    /// (a TLS 1.3 session ticket) are read and are neither.
    pub(crate) fn closed(&mut self) -> std::io::Result<bool> {
        self.tcp().set_nonblocking(true)?;
        let mut byte = [0u8; 1];
        let got = match self {
            Conn::Tcp(s) => s.peek(&mut byte),
            Conn::Tls(s) => s.read(&mut byte),
        };
        Ok(!matches!(got, Err(e) if e.kind() == ErrorKind::WouldBlock))
    }
}

impl Read for Conn {
    /// Over TLS, a close without a close_notify alert reads as the end of the stream, as a
    /// close does over TCP (the checks judge what the server said, not how it hung up).
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Tls(s) => match s.read(buf) {
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(0),
                other => other,
            },
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

impl Transport {
    /// Every transport, in the order tables list them.
    pub const ALL: [Transport; 2] = [Transport::Tcp, Transport::Tls];

    /// Its name in a variant's label and in tables (`tls`).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Tls => "tls",
        }
    }

    /// Whether it is the default transport, which a variant's label leaves out.
    pub(crate) fn is_default(self) -> bool {
        self == Transport::default()
    }

    /// The scheme of a URL to a server on it.
    pub(crate) fn scheme(self) -> &'static str {
        match self {
            Transport::Tcp => "http",
            Transport::Tls => "https",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transport_has_its_scheme() {
        assert_eq!(Transport::ALL.map(|t| t.scheme()), ["http", "https"]);
        assert!(Transport::Tcp.is_default());
    }
}
