//! The clients the frameworks read Redis with, for the redis scenario.
//!
//! [`AsyncStore`] (a `deadpool` pool of the redis crate's multiplexed connections, with a small
//! manager of ours) serves the async
//! frameworks, [`SyncStore`] (r2d2 over the redis crate) the blocking ones. Both connect lazily
//! with [`CONNECT_TIMEOUT`] and bound every command by [`COMMAND_TIMEOUT`], so a Redis that goes
//! away makes `/get` answer 502 quickly instead of hanging. The `redis-server` they talk to is
//! started by [`crate::redis`].

use std::time::Duration;

use bytes::Bytes;

/// The bound on opening a connection to Redis.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// The bound on one command (including waiting for a pooled connection).
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_millis(1000);
/// Connections per pool. The same for every framework.
pub(crate) const POOL_SIZE: u32 = 16;

/// The result of one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup {
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
    pub(crate) fn status(&self) -> u16 {
        match self {
            Lookup::Found(_) => 200,
            Lookup::Missing => 404,
            Lookup::BadRequest => 400,
            Lookup::Unconfigured => 503,
            Lookup::Failed(_) => 502,
        }
    }

    /// The body: the value, or a short reason.
    pub(crate) fn body(self) -> Bytes {
        match self {
            Lookup::Found(v) => v,
            Lookup::Missing => Bytes::from_static(b"no such key"),
            Lookup::BadRequest => Bytes::from_static(b"missing key parameter"),
            Lookup::Unconfigured => Bytes::from_static(b"no Redis configured"),
            Lookup::Failed(e) => Bytes::from(format!("redis: {e}")),
        }
    }
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
pub(crate) struct AsyncStore {
    pool: Backend<deadpool::managed::Pool<AsyncManager>>,
}

impl AsyncStore {
    /// A pool for the Redis at `url`, or a store that answers 503 without one.
    pub(crate) fn new(url: Option<&str>) -> AsyncStore {
        let Some(url) = url else {
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
    pub(crate) async fn get(&self, key: Option<String>) -> Lookup {
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

/// The blocking frameworks' client: an r2d2 pool of [`POOL_SIZE`] blocking connections, created
/// lazily, with read and write timeouts on every connection.
#[derive(Clone)]
pub(crate) struct SyncStore {
    pool: Backend<r2d2::Pool<::redis::Client>>,
}

impl SyncStore {
    /// A pool for the Redis at `url`, or a store that answers 503 without one.
    pub(crate) fn new(url: Option<&str>) -> SyncStore {
        let Some(url) = url else {
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
    pub(crate) fn get(&self, key: Option<String>) -> Lookup {
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
