//! The probes behind HTTP/1.1's conformance rules ([`crate::oracle::conformance::http1::RULES`]):
//! each talks raw HTTP/1.1 over a new loopback connection (TCP, or TLS under `--tls`), so that
//! what it sends is byte for byte what it says, and judges the answer with the oracle.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use crate::fixtures::Fixtures;
use crate::oracle::conformance::http1::{DATE_GAP, RULES};
use crate::oracle::conformance::{date_of, framing, has, matches_scenario, Answer};
use crate::oracle::SCENARIOS;
use crate::protocol::http1::{self, Connection};
use crate::protocol::{Finding, Judgment, Suite};
use crate::transport::{Conn, Peer};

/// HTTP/1.1's rules, as `check --conformance` runs them, with the hostile bodies after.
pub(crate) const SUITE: Suite = Suite {
    command: "framebench check --conformance",
    head: "rules (a report, not a gate: docs/methodology/conformance.md says which failures \
           change a server's numbers):",
    rules: RULES,
    begin,
    hostile_bodies: true,
};

/// A rule's probe: `Err` says what the server did instead.
type Probe = fn(Peer, &Fixtures) -> Result<()>;

/// The probes of [`RULES`] but the last, in its order; the last, `date moves`, is [`Dates`].
const PROBES: [Probe; 8] = [
    |peer, _| every_answer(peer, |_, res| has(res, "server")),
    |peer, _| every_answer(peer, |_, res| date_of(res).map(drop)),
    |peer, _| every_answer(peer, |_, res| framing(res)),
    closes,
    head,
    |peer, fixtures| {
        let res = exchange_raw(peer, b"GET / HTTP/1.0\r\n\r\n")?;
        matches_scenario("hello", fixtures, &res)
    },
    pipelined,
    split,
];

/// Asks for the first `Date` as soon as the server is up, so that a table of many servers waits
/// for [`DATE_GAP`] once; the judgment runs every probe, then the second `Date`.
fn begin(peer: Peer) -> Judgment {
    let dates = Dates::start(peer);
    Box::new(move |fixtures, _| {
        PROBES
            .iter()
            .map(|probe| probe(peer, fixtures))
            .chain([dates.finish(peer)])
            .map(Finding::Verdict)
            .collect()
    })
}

/// How long a rule waits for a read or a connect.
const TIMEOUT: Duration = Duration::from_secs(3);
/// The first `Date` a server gave, kept until [`DATE_GAP`] has passed: the check that it
/// changes runs then, so that a table of many servers waits for the gap once, not per server.
struct Dates {
    first: Result<(String, Instant)>,
}

impl Dates {
    /// Asks `peer` for `/` and keeps its `Date`.
    fn start(peer: Peer) -> Dates {
        let first = get(peer, "/").and_then(|res| date_of(&res).map(|d| (d, Instant::now())));
        Dates { first }
    }

    /// Asks again once [`DATE_GAP`] has passed since the first answer, and compares.
    fn finish(self, peer: Peer) -> Result<()> {
        let (first, at) = self.first?;
        std::thread::sleep(DATE_GAP.saturating_sub(at.elapsed()));
        let second = date_of(&get(peer, "/")?)?;
        if second == first {
            Err(anyhow!(
                "`Date: {first}` again {} s later",
                DATE_GAP.as_secs()
            ))
        } else {
            Ok(())
        }
    }
}

/// `GET path` on a new connection, closed after the answer.
fn get(peer: Peer, path: &str) -> Result<Answer> {
    exchange_raw(peer, &http1::get_request(path, Connection::Close))
        .with_context(|| format!("GET {path}"))
}

/// `raw` on a new connection; one answer.
fn exchange_raw(peer: Peer, raw: &[u8]) -> Result<Answer> {
    http1::exchange_on(&mut connect(peer)?, raw)
}

/// `judge` on the answer to every fixed scenario of the oracle that runs without Redis. The
/// query and body scenarios are left out: which framework serves them is the framework's
/// ([`crate::framework::Framework::CANNOT`]), and a rule here knows only the address.
fn every_answer(peer: Peer, judge: impl Fn(&str, &Answer) -> Result<()>) -> Result<()> {
    let mut failed = Vec::new();
    for s in SCENARIOS
        .iter()
        .filter(|s| !s.needs_redis() && s.is_fixed())
    {
        let res = get(peer, s.path)?;
        if let Err(e) = judge(s.name, &res) {
            failed.push(format!("{}: {e:#}", s.name));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(failed.join("; ")))
    }
}

/// A connection with the rule's bounds.
fn connect(peer: Peer) -> Result<Conn> {
    Conn::connect(peer, TIMEOUT)
}

/// Reads until `parse` finds what it needs in the bytes so far, or the peer closes, or the
/// bound passes. `parse` gets the bytes and whether the peer closed.
fn read_until<T>(
    stream: &mut Conn,
    mut parse: impl FnMut(&[u8], bool) -> Result<Option<T>>,
) -> Result<T> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            Err(e) => return Err(anyhow!("reading: {e}")),
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(t) = parse(&buf, n == 0)? {
            return Ok(t);
        }
        if n == 0 {
            return Err(if buf.is_empty() {
                anyhow!("closed without an answer")
            } else {
                anyhow!("closed mid-answer")
            });
        }
        if Instant::now() > deadline {
            return Err(anyhow!("no complete answer in {} s", TIMEOUT.as_secs()));
        }
    }
}

/// `Connection: close`: one answer, then the end of the stream.
fn closes(peer: Peer, fixtures: &Fixtures) -> Result<()> {
    let mut stream = connect(peer)?;
    stream
        .write_all(&http1::get_request("/", Connection::Close))
        .context("writing")?;
    let (res, rest) = read_until(&mut stream, |buf, eof| {
        http1::parse_response(buf, eof).map(|r| r.map(|(res, used)| (res, buf.len() - used)))
    })?;
    matches_scenario("hello", fixtures, &res)?;
    if rest > 0 {
        return Err(anyhow!("{rest} bytes after the answer"));
    }
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(()),
        Ok(_) => Err(anyhow!("more bytes after the answer")),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(anyhow!(
                "answered, then kept the connection open for {} s",
                TIMEOUT.as_secs()
            ))
        }
        Err(e) => Err(anyhow!("reading after the answer: {e}")),
    }
}

/// `HEAD /` and then `GET /json` in one write: the HEAD answer's head, no body, then the json
/// answer intact.
fn head(peer: Peer, fixtures: &Fixtures) -> Result<()> {
    let mut stream = connect(peer)?;
    stream
        .write_all(
            b"HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n\
              GET /json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .context("writing")?;
    let (status, next) = read_until(&mut stream, |buf, eof| {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut res = httparse::Response::new(&mut headers);
        let head_len = match res.parse(buf).map_err(|e| anyhow!("HEAD answer: {e}"))? {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial if eof => return Err(anyhow!("closed mid-head")),
            httparse::Status::Partial => return Ok(None),
        };
        let status = res.code.unwrap_or(0);
        Ok(http1::parse_response(&buf[head_len..], eof)
            .map_err(|e| anyhow!("the answer after HEAD's: {e:#} (a body after HEAD's head?)"))?
            .map(|(next, _)| (status, next)))
    })?;
    if status != 200 {
        return Err(anyhow!("HEAD / answered {status}"));
    }
    matches_scenario("json", fixtures, &next)
        .map_err(|e| anyhow!("the answer after HEAD's: {e:#} (a body after HEAD's head?)"))
}

/// `GET /`, `GET /json`, `GET /template` in one write: three answers, in that order.
fn pipelined(peer: Peer, fixtures: &Fixtures) -> Result<()> {
    let names = ["hello", "json", "template"];
    let mut stream = connect(peer)?;
    let mut burst = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let path = crate::oracle::scenario(name).expect("a scenario").path;
        let last = if i + 1 == names.len() {
            Connection::Close
        } else {
            Connection::KeepAlive
        };
        burst.extend(http1::get_request(path, last));
    }
    stream.write_all(&burst).context("writing")?;
    let answers = read_until(&mut stream, |buf, eof| {
        let mut answers = Vec::new();
        let mut at = 0;
        while answers.len() < names.len() {
            match http1::parse_response(&buf[at..], eof)? {
                Some((res, used)) => {
                    answers.push(res);
                    at += used;
                }
                None => return Ok(None),
            }
        }
        Ok(Some(answers))
    })?;
    for (name, res) in names.iter().zip(&answers) {
        matches_scenario(name, fixtures, res)?;
    }
    Ok(())
}

/// `GET /` written in two segments, 50 ms apart.
fn split(peer: Peer, fixtures: &Fixtures) -> Result<()> {
    let mut stream = connect(peer)?;
    let request = http1::get_request("/", Connection::Close);
    let (first, second) = request.split_at(9);
    for (i, part) in [first, second].into_iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        stream
            .write_all(part)
            .and_then(|()| stream.flush())
            .context("writing")?;
    }
    let res = read_until(&mut stream, |buf, eof| {
        http1::parse_response(buf, eof).map(|r| r.map(|(res, _)| res))
    })?;
    matches_scenario("hello", fixtures, &res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_but_the_dates_has_its_probe() {
        assert_eq!(PROBES.len() + 1, RULES.len());
        assert_eq!(RULES.last().unwrap().name, "date moves");
    }
    use std::net::{SocketAddr, TcpListener};

    /// A server that answers every request on a connection with `answer`, and keeps every
    /// connection open (it ignores `Connection: close`), until the test ends.
    fn careless(answer: &'static [u8]) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten().take(64) {
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut buf = [0u8; 4096];
                    let mut kept = Vec::new();
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        kept.extend_from_slice(&buf[..n]);
                        while let Some(end) = kept.windows(4).position(|w| w == b"\r\n\r\n") {
                            kept.drain(..end + 4);
                            if stream.write_all(answer).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    #[test]
    fn a_server_that_ignores_close_and_sends_no_date_fails_those_rules_only() {
        let fixtures = Fixtures::load_default().unwrap();
        let addr = Peer::tcp(careless(
            b"HTTP/1.1 200 OK\r\nServer: careless\r\nContent-Type: text/plain; charset=utf-8\r\n\
              Content-Length: 13\r\n\r\nHello, World!",
        ));
        let rule = |name: &str| {
            let at = RULES.iter().position(|r| r.name == name).unwrap();
            move |peer: Peer, fixtures: &Fixtures| PROBES[at](peer, fixtures)
        };
        let closed = rule("close")(addr, &fixtures);
        assert!(
            closed
                .as_ref()
                .is_err_and(|e| format!("{e:#}").contains("kept the connection open")),
            "{closed:?}"
        );
        let date = rule("date")(addr, &fixtures);
        assert!(
            date.as_ref()
                .is_err_and(|e| format!("{e:#}").contains("no `Date`")),
            "{date:?}"
        );
        rule("server")(addr, &fixtures).unwrap();
        rule("split")(addr, &fixtures).unwrap();
        // It answers hello to everything: the json behind HEAD is not json, and HEAD's
        // answer carries a body, which the next answer's parse runs into.
        assert!(rule("head")(addr, &fixtures).is_err());
        assert!(rule("pipelined")(addr, &fixtures).is_err());
    }
}
