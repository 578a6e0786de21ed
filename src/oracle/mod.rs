//! The scenarios and their expected responses, defined once.
//!
//! Tests, `framebench check`, the benches and the driver all read [`SCENARIOS`]. A framework that
//! answers a scenario with anything else is reported as failing it, however fast it is.
//!
//! [`WAITING`] holds the scenarios that mean something over loopback only (`delay`, whose
//! handler waits on the framework's timer): `check` runs them over loopback, and `load`,
//! `compare` and `scale` load them when named ([`loopback_scenario`]); every in-process mode
//! reads [`SCENARIOS`] alone and refuses them by name (`crate::select::scenario`).

pub(crate) mod conformance;
pub mod hostile;
mod instance;

pub(crate) use instance::{digest_text, sum_text, Payload, CHUNKS, DELAY_MS, MAX_DELAY_MS};
pub use instance::{fnv1a64, Instance, Method, BODY_SIZE, MESSAGE_SIZE};

use anyhow::{bail, Context as _};
use bytes::Bytes;

use crate::fixtures::Fixtures;
use crate::framework::{Config, Request};

/// Content type of the plain-text answers: hello, paste, redis.
pub(crate) const TEXT_PLAIN: &str = "text/plain; charset=utf-8";
/// Content type of the rendered template.
pub(crate) const TEXT_HTML: &str = "text/html; charset=utf-8";
/// Content type of the json scenario.
pub(crate) const JSON: &str = "application/json";
/// The hello scenario's body.
pub(crate) const HELLO: &str = "Hello, World!";
/// The value of `foo`, the key the redis scenario reads (seeded by [`crate::redis`]).
pub(crate) const REDIS_VALUE: &str = "bar: a value stored in a real Redis";

/// What the body of a response must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    /// Any body.
    Any,
    /// Exactly these bytes.
    Text(&'static str),
    /// Byte-identical to this file, relative to the fixtures folder.
    Fixture(&'static str),
    /// Computed from each request: the sum of its operands, or its body's length and digest
    /// ([`Instance`]).
    Computed,
}

/// One scenario: a request and the response every framework must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Short name, used on the command line and in bench ids.
    pub name: &'static str,
    /// The request's method.
    pub method: Method,
    /// The route: the whole target of a fixed scenario, the path of the others (whose query and
    /// body each [`Instance`] draws).
    pub path: &'static str,
    /// What the requests carry.
    pub(crate) payload: Payload,
    /// Expected status.
    pub(crate) status: u16,
    /// Expected content type. A bare media type (`text/html`) accepts any parameters; one with
    /// parameters (`text/plain; charset=utf-8`) requires them too.
    pub(crate) content_type: Option<&'static str>,
    /// Expected body.
    pub(crate) body: Body,
}

/// The oracle.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "hello",
        method: Method::Get,
        path: "/",
        payload: Payload::Fixed,
        status: 200,
        content_type: Some(TEXT_PLAIN),
        body: Body::Text(HELLO),
    },
    Scenario {
        name: "not_found",
        method: Method::Get,
        path: "/nonexistent",
        payload: Payload::Fixed,
        status: 404,
        content_type: None,
        body: Body::Any,
    },
    Scenario {
        name: "static",
        method: Method::Get,
        path: "/static/webupload.html",
        payload: Payload::Fixed,
        status: 200,
        content_type: Some("text/html"),
        body: Body::Fixture("static/webupload.html"),
    },
    Scenario {
        name: "template",
        method: Method::Get,
        path: "/template",
        payload: Payload::Fixed,
        status: 200,
        content_type: Some(TEXT_HTML),
        body: Body::Fixture("expected/template.html"),
    },
    Scenario {
        name: "paste",
        method: Method::Get,
        path: "/paste/mysrc",
        payload: Payload::Fixed,
        status: 200,
        content_type: Some(TEXT_PLAIN),
        body: Body::Fixture("pastes/mysrc"),
    },
    Scenario {
        name: "json",
        method: Method::Get,
        path: "/json",
        payload: Payload::Fixed,
        status: 200,
        content_type: Some(JSON),
        body: Body::Text(r#"{"message":"Hello, World!"}"#),
    },
    // Needs a real Redis (see `Scenario::needs_redis`), seeded by `crate::redis`.
    Scenario {
        name: REDIS_SCENARIO,
        method: Method::Get,
        path: "/get?key=foo",
        payload: Payload::Fixed,
        status: 200,
        content_type: Some(TEXT_PLAIN),
        body: Body::Text(REDIS_VALUE),
    },
    // The query and body scenarios (issue 42): each request draws its operands or body
    // (`instance.rs`), and the answer is computed from it.
    Scenario {
        name: "query",
        method: Method::Get,
        path: "/sum",
        payload: Payload::Query,
        status: 200,
        content_type: Some(TEXT_PLAIN),
        body: Body::Computed,
    },
    Scenario {
        name: "upload",
        method: Method::Post,
        path: "/upload",
        payload: Payload::Length,
        status: 200,
        content_type: Some(TEXT_PLAIN),
        body: Body::Computed,
    },
    Scenario {
        name: "upload_chunked",
        method: Method::Post,
        path: "/upload",
        payload: Payload::Chunked,
        status: 200,
        content_type: Some(TEXT_PLAIN),
        body: Body::Computed,
    },
    Scenario {
        name: "json_in",
        method: Method::Post,
        path: "/json_in",
        payload: Payload::Json,
        status: 200,
        content_type: Some(JSON),
        body: Body::Computed,
    },
];

/// The scenarios that wait: loopback only ([`Scenario::loopback_only`]), so none is in
/// [`SCENARIOS`], which every in-process mode iterates.
pub const WAITING: &[Scenario] = &[
    // A handler that waits on the framework's own timer (`handlers::delay`): a load measures
    // how many waiting requests a server holds at once (docs/methodology/delay.md).
    Scenario {
        name: DELAY_SCENARIO,
        method: Method::Get,
        path: "/delay",
        payload: Payload::Delay,
        status: 200,
        content_type: Some(TEXT_PLAIN),
        body: Body::Computed,
    },
];

/// The scenarios whose requests are WebSocket messages (`--protocol ws`): loopback only, and
/// carried by no other protocol (`crate::protocol::ws`).
pub const MESSAGES: &[Scenario] = &[
    // Each message back as it came (issue 60): HttpArena's echo-ws, and its pipelined and
    // churning shapes through the load's `--pipeline` and `--requests-per-connection`.
    Scenario {
        name: "echo",
        method: Method::Get,
        path: "/ws",
        payload: Payload::Message,
        status: 101,
        content_type: None,
        body: Body::Computed,
    },
];

/// The scenario that waits on the framework's timer ([`WAITING`]).
pub const DELAY_SCENARIO: &str = "delay";

/// Why a waiting scenario has no in-process cell, and why an in-process command refuses it
/// (after "delay is ").
pub(crate) const LOOPBACK_ONLY: &str =
    "a loopback scenario only: a sleep per iteration means nothing in-process";

/// Why a message scenario has no in-process cell (after "echo is ").
pub(crate) const UPGRADED_ONLY: &str =
    "a WebSocket scenario only: its messages need an upgraded connection, which in-process \
     dispatch does not have (`--protocol ws`)";

/// The scenarios whose request is always the same (the ones before issue 42), first in
/// [`SCENARIOS`].
pub const FIXED_SCENARIOS: &[Scenario] =
    SCENARIOS.split_at(SCENARIOS.len() - BODY_SCENARIOS.len()).0;

/// The query and body scenarios, which a framework serves through its own extractors
/// ([`crate::framework::Framework::CANNOT`] says where it cannot).
pub const BODY_SCENARIOS: [&str; 4] = ["query", "upload", "upload_chunked", "json_in"];

/// The scenario that reads a real Redis.
pub const REDIS_SCENARIO: &str = "redis";

/// Requests that try to read a file outside `static/` or `pastes/`: `..`, percent-encoded dots
/// and slashes, backslashes, double encoding, absolute paths, NUL bytes, overlong UTF-8. The
/// target is `fixtures/secret.txt` (or a system file); see [`check_denied`].
pub(crate) const TRAVERSALS: &[&str] = &[
    "/static/../secret.txt",
    "/static/..%2fsecret.txt",
    "/static/%2e%2e/secret.txt",
    "/static/%2e%2e%2fsecret.txt",
    "/static/%2E%2E%2Fsecret.txt",
    "/static/..%5csecret.txt",
    "/static/..\\secret.txt",
    "/static/%252e%252e%252fsecret.txt",
    "/static/..%252fsecret.txt",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/secret.txt%00.html",
    "/static/..%00/secret.txt",
    "/static/....//secret.txt",
    "/static/%c0%ae%c0%ae/secret.txt",
    "/static/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/paste/../secret.txt",
    "/paste/..%2fsecret.txt",
    "/paste/%2e%2e%2fsecret.txt",
    "/paste/..%5csecret.txt",
    "/paste/%252e%252e%252fsecret.txt",
    "/paste/%2fetc%2fpasswd",
    "/paste/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/paste/mysrc%00",
    "/paste/..",
    "/paste/%2e%2e",
    "/paste/.%2e/secret.txt",
];

/// Markers that must never appear in the answer to a traversal: the canary file, and lines of
/// `/etc/passwd` and of the crate's manifest.
const LEAK_MARKERS: &[&str] = &["FRAMEBENCH-CANARY", "root:x:0", "[package]"];

/// Looks a scenario of [`SCENARIOS`] up by name: never a waiting one.
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Looks a scenario up by name among [`SCENARIOS`] and [`WAITING`]: what a loopback check or
/// load may run.
pub fn loopback_scenario(name: &str) -> Option<&'static Scenario> {
    all().find(|s| s.name == name)
}

/// Every scenario: [`SCENARIOS`], then [`WAITING`] and [`MESSAGES`] (`check` and `list`).
pub fn all() -> impl Iterator<Item = &'static Scenario> {
    SCENARIOS.iter().chain(WAITING).chain(MESSAGES)
}

/// Scenario names, the waiting ones too, for error messages and `list`.
pub(crate) fn names() -> Vec<&'static str> {
    all().map(|s| s.name).collect()
}

/// Builds an in-process request for `path`, as a client would send it.
pub fn request(path: &str) -> Request {
    http::Request::get(path)
        .header(http::header::HOST, "localhost")
        .body(Bytes::new())
        .expect("oracle paths are valid URIs")
}

/// A response reduced to what the oracle looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// Status code.
    pub status: u16,
    /// `Content-Type` header, if any.
    pub(crate) content_type: Option<String>,
    /// The whole body.
    pub body: Bytes,
}

impl Observed {
    /// From an in-process response.
    pub(crate) fn from_response(res: &http::Response<Bytes>) -> Self {
        Observed {
            status: res.status().as_u16(),
            content_type: res
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body: res.body().clone(),
        }
    }
}

/// A scenario with its expected body loaded.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The scenario.
    pub scenario: &'static Scenario,
    body: Option<Bytes>,
}

impl Scenario {
    /// Whether this scenario needs a Redis (the redis scenario).
    pub fn needs_redis(&self) -> bool {
        self.name == REDIS_SCENARIO
    }

    /// Why this scenario cannot run with apps built from `config` (no Redis in it), if so.
    /// Callers skip it with this message instead of failing it.
    pub fn skip_reason(&self, config: &Config) -> Option<String> {
        if !self.needs_redis() || config.redis.is_some() {
            return None;
        }
        Some(match crate::tools::Tool::Redis.path() {
            // Printed once per run, here, where the scenario would have run.
            Err(_) => crate::tools::Tool::Redis.skip().to_owned(),
            Ok(_) => format!(
                "no Redis given to the fixtures of the {} scenario",
                self.name
            ),
        })
    }

    /// The request of this scenario.
    pub fn request(&self) -> Request {
        request(self.path)
    }

    /// Loads the expected body from the fixtures.
    pub fn expected(&'static self, fixtures: &Fixtures) -> anyhow::Result<Expected> {
        let body = match self.body {
            Body::Any | Body::Computed => None,
            Body::Text(text) => Some(Bytes::from_static(text.as_bytes())),
            Body::Fixture(rel) => Some(
                fixtures
                    .read(rel)
                    .with_context(|| format!("oracle for {}", self.name))?,
            ),
        };
        Ok(Expected {
            scenario: self,
            body,
        })
    }
}

impl Expected {
    /// The expected body, when the scenario fixes one.
    pub(crate) fn body(&self) -> Option<&Bytes> {
        self.body.as_ref()
    }

    /// Checks a response to a fixed scenario; the error says what differs. A computed scenario
    /// needs the request: [`Expected::check_instance`].
    pub fn check(&self, got: &Observed) -> anyhow::Result<()> {
        if self.scenario.computed() {
            bail!("{}: the answer depends on the request", self.scenario.name);
        }
        self.check_body(got, self.body.as_ref())
    }

    /// Checks the answer to `instance`, a request of this scenario.
    pub fn check_instance(&self, instance: &Instance, got: &Observed) -> anyhow::Result<()> {
        match &instance.expect {
            Some(want) => self.check_body(got, Some(want)),
            None => self.check(got),
        }
    }

    fn check_body(&self, got: &Observed, body: Option<&Bytes>) -> anyhow::Result<()> {
        let s = self.scenario;
        if got.status != s.status {
            bail!("status {} (want {})", got.status, s.status);
        }
        if let Some(want) = s.content_type {
            match &got.content_type {
                None => bail!("no content-type (want {want})"),
                Some(have) if !content_type_matches(want, have) => {
                    bail!("content-type {have:?} (want {want:?})")
                }
                Some(_) => {}
            }
        }
        if let Some(want) = body {
            if got.body != want {
                bail!(
                    "body differs: {} bytes, want {} ({})",
                    got.body.len(),
                    want.len(),
                    first_difference(&got.body, want)
                );
            }
        }
        Ok(())
    }
}

/// Checks the answer to a traversal attempt: 400, 403 or 404, and no leaked content.
pub(crate) fn check_denied(got: &Observed) -> anyhow::Result<()> {
    let body = String::from_utf8_lossy(&got.body);
    if let Some(marker) = LEAK_MARKERS.iter().find(|m| body.contains(*m)) {
        bail!("leaked a file outside the folder ({marker:?})");
    }
    if !matches!(got.status, 400 | 403 | 404) {
        bail!("status {} (want 400, 403 or 404)", got.status);
    }
    Ok(())
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("first difference at byte {i}"),
        None => "one is a prefix of the other".to_owned(),
    }
}

/// `text/html` matches `text/html; charset=utf-8`; `text/plain; charset=utf-8` needs the charset.
pub(crate) fn content_type_matches(want: &str, have: &str) -> bool {
    fn split(ct: &str) -> (String, Vec<String>) {
        let mut parts = ct.split(';').map(|p| p.trim().to_ascii_lowercase());
        let essence = parts.next().unwrap_or_default();
        let mut params: Vec<String> = parts
            .filter(|p| !p.is_empty())
            .map(|p| p.replace([' ', '"'], ""))
            .collect();
        params.sort();
        (essence, params)
    }
    let (want_essence, want_params) = split(want);
    let (have_essence, have_params) = split(have);
    want_essence == have_essence && want_params.iter().all(|p| have_params.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert!(content_type_matches("text/html", "text/html"));
        assert!(content_type_matches(
            "text/html",
            "text/html; charset=utf-8"
        ));
        assert!(content_type_matches(
            "text/plain; charset=utf-8",
            "text/plain; charset=UTF-8"
        ));
        assert!(!content_type_matches(
            "text/plain; charset=utf-8",
            "text/plain"
        ));
        assert!(!content_type_matches("text/html", "text/plain"));
        assert!(!content_type_matches("text/html", "text/htmlx"));
    }

    #[test]
    fn check_catches_each_difference() {
        let fixtures = Fixtures::load_default().unwrap();
        let hello = scenario("hello").unwrap().expected(&fixtures).unwrap();
        let good = Observed {
            status: 200,
            content_type: Some("text/plain; charset=utf-8".into()),
            body: Bytes::from_static(b"Hello, World!"),
        };
        hello.check(&good).unwrap();
        let mut bad = good.clone();
        bad.status = 201;
        assert!(hello.check(&bad).is_err());
        let mut bad = good.clone();
        bad.content_type = Some("text/html".into());
        assert!(hello.check(&bad).is_err());
        let mut bad = good.clone();
        bad.content_type = None;
        assert!(hello.check(&bad).is_err());
        let mut bad = good;
        bad.body = Bytes::from_static(b"Hello, World?");
        assert!(hello
            .check(&bad)
            .unwrap_err()
            .to_string()
            .contains("byte 12"));
    }

    #[test]
    fn denied_rejects_leaks_and_success() {
        let leak = Observed {
            status: 404,
            content_type: None,
            body: Bytes::from_static(b"FRAMEBENCH-CANARY: x"),
        };
        assert!(check_denied(&leak).is_err());
        let ok = Observed {
            status: 200,
            content_type: None,
            body: Bytes::new(),
        };
        assert!(check_denied(&ok).is_err());
        let denied = Observed {
            status: 400,
            content_type: None,
            body: Bytes::new(),
        };
        assert!(check_denied(&denied).is_ok());
    }

    #[test]
    fn template_fixture_matches_engine() {
        let fixtures = Fixtures::load_default().unwrap();
        let want = fixtures.read("expected/template.html").unwrap();
        assert_eq!(fixtures.render().as_bytes(), &want[..]);
        let text = fixtures.render();
        assert!(
            text.contains("&lt;script&gt;"),
            "script tag must be escaped"
        );
        assert!(text.contains("Tom &amp; Jerry"));
        assert!(text.contains("日本語"));
    }
}
