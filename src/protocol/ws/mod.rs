//! WebSocket (RFC 6455) as framebench speaks it: the opening handshake ([`handshake`]) and the
//! frames ([`frame`]), both ends of each, written for the load driver's client and raw's
//! reference echo. The echo scenario (`--protocol ws`) is built on them.

pub(crate) mod client;
pub(crate) mod frame;
pub(crate) mod handshake;
