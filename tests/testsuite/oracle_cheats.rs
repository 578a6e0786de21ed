//! The query and body scenarios cannot be passed by a handler that does not read the request:
//! one that answers a fixed sum, or digests half the body, or ignores the JSON, fails the
//! oracle in-process (every mode's `cell::prepare`) and over loopback (the benches' client, and
//! `framebench load`'s check before it loads), because each request draws new operands.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use bytes::Bytes;
use framebench::bench::client::KeepAlive;
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry, Framework, Request, Response, ServerHandle};
use framebench::frameworks::Null;
use framebench::oracle::scenario;
use framebench::outcome::NotOk;

/// How a planted handler cheats.
trait Cheat: 'static {
    const NAME: &'static str;
    /// The answer it gives instead of the right one, or `None` to answer as `null` does.
    fn answer(req: &Request) -> Option<(&'static str, Bytes)>;
}

/// `null`, but cheating on one route.
struct Planted<C: Cheat> {
    inner: Null,
    _cheat: std::marker::PhantomData<C>,
}

impl<C: Cheat> Framework for Planted<C> {
    const NAME: &'static str = C::NAME;
    const CRATE: &'static str = "framebench";
    const VERSION_PREFIX: &'static str = "";
    const ABOUT: framebench::framework::About = Null::ABOUT;
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Ok(Planted {
            inner: Null::build(config)?,
            _cheat: std::marker::PhantomData,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        match C::answer(&req) {
            Some((content_type, body)) => Ok(http::Response::builder()
                .header(http::header::CONTENT_TYPE, content_type)
                .body(body)?),
            None => self.inner.dispatch(req),
        }
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        self.inner.serve(listener)
    }
}

const TEXT: &str = "text/plain; charset=utf-8";

/// Answers `/sum` with a sum it worked out once.
struct FixedSum;
impl Cheat for FixedSum {
    const NAME: &'static str = "fixed-sum";
    fn answer(req: &Request) -> Option<(&'static str, Bytes)> {
        (req.uri().path() == "/sum").then(|| (TEXT, Bytes::from_static(b"5000000000")))
    }
}

/// Digests only the first half of the upload.
struct HalfBody;
impl Cheat for HalfBody {
    const NAME: &'static str = "half-body";
    fn answer(req: &Request) -> Option<(&'static str, Bytes)> {
        (req.uri().path() == "/upload").then(|| {
            let body = &req.body()[..req.body().len() / 2];
            let digest = framebench::oracle::fnv1a64(body);
            // The length it claims is the whole body's: only the digest gives it away.
            let text = format!("{} {digest:016x}", req.body().len());
            (TEXT, Bytes::from(text))
        })
    }
}

/// Answers `/json_in` without reading the body.
struct IgnoresJson;
impl Cheat for IgnoresJson {
    const NAME: &'static str = "ignores-json";
    fn answer(req: &Request) -> Option<(&'static str, Bytes)> {
        (req.uri().path() == "/json_in").then(|| {
            (
                "application/json",
                Bytes::from_static(br#"{"sum":5000000000}"#),
            )
        })
    }
}

fn config() -> Config {
    Config::new(Fixtures::load_default().unwrap(), None)
}

fn assert_fails<C: Cheat>(name: &str) {
    let entry = Entry::of::<Planted<C>>(C::NAME);
    let s = scenario(name).unwrap();
    match framebench::cell::prepare(&entry, &config(), s) {
        // The oracle's mismatch names the scenario (`cell::check`); a build or dispatch error
        // does not.
        Err(NotOk::Failed(e)) if format!("{e:#}").starts_with(&format!("{name}: ")) => {}
        Err(e) => panic!("{}: {name} failed otherwise: {e}", C::NAME),
        Ok(_) => panic!("{}: {name} passed the oracle", C::NAME),
    }
    // The same framework passes every scenario it does not cheat on.
    for other in ["hello", "query", "upload", "json_in"]
        .into_iter()
        .filter(|o| *o != name)
    {
        framebench::cell::prepare(&entry, &config(), scenario(other).unwrap())
            .unwrap_or_else(|e| panic!("{} {other}: {e}", C::NAME));
    }
}

#[test]
fn handlers_that_do_not_read_the_request_fail_in_process() {
    assert_fails::<FixedSum>("query");
    assert_fails::<HalfBody>("upload");
    assert_fails::<IgnoresJson>("json_in");
}

/// A server on 127.0.0.1:0 answering every request it reads with the same sum.
fn fixed_sum_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            std::thread::spawn(move || serve_fixed(&mut s));
        }
    });
    addr
}

fn serve_fixed(s: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            return;
        }
        let answer =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 10\r\n\r\n5000000000";
        if s.write_all(answer).is_err() {
            return;
        }
    }
}

#[test]
fn a_server_that_answers_a_fixed_sum_fails_over_loopback() {
    let addr = fixed_sum_server();
    let fixtures = Fixtures::load_default().unwrap();
    let err = KeepAlive::connect(addr, scenario("query").unwrap(), &fixtures)
        .err()
        .expect("the benches' client must refuse a fixed sum");
    assert!(format!("{err:#}").contains("body differs"), "{err:#}");

    let (ok, text) = crate::common::load_url(addr, "query");
    assert!(!ok, "{text}");
    assert!(text.contains("oracle check before load"), "{text}");
}
