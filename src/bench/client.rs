//! The loopback bench client: one persistent keep-alive connection (over TCP or TLS), the requests encoded once
//! (one for a fixed scenario, a ring of [`crate::cell::RING`] distinct ones for a query or body
//! scenario, all of one length), and a read of exactly the response length learned from two
//! checked warm-up responses, as hyper's `benches/pipeline.rs` does. Every read and write has a timeout, so a broken server fails the
//! bench instead of hanging it.

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};

use crate::fixtures::Fixtures;
use crate::oracle::{Expected, Instance, Scenario};
use crate::protocol::http1::{self, Checked, Connection};
use crate::protocol::TIMEOUT;
use crate::transport::{Conn, Peer};

/// A keep-alive connection sending one scenario's requests over and over.
pub struct KeepAlive {
    stream: Conn,
    /// The ring of encoded requests, `stride` bytes each.
    requests: Vec<u8>,
    stride: usize,
    /// The next request of the ring.
    next: usize,
    response: Vec<u8>,
    body_len: usize,
}

impl KeepAlive {
    /// Connects, sends the scenario's first two requests, checks both answers against the oracle
    /// and requires both to have the same length, which every later exchange then reads exactly.
    pub fn connect(
        addr: SocketAddr,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
    ) -> anyhow::Result<Self> {
        Self::connect_with_timeout(addr, scenario, fixtures, TIMEOUT)
    }

    /// [`KeepAlive::connect`] with another bound than [`TIMEOUT`] (a server under
    /// valgrind is slow).
    pub fn connect_with_timeout(
        addr: SocketAddr,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Self::connect_to(Peer::tcp(addr), scenario, fixtures, timeout)
    }

    /// [`KeepAlive::connect_with_timeout`] to a server on either transport: over TLS, after a
    /// full handshake.
    pub fn connect_to(
        peer: Peer,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let expected = scenario.expected(fixtures)?;
        let instances = scenario.instances(crate::cell::RING);
        let mut stream = Conn::connect(peer, timeout)?;
        let first = warm_up(&mut stream, &expected, &instances[..1], timeout)?;
        let second = warm_up(
            &mut stream,
            &expected,
            &instances[instances.len() - 1..],
            timeout,
        )?;
        if first.len != second.len {
            bail!(
                "{}: response length varies ({} then {} bytes), cannot read it exactly",
                scenario.name,
                first.len,
                second.len
            );
        }
        let mut requests = Vec::new();
        let mut stride = 0;
        for instance in &instances {
            let before = requests.len();
            http1::encode_instance(instance, Connection::KeepAlive, &mut requests);
            let len = requests.len() - before;
            if stride != 0 && len != stride {
                bail!(
                    "{}: request length varies ({stride} then {len} bytes)",
                    scenario.name
                );
            }
            stride = len;
        }
        Ok(KeepAlive {
            stream,
            requests,
            stride,
            next: 0,
            response: vec![0; first.len],
            body_len: first.body_len,
        })
    }

    /// Length of the response body in bytes.
    pub fn body_len(&self) -> usize {
        self.body_len
    }

    /// Sends the next request of the ring and reads exactly one response's bytes.
    pub fn round_trip(&mut self) -> anyhow::Result<()> {
        let start = self.next * self.stride;
        self.next = (start + self.stride) % self.requests.len() / self.stride;
        self.stream
            .write_all(&self.requests[start..start + self.stride])?;
        self.stream
            .read_exact(&mut self.response)
            .context("reading the response")?;
        // A response of another length would leave the stream misaligned: the next one would
        // not start with the status line.
        if !self.response.starts_with(b"HTTP/1.1 ") {
            bail!("response out of step: not at a status line");
        }
        Ok(())
    }
}

/// One request on a connection of its own, checked against the oracle: connect (over TLS, a full
/// handshake), send the scenario's first request, check the answer, then close the writing half
/// and read until the server closes too, so that the server has ended the connection before the
/// caller opens the next one.
pub fn one_request(
    peer: Peer,
    scenario: &'static Scenario,
    fixtures: &Fixtures,
    timeout: Duration,
) -> anyhow::Result<()> {
    let expected = scenario.expected(fixtures)?;
    let instances = scenario.instances(1);
    let mut conn = Conn::connect(peer, timeout)?;
    warm_up(&mut conn, &expected, &instances, timeout)?;
    conn.shutdown_write().context("closing the connection")?;
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest)
        .context("waiting for the server to close")?;
    if !rest.is_empty() {
        bail!("{} bytes after the answer", rest.len());
    }
    Ok(())
}

/// `n` WebSocket messages of `scenario` (`echo`) on one upgraded connection, one in flight,
/// every echo checked against the oracle; the connection is left to the server to end.
pub fn echo_messages(
    peer: Peer,
    scenario: &'static Scenario,
    fixtures: &Fixtures,
    n: u64,
    timeout: Duration,
) -> anyhow::Result<()> {
    let expected = scenario.expected(fixtures)?;
    let instances = scenario.instances(crate::cell::RING);
    crate::protocol::ws::client::echoes(peer, &expected, &instances, n, timeout)
}

/// One checked warm-up exchange on the keep-alive connection.
fn warm_up(
    stream: &mut Conn,
    expected: &Expected,
    request: &[Instance],
    timeout: Duration,
) -> anyhow::Result<Checked> {
    let checked = http1::precheck_on(stream, expected, request, 1, timeout)
        .map_err(|e| anyhow!("{}: {e}", expected.scenario.name))?;
    Ok(checked[0])
}
