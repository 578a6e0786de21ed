//! What every app answers, once, framework-neutral: the body, status and content type of each
//! route. A framework file keeps only what that framework does differently: its routing, its
//! extractors, and one conversion from [`Reply`] into its own response type.
//!
//! Every handler returns a [`Reply`] built from the oracle's constants, so the bytes a framework
//! sends are the same by construction; what a benchmark compares is how each framework routes,
//! extracts and writes them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::fixtures::{content_type_for, Fixtures, Miss};
use crate::framework::Config;
use crate::oracle::{DELAY_MS, HELLO, JSON, MAX_DELAY_MS, TEXT_HTML, TEXT_PLAIN};
use crate::store::{AsyncStore, Lookup, SyncStore};

/// One answer, before a framework turns it into its own response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The content type, or `None` for an error without a body, which each framework answers
    /// its own way (an empty response, or its error catcher).
    pub(crate) content_type: Option<&'static str>,
    /// The body.
    pub(crate) body: Bytes,
}

impl Reply {
    /// A 200 with a body.
    pub(crate) fn ok(content_type: &'static str, body: impl Into<Bytes>) -> Reply {
        Reply {
            status: 200,
            content_type: Some(content_type),
            body: body.into(),
        }
    }

    /// An error without a body.
    pub(crate) fn error(status: u16) -> Reply {
        Reply {
            status,
            content_type: None,
            body: Bytes::new(),
        }
    }

    /// Whether this is an error without a body.
    pub(crate) fn is_error(&self) -> bool {
        self.content_type.is_none()
    }
}

/// What the handlers share: the fixtures, the io mode and a Redis client. `R` is the client:
/// [`AsyncStore`] for the async frameworks, [`SyncStore`] for the blocking ones.
pub(crate) struct AppState<R> {
    /// The shared fixtures.
    pub(crate) fixtures: Arc<Fixtures>,
    /// Where the static and paste routes read from.
    pub(crate) io: crate::options::Io,
    /// The redis scenario's client.
    pub(crate) redis: R,
}

impl<R: Clone> Clone for AppState<R> {
    fn clone(&self) -> Self {
        AppState {
            fixtures: Arc::clone(&self.fixtures),
            io: self.io,
            redis: self.redis.clone(),
        }
    }
}

impl AppState<AsyncStore> {
    /// The state of an async app. Build one per runtime that serves requests: the pool's
    /// connections live on the runtime that opened them.
    pub(crate) fn new_async(config: &Config) -> Self {
        let redis = AsyncStore::new(config.redis.as_deref());
        Self::with(config, redis)
    }

    /// `/get?key=…`: the key's value in Redis. The future owns what it needs, so a framework
    /// may box it or spawn it.
    pub(crate) fn redis_get(
        &self,
        query: Option<&str>,
    ) -> impl Future<Output = Reply> + Send + 'static {
        self.redis_get_key(key_from_query(query))
    }

    /// `/get` for a framework that hands over the `key` parameter already decoded (ohkami keeps
    /// no raw query).
    pub(crate) fn redis_get_key(
        &self,
        key: Option<String>,
    ) -> impl Future<Output = Reply> + Send + 'static {
        let redis = self.redis.clone();
        async move { lookup(redis.get(key).await) }
    }
}

/// What the hand routing of [`AppState::route_with`] answers: a reply at once, or, for `/get`, the
/// Redis lookup still to wait for.
pub(crate) enum Routed<F> {
    /// Every route but `/get`.
    Ready(Reply),
    /// `/get`: the one route that waits on I/O.
    Redis(F),
}

impl AppState<AsyncStore> {
    /// The routing of the async apps without a router (raw hyper 1 and 0.14): see
    /// [`AppState::route_with`].
    pub(crate) fn route(
        &self,
        get: bool,
        path: &str,
        query: Option<&str>,
    ) -> Routed<impl Future<Output = Reply> + Send + 'static> {
        self.route_with(get, path, || self.redis_get(query))
    }
}

impl<R> AppState<R> {
    /// The routing of the apps without a router: GET (and HEAD, which `get` includes where the
    /// server answers HEAD) only, then the path. `/get` is answered by `redis`, which the caller
    /// passes because each client waits on Redis its own way.
    fn route_with<F>(&self, get: bool, path: &str, redis: impl FnOnce() -> F) -> Routed<F> {
        if !get {
            return Routed::Ready(Reply::error(405));
        }
        Routed::Ready(match path {
            "/" => hello(),
            "/json" => json(),
            "/template" => self.template(),
            "/get" => return Routed::Redis(redis()),
            path => {
                if let Some(name) = path.strip_prefix("/paste/") {
                    self.paste(name)
                } else if let Some(name) = path.strip_prefix("/static/") {
                    // Our own static-file path, for io=disk too: the same validated lookup as
                    // pastes, reading the file with std::fs inside the handler (small files).
                    self.static_file(name)
                } else {
                    Reply::error(404)
                }
            }
        })
    }
}

impl AppState<SyncStore> {
    /// The state of a blocking app: one pool, shared by every worker thread and by in-process
    /// requests.
    pub(crate) fn new_sync(config: &Config) -> Self {
        let redis = SyncStore::new(config.redis.as_deref());
        Self::with(config, redis)
    }

    /// `/get?key=…`: the key's value in Redis.
    pub(crate) fn redis_get(&self, query: Option<&str>) -> Reply {
        lookup(self.redis.get(key_from_query(query)))
    }

    /// The routing of a blocking app without a router (may-minihttp): see
    /// [`AppState::route_with`]; `/get` waits for Redis on the calling thread.
    pub(crate) fn route(&self, get: bool, path: &str, query: Option<&str>) -> Reply {
        match self.route_with(get, path, || self.redis_get(query)) {
            Routed::Ready(reply) | Routed::Redis(reply) => reply,
        }
    }
}

impl<R> AppState<R> {
    fn with(config: &Config, redis: R) -> Self {
        AppState {
            fixtures: Arc::clone(&config.fixtures),
            io: config.options.io,
            redis,
        }
    }

    /// `/template`: the page rendered per request.
    pub(crate) fn template(&self) -> Reply {
        Reply::ok(TEXT_HTML, self.fixtures.render())
    }

    /// `/paste/<name>`: the paste, or 400 for a bad name and 404 for a missing one.
    pub(crate) fn paste(&self, name: &str) -> Reply {
        found(self.fixtures.paste(name, self.io), TEXT_PLAIN)
    }

    /// `/static/<name>`, or 400 for a bad name and 404 for a missing one. Frameworks with a
    /// static-file facility of their own route here only with io=memory.
    pub(crate) fn static_file(&self, name: &str) -> Reply {
        found(
            self.fixtures.static_file(name, self.io),
            content_type_for(name),
        )
    }
}

/// `/`: the hello scenario.
pub(crate) fn hello() -> Reply {
    Reply::ok(TEXT_PLAIN, Bytes::from_static(HELLO.as_bytes()))
}

/// `/json`: serialized with serde_json on every request (TechEmpower's rule: no response
/// cached).
pub(crate) fn json() -> Reply {
    Reply::ok(JSON, json_body())
}

/// The json scenario's object.
#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

/// The json scenario's body.
pub(crate) fn json_body() -> Vec<u8> {
    serde_json::to_vec(&Message { message: HELLO }).expect("a struct of one string serializes")
}

fn found(file: Result<Bytes, Miss>, content_type: &'static str) -> Reply {
    match file {
        Ok(body) => Reply::ok(content_type, body),
        Err(miss) => Reply::error(miss.status()),
    }
}

/// A Redis lookup as an answer: the value, or the reason with its status.
fn lookup(found: Lookup) -> Reply {
    Reply {
        status: found.status(),
        content_type: Some(TEXT_PLAIN),
        body: found.body(),
    }
}

/// The operands of the query and body scenarios: `?a=A&b=B` for `query`, `{"a":A,"b":B}` for
/// `json_in`. The frameworks with an extractor deserialize into it with their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub(crate) struct Operands {
    pub(crate) a: u32,
    pub(crate) b: u32,
}

/// The `json_in` answer's object.
#[derive(serde::Serialize)]
struct Sum {
    sum: u64,
}

/// `GET /sum?a=A&b=B`: the decimal sum, as `u64`.
pub(crate) fn sum(operands: Operands) -> Reply {
    Reply::ok(TEXT_PLAIN, crate::oracle::sum_text(operands.a, operands.b))
}

/// `POST /upload`: the body's length and FNV-1a digest, which prove the handler read all of it.
pub(crate) fn upload(body: &[u8]) -> Reply {
    Reply::ok(TEXT_PLAIN, crate::oracle::digest_text(body))
}

/// `POST /json_in`: `{"sum":S}`, serialized with serde_json on every request as `json` is.
pub(crate) fn json_in(operands: Operands) -> Reply {
    let sum = u64::from(operands.a) + u64::from(operands.b);
    Reply::ok(
        JSON,
        serde_json::to_vec(&Sum { sum }).expect("a struct of one number serializes"),
    )
}

/// The query of `delay`: `ms`, the milliseconds to wait ([`DELAY_MS`] when it is missing). The
/// frameworks with a query extractor deserialize into it with their own, which answers 400 (or
/// its own 4xx) for an `ms` that is not a `u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub(crate) struct Wait {
    pub(crate) ms: Option<u64>,
}

/// How long a `delay` request waits, or the 400 to answer at once for a wait over
/// [`MAX_DELAY_MS`].
fn delay_wait(wait: Wait) -> Result<Duration, Reply> {
    match wait.ms.unwrap_or(DELAY_MS) {
        ms if ms <= MAX_DELAY_MS => Ok(Duration::from_millis(ms)),
        _ => Err(Reply::error(400)),
    }
}

/// `GET /delay?ms=N` on an async framework: waits `N` ms with `sleep`, the framework's own
/// timer (`tokio::time::sleep`, `actix_rt::time::sleep`, `ntex::time::sleep`, …), then answers
/// `N` in decimal.
pub(crate) async fn delay<F: Future<Output = ()>>(
    wait: Wait,
    sleep: impl FnOnce(Duration) -> F,
) -> Reply {
    match delay_wait(wait) {
        Ok(wait) => {
            sleep(wait).await;
            waited(wait)
        }
        Err(refused) => refused,
    }
}

/// [`delay`] on a framework whose handler blocks its worker (`std::thread::sleep` on hyper
/// 0.10's pool, `may::coroutine::sleep` on a coroutine): `sleep` returns once it has waited.
pub(crate) fn delay_blocking(wait: Wait, sleep: impl FnOnce(Duration)) -> Reply {
    match delay_wait(wait) {
        Ok(wait) => {
            sleep(wait);
            waited(wait)
        }
        Err(refused) => refused,
    }
}

/// The answer to `delay` once the handler has waited `wait`: its milliseconds, in decimal.
fn waited(wait: Duration) -> Reply {
    Reply::ok(TEXT_PLAIN, wait.as_millis().to_string())
}

/// The wait of a query string (`ms=N`, other keys ignored), for the servers without an
/// extractor of their own (hyper, hyper 0.14, may-minihttp, iron, trillium).
/// `None` when `ms` is not a `u64`: the caller answers 400.
pub(crate) fn wait_from_query(query: Option<&str>) -> Option<Wait> {
    let mut ms = None;
    for pair in query.unwrap_or_default().split('&') {
        if let Some(("ms", v)) = pair.split_once('=') {
            ms = Some(v.parse().ok()?);
        }
    }
    Some(Wait { ms })
}

/// The in-process floors' answer to a query or body scenario's request (`GET /sum?…`,
/// `POST /upload`, `POST /json_in`), computed; `body` is `None` when it could not be read
/// (400). `None` for every other route, which they answer canned.
pub(crate) fn computed(
    path: &str,
    query: Option<&str>,
    post: bool,
    body: Option<&[u8]>,
) -> Option<Reply> {
    Some(match path {
        "/sum" => operands_from_query(query).map_or(Reply::error(400), sum),
        "/upload" if post => body.map_or(Reply::error(400), upload),
        "/json_in" if post => body
            .and_then(operands_from_json)
            .map_or(Reply::error(400), json_in),
        _ => return None,
    })
}

/// The operands of a query string (`a=1&b=2`, in any order, other keys ignored), for the
/// servers without an extractor of their own (hyper, hyper 0.14, may-minihttp, the baselines).
/// `None` when one is missing or not a `u32`: the caller answers 400.
pub(crate) fn operands_from_query(query: Option<&str>) -> Option<Operands> {
    let (mut a, mut b) = (None, None);
    for pair in query?.split('&') {
        match pair.split_once('=') {
            Some(("a", v)) => a = Some(v.parse().ok()?),
            Some(("b", v)) => b = Some(v.parse().ok()?),
            _ => {}
        }
    }
    Some(Operands { a: a?, b: b? })
}

/// The operands of a `json_in` body read the least costly way: the number after `"a":` and
/// after `"b":`, whitespace allowed. Not a JSON parser: the baselines (`null`, `raw`) use it
/// to stay the floor and the reference, as they answer every fixed scenario canned
/// (docs/methodology/fairness.md); every framework deserializes with serde.
pub(crate) fn operands_from_json(body: &[u8]) -> Option<Operands> {
    fn number_after(body: &[u8], key: &[u8]) -> Option<u32> {
        let at = body.windows(key.len()).position(|w| w == key)? + key.len();
        let rest = body[at..].trim_ascii_start().strip_prefix(b":")?;
        let rest = rest.trim_ascii_start();
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
    }
    Some(Operands {
        a: number_after(body, b"\"a\"")?,
        b: number_after(body, b"\"b\"")?,
    })
}

/// The `key` parameter of a query string (`key=foo&x=y`), percent-decoded. Every Rust framework
/// calls this on the raw query, so none pays for a different parser.
pub(crate) fn key_from_query(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == "key" && !v.is_empty()).then(|| {
            percent_encoding::percent_decode_str(&v.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands() {
        let op = Operands {
            a: 1,
            b: 4_000_000_000,
        };
        let ab = Some(op);
        assert_eq!(operands_from_query(Some("a=1&b=4000000000")), ab);
        assert_eq!(operands_from_query(Some("x=2&b=4000000000&a=1")), ab);
        assert_eq!(operands_from_query(Some("a=1")), None);
        assert_eq!(operands_from_query(Some("a=1&b=4294967296")), None);
        assert_eq!(operands_from_query(Some("a=-1&b=2")), None);
        assert_eq!(operands_from_json(br#"{"a":1,"b":4000000000}"#), ab);
        assert_eq!(operands_from_json(br#"{ "b" : 4000000000, "a": 1 }"#), ab);
        assert_eq!(operands_from_json(br#"{"a":1}"#), None);
        assert_eq!(sum(op).body, "4000000001");
        assert_eq!(json_in(op).body, r#"{"sum":4000000001}"#);
        assert_eq!(
            upload(b"a").body,
            format!("1 {:016x}", crate::oracle::fnv1a64(b"a"))
        );
    }

    #[test]
    fn delays() {
        let wait = |q| wait_from_query(Some(q));
        assert_eq!(wait("ms=25"), Some(Wait { ms: Some(25) }));
        assert_eq!(wait("x=1&ms=0"), Some(Wait { ms: Some(0) }));
        assert_eq!(wait(""), Some(Wait { ms: None }));
        assert_eq!(wait_from_query(None), Some(Wait { ms: None }));
        assert_eq!(wait("ms=-1"), None);
        assert_eq!(wait("ms=ten"), None);
        let none = Wait { ms: None };
        assert_eq!(delay_wait(none), Ok(Duration::from_millis(DELAY_MS)));
        let most = Wait {
            ms: Some(MAX_DELAY_MS),
        };
        assert_eq!(delay_wait(most), Ok(Duration::from_millis(MAX_DELAY_MS)));
        let over = Wait {
            ms: Some(MAX_DELAY_MS + 1),
        };
        assert_eq!(delay_wait(over), Err(Reply::error(400)));
        let mut slept = None;
        let reply = delay_blocking(Wait { ms: Some(7) }, |d| slept = Some(d));
        assert_eq!(
            (slept, reply),
            (
                Some(Duration::from_millis(7)),
                waited(Duration::from_millis(7))
            )
        );
        assert_eq!(waited(Duration::from_millis(7)).body, "7");
        assert_eq!(delay_blocking(over, |_| unreachable!()).status, 400);
    }

    #[test]
    fn query_keys() {
        assert_eq!(key_from_query(Some("key=foo")).as_deref(), Some("foo"));
        assert_eq!(
            key_from_query(Some("a=1&key=f%20o")).as_deref(),
            Some("f o")
        );
        assert_eq!(key_from_query(Some("key=")), None);
        assert_eq!(key_from_query(Some("keys=foo")), None);
        assert_eq!(key_from_query(None), None);
    }
}
