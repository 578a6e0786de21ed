//! How each cell is loaded ([`LoadParams`]): its window, pipelining, rate or count, sampling,
//! pinning, and this process's share of a load run by several ([`Shard`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::pinning::Pinning;

/// How each cell is loaded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LoadParams {
    /// Recorded time per cell.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    pub(crate) duration: Duration,
    /// Unrecorded time before it.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    pub(crate) warmup: Duration,
    /// Request timeout.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    pub(crate) timeout: Duration,
    /// Pipelining depth (HTTP/1.1).
    pub(crate) pipeline: usize,
    /// What the client speaks; results from before h2c read as HTTP/1.1.
    #[serde(default)]
    pub(crate) protocol: crate::options::Protocol,
    /// What the protocol runs over; results from before TLS read as TCP.
    #[serde(default)]
    pub(crate) transport: crate::options::Transport,
    /// Over TLS: whether a new connection offers to resume an earlier session.
    #[serde(default)]
    pub(crate) resumption: crate::transport::tls::Resumption,
    /// Concurrent streams per connection (h2c; 1 for HTTP/1.1).
    #[serde(default = "one")]
    pub(crate) streams: usize,
    /// Total requests per second (open loop).
    pub(crate) rate: Option<f64>,
    /// Count-bounded mode: exactly this many requests per cell.
    pub(crate) requests: Option<u64>,
    /// Connection churn: requests per connection, the last with `Connection: close`
    /// (`None`: keep-alive for the whole cell).
    pub(crate) requests_per_connection: Option<u64>,
    /// One response in this many per connection is checked whole.
    pub(crate) sample_every: u64,
    /// Pinning and client threads.
    pub(crate) pinning: Pinning,
    /// Record the latencies per interval of this length too, for `--hdr-log` (seconds).
    #[serde(default)]
    pub(crate) hdr_interval: Option<f64>,
    /// Start the recorded window at this wall-clock time, in seconds since the Unix epoch
    /// (`--start-at`), so that several processes measure the same window.
    #[serde(default)]
    pub(crate) start_at: Option<f64>,
    /// This process's share of a load run by several (`--shard I/N`).
    #[serde(default)]
    pub(crate) shard: Option<Shard>,
    /// Read the server's threads at the start and end of each cell ([`super::threads`]): `load`,
    /// `compare` and `scale`. Off for the quick compare, whose cells of 0.1 s would feel the
    /// few milliseconds of reading /proc for a pool of hundreds of threads.
    #[serde(default)]
    pub(crate) check_threads: bool,
    /// The body size of `upload` and `upload_chunked` (`--body-size`); results from before
    /// those scenarios read as the default.
    #[serde(default = "default_body_size")]
    pub(crate) body_size: usize,
    /// The message size of `echo` (`--message-size`); results from before it read as the
    /// default.
    #[serde(default = "default_message_size")]
    pub(crate) message_size: usize,
    /// Times each cell runs (`--rounds`; at least 1): the targets' order rotates each round,
    /// and each cell is reduced to its median round ([`super::rounds::reduce`]). Results from
    /// before rounds read as one.
    #[serde(default = "one")]
    pub(crate) rounds: usize,
}

fn one() -> usize {
    1
}

fn default_body_size() -> usize {
    crate::oracle::BODY_SIZE
}

fn default_message_size() -> usize {
    crate::oracle::MESSAGE_SIZE
}

/// One of `count` processes that share a load (`--shard index/count`, 1-based): each takes
/// its share of the connections, the rate and the request count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shard {
    /// 1 to `count`.
    pub(crate) index: usize,
    /// Processes in all.
    pub(crate) count: usize,
}

impl Shard {
    /// This shard's part of `total` split as evenly as whole numbers allow: the first
    /// `total % count` shards take one more.
    pub(crate) fn part(self, total: u64) -> u64 {
        let (count, index) = (self.count as u64, self.index as u64);
        total / count + u64::from(index <= total % count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("bad shard {text:?} (want I/N with 1 <= I <= N, e.g. 1/2)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || count == 0 || index > count || count > 10_000 {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl LoadParams {
    /// For tests of what reads cells: 1 s closed loop, no warm-up, a 2 s timeout, unpinned.
    #[cfg(test)]
    pub(crate) fn for_tests() -> LoadParams {
        LoadParams::closed_loop(
            Duration::from_secs(1),
            Duration::ZERO,
            Duration::from_secs(2),
            crate::pinning::Pinning::resolve(None, None, None),
        )
    }

    /// A closed-loop cell of `duration` after `warmup`: one request in flight per connection,
    /// keep-alive, one response in 256 checked whole (the quick compare's cells, and tests).
    pub(crate) fn closed_loop(
        duration: Duration,
        warmup: Duration,
        timeout: Duration,
        pinning: Pinning,
    ) -> LoadParams {
        LoadParams {
            duration,
            warmup,
            timeout,
            pipeline: 1,
            protocol: crate::options::Protocol::default(),
            transport: crate::options::Transport::default(),
            resumption: crate::transport::tls::Resumption::default(),
            streams: 1,
            rate: None,
            requests: None,
            requests_per_connection: None,
            sample_every: 256,
            pinning,
            hdr_interval: None,
            start_at: None,
            shard: None,
            check_threads: false,
            body_size: crate::oracle::BODY_SIZE,
            message_size: crate::oracle::MESSAGE_SIZE,
            rounds: 1,
        }
    }
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let v = f64::deserialize(d)?;
    Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
}
