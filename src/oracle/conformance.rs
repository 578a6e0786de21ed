//! The protocol rules a server's answers are held to beyond each scenario's status, type and
//! body: TechEmpower's header rules and some of HttpArena's protocol checks. They are a report,
//! not a gate (`framebench check --conformance`): a server that fails one is still measured,
//! and docs/methodology/conformance.md says which failures change its numbers.
//!
//! Each rule talks raw HTTP/1.1 over a new loopback connection ([`crate::http1`]), so that what
//! it sends is byte for byte what it says, and judges the answer against the oracle's scenarios
//! where it needs a body.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;

use super::{Observed, SCENARIOS};
use crate::fixtures::Fixtures;
use crate::http1::{self, Connection};

/// How long a rule waits for a read or a connect.
const TIMEOUT: Duration = Duration::from_secs(3);
/// How long after the first `Date` the second is asked for (TechEmpower's 3 s: more than the
/// header's one-second resolution, so a server that computes it per request or refreshes a
/// cached one every second shows a new value).
pub(crate) const DATE_GAP: Duration = Duration::from_secs(3);

/// One rule: its column heading, what it checks, and the check.
pub(crate) struct Rule {
    /// The table's column heading.
    pub(crate) name: &'static str,
    /// What it checks, for the legend under the table.
    pub(crate) what: &'static str,
    check: fn(SocketAddr, &Fixtures) -> Result<()>,
}

impl Rule {
    /// Runs the rule against the server at `addr`: `Err` says what it saw instead.
    pub(crate) fn check(&self, addr: SocketAddr, fixtures: &Fixtures) -> Result<()> {
        (self.check)(addr, fixtures)
    }
}

/// The rules, in the table's order. The `Date` that must change is judged apart ([`Dates`]),
/// since it needs [`DATE_GAP`] between two answers.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        name: "server",
        what: "every answer carries a `Server` header (TechEmpower)",
        check: |addr, _| every_answer(addr, |_, res| has(res, "server")),
    },
    Rule {
        name: "date",
        what: "every answer carries a `Date` header in the HTTP-date form (TechEmpower)",
        check: |addr, _| every_answer(addr, |_, res| date_of(res).map(drop)),
    },
    Rule {
        name: "framing",
        what: "every answer is framed by `Content-Length` or `Transfer-Encoding: chunked` \
               (TechEmpower), not by closing the connection",
        check: |addr, _| every_answer(addr, |_, res| framing(res)),
    },
    Rule {
        name: "close",
        what: "a request with `Connection: close` is answered, then the server closes the \
               connection (HttpArena; wrk#197)",
        check: |addr, fixtures| closes(addr, fixtures),
    },
    Rule {
        name: "head",
        what: "`HEAD /` is answered without a body: the `GET /json` sent behind it on the same \
               connection is answered next, intact (HttpArena)",
        check: |addr, fixtures| head(addr, fixtures),
    },
    Rule {
        name: "http/1.0",
        what: "`GET / HTTP/1.0` without a Host header is answered as the oracle says (HttpArena)",
        check: |addr, fixtures| {
            let res = exchange_raw(addr, b"GET / HTTP/1.0\r\n\r\n")?;
            matches_scenario("hello", fixtures, &res)
        },
    },
    Rule {
        name: "pipelined",
        what: "three requests in one write are answered in order, each as the oracle says \
               (HttpArena)",
        check: |addr, fixtures| pipelined(addr, fixtures),
    },
    Rule {
        name: "split",
        what: "a request split across two TCP segments 50 ms apart is answered (HttpArena)",
        check: |addr, fixtures| split(addr, fixtures),
    },
];

/// The column of the rule that needs two answers [`DATE_GAP`] apart.
pub(crate) const DATE_MOVES: &str = "date moves";
/// Its legend.
pub(crate) const DATE_MOVES_WHAT: &str =
    "the `Date` of an answer 3 s after another differs from it (TechEmpower)";

/// The first `Date` a server gave, kept until [`DATE_GAP`] has passed: the check that it
/// changes runs then, so that a table of many servers waits for the gap once, not per server.
pub(crate) struct Dates {
    first: Result<(String, Instant)>,
}

impl Dates {
    /// Asks `addr` for `/` and keeps its `Date`.
    pub(crate) fn start(addr: SocketAddr) -> Dates {
        let first = get(addr, "/").and_then(|res| date_of(&res).map(|d| (d, Instant::now())));
        Dates { first }
    }

    /// Asks again once [`DATE_GAP`] has passed since the first answer, and compares.
    pub(crate) fn finish(self, addr: SocketAddr) -> Result<()> {
        let (first, at) = self.first?;
        std::thread::sleep(DATE_GAP.saturating_sub(at.elapsed()));
        let second = date_of(&get(addr, "/")?)?;
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

/// A response with its status line's version, which [`http1::parse_response`] drops.
type Answer = http::Response<Bytes>;

/// `GET path` on a new connection, closed after the answer.
fn get(addr: SocketAddr, path: &str) -> Result<Answer> {
    http1::exchange(addr, &http1::get_request(path, Connection::Close), TIMEOUT)
        .with_context(|| format!("GET {path}"))
}

/// `raw` on a new connection; one answer.
fn exchange_raw(addr: SocketAddr, raw: &[u8]) -> Result<Answer> {
    http1::exchange(addr, raw, TIMEOUT)
}

/// `judge` on the answer to every fixed scenario of the oracle that runs without Redis. The
/// query and body scenarios are left out: which framework serves them is the framework's
/// ([`crate::framework::Framework::CANNOT`]), and a rule here knows only the address.
fn every_answer(addr: SocketAddr, judge: impl Fn(&str, &Answer) -> Result<()>) -> Result<()> {
    let mut failed = Vec::new();
    for s in SCENARIOS
        .iter()
        .filter(|s| !s.needs_redis() && s.is_fixed())
    {
        let res = get(addr, s.path)?;
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

/// `Ok` when `res` has header `name`.
fn has(res: &Answer, name: &str) -> Result<()> {
    if res.headers().contains_key(name) {
        Ok(())
    } else {
        Err(anyhow!("no `{name}` header"))
    }
}

/// The `Date` header of `res`, checked to be an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn date_of(res: &Answer) -> Result<String> {
    let date = res
        .headers()
        .get("date")
        .context("no `Date` header")?
        .to_str()
        .map_err(|_| anyhow!("a `Date` that is not text"))?;
    httpdate::parse_http_date(date).map_err(|_| anyhow!("`Date: {date}` is not an HTTP-date"))?;
    Ok(date.to_owned())
}

/// `Ok` when `res` says how long it is.
fn framing(res: &Answer) -> Result<()> {
    let chunked = res
        .headers()
        .get("transfer-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked || res.headers().contains_key("content-length") {
        Ok(())
    } else {
        Err(anyhow!(
            "neither `Content-Length` nor `Transfer-Encoding: chunked`"
        ))
    }
}

/// Whether `res` is what the oracle's scenario `name` answers.
fn matches_scenario(name: &str, fixtures: &Fixtures, res: &Answer) -> Result<()> {
    let scenario = super::scenario(name).expect("a scenario of the oracle");
    let expected = scenario.expected(fixtures)?;
    expected
        .check(&Observed::from_response(res))
        .map_err(|e| anyhow!("{name}: {e}"))
}

/// A connection with the rule's bounds.
fn connect(addr: SocketAddr) -> Result<TcpStream> {
    http1::connect(addr, TIMEOUT)
}

/// Reads until `parse` finds what it needs in the bytes so far, or the peer closes, or the
/// bound passes. `parse` gets the bytes and whether the peer closed.
fn read_until<T>(
    stream: &mut TcpStream,
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
fn closes(addr: SocketAddr, fixtures: &Fixtures) -> Result<()> {
    let mut stream = connect(addr)?;
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
fn head(addr: SocketAddr, fixtures: &Fixtures) -> Result<()> {
    let mut stream = connect(addr)?;
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
fn pipelined(addr: SocketAddr, fixtures: &Fixtures) -> Result<()> {
    let names = ["hello", "json", "template"];
    let mut stream = connect(addr)?;
    let mut burst = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let path = super::scenario(name).expect("a scenario").path;
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
fn split(addr: SocketAddr, fixtures: &Fixtures) -> Result<()> {
    let mut stream = connect(addr)?;
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
    use std::net::TcpListener;

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
        let addr = careless(
            b"HTTP/1.1 200 OK\r\nServer: careless\r\nContent-Type: text/plain; charset=utf-8\r\n\
              Content-Length: 13\r\n\r\nHello, World!",
        );
        let rule = |name: &str| RULES.iter().find(|r| r.name == name).unwrap();
        let closed = rule("close").check(addr, &fixtures);
        assert!(
            closed
                .as_ref()
                .is_err_and(|e| format!("{e:#}").contains("kept the connection open")),
            "{closed:?}"
        );
        let date = rule("date").check(addr, &fixtures);
        assert!(
            date.as_ref()
                .is_err_and(|e| format!("{e:#}").contains("no `Date`")),
            "{date:?}"
        );
        rule("server").check(addr, &fixtures).unwrap();
        rule("split").check(addr, &fixtures).unwrap();
        // It answers hello to everything: the json behind HEAD is not json, and HEAD's
        // answer carries a body, which the next answer's parse runs into.
        assert!(rule("head").check(addr, &fixtures).is_err());
        assert!(rule("pipelined").check(addr, &fixtures).is_err());
    }
}
