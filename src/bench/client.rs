//! The loopback bench client: one persistent keep-alive connection, a request encoded once, and
//! a read of exactly the response length learned from a checked warm-up response, as hyper's
//! `benches/pipeline.rs` does. Every read and write has a timeout, so a broken server fails the
//! bench instead of hanging it.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::fixtures::Fixtures;
use crate::http1;
use crate::oracle::{Observed, Scenario};

/// Bound on connect, every read and every write.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// A keep-alive connection sending one scenario's request over and over.
pub struct KeepAlive {
    stream: TcpStream,
    request: Vec<u8>,
    response: Vec<u8>,
    body_len: usize,
}

/// The request bytes of `GET path`, keep-alive.
pub fn encode_get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").into_bytes()
}

impl KeepAlive {
    /// Connects, sends the scenario's request twice, checks both answers against the oracle and
    /// requires both to have the same length, which every later exchange then reads exactly.
    pub fn connect(
        addr: SocketAddr,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
    ) -> anyhow::Result<Self> {
        Self::connect_with_timeout(addr, scenario, fixtures, TIMEOUT)
    }

    /// [`KeepAlive::connect`] with another bound than [`TIMEOUT`] (a server under valgrind is
    /// slow).
    pub fn connect_with_timeout(
        addr: SocketAddr,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let stream = TcpStream::connect_timeout(&addr, timeout)
            .with_context(|| format!("connect {addr}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let mut this = KeepAlive {
            stream,
            request: encode_get(scenario.path),
            response: Vec::new(),
            body_len: 0,
        };
        let (first, body_len) = this.warm_up(scenario, fixtures)?;
        let (second, _) = this.warm_up(scenario, fixtures)?;
        if first != second {
            bail!(
                "{}: response length varies ({first} then {second} bytes), cannot read it exactly",
                scenario.name
            );
        }
        this.response = vec![0; first];
        this.body_len = body_len;
        Ok(this)
    }

    fn warm_up(
        &mut self,
        scenario: &'static Scenario,
        fixtures: &Fixtures,
    ) -> anyhow::Result<(usize, usize)> {
        self.stream.write_all(&self.request)?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = self
                .stream
                .read(&mut chunk)
                .context("reading the warm-up response")?;
            if n == 0 {
                bail!("{}: server closed the keep-alive connection", scenario.name);
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some((res, used)) = http1::parse_response(&buf, false)? {
                if used != buf.len() {
                    bail!(
                        "{}: {} bytes after the response",
                        scenario.name,
                        buf.len() - used
                    );
                }
                super::check(fixtures, scenario, &Observed::from_response(&res))?;
                return Ok((used, res.body().len()));
            }
        }
    }

    /// Length of one response in bytes.
    pub fn response_len(&self) -> usize {
        self.response.len()
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
