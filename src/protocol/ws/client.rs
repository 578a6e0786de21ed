//! A blocking WebSocket client over either transport ([`crate::transport::Conn`]): the oracle
//! check before a load and `check`'s loopback rows under `--protocol ws`. One connection, its
//! upgrade checked, messages out as masked frames, echoes in whole (fragments joined, a ping
//! answered), and the close handshake at the end.

use std::io::{Read as _, Write as _};
use std::time::Duration;

use anyhow::{anyhow, Context as _};

use super::frame::{self, Opcode, Role};
use super::handshake;
use crate::oracle::{Expected, Instance, Observed};
use crate::transport::{Conn, Peer};

/// The largest message the client reads: the largest a reference server takes.
const MAX_MESSAGE: usize = 16 << 20;
/// The masking key of every frame the checks send (the load driver's own are per connection).
const MASK: [u8; 4] = [0x5e, 0xed, 0xf0, 0x0d];

/// An upgraded connection.
pub(crate) struct Client {
    conn: Conn,
    /// Bytes read and not yet taken.
    buf: Vec<u8>,
}

impl Client {
    /// Connects to `peer` and upgrades at `path`, checking the `101`; every read and write after
    /// is bounded by `timeout`.
    pub(crate) fn connect(peer: Peer, path: &str, timeout: Duration) -> anyhow::Result<Client> {
        let mut conn = Conn::connect(peer, timeout)?;
        let key = handshake::client_key(u64::from(peer.addr.port()));
        conn.write_all(&handshake::request(path, &key))
            .and_then(|()| conn.flush())
            .context("writing the upgrade")?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut res = httparse::Response::new(&mut headers);
            let parsed = res
                .parse(&buf)
                .map_err(|e| anyhow!("the answer to the upgrade: {e}"))?;
            if let httparse::Status::Complete(n) = parsed {
                handshake::check_answer(res.code.unwrap_or(0), res.headers, &key)?;
                break n;
            }
            let n = conn
                .read(&mut chunk)
                .context("reading the answer to the upgrade")?;
            anyhow::ensure!(n > 0, "the server closed before answering the upgrade");
            buf.extend_from_slice(&chunk[..n]);
        };
        buf.drain(..head);
        Ok(Client { conn, buf })
    }

    /// Connects and upgrades at the path of the messages `requests`.
    fn for_messages(
        peer: Peer,
        requests: &[Instance],
        timeout: Duration,
    ) -> anyhow::Result<Client> {
        let first = requests.first().context("no message to send")?;
        Client::connect(peer, &first.target, timeout)
    }

    /// The next message, checked against `expected` as the echo of `instance`, the `k`th of
    /// `of`.
    fn check_echo(
        &mut self,
        expected: &Expected,
        instance: &Instance,
        k: usize,
        of: usize,
    ) -> anyhow::Result<()> {
        let echo = self
            .receive()
            .with_context(|| format!("echo {k} of {of}"))?;
        expected
            .check_instance(instance, &observed(echo))
            .with_context(|| format!("echo {k} of {of}"))
    }

    /// Sends `payload` as one masked frame of `opcode`.
    pub(crate) fn send(&mut self, opcode: Opcode, payload: &[u8]) -> anyhow::Result<()> {
        let mut out = Vec::with_capacity(payload.len() + 14);
        frame::put_frame(&mut out, true, opcode, payload, Some(MASK));
        self.conn
            .write_all(&out)
            .and_then(|()| self.conn.flush())
            .context("writing a frame")
    }

    /// The next message, whole: its fragments joined, a ping on the way answered. A Close is an
    /// error naming its code.
    pub(crate) fn receive(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut message = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match frame::parse_head(&self.buf, Role::Client, MAX_MESSAGE) {
                Err(v) => return Err(anyhow!("the server's frame: {v}")),
                Ok(Some(head)) if self.buf.len() >= head.frame_len() => {
                    let payload = self.buf[head.head_len..head.frame_len()].to_vec();
                    self.buf.drain(..head.frame_len());
                    match head.opcode {
                        Opcode::Ping => self.send(Opcode::Pong, &payload)?,
                        Opcode::Pong => {}
                        Opcode::Close => {
                            let code = payload
                                .get(..2)
                                .map(|c| u16::from_be_bytes([c[0], c[1]]).to_string());
                            return Err(anyhow!(
                                "the server closed the WebSocket (code {})",
                                code.as_deref().unwrap_or("none")
                            ));
                        }
                        Opcode::Text | Opcode::Binary | Opcode::Continuation => {
                            message.extend_from_slice(&payload);
                            if head.fin {
                                return Ok(message);
                            }
                        }
                    }
                    continue;
                }
                Ok(_) => {}
            }
            let n = self.conn.read(&mut chunk).context("reading a frame")?;
            anyhow::ensure!(n > 0, "the server closed the connection mid-message");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The close handshake: a Close 1000, the server's Close back, then the end of the stream.
    pub(crate) fn close(mut self) -> anyhow::Result<()> {
        self.send(Opcode::Close, &1000u16.to_be_bytes())?;
        match self.receive() {
            Err(e) if format!("{e}").contains("closed the WebSocket") => Ok(()),
            Err(e) => Err(e.context("the close handshake")),
            Ok(_) => Err(anyhow!("an echo after the client's Close")),
        }
    }
}

/// What a WebSocket echo looks like to the oracle: the upgrade's `101` and the message that
/// came back.
fn observed(body: Vec<u8>) -> Observed {
    Observed {
        status: 101,
        content_type: None,
        body: body.into(),
    }
}

/// The oracle check before a load: one connection, the first `depth` messages of `requests`
/// sent at once (as the cell sends them), every echo against `expected`, then the close.
pub(crate) fn precheck(
    peer: Peer,
    expected: &Expected,
    requests: &[Instance],
    depth: usize,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut client = Client::for_messages(peer, requests, timeout)?;
    let sent: Vec<&Instance> = requests.iter().cycle().take(depth.max(1)).collect();
    for instance in &sent {
        client.send(Opcode::Text, &instance.body)?;
    }
    for (k, instance) in sent.iter().enumerate() {
        client.check_echo(expected, instance, k + 1, sent.len())?;
    }
    client.close()
}

/// The loopback callgrind cell's client: one upgraded connection, `n` messages of `requests` in
/// turn, one in flight, every echo checked against `expected`. It ends without a close
/// handshake: the server under `--max-requests` stops by itself after its `n`th echo.
pub(crate) fn echoes(
    peer: Peer,
    expected: &Expected,
    requests: &[Instance],
    n: u64,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut client = Client::for_messages(peer, requests, timeout)?;
    let n = n as usize;
    for (k, instance) in requests.iter().cycle().take(n).enumerate() {
        client.send(Opcode::Text, &instance.body)?;
        client.check_echo(expected, instance, k + 1, n)?;
    }
    Ok(())
}

/// `check`'s loopback client: each message on a new upgraded connection, closed after its
/// echo.
pub(crate) struct Checker {
    pub(crate) peer: Peer,
    pub(crate) timeout: Duration,
}

impl crate::protocol::Exchange for Checker {
    fn observe(&mut self, instance: &Instance) -> anyhow::Result<Observed> {
        let mut client = Client::connect(self.peer, &instance.target, self.timeout)?;
        client.send(Opcode::Text, &instance.body)?;
        let echo = client.receive()?;
        client.close()?;
        Ok(observed(echo))
    }

    /// A path is fetched as HTTP/1.1 on the same port: the traversal checks are HTTP's.
    fn get(&mut self, target: &str) -> anyhow::Result<Observed> {
        crate::options::Protocol::default()
            .checker(self.peer.transport, self.peer.addr, self.timeout)?
            .get(target)
    }
}
