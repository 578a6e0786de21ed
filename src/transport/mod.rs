//! The transports a protocol runs over: plain TCP, or TLS on TCP (`--tls`). A transport sits
//! under a protocol ([`crate::protocol`]): HTTP/1.1 runs over either. What a framework serves
//! over is data in its file ([`crate::framework::Framework::TRANSPORTS`]), asked through
//! [`crate::framework::Entry::lacks`]; every other module asks a [`Transport`] value.
//!
//! [`tls`] holds the run's certificate, the rustls configurations both sides use, the tokio
//! servers' acceptor and the blocking client the checks use. The load driver's TLS connection
//! is the driver's own (`crate::driver::client`), on the same client configuration.

pub(crate) mod tls;

use std::fmt;

use crate::options::Transport;

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
