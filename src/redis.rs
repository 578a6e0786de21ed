//! The redis scenario: a real `redis-server` started by the harness, and the clients the
//! frameworks use to read it.
//!
//! The harness ([`RedisServer`]) spawns `redis-server` as a child on a free loopback port, with
//! persistence off, seeds [`SEED`], and kills and waits on it when dropped. [`provide`] either
//! does that or takes a `redis://127.0.0.1:PORT` URL from the command line, and records the URL
//! in the [`Fixtures`] before apps are built. An app built without a URL answers 503 on `/get`.
//!
//! The clients: [`AsyncStore`] (deadpool-redis, a pool of async connections on tokio) for the
//! async frameworks, [`SyncStore`] (r2d2 over the redis crate) for iron and nickel. Both connect
//! lazily with [`CONNECT_TIMEOUT`] and bound every command by [`COMMAND_TIMEOUT`], so a Redis
//! that goes away makes `/get` answer 502 quickly instead of hanging.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use bytes::Bytes;

use crate::fixtures::Fixtures;
use crate::tools::Tool;

/// The keys the harness stores; the oracle expects `foo`'s value.
pub const SEED: &[(&str, &str)] = &[("foo", VALUE), ("greeting", "Hello, Redis!")];
/// The value of `foo`, the key the redis scenario reads.
pub const VALUE: &str = "bar: a value stored in a real Redis";
/// A key that is never stored: `/get?key=` it answers 404.
pub const MISSING_KEY: &str = "framebench-missing-key";
/// The bound on opening a connection to Redis.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// The bound on one command (including waiting for a pooled connection).
pub const COMMAND_TIMEOUT: Duration = Duration::from_millis(1000);
/// Connections per pool. The same for every framework.
pub const POOL_SIZE: u32 = 16;
/// The content type of a found value.
pub const CONTENT_TYPE: &str = "text/plain; charset=utf-8";
/// Environment variable `serve` reads the URL from when `--redis` is not given.
pub const REDIS_ENV: &str = "FRAMEBENCH_REDIS";

/// Whether `redis-server` can be started here (see [`Tool::Redis`]); the error is one line
/// with the command that installs it.
pub fn available() -> Result<(), String> {
    Tool::Redis.path().map(|_| ()).map_err(str::to_owned)
}

/// A `redis-server` child process on a loopback port. Dropping it kills and reaps it.
pub struct RedisServer {
    child: Option<Child>,
    addr: SocketAddr,
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port, waits until it answers, and seeds [`SEED`].
    pub fn start() -> anyhow::Result<RedisServer> {
        available().map_err(anyhow::Error::msg)?;
        // Find a free port, then release it for redis-server. Retried if someone takes it.
        let mut last = None;
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            match Self::start_on(port) {
                Ok(server) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("tried at least once"))
    }

    fn start_on(port: u16) -> anyhow::Result<RedisServer> {
        let program = Tool::Redis.path().map_err(anyhow::Error::msg)?;
        let mut cmd = Command::new(program);
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only prctl, which is async-signal-safe. The server
        // dies with the thread that started it, even when that process is killed (a `serve`
        // child stopped with SIGKILL), so no redis-server outlives the run.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().context("cannot start redis-server")?;
        let mut server = RedisServer {
            child: Some(child),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(child) = server.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    bail!("redis-server exited at startup ({status})");
                }
            }
            match seed(server.addr) {
                Ok(()) => return Ok(server),
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => return Err(e.context("redis-server did not answer within 10 s")),
            }
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Kills the server (what a test does to make Redis go away mid-run) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Stores [`SEED`] with plain RESP commands over one connection.
pub fn seed(addr: SocketAddr) -> anyhow::Result<()> {
    let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
    stream.set_read_timeout(Some(COMMAND_TIMEOUT))?;
    stream.set_write_timeout(Some(COMMAND_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    for (key, value) in SEED {
        let mut cmd = b"*3\r\n$3\r\nSET\r\n".to_vec();
        for arg in [key, value] {
            cmd.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
        writer.write_all(&cmd)?;
        let mut line = String::new();
        reader.read_line(&mut line)?;
        anyhow::ensure!(line == "+OK\r\n", "SET {key}: {:?}", line.trim_end());
    }
    Ok(())
}

/// Checks that `url` is a loopback `redis://` URL and returns its address.
pub fn parse_url(url: &str) -> anyhow::Result<SocketAddr> {
    let rest = url
        .strip_prefix("redis://")
        .with_context(|| format!("{url}: want redis://127.0.0.1:PORT"))?;
    let addr: SocketAddr = rest
        .trim_end_matches('/')
        .parse()
        .with_context(|| format!("{url}: want redis://127.0.0.1:PORT"))?;
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "{url}: framebench talks to Redis on loopback addresses only"
    );
    Ok(addr)
}

/// Gives `fixtures` a Redis URL: `url` when given (checked, seeded), else a `redis-server`
/// started here, which the caller keeps alive. Without `redis-server` it returns `Ok(None)` and
/// prints nothing: the redis scenario says why it is skipped where it would have run
/// ([`crate::oracle::Scenario::skip_reason`]), and `serve` needs no message at all.
pub fn provide(fixtures: &Fixtures, url: Option<&str>) -> anyhow::Result<Option<RedisServer>> {
    if let Some(url) = url {
        let addr = parse_url(url)?;
        seed(addr).with_context(|| format!("cannot seed Redis at {url}"))?;
        fixtures.set_redis_url(url);
        return Ok(None);
    }
    if available().is_err() {
        return Ok(None);
    }
    let server = RedisServer::start()?;
    fixtures.set_redis_url(&server.url());
    // `framebench serve` children (the driver's servers) use this one too. Set before any
    // thread of ours reads the environment.
    std::env::set_var(REDIS_ENV, server.url());
    Ok(Some(server))
}

/// Whether `framebench serve` children can serve scenario `s`: every scenario but the redis
/// one, which needs `$FRAMEBENCH_REDIS` or `redis-server` (each child then starts its own).
/// Prints why when it cannot. For the driver, whose servers are child processes.
pub fn children_can_serve(s: &crate::oracle::Scenario) -> bool {
    if !s.needs_redis() || std::env::var_os(REDIS_ENV).is_some() {
        return true;
    }
    if available().is_ok() {
        return true;
    }
    Tool::Redis.skip();
    false
}

/// The result of one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The key's value: 200.
    Found(Bytes),
    /// No such key: 404.
    Missing,
    /// No `key` parameter: 400.
    BadRequest,
    /// No Redis configured: 503.
    Unconfigured,
    /// Redis failed or timed out: 502.
    Failed(String),
}

impl Lookup {
    /// The status this result is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Lookup::Found(_) => 200,
            Lookup::Missing => 404,
            Lookup::BadRequest => 400,
            Lookup::Unconfigured => 503,
            Lookup::Failed(_) => 502,
        }
    }

    /// The body: the value, or a short reason.
    pub fn body(self) -> Bytes {
        match self {
            Lookup::Found(v) => v,
            Lookup::Missing => Bytes::from_static(b"no such key"),
            Lookup::BadRequest => Bytes::from_static(b"missing key parameter"),
            Lookup::Unconfigured => Bytes::from_static(b"no Redis configured"),
            Lookup::Failed(e) => Bytes::from(format!("redis: {e}")),
        }
    }
}

/// The `key` parameter of a query string (`key=foo&x=y`), percent-decoded. Every Rust framework
/// calls this on the raw query, so none pays for a different parser.
pub fn key_from_query(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == "key" && !v.is_empty()).then(|| {
            percent_encoding::percent_decode_str(&v.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// A pool, none (no Redis configured: 503), or why it could not be made (502).
#[derive(Clone)]
enum Backend<P> {
    None,
    Pool(P),
    Broken(String),
}

impl<P> Backend<P> {
    /// The pool and the key to look up, or the answer when there is no pool or no key.
    fn ready(&self, key: Option<String>) -> Result<(&P, String), Lookup> {
        match self {
            Backend::None => Err(Lookup::Unconfigured),
            Backend::Broken(e) => Err(Lookup::Failed(e.clone())),
            Backend::Pool(pool) => key.map(|key| (pool, key)).ok_or(Lookup::BadRequest),
        }
    }
}

/// Opens multiplexed connections with [`CONNECT_TIMEOUT`] and [`COMMAND_TIMEOUT`] for the
/// async pool. A connection is reused unless a command on it failed: no `PING` per checkout
/// (deadpool-redis sends one; go-redis does not), so every client pays one round trip per
/// request.
struct AsyncManager {
    client: ::redis::Client,
}

/// A pooled async connection, marked broken when a command on it fails.
struct AsyncConn {
    conn: ::redis::aio::MultiplexedConnection,
    broken: bool,
}

impl deadpool::managed::Manager for AsyncManager {
    type Type = AsyncConn;
    type Error = ::redis::RedisError;

    async fn create(&self) -> Result<AsyncConn, ::redis::RedisError> {
        let config = ::redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT));
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        Ok(AsyncConn {
            conn,
            broken: false,
        })
    }

    async fn recycle(
        &self,
        conn: &mut AsyncConn,
        _: &deadpool::managed::Metrics,
    ) -> deadpool::managed::RecycleResult<::redis::RedisError> {
        if conn.broken {
            Err(deadpool::managed::RecycleError::message(
                "broken connection",
            ))
        } else {
            Ok(())
        }
    }
}

/// The async frameworks' client: a deadpool pool of [`POOL_SIZE`] connections, created
/// lazily (no connection is made until the first request). Build one per runtime that serves
/// requests: a connection's driver task lives on the runtime that opened it.
#[derive(Clone)]
pub struct AsyncStore {
    pool: Backend<deadpool::managed::Pool<AsyncManager>>,
}

impl AsyncStore {
    /// A pool for the fixtures' Redis URL, or a store that answers 503 without one.
    pub fn new(fixtures: &Fixtures) -> AsyncStore {
        let Some(url) = fixtures.redis_url() else {
            return AsyncStore {
                pool: Backend::None,
            };
        };
        let pool = ::redis::Client::open(url)
            .map_err(|e| e.to_string())
            .and_then(|client| {
                deadpool::managed::Pool::builder(AsyncManager { client })
                    .max_size(POOL_SIZE as usize)
                    .timeouts(deadpool::managed::Timeouts {
                        wait: Some(COMMAND_TIMEOUT),
                        create: Some(CONNECT_TIMEOUT),
                        recycle: Some(COMMAND_TIMEOUT),
                    })
                    .runtime(deadpool::Runtime::Tokio1)
                    .build()
                    .map_err(|e| e.to_string())
            });
        AsyncStore {
            pool: match pool {
                Ok(pool) => Backend::Pool(pool),
                Err(e) => Backend::Broken(e),
            },
        }
    }

    /// `GET key`, bounded by [`COMMAND_TIMEOUT`]. Must run inside a tokio runtime with time.
    pub async fn get(&self, key: Option<String>) -> Lookup {
        let (pool, key) = match self.pool.ready(key) {
            Ok(ready) => ready,
            Err(answer) => return answer,
        };
        let lookup = async {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            let got = ::redis::cmd("GET")
                .arg(&key)
                .query_async::<Option<Vec<u8>>>(&mut conn.conn)
                .await;
            conn.broken = got.is_err();
            got.map_err(|e| e.to_string())
        };
        // A backstop: the connection's own timeouts end a stuck command first.
        match tokio::time::timeout(2 * COMMAND_TIMEOUT, lookup).await {
            Ok(Ok(Some(v))) => Lookup::Found(Bytes::from(v)),
            Ok(Ok(None)) => Lookup::Missing,
            Ok(Err(e)) => Lookup::Failed(e),
            Err(_) => Lookup::Failed("timed out".to_owned()),
        }
    }
}

/// iron's and nickel's client: an r2d2 pool of [`POOL_SIZE`] blocking connections, created
/// lazily, with read and write timeouts on every connection.
#[derive(Clone)]
pub struct SyncStore {
    pool: Backend<r2d2::Pool<::redis::Client>>,
}

impl SyncStore {
    /// A pool for the fixtures' Redis URL, or a store that answers 503 without one.
    pub fn new(fixtures: &Fixtures) -> SyncStore {
        let Some(url) = fixtures.redis_url() else {
            return SyncStore {
                pool: Backend::None,
            };
        };
        let pool = match ::redis::Client::open(url) {
            Ok(client) => Backend::Pool(
                r2d2::Pool::builder()
                    .max_size(POOL_SIZE)
                    .min_idle(Some(0))
                    // No PING per checkout: a connection that failed is dropped on return.
                    .test_on_check_out(false)
                    .connection_timeout(COMMAND_TIMEOUT)
                    .error_handler(Box::new(r2d2::NopErrorHandler))
                    .build_unchecked(client),
            ),
            Err(e) => Backend::Broken(e.to_string()),
        };
        SyncStore { pool }
    }

    /// `GET key`, bounded by the pool's and the connection's timeouts.
    pub fn get(&self, key: Option<String>) -> Lookup {
        let (pool, key) = match self.pool.ready(key) {
            Ok(ready) => ready,
            Err(answer) => return answer,
        };
        let mut conn = match pool.get() {
            Ok(conn) => conn,
            Err(e) => return Lookup::Failed(e.to_string()),
        };
        let _ = conn.set_read_timeout(Some(COMMAND_TIMEOUT));
        let _ = conn.set_write_timeout(Some(COMMAND_TIMEOUT));
        match ::redis::cmd("GET")
            .arg(&key)
            .query::<Option<Vec<u8>>>(&mut *conn)
        {
            Ok(Some(v)) => Lookup::Found(Bytes::from(v)),
            Ok(None) => Lookup::Missing,
            Err(e) => Lookup::Failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn urls_are_loopback_only() {
        assert!(parse_url("redis://127.0.0.1:6379").is_ok());
        assert!(parse_url("redis://10.0.0.1:6379").is_err());
        assert!(parse_url("http://127.0.0.1:6379").is_err());
        assert!(parse_url("redis://localhost").is_err());
    }
}
