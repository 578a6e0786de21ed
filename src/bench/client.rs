//! The loopback bench client: one persistent keep-alive connection, a request encoded once, and
//! a read of exactly the response length learned from a checked warm-up response, as hyper's
//! `benches/pipeline.rs` does. Every read and write has a timeout, so a broken server fails the
//! bench instead of hanging it.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};

use crate::check::{self, Checked};
use crate::fixtures::Fixtures;
use crate::http1::{self, Connection};
use crate::oracle::{Expected, Scenario};

/// A keep-alive connection sending one scenario's request over and over.
pub struct KeepAlive {
    stream: TcpStream,
    request: Vec<u8>,
    response: Vec<u8>,
    body_len: usize,
}

impl KeepAlive {
    /// Connects, sends the scenario's request twice, checks both answers against the oracle and
    /// requires both to have the same length, which every later exchange then reads exactly.
    pub fn connect(
        addr: SocketAddr,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
    ) -> anyhow::Result<Self> {
        Self::connect_with_timeout(addr, scenario, fixtures, check::TIMEOUT)
    }

    /// [`KeepAlive::connect`] with another bound than [`check::TIMEOUT`] (a server under
    /// valgrind is slow).
    pub fn connect_with_timeout(
        addr: SocketAddr,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let expected = scenario.expected(fixtures)?;
        let mut stream = http1::connect(addr, timeout)?;
        let first = warm_up(&mut stream, &expected, timeout)?;
        let second = warm_up(&mut stream, &expected, timeout)?;
        if first.len != second.len {
            bail!(
                "{}: response length varies ({} then {} bytes), cannot read it exactly",
                scenario.name,
                first.len,
                second.len
            );
        }
        Ok(KeepAlive {
            stream,
            request: http1::get_request(scenario.path, Connection::KeepAlive),
            response: vec![0; first.len],
            body_len: first.body_len,
        })
    }

    /// Length of the response body in bytes.
    pub fn body_len(&self) -> usize {
        self.body_len
    }

    /// Sends the request and reads exactly one response's bytes.
    pub fn round_trip(&mut self) -> anyhow::Result<()> {
        self.stream.write_all(&self.request)?;
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

/// One checked warm-up exchange on the keep-alive connection.
fn warm_up(
    stream: &mut TcpStream,
    expected: &Expected,
    timeout: Duration,
) -> anyhow::Result<Checked> {
    let checked = check::precheck_on(stream, expected, 1, timeout)
        .map_err(|e| anyhow!("{}: {e}", expected.scenario.name))?;
    Ok(checked[0])
}
