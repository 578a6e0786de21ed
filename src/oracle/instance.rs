//! The request side of a scenario: the exact requests a run sends, numbered.
//!
//! A fixed scenario (hello, json, …) has one request, a `GET` of its path. The query and body
//! scenarios (`query`, `upload`, `upload_chunked`, `json_in`) draw their operands and bodies from
//! a seeded generator: request `i` of a scenario is the same in every run (so callgrind and
//! allocation counts repeat exactly), and consecutive requests differ (so a cached or hard-coded
//! answer fails the oracle). Each instance carries its own expected answer, computed here once.
//!
//! Operands are drawn from [`OPERANDS`]: both are ten-digit `u32`s and their sum is a ten-digit
//! number above `u32::MAX`. Every request and every answer of a scenario therefore has the same
//! length (with the body size fixed), which the benches' keep-alive client and the driver's
//! request ring rely on, and a handler that sums in 32 bits fails.
//!
//! The waiting scenario (`delay`, [`super::WAITING`]) has one request, `GET /delay?ms=10`: its
//! answer is the number of milliseconds asked for, and the request carries that wait
//! ([`Instance::check_not_early`]), which an answer over loopback must not beat.

use std::time::Duration;

use anyhow::bail;
use bytes::Bytes;

use super::{Body, Scenario, JSON};
use crate::framework::Request;

/// The body size of `upload` and `upload_chunked` unless `--body-size` says otherwise.
pub const BODY_SIZE: usize = 1024;

/// The size of an `echo` message unless `--message-size` says otherwise: HttpArena's.
pub const MESSAGE_SIZE: usize = 32;

/// Into how many chunks `upload_chunked` splits its body.
pub(crate) const CHUNKS: usize = 4;

/// The range both query operands are drawn from: ten-digit `u32`s whose sum has ten digits and
/// does not fit in a `u32`.
pub(crate) const OPERANDS: std::ops::Range<u32> = 2_200_000_000..3_200_000_000;

/// How long a `delay` request asks the server to wait, in milliseconds: the wait of every
/// request the oracle sends, and a handler's wait when the query names none.
pub(crate) const DELAY_MS: u64 = 10;

/// The longest wait a `delay` request may ask for, in milliseconds; a longer one (or an `ms`
/// that is not a `u64`) is answered 400 at once.
pub(crate) const MAX_DELAY_MS: u64 = 10_000;

/// The seed of every scenario's sequence, mixed with the scenario's name.
const SEED: u64 = 0x6672_616d_6562_656e;

/// A request method the oracle sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`, no body.
    Get,
    /// `POST`, with a body.
    Post,
}

impl Method {
    /// The method's token on the wire.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// What a scenario's requests carry, and so how each instance is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Payload {
    /// Nothing: a `GET` of the scenario's path, the same every time.
    Fixed,
    /// Two operands in the query: `GET /sum?a=A&b=B`, answered with the decimal sum.
    Query,
    /// A body of random bytes sent with `Content-Length`, answered with its length and digest.
    Length,
    /// The same body sent `Transfer-Encoding: chunked` in [`CHUNKS`] chunks.
    Chunked,
    /// `{"a":A,"b":B}` as JSON, answered `{"sum":S}`.
    Json,
    /// `GET /delay?ms=N`: answered `N` after the server's own timer has waited `N` ms; the same
    /// request every time ([`DELAY_MS`]). Loopback only ([`Scenario::loopback_only`]).
    Delay,
    /// A WebSocket text message of printable ASCII after `GET /ws` is upgraded, answered with
    /// itself (`echo`, `--protocol ws` only).
    Message,
}

/// One request of a scenario and the body its answer must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The method.
    pub method: Method,
    /// The request target: the path, and for `query` the query string.
    pub target: String,
    /// The request's `Content-Type`, for a body that has one.
    pub content_type: Option<&'static str>,
    /// The request body (empty for a `GET`).
    pub body: Bytes,
    /// Whether the body goes out `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// The answer's body when the scenario computes it per request; `None` for a fixed scenario,
    /// whose [`super::Expected`] holds it.
    pub(crate) expect: Option<Bytes>,
    /// How long the server must wait before it answers (`delay`): an answer that comes sooner
    /// after the request was sent is wrong ([`Instance::check_not_early`]).
    pub(crate) waits: Option<Duration>,
}

impl Scenario {
    /// Request `i` of this scenario, with bodies of `body_size` bytes (the body scenarios, and
    /// the message of `echo`).
    pub fn instance(&self, i: u64, body_size: usize) -> Instance {
        let mut rng = Rng::new(self.name, i);
        match self.payload {
            Payload::Fixed => Instance {
                method: self.method,
                target: self.path.to_owned(),
                content_type: None,
                body: Bytes::new(),
                chunked: false,
                expect: None,
                waits: None,
            },
            Payload::Query => {
                let (a, b) = (rng.operand(), rng.operand());
                Instance {
                    method: self.method,
                    target: format!("{}?a={a}&b={b}", self.path),
                    content_type: None,
                    body: Bytes::new(),
                    chunked: false,
                    expect: Some(sum_text(a, b).into()),
                    waits: None,
                }
            }
            Payload::Length | Payload::Chunked => {
                let body = rng.bytes(body_size);
                Instance {
                    method: self.method,
                    target: self.path.to_owned(),
                    content_type: Some(OCTET_STREAM),
                    expect: Some(digest_text(&body).into()),
                    body: body.into(),
                    chunked: self.payload == Payload::Chunked,
                    waits: None,
                }
            }
            Payload::Json => {
                let (a, b) = (rng.operand(), rng.operand());
                Instance {
                    method: self.method,
                    target: self.path.to_owned(),
                    content_type: Some(JSON),
                    body: format!(r#"{{"a":{a},"b":{b}}}"#).into(),
                    chunked: false,
                    expect: Some(format!(r#"{{"sum":{}}}"#, u64::from(a) + u64::from(b)).into()),
                    waits: None,
                }
            }
            Payload::Message => {
                // Printable ASCII, so that it is a text message's UTF-8 as it is.
                let text: Vec<u8> = rng
                    .bytes(body_size)
                    .into_iter()
                    .map(|b| b' ' + b % 95)
                    .collect();
                Instance {
                    method: self.method,
                    target: self.path.to_owned(),
                    content_type: None,
                    expect: Some(text.clone().into()),
                    body: text.into(),
                    chunked: false,
                    waits: None,
                }
            }
            Payload::Delay => Instance {
                method: self.method,
                target: format!("{}?ms={DELAY_MS}", self.path),
                content_type: None,
                body: Bytes::new(),
                chunked: false,
                expect: Some(DELAY_MS.to_string().into()),
                waits: Some(Duration::from_millis(DELAY_MS)),
            },
        }
    }

    /// The first `n` requests of this scenario, with the default body size: what the in-process
    /// modes cycle through (one for a fixed scenario).
    pub fn instances(&self, n: usize) -> Vec<Instance> {
        self.instances_sized(n, self.sized(BODY_SIZE, MESSAGE_SIZE))
    }

    /// Its payload's size: `message` for a message scenario (`echo`), `body` for the others.
    pub fn sized(&self, body: usize, message: usize) -> usize {
        match self.payload {
            Payload::Message => message,
            _ => body,
        }
    }

    /// [`Scenario::instances`] with bodies of `body_size` bytes (`load --body-size`).
    pub fn instances_sized(&self, n: usize, body_size: usize) -> Vec<Instance> {
        // Every request of `delay` is the same: one wait, so that a load's ideal rate is its
        // connections over that wait.
        let n = match self.payload {
            Payload::Fixed | Payload::Delay => 1,
            _ => n,
        };
        (0..n as u64).map(|i| self.instance(i, body_size)).collect()
    }

    /// Whether the scenario exists only on the wire: a chunked body is a property of the bytes,
    /// and an in-process request already holds its body whole, so `upload_chunked` has no
    /// in-process cell (it would measure `upload` again).
    pub fn wire_only(&self) -> bool {
        self.payload == Payload::Chunked
    }

    /// What its requests look like, for `list`: the path, with the query's shape and the body's.
    pub fn request_shape(&self) -> String {
        match self.payload {
            Payload::Fixed => self.path.to_owned(),
            Payload::Query => format!("{}?a=A&b=B (u32 operands)", self.path),
            Payload::Length => format!("{} ({BODY_SIZE}-byte body, Content-Length)", self.path),
            Payload::Chunked => format!("{} ({BODY_SIZE}-byte body, {CHUNKS} chunks)", self.path),
            Payload::Json => format!(r#"{} ({{"a":A,"b":B}} as JSON)"#, self.path),
            Payload::Delay => format!(
                "{}?ms={DELAY_MS} (waits on the framework's timer; loopback only)",
                self.path
            ),
            Payload::Message => format!(
                "{} upgraded, then {MESSAGE_SIZE}-byte text messages echoed (--protocol ws)",
                self.path
            ),
        }
    }

    /// Whether the scenario means something only over a socket: `delay`, whose handler sleeps,
    /// so that a time per in-process dispatch (or per request on one connection) is its sleep
    /// and nothing else. Such a scenario is in [`super::WAITING`], not [`super::SCENARIOS`].
    pub fn loopback_only(&self) -> bool {
        matches!(self.payload, Payload::Delay | Payload::Message)
    }

    /// Why it has no in-process cell, for a loopback-only scenario.
    pub(crate) fn loopback_reason(&self) -> &'static str {
        match self.payload {
            Payload::Message => super::UPGRADED_ONLY,
            _ => super::LOOPBACK_ONLY,
        }
    }

    /// Whether its requests are WebSocket messages after an upgrade (`echo`), which only
    /// `--protocol ws` carries, and nothing else does.
    pub(crate) fn is_message(&self) -> bool {
        self.payload == Payload::Message
    }

    /// Whether every request of the scenario is the same (the scenarios before issue 42).
    pub(crate) fn is_fixed(&self) -> bool {
        self.payload == Payload::Fixed
    }

    /// Whether the expected body is computed per request (the query and body scenarios).
    pub(crate) fn computed(&self) -> bool {
        self.body == Body::Computed
    }
}

impl Instance {
    /// A `GET` of `target` as it is, outside every scenario (a traversal attempt).
    pub fn get(target: &str) -> Instance {
        Instance {
            method: Method::Get,
            target: target.to_owned(),
            content_type: None,
            body: Bytes::new(),
            chunked: false,
            expect: None,
            waits: None,
        }
    }

    /// Checks that the answer to this request, read `elapsed` after the request was sent, did
    /// not come before the wait the request asked for (`delay`): a server that answers sooner
    /// did not wait. Nothing to check for a request that asks for no wait.
    pub fn check_not_early(&self, elapsed: Duration) -> anyhow::Result<()> {
        match self.waits {
            Some(wait) if elapsed < wait => bail!(
                "answered {:.2} ms after the request was sent, before the {} ms it asked the \
                 server to wait",
                elapsed.as_secs_f64() * 1e3,
                wait.as_millis()
            ),
            _ => Ok(()),
        }
    }

    /// The in-process request, as a client would send it (the body already collected).
    pub fn request(&self) -> Request {
        let mut builder = http::Request::builder()
            .method(self.method.as_str())
            .uri(self.target.as_str())
            .header(http::header::HOST, "localhost");
        if let Some(content_type) = self.content_type {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
        }
        if self.method == Method::Post {
            builder = builder.header(http::header::CONTENT_LENGTH, self.body.len());
        }
        builder
            .body(self.body.clone())
            .expect("oracle targets are valid URIs")
    }
}

/// The `Content-Type` of the upload bodies.
pub(crate) const OCTET_STREAM: &str = "application/octet-stream";

/// The answer to `query`: the decimal sum, as `u64`.
pub(crate) fn sum_text(a: u32, b: u32) -> String {
    (u64::from(a) + u64::from(b)).to_string()
}

/// The answer to `upload`: the body's length and its FNV-1a 64 digest as 16 lowercase hex
/// digits, which proves the handler read every byte.
pub(crate) fn digest_text(body: &[u8]) -> String {
    format!("{} {:016x}", body.len(), fnv1a64(body))
}

/// FNV-1a, 64 bits (Go's `hash/fnv.New64a` is the same function).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// splitmix64, seeded per scenario and request. Written here, not taken from `rand`, so that the
/// sequence never changes with a crate's version: the counted benches compare runs across
/// commits.
struct Rng(u64);

impl Rng {
    fn new(scenario: &str, i: u64) -> Rng {
        let mut rng = Rng(SEED ^ fnv1a64(scenario.as_bytes()));
        rng.0 = rng.0.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        rng.next();
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn operand(&mut self) -> u32 {
        let span = u64::from(OPERANDS.end - OPERANDS.start);
        OPERANDS.start + (self.next() % span) as u32
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(n);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::scenario;
    use super::*;

    #[test]
    fn fnv_matches_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn instances_repeat_differ_and_keep_their_length() {
        for name in ["query", "upload", "upload_chunked", "json_in"] {
            let s = scenario(name).unwrap();
            let first = s.instances(64);
            assert_eq!(first, s.instances(64), "{name}: the sequence repeats");
            let distinct: std::collections::HashSet<_> =
                first.iter().map(|i| i.expect.clone()).collect();
            assert_eq!(distinct.len(), 64, "{name}: every request differs");
            for inst in &first {
                assert_eq!(inst.target.len(), first[0].target.len(), "{name}");
                assert_eq!(inst.body.len(), first[0].body.len(), "{name}");
                let expect = inst.expect.as_ref().unwrap();
                assert_eq!(expect.len(), first[0].expect.as_ref().unwrap().len());
            }
        }
    }

    #[test]
    fn answers_are_computed_from_the_request() {
        let q = scenario("query").unwrap().instance(3, BODY_SIZE);
        let query = q.target.split_once('?').unwrap().1;
        let mut ops = query
            .split('&')
            .map(|kv| kv.split_once('=').unwrap().1.parse::<u64>().unwrap());
        let (a, b) = (ops.next().unwrap(), ops.next().unwrap());
        assert!(a + b > u64::from(u32::MAX));
        assert_eq!(q.expect.unwrap(), (a + b).to_string());
        let u = scenario("upload").unwrap().instance(0, 100);
        assert_eq!(u.body.len(), 100);
        assert_eq!(u.expect.unwrap(), format!("100 {:016x}", fnv1a64(&u.body)));
        let j = scenario("json_in").unwrap().instance(0, BODY_SIZE);
        let v: serde_json::Value = serde_json::from_slice(&j.body).unwrap();
        let sum = v["a"].as_u64().unwrap() + v["b"].as_u64().unwrap();
        assert_eq!(j.expect.unwrap(), format!(r#"{{"sum":{sum}}}"#));
    }

    #[test]
    fn the_fixed_scenarios_come_first() {
        use super::super::{BODY_SCENARIOS, FIXED_SCENARIOS, SCENARIOS};
        assert!(FIXED_SCENARIOS.iter().all(|s| s.is_fixed()));
        let rest: Vec<&str> = SCENARIOS[FIXED_SCENARIOS.len()..]
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(rest, BODY_SCENARIOS);
    }

    #[test]
    fn an_answer_sooner_than_the_wait_fails() {
        let delay = super::super::loopback_scenario("delay").unwrap();
        assert!(delay.loopback_only() && scenario("delay").is_none());
        assert_eq!(delay.instances(8).len(), 1, "one wait for every request");
        let req = delay.instance(3, BODY_SIZE);
        assert_eq!(req.target, format!("/delay?ms={DELAY_MS}"));
        assert_eq!(req.expect.as_deref(), Some(DELAY_MS.to_string().as_bytes()));
        let early = req
            .check_not_early(Duration::from_millis(DELAY_MS - 1))
            .unwrap_err()
            .to_string();
        assert!(early.contains("before the 10 ms"), "{early}");
        assert!(req.check_not_early(Duration::from_micros(9_999)).is_err());
        req.check_not_early(Duration::from_millis(DELAY_MS))
            .unwrap();
        req.check_not_early(Duration::from_secs(1)).unwrap();
        // A request that asks for no wait is never early.
        let hello = scenario("hello").unwrap().instance(0, BODY_SIZE);
        hello.check_not_early(Duration::ZERO).unwrap();
    }

    #[test]
    fn fixed_scenarios_send_their_path() {
        let hello = scenario("hello").unwrap();
        assert_eq!(hello.instances(8).len(), 1);
        let req = hello.instance(5, BODY_SIZE).request();
        assert_eq!((req.method(), req.uri().path()), (&http::Method::GET, "/"));
        assert!(req.body().is_empty() && !req.headers().contains_key("content-length"));
    }
}
