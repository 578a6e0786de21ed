//! The probes behind h2c's conformance rules ([`crate::oracle::conformance::h2c::RULES`]): the
//! preface, SETTINGS and GOAWAY rules read frames off a raw socket, so that what is judged is
//! what the server wrote; the stream rules go through the h2 crate's client ([`super::Client`]).

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};

use super::Client;
use crate::oracle::conformance::h2c::{RULES, STREAMS};
use crate::oracle::{Instance, Observed, HELLO};
use crate::protocol::{Exchange as _, Finding, Judgment, Suite};

/// h2c's rules, as `check --conformance --protocol h2c` runs them.
pub(crate) const SUITE: Suite = Suite {
    command: "framebench check --conformance --protocol h2c",
    head: "h2c rules (a report, not a gate: docs/methodology/http2.md):",
    rules: RULES,
    begin,
    hostile_bodies: false,
};

/// Nothing to ask before every server has started: the judgment runs each rule in
/// [`RULES`]' order, `goaway` last of the judged ones, since it stops the server.
/// h2c is cleartext by definition (`--tls --protocol h2c` is refused before a server starts):
/// only the peer's address counts.
fn begin(peer: crate::transport::Peer) -> Judgment {
    let addr = peer.addr;
    Box::new(move |_, stop| {
        let stream_1 = Client::connect(peer, TIMEOUT).and_then(|mut c| hello(c.get("/")?));
        let judged = [
            handshake(addr).map(drop),
            match handshake(addr) {
                Ok(hs) if hs.acked => Ok(()),
                Ok(_) => Err(anyhow!("no SETTINGS ACK within {TIMEOUT:?}")),
                Err(e) => Err(e),
            },
            stream_1,
            concurrent(addr),
        ];
        let advertised = handshake(addr).map_or("–".to_owned(), |h| h.advertised());
        let http1 = http1(addr);
        let goaway = goaway(addr, stop);
        judged
            .into_iter()
            .chain([goaway])
            .map(Finding::Verdict)
            .chain([http1.to_owned(), advertised].map(Finding::Recorded))
            .collect()
    })
}

/// How long a rule waits for a connect, a frame or an answer.
const TIMEOUT: Duration = Duration::from_secs(3);
/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Frame types read here (RFC 9113 §6).
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
/// The ACK flag of a SETTINGS frame.
const ACK: u8 = 0x1;
/// The SETTINGS identifiers the report shows.
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
const INITIAL_WINDOW_SIZE: u16 = 0x4;

/// What the server said in its first SETTINGS, and whether it acknowledged the client's.
pub(crate) struct Handshake {
    /// SETTINGS_MAX_CONCURRENT_STREAMS, when it sent one.
    pub(crate) max_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE, when it sent one (65,535 otherwise).
    pub(crate) window: Option<u32>,
    /// Whether an ACK of the client's SETTINGS came within [`TIMEOUT`].
    pub(crate) acked: bool,
}

impl Handshake {
    /// `streams 200, window 1048576` (`–` for a value not sent: the protocol's default).
    pub(crate) fn advertised(&self) -> String {
        let show = |v: Option<u32>| v.map_or("–".to_owned(), |v| v.to_string());
        format!(
            "streams {}, window {}",
            show(self.max_streams),
            show(self.window)
        )
    }
}

/// One frame's head and payload.
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// A new connection with the preface and an empty SETTINGS sent.
fn open(addr: SocketAddr) -> Result<TcpStream> {
    let mut stream =
        TcpStream::connect_timeout(&addr, TIMEOUT).with_context(|| format!("connect {addr}"))?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_nodelay(true)?;
    stream.write_all(PREFACE)?;
    stream.write_all(&[0, 0, 0, SETTINGS, 0, 0, 0, 0, 0])?;
    Ok(stream)
}

/// The next frame, `None` when the server closed the connection, an error at the deadline.
fn read_frame(stream: &mut TcpStream, deadline: Instant) -> Result<Option<Frame>> {
    let mut head = [0u8; 9];
    if !read_exact(stream, &mut head, deadline)? {
        return Ok(None);
    }
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    anyhow::ensure!(len <= 1 << 24, "a frame of {len} bytes");
    let mut payload = vec![0u8; len];
    if !read_exact(stream, &mut payload, deadline)? {
        bail!("closed inside a frame");
    }
    Ok(Some(Frame {
        kind: head[3],
        flags: head[4],
        stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        payload,
    }))
}

/// Fills `buf`; false when the connection closed before its first byte.
fn read_exact(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        anyhow::ensure!(!left.is_zero(), "no frame within {TIMEOUT:?}");
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => bail!("closed inside a frame"),
            Ok(n) => filled += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                bail!("no frame within {TIMEOUT:?}")
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && filled == 0 => {
                return Ok(false)
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// The preface exchange on a new connection: the server's first frame must be its SETTINGS;
/// then frames are read until it acknowledges the client's, or [`TIMEOUT`].
fn handshake(addr: SocketAddr) -> Result<Handshake> {
    handshake_on(&mut open(addr)?)
}

fn handshake_on(stream: &mut TcpStream) -> Result<Handshake> {
    let deadline = Instant::now() + TIMEOUT;
    let first = read_frame(stream, deadline)?
        .ok_or_else(|| anyhow!("the server closed the connection after the preface"))?;
    if first.kind != SETTINGS || first.stream != 0 || first.flags & ACK != 0 {
        bail!(
            "the first frame is of type {:#x} (flags {:#x}, stream {}), not the server's SETTINGS",
            first.kind,
            first.flags,
            first.stream
        );
    }
    let mut hs = Handshake {
        max_streams: None,
        window: None,
        acked: false,
    };
    for entry in first.payload.chunks_exact(6) {
        let id = u16::from_be_bytes([entry[0], entry[1]]);
        let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
        match id {
            MAX_CONCURRENT_STREAMS => hs.max_streams = Some(value),
            INITIAL_WINDOW_SIZE => hs.window = Some(value),
            _ => {}
        }
    }
    while let Ok(Some(frame)) = read_frame(stream, deadline) {
        if frame.kind == SETTINGS && frame.flags & ACK != 0 {
            hs.acked = true;
            break;
        }
    }
    Ok(hs)
}

/// The oracle's hello, or what came instead.
fn hello(got: Observed) -> Result<()> {
    if got.status == 200 && got.body[..] == *HELLO.as_bytes() {
        Ok(())
    } else {
        bail!(
            "status {}, body {:?}",
            got.status,
            String::from_utf8_lossy(&got.body[..got.body.len().min(40)])
        )
    }
}

/// [`STREAMS`] `GET /` at once on one connection, each answered with the hello.
fn concurrent(addr: SocketAddr) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        tokio::time::timeout(TIMEOUT, async {
            let send = crate::protocol::h2c::connect(crate::transport::Peer::tcp(addr)).await?;
            let instance = Instance::get("/");
            let mut streams = tokio::task::JoinSet::new();
            for _ in 0..STREAMS {
                let (mut send, instance) = (send.clone(), instance.clone());
                streams.spawn(async move {
                    crate::protocol::h2c::exchange(
                        &mut send,
                        crate::transport::Peer::tcp(addr),
                        &instance,
                    )
                    .await
                    .map(|res| Observed::from_response(&res))
                });
            }
            let mut answered = 0;
            while let Some(joined) = streams.join_next().await {
                hello(joined??).with_context(|| format!("after {answered} answers"))?;
                answered += 1;
            }
            anyhow::Ok(())
        })
        .await
        .map_err(|_| anyhow!("not all {STREAMS} answered within {TIMEOUT:?}"))?
    })
}

/// A connection made and handshaken before the server stops, watched while `stop` stops it:
/// `Ok` when GOAWAY arrived before the close (or before [`TIMEOUT`] past the stop).
fn goaway(addr: SocketAddr, stop: &mut dyn FnMut()) -> Result<()> {
    let mut stream = open(addr)?;
    handshake_on(&mut stream)?;
    let watcher = std::thread::spawn(move || -> Result<()> {
        let deadline = Instant::now() + TIMEOUT + crate::options::GRACE;
        loop {
            match read_frame(&mut stream, deadline) {
                Ok(Some(f)) if f.kind == GOAWAY => return Ok(()),
                Ok(Some(_)) => continue,
                Ok(None) => bail!("closed without GOAWAY"),
                Err(e) => bail!("{e:#} after the stop, and no GOAWAY"),
            }
        }
    });
    stop();
    watcher
        .join()
        .map_err(|_| anyhow!("the GOAWAY watcher panicked"))?
}

/// What an HTTP/1.1 `GET /` on the h2c port gets: `served` when the hello comes back,
/// `refused` otherwise (a close, an error, or no answer).
fn http1(addr: SocketAddr) -> &'static str {
    match crate::protocol::http1::raw_get(addr, "/") {
        Ok(got) if got.status == 200 && got.body[..] == *HELLO.as_bytes() => "served",
        _ => "refused",
    }
}
