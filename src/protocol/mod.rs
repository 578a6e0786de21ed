//! The protocols a server speaks and the load driver speaks to it, each one module: what the
//! protocol is called, how its connections are shaped (a pipeline, or streams), how one request
//! of the oracle goes over it, and its conformance probes ([`http1`], [`h2c`], [`ws`]). Every other
//! module asks a [`Protocol`] value, never names one of its variants: `tests/testsuite/shape.rs`
//! holds that outside this module, `src/frameworks/` and the CLI's argument types
//! (`src/options.rs`, where the enum is declared as the option it is, below everything that
//! uses it, and `src/cmd/args.rs`).
//!
//! Adding a protocol is a variant of the enum, its module here with its rules under
//! `crate::oracle::conformance`, and a line in the `PROTOCOLS` table of each framework file
//! that serves it ([`crate::framework::Framework::PROTOCOLS`]).

pub(crate) mod h2c;
pub mod http1;
pub(crate) mod ws;

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use crate::fixtures::Fixtures;
use crate::options::{Protocol, Transport};
use crate::oracle::conformance::Rule;
use crate::oracle::{Expected, Instance, Observed};

/// How long any single loopback exchange may take before it counts as a failure: the bound on
/// connect, every read and every write of the checks and of the benches' client.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// What a load counts under a protocol ([`Protocol::unit`]): its words for one exchange, and
/// the short form that column headings and axes use (`req/s`, `msg/s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub(crate) singular: &'static str,
    pub(crate) plural: &'static str,
    pub(crate) short: &'static str,
}

impl Unit {
    /// A heading written for requests (`req/s`, `server user/req`, `req/conn min/mean/max`), in
    /// this unit.
    pub(crate) fn heading(self, requests: &str) -> String {
        requests.replace("req", self.short)
    }
}

/// A connection's shape: how many requests it has in flight at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// HTTP/1.1 requests written before the first answer is read.
    pub(crate) pipeline: usize,
    /// HTTP/2 streams open at once.
    pub(crate) streams: usize,
}

impl Protocol {
    /// Every protocol, in the order tables list them.
    pub const ALL: [Protocol; 4] = [Protocol::Http1, Protocol::H2c, Protocol::H2, Protocol::Ws];

    /// Its name on the command line and in a variant's label (`h2c`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::H2c => "h2c",
            Protocol::H2 => "h2",
            Protocol::Ws => "ws",
        }
    }

    /// Whether it carries `scenario`: WebSocket carries the message scenarios (`echo`) and
    /// nothing else, and no other protocol carries those.
    pub(crate) fn carries(self, scenario: &crate::oracle::Scenario) -> bool {
        scenario.is_message() == (self == Protocol::Ws)
    }

    /// The scenarios a command runs under it when none is named: WebSocket's messages, or the
    /// HTTP scenarios of the oracle.
    pub(crate) fn default_scenarios(self) -> &'static [crate::oracle::Scenario] {
        match self {
            Protocol::Ws => crate::oracle::MESSAGES,
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => crate::oracle::SCENARIOS,
        }
    }

    /// Whether `check` has in-process rows beside its loopback ones under it: a WebSocket
    /// message needs an upgraded connection, which in-process dispatch does not have.
    pub(crate) fn checked_in_process(self) -> bool {
        self != Protocol::Ws
    }

    /// Refuses this protocol over a transport that does not carry it, with the one line that
    /// says what to use instead: h2c is HTTP/2 in cleartext by definition, and h2 is HTTP/2
    /// over TLS.
    pub(crate) fn over(self, transport: Transport) -> Result<(), &'static str> {
        match (self, transport) {
            (Protocol::H2c, Transport::Tls) => Err(
                "--tls with --protocol h2c: h2c is HTTP/2 in cleartext; over TLS, HTTP/2 is \
                 --protocol h2, chosen by ALPN",
            ),
            (Protocol::H2, Transport::Tcp) => Err(
                "--protocol h2 is HTTP/2 over TLS, chosen by ALPN: add --tls (HTTP/2 in \
                 cleartext is --protocol h2c)",
            ),
            (Protocol::Ws, Transport::Tls) => Err(
                "--tls with --protocol ws: WebSocket over TLS (wss) is not served yet; \
                 WebSocket runs over TCP",
            ),
            _ => Ok(()),
        }
    }

    /// Its ALPN name over TLS, the only one either side offers: `h2` for HTTP/2, else HTTP/1.1's
    /// (a WebSocket upgrade is an HTTP/1.1 request).
    pub(crate) fn alpn(self) -> &'static [u8] {
        match self {
            Protocol::H2c | Protocol::H2 => b"h2",
            Protocol::Http1 | Protocol::Ws => b"http/1.1",
        }
    }

    /// Whether it is the default protocol, which a variant's label leaves out.
    pub(crate) fn is_default(self) -> bool {
        self == Protocol::default()
    }

    /// Whether a connection carries many requests at once as streams (`--streams`), rather than
    /// one at a time or pipelined (`--pipeline`).
    pub(crate) fn multiplexed(self) -> bool {
        match self {
            Protocol::Http1 | Protocol::Ws => false,
            Protocol::H2c | Protocol::H2 => true,
        }
    }

    /// What `serve --max-requests` counts under it: the messages echoed on an upgraded
    /// connection (WebSocket), else the responses.
    pub(crate) fn counted(self) -> crate::server::limit::Counted {
        match self {
            Protocol::Ws => crate::server::limit::Counted::Messages,
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => {
                crate::server::limit::Counted::Responses
            }
        }
    }

    /// Refuses the flags that belong to the other protocols' connection shape, with the line
    /// that says which flag to use instead. `churn` is `--requests-per-connection`.
    pub(crate) fn check_shape(self, shape: Shape, churn: bool) -> Result<(), &'static str> {
        if self.multiplexed() {
            // HTTP/2 multiplexes instead of pipelining; churn is HTTP/1.1's for now.
            if shape.pipeline > 1 {
                return Err(
                    "--pipeline is HTTP/1.1's: with HTTP/2 (h2c, h2), load more streams \
                     per connection with --streams",
                );
            }
            if churn {
                return Err(
                    "--requests-per-connection is HTTP/1.1's: with HTTP/2 (h2c, h2), load \
                     more streams per connection with --streams",
                );
            }
        } else if shape.streams > 1 {
            return Err(
                "--streams is HTTP/2's: add --protocol h2c, or h2 with --tls (HTTP/1.1 and \
                 WebSocket have --pipeline)",
            );
        }
        Ok(())
    }

    /// A connection's shape in words, for a progress bar: `HTTP/1.1, pipeline 16`,
    /// `h2c, 10 streams per connection`.
    pub(crate) fn shape_label(self, shape: Shape) -> String {
        match self {
            Protocol::Http1 if shape.pipeline > 1 => {
                format!("HTTP/1.1, pipeline {}", shape.pipeline)
            }
            Protocol::Http1 => "HTTP/1.1".to_owned(),
            Protocol::Ws if shape.pipeline > 1 => {
                format!("WebSocket, {} messages in flight", shape.pipeline)
            }
            Protocol::Ws => "WebSocket".to_owned(),
            Protocol::H2c | Protocol::H2 if shape.streams == 1 => {
                format!("{self}, 1 stream per connection")
            }
            Protocol::H2c | Protocol::H2 => {
                format!("{self}, {} streams per connection", shape.streams)
            }
        }
    }

    /// How a run's connections were shaped, for a results file's conditions line.
    pub(crate) fn conditions(self, pipeline: usize) -> String {
        match self {
            Protocol::Http1 => format!("pipeline {pipeline}"),
            Protocol::Ws => format!(
                "WebSocket after an HTTP/1.1 upgrade at /ws: masked text frames, {pipeline} \
                 message(s) in flight per connection"
            ),
            Protocol::H2c => format!(
                "h2c with prior knowledge (the h2 crate's client on tokio), streams per \
                 connection in each variant, client windows {} B per stream and per connection",
                h2c::WINDOW
            ),
            Protocol::H2 => format!(
                "h2 over TLS, chosen by ALPN (the h2 crate's client on tokio-rustls), streams \
                 per connection in each variant, client windows {} B per stream and per \
                 connection",
                h2c::WINDOW
            ),
        }
    }

    /// The part of a cell's progress line or sweep that says its streams (` m=10`), empty for a
    /// protocol without streams.
    pub(crate) fn streams_suffix(self, streams: usize) -> String {
        match self.multiplexed() {
            true => format!(" m={streams}"),
            false => String::new(),
        }
    }

    /// The stream counts a run of `streams` gives this protocol's cells: one for a protocol
    /// without streams.
    pub(crate) fn streams_of(self, streams: &[usize]) -> &[usize] {
        match self.multiplexed() {
            true => streams,
            false => &[1],
        }
    }

    /// The oracle check before a load: a connection to `addr`, the first of `requests` sent
    /// as the cell sends them (`pipeline` deep for HTTP/1.1, a stream each for h2c), every answer
    /// against `expected`. Bounded by `timeout` per exchange.
    pub(crate) fn precheck(
        self,
        transport: Transport,
        addr: SocketAddr,
        expected: &Expected,
        requests: &[Instance],
        pipeline: usize,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        match self {
            Protocol::Http1 => {
                http1::precheck(transport, addr, expected, requests, pipeline, timeout).map(drop)
            }
            Protocol::H2c | Protocol::H2 => h2c::precheck(
                crate::transport::Peer { addr, transport },
                expected,
                requests,
                timeout,
            ),
            Protocol::Ws => ws::client::precheck(
                crate::transport::Peer { addr, transport },
                expected,
                requests,
                pipeline,
                timeout,
            ),
        }
    }

    /// What judges its conformance under `check --conformance --protocol P`: rules of
    /// framebench's, or (WebSocket) Autobahn|Testsuite, the field's own judge.
    pub(crate) fn judge(self) -> Judge {
        match self {
            Protocol::Http1 => Judge::Rules(&http1::rules::SUITE),
            Protocol::H2c => Judge::Rules(&h2c::rules::SUITE),
            Protocol::H2 => Judge::Unjudged(
                "check --conformance --protocol h2: the HTTP/2 rules write frames on plain TCP \
                 (--protocol h2c); TLS and its ALPN choice are judged by check --conformance \
                 --tls",
            ),
            Protocol::Ws => Judge::Autobahn,
        }
    }

    /// A client for `check`'s loopback rows: one request of the oracle at a time, and a path
    /// fetched byte for byte (the traversals).
    pub(crate) fn checker(
        self,
        transport: Transport,
        addr: SocketAddr,
        timeout: Duration,
    ) -> anyhow::Result<Box<dyn Exchange>> {
        Ok(match self {
            Protocol::Http1 if transport == Transport::Tls => {
                Box::new(http1::TlsChecker::new(addr))
            }
            Protocol::Http1 => Box::new(http1::Checker::new(addr)?),
            Protocol::H2c | Protocol::H2 => Box::new(h2c::Client::connect(
                crate::transport::Peer { addr, transport },
                timeout,
            )?),
            Protocol::Ws => Box::new(ws::client::Checker {
                peer: crate::transport::Peer { addr, transport },
                timeout,
            }),
        })
    }
}

/// What the load client finds at the start of the bytes a connection has read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Framed {
    /// Not a whole answer yet.
    Partial,
    /// The answer to the oldest request in flight: its status (a WebSocket echo's is 200) and
    /// its length.
    Answer { status: u16, len: usize },
    /// `len` bytes that answer no request: a WebSocket pong, or the server's Close (`close`),
    /// which only the end of a churning connection may bring.
    Control { len: usize, close: bool },
}

impl Protocol {
    /// Appends `instance` as the load client sends it; `last` when it is a churning
    /// connection's last (`Connection: close`; under WebSocket, a Close frame after it).
    pub(crate) fn encode_request(self, instance: &Instance, last: bool, out: &mut Vec<u8>) {
        match self {
            Protocol::Ws => ws::encode_message(instance, last, out),
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => {
                let connection = match last {
                    true => http1::Connection::Close,
                    false => http1::Connection::KeepAlive,
                };
                http1::encode_instance(instance, connection, out);
            }
        }
    }

    /// What a connection sends before its first request, answered before any goes: the
    /// WebSocket upgrade to `first`'s path. None for HTTP.
    pub(crate) fn upgrade(self, first: &Instance) -> Option<Vec<u8>> {
        match self {
            Protocol::Ws => Some(ws::handshake::request(
                &first.target,
                &ws::handshake::client_key(0),
            )),
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => None,
        }
    }

    /// Whether a load counts its connections' upgrades (WebSocket's `101`s).
    pub(crate) fn upgrade_counted(self) -> bool {
        self == Protocol::Ws
    }

    /// What a churning connection's last exchange is, after which the server closes it: the
    /// load's words for a server that keeps the connection open instead.
    pub(crate) fn closing_exchange(self) -> &'static str {
        match self {
            // RFC 6455 §7.1.1: after the close handshake the server closes the TCP connection
            // first.
            Protocol::Ws => "the WebSocket close handshake",
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => "answering `Connection: close`",
        }
    }

    /// How a churning connection ends, in the load's header: the `Connection: close` on its last
    /// request (`alone`: the only one), or the WebSocket close handshake after its last message.
    pub(crate) fn churn_close(self, alone: bool) -> &'static str {
        match self {
            Protocol::Ws => "then the WebSocket close handshake",
            Protocol::Http1 | Protocol::H2c | Protocol::H2 if alone => "`Connection: close`",
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => "the last with `Connection: close`",
        }
    }

    /// What one exchange under it is, where a rate or a per-exchange figure names it: a message
    /// echoed on an upgraded connection (WebSocket), else a request answered.
    pub(crate) fn unit(self) -> Unit {
        match self {
            Protocol::Ws => Unit {
                singular: "message",
                plural: "messages",
                short: "msg",
            },
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => Unit {
                singular: "request",
                plural: "requests",
                short: "req",
            },
        }
    }

    /// The load client's framing of what a connection read ([`Framed`]).
    pub(crate) fn frame_answer(self, data: &[u8]) -> anyhow::Result<Framed> {
        match self {
            Protocol::Ws => ws::frame_answer(data),
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => Ok(match http1::frame_fast(data)? {
                Some((status, len)) => Framed::Answer { status, len },
                None => Framed::Partial,
            }),
        }
    }

    /// One whole answer, as the load client sampled it, reduced to what the oracle reads.
    pub(crate) fn observed(self, answer: &[u8]) -> anyhow::Result<Observed> {
        match self {
            Protocol::Ws => ws::observed(answer),
            Protocol::Http1 | Protocol::H2c | Protocol::H2 => {
                match http1::parse_response(answer, false)? {
                    Some((res, _)) => Ok(Observed::from_response(&res)),
                    None => Err(anyhow::anyhow!("incomplete response")),
                }
            }
        }
    }
}

/// What judges a protocol's conformance ([`Protocol::judge`]).
pub(crate) enum Judge {
    /// framebench's rules ([`Suite`]), run by `crate::conformance`.
    Rules(&'static Suite),
    /// Autobahn|Testsuite's fuzzing client, run by `crate::autobahn`.
    Autobahn,
    /// Nothing judges it: the line that says why, and where what it adds is judged.
    Unjudged(&'static str),
}

/// A protocol's conformance rules, as `crate::conformance` runs them against every server.
pub(crate) struct Suite {
    /// The command that runs them, the report's title.
    pub(crate) command: &'static str,
    /// The line before the legend.
    pub(crate) head: &'static str,
    /// The columns, each a rule of the oracle, in order.
    pub(crate) rules: &'static [Rule],
    /// First contact with a server, right after it starts and before any server is judged (the
    /// first `Date` of HTTP/1.1's `date moves`): returns the server's judgment to come.
    pub(crate) begin: fn(crate::transport::Peer) -> Judgment,
    /// Whether the hostile request bodies are sent too (they are HTTP/1.1 bytes).
    pub(crate) hostile_bodies: bool,
}

/// A server's judgment against a [`Suite`], once every server has started: one [`Finding`] per
/// rule. The closure may stop the server, through its argument, to judge how it stops (h2c's
/// GOAWAY).
pub(crate) type Judgment = Box<dyn FnOnce(&Fixtures, &mut dyn FnMut()) -> Vec<Finding>>;

/// One cell of a conformance report.
pub(crate) enum Finding {
    /// A rule judged: `Err` says what the server did instead.
    Verdict(anyhow::Result<()>),
    /// A fact recorded, not judged (what the server advertised).
    Recorded(String),
}

/// What `check` sends a server over loopback, whatever the protocol.
pub(crate) trait Exchange {
    /// Sends one request of the oracle and reads its answer.
    fn observe(&mut self, instance: &Instance) -> anyhow::Result<Observed>;
    /// Fetches `target` as written, with no normalisation of the path.
    fn get(&mut self, target: &str) -> anyhow::Result<Observed>;
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_has_its_alpn_name_and_its_transport() {
        assert_eq!(Protocol::H2.alpn(), b"h2");
        assert_eq!(Protocol::Http1.alpn(), b"http/1.1");
        assert_eq!(
            Protocol::Ws.alpn(),
            b"http/1.1",
            "a WebSocket upgrade is HTTP/1.1"
        );
        assert!(Protocol::H2.over(Transport::Tcp).is_err());
        assert!(Protocol::H2c.over(Transport::Tls).is_err());
        assert!(Protocol::H2.over(Transport::Tls).is_ok());
        assert!(Protocol::Http1.over(Transport::Tls).is_ok());
    }
}
