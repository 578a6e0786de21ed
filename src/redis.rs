//! The redis scenario's harness: a real `redis-server` started as a child process.
//!
//! [`RedisServer`] spawns `redis-server` on a free loopback port, with persistence off, seeds
//! [`SEED`], and kills and waits on it when dropped. [`provide`] either does that or takes a
//! `redis://127.0.0.1:PORT` URL from the command line; its URL goes into every app's
//! [`crate::framework::Config`]. An app built without a URL answers 503 on `/get`. The clients the
//! frameworks read it with are in [`crate::store`].

use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use crate::oracle::REDIS_VALUE;
use crate::outcome::NotRun;
use crate::store::{COMMAND_TIMEOUT, CONNECT_TIMEOUT};
use crate::tools::Tool;

/// The keys the harness stores; the oracle expects `foo`'s value.
pub(crate) const SEED: &[(&str, &str)] = &[("foo", REDIS_VALUE), ("greeting", "Hello, Redis!")];
/// A key that is never stored: `/get?key=` it answers 404.
pub const MISSING_KEY: &str = "framebench-missing-key";
/// Environment variable `serve` reads the URL from when `--redis` is not given.
pub(crate) const REDIS_ENV: &str = "FRAMEBENCH_REDIS";

/// Whether `redis-server` can be started here (see [`Tool::Redis`]); the error is one line
/// with the command that installs it.
pub fn available() -> Result<(), NotRun> {
    Tool::Redis
        .path()
        .map(drop)
        .map_err(|why| NotRun::Skipped(why.to_owned()))
}

/// A `redis-server` child process on a loopback port. Dropping it kills and reaps it.
pub struct RedisServer {
    child: Option<Child>,
    addr: SocketAddr,
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port, waits until it answers, and seeds [`SEED`].
    pub fn start() -> anyhow::Result<RedisServer> {
        available()?;
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
            // Background tasks once a second instead of ten times: the quick compare keeps one
            // redis-server per framework, idle beside the server being measured on its CPU.
            // 18 of them took 1.6-1.7 % of that CPU at the default and 0.2-0.3 % at 1
            // (`scripts/idle-servers.sh`). The seeded keys have no expiry, so the active
            // expiry these tasks run has nothing to do.
            .args(["--hz", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only prctl, which is async-signal-safe. The server
        // dies with the thread that started it, even when that process is killed (a `serve`
        // child stopped with SIGKILL), so no redis-server outlives the run. SIGKILL, as `Drop`
        // sends: with persistence off there is nothing to save, and at `--hz 1` redis would
        // act on a SIGTERM only in its next once-a-second background task.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
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

/// Stores [`SEED`] over one connection of the `redis` crate, the client every Rust framework's
/// redis scenario uses.
pub(crate) fn seed(addr: SocketAddr) -> anyhow::Result<()> {
    let client = ::redis::Client::open(format!("redis://{addr}"))?;
    let mut con = client.get_connection_with_timeout(CONNECT_TIMEOUT)?;
    con.set_read_timeout(Some(COMMAND_TIMEOUT))?;
    con.set_write_timeout(Some(COMMAND_TIMEOUT))?;
    for (key, value) in SEED {
        ::redis::cmd("SET")
            .arg(key)
            .arg(value)
            .query::<()>(&mut con)
            .with_context(|| format!("SET {key}"))?;
    }
    Ok(())
}

/// Checks that `url` is a loopback `redis://` URL and returns its address.
pub(crate) fn parse_url(url: &str) -> anyhow::Result<SocketAddr> {
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

/// The Redis of a run: its URL, which goes into every [`crate::framework::Config`], and the
/// `redis-server` behind it when the harness started one (killed when this is dropped).
pub struct Redis {
    url: Option<String>,
    _server: Option<RedisServer>,
}

impl Redis {
    /// The URL apps read, or `None` without a Redis.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

/// A Redis for the run: `url` when given (checked, seeded), else a `redis-server` started here,
/// which lives as long as the result. Without `redis-server` the result has no URL and nothing
/// is printed: the redis scenario says why it is skipped where it would have run
/// ([`crate::oracle::Scenario::skip_reason`]), and `serve` needs no message at all.
pub fn provide(url: Option<&str>) -> anyhow::Result<Redis> {
    if let Some(url) = url {
        let addr = parse_url(url)?;
        seed(addr).with_context(|| format!("cannot seed Redis at {url}"))?;
        return Ok(Redis {
            url: Some(url.to_owned()),
            _server: None,
        });
    }
    if available().is_err() {
        return Ok(Redis {
            url: None,
            _server: None,
        });
    }
    let server = RedisServer::start()?;
    // `framebench serve` children (the driver's servers) are other processes: they take the
    // URL from the environment. Set before any thread of ours reads the environment.
    std::env::set_var(REDIS_ENV, server.url());
    Ok(Redis {
        url: Some(server.url()),
        _server: Some(server),
    })
}

/// Whether `framebench serve` children can serve scenario `s`: every scenario but the redis
/// one, which needs `$FRAMEBENCH_REDIS` or `redis-server` (each child then starts its own).
/// Prints why when it cannot. For the driver, whose servers are child processes.
pub(crate) fn children_can_serve(s: &crate::oracle::Scenario) -> bool {
    if !s.needs_redis() || std::env::var_os(REDIS_ENV).is_some() {
        return true;
    }
    if available().is_ok() {
        return true;
    }
    Tool::Redis.skip();
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_loopback_only() {
        assert!(parse_url("redis://127.0.0.1:6379").is_ok());
        assert!(parse_url("redis://10.0.0.1:6379").is_err());
        assert!(parse_url("http://127.0.0.1:6379").is_err());
        assert!(parse_url("redis://localhost").is_err());
    }
}
